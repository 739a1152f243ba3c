/*
 * Hangs: jobs with a rank that stops for good before a collective
 * (ddlsynth --hang-rank), killed with SIGKILL as a scheduler's timeout
 * would; the report names the missing rank, the collective (operation,
 * bytes, number in its communicator's sequence, communicator) and what
 * every rank was doing; the watchdog says it on stderr while the job runs;
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
 * stuck points are reported and rank 3 is the one to blame.
 */
int test_hang_synth_hierarchical(void)
{
	static const char *const args[] = {
		"--ranks", "4", "--ranks-per-host", "2", "--layers", "3", "--params-per-layer", "100k",
		"--compute-ms", "2", "--iterations", "200", "--allreduce", "hierarchical", "--hang-rank", "3",
		"--hang-at", "10", "--timeout", "60", NULL};
	char *dir = tmpdir(), t[4096], *err = NULL;
	snprintf(t, sizeof t, "%s/t", dir);
	int rc = ddl_hang_run(dir, NULL, args, 4, &err);
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
