/*
 * Hangs: jobs with a rank that stops for good before a collective
 * (ddlsynth --hang-rank), killed with SIGKILL as a scheduler's timeout
 * would; the report names the missing rank, the collective (operation,
 * bytes, number in its communicator's sequence, communicator) and what
 * every rank was doing (its blocking call, with --backtrace its stack,
 * the Python hook's phase); the watchdog says it on stderr while the job runs;
 * jobs that do not hang report none.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

static long long ddl_hint(json_t *o, const char *path)
{
	json_t *v = tjget(o, path);
	return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

/* The entry of job.hang.ranks for RANK. */
static json_t *ddl_hang_rank(json_t *hang, int rank)
{
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(hang, "ranks"), i, r)
		if (ddl_hint(r, "rank") == rank)
			return r;
	return NULL;
}

/*
 * Runs ddlsynth ARGS under ddlprof (EXTRA before --: launcher options)
 * into DIR/t and kills the whole job with SIGKILL after KILL_S seconds;
 * its stderr into *ERR (the caller frees).
 */
static int ddl_hang_run(const char *dir, const char *const *extra, const char *const *args, int kill_s,
                        char **err)
{
	const char *synth = tbuild("examples/ddlsynth");
	if (access(synth, X_OK) != 0)
		return DDL_SKIP;
	char t[4096];
	snprintf(t, sizeof t, "%s/t", dir);
	char *argv[64];
	int n = 0;
	argv[n++] = (char *)tbuild("bin/ddlprof");
	argv[n++] = "-q";
	argv[n++] = "-o";
	argv[n++] = t;
	for (int i = 0; extra && extra[i]; i++)
		argv[n++] = (char *)extra[i];
	argv[n++] = "--";
	argv[n++] = (char *)synth;
	for (int i = 0; args[i] && n < 60; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	struct ddl_run_result r;
	int rc = trun(argv, NULL, kill_s, &r); /* -1: killed at the limit, as wanted */
	*err = r.err;
	r.err = NULL;
	int st = r.status;
	trun_free(&r);
	CHECK(rc == -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the job ended by itself (status %#x): %s",
	      st, *err);
	return DDL_PASS;
}

/* Four ranks on two emulated hosts, rank 2 stops before its 8th collective
 * (flat: one all-reduce a step). */
static const char *const ddl_flat_hang[] = {
	"--ranks", "4", "--ranks-per-host", "2", "--layers", "3", "--params-per-layer", "100k",
	"--compute-ms", "2", "--iterations", "200", "--hang-rank", "2", "--hang-at", "8", "--timeout", "60",
	"--markers", NULL};

int test_hang_synth_flat(void)
{
	char *dir = tmpdir(), t[4096], *err = NULL;
	snprintf(t, sizeof t, "%s/t", dir);
	int rc = ddl_hang_run(dir, NULL, ddl_flat_hang, 4, &err);
	if (rc != DDL_PASS) {
		free(err);
		trm(dir);
		free(dir);
		return rc;
	}
	CHECK(strstr(err, "rank 2: stopping before its collective 8"), "ddlsynth: %s", err);
	free(err);
	int st;
	json_t *rep = treport(t, &st);
	json_t *hang = tjget(rep, "job.hang");
	CHECK(json_is_object(hang), "no job.hang");
	/* the collective: every rank's 8th all-reduce of 3 x 100k floats */
	const char *op = json_string_value(tjget(hang, "collective.op"));
	CHECK(op && !strcmp(op, "allreduce"), "op %s", op ? op : "?");
	CHECK(ddl_hint(hang, "collective.seq") == 8, "seq %lld", ddl_hint(hang, "collective.seq"));
	CHECK(ddl_hint(hang, "collective.bytes") == 3 * 100000 * 4, "bytes %lld",
	      ddl_hint(hang, "collective.bytes"));
	double waited = json_number_value(tjget(hang, "collective.waiting_s"));
	CHECK(waited > 2 && waited < 4.5, "waited %.2f s", waited);
	json_t *miss = json_object_get(hang, "missing_ranks");
	CHECK(json_array_size(miss) == 1 && json_integer_value(json_array_get(miss, 0)) == 2, "missing ranks");
	CHECK(ddl_hint(hang, "blame.rank") == 2, "blame %lld", ddl_hint(hang, "blame.rank"));
	/* what each was doing: the others wait on the device after issuing it;
	 * rank 2 is in no call of ours (pause) */
	for (int k = 0; k < 4; k++) {
		json_t *hr = ddl_hang_rank(hang, k);
		CHECK(hr, "rank %d not in job.hang.ranks", k);
		const char *call = json_string_value(json_object_get(hr, "call"));
		fprintf(stderr, "    rank %d: %s\n", k, call ? call : "(no call)");
		if (k == 2) {
			CHECK(!call, "rank 2 is in %s", call);
		} else {
			CHECK(call && !strcmp(call, "cudaStreamSynchronize"), "rank %d is in %s", k, call ? call : "?");
			CHECK(ddl_hint(hr, "last_collective.seq") == 8, "rank %d: last collective %lld", k,
			      ddl_hint(hr, "last_collective.seq"));
		}
	}
	json_decref(rep);
	/* the text says the same, and --fail-if hang trips */
	char *const a[] = {(char *)tbuild("bin/ddlprof-report"), "--fail-if", "hang", t, NULL};
	struct ddl_run_result r;
	CHECK(trun(a, NULL, 60, &r) == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 3,
	      "--fail-if hang: status %#x", r.status);
	CHECK(strstr(r.out, "\nHang: the job is stuck in allreduce (collective 8 of communicator ") &&
	      strstr(r.out, "missing: rank 2\n") && strstr(r.out, "most likely to blame: rank 2,"),
	      "text report:\n%s", r.out);
	trun_free(&r);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * Hierarchical all-reduce, rank 3 (host 1) stops: its host's reduce-scatter
 * waits on it, and so does the all-reduce across hosts of its rail; both
 * stuck points are reported and rank 3 is the one to blame. Recorded with
 * --backtrace: every waiting rank's call has the stack it was made from,
 * ddlsynth's functions named, in the JSON and the text.
 */
int test_hang_synth_hierarchical(void)
{
	static const char *const args[] = {
		"--ranks", "4", "--ranks-per-host", "2", "--layers", "3", "--params-per-layer", "100k",
		"--compute-ms", "2", "--iterations", "200", "--allreduce", "hierarchical", "--hang-rank", "3",
		"--hang-at", "10", "--timeout", "60", NULL};
	static const char *const bt[] = {"--backtrace", "8", NULL};
	char *dir = tmpdir(), t[4096], *err = NULL;
	snprintf(t, sizeof t, "%s/t", dir);
	int rc = ddl_hang_run(dir, bt, args, 4, &err);
	free(err);
	if (rc != DDL_PASS) {
		trm(dir);
		free(dir);
		return rc;
	}
	json_t *rep = treport(t, NULL);
	json_t *hang = tjget(rep, "job.hang");
	CHECK(json_is_object(hang), "no job.hang");
	CHECK(ddl_hint(hang, "blame.rank") == 3, "blame %lld", ddl_hint(hang, "blame.rank"));
	/* the waiting ranks' calls, each with its stack; rank 3 in none */
	for (int k = 0; k < 4; k++) {
		json_t *hr = ddl_hang_rank(hang, k), *st = json_object_get(hr, "stack"), *f0 = json_array_get(st, 0);
		const char *call = json_string_value(json_object_get(hr, "call"));
		const char *fn = json_string_value(json_object_get(f0, "function"));
		const char *mod = json_string_value(json_object_get(f0, "module"));
		size_t ml = mod ? strlen(mod) : 0;
		fprintf(stderr, "    rank %d: %s, called from %s (%s), %zu frames\n", k, call ? call : "(none)",
		        fn ? fn : "?", mod ? mod : "?", json_array_size(st));
		if (k == 3) {
			CHECK(!call && json_is_null(st), "rank 3: in %s, stack %zu frames", call ? call : "nothing",
			      json_array_size(st));
			continue;
		}
		CHECK(call && fn && !strncmp(fn, "ddl_rank_", 9) && ml >= 9 && !strcmp(mod + ml - 9, "/ddlsynth"),
		      "rank %d: in %s, called from %s in %s", k, call ? call : "nothing", fn ? fn : "?", mod ? mod : "?");
		/* the same stack as the synchronisations before it, which returned,
		 * carry in their records (the call sites) */
		size_t c, same = 0;
		json_t *cs;
		json_array_foreach(json_object_get(rep, "callsites"), c, cs) {
			json_t *g0 = json_array_get(json_object_get(cs, "frames"), 0);
			same += json_array_size(json_object_get(cs, "frames")) == json_array_size(st) &&
			        json_integer_value(json_object_get(g0, "offset")) ==
			                json_integer_value(json_object_get(f0, "offset")) &&
			        !strcmp(json_string_value(json_object_get(g0, "module")), mod);
		}
		CHECK(same, "rank %d: its call's stack is none of the call sites'", k);
	}
	char *const a[] = {(char *)tbuild("bin/ddlprof-report"), t, NULL};
	struct ddl_run_result r;
	CHECK(trun(a, NULL, 60, &r) == 0 && WIFEXITED(r.status), "report: status %#x", r.status);
	CHECK(strstr(r.out, "\n        called from ddl_rank_"), "text report:\n%s", r.out);
	trun_free(&r);
	size_t i, with3 = 0;
	json_t *p;
	json_array_foreach(json_object_get(hang, "stuck"), i, p) {
		json_t *m = json_object_get(p, "missing");
		const char *op = json_string_value(json_object_get(p, "op"));
		fprintf(stderr, "    stuck: %s #%lld, missing %zu (first %lld)\n", op ? op : "?",
		        ddl_hint(p, "seq"), json_array_size(m), (long long)json_integer_value(json_array_get(m, 0)));
		with3 += json_array_size(m) == 1 && json_integer_value(json_array_get(m, 0)) == 3;
	}
	CHECK(with3 == 2, "%zu stuck points miss rank 3 (its host's and its rail's)", with3);
	json_decref(rep);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * The watchdog: with --hang-timeout 2 every waiting rank says, within a
 * second or so of the limit, which call it is in; the job goes on until
 * killed. Without a hang (the same job, no --hang-rank, to its end) the
 * output and status are what they are without the watchdog, and no
 * report shows a hang.
 */
int test_hang_watchdog(void)
{
	char *dir = tmpdir(), t[4096], *err = NULL;
	snprintf(t, sizeof t, "%s/t", dir);
	static const char *const wd[] = {"--hang-timeout", "2", NULL};
	time_t t0 = time(NULL);
	int rc = ddl_hang_run(dir, wd, ddl_flat_hang, 5, &err);
	if (rc != DDL_PASS) {
		free(err);
		trm(dir);
		free(dir);
		return rc;
	}
	(void)t0;
	int lines = 0;
	for (const char *at = err; (at = strstr(at, "hang? rank ")); at++)
		lines++;
	fprintf(stderr, "    %d watchdog lines\n", lines);
	CHECK(lines == 3, "%d watchdog lines (one for each waiting rank):\n%s", lines, err);
	CHECK(strstr(err, ": in cudaStreamSynchronize for 2.") &&
	      strstr(err, "its last collective: ncclAllReduce, number 8 of communicator "), "stderr:\n%s", err);
	free(err);
	trm(dir);
	/* no hang: the watchdog changes nothing */
	static const char *const ok[] = {"--ranks", "2", "--layers", "2", "--params-per-layer", "10k",
	                                 "--compute-ms", "1", "--iterations", "5", "--quiet", NULL};
	struct ddl_run_result r[2];
	for (int k = 0; k < 2; k++) {
		char *argv[32];
		int n = 0;
		argv[n++] = (char *)tbuild("bin/ddlprof");
		argv[n++] = "-q";
		argv[n++] = "-o";
		argv[n++] = t;
		if (k)
			argv[n++] = "--hang-timeout", argv[n++] = "1";
		argv[n++] = "--";
		argv[n++] = (char *)tbuild("examples/ddlsynth");
		for (int i = 0; ok[i]; i++)
			argv[n++] = (char *)ok[i];
		argv[n] = NULL;
		CHECK(trun(argv, NULL, 60, &r[k]) == 0, "ddlsynth did not finish");
		json_t *rep = treport(t, NULL);
		CHECK(json_is_null(tjget(rep, "job.hang")), "a job without a hang reports one");
		json_decref(rep);
		trm(dir);
	}
	CHECK(r[0].status == r[1].status && !strcmp(r[0].out, r[1].out) && !strcmp(r[0].err, r[1].err),
	      "with the watchdog: status %#x, stdout '%s', stderr '%s'; without: %#x, '%s', '%s'", r[1].status,
	      r[1].out, r[1].err, r[0].status, r[0].out, r[0].err);
	trun_free(&r[0]);
	trun_free(&r[1]);
	free(dir);
	return DDL_PASS;
}

/* A job killed while it runs, with no rank stopped: no hang. */
int test_hang_none_when_killed(void)
{
	static const char *const args[] = {"--ranks", "4", "--ranks-per-host", "2", "--layers", "3",
	                                   "--params-per-layer", "100k", "--compute-ms", "2", "--iterations",
	                                   "100000", "--timeout", "60", NULL};
	char *dir = tmpdir(), t[4096], *err = NULL;
	snprintf(t, sizeof t, "%s/t", dir);
	int rc = ddl_hang_run(dir, NULL, args, 3, &err);
	free(err);
	if (rc == DDL_PASS) {
		json_t *rep = treport(t, NULL);
		CHECK(rep && json_is_null(tjget(rep, "job.hang")), "a job killed while it ran reports a hang");
		json_decref(rep);
	}
	trm(dir);
	free(dir);
	return rc;
}

/*
 * A PyTorch DistributedDataParallel job on gloo (two ranks started as
 * torchrun would), rank 1 stopping before step 8's backward: rank 0's
 * gloo thread waits in that step's all-reduce; killed with SIGKILL, the
 * report names rank 1, the all-reduce and its communicator.
 */
int test_hang_torch(void)
{
	char *probe[] = {"/usr/bin/python3", "-c", "import torch.distributed as d; assert d.is_available()",
	                 NULL};
	struct ddl_run_result r;
	int ok = access("/usr/bin/python3", X_OK) == 0 && trun(probe, NULL, 60, &r) == 0 && r.status == 0;
	if (access("/usr/bin/python3", X_OK) == 0)
		trun_free(&r);
	if (!ok) {
		fprintf(stderr, "    needs Debian's python3-torch: skipped\n");
		return DDL_SKIP;
	}
	char *dir = tmpdir(), t[4096], cmd[16384];
	snprintf(t, sizeof t, "%s/t", dir);
	snprintf(cmd, sizeof cmd,
	         "MASTER_PORT=%d exec %s../examples/launch_ranks.sh 2 %s -q -o %s -- /usr/bin/python3 "
	         "%s../examples/pytorch_ddp.py --steps 40 --layers 2 --hang-rank 1 --hang-at 8",
	         tfreeports(1), tbuild(""), tbuild("bin/ddlprof"), t, tbuild(""));
	char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	/* torch's import takes some seconds here; the hang starts after it */
	int rc = trun(argv, NULL, 25, &r);
	CHECK(rc == -1 && strstr(r.out, "rank 1: stopping before step 8"), "the job did not hang: %s %s",
	      r.out, r.err);
	trun_free(&r);
	json_t *rep = treport(t, NULL);
	json_t *hang = tjget(rep, "job.hang");
	CHECK(json_is_object(hang), "no job.hang");
	const char *op = json_string_value(tjget(hang, "collective.op"));
	CHECK(op && !strcmp(op, "allreduce"), "op %s", op ? op : "?");
	CHECK(ddl_hint(hang, "blame.rank") == 1, "blame %lld", ddl_hint(hang, "blame.rank"));
	json_t *miss = json_object_get(hang, "missing_ranks");
	CHECK(json_array_size(miss) == 1 && json_integer_value(json_array_get(miss, 0)) == 1, "missing ranks");
	json_t *r0 = ddl_hang_rank(hang, 0);
	const char *call = json_string_value(json_object_get(r0, "call"));
	CHECK(call && !strcmp(call, "gloo_allreduce") &&
	      ddl_hint(r0, "collective.seq") == ddl_hint(hang, "collective.seq"),
	      "rank 0 is in %s #%lld", call ? call : "no call", ddl_hint(r0, "collective.seq"));
	const char *last = json_string_value(json_object_get(ddl_hang_rank(hang, 1), "last_recorded"));
	CHECK(last && !strcmp(last, "forward"), "rank 1's last recorded call: %s", last ? last : "none");
	/* the Python hook's phase each was in: rank 0 in backward (DDP's
	 * all-reduce), rank 1, which stopped between forward and backward, in none */
	const char *ph = json_string_value(tjget(r0, "python_phase.phase"));
	fprintf(stderr, "    rank 0 in Python's %s for %.1f s\n", ph ? ph : "(none)",
	        json_number_value(tjget(r0, "python_phase.in_s")));
	CHECK(ph && !strcmp(ph, "backward") && json_number_value(tjget(r0, "python_phase.in_s")) > 1,
	      "rank 0's Python phase: %s", ph ? ph : "none");
	CHECK(json_is_null(json_object_get(ddl_hang_rank(hang, 1), "python_phase")), "rank 1 in a Python phase");
	json_decref(rep);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* A process of no job blocked in a receive from its start, killed: the
 * trace exists (it recorded nothing else) and the report says where it
 * was blocked, with no collective to blame. */
int test_hang_blocked_call(void)
{
	char *dir = tmpdir(), t[4096];
	snprintf(t, sizeof t, "%s/t", dir);
	char *argv[] = {(char *)tbuild("bin/ddlprof"), "-q", "--trace", "socket", "-o", t, "--", "/usr/bin/python3",
	                "-c", "import socket; a, b = socket.socketpair(); a.recv(1)", NULL};
	if (access(argv[7], X_OK) != 0) {
		trm(dir);
		free(dir);
		return DDL_SKIP;
	}
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 3, &r) == -1, "python3 ended by itself: %s", r.err);
	trun_free(&r);
	json_t *rep = treport(t, NULL);
	json_t *hang = tjget(rep, "job.hang");
	CHECK(json_is_object(hang) && json_is_null(json_object_get(hang, "collective")), "job.hang");
	json_t *p0 = json_array_get(json_object_get(hang, "ranks"), 0);
	const char *call = json_string_value(json_object_get(p0, "call"));
	double in = json_number_value(json_object_get(p0, "in_s"));
	CHECK(call && !strcmp(call, "recv") && in >= 1 && in < 3.5, "in %s for %.2f s", call ? call : "nothing", in);
	json_decref(rep);
	trm(dir);
	free(dir);
	return DDL_PASS;
}
