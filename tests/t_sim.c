/*
 * ddlprof-sim through its command line: usage errors, the loaders (bad
 * records with their line or record numbers, --strict, a Philly and a
 * Helios sample, the real Tiresias 60-job trace from ../shared/data), the
 * invariants the simulator checks itself under --check, small scenarios
 * whose job completion times are worked out by hand below, a
 * network-sensitive mix on which the delay policies must beat fifo and
 * gandiva, determinism, and --jobs-out's refusal to overwrite; times past
 * the 1e10 s bound in every loader, the --lease bound, jobs running 1e9 s,
 * summaries whose every number is present and finite, and what bad
 * options and jobs too big for the cluster are told.
 *
 * The small traces live in tests/sim/; the runner finds them through the
 * source tree, next to the build directory.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define DDL_TIRESIAS60 "/work/shared/data/tiresias-60_job.csv"

static const char *const ddl_sim_policies[] = {"fifo", "las", "gandiva", "dally", "sensitivity"};
#define DDL_NPOL (sizeof ddl_sim_policies / sizeof ddl_sim_policies[0])

/* tests/sim/NAME in the source tree (build/.. is the source root). */
static const char *ddl_sim_data(const char *name)
{
	static char buf[4][PATH_MAX];
	static int k;
	char rel[PATH_MAX];
	k = (k + 1) % 4;
	snprintf(rel, sizeof rel, "../tests/sim/%s", name);
	snprintf(buf[k], sizeof buf[k], "%s", tbuild(rel));
	return buf[k];
}

/* Runs ddlprof-sim with ARGS (NULL-terminated); 0 or -1. */
static int ddl_sim_exec(char *const args[], struct ddl_run_result *r)
{
	char *argv[32] = {(char *)tbuild("bin/ddlprof-sim")};
	int n = 1;
	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return trun(argv, NULL, 60, r);
}

/* Runs with --json --check and returns the parsed summary, or NULL. */
static json_t *ddl_sim_json(const char *trace, const char *cluster, const char *policy,
                            const char *extra)
{
	char *args[16] = {"--trace", (char *)trace, "--cluster", (char *)cluster, "--policy",
	                  (char *)policy, "--json", "--check", (char *)extra, NULL};
	struct ddl_run_result r;
	if (ddl_sim_exec(args, &r) < 0 || tstatus(&r) != 0) {
		fprintf(stderr, "    %s on %s: status %d: %s\n", policy, trace, tstatus(&r), r.err);
		trun_free(&r);
		return NULL;
	}
	json_error_t je;
	json_t *j = json_loads(r.out, 0, &je);
	if (!j)
		fprintf(stderr, "    not JSON: %s\n", je.text);
	else if (!strstr(r.err, "invariants held")) {
		fprintf(stderr, "    --check said nothing: %s\n", r.err);
		json_decref(j);
		j = NULL;
	}
	trun_free(&r);
	return j;
}

static double ddl_num(json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

static int ddl_near(double a, double b)
{
	return fabs(a - b) <= 1e-3 * (fabs(b) + 1);
}

int test_sim_usage(void)
{
	struct {
		char *args[8];
		int status;
		const char *says;
	} c[] = {
		{{"--help", NULL}, 0, ""},
		{{"--version", NULL}, 0, ""},
		{{NULL}, 2, "--trace"},
		{{"--bogus", NULL}, 2, "ddlprof-sim: unknown option --bogus; try --help"},
		{{"--trace", "x.csv", "--cluster", "4x32", NULL}, 2, "--cluster"},
		{{"--trace", "x.csv", "--policy", "srtf", NULL}, 2, "--policy"},
		{{"--trace", "x.csv", "--format", "yaml", NULL}, 2, "--format"},
		{{"--trace", "x.csv", "--lease", "0", NULL}, 2, "--lease"},
		{{"--trace", "x.csv", "--bw", "rack=fast", NULL}, 2, "--bw"},
		{{"--trace", "/no/such/trace.csv", "--format", "csv", NULL}, 1, "/no/such/trace.csv"},
		{{"--trace", "/no/such/trace.json", "--format", "philly", NULL}, 1, "/no/such/trace.json"},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		struct ddl_run_result r;
		CHECK(ddl_sim_exec(c[i].args, &r) == 0, "case %zu", i);
		CHECK(tstatus(&r) == c[i].status && strstr(r.err, c[i].says),
		      "case %zu: status %d, stderr '%s'", i, tstatus(&r), r.err);
		trun_free(&r);
	}
	/* A file of another format: one message naming it, status 1. */
	const char *philly = ddl_sim_data("philly_sample.json");
	const char *tiresias = ddl_sim_data("consolidate.csv");
	struct {
		const char *file, *format;
	} w[] = {{philly, "csv"}, {philly, "tiresias"}, {philly, "helios"}, {tiresias, "philly"},
	         {tiresias, "tiresias"}};
	for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
		char *args[] = {"--trace", (char *)w[i].file, "--format", (char *)w[i].format, NULL};
		struct ddl_run_result r;
		CHECK(ddl_sim_exec(args, &r) == 0, "wrong format %zu", i);
		CHECK(tstatus(&r) == 1 && strstr(r.err, w[i].file) && strstr(r.err, "not a"),
		      "%s as %s: status %d, stderr '%s'", w[i].file, w[i].format, tstatus(&r),
		      r.err);
		trun_free(&r);
	}
	return DDL_PASS;
}

/* Per-job JCTs from --jobs-out (JSON lines), by id. */
static int ddl_sim_jcts(const char *trace, const char *cluster, const char *policy,
                        const char *const ids[], const double want[], int n)
{
	char *dir = tmpdir(), out[PATH_MAX];
	snprintf(out, sizeof out, "%s/jobs.jsonl", dir);
	char *args[] = {"--trace", (char *)trace, "--cluster", (char *)cluster, "--policy",
	                (char *)policy, "--lease", "100", "--restart-cost", "10", "--check",
	                "--jobs-out", out, NULL};
	struct ddl_run_result r;
	CHECK(ddl_sim_exec(args, &r) == 0 && tstatus(&r) == 0, "%s: %s", policy, r.err);
	trun_free(&r);
	FILE *f = fopen(out, "r");
	CHECK(f, "no %s", out);
	char line[4096];
	int seen = 0;
	while (fgets(line, sizeof line, f)) {
		json_t *j = json_loads(line, 0, NULL);
		CHECK(j, "bad JSON line '%s'", line);
		const char *id = json_string_value(json_object_get(j, "id"));
		for (int i = 0; i < n; i++)
			if (id && !strcmp(id, ids[i])) {
				CHECK(ddl_near(ddl_num(j, "jct_s"), want[i]), "%s: job %s JCT %.3f, expected %.3f",
				      policy, id, ddl_num(j, "jct_s"), want[i]);
				seen++;
			}
		json_decref(j);
	}
	fclose(f);
	trm(dir);
	free(dir);
	CHECK(seen == n, "%s: %d of %d jobs in --jobs-out", policy, seen, n);
	return DDL_PASS;
}

/*
 * fifo_backfill.csv on 1x2x4 (8 GPUs), lease 100 s, restart 10 s:
 *   a 0 s 4 GPUs 100 s; b 0 s 8 GPUs 50 s; c 10 s 2 GPUs 20 s.
 * fifo: a runs 0-100 on machine 0; b needs all 8 and blocks c (no
 *   backfilling); b 100-150 on both machines (its tightest level, rack, so
 *   full speed); c 150-170. JCTs a 100, b 150, c 160.
 * gandiva: c backfills at 10 on machine 1, 10-30. JCTs a 100, b 150, c 20.
 */
int test_sim_hand_fifo_gandiva(void)
{
	const char *t = ddl_sim_data("fifo_backfill.csv");
	const char *ids[] = {"a", "b", "c"};
	const double fifo[] = {100, 150, 160}, gandiva[] = {100, 150, 20};
	if (ddl_sim_jcts(t, "1x2x4", "fifo", ids, fifo, 3) != DDL_PASS)
		return DDL_FAIL;
	return ddl_sim_jcts(t, "1x2x4", "gandiva", ids, gandiva, 3);
}

/*
 * consolidate.csv on 1x2x4, lease 100 s, restart 10 s:
 *   x 0 s 3 GPUs 50 s resnet50; y 0 s 3 GPUs 1000 s resnet50;
 *   z 0 s 2 GPUs 200 s vgg16 (slowdown 1.5 across machines of a rack).
 * x takes machine 0, y machine 1; one GPU is left on each.
 * fifo: z starts at 0 across both machines at 1/1.5 speed: ends 300.
 *   JCTs x 50, y 1000, z 300; comm overhead 100 s.
 * gandiva: the same start; x ends at 50; at the lease end (100) z has done
 *   66.67 s of 200; moving to machine 0 saves 133.33 x 0.5 = 66.67 s > 10 s
 *   restart, so it migrates: 100 + 10 + 133.33 = 243.33. Overhead 33.33 s.
 * dally: z waits for one machine (timer 1 lease); x frees machine 0 at 50;
 *   z runs 50-250. JCT 250, no overhead.
 * sensitivity: z would lose (1.5 - 1) x 200 = 100 s spread, so waits up to
 *   100 s; machine 0 frees at 50: 50-250.
 * las: vgg16 is consolidation-sensitive, so z waits for a machine: 50-250.
 */
int test_sim_hand_consolidation(void)
{
	const char *t = ddl_sim_data("consolidate.csv");
	const char *ids[] = {"x", "y", "z"};
	const double fifo[] = {50, 1000, 300}, gandiva[] = {50, 1000, 243.333333};
	const double wait[] = {50, 1000, 250};
	if (ddl_sim_jcts(t, "1x2x4", "fifo", ids, fifo, 3) != DDL_PASS ||
	    ddl_sim_jcts(t, "1x2x4", "gandiva", ids, gandiva, 3) != DDL_PASS ||
	    ddl_sim_jcts(t, "1x2x4", "dally", ids, wait, 3) != DDL_PASS ||
	    ddl_sim_jcts(t, "1x2x4", "sensitivity", ids, wait, 3) != DDL_PASS ||
	    ddl_sim_jcts(t, "1x2x4", "las", ids, wait, 3) != DDL_PASS)
		return DDL_FAIL;
	struct {
		const char *policy;
		double comm;
	} c[] = {{"fifo", 100}, {"gandiva", 33.333333}, {"dally", 0}, {"sensitivity", 0}};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		json_t *j = ddl_sim_json(t, "1x2x4", c[i].policy, "--lease=100");
		CHECK(j, "%s", c[i].policy);
		CHECK(ddl_near(ddl_num(j, "comm_overhead_s"), c[i].comm), "%s: comm overhead %.3f",
		      c[i].policy, ddl_num(j, "comm_overhead_s"));
		json_decref(j);
	}
	return DDL_PASS;
}

/*
 * las_preempt.csv on 1x1x4, lease 100 s, restart 10 s:
 *   p 0 s 4 GPUs 2000 s; q 950 s 4 GPUs 100 s.
 * las: at the lease end at 1000 p has attained 4000 GPU-s (past the
 *   3600 GPU-s first queue) and q none: p is preempted, q runs 1000-1100
 *   (JCT 150); p restarts at 1100 with 1000 s left plus 10 s restart cost:
 *   ends 2110.
 * fifo: p 0-2000, q 2000-2100 (JCT 1150).
 */
int test_sim_hand_las(void)
{
	const char *t = ddl_sim_data("las_preempt.csv");
	const char *ids[] = {"p", "q"};
	const double las[] = {2110, 150}, fifo[] = {2000, 1150};
	if (ddl_sim_jcts(t, "1x1x4", "las", ids, las, 2) != DDL_PASS ||
	    ddl_sim_jcts(t, "1x1x4", "fifo", ids, fifo, 2) != DDL_PASS)
		return DDL_FAIL;
	return DDL_PASS;
}

/* Every policy completes the real 60-job trace, the same way twice. */
int test_sim_tiresias60(void)
{
	if (access(DDL_TIRESIAS60, R_OK) != 0) {
		fprintf(stderr, "    %s is absent: skipped\n", DDL_TIRESIAS60);
		return DDL_SKIP;
	}
	const char *clusters[] = {"4x32x8", "2x2x4"};
	for (size_t c = 0; c < 2; c++)
		for (size_t p = 0; p < DDL_NPOL; p++) {
			char *args[] = {"--trace", DDL_TIRESIAS60, "--format", "tiresias", "--cluster",
			                (char *)clusters[c], "--policy", (char *)ddl_sim_policies[p],
			                "--json", "--check", NULL};
			struct ddl_run_result a, b;
			CHECK(ddl_sim_exec(args, &a) == 0 && tstatus(&a) == 0, "%s: %s",
			      ddl_sim_policies[p], a.err);
			CHECK(ddl_sim_exec(args, &b) == 0 && tstatus(&b) == 0, "%s", b.err);
			CHECK(a.nout == b.nout && !memcmp(a.out, b.out, a.nout), "%s: two runs differ",
			      ddl_sim_policies[p]);
			json_t *j = json_loads(a.out, 0, NULL);
			CHECK(j, "not JSON");
			CHECK(!strcmp(json_string_value(json_object_get(j, "schema")), "ddlprof-sim/1"),
			      "schema");
			CHECK(json_integer_value(json_object_get(j, "jobs_completed")) == 60 &&
			              json_integer_value(json_object_get(j, "jobs")) == 60,
			      "%s on %s: %lld of 60 completed", ddl_sim_policies[p], clusters[c],
			      json_integer_value(json_object_get(j, "jobs_completed")));
			const char *fields[] = {"makespan_s",   "jct_mean_s",      "jct_p50_s",
			                        "jct_p99_s",    "queue_mean_s",    "comm_overhead_s",
			                        "gpu_utilization"};
			for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++)
				CHECK(json_is_number(json_object_get(j, fields[k])), "no %s", fields[k]);
			CHECK(ddl_num(j, "jct_p50_s") <= ddl_num(j, "jct_p99_s") &&
			              ddl_num(j, "gpu_utilization") > 0 && ddl_num(j, "gpu_utilization") <= 1,
			      "figures out of order");
			json_decref(j);
			trun_free(&a);
			trun_free(&b);
		}
	return DDL_PASS;
}

/* The delay policies beat fifo and gandiva on a network-sensitive mix. */
int test_sim_sensitive_mix(void)
{
	const char *t = ddl_sim_data("sensitive_mix.csv");
	double jct[DDL_NPOL], comm[DDL_NPOL];
	for (size_t p = 0; p < DDL_NPOL; p++) {
		json_t *j = ddl_sim_json(t, "2x4x8", ddl_sim_policies[p], NULL);
		CHECK(j, "%s", ddl_sim_policies[p]);
		CHECK(json_integer_value(json_object_get(j, "jobs_completed")) == 200, "%s",
		      ddl_sim_policies[p]);
		jct[p] = ddl_num(j, "jct_mean_s");
		comm[p] = ddl_num(j, "comm_overhead_s");
		json_decref(j);
	}
	/* indices: 0 fifo, 2 gandiva, 3 dally, 4 sensitivity */
	for (int p = 3; p <= 4; p++)
		for (int q = 0; q <= 2; q += 2) {
			CHECK(jct[p] < jct[q], "%s mean JCT %.0f not below %s's %.0f", ddl_sim_policies[p],
			      jct[p], ddl_sim_policies[q], jct[q]);
			CHECK(comm[p] < comm[q], "%s comm overhead %.0f not below %s's %.0f",
			      ddl_sim_policies[p], comm[p], ddl_sim_policies[q], comm[q]);
		}
	return DDL_PASS;
}

/* --check on generated traces of every shape, under every policy. */
int test_sim_invariants(void)
{
	char *dir = tmpdir(), path[PATH_MAX];
	snprintf(path, sizeof path, "%s/gen.csv", dir);
	const char *clusters[] = {"2x4x4", "1x2x8", "3x2x2"};
	for (int s = 0; s < 3; s++) {
		char seed[16];
		snprintf(seed, sizeof seed, "%d", s + 11);
		char *gen[] = {"--generate", "1500", "--seed", seed, "--cluster", (char *)clusters[s],
		               "--load", "1", NULL};
		struct ddl_run_result r;
		CHECK(ddl_sim_exec(gen, &r) == 0 && tstatus(&r) == 0, "generate: %s", r.err);
		FILE *f = fopen(path, "w");
		CHECK(f && fwrite(r.out, 1, r.nout, f) == r.nout && fclose(f) == 0, "write %s", path);
		trun_free(&r);
		for (size_t p = 0; p < DDL_NPOL; p++) {
			json_t *j = ddl_sim_json(path, clusters[s], ddl_sim_policies[p], "--restart-cost=45");
			CHECK(j, "%s on %s", ddl_sim_policies[p], clusters[s]);
			CHECK(json_integer_value(json_object_get(j, "jobs_completed")) == 1500, "%s",
			      ddl_sim_policies[p]);
			json_decref(j);
		}
	}
	trm(dir);
	free(dir);
	/* The samples of the other formats too. */
	json_t *j = ddl_sim_json(ddl_sim_data("helios_sample.csv"), "1x2x8", "dally", NULL);
	CHECK(j && json_integer_value(json_object_get(j, "jobs_completed")) == 3, "helios sample");
	json_decref(j);
	return DDL_PASS;
}

int test_sim_bad_records(void)
{
	const char *t = ddl_sim_data("bad_records.csv");
	char *args[] = {"--trace", (char *)t, "--format", "csv", "--cluster", "1x1x4", "--json", NULL};
	struct ddl_run_result r;
	CHECK(ddl_sim_exec(args, &r) == 0 && tstatus(&r) == 0, "%s", r.err);
	/* lines: 3 negative arrival, 5 zero GPUs, 7 short, 8 slowdown < 1
	 * (line 6 is empty and not a record) */
	const char *want[] = {":3: arrival_s", ":5: gpus", ":7: too few", ":8: slowdown_rack"};
	for (size_t i = 0; i < 4; i++)
		CHECK(strstr(r.err, want[i]), "no '%s' in '%s'", want[i], r.err);
	json_t *j = json_loads(r.out, 0, NULL);
	CHECK(j && json_integer_value(json_object_get(j, "jobs")) == 3 &&
	              json_integer_value(json_object_get(j, "jobs_skipped")) == 4,
	      "jobs/skipped: %s", r.out);
	json_decref(j);
	trun_free(&r);

	char *strict[] = {"--trace", (char *)t, "--strict", NULL};
	CHECK(ddl_sim_exec(strict, &r) == 0 && tstatus(&r) == 1, "--strict status %d",
	      tstatus(&r));
	CHECK(strstr(r.err, ":3:") && strstr(r.err, "--strict") && !strstr(r.err, ":5:") && !r.nout,
	      "--strict: '%s' / '%s'", r.err, r.out);
	trun_free(&r);

	/* A job larger than the cluster is a bad record of that run. */
	char *big[] = {"--trace", (char *)ddl_sim_data("fifo_backfill.csv"), "--cluster", "1x1x4",
	               "--strict", NULL};
	CHECK(ddl_sim_exec(big, &r) == 0 && tstatus(&r) == 1 && strstr(r.err, "needs 8 GPUs"),
	      "too big: %d '%s'", tstatus(&r), r.err);
	trun_free(&r);
	return DDL_PASS;
}

/*
 * philly_sample.json: job 1's last attempt spans two machines with 4 GPUs
 * each (8 GPUs) for an hour; job 2 uses 2 GPUs for 10 minutes, submitted
 * 30 minutes after job 1; record 3 has not finished (a bad record),
 * record 4 never ran (left out, counted in one line).
 */
int test_sim_philly(void)
{
	const char *t = ddl_sim_data("philly_sample.json");
	char *dir = tmpdir(), out[PATH_MAX];
	snprintf(out, sizeof out, "%s/jobs.csv", dir);
	char *args[] = {"--trace", (char *)t, "--cluster", "1x2x8", "--policy", "gandiva",
	                "--check", "--jobs-out", out, "--json", NULL};
	struct ddl_run_result r;
	CHECK(ddl_sim_exec(args, &r) == 0 && tstatus(&r) == 0, "%s", r.err);
	CHECK(strstr(r.err, "record 3 (byte 808/line 15, jobid application_1506638472019_10240): ") &&
	              strstr(r.err, "end_time") && !strstr(r.err, "record 4") &&
	              strstr(r.err, "left out 1 job that never ran (no attempts)"),
	      "stderr: %s", r.err);
	json_t *j = json_loads(r.out, 0, NULL);
	CHECK(j && json_integer_value(json_object_get(j, "jobs_completed")) == 2, "%s", r.out);
	json_decref(j);
	trun_free(&r);
	FILE *f = fopen(out, "r");
	CHECK(f, "no %s", out);
	char buf[4096];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = 0;
	fclose(f);
	CHECK(strstr(buf, "id,model,gpus,arrival_s") &&
	              strstr(buf, "application_1506638472019_10238,default,8,0.000,0.000,3600.000") &&
	              strstr(buf, "application_1506638472019_10239,default,2,1800.000,1800.000,2400.000"),
	      "jobs: %s", buf);
	/* --jobs-out does not overwrite without --force. */
	char *again[] = {"--trace", (char *)t, "--cluster", "1x2x8", "--jobs-out", out, NULL};
	CHECK(ddl_sim_exec(again, &r) == 0 && tstatus(&r) == 1 && strstr(r.err, "--force"),
	      "overwrite: %d %s", tstatus(&r), r.err);
	trun_free(&r);
	char *force[] = {"--trace", (char *)t, "--cluster", "1x2x8", "--jobs-out", out, "--force",
	                 NULL};
	CHECK(ddl_sim_exec(force, &r) == 0 && tstatus(&r) == 0, "--force: %s", r.err);
	trun_free(&r);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* Same seed, same trace and same results, byte for byte. */
int test_sim_deterministic(void)
{
	char *g1[] = {"--generate", "300", "--seed", "5", NULL};
	char *g2[] = {"--generate", "300", "--seed", "6", NULL};
	struct ddl_run_result a, b, c;
	CHECK(ddl_sim_exec(g1, &a) == 0 && ddl_sim_exec(g1, &b) == 0 && ddl_sim_exec(g2, &c) == 0,
	      "generate");
	CHECK(a.nout > 1000 && a.nout == b.nout && !memcmp(a.out, b.out, a.nout), "same seed differs");
	CHECK(a.nout != c.nout || memcmp(a.out, c.out, a.nout), "seeds 5 and 6 give the same trace");
	trun_free(&a);
	trun_free(&b);
	trun_free(&c);
	const char *t = ddl_sim_data("sensitive_mix.csv");
	for (size_t p = 0; p < DDL_NPOL; p++) {
		char *args[] = {"--trace", (char *)t, "--cluster", "2x4x8", "--policy",
		                (char *)ddl_sim_policies[p], NULL};
		CHECK(ddl_sim_exec(args, &a) == 0 && ddl_sim_exec(args, &b) == 0, "run");
		CHECK(tstatus(&a) == 0 && a.nout == b.nout && !memcmp(a.out, b.out, a.nout),
		      "%s: text output differs between runs", ddl_sim_policies[p]);
		trun_free(&a);
		trun_free(&b);
	}
	return DDL_PASS;
}

/* Runs ddlprof-sim with ARGS under a TIMEOUT_S limit; 0, or -1 when it
 * could not run or ran past the limit. */
static int ddl_sim_exec_within(char *const args[], int timeout_s, struct ddl_run_result *r)
{
	char *argv[32] = {(char *)tbuild("bin/ddlprof-sim")};
	int n = 1;
	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return trun(argv, NULL, timeout_s, r);
}

/* Writes TEXT to DIR/NAME; the path, or NULL. */
static const char *ddl_sim_write(const char *dir, const char *name, const char *text)
{
	static char buf[4][PATH_MAX];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
	FILE *f = fopen(buf[k], "w");
	if (!f)
		return NULL;
	size_t n = strlen(text);
	if (fwrite(text, 1, n, f) != n) {
		fclose(f);
		return NULL;
	}
	return fclose(f) == 0 ? buf[k] : NULL;
}

/*
 * Times that are not finite, negative or above 1e10 s (and dates with a
 * field out of range) are bad records in every loader: reported with
 * their line or record number and skipped, or rejecting the file under
 * --strict. huge_times.csv: lines 3 (1e17), 4 (inf), 8 (-1) bad arrivals,
 * 5 (1e300) and 6 (nan) bad durations; line 7 arrives at exactly 1e10 s.
 * huge_times_helios.csv: lines 3 (1e308), 4 (99:99:99), 6 (February 30)
 * bad submit times, 5 a 2e10 s duration. huge_times_philly.json: records
 * 2 (-1e308), 3 (1e308), 4 (24:00:00) bad submissions, 5 an end at
 * 04:61:00.
 */
int test_sim_huge_times(void)
{
	char *dir = tmpdir();
	const char *tir = ddl_sim_write(dir, "tiresias.csv",
	                                "job_id,num_gpu,submit_time,iterations,model_name,duration,"
	                                "interval\n"
	                                "1,1,0,10,resnet50,100,1\n"
	                                "2,1,1e20,10,resnet50,100,1\n"
	                                "3,1,10,10,resnet50,-inf,1\n"
	                                "4,1,20,10,resnet50,1e11,1\n"
	                                "5,1,30,10,resnet50,60,1\n");
	CHECK(tir, "writing the Tiresias trace");
	struct {
		const char *file, *format;
		int jobs, skipped;
		const char *says[5];
	} c[] = {
		{ddl_sim_data("huge_times.csv"), "csv", 3, 5,
		 {":3: arrival_s", ":4: arrival_s", ":5: duration_s", ":6: duration_s", ":8: arrival_s"}},
		{ddl_sim_data("huge_times_helios.csv"), "helios", 2, 4,
		 {":3: submit_time", ":4: submit_time", ":5: duration", ":6: submit_time", NULL}},
		{ddl_sim_data("huge_times_philly.json"), "philly", 2, 4,
		 {"jobid p2): submitted_time", "jobid p3): submitted_time",
		  "jobid p4): submitted_time", "record 5 (byte ", "jobid p5): the last attempt's end_time"}},
		{tir, "tiresias", 2, 3, {":3: submit_time", ":4: duration", ":5: duration", NULL}},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		char *args[] = {"--trace", (char *)c[i].file, "--format", (char *)c[i].format,
		                "--cluster", "1x1x2", "--policy", "las", "--check", "--json", NULL};
		struct ddl_run_result r;
		CHECK(ddl_sim_exec_within(args, 20, &r) == 0, "%s: did not finish in 20 s", c[i].file);
		CHECK(tstatus(&r) == 0, "%s: status %d: %s", c[i].file, tstatus(&r), r.err);
		for (size_t k = 0; k < 5 && c[i].says[k]; k++)
			CHECK(strstr(r.err, c[i].says[k]), "%s: no '%s' in '%s'", c[i].file, c[i].says[k],
			      r.err);
		CHECK(strstr(r.err, "invariants held"), "%s: %s", c[i].file, r.err);
		json_t *j = json_loads(r.out, 0, NULL);
		CHECK(j && json_integer_value(json_object_get(j, "jobs")) == c[i].jobs &&
		              json_integer_value(json_object_get(j, "jobs_completed")) == c[i].jobs &&
		              json_integer_value(json_object_get(j, "jobs_skipped")) == c[i].skipped,
		      "%s: %s", c[i].file, r.out);
		CHECK(isfinite(ddl_num(j, "makespan_s")) && ddl_num(j, "makespan_s") < 2e10,
		      "%s: makespan %g", c[i].file, ddl_num(j, "makespan_s"));
		json_decref(j);
		trun_free(&r);

		char *strict[] = {"--trace", (char *)c[i].file, "--format", (char *)c[i].format,
		                  "--strict", NULL};
		CHECK(ddl_sim_exec_within(strict, 20, &r) == 0, "%s --strict", c[i].file);
		CHECK(tstatus(&r) == 1 && strstr(r.err, c[i].says[0]) &&
		              strstr(r.err, "rejected (--strict)") && !strstr(r.err, c[i].says[1]) &&
		              !r.nout,
		      "%s --strict: status %d, '%s' / '%s'", c[i].file, tstatus(&r), r.err, r.out);
		trun_free(&r);
	}
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* --lease below 1 ms is a usage error; a 1 ms lease late in a 1.7e9 s
 * trace still moves time forward (it once stood still where doubles are
 * coarser than the lease). */
int test_sim_lease_bound(void)
{
	char *bad[] = {"0.0009", "1e-7", "-1", "nan", "inf", "1e11"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *args[] = {"--trace", "x.csv", "--lease", bad[i], NULL};
		struct ddl_run_result r;
		CHECK(ddl_sim_exec_within(args, 20, &r) == 0, "--lease %s", bad[i]);
		CHECK(tstatus(&r) == 2 && strstr(r.err, "--lease") && strstr(r.err, "0.001"),
		      "--lease %s: status %d, '%s'", bad[i], tstatus(&r), r.err);
		trun_free(&r);
	}
	char *dir = tmpdir();
	const char *t = ddl_sim_write(dir, "late.csv",
	                              "id,arrival_s,gpus,duration_s\na,1.7e9,1,10\nb,1e10,1,2.5\n");
	CHECK(t, "writing the trace");
	for (size_t p = 0; p < DDL_NPOL; p++) {
		char *args[] = {"--trace", (char *)t, "--cluster", "1x1x1", "--lease", "0.001",
		                "--policy", (char *)ddl_sim_policies[p], "--check", "--json", NULL};
		struct ddl_run_result r;
		CHECK(ddl_sim_exec_within(args, 20, &r) == 0, "%s: did not finish in 20 s",
		      ddl_sim_policies[p]);
		CHECK(tstatus(&r) == 0 && strstr(r.err, "invariants held"), "%s: status %d: %s",
		      ddl_sim_policies[p], tstatus(&r), r.err);
		json_t *j = json_loads(r.out, 0, NULL);
		CHECK(j && json_integer_value(json_object_get(j, "jobs_completed")) == 2 &&
		              ddl_near(ddl_num(j, "jct_mean_s"), 6.25),
		      "%s: %s", ddl_sim_policies[p], r.out);
		json_decref(j);
		trun_free(&r);
	}
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * Jobs that run 1e9 s, some arriving at the 1e10 s bound, finish under
 * every policy in bounded time, with --check holding and sane JCTs: on
 * one 4-GPU machine, a (4 GPUs) and b (2) cannot share it; c arrives at
 * 1e10 s, long after both, and runs alone.
 */
int test_sim_long_jobs(void)
{
	char *dir = tmpdir();
	const char *t = ddl_sim_write(dir, "long.csv",
	                              "id,arrival_s,gpus,duration_s\n"
	                              "a,0,4,1e9\n"
	                              "b,10,2,1e9\n"
	                              "c,1e10,1,1e9\n");
	CHECK(t, "writing the trace");
	for (size_t p = 0; p < DDL_NPOL; p++) {
		char *args[] = {"--trace", (char *)t, "--cluster", "1x1x4", "--policy",
		                (char *)ddl_sim_policies[p], "--check", "--json", NULL};
		struct ddl_run_result r;
		CHECK(ddl_sim_exec_within(args, 20, &r) == 0, "%s: did not finish in 20 s",
		      ddl_sim_policies[p]);
		CHECK(tstatus(&r) == 0 && strstr(r.err, "invariants held"), "%s: status %d: %s",
		      ddl_sim_policies[p], tstatus(&r), r.err);
		json_t *j = json_loads(r.out, 0, NULL);
		CHECK(j && json_integer_value(json_object_get(j, "jobs_completed")) == 3, "%s: %s",
		      ddl_sim_policies[p], r.out);
		/* c alone takes 1e9 s; a and b together take at least 2e9 s of the
		 * machine, plus restarts. */
		double mean = ddl_num(j, "jct_mean_s"), util = ddl_num(j, "gpu_utilization");
		CHECK(mean >= 4e9 / 3 - 10 && mean < 2e9, "%s: JCT mean %g", ddl_sim_policies[p], mean);
		CHECK(ddl_near(ddl_num(j, "makespan_s"), 1.1e10), "%s: makespan %g", ddl_sim_policies[p],
		      ddl_num(j, "makespan_s"));
		CHECK(util > 0 && util <= 1, "%s: utilization %g", ddl_sim_policies[p], util);
		json_decref(j);
		trun_free(&r);
	}
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * Every number of the summary is present and finite (never NaN, never
 * silently dropped from the JSON), in the text too, also for a run whose
 * makespan is zero: a job too short to move the clock at 1e10 s.
 */
int test_sim_output_numbers(void)
{
	static const char *const keys[] = {
		"lease_s", "restart_cost_s", "makespan_s", "jct_mean_s", "jct_p50_s", "jct_p90_s",
		"jct_p99_s", "queue_mean_s", "comm_overhead_s", "gpu_utilization",
	};
	char *dir = tmpdir();
	const char *tiny = ddl_sim_write(dir, "tiny.csv", "id,arrival_s,gpus,duration_s\n"
	                                                  "a,1e10,1,1e-9\n");
	CHECK(tiny, "writing the trace");
	const char *traces[] = {tiny, ddl_sim_data("sensitive_mix.csv"),
	                        ddl_sim_data("huge_times.csv")};
	for (size_t i = 0; i < sizeof traces / sizeof traces[0]; i++) {
		for (size_t p = 0; p < DDL_NPOL; p++) {
			char *args[] = {"--trace", (char *)traces[i], "--cluster", "2x4x8", "--policy",
			                (char *)ddl_sim_policies[p], "--json", NULL};
			struct ddl_run_result r;
			CHECK(ddl_sim_exec_within(args, 20, &r) == 0 && tstatus(&r) == 0,
			      "%s %s: %s", traces[i], ddl_sim_policies[p], r.err);
			json_t *j = json_loads(r.out, 0, NULL);
			CHECK(j, "%s %s: not JSON: %s", traces[i], ddl_sim_policies[p], r.out);
			for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
				json_t *v = json_object_get(j, keys[k]);
				CHECK(json_is_number(v) && isfinite(json_number_value(v)),
				      "%s %s: %s missing or not a number: %s", traces[i], ddl_sim_policies[p],
				      keys[k], r.out);
			}
			double u = ddl_num(j, "gpu_utilization");
			CHECK(u >= 0 && u <= 1, "%s %s: utilization %g", traces[i], ddl_sim_policies[p], u);
			json_decref(j);
			trun_free(&r);

			char *text[] = {"--trace", (char *)traces[i], "--cluster", "2x4x8", "--policy",
			                (char *)ddl_sim_policies[p], NULL};
			CHECK(ddl_sim_exec_within(text, 20, &r) == 0 && tstatus(&r) == 0, "%s %s: %s",
			      traces[i], ddl_sim_policies[p], r.err);
			CHECK(strstr(r.out, "GPU utilization ") && !strstr(r.out, "nan") &&
			              !strstr(r.out, " inf") && !strstr(r.out, "n/a"),
			      "%s %s: %s", traces[i], ddl_sim_policies[p], r.out);
			trun_free(&r);
		}
	}
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* Runs ddlprof-sim with ARGS plus --jobs-out, --lease 100 --restart-cost 10
 * --check; returns job ID's record and the summary in *SUM (NULL on failure). */
static json_t *ddl_sim_job_of(char *const args[], const char *id, json_t **sum)
{
	char *dir = tmpdir(), out[PATH_MAX], *argv[32];
	int n = 0;
	snprintf(out, sizeof out, "%s/jobs.jsonl", dir);
	for (int i = 0; args[i] && n < 20; i++)
		argv[n++] = args[i];
	char *more[] = {"--lease", "100", "--restart-cost", "10", "--check", "--json", "--jobs-out", out, NULL};
	for (int i = 0; more[i]; i++)
		argv[n++] = more[i];
	argv[n] = NULL;
	struct ddl_run_result r;
	json_t *job = NULL;
	*sum = NULL;
	if (ddl_sim_exec(argv, &r) == 0 && tstatus(&r) == 0)
		*sum = json_loads(r.out, 0, NULL);
	else
		fprintf(stderr, "    status %d: %s\n", tstatus(&r), r.err);
	trun_free(&r);
	FILE *f = fopen(out, "r");
	char line[4096];
	while (f && !job && fgets(line, sizeof line, f)) {
		json_t *j = json_loads(line, 0, NULL);
		const char *jid = json_string_value(json_object_get(j, "id"));
		if (jid && !strcmp(jid, id))
			job = j;
		else
			json_decref(j);
	}
	if (f)
		fclose(f);
	trm(dir);
	free(dir);
	return job;
}

/*
 * Job speeds from ddlprof profiles (the files of tests/sim/profiles are
 * ddlprof-report/1 reports). profiled.csv is consolidate.csv with z's
 * profile column naming profiles/sensitive.json (slowdown 2.0 in a rack,
 * 3.0 across racks, at 25 and 10 Gbit/s), relative to the trace; on
 * 1x2x4, lease 100 s, restart 10 s (see test_sim_hand_consolidation):
 *   fifo: z spans both machines at 1/2 speed: 0-400, overhead 200 s;
 *   dally: z waits for machine 0, free at 50: 50-250;
 *   fifo --bw rack=12.5: 1 + (2 - 1) x 25 / 12.5 = 3 (the profile's own
 *     bandwidth is the reference): 0-600.
 * consolidate.csv --profiles profiles: z (vgg16) takes profiles/vgg16.json
 *   (1.2 in a rack): fifo 0-240, overhead 40 s; x and y (resnet50, no
 *   file) keep the table, said in one line.
 */
int test_sim_profiles(void)
{
	const char *t = ddl_sim_data("profiled.csv"), *c = ddl_sim_data("consolidate.csv");
	char pdir[PATH_MAX];
	snprintf(pdir, sizeof pdir, "%s", ddl_sim_data("profiles"));
	struct {
		char *args[12];
		double jct, comm, rack, cluster;
	} k[] = {
		{{"--trace", (char *)t, "--cluster", "1x2x4", "--policy", "fifo", NULL}, 400, 200, 2, 3},
		{{"--trace", (char *)t, "--cluster", "1x2x4", "--policy", "dally", NULL}, 250, 0, 2, 3},
		{{"--trace", (char *)t, "--cluster", "1x2x4", "--bw", "rack=12.5", NULL}, 600, 400, 3, 3},
		{{"--trace", (char *)c, "--cluster", "1x2x4", "--profiles", pdir, NULL}, 240, 40, 1.2, 1.5},
	};
	for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
		json_t *sum, *z = ddl_sim_job_of(k[i].args, "z", &sum);
		CHECK(z && sum, "case %zu: no record of z", i);
		CHECK(ddl_near(ddl_num(z, "jct_s"), k[i].jct) && ddl_near(ddl_num(z, "comm_overhead_s"), k[i].comm),
		      "case %zu: z JCT %.3f, overhead %.3f; expected %g, %g", i, ddl_num(z, "jct_s"),
		      ddl_num(z, "comm_overhead_s"), k[i].jct, k[i].comm);
		CHECK(ddl_near(ddl_num(z, "slowdown_rack"), k[i].rack) &&
		      ddl_near(ddl_num(z, "slowdown_cluster"), k[i].cluster) &&
		      json_is_string(json_object_get(z, "slowdown_from")) &&
		      !strcmp(json_string_value(json_object_get(z, "slowdown_from")), "profile"),
		      "case %zu: z slowdowns %g %g from %s", i, ddl_num(z, "slowdown_rack"),
		      ddl_num(z, "slowdown_cluster"), json_string_value(json_object_get(z, "slowdown_from")));
		CHECK(json_integer_value(json_object_get(sum, "jobs_profiled")) == 1 &&
		      json_integer_value(json_object_get(sum, "jobs_completed")) == 3,
		      "case %zu: jobs_profiled %lld", i,
		      (long long)json_integer_value(json_object_get(sum, "jobs_profiled")));
		json_decref(z);
		json_decref(sum);
	}
	/* the models without a file keep the table, in one line naming one of them */
	char *args[] = {"--trace", (char *)c, "--cluster", "1x2x4", "--profiles", pdir, NULL};
	struct ddl_run_result r;
	CHECK(ddl_sim_exec(args, &r) == 0 && tstatus(&r) == 0, "status %d", tstatus(&r));
	CHECK(strstr(r.err, "no <model>.json for 1 model (resnet50)") &&
	      strstr(r.out, "profiles        1 job with slowdowns from ddlprof profiles"),
	      "stderr '%s', stdout '%s'", r.err, r.out);
	trun_free(&r);
	return DDL_PASS;
}

/*
 * Bad profiles: each record of bad_profiles.csv names a report that cannot
 * be used and is skipped with its line number, the file and the field (or
 * the system's reason); --strict rejects the trace at the first. A bad
 * report under --profiles skips its model's jobs, said once, or rejects
 * the run under --strict; --profiles must name a directory.
 */
int test_sim_bad_profiles(void)
{
	const char *t = ddl_sim_data("bad_profiles.csv"), *c = ddl_sim_data("consolidate.csv");
	static const char *const says[] = {
		"bad_profiles.csv:3: profile ", "no_such_file.json: No such file or directory",
		"bad_profiles.csv:4: profile ", "vgg16.json: job.sensitivity.slowdown.rack: must be a number",
		"bad_profiles.csv:5: profile ", "null_sensitivity.json: job.sensitivity: null",
		"bad_profiles.csv:6: profile ", "newer.json: schema: \"ddlprof-report/2\" is newer",
		"bad_profiles.csv:7: profile ", "not_a_report.json: schema: not a ddlprof-report profile",
		"bad_profiles.csv:8: profile ", "cluster_below_rack.json: job.sensitivity.slowdown.cluster: below .rack",
		"bad_profiles.csv:9: profile ", "truncated.json: line 1: not JSON",
		"bad_profiles.csv:10: profile ", "badprofiles: not a regular file",
	};
	char *args[] = {"--trace", (char *)t, "--cluster", "1x2x4", "--json", NULL};
	struct ddl_run_result r;
	CHECK(ddl_sim_exec(args, &r) == 0 && tstatus(&r) == 0, "status %d: %s", tstatus(&r), r.err);
	for (size_t i = 0; i < sizeof says / sizeof says[0]; i++)
		CHECK(strstr(r.err, says[i]), "no '%s' in: %s", says[i], r.err);
	json_t *j = json_loads(r.out, 0, NULL);
	CHECK(j && json_integer_value(json_object_get(j, "jobs")) == 1 &&
	      json_integer_value(json_object_get(j, "jobs_skipped")) == 8 &&
	      json_integer_value(json_object_get(j, "jobs_profiled")) == 1, "%s", r.out);
	json_decref(j);
	trun_free(&r);
	char *strict[] = {"--trace", (char *)t, "--cluster", "1x2x4", "--strict", NULL};
	CHECK(ddl_sim_exec(strict, &r) == 0 && tstatus(&r) == 1 &&
	      strstr(r.err, "bad_profiles.csv:3: profile ") && strstr(r.err, "rejected (--strict)") &&
	      !strstr(r.err, "bad_profiles.csv:4:"), "--strict: status %d: %s", tstatus(&r), r.err);
	trun_free(&r);

	char bdir[PATH_MAX];
	snprintf(bdir, sizeof bdir, "%s", ddl_sim_data("badprofiles"));
	char *bad[] = {"--trace", (char *)c, "--cluster", "1x2x4", "--profiles", bdir, "--json", NULL};
	CHECK(ddl_sim_exec(bad, &r) == 0 && tstatus(&r) == 0, "status %d: %s", tstatus(&r), r.err);
	CHECK(strstr(r.err, "badprofiles/vgg16.json: job.sensitivity.slowdown.rack: must be a number") &&
	      strstr(r.err, "the jobs of model vgg16 skipped"), "%s", r.err);
	j = json_loads(r.out, 0, NULL);
	CHECK(j && json_integer_value(json_object_get(j, "jobs")) == 2 &&
	      json_integer_value(json_object_get(j, "jobs_skipped")) == 1, "%s", r.out);
	json_decref(j);
	trun_free(&r);
	char *bads[] = {"--trace", (char *)c, "--cluster", "1x2x4", "--profiles", bdir, "--strict", NULL};
	CHECK(ddl_sim_exec(bads, &r) == 0 && tstatus(&r) == 1 && strstr(r.err, "rejected (--strict)"),
	      "--profiles --strict: status %d: %s", tstatus(&r), r.err);
	trun_free(&r);
	char *nodir[] = {"--trace", (char *)c, "--profiles", (char *)t, NULL};
	CHECK(ddl_sim_exec(nodir, &r) == 0 && tstatus(&r) == 2 && strstr(r.err, "--profiles"),
	      "--profiles FILE: status %d: %s", tstatus(&r), r.err);
	trun_free(&r);
	return DDL_PASS;
}

/* Runs ARGS (with -q), expecting STATUS; returns stderr (strdup) and the
 * parsed stdout in *OUT when it is JSON. NULL when it could not run. */
static char *ddl_sim_run_err(char *const args[], int status, json_t **out)
{
	struct ddl_run_result r;
	if (out)
		*out = NULL;
	if (ddl_sim_exec_within(args, 30, &r) < 0)
		return NULL;
	if (tstatus(&r) != status) {
		fprintf(stderr, "    status %d, expected %d: %s\n", tstatus(&r), status, r.err);
		trun_free(&r);
		return NULL;
	}
	if (out)
		*out = json_loads(r.out, 0, NULL);
	char *err = strdup(r.err);
	trun_free(&r);
	return err;
}

/*
 * Philly logs with syntax errors: each costs one record, reported with its
 * number, byte offset and line, and the rest is read; --strict rejects the
 * file at that record. good.json holds six jobs (j0..j5, 2 GPUs each) and,
 * as record 4, one that never ran; every corrupt copy below loses exactly
 * one job.
 */
int test_sim_philly_corrupt(void)
{
	char *dir = tmpdir();
	static const char *const rec[] = {
		"{\"status\": \"Pass\", \"jobid\": \"j0\", \"submitted_time\": \"2017-10-03 04:00:00\", "
		"\"attempts\": [{\"start_time\": \"2017-10-03 04:00:00\", \"end_time\": \"2017-10-03 "
		"05:00:00\", \"detail\": [{\"ip\": \"m1\", \"gpus\": [\"gpu0\", \"gpu1\"]}]}]}",
		/* numeric epochs are times too */
		"{\"status\": \"Pass\", \"jobid\": \"j1\", \"submitted_time\": 1507003260, "
		"\"attempts\": [{\"start_time\": 1507003260, \"end_time\": 1507006860.5, "
		"\"detail\": [{\"ip\": \"m1\", \"gpus\": [\"gpu0\", \"gpu1\"]}]}]}",
		"{\"status\": \"Killed\", \"jobid\": \"never\", \"submitted_time\": \"2017-10-03 "
		"04:01:00\", \"attempts\": []}",
	};
	/* j2..j5 are j0 with another id */
	char good[8192] = "[\n";
	for (int i = 0; i < 6; i++) {
		char r[1024];
		if (i == 1)
			snprintf(r, sizeof r, "%s", rec[1]);
		else
			snprintf(r, sizeof r, "{\"status\": \"Pass\", \"jobid\": \"j%d\"%s", i,
			         strstr(rec[0], ", \"submitted_time\""));
		strcat(good, r);
		strcat(good, ",\n");
		if (i == 2) {
			strcat(good, rec[2]);
			strcat(good, ",\n");
		}
	}
	good[strlen(good) - 2] = 0;
	strcat(good, "\n]\n");
	char buf[8192];
	struct {
		const char *name, *says, *strict_says;
		int jobs;
	} c[] = {
		{"good.json", NULL, NULL, 6},
		{"truncated.json", "record 7 (byte ", "truncated: the file ends inside the record", 5},
		{"stray_inside.json", "record 3 (byte ", "closes the record early", 5},
		{"stray_after.json", "record 2 (byte ", "closes the record early", 5},
		{"open.json", "record 5 (byte ", "not closed before the next record starts", 5},
		{"garbled.json", "record 7 (byte ", "not JSON at byte ", 5},
		{"no_comma.json", "record 6 (byte ", "no ',' after the record", 5},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		snprintf(buf, sizeof buf, "%s", good);
		char *p;
		switch (i) {
		case 1: buf[strlen(buf) - 40] = 0; break; /* inside j5 */
		case 2: /* a '}' between two fields of j2 */
			p = strstr(buf, "\"jobid\": \"j2\"") + strlen("\"jobid\": \"j2\"");
			memmove(p + 1, p, strlen(p) + 1);
			*p = '}';
			break;
		case 3: /* a '}' after j1's own */
			p = strstr(buf, "\n{\"status\": \"Pass\", \"jobid\": \"j2\"") - 1;
			memmove(p + 1, p, strlen(p) + 1);
			*p = '}';
			break;
		case 4: /* a '{' never closed inside j3 */
			p = strstr(buf, "\"jobid\": \"j3\",") + strlen("\"jobid\": \"j3\",");
			memmove(p + 8, p, strlen(p) + 1);
			memcpy(p, " \"x\": {,", 8);
			break;
		case 5: /* a bare word in j5: "jobid": j5 */
			p = strstr(buf, "\"jobid\": \"j5\"") + 9;
			memmove(p, p + 1, strlen(p));
			memmove(p + 2, p + 3, strlen(p + 2));
			break;
		case 6: /* no comma after j4 */
			p = strstr(buf, "\n{\"status\": \"Pass\", \"jobid\": \"j5\"") - 1;
			memmove(p, p + 1, strlen(p));
			break;
		}
		const char *t = ddl_sim_write(dir, c[i].name, buf);
		CHECK(t, "writing %s", c[i].name);
		char *args[] = {"--trace", (char *)t, "--cluster", "1x2x8", "--policy", "dally", "--check",
		                "--json", "-q", NULL};
		json_t *j;
		char *err = ddl_sim_run_err(args, 0, &j);
		CHECK(err && j, "%s: did not run", c[i].name);
		CHECK(json_integer_value(json_object_get(j, "jobs_completed")) == c[i].jobs &&
		              json_integer_value(json_object_get(j, "jobs_skipped")) == (i ? 1 : 0),
		      "%s: %lld jobs, %lld skipped; %s", c[i].name,
		      (long long)json_integer_value(json_object_get(j, "jobs_completed")),
		      (long long)json_integer_value(json_object_get(j, "jobs_skipped")), err);
		CHECK(strstr(err, "left out 1 job that never ran"), "%s: %s", c[i].name, err);
		if (c[i].says) {
			char want[PATH_MAX + 64];
			snprintf(want, sizeof want, "%s: %s", t, c[i].says);
			CHECK(strstr(err, want) && strstr(err, c[i].strict_says) && strstr(err, "/line "),
			      "%s: no '%s' / '%s' in: %s", c[i].name, want, c[i].strict_says, err);
			/* one message for the one problem */
			CHECK(!strstr(strstr(err, want) + strlen(want), ": record "), "%s: more than one: %s", c[i].name,
			      err);
		} else {
			CHECK(!strstr(err, "record "), "good.json: %s", err);
		}
		json_decref(j);
		free(err);
		char *strict[] = {"--trace", (char *)t, "--cluster", "1x2x8", "--strict", "-q", NULL};
		err = ddl_sim_run_err(strict, c[i].says ? 1 : 0, NULL);
		CHECK(err, "%s --strict", c[i].name);
		if (c[i].says)
			CHECK(strstr(err, c[i].says) && strstr(err, "the trace is rejected (--strict)") &&
			              !strstr(err, "record skipped"),
			      "%s --strict: %s", c[i].name, err);
		free(err);
	}
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * Philly records may name a model (and a profile): sensitive_mix_philly.json
 * is sensitive_mix.csv in the Philly format, with numeric epoch times, a
 * model field per job and two jobs that never ran. It must give exactly
 * the CSV's results, so the delay policies beat fifo there too; without
 * its model fields every job would get the default slowdowns.
 */
int test_sim_philly_models(void)
{
	const char *p = ddl_sim_data("sensitive_mix_philly.json");
	const char *c = ddl_sim_data("sensitive_mix.csv");
	double jct[DDL_NPOL], comm[DDL_NPOL];
	for (size_t k = 0; k < DDL_NPOL; k++) {
		json_t *a = ddl_sim_json(p, "2x4x8", ddl_sim_policies[k], "--strict");
		json_t *b = ddl_sim_json(c, "2x4x8", ddl_sim_policies[k], NULL);
		CHECK(a && b, "%s", ddl_sim_policies[k]);
		CHECK(json_integer_value(json_object_get(a, "jobs_completed")) == 200, "%s",
		      ddl_sim_policies[k]);
		jct[k] = ddl_num(a, "jct_mean_s");
		comm[k] = ddl_num(a, "comm_overhead_s");
		CHECK(ddl_near(jct[k], ddl_num(b, "jct_mean_s")) &&
		              ddl_near(comm[k], ddl_num(b, "comm_overhead_s")),
		      "%s: Philly %g/%g, CSV %g/%g", ddl_sim_policies[k], jct[k], comm[k],
		      ddl_num(b, "jct_mean_s"), ddl_num(b, "comm_overhead_s"));
		json_decref(a);
		json_decref(b);
	}
	for (int k = 3; k <= 4; k++)
		CHECK(jct[k] < jct[0] && comm[k] < comm[0], "%s: JCT %g, overhead %g; fifo %g, %g",
		      ddl_sim_policies[k], jct[k], comm[k], jct[0], comm[0]);
	/* a profile field, relative to the trace, and a bad model field */
	char *dir = tmpdir(), prof[PATH_MAX + 32];
	snprintf(prof, sizeof prof, "%s", ddl_sim_data("profiles/sensitive.json"));
	char text[4096];
	snprintf(text, sizeof text,
	         "[{\"jobid\": \"z\", \"profile\": \"%s\", \"submitted_time\": 0, \"attempts\": "
	         "[{\"start_time\": 0, \"end_time\": 200, \"detail\": [{\"ip\": \"a\", \"gpus\": [1, 2]}]}]},\n"
	         " {\"jobid\": \"y\", \"model\": 5, \"submitted_time\": 0, \"attempts\": "
	         "[{\"start_time\": 0, \"end_time\": 200, \"detail\": [{\"ip\": \"a\", \"gpus\": [1]}]}]}]\n",
	         prof);
	const char *t = ddl_sim_write(dir, "prof.json", text);
	CHECK(t, "writing");
	char *args[] = {"--trace", (char *)t, "--cluster", "1x2x1", "--json", "-q", NULL};
	json_t *j;
	char *err = ddl_sim_run_err(args, 0, &j);
	CHECK(err && j && json_integer_value(json_object_get(j, "jobs_profiled")) == 1 &&
	              json_integer_value(json_object_get(j, "jobs_skipped")) == 1,
	      "profile: %s", err);
	CHECK(strstr(err, "record 2 (byte ") && strstr(err, "jobid y): model is not a string"), "%s",
	      err);
	json_decref(j);
	free(err);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * dally's timers, reported in --json's dally_timers: per GPU-demand bucket
 * and level, the waits of the jobs that got that level, their mean and
 * standard deviation, and mean + 2 sd in whole leases within 1..8.
 *   1x1x1, lease 100: a, b, c (1 GPU, 50 s, all at 0) wait 0, 50, 100:
 *     mean 50, sd 40.82, 131.6 s: 2 leases (bucket 1 GPU).
 *   1x1x4: the same jobs all start at 0: 0 s, the lower bound: 1 lease.
 *   dally_timer.csv on 1x2x3 (2 machines of 3 GPUs), lease 100: x1, x2
 *     (3 GPUs) fill both machines for 1000 s; w (2 GPUs) waits 1000 s; a1,
 *     a2 (2 GPUs, at 2000) start at once, leaving one GPU on each machine.
 *     Bucket 2-3: waits 0, 0, 1000, 0, 0: mean 200, sd 400, 1000 s: 10
 *     leases, above the bound: 8. z (2 GPUs, vgg16, at 2000) finds no
 *     machine; it waits its 8 leases, takes the rack at 2800 and runs
 *     100 x 1.5 s: JCT 950 (with the untuned 1 lease it would be 250).
 */
int test_sim_dally_timers(void)
{
	char *dir = tmpdir();
	const char *t = ddl_sim_write(dir, "three.csv", "id,arrival_s,gpus,duration_s\n"
	                                                "a,0,1,50\nb,0,1,50\nc,0,1,50\n");
	CHECK(t, "writing");
	struct {
		const char *trace, *cluster;
		int gpus_min, waits, leases;
		double mean, sd;
	} c[] = {
		{t, "1x1x1", 1, 3, 2, 50, 40.824829},
		{t, "1x1x4", 1, 3, 1, 0, 0},
		{ddl_sim_data("dally_timer.csv"), "1x2x3", 2, 5, 8, 200, 400},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		json_t *j = ddl_sim_json(c[i].trace, c[i].cluster, "dally", "--lease=100");
		CHECK(j, "case %zu", i);
		json_t *tm = json_object_get(j, "dally_timers");
		CHECK(json_array_size(tm) == 1, "case %zu: %zu timers", i, json_array_size(tm));
		json_t *e = json_array_get(tm, 0);
		CHECK(json_integer_value(json_object_get(e, "gpus_min")) == c[i].gpus_min &&
		              !strcmp(json_string_value(json_object_get(e, "level")), "machine") &&
		              json_integer_value(json_object_get(e, "waits")) == c[i].waits &&
		              ddl_near(ddl_num(e, "wait_mean_s"), c[i].mean) &&
		              ddl_near(ddl_num(e, "wait_sd_s"), c[i].sd) &&
		              json_integer_value(json_object_get(e, "leases")) == c[i].leases,
		      "case %zu: %s", i, json_dumps(e, 0));
		json_decref(j);
	}
	/* the tuned timer is the one z waits */
	const char *ids[] = {"w", "z"};
	const double jct[] = {1010, 950};
	if (ddl_sim_jcts(ddl_sim_data("dally_timer.csv"), "1x2x3", "dally", ids, jct, 2) != DDL_PASS)
		return DDL_FAIL;
	/* other policies have no timers */
	json_t *j = ddl_sim_json(t, "1x1x1", "las", NULL);
	CHECK(j && !json_object_get(j, "dally_timers"), "las reports timers");
	json_decref(j);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * dally's network-sensitive preemption: at lease ends the job that lags
 * its ideal progress most keeps or gets GPUs first. dally_lag.csv on 1x2x3,
 * lease 100 s, restart 10 s:
 *   a0, b0 (2 GPUs, 1900 s) take machines 0 and 1, one GPU left on each.
 *   L (2 GPUs, 5000 s, vgg16) finds no machine, waits its 1-lease timer and
 *     takes the rack at 100: 1 GPU per machine at 1/1.5 speed.
 *   1900: a0, b0 end; L migrates to machine 0 (1200 s done, saves 3800 x
 *     0.5 s > 10 s): restarts, ends 1910 + 3800 = 5710.
 *   1950: a1 takes machine 1; b1 needs 2 GPUs and only 1 + 1 are free:
 *     waits. 1960: W (2 GPUs, 100 s) waits.
 *   Lease end 2000: L has attained 3780 GPU-s (las queue 1) but lags:
 *     600 s lost of 1890 run, 0.32. a1, b1, W have queue 0 and no lag. Lag
 *     first: L keeps its GPUs, a1 keeps its, nobody is preempted. (The
 *     attained-service order would put a1, b1, W first and preempt L.)
 *   2100: b1 takes the rack, 1000 x 1.05 s: ends 3150 (JCT 1200).
 *   2950: a1 ends; W takes machine 1: 2950-3050 (JCT 1090).
 */
int test_sim_dally_lag(void)
{
	const char *t = ddl_sim_data("dally_lag.csv");
	const char *ids[] = {"L", "b1", "W"};
	const double jct[] = {5710, 1200, 1090};
	if (ddl_sim_jcts(t, "1x2x3", "dally", ids, jct, 3) != DDL_PASS)
		return DDL_FAIL;
	char *args[] = {"--trace", (char *)t, "--cluster", "1x2x3", "--policy", "dally", NULL};
	json_t *sum, *l = ddl_sim_job_of(args, "L", &sum);
	CHECK(l && sum, "no record of L");
	CHECK(json_integer_value(json_object_get(l, "preemptions")) == 0 &&
	              json_integer_value(json_object_get(l, "migrations")) == 1 &&
	              json_integer_value(json_object_get(sum, "preemptions")) == 0,
	      "L: %s", json_dumps(l, 0));
	json_decref(l);
	json_decref(sum);
	return DDL_PASS;
}

/*
 * Jobs given as iterations. Our CSV: iterations x iteration_s, or the
 * profile's job.sensitivity.iteration_s.machine (0.25 s in
 * profiles/sensitive.json); a job too big for one machine runs its
 * iterations at its tightest level's slowdown. Tiresias: a row with an
 * empty duration takes its iterations at --profiles DIR/<model>.json's
 * iteration time. On 1x2x4, fifo:
 *   i1: 1 GPU, 100 x 2 s = 200 s.       i2: profile, 400 x 0.25 = 100 s.
 *   i3: 8 GPUs (both machines, rack, default slowdown 1.1): 100 x 1 x 1.1.
 *   i4: no iteration time at all: skipped, said.
 */
int test_sim_iterations(void)
{
	char *dir = tmpdir(), prof[PATH_MAX];
	snprintf(prof, sizeof prof, "%s", ddl_sim_data("profiles/sensitive.json"));
	char text[PATH_MAX + 512];
	snprintf(text, sizeof text,
	         "id,arrival_s,gpus,duration_s,iterations,iteration_s,profile\n"
	         "i1,0,1,,100,2,\n"
	         "i2,0,1,,400,,%s\n"
	         "i3,1000,8,,100,1,\n"
	         "i4,0,1,,100,,\n"
	         "i5,0,1,50,100,,\n",
	         prof);
	const char *t = ddl_sim_write(dir, "iter.csv", text);
	CHECK(t, "writing");
	const char *ids[] = {"i1", "i2", "i3", "i5"};
	const double jct[] = {200, 100, 110, 50};
	if (ddl_sim_jcts(t, "1x2x4", "fifo", ids, jct, 4) != DDL_PASS)
		return DDL_FAIL;
	char *args[] = {"--trace", (char *)t, "--cluster", "1x2x4", "--json", "-q", NULL};
	json_t *j;
	char *err = ddl_sim_run_err(args, 0, &j);
	CHECK(err && strstr(err, "job i4: 100 iterations and no iteration time") &&
	              json_integer_value(json_object_get(j, "jobs_skipped")) == 1,
	      "%s", err ? err : "");
	json_decref(j);
	free(err);
	char *strict[] = {"--trace", (char *)t, "--cluster", "1x2x4", "--strict", "-q", NULL};
	err = ddl_sim_run_err(strict, 1, NULL);
	CHECK(err && strstr(err, "rejected (--strict)"), "--strict: %s", err ? err : "");
	free(err);

	/* Tiresias: s1 has a duration; s2 only iterations, timed by profiles/<model>.json */
	const char *tir = ddl_sim_write(dir, "tir.csv",
	                                "job_id,num_gpu,submit_time,iterations,model_name,duration,"
	                                "interval\n"
	                                "s1,1,0,10,resnet50,100,1\n"
	                                "s2,1,0,400,sensitive,,1\n"
	                                "s3,1,0,,resnet50,,1\n");
	CHECK(tir, "writing");
	char pdir[PATH_MAX];
	snprintf(pdir, sizeof pdir, "%s", ddl_sim_data("profiles"));
	char out[PATH_MAX];
	snprintf(out, sizeof out, "%s/jobs.csv", dir);
	char *targs[] = {"--trace", (char *)tir, "--format", "tiresias", "--cluster", "1x2x4",
	                 "--profiles", pdir, "--jobs-out", out, "-q", NULL};
	err = ddl_sim_run_err(targs, 0, NULL);
	CHECK(err && strstr(err, ":4: neither duration nor iterations"), "tiresias: %s",
	      err ? err : "");
	free(err);
	FILE *f = fopen(out, "r");
	CHECK(f, "no %s", out);
	char buf[4096];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = 0;
	fclose(f);
	CHECK(strstr(buf, "\ns1,resnet50,1,0.000,0.000,100.000,") &&
	              strstr(buf, "\ns2,sensitive,1,0.000,0.000,100.000,"),
	      "tiresias jobs: %s", buf);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* Lines of S holding NEEDLE. */
static int ddl_lines_with(const char *s, const char *needle)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/*
 * What the command line is told back: --load out of 0..1 refused; a
 * --cluster number out of bounds named, with its bounds (each 1 or more,
 * at most 10000000 GPUs in all); a directory given to --trace said to be
 * one; jobs too big for the cluster said in one line with their count and
 * the first three ids, one line each under --verbose, and one job in its
 * own line as before.
 */
int test_sim_input_messages(void)
{
	struct {
		char *args[8];
		int status;
		const char *says, *also;
	} c[] = {
		{{"--generate", "5", "--load", "2", NULL}, 2, "--load '2'", "at most 1"},
		{{"--generate", "5", "--load", "0", NULL}, 2, "--load '0'", "above 0"},
		{{"--generate", "5", "--load", "1", NULL}, 0, "", ""},
		{{"--trace", "x.csv", "--cluster", "0x0x0", NULL}, 2, "R (racks) is 0", "1..10000000"},
		{{"--trace", "x.csv", "--cluster", "4x0x8", NULL}, 2, "M (machines per rack) is 0", "1..10000000"},
		{{"--trace", "x.csv", "--cluster", "4x2x99999999999", NULL}, 2, "G (GPUs per machine) is 99999999999",
		 "1..10000000"},
		{{"--trace", "x.csv", "--cluster", "99999x99999x99999", NULL}, 2, "99999 x 99999 x 99999",
		 "at most 10000000 in all"},
		{{"--trace", "x.csv", "--cluster", "4x32", NULL}, 2, "RxMxG", "4x32x8"},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		struct ddl_run_result r;
		CHECK(ddl_sim_exec(c[i].args, &r) == 0, "case %zu", i);
		CHECK(tstatus(&r) == c[i].status && strstr(r.err, c[i].says) && strstr(r.err, c[i].also),
		      "%s %s: status %d, stderr '%s'", c[i].args[2], c[i].args[3], tstatus(&r), r.err);
		trun_free(&r);
	}
	char *dir = tmpdir();
	for (int f = 0; f < 2; f++) {
		char *args[] = {"--trace", dir, f ? "--format" : NULL, "csv", NULL};
		struct ddl_run_result r;
		CHECK(ddl_sim_exec(args, &r) == 0 && tstatus(&r) == 1 && strstr(r.err, dir) &&
		      strstr(r.err, "is a directory") && !strstr(r.err, "cannot tell"),
		      "--trace DIR%s: status %d, stderr '%s'", f ? " --format csv" : "", tstatus(&r), r.err);
		trun_free(&r);
	}
	const char *t = ddl_sim_write(dir, "big.csv",
	                              "id,arrival_s,gpus,duration_s\nok,0,1,10\nb1,1,2,10\nb2,2,3,10\n"
	                              "b3,3,4,10\nb4,4,5,10\nb5,5,6,10\n");
	const char *one = ddl_sim_write(dir, "one.csv", "id,arrival_s,gpus,duration_s\nok,0,1,10\nb1,1,2,10\n");
	CHECK(t && one, "writing the traces");
	char *quiet[] = {"--trace", (char *)t, "--cluster", "1x1x1", "--json", NULL};
	struct ddl_run_result r;
	CHECK(ddl_sim_exec(quiet, &r) == 0 && tstatus(&r) == 0, "1x1x1: %s", r.err);
	CHECK(ddl_lines_with(r.err, "\n") == 1 && strstr(r.err, "5 jobs skipped") &&
	      strstr(r.err, "b1 (2 GPUs), b2 (3 GPUs), b3 (4 GPUs), ...") && !strstr(r.err, "b4") &&
	      strstr(r.err, "--verbose"), "1x1x1: stderr '%s'", r.err);
	json_t *j = json_loads(r.out, 0, NULL);
	CHECK(j && json_integer_value(json_object_get(j, "jobs_skipped")) == 5, "1x1x1: %s", r.out);
	json_decref(j);
	trun_free(&r);
	char *verbose[] = {"--trace", (char *)t, "--cluster", "1x1x1", "--verbose", NULL};
	CHECK(ddl_sim_exec(verbose, &r) == 0 && tstatus(&r) == 0 &&
	      ddl_lines_with(r.err, "the cluster has 1; job skipped") == 5 && ddl_lines_with(r.err, "\n") == 5,
	      "--verbose: stderr '%s'", r.err);
	trun_free(&r);
	char *single[] = {"--trace", (char *)one, "--cluster", "1x1x1", NULL};
	CHECK(ddl_sim_exec(single, &r) == 0 && tstatus(&r) == 0 && ddl_lines_with(r.err, "\n") == 1 &&
	      strstr(r.err, "job b1 needs 2 GPUs, the cluster has 1; job skipped"), "one job: stderr '%s'", r.err);
	trun_free(&r);
	trm(dir);
	free(dir);
	return DDL_PASS;
}
