/*
 * PyTorch jobs under the Python hook, checked against what the jobs measure
 * themselves (tests/py/train.py prints its own step times, its waits in
 * next(loader), the gradient bytes DDP all-reduces, its losses and a hash
 * of its final parameters). Ranks are started by hand, as torchrun would
 * start them, without --run-id and without markers. Each test skips
 * without Debian's python3-torch; the two-host one without root.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define DDL_PY "/usr/bin/python3"
#define DDL_WARMUP 5

static int ddl_have_torch(void)
{
	char *probe[] = {DDL_PY, "-c", "import torch.distributed as d; assert d.is_available()", NULL};
	struct ddl_run_result r;
	int ok = access(DDL_PY, X_OK) == 0 && trun(probe, NULL, 60, &r) == 0 && r.status == 0;
	if (access(DDL_PY, X_OK) == 0)
		trun_free(&r);
	if (!ok)
		fprintf(stderr, "    needs Debian's python3-torch: skipped\n");
	return ok;
}

/* What one rank of train.py measured (its JSON line). */
struct ddl_job {
	double step, wait; /* means over the steps after the warm-up */
	long steps;
	double grad_bytes;
	json_t *j;
};

static int ddl_job_load(const char *prefix, int rank, struct ddl_job *o)
{
	char path[4200];
	snprintf(path, sizeof path, "%s.%d", prefix, rank);
	json_error_t e;
	o->j = json_load_file(path, 0, &e);
	if (!o->j)
		return -1;
	json_t *st = json_object_get(o->j, "step_s"), *wt = json_object_get(o->j, "wait_s");
	o->steps = (long)json_array_size(st);
	o->step = o->wait = 0;
	for (size_t i = DDL_WARMUP; i < json_array_size(st); i++) {
		o->step += json_real_value(json_array_get(st, i));
		o->wait += json_real_value(json_array_get(wt, i));
	}
	o->step /= (double)(o->steps - DDL_WARMUP);
	o->wait /= (double)(o->steps - DDL_WARMUP);
	o->grad_bytes = (double)json_integer_value(json_object_get(o->j, "grad_bytes"));
	return 0;
}

/*
 * Starts NRANKS ranks of tests/py/SCRIPT with ARGS on this host (or, with
 * NS, each in its network namespace through scripts/netns-hosts.sh), each
 * under ddlprof -q -o DIR FLAGS -- (DIR NULL: without ddlprof), without
 * --run-id; rank R's stdout, stderr and exit status go to OUT.R.stdout,
 * .stderr and .status. 0 when every rank exited 0; 1 when they ran and
 * some did not; -1 when they could not be run (ERR says why).
 */
static int ddl_ranks_run(const char *script, const char *args, const char *dir, const char *flags,
                         const char *out, int nranks, const char *ns, char **err)
{
	char cmd[16384], path[4096], prof[8192] = "";
	snprintf(path, sizeof path, "%s/../tests/py/%s", tbuild(""), script);
	if (dir)
		snprintf(prof, sizeof prof, "%s -q -o %s %s -- ", tbuild("bin/ddlprof"), dir, flags);
	int port = tfreeports(1);
	size_t n = (size_t)snprintf(cmd, sizeof cmd, "export MASTER_ADDR=%s MASTER_PORT=%d WORLD_SIZE=%d; ",
	                            ns ? "10.99.0.1" : "127.0.0.1", port, nranks);
	for (int r = 0; r < nranks; r++) {
		char host[512] = "GLOO_SOCKET_IFNAME=lo ";
		if (ns)
			snprintf(host, sizeof host, "GLOO_SOCKET_IFNAME=%s%d %s run %d ", ns, r,
			         tbuild("../scripts/netns-hosts.sh"), r);
		n += (size_t)snprintf(cmd + n, sizeof cmd - n,
		                      "RANK=%d %s%s%s %s %s > %s.%d.stdout 2> %s.%d.stderr & p%d=$!; ", r, host,
		                      prof, DDL_PY, path, args, out, r, out, r, r);
	}
	n += (size_t)snprintf(cmd + n, sizeof cmd - n, "s=0; ");
	for (int r = 0; r < nranks; r++)
		n += (size_t)snprintf(cmd + n, sizeof cmd - n, "wait $p%d; e=$?; echo $e > %s.%d.status; "
		                      "[ $e = 0 ] || s=1; ", r, out, r);
	snprintf(cmd + n, sizeof cmd - n, "exit $s");
	char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	char nsenv[64];
	snprintf(nsenv, sizeof nsenv, "DDL_NETNS_PREFIX=%s", ns ? ns : "ddltest");
	char *env[] = {nsenv, NULL};
	struct ddl_run_result r;
	int rc = trun(argv, env, 200, &r);
	int ok = rc == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0;
	if (!ok && err) {
		char buf[8192];
		snprintf(buf, sizeof buf, "%s", rc == 0 ? "a rank failed" : "could not run the ranks");
		FILE *f;
		snprintf(path, sizeof path, "%s.0.stderr", out);
		if ((f = fopen(path, "r"))) {
			size_t k = fread(buf, 1, sizeof buf - 1, f);
			buf[k] = 0;
			fclose(f);
		}
		*err = strdup(buf);
	}
	trun_free(&r);
	return rc < 0 ? -1 : ok ? 0 : 1;
}

/* train.py with ARGS under ddlprof FLAGS into DIR; the job's figures under PREFIX. */
static int ddl_torch_run(const char *dir, const char *flags, const char *args, const char *prefix,
                         int nranks, const char *ns, char **err)
{
	char a[8192];
	snprintf(a, sizeof a, "%s --out %s", args, prefix);
	return ddl_ranks_run("train.py", a, dir, flags, prefix, nranks, ns, err);
}

/* The contents of PREFIX.RANK.WHAT ("stdout", "stderr", "status"); NULL when unreadable. */
static char *ddl_rank_file(const char *prefix, int rank, const char *what)
{
	char path[4200];
	snprintf(path, sizeof path, "%s.%d.%s", prefix, rank, what);
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);
	char b[4096];
	size_t k;
	while (m && (k = fread(b, 1, sizeof b, f)) > 0)
		fwrite(b, 1, k, m);
	fclose(f);
	if (m)
		fclose(m);
	return buf;
}

static json_t *ddl_rank(json_t *rep, int rank)
{
	return trank_of(rep, rank);
}

static double ddl_num(json_t *o, const char *path)
{
	json_t *v = tjget(o, path);
	return v ? json_number_value(v) : NAN;
}

/* The checks every run of train.py gets: one run of NRANKS ranks on NHOSTS
 * hosts, no worker among them, its iterations, their mean, and the bytes
 * DDP all-reduced each step. */
static int ddl_torch_check_run(json_t *rep, const char *prefix, int nranks, int nhosts,
                               const char *what)
{
	json_t *job = json_object_get(rep, "job");
	CHECK(json_array_size(json_object_get(rep, "other_runs")) == 0, "%s: ranks split into runs", what);
	CHECK(json_integer_value(json_object_get(job, "ranks")) == nranks &&
	      json_integer_value(json_object_get(job, "hosts")) == nhosts,
	      "%s: %lld ranks on %lld hosts", what, json_integer_value(json_object_get(job, "ranks")),
	      json_integer_value(json_object_get(job, "hosts")));
	CHECK(json_array_size(json_object_get(rep, "ranks")) == (size_t)nranks, "%s: %zu rows of ranks",
	      what, json_array_size(json_object_get(rep, "ranks")));
	const char *m = json_string_value(json_object_get(job, "iteration_method"));
	CHECK(m && !strcmp(m, "steps"), "%s: iteration_method %s", what, m ? m : "null");
	for (int k = 0; k < nranks; k++) {
		struct ddl_job o;
		CHECK(ddl_job_load(prefix, k, &o) == 0, "%s: rank %d's own figures", what, k);
		json_t *r = ddl_rank(rep, k);
		CHECK(r, "%s: no rank %d", what, k);
		long it = (long)json_integer_value(json_object_get(r, "iterations"));
		double mean = ddl_num(r, "iteration_mean_s");
		double ar = ddl_num(r, "collectives_per_iteration.by_op.allreduce.bytes");
		fprintf(stderr, "    %s rank %d: %ld steps, %ld iterations; step %.2f ms by the job, %.2f ms "
		        "found; %.0f gradient bytes, %.0f all-reduced an iteration\n", what, k, o.steps, it,
		        o.step * 1e3, mean * 1e3, o.grad_bytes, ar);
		CHECK(labs(it - (o.steps - DDL_WARMUP)) <= 1, "%s: %ld iterations for %ld steps", what, it,
		      o.steps);
		CHECK(fabs(mean - o.step) <= 0.05 * o.step, "%s: iteration %.2f ms, the job's step %.2f ms",
		      what, mean * 1e3, o.step * 1e3);
		CHECK(fabs(ar - o.grad_bytes) < 1, "%s: %.1f bytes all-reduced an iteration, %.0f gradient "
		      "bytes", what, ar, o.grad_bytes);
		json_decref(o.j);
	}
	json_t *procs = json_object_get(rep, "processes");
	for (size_t i = 0; i < json_array_size(procs); i++) {
		json_t *p = json_array_get(procs, i);
		const char *role = json_string_value(json_object_get(p, "role"));
		long rank = (long)json_integer_value(json_object_get(p, "rank"));
		CHECK(role && (!strcmp(role, "rank")) == (rank >= 0), "%s: a %s with rank %ld", what,
		      role ? role : "?", rank);
	}
	return DDL_PASS;
}

/* Runs train.py with FLAGS and ARGS on two ranks of this host into a fresh
 * directory *DIR and checks the run (ddl_torch_check_run): its report in
 * *REP, the job's own figures under PREFIX. The caller frees both. */
static int ddl_torch_case(const char *what, const char *flags, const char *args, char **dir,
                          char *prefix, size_t n, json_t **rep)
{
	char t[4200], *err = NULL;
	*dir = tmpdir();
	*rep = NULL;
	snprintf(t, sizeof t, "%s/t", *dir);
	snprintf(prefix, n, "%s/job", *dir);
	CHECK(ddl_torch_run(t, flags, args, prefix, 2, NULL, &err) == 0, "%s: the job failed: %s", what,
	      err ? err : "");
	*rep = treport(t, NULL);
	CHECK(*rep, "%s: no report", what);
	return ddl_torch_check_run(*rep, prefix, 2, 1, what);
}

static void ddl_torch_done(char *dir, json_t *rep)
{
	json_decref(rep);
	trm(dir);
	free(dir);
}

int test_torch_ddp_models(void)
{
	if (tskip_sanitized())
		return DDL_SKIP;
	if (!ddl_have_torch())
		return DDL_SKIP;
	static const char *const runs[][2] = {
		{"mlp", "--model mlp --loader memory --workers 2"},
		{"cnn", "--model cnn --loader memory --workers 0"},
		{"lstm", "--model lstm --width 48 --loader none"},
	};
	for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
		char *dir, prefix[4200];
		json_t *rep;
		int rc = ddl_torch_case(runs[k][0], "", runs[k][1], &dir, prefix, sizeof prefix, &rep);
		if (rc == DDL_PASS && !strcmp(runs[k][0], "mlp")) {
			json_t *job = json_object_get(rep, "job");
			CHECK(json_integer_value(json_object_get(job, "dataloader_workers")) == 4,
			      "mlp: %lld loader workers", json_integer_value(json_object_get(job, "dataloader_workers")));
		}
		ddl_torch_done(dir, rep);
		if (rc != DDL_PASS)
			return rc;
	}
	return DDL_PASS;
}

int test_torch_dataloader_stall(void)
{
	if (tskip_sanitized())
		return DDL_SKIP;
	if (!ddl_have_torch())
		return DDL_SKIP;
	/* prep: each sample costs 2 ms of CPU in a worker; fetch: 2 ms at the
	 * storage server; two workers each, so the training loop waits */
	static const char *const runs[][2] = {
		{"prep", "--model mlp --loader prep --item-ms 2 --workers 2"},
		{"fetch", "--model mlp --loader fetch --item-ms 2 --workers 2"},
		{"prep in the training thread", "--model mlp --loader prep --item-ms 0.5 --workers 0"},
	};
	for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
		char *dir, prefix[4200];
		json_t *rep;
		int rc = ddl_torch_case(runs[k][0], "", runs[k][1], &dir, prefix, sizeof prefix, &rep);
		if (rc != DDL_PASS)
			return rc;
		const char *want = strncmp(runs[k][0], "fetch", 5) ? "prep" : "fetch";
		for (int rank = 0; rank < 2; rank++) {
			struct ddl_job o;
			CHECK(ddl_job_load(prefix, rank, &o) == 0, "rank %d's own figures", rank);
			json_t *r = ddl_rank(rep, rank);
			double ds = ddl_num(r, "breakdown_s.data_stall");
			double fetch = ddl_num(r, "input.fetch_s"), prep = ddl_num(r, "input.prep_s");
			const char *bound = json_string_value(json_object_get(json_object_get(r, "input"), "bound"));
			fprintf(stderr, "    %s rank %d: waits in next(): %.2f ms by the job, data stall %.2f ms "
			        "found (fetch %.2f, prep %.2f: %s-bound)\n", runs[k][0], rank, o.wait * 1e3,
			        ds * 1e3, fetch * 1e3, prep * 1e3, bound ? bound : "?");
			CHECK(fabs(ds - o.wait) <= fmax(0.15 * o.wait, 3e-3), "%s: data stall %.2f ms, the job "
			      "waited %.2f ms", runs[k][0], ds * 1e3, o.wait * 1e3);
			CHECK(bound && !strcmp(bound, want), "%s: %s-bound", runs[k][0], bound ? bound : "?");
			CHECK(fabs(fetch + prep - ds) < 1e-6, "fetch and prep add up to the data stall");
			CHECK(!strcmp(want, "fetch") ? fetch > 0.8 * ds : prep > 0.8 * ds,
			      "%s: fetch %.2f, prep %.2f ms", runs[k][0], fetch * 1e3, prep * 1e3);
			json_decref(o.j);
		}
		ddl_torch_done(dir, rep);
	}
	return DDL_PASS;
}

/*
 * Two ranks in two network namespaces, each link unlimited, then held to
 * 200 Mbit/s: the network stall the limit adds (the limited run's less the
 * unlimited one's, which the CPUs' own copying makes on two busy cores) is
 * within 25% of the differential (the limited run's step time less the
 * unlimited one's, as the job measures both), and the collective bytes are
 * still the gradients'.
 */
int test_torch_two_hosts(void)
{
	if (tskip_sanitized())
		return DDL_SKIP;
	if (!ddl_have_torch())
		return DDL_SKIP;
	if (geteuid() != 0) {
		fprintf(stderr, "    needs root for network namespaces: skipped\n");
		return DDL_SKIP;
	}
	const char *ns = "ddlpt";
	char script[4096], nsenv[64];
	snprintf(script, sizeof script, "%s", tbuild("../scripts/netns-hosts.sh"));
	snprintf(nsenv, sizeof nsenv, "DDL_NETNS_PREFIX=%s", ns);
	char *env[] = {nsenv, NULL}, *down[] = {script, "down", NULL};
	/* the MLP unlimited and limited (the differential), then a CNN limited */
	static const char *const rates[3] = {NULL, "200mbit", "200mbit"};
	static const char *const models[3] = {"mlp", "mlp", "cnn"};
	double step[2] = {0}, net[2] = {0};
	char *dir = tmpdir();
	for (int k = 0; k < 3; k++) {
		struct ddl_run_result d;
		trun(down, env, 30, &d);
		trun_free(&d);
		char *up[] = {script, "up", "2", (char *)rates[k], NULL};
		if (trun(up, env, 30, &d) != 0 || d.status != 0) {
			fprintf(stderr, "    cannot make network namespaces: skipped (%s)\n", d.err);
			trun_free(&d);
			trun(down, env, 30, &d);
			trun_free(&d);
			trm(dir);
			free(dir);
			return DDL_SKIP;
		}
		trun_free(&d);
		char t[4200], prefix[4200], what[64], *err = NULL;
		snprintf(t, sizeof t, "%s/t%d", dir, k);
		snprintf(prefix, sizeof prefix, "%s/job%d", dir, k);
		snprintf(what, sizeof what, "two hosts, %s, %s", models[k], rates[k] ? rates[k] : "unlimited");
		char args[128];
		snprintf(args, sizeof args, "--model %s --loader memory --workers 2", models[k]);
		int rc = ddl_torch_run(t, "", args, prefix, 2, ns, &err);
		trun(down, env, 30, &d);
		trun_free(&d);
		CHECK(rc == 0, "%s: the job failed: %s", what, err ? err : "");
		json_t *rep = treport(t, NULL);
		CHECK(rep, "%s: no report", what);
		rc = ddl_torch_check_run(rep, prefix, 2, 2, what);
		if (rc != DDL_PASS)
			return rc;
		for (int rank = 0; rank < 2; rank++) {
			struct ddl_job o;
			CHECK(ddl_job_load(prefix, rank, &o) == 0, "rank %d's own figures", rank);
			if (k < 2)
				step[k] += o.step / 2;
			json_t *r = ddl_rank(rep, rank);
			if (k < 2)
				net[k] += ddl_num(r, "breakdown_s.network_stall") / 2;
			CHECK(ddl_num(r, "collectives_per_iteration.inter_bytes") > 0, "%s: no bytes across "
			      "machines", what);
			json_decref(o.j);
		}
		json_decref(rep);
	}
	trm(dir);
	free(dir);
	double diff = step[1] - step[0], added = net[1] - net[0];
	fprintf(stderr, "    step %.2f ms unlimited, %.2f ms at 200 Mbit/s: differential %.2f ms; network "
	        "stall found %.2f and %.2f ms: %.2f ms added\n", step[0] * 1e3, step[1] * 1e3, diff * 1e3,
	        net[0] * 1e3, net[1] * 1e3, added * 1e3);
	CHECK(diff > 5e-3, "200 Mbit/s made no difference (%.2f ms)", diff * 1e3);
	CHECK(fabs(added - diff) <= 0.25 * diff, "network stall added %.2f ms, differential %.2f ms",
	      added * 1e3, diff * 1e3);
	return DDL_PASS;
}

/* torch.distributed's own calls: every one counted, with this rank's bytes,
 * from gloo's records (and the Python calls for the sends and receives). */
int test_torch_collectives(void)
{
	if (!ddl_have_torch())
		return DDL_SKIP;
	char *dir = tmpdir(), t[4200], out[4200], *err = NULL;
	snprintf(t, sizeof t, "%s/t", dir);
	snprintf(out, sizeof out, "%s/run", dir);
	CHECK(ddl_ranks_run("collectives.py", "", t, "", out, 2, NULL, &err) == 0, "the job failed: %s",
	      err ? err : "");
	char *line = ddl_rank_file(out, 0, "stdout");
	json_t *made = line ? json_loads(line, 0, NULL) : NULL;
	free(line);
	CHECK(made, "the job's own count");
	json_t *rep = treport(t, NULL);
	CHECK(rep, "no report");
	json_t *ops = json_object_get(made, "ops");
	long calls = (long)json_integer_value(json_object_get(made, "calls"));
	long p2p = (long)json_integer_value(json_object_get(made, "p2p_calls"));
	for (int rank = 0; rank < 2; rank++) {
		json_t *c = json_object_get(ddl_rank(rep, rank), "collectives");
		json_t *by = json_object_get(c, "by_op");
		const char *op;
		json_t *v;
		json_object_foreach(ops, op, v) {
			json_t *got = json_object_get(by, op);
			fprintf(stderr, "    rank %d %s: %lld calls of %lld bytes made, %lld of %lld found\n", rank,
			        op, json_integer_value(json_object_get(v, "count")),
			        json_integer_value(json_object_get(v, "bytes")),
			        json_integer_value(json_object_get(got, "count")),
			        json_integer_value(json_object_get(got, "bytes")));
			CHECK(json_equal(json_object_get(v, "count"), json_object_get(got, "count")) &&
			      json_equal(json_object_get(v, "bytes"), json_object_get(got, "bytes")),
			      "rank %d: %s", rank, op);
		}
		CHECK(json_integer_value(json_object_get(json_object_get(by, "send"), "count")) == 1 &&
		      json_integer_value(json_object_get(json_object_get(by, "recv"), "count")) == 1 &&
		      json_integer_value(json_object_get(json_object_get(by, "send"), "bytes")) == 1024,
		      "rank %d: sends and receives", rank);
		CHECK(json_integer_value(json_object_get(c, "torch_calls")) == calls + p2p,
		      "rank %d: %lld torch.distributed calls, %ld made", rank,
		      json_integer_value(json_object_get(c, "torch_calls")), calls + p2p);
		CHECK(json_integer_value(json_object_get(c, "count")) == calls + p2p, "rank %d: %lld "
		      "collectives", rank, json_integer_value(json_object_get(c, "count")));
		const char *src = json_string_value(json_object_get(c, "source"));
		CHECK(src && !strcmp(src, "gloo"), "rank %d: source %s", rank, src ? src : "null");
	}
	/* the default group and the one new_group made, each seen by both ranks,
	 * as torch's groups and as gloo's contexts */
	json_t *comms = json_object_get(json_object_get(rep, "job"), "communicators");
	int torch = 0, gloo = 0;
	for (size_t i = 0; i < json_array_size(comms); i++) {
		json_t *c = json_array_get(comms, i);
		const char *how = json_string_value(json_object_get(c, "created_by"));
		CHECK(json_integer_value(json_object_get(c, "members_traced")) == 2 &&
		      json_integer_value(json_object_get(c, "nranks")) == 2 &&
		      !strcmp(json_string_value(json_object_get(c, "span")), "intra"),
		      "communicator %zu: members, size or span", i);
		torch += how && !strcmp(how, "torch");
		gloo += how && !strcmp(how, "gloo");
	}
	CHECK(torch == 2 && gloo == 2, "%d torch groups, %d gloo contexts", torch, gloo);
	json_decref(made);
	json_decref(rep);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* Runs tests/py/SCRIPT ARGS as one process, with ENV, plainly and under
 * ddlprof (FLAGS) into DIR: 0 when both ran and gave the same stdout, stderr
 * and exit status; WHAT names the case. */
static int ddl_same(const char *what, const char *script, char *const args[], char *const env[],
                    const char *dir, const char *flags, const char *input)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/../tests/py/%s", tbuild(""), script);
	char *argv[2][24];
	int n = 0;
	argv[1][n++] = (char *)tbuild("bin/ddlprof");
	argv[1][n++] = "-q";
	argv[1][n++] = "-o";
	argv[1][n++] = (char *)dir;
	if (flags && *flags)
		argv[1][n++] = (char *)flags;
	argv[1][n++] = "--";
	int off = n;
	for (int k = 0; k < 2; k++) {
		int m = k ? off : 0;
		argv[k][m++] = DDL_PY;
		for (int i = 0; args && args[i] && m < 20; i++)
			argv[k][m++] = args[i];
		if (script)
			argv[k][m++] = path;
		argv[k][m] = NULL;
	}
	/* stdin: INPUT, or nothing */
	char sh[8192];
	struct ddl_run_result r[2];
	for (int k = 0; k < 2; k++) {
		size_t len = (size_t)snprintf(sh, sizeof sh, "exec");
		for (int i = 0; argv[k][i]; i++)
			len += (size_t)snprintf(sh + len, sizeof sh - len, " '%s'", argv[k][i]);
		snprintf(sh + len, sizeof sh - len, " < %s", input ? input : "/dev/null");
		char *cmd[] = {"/bin/sh", "-c", sh, NULL};
		CHECK(trun(cmd, env, 120, &r[k]) == 0, "%s: could not run", what);
	}
	fprintf(stderr, "    %s: exit %d and %d, %zu and %zu bytes out, %zu and %zu bytes of errors\n",
	        what, WEXITSTATUS(r[0].status), WEXITSTATUS(r[1].status), r[0].nout, r[1].nout,
	        r[0].nerr, r[1].nerr);
	CHECK(r[0].status == r[1].status, "%s: status %d without ddlprof, %d with", what, r[0].status,
	      r[1].status);
	CHECK(r[0].nout == r[1].nout && !memcmp(r[0].out, r[1].out, r[0].nout),
	      "%s: stdout differs:\n%s\n-- with ddlprof --\n%s", what, r[0].out, r[1].out);
	CHECK(r[0].nerr == r[1].nerr && !memcmp(r[0].err, r[1].err, r[0].nerr),
	      "%s: stderr differs:\n%s\n-- with ddlprof --\n%s", what, r[0].err, r[1].err);
	trun_free(&r[0]);
	trun_free(&r[1]);
	return DDL_PASS;
}

/* The strings of train.py's line that do not depend on time: losses, parameters. */
static int ddl_same_results(const char *a, const char *b, const char *what)
{
	json_t *x = a ? json_loads(a, 0, NULL) : NULL, *y = b ? json_loads(b, 0, NULL) : NULL;
	CHECK(x && y, "%s: the job's lines", what);
	CHECK(json_equal(json_object_get(x, "losses"), json_object_get(y, "losses")),
	      "%s: losses differ", what);
	CHECK(json_equal(json_object_get(x, "params"), json_object_get(y, "params")),
	      "%s: final parameters differ", what);
	fprintf(stderr, "    %s: %zu losses and the parameters' hash %.16s... the same\n", what,
	        json_array_size(json_object_get(x, "losses")),
	        json_string_value(json_object_get(x, "params")));
	json_decref(x);
	json_decref(y);
	return DDL_PASS;
}

/*
 * The hook changes nothing the program does: a DDP job's losses and final
 * parameters bit for bit, a loader worker's exception (its traceback too)
 * and the exit status it causes, gloo's exception when a peer leaves, and
 * a program that never imports torch, which sees the same modules and
 * path; a torch of the program's own whose first import fails (the hook
 * waits for the next, and a torch it cannot patch runs as it is); the
 * user's own sitecustomize (working or raising) and
 * PYTHONSTARTUP run as they would.
 */
int test_torch_transparency(void)
{
	if (!ddl_have_torch())
		return DDL_SKIP;
	char *dir = tmpdir(), t[4200], *err = NULL;
	snprintf(t, sizeof t, "%s/t", dir);
	/* DDP, two ranks, a loader with workers: with and without ddlprof */
	for (int k = 0; k < 2; k++) {
		char out[4200];
		snprintf(out, sizeof out, "%s/ddp%d", dir, k);
		CHECK(ddl_ranks_run("train.py", "--model cnn --loader prep --item-ms 0.2 --workers 2 --steps 12",
		                    k ? t : NULL, "", out, 2, NULL, &err) == 0, "train.py: %s", err ? err : "");
	}
	for (int rank = 0; rank < 2; rank++) {
		char a[4200], b[4200], what[64];
		snprintf(a, sizeof a, "%s/ddp0", dir);
		snprintf(b, sizeof b, "%s/ddp1", dir);
		char *x = ddl_rank_file(a, rank, "stdout"), *y = ddl_rank_file(b, rank, "stdout");
		snprintf(what, sizeof what, "DDP rank %d", rank);
		int rc = ddl_same_results(x, y, what);
		free(x);
		free(y);
		if (rc != DDL_PASS)
			return rc;
	}
	/* a peer leaves: gloo's exception reaches the program the same way */
	for (int k = 0; k < 2; k++) {
		char out[4200];
		snprintf(out, sizeof out, "%s/peer%d", dir, k);
		CHECK(ddl_ranks_run("peerfail.py", "", k ? t : NULL, "", out, 2, NULL, NULL) == 1,
		      "peerfail.py: rank 0 should fail");
	}
	for (int rank = 0; rank < 2; rank++)
		for (int f = 0; f < 2; f++) {
			static const char *const what[] = {"stdout", "status"};
			char a[4200], b[4200];
			snprintf(a, sizeof a, "%s/peer0", dir);
			snprintf(b, sizeof b, "%s/peer1", dir);
			char *x = ddl_rank_file(a, rank, what[f]), *y = ddl_rank_file(b, rank, what[f]);
			CHECK(x && y && !strcmp(x, y), "a peer gone: rank %d's %s: '%s' without ddlprof, '%s' "
			      "with", rank, what[f], x ? x : "?", y ? y : "?");
			if (!rank && !f)
				fprintf(stderr, "    a peer gone: rank 0 said '%.*s' both times\n",
				        (int)strcspn(x, "\n"), x);
			free(x);
			free(y);
		}
	/* one process: exceptions, a plain program, the user's start-up files */
	char script[4200];
	snprintf(script, sizeof script, "%s/../tests/py/boom.py", tbuild(""));
	/* one worker: with two, which of the loader's code paths re-raises depends
	 * on which worker's batch comes first, with or without ddlprof */
	char *boom0[] = {script, "0", NULL}, *boom2[] = {script, "1", NULL};
	int rc = ddl_same("a sample fails in the training thread", NULL, boom0, NULL, t, "", NULL);
	if (rc == DDL_PASS)
		rc = ddl_same("a sample fails in a loader worker", NULL, boom2, NULL, t, "", NULL);
	if (rc == DDL_PASS)
		rc = ddl_same("a program without torch", "plain.py", NULL, NULL, t, "", NULL);
	if (rc == DDL_PASS)
		rc = ddl_same("a torch of its own, imported twice", "retry.py", NULL, NULL, t, "", NULL);
	if (rc == DDL_PASS) { /* armed by the import that worked, and said what did not fit */
		json_t *rep = treport(t, NULL);
		const char *sk = json_string_value(
		    json_object_get(json_object_get(rep, "job"), "python_hook_skipped"));
		fprintf(stderr, "    its torch: skipped '%s'\n", sk ? sk : "(none)");
		CHECK(sk && strstr(sk, "steps: AttributeError"), "the hook did not arm on the second import");
		json_decref(rep);
	}
	char site[4200], env_path[4300], startup[4200], env_startup[4300];
	snprintf(site, sizeof site, "%s/site", dir);
	mkdir(site, 0700);
	snprintf(startup, sizeof startup, "%s/startup.py", dir);
	FILE *f = fopen(startup, "w");
	CHECK(f, "startup file");
	fprintf(f, "print('the user startup file ran')\n");
	fclose(f);
	snprintf(env_path, sizeof env_path, "PYTHONPATH=%s", site);
	snprintf(env_startup, sizeof env_startup, "PYTHONSTARTUP=%s", startup);
	char *env[] = {env_path, env_startup, NULL};
	static const char *const sites[] = {"print('the user sitecustomize ran')\n",
	                                    "raise RuntimeError('the user sitecustomize failed')\n"};
	for (int k = 0; k < 2 && rc == DDL_PASS; k++) {
		char path[4300];
		snprintf(path, sizeof path, "%s/sitecustomize.py", site);
		f = fopen(path, "w");
		CHECK(f, "sitecustomize");
		fputs(sites[k], f);
		fclose(f);
		rc = ddl_same(k ? "the user's sitecustomize raises" : "the user's sitecustomize", "plain.py",
		              NULL, env, t, "", NULL);
		if (rc == DDL_PASS && !k) {
			char *i[] = {"-i", NULL};
			rc = ddl_same("PYTHONSTARTUP (python -i)", NULL, i, env, t, "", NULL);
		}
	}
	trm(dir);
	free(dir);
	return rc;
}

/* Whether the trace in DIR holds the Python hook's steps (the report's
 * method is steps) and the hook said it was armed; -1 without a report. */
static int ddl_hooked(const char *dir)
{
	json_t *rep = treport(dir, NULL);
	if (!rep)
		return -1;
	json_t *job = json_object_get(rep, "job");
	const char *m = json_string_value(json_object_get(job, "iteration_method"));
	int on = (m && !strcmp(m, "steps")) || json_is_string(json_object_get(job, "python_hook"));
	json_decref(rep);
	return on;
}

/* The hook is on by default, and off under python -I, -S, DDLPROF_PYTHON=0,
 * --python off and a --trace list without python; the program is profiled
 * all the same. */
int test_torch_hook_off(void)
{
	if (tskip_sanitized())
		return DDL_SKIP;
	if (!ddl_have_torch())
		return DDL_SKIP;
	char script[4200], sitedir[4200] = "PYTHONPATH=";
	snprintf(script, sizeof script, "%s/../tests/py/tiny.py", tbuild(""));
	/* python -S has no site directories: torch's is named on PYTHONPATH */
	char *where[] = {DDL_PY, "-c", "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))",
	                 NULL};
	struct ddl_run_result w;
	CHECK(trun(where, NULL, 60, &w) == 0 && w.status == 0, "where torch is");
	snprintf(sitedir + 11, sizeof sitedir - 11, "%.*s", (int)strcspn(w.out, "\n"), w.out);
	trun_free(&w);
	const struct {
		const char *what, *flag, *env, *pyflag;
		int on;
	} cases[] = {
		{"by default", NULL, NULL, NULL, 1},
		{"python -I", NULL, NULL, "-I", 0},
		{"python -S", NULL, sitedir, "-S", 0},
		{"DDLPROF_PYTHON=0", NULL, "DDLPROF_PYTHON=0", NULL, 0},
		{"--python off", "--python=off", NULL, NULL, 0},
		{"--trace socket,file", "--trace=socket,file", NULL, NULL, 0},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		char *dir = tmpdir(), t[4200];
		snprintf(t, sizeof t, "%s/t", dir);
		char *argv[12];
		int n = 0;
		argv[n++] = (char *)tbuild("bin/ddlprof");
		argv[n++] = "-q";
		argv[n++] = "-o";
		argv[n++] = t;
		if (cases[k].flag)
			argv[n++] = (char *)cases[k].flag;
		argv[n++] = "--";
		argv[n++] = DDL_PY;
		if (cases[k].pyflag)
			argv[n++] = (char *)cases[k].pyflag;
		argv[n++] = script;
		argv[n] = NULL;
		char *env[] = {(char *)cases[k].env, NULL};
		struct ddl_run_result r;
		CHECK(trun(argv, cases[k].env ? env : NULL, 120, &r) == 0 && WIFEXITED(r.status) &&
		      WEXITSTATUS(r.status) == 0, "%s: the program failed: %s", cases[k].what, r.err);
		trun_free(&r);
		int on = ddl_hooked(t);
		fprintf(stderr, "    %s: the hook is %s\n", cases[k].what, on > 0 ? "on" : on == 0 ? "off" : "?");
		CHECK(on == cases[k].on, "%s: the hook is %s", cases[k].what, on ? "on" : "off");
		trm(dir);
		free(dir);
	}
	return DDL_PASS;
}

/*
 * ddlprof --data synthetic: the loader's first batch served again, so no
 * worker fetches; ddlprof-report --compare real=DIR synthetic=DIR gives the
 * differential data stall beside the direct one. The job's own waits in
 * next() drop to nothing, and so does the data stall the report finds;
 * the direct figure the comparison shows is the real run's. One worker
 * fetching 16 samples of 4 ms a batch (64 ms) against a step of a few:
 * the wait is most of the step on any machine (2 workers and 2 ms gave
 * 2.5 ms of a step's overlap on one, below the test's floor).
 */
int test_torch_synthetic_data(void)
{
	if (tskip_sanitized())
		return DDL_SKIP;
	if (!ddl_have_torch())
		return DDL_SKIP;
	char *dir = tmpdir(), t[2][4200], prefix[2][4200], *err = NULL;
	static const char *const flags[2] = {"", "--data=synthetic"};
	double wait[2] = {0}, stall[2] = {0};
	for (int k = 0; k < 2; k++) {
		snprintf(t[k], sizeof t[k], "%s/t%d", dir, k);
		snprintf(prefix[k], sizeof prefix[k], "%s/job%d", dir, k);
		CHECK(ddl_torch_run(t[k], flags[k], "--model mlp --loader fetch --item-ms 4 --batch 16 --workers 1",
		                    prefix[k], 2, NULL, &err) == 0, "the job failed: %s", err ? err : "");
		json_t *rep = treport(t[k], NULL);
		CHECK(rep, "no report");
		const char *data = json_string_value(json_object_get(json_object_get(rep, "job"), "data"));
		CHECK(data && !strcmp(data, k ? "synthetic" : "real"), "job.data %s", data ? data : "null");
		for (int rank = 0; rank < 2; rank++) {
			struct ddl_job o;
			CHECK(ddl_job_load(prefix[k], rank, &o) == 0, "rank %d's own figures", rank);
			wait[k] += o.wait / 2;
			stall[k] += ddl_num(ddl_rank(rep, rank), "breakdown_s.data_stall") / 2;
			json_decref(o.j);
		}
		json_decref(rep);
	}
	fprintf(stderr, "    waits in next(): %.2f ms real, %.2f ms synthetic (by the job); data stall "
	        "found %.2f and %.2f ms\n", wait[0] * 1e3, wait[1] * 1e3, stall[0] * 1e3, stall[1] * 1e3);
	CHECK(wait[0] > 3e-3 && wait[1] < 0.1 * wait[0], "synthetic data did not take the wait away");
	CHECK(stall[1] < 0.1 * stall[0] && fabs(stall[1] - wait[1]) < 1e-3, "synthetic run's data stall");
	char real[4300], synth[4300];
	snprintf(real, sizeof real, "real=%s", t[0]);
	snprintf(synth, sizeof synth, "synthetic=%s", t[1]);
	char *argv[] = {(char *)tbuild("bin/ddlprof-report"), "--json", "--compare", real, synth, NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 60, &r) == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "--compare: %s", r.err);
	json_t *cmp = json_loads(r.out, 0, NULL);
	trun_free(&r);
	json_t *ds = json_object_get(json_object_get(cmp, "differential"), "data_stall");
	double diff = ddl_num(ds, "differential_s"), direct = ddl_num(ds, "direct_s");
	double change = ddl_num(ds, "change_s.data_stall");
	fprintf(stderr, "    --compare: differential %.2f ms, direct %.2f ms, data part of the change "
	        "%.2f ms\n", diff * 1e3, direct * 1e3, change * 1e3);
	CHECK(ds && fabs(direct - stall[0]) < 1e-4, "direct %.3f ms, the real run's %.3f ms", direct * 1e3,
	      stall[0] * 1e3);
	CHECK(diff > 0 && fabs(change - (stall[0] - stall[1])) < 1e-4, "differential %.3f ms", diff * 1e3);
	json_decref(cmp);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* Several optimizers, several steps an iteration, steps inside steps: one
 * iteration for each of the loop's own. */
int test_torch_optimizers(void)
{
	if (tskip_sanitized())
		return DDL_SKIP;
	if (!ddl_have_torch())
		return DDL_SKIP;
	static const char *const modes[] = {"gan", "gan2", "renew", "scaler", "subclass", "probe"};
	char script[4200];
	snprintf(script, sizeof script, "%s/../tests/py/optimizers.py", tbuild(""));
	for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
		char *dir = tmpdir(), t[4200];
		snprintf(t, sizeof t, "%s/t", dir);
		char *argv[] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", t, "--", DDL_PY, script,
		                (char *)modes[k], "30", NULL};
		struct ddl_run_result r;
		CHECK(trun(argv, NULL, 120, &r) == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
		      "%s: the program failed: %s", modes[k], r.err);
		trun_free(&r);
		json_t *rep = treport(t, NULL);
		CHECK(rep, "%s: no report", modes[k]);
		json_t *job = json_object_get(rep, "job");
		const char *m = json_string_value(json_object_get(job, "iteration_method"));
		long it = (long)json_integer_value(json_object_get(job, "iterations"));
		fprintf(stderr, "    %s: 30 iterations run, %ld after warm-up found (%s)\n", modes[k], it,
		        m ? m : "?");
		CHECK(m && !strcmp(m, "steps") && it == 30 - DDL_WARMUP, "%s: %ld iterations (%s)", modes[k],
		      it, m ? m : "?");
		json_decref(rep);
		trm(dir);
		free(dir);
	}
	return DDL_PASS;
}

/* One rank's loader is four times as slow: it is the straggler, every
 * iteration, and its own data stall says why. */
int test_torch_straggler(void)
{
	if (!ddl_have_torch())
		return DDL_SKIP;
	char *dir, prefix[4200];
	json_t *rep;
	int rc = ddl_torch_case("slow rank 1", "",
	                        "--model mlp --loader fetch --item-ms 1 --workers 1 --slow-rank 1", &dir,
	                        prefix, sizeof prefix, &rep);
	if (rc == DDL_PASS) {
		json_t *st = json_object_get(json_object_get(rep, "job"), "stragglers");
		double w1 = ddl_num(ddl_rank(rep, 1), "imposed_wait_s");
		double d1 = ddl_num(ddl_rank(rep, 1), "breakdown_s.data_stall");
		double d0 = ddl_num(ddl_rank(rep, 0), "breakdown_s.data_stall");
		char *sts = json_dumps(st, JSON_COMPACT);
		fprintf(stderr, "    stragglers %s; rank 1 makes the other wait %.2f ms an iteration, its data "
		        "stall %.2f ms (rank 0's %.2f)\n", sts ? sts : "?", w1 * 1e3, d1 * 1e3, d0 * 1e3);
		free(sts);
		CHECK(json_array_size(st) == 1 && json_integer_value(json_array_get(st, 0)) == 1,
		      "the straggler is rank 1");
		CHECK(d1 > 2 * d0 && w1 > 0.5 * d1, "rank 1's data stall and wait");
	}
	ddl_torch_done(dir, rep);
	return rc;
}

/*
 * The hook's entry points from C (tests/progs/pysteps, no torch): a loop
 * of 12 steps with phases of known length, and a forked loader worker that
 * reads a file for each batch. The report's iterations, phases, data stall
 * and roles are what the loop did and measured.
 */
int test_pyhook_entry_points(void)
{
	char *dir = tmpdir(), t[4200];
	snprintf(t, sizeof t, "%s/t", dir);
	char *argv[] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", t, "--",
	                (char *)tbuild("tests/progs/pysteps"), (char *)tbuild("lib/libddlprof.so"), NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 60, &r) == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "pysteps failed: %s", r.err);
	double step = 0, wait = 0;
	CHECK(sscanf(r.out, "pysteps: 12 steps, %lf ms a step, %lf ms waiting", &step, &wait) == 2,
	      "pysteps: %s", r.out);
	trun_free(&r);
	json_t *rep = treport(t, NULL);
	CHECK(rep, "no report");
	json_t *job = json_object_get(rep, "job");
	const char *m = json_string_value(json_object_get(job, "iteration_method"));
	CHECK(m && !strcmp(m, "steps") && json_integer_value(json_object_get(job, "iterations")) == 7,
	      "%s, %lld iterations", m ? m : "?", json_integer_value(json_object_get(job, "iterations")));
	json_t *ranks = json_object_get(rep, "ranks");
	CHECK(json_array_size(ranks) == 1, "%zu rows of ranks", json_array_size(ranks));
	json_t *me = json_array_get(ranks, 0);
	double mean = ddl_num(me, "iteration_mean_s") * 1e3, ds = ddl_num(me, "breakdown_s.data_stall") * 1e3;
	double fwd = ddl_num(me, "phases.forward_s") * 1e3, bwd = ddl_num(me, "phases.backward_s") * 1e3;
	double opt = ddl_num(me, "phases.optimizer_s") * 1e3;
	fprintf(stderr, "    step %.3f ms by the loop, %.3f found; wait %.3f ms, data stall %.3f; forward "
	        "%.3f (3), backward %.3f (4), optimizer %.3f (1)\n", step, mean, wait, ds, fwd, bwd, opt);
	CHECK(fabs(mean - step) < 0.05 * step, "iteration %.3f ms, the loop's %.3f", mean, step);
	CHECK(fabs(ds - wait) < fmax(0.15 * wait, 1), "data stall %.3f ms, the loop waited %.3f", ds, wait);
	/* sleeps of 3, 4 and 1 ms: never shorter, later by a wake-up on a busy machine */
	CHECK(fwd > 2.8 && fwd < 4.5 && bwd > 3.8 && bwd < 5.5 && opt > 0.8 && opt < 2.3, "phases");
	json_t *in = json_object_get(me, "input");
	CHECK(json_integer_value(json_object_get(in, "workers")) == 1 &&
	      json_integer_value(json_object_get(in, "batches")) == 7 &&
	      ddl_num(in, "batch_fetch_s") > 0 && ddl_num(in, "batch_fetch_s") < ddl_num(in, "batch_s") &&
	      !strcmp(json_string_value(json_object_get(in, "bound")) ?: "", "prep"),
	      "the loader's batches");
	json_t *procs = json_object_get(rep, "processes");
	int workers = 0;
	for (size_t i = 0; i < json_array_size(procs); i++) {
		json_t *p = json_array_get(procs, i);
		if (!strcmp(json_string_value(json_object_get(p, "role")) ?: "", "dataloader_worker")) {
			workers++;
			CHECK(json_integer_value(json_object_get(p, "serves_pid")) ==
			      json_integer_value(json_object_get(me, "pid")), "the worker's process");
		}
	}
	CHECK(workers == 1, "%d workers", workers);
	json_decref(rep);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* A loader's reads of its data files are recorded, each with its bytes;
 * reads of /proc, /sys and /dev (a worker looking at its own status) are
 * not data and are not. */
int test_torch_file_reads(void)
{
	if (access(DDL_PY, X_OK) != 0)
		return DDL_SKIP;
	char *dir = tmpdir(), t[4200], data[4200], prog[9000];
	snprintf(t, sizeof t, "%s/t", dir);
	snprintf(data, sizeof data, "%s/data.bin", dir);
	FILE *f = fopen(data, "w");
	CHECK(f, "cannot write %s", data);
	for (int i = 0; i < 4100; i++)
		fputc('x', f);
	fclose(f);
	/* 300 opens of /proc/self/stat, two reads each; the data file in
	 * reads of 1000 bytes: 4 of 1000, 1 of 100, 1 of 0 */
	snprintf(prog, sizeof prog,
	         "import os\n"
	         "for _ in range(300):\n"
	         "    fd = os.open('/proc/self/stat', os.O_RDONLY)\n"
	         "    while os.read(fd, 1000): pass\n"
	         "    os.close(fd)\n"
	         "fd = os.open('%s', os.O_RDONLY)\n"
	         "while os.read(fd, 1000): pass\n"
	         "os.close(fd)\n",
	         data);
	char *argv[] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", t, "--", DDL_PY, "-c", prog, NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 60, &r) == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "the program failed: %s", r.err);
	trun_free(&r);
	char *dump[] = {(char *)tbuild("bin/ddlprof-report"), "--dump", t, NULL};
	CHECK(trun(dump, NULL, 60, &r) == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "--dump failed: %s", r.err);
	int reads = 0, of1000 = 0, of100 = 0;
	for (char *line = r.out, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		char what[32];
		long fd, bytes;
		/* host pid tid time kind fd bytes ms ... */
		if (sscanf(line, "%*s %*s %*s %*s %31s %ld %ld", what, &fd, &bytes) != 3 ||
		    strcmp(what, "file_read"))
			continue;
		reads++;
		of1000 += bytes == 1000;
		of100 += bytes == 100;
	}
	trun_free(&r);
	fprintf(stderr, "    %d file reads recorded (600 of /proc made), %d of 1000 bytes, %d of 100\n",
	        reads, of1000, of100);
	CHECK(of1000 == 4 && of100 == 1, "the data file's reads: %d of 1000 bytes, %d of 100", of1000,
	      of100);
	CHECK(reads < 300, "%d file reads: /proc's were recorded", reads);
	trm(dir);
	free(dir);
	return DDL_PASS;
}
