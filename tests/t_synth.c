/*
 * ddlsynth, the synthetic data-parallel job, on the CPU emulation of the
 * CUDA runtime and NCCL: it runs as four ranks on two emulated hosts, its
 * measured step agrees with its own plan (the ground truth other tests
 * hold ddlprof to), the plan names the communicators each all-reduce
 * algorithm needs, overlap hides communication, a failing rank fails the
 * job quickly, and bad flags and an existing plan file are refused.
 * Skipped where ddlsynth was not built (no CUDA headers).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

/*
 * A small job: 4 layers of 250k float gradients in two 2 MB buckets, on
 * slow emulated links (1 Gbit/s inside a host, 0.25 between hosts). The
 * emulation copies and reduces real bytes on the CPU while the paced
 * transfers run; on two cores that is hidden under the wire time when the
 * links are slow (a step of the hierarchical job at 8 and 2 Gbit/s measured
 * 6% over plan, 29% before the collectives ran on the device clock; here
 * 1-2%, the host's own gaps between steps).
 */
#define DDL_SYNTH_JOB "--ranks", "4", "--ranks-per-host", "2", "--layers", "4", \
	"--params-per-layer", "250k", "--bucket-mb", "2", "--iterations", "5", "--warmup", "1", \
	"--intra-gbps", "1", "--net-gbps", "0.25", "--timeout", "60"

static const char *ddl_synth_path(void)
{
	const char *p = tbuild("examples/ddlsynth");
	return access(p, X_OK) == 0 ? p : NULL;
}

/* Runs ddlsynth with ARGS (NULL-terminated, at most 40). Returns trun's result. */
static int ddl_synth_run(char *const args[], int timeout_s, struct ddl_run_result *r)
{
	char *argv[42] = {(char *)ddl_synth_path()};
	int n = 1;
	for (int i = 0; args[i] && n < 41; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return trun(argv, NULL, timeout_s, r);
}

static int ddl_exit_code(const struct ddl_run_result *r)
{
	return WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1;
}

/* Each rank's "mean step X ms" from the summary lines into ms[]; returns how many. */
static int ddl_synth_steps(const char *out, double *ms, int cap)
{
	int n = 0;
	for (const char *p = out; n < cap && (p = strstr(p, "mean step ")); p++)
		ms[n++] = strtod(p + strlen("mean step "), NULL);
	return n;
}

static json_t *ddl_plan_load(const char *path)
{
	json_error_t je;
	json_t *j = json_load_file(path, 0, &je);
	if (!j)
		fprintf(stderr, "    %s: %s (line %d)\n", path, je.text, je.line);
	return j;
}

static double ddl_num(json_t *o, const char *key)
{
	return json_number_value(json_object_get(o, key));
}

static json_t *ddl_plan_iter(json_t *plan)
{
	return json_object_get(plan, "per_iteration");
}

/* The communicator called NAME in the plan, or NULL. */
static json_t *ddl_plan_comm(json_t *plan, const char *name)
{
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(plan, "communicators"), i, c)
		if (!strcmp(json_string_value(json_object_get(c, "name")), name))
			return c;
	return NULL;
}

/* Runs the job with EXTRA options (up to 8) and its plan into DIR/plan.json; fills ms[4]. */
static int ddl_synth_job(const char *dir, char *const extra[], double ms[4], json_t **plan)
{
	char path[512];
	snprintf(path, sizeof path, "%s/plan.json", dir);
	char *args[40] = {DDL_SYNTH_JOB, "--plan-json", path};
	int n = 0;
	while (args[n])
		n++;
	for (int i = 0; extra && extra[i]; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	/* Steps are timed against the plan: on two cores that other work may
	 * share, a run now and then stalls; up to three runs, until one agrees. */
	for (int attempt = 0;; attempt++) {
		struct ddl_run_result r;
		CHECK(ddl_synth_run(args, 60, &r) == 0, "ddlsynth did not finish; stderr: %s", r.err);
		CHECK(ddl_exit_code(&r) == 0, "ddlsynth exit status %#x; stderr: %s", r.status, r.err);
		CHECK(ddl_synth_steps(r.out, ms, 4) == 4, "expected 4 summary lines; stdout: %s", r.out);
		trun_free(&r);
		*plan = ddl_plan_load(path);
		CHECK(*plan, "no plan");
		double want = ddl_num(ddl_plan_iter(*plan), "serial_step_s") * 1e3;
		int ok = 1;
		if (json_is_true(json_object_get(json_object_get(*plan, "config"), "overlap")))
			break; /* the serial step is no measure of an overlapped one */
		for (int k = 0; k < 4; k++)
			ok &= fabs(ms[k] - want) <= 0.10 * want;
		if (ok || attempt == 2)
			break;
		fprintf(stderr, "    run %d: steps %.1f %.1f %.1f %.1f ms against %.1f planned: again\n",
		        attempt + 1, ms[0], ms[1], ms[2], ms[3], want);
		json_decref(*plan);
		unlink(path);
	}
	CHECK(!strcmp(json_string_value(json_object_get(*plan, "schema")), "ddlsynth-plan/1"), "schema");
	return DDL_PASS;
}

/* Every rank's measured step against the plan's serial step (overlap off), within 10%. */
static int ddl_synth_agrees(const double ms[4], json_t *plan)
{
	double want = ddl_num(ddl_plan_iter(plan), "serial_step_s") * 1e3;
	for (int r = 0; r < 4; r++)
		CHECK(fabs(ms[r] - want) <= 0.10 * want, "rank %d: measured step %.1f ms, planned %.1f ms", r,
		      ms[r], want);
	fprintf(stderr, "    measured %.1f %.1f %.1f %.1f ms per step, planned %.1f ms\n", ms[0], ms[1],
	        ms[2], ms[3], want);
	return DDL_PASS;
}

/* The two emulated hosts: distinct names ending -h0 and -h1, ranks 0,1 and 2,3. */
static int ddl_synth_hosts(json_t *plan)
{
	json_t *hosts = json_object_get(plan, "hosts");
	CHECK(json_array_size(hosts) == 2, "%zu hosts", json_array_size(hosts));
	for (int h = 0; h < 2; h++) {
		json_t *e = json_array_get(hosts, (size_t)h);
		const char *name = json_string_value(json_object_get(e, "name"));
		char sfx[8];
		snprintf(sfx, sizeof sfx, "-h%d", h);
		CHECK(name && strlen(name) > 3 && !strcmp(name + strlen(name) - 3, sfx), "host %d is %s", h, name);
		json_t *ranks = json_object_get(e, "ranks");
		CHECK(json_array_size(ranks) == 2 && json_integer_value(json_array_get(ranks, 0)) == 2 * h &&
		      json_integer_value(json_array_get(ranks, 1)) == 2 * h + 1, "ranks of host %d", h);
	}
	return DDL_PASS;
}

/* Four ranks on two emulated hosts, one flat ring, no overlap: the step is the plan's sum. */
int test_synth_flat_two_hosts(void)
{
	if (!ddl_synth_path())
		return DDL_SKIP;
	char *dir = tmpdir();
	double ms[4];
	json_t *plan;
	char *extra[] = {"--compute-ms", "5", "--overlap", "off", "--data-ms", "5", "--input-mb", "8",
	                 "--pcie-gbps", "8", NULL};
	int rc = ddl_synth_job(dir, extra, ms, &plan);
	if (rc != DDL_PASS)
		return rc;
	CHECK(ddl_synth_hosts(plan) == DDL_PASS, "hosts");
	json_t *w = ddl_plan_comm(plan, "world");
	CHECK(w && json_array_size(json_object_get(plan, "communicators")) == 1, "flat uses world only");
	CHECK(ddl_num(w, "size") == 4 && ddl_num(w, "hosts") == 2 &&
	      !strcmp(json_string_value(json_object_get(w, "span")), "inter"), "world communicator");
	json_t *it = ddl_plan_iter(plan), *colls = json_object_get(it, "collectives");
	CHECK(json_array_size(colls) == 2, "%zu collectives per step", json_array_size(colls));
	for (size_t i = 0; i < 2; i++) {
		json_t *c = json_array_get(colls, i);
		CHECK(!strcmp(json_string_value(json_object_get(c, "op")), "all_reduce") &&
		      ddl_num(c, "bytes") == 2e6 && ddl_num(c, "bucket") == (double)i, "collective %zu", i);
	}
	/* ring all-reduce: 2 (n-1)/n * 2 MB per bucket at the 0.25 Gbit/s network, twice */
	CHECK(fabs(ddl_num(it, "inter_s") - 2 * 1.5 * 2e6 / 31.25e6) < 1e-9 && ddl_num(it, "intra_s") == 0,
	      "inter_s %g intra_s %g", ddl_num(it, "inter_s"), ddl_num(it, "intra_s"));
	CHECK(fabs(ddl_num(it, "compute_s") - 0.04) < 1e-9, "compute_s %g", ddl_num(it, "compute_s"));
	CHECK(fabs(ddl_num(it, "data_s") - (0.005 + 8 * 1048576.0 * 8 / 8e9)) < 1e-9, "data_s %g",
	      ddl_num(it, "data_s"));
	json_t *run = json_object_get(json_array_get(json_object_get(plan, "ranks"), 3), "run");
	CHECK(ddl_num(run, "collectives") == 12 && ddl_num(run, "inter_bytes") == 12 * 2e6 &&
	      ddl_num(run, "intra_bytes") == 0, "rank 3's run totals");
	rc = ddl_synth_agrees(ms, plan);
	json_decref(plan);
	trm(dir);
	return rc;
}

/* Hierarchical: reduce-scatter and all-gather inside each host, all-reduce across them. */
int test_synth_hierarchical(void)
{
	if (!ddl_synth_path())
		return DDL_SKIP;
	char *dir = tmpdir();
	double ms[4];
	json_t *plan;
	char *extra[] = {"--compute-ms", "5", "--overlap", "off", "--allreduce", "hierarchical", NULL};
	int rc = ddl_synth_job(dir, extra, ms, &plan);
	if (rc != DDL_PASS)
		return rc;
	CHECK(ddl_synth_hosts(plan) == DDL_PASS, "hosts");
	json_t *a = ddl_plan_comm(plan, "intra"), *e = ddl_plan_comm(plan, "inter");
	CHECK(a && e && !ddl_plan_comm(plan, "world"), "communicators are not intra and inter");
	CHECK(ddl_num(a, "size") == 2 && ddl_num(a, "hosts") == 1 && ddl_num(a, "instances") == 2 &&
	      !strcmp(json_string_value(json_object_get(a, "span")), "intra"), "intra communicator");
	CHECK(ddl_num(e, "size") == 2 && ddl_num(e, "hosts") == 2 && ddl_num(e, "instances") == 2 &&
	      !strcmp(json_string_value(json_object_get(e, "span")), "inter"), "inter communicator");
	/* the inter communicators join equal local indexes: ranks 0,2 and 1,3 */
	json_t *g = json_object_get(e, "groups");
	CHECK(json_integer_value(json_array_get(json_array_get(g, 0), 1)) == 2 &&
	      json_integer_value(json_array_get(json_array_get(g, 1), 0)) == 1, "inter groups");
	static const char *ops[] = {"reduce_scatter", "all_reduce", "all_gather"};
	static const char *comms[] = {"intra", "inter", "intra"};
	json_t *it = ddl_plan_iter(plan), *colls = json_object_get(it, "collectives");
	CHECK(json_array_size(colls) == 6, "%zu collectives per step", json_array_size(colls));
	for (size_t i = 0; i < 6; i++) {
		json_t *c = json_array_get(colls, i);
		CHECK(!strcmp(json_string_value(json_object_get(c, "op")), ops[i % 3]) &&
		      !strcmp(json_string_value(json_object_get(c, "comm")), comms[i % 3]) &&
		      ddl_num(c, "bytes") == 1e6, "collective %zu", i);
	}
	/* per bucket: RS and AG of 2 MB on 2 ranks at 125 MB/s, AR of 1 MB on 2 ranks at 31.25 MB/s */
	CHECK(fabs(ddl_num(it, "intra_s") - 2 * 2 * 0.5 * 2e6 / 125e6) < 1e-9, "intra_s %g",
	      ddl_num(it, "intra_s"));
	CHECK(fabs(ddl_num(it, "inter_s") - 2 * 1e6 / 31.25e6) < 1e-9, "inter_s %g", ddl_num(it, "inter_s"));
	json_t *pi = json_object_get(json_array_get(json_object_get(plan, "ranks"), 0), "per_iteration");
	CHECK(ddl_num(pi, "intra_bytes") == 4e6 && ddl_num(pi, "inter_bytes") == 2e6, "rank 0 bytes");
	rc = ddl_synth_agrees(ms, plan);
	json_decref(plan);
	trm(dir);
	return rc;
}

/* Overlap on hides part of the all-reduces under the backward pass. */
int test_synth_overlap(void)
{
	if (!ddl_synth_path())
		return DDL_SKIP;
	char *dir = tmpdir();
	double off[4], on[4];
	json_t *plan;
	char *xoff[] = {"--compute-ms", "20", "--overlap", "off", NULL};
	char *xon[] = {"--compute-ms", "20", "--overlap", "on", "--force", NULL};
	int rc = ddl_synth_job(dir, xoff, off, &plan);
	if (rc != DDL_PASS)
		return rc;
	json_decref(plan);
	rc = ddl_synth_job(dir, xon, on, &plan);
	if (rc != DDL_PASS)
		return rc;
	CHECK(json_is_true(json_object_get(json_object_get(plan, "config"), "overlap")), "plan says overlap");
	/*
	 * Off: 80 ms forward + 80 ms backward + 2 x 96 ms all-reduce = 352 ms.
	 * On: the first bucket's all-reduce runs under the last 40 ms of the
	 * backward pass: about 312 ms. Ask for at least half of that gain.
	 */
	double moff = 0, mon = 0;
	for (int r = 0; r < 4; r++) {
		moff += off[r] / 4;
		mon += on[r] / 4;
	}
	/* and the plan's own schedule of the overlapped step (expected_iteration_s) says so too */
	double want = ddl_num(ddl_plan_iter(plan), "expected_iteration_s") * 1e3;
	fprintf(stderr, "    overlap off %.1f ms, on %.1f ms per step (planned %.1f)\n", moff, mon, want);
	CHECK(mon < moff - 20, "overlap on %.1f ms per step, off %.1f ms", mon, moff);
	CHECK(fabs(want - 312) < 1, "planned overlapped step %.1f ms, not 312", want);
	CHECK(fabs(mon - want) <= 0.10 * want, "overlap on %.1f ms per step, planned %.1f ms", mon, want);
	json_decref(plan);
	trm(dir);
	return DDL_PASS;
}

/* One rank exits with status 3: the launcher stops the others and exits 3, well before any timeout. */
int test_synth_rank_fails(void)
{
	if (!ddl_synth_path())
		return DDL_SKIP;
	char *args[] = {"--ranks", "4", "--ranks-per-host", "2", "--layers", "2", "--params-per-layer",
	                "1000", "--compute-ms", "5", "--iterations", "100000", "--fail-rank", "1",
	                "--timeout", "60", NULL};
	struct ddl_run_result r;
	time_t t0 = time(NULL);
	CHECK(ddl_synth_run(args, 60, &r) == 0, "ddlsynth did not finish");
	CHECK(ddl_exit_code(&r) == 3, "exit status %#x, expected 3; stderr: %s", r.status, r.err);
	CHECK(time(NULL) - t0 < 15, "took %ld s", (long)(time(NULL) - t0));
	CHECK(strstr(r.err, "rank 1"), "stderr does not name rank 1: %s", r.err);
	trun_free(&r);
	return DDL_PASS;
}

/* A job that runs past --timeout is stopped: exit 124, soon after the limit. */
int test_synth_timeout(void)
{
	if (!ddl_synth_path())
		return DDL_SKIP;
	char *args[] = {"--ranks", "2", "--layers", "2", "--params-per-layer", "1000", "--compute-ms", "5",
	                "--iterations", "100000", "--timeout", "2", NULL};
	struct ddl_run_result r;
	time_t t0 = time(NULL);
	CHECK(ddl_synth_run(args, 30, &r) == 0, "ddlsynth did not stop by itself");
	CHECK(ddl_exit_code(&r) == 124, "exit status %#x, expected 124; stderr: %s", r.status, r.err);
	CHECK(time(NULL) - t0 <= 6, "took %ld s to stop after a 2 s limit", (long)(time(NULL) - t0));
	CHECK(strstr(r.err, "--timeout"), "stderr does not say why: %s", r.err);
	trun_free(&r);
	return DDL_PASS;
}

/* --hang-rank: that rank stops before its --hang-at-th collective and says
 * so; the others wait in theirs until --timeout stops the job. */
int test_synth_hang(void)
{
	if (!ddl_synth_path())
		return DDL_SKIP;
	char *args[] = {"--ranks", "2", "--layers", "2", "--params-per-layer", "1000", "--compute-ms", "2",
	                "--iterations", "50", "--hang-rank", "1", "--hang-at", "4", "--timeout", "2", NULL};
	struct ddl_run_result r;
	time_t t0 = time(NULL);
	CHECK(ddl_synth_run(args, 30, &r) == 0, "ddlsynth did not stop by itself");
	CHECK(ddl_exit_code(&r) == 124, "exit status %#x, expected 124; stderr: %s", r.status, r.err);
	CHECK(time(NULL) - t0 >= 1 && time(NULL) - t0 <= 6, "took %ld s to stop after a 2 s limit",
	      (long)(time(NULL) - t0));
	CHECK(strstr(r.err, "rank 1: stopping before its collective 4 for good"), "stderr: %s", r.err);
	CHECK(!strstr(r.out, "mean step"), "a rank finished its steps: %s", r.out);
	trun_free(&r);
	return DDL_PASS;
}

/* Bad command lines: exit 2, one line on stderr, nothing run. */
int test_synth_bad_flags(void)
{
	if (!ddl_synth_path())
		return DDL_SKIP;
	static char *bad[][8] = {
		{"--bogus"},
		{"--ranks"},
		{"--ranks", "zero"},
		{"--ranks", "0"},
		{"--layers", "2.5"},
		{"--overlap", "maybe"},
		{"--allreduce", "tree"},
		{"--compute-ms", "-1"},
		{"--compute-ms", "5", "--flops", "1e9"},
		{"--ranks", "3", "--ranks-per-host", "2", "--allreduce", "hierarchical"},
		{"--ranks", "2", "--ranks-per-host", "4"},
		{"--params-per-layer", "1X"},
		{"--ranks", "2", "--hang-rank", "2"},
		{"--hang-rank", "0", "--hang-at", "0"},
		{"stray"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct ddl_run_result r;
		CHECK(ddl_synth_run(bad[i], 10, &r) == 0, "%s did not finish", bad[i][0]);
		CHECK(ddl_exit_code(&r) == 2, "%s %s: exit status %#x", bad[i][0], bad[i][1] ? bad[i][1] : "",
		      r.status);
		char *nl = strchr(r.err, '\n');
		CHECK(!strncmp(r.err, "ddlsynth: ", 10) && nl && !nl[1] && r.nout == 0,
		      "%s: want one line on stderr, got: %s", bad[i][0], r.err);
		trun_free(&r);
	}
	return DDL_PASS;
}

/* --plan-json never replaces a file unless --force, and refuses before running anything. */
int test_synth_plan_no_overwrite(void)
{
	if (!ddl_synth_path())
		return DDL_SKIP;
	char *dir = tmpdir(), path[512];
	snprintf(path, sizeof path, "%s/plan.json", dir);
	FILE *f = fopen(path, "w");
	CHECK(f && fputs("keep\n", f) >= 0 && fclose(f) == 0, "cannot write %s", path);
	char *args[] = {"--ranks", "2", "--layers", "2", "--params-per-layer", "1000", "--compute-ms", "1",
	                "--iterations", "2", "--plan-json", path, NULL, NULL};
	struct ddl_run_result r;
	CHECK(ddl_synth_run(args, 30, &r) == 0, "ddlsynth did not finish");
	CHECK(ddl_exit_code(&r) != 0 && strstr(r.err, "--force") && r.nout == 0,
	      "status %#x, stdout %s, stderr %s", r.status, r.out, r.err);
	trun_free(&r);
	char buf[16] = "";
	f = fopen(path, "r");
	CHECK(f && fgets(buf, sizeof buf, f) && !strcmp(buf, "keep\n"), "the file was changed");
	fclose(f);
	args[12] = "--force";
	CHECK(ddl_synth_run(args, 30, &r) == 0 && ddl_exit_code(&r) == 0, "with --force: status %#x: %s",
	      r.status, r.err);
	trun_free(&r);
	json_t *plan = ddl_plan_load(path);
	CHECK(plan && ddl_num(json_object_get(plan, "config"), "ranks") == 2, "--force did not write the plan");
	json_decref(plan);
	trm(dir);
	return DDL_PASS;
}
