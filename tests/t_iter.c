/*
 * Iterations without markers, from the sequence of calls (analyzer/
 * iterations.c), on programs not written for it, held against what the
 * programs measure themselves: per rank, the count is the steps run less
 * the warm-up (plus or minus one) and the mean is within 3% of the
 * program's own step timer, over the same steps where the program says
 * each step's time (sockstep.py, train.py, condstep), else over its run.
 * The programs: tcpring (several sizes, started bare and as torchrun would
 * start its ranks: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, no
 * --run-id), mpi_allreduce under mpirun, ddlsynth on the emulated NCCL, a
 * Python socket job (tests/py/sockstep.py) on loopback and across network
 * namespaces, torch's gloo DDP under python -I (the hook not loaded, so
 * only the C-level gloo interposition sees it), and a C program whose
 * only rhythm is its waits (tests/progs/condstep). A program with no loop
 * must get "no iterations found", and ranks that disagree must be named.
 * Synthetic traces (a ring whose calls are split as TCP splits them) check
 * the socket method exactly, without a loaded machine's noise.
 *
 * The timed runs are measured once more on a miss: on this shared
 * two-core machine a run's first steps may run at another speed than its
 * last, and a program that only prints its whole run's mean then differs
 * from the steps after the warm-up by more than the method does.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ddlprof/chunk.h"
#include "ddlprof/trace.h"
#include "autocorr.h"
#include "test.h"

#define IT_WARMUP 5
#define IT_MEAN_TOL 0.03
#define IT_PY "/usr/bin/python3"

/* The ranks[] entry of RANK in REP: of several (helpers that inherited
 * its environment), the one with the most iterations. */
static json_t *it_rank(json_t *rep, int rank)
{
	json_t *best = NULL, *r;
	size_t i;
	json_array_foreach(json_object_get(rep, "ranks"), i, r)
		if (json_integer_value(json_object_get(r, "rank")) == rank &&
		    (!best || json_integer_value(json_object_get(r, "iterations")) >
		                  json_integer_value(json_object_get(best, "iterations"))))
			best = r;
	return best;
}

static const char *it_str(json_t *o, const char *path)
{
	const char *s = json_string_value(tjget(o, path));
	return s ? s : "(none)";
}

/*
 * The checks of a run of NRANKS ranks from FIRST (-1: a process that is
 * no rank) that ran STEPS steps: the job's iterations found by METHOD and
 * agreed on, and per rank the count after the warm-up, and the mean:
 * where STEP_S[k] is given (the program's step times, a JSON array; k
 * from 0) against the mean of its last steps, as many as the report
 * analysed; else against OWN[k], the program's mean over its whole run,
 * held against the mean over every iteration found (ALL, the report with
 * --warmup 0): the same steps, where the first ones ran at another speed.
 * OWN[k] NAN: the program timed its first rank only (tcpring, MPI's rank
 * 0): with ALL, the rank's mean over every iteration found against the
 * first rank's timer (the ranks of one job step together: the same steps,
 * like for like), else its mean after the warm-up against the first
 * rank's (which may start a step apart, so that one slow step weighs on
 * one of them only).
 */
static int it_check(json_t *rep, json_t *all, const char *what, const char *method, int first,
                    int nranks, long steps, const double *own, json_t *const *step_s)
{
	CHECK(rep, "%s: no report", what);
	CHECK(!strcmp(it_str(rep, "job.iteration_method"), method) &&
	      !strcmp(it_str(rep, "job.iteration_status"), "found"),
	      "%s: iterations %s, %s (%s expected, found)", what, it_str(rep, "job.iteration_method"),
	      it_str(rep, "job.iteration_status"), method);
	for (int k = 0; k < nranks; k++) {
		json_t *r = it_rank(rep, first + k);
		CHECK(r, "%s: no rank %d", what, first + k);
		long n = (long)json_integer_value(json_object_get(r, "iterations"));
		long found = (long)json_integer_value(json_object_get(r, "iterations_found"));
		double mean = json_real_value(json_object_get(r, "iteration_mean_s")), ref = own ? own[k] : 0;
		int by_first = own && isnan(own[k]);
		if (by_first && !all) /* the first rank's, after the warm-up */
			ref = json_real_value(json_object_get(it_rank(rep, first), "iteration_mean_s"));
		if (by_first && all) /* the first rank's own timer, over the whole run */
			ref = own[0];
		if (all) /* the whole run's */
			mean = json_real_value(json_object_get(it_rank(all, first + k), "iteration_mean_s"));
		if (step_s && step_s[k]) {
			size_t m = json_array_size(step_s[k]), from = m > (size_t)n ? m - (size_t)n : 0;
			ref = 0;
			for (size_t i = from; i < m; i++)
				ref += json_real_value(json_array_get(step_s[k], i));
			ref /= (double)(m - from ? m - from : 1);
		}
		fprintf(stderr, "    %s rank %d: %ld steps, %ld iterations (%ld found); %.3f ms found, %.3f ms "
		        "by the program (%+.1f%%)%s%s\n", what, first + k, steps, n, found, mean * 1e3, ref * 1e3,
		        ref > 0 ? (mean / ref - 1) * 100 : 0.0,
		        by_first ? " (the first rank's)" : "", all ? ", over every step found" : "");
		CHECK(labs(n - (steps - IT_WARMUP)) <= 1, "%s rank %d: %ld iterations for %ld steps", what,
		      first + k, n, steps);
		CHECK(found == n + IT_WARMUP, "%s rank %d: %ld found, %ld analysed", what, first + k, found, n);
		/* a rank held against another's timer: they start up to a step apart,
		 * which moves the mean over every step by up to a step's share */
		double tol = IT_MEAN_TOL + (by_first && steps > 0 ? 1.0 / (double)steps : 0);
		CHECK(fabs(mean - ref) <= tol * ref, "%s rank %d: mean %.3f ms, the program's %.3f ms", what, first + k,
		      mean * 1e3, ref * 1e3);
		if (by_first && all) { /* and after the warm-up, loosely, against the first rank's */
			double m1 = json_real_value(json_object_get(r, "iteration_mean_s"));
			double m0 = json_real_value(json_object_get(it_rank(rep, first), "iteration_mean_s"));
			CHECK(fabs(m1 - m0) <= 0.1 * m0, "%s rank %d: %.3f ms after the warm-up, the first rank %.3f ms",
			      what, first + k, m1 * 1e3, m0 * 1e3);
		}
	}
	return DDL_PASS;
}

/* ddlprof-report --json --warmup 0 DIR: every iteration found; NULL on failure. */
static json_t *it_report_all(const char *dir)
{
	char *argv[] = {(char *)tbuild("bin/ddlprof-report"), "--json", "--warmup", "0", (char *)dir,
	                NULL};
	struct ddl_run_result r;
	json_t *j = trun(argv, NULL, 60, &r) == 0 ? json_loads(r.out, 0, NULL) : NULL;
	trun_free(&r);
	return j;
}

/* The number after KEY in S, or NAN. */
static double it_after(const char *s, const char *key)
{
	const char *at = s ? strstr(s, key) : NULL;
	double v;
	return at && sscanf(at + strlen(key), "%lf", &v) == 1 ? v : NAN;
}

/*
 * tcpring with ARGS (a string of options) under ddlprof into a fresh
 * directory, started bare (it forks its ranks); its steps and ms per
 * iteration in *STEPS, *MS. The report, or NULL.
 */
static json_t *it_tcpring(const char *args, long *steps, double *ms, char **dir)
{
	*dir = tmpdir();
	char t[PATH_MAX], cmd[PATH_MAX + 512];
	snprintf(t, sizeof t, "%s/t", *dir);
	snprintf(cmd, sizeof cmd, "exec env -u RANK -u WORLD_SIZE '%s' -q -o '%s' -- '%s' %s",
	         tbuild("bin/ddlprof"), t, tbuild("examples/tcpring"), args);
	char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	struct ddl_run_result r;
	int ok = trun(argv, NULL, 120, &r) == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0;
	*ms = it_after(r.out, "gradients: ");
	*steps = (long)it_after(r.out, "ranks, ");
	if (!ok)
		fprintf(stderr, "    tcpring %s: %s %s\n", args, r.out, r.err);
	trun_free(&r);
	return ok ? treport(t, NULL) : NULL;
}

static int it_tcpring_once(const char *args)
{
	long steps;
	double ms;
	char *dir, what[128];
	json_t *rep = it_tcpring(args, &steps, &ms, &dir), *all;
	char t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	all = it_report_all(t);
	snprintf(what, sizeof what, "tcpring %s", args);
	double own[4] = {ms / 1e3, NAN, NAN, NAN}; /* rank 0 prints its time */
	int rc = it_check(rep, all, what, "socket", 0, 4, steps, own, NULL);
	json_decref(rep);
	json_decref(all);
	trm(dir);
	free(dir);
	return rc;
}

/* Once more on a miss (the file's head says why). */
static int it_again(int (*fn)(const char *), const char *arg)
{
	int rc = fn(arg);
	if (rc == DDL_FAIL) {
		fprintf(stderr, "    again\n");
		rc = fn(arg);
	}
	return rc;
}

/* tcpring's ranks, started bare, at several sizes: each step's bytes come
 * in a different number of calls of different sizes. (16 MiB steps: 16 of
 * them, so that the other ranks' 11 after the warm-up, held against the
 * first rank's, are not moved 5% by one step a loaded machine slowed, as
 * 7 of 12 were.) */
int test_iter_tcpring(void)
{
	static const char *const cases[] = {"-n 20", "-n 40 -m 1 -c 10", "-n 16 -m 16 -c 20",
	                                    "-n 30 -m 2 -c 2"};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
		if (it_again(it_tcpring_once, cases[k]) != DDL_PASS)
			return DDL_FAIL;
	return DDL_PASS;
}

/*
 * Long runs: thousands of steps (the period used to be looked for in 2048
 * quanta of the traffic's bytes, below one quantum past some 500 steps: a
 * 3000-step tcpring had "no iterations found", a 900-step one too). Its 900 steps
 * against its own timer, and bench/bigtrace's 2 ranks of 17,000 steps
 * (a period looked for in a window of the run) against the steps it wrote.
 */
int test_iter_long_runs(void)
{
	if (it_again(it_tcpring_once, "-n 900 -m 1 -c 0.5") != DDL_PASS)
		return DDL_FAIL;
	char *dir = tmpdir(), big[PATH_MAX];
	snprintf(big, sizeof big, "%s/big", dir);
	char *gen[] = {(char *)tbuild("bench/bigtrace"), big, "2", "300000", NULL};
	struct ddl_run_result r;
	CHECK(trun(gen, NULL, 60, &r) == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "bigtrace: %s",
	      r.err);
	long steps = (long)it_after(r.out, "rank 0: ");
	double ms = it_after(strstr(r.out, "mean step") ? strstr(r.out, "mean step") : "", "mean step ");
	trun_free(&r);
	json_t *rep = treport(big, NULL);
	CHECK(rep && steps > 10000, "bigtrace: %ld steps", steps);
	json_t *rk = it_rank(rep, 0);
	long found = (long)json_integer_value(json_object_get(rk, "iterations_found"));
	double mean = json_real_value(json_object_get(rk, "iteration_mean_s")) * 1e3;
	fprintf(stderr, "    bigtrace, 2 ranks: %ld steps of %.3f ms; %ld found, %.3f ms\n", steps, ms, found, mean);
	CHECK(labs(found - steps) <= 1 && fabs(mean - ms) <= 0.005 * ms, "%ld steps of %.3f ms, %ld found of %.3f ms",
	      steps, ms, found, mean);
	json_decref(rep);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * The steps tcpring names with its markers (-k) are the program's own: on
 * the same trace, the socket calls (the markers passed over with
 * --iteration-name) must find the same steps, count and mean, to 1%.
 */
int test_iter_tcpring_markers_agree(void)
{
	long steps;
	double ms;
	char *dir;
	json_t *mk = it_tcpring("-k -n 30 -m 4", &steps, &ms, &dir), *so = NULL;
	CHECK(mk && !strcmp(it_str(mk, "job.iteration_method"), "markers"), "markers: %s",
	      it_str(mk, "job.iteration_method"));
	char t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	char *argv[] = {(char *)tbuild("bin/ddlprof-report"), "--json", "--iteration-name", "nomatch*", t,
	                NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 60, &r) == 0 && (so = json_loads(r.out, 0, NULL)), "report: %s", r.err);
	trun_free(&r);
	CHECK(!strcmp(it_str(so, "job.iteration_method"), "socket"), "without the markers: %s",
	      it_str(so, "job.iteration_method"));
	for (int k = 0; k < 4; k++) {
		json_t *a = it_rank(mk, k), *b = it_rank(so, k);
		long na = (long)json_integer_value(json_object_get(a, "iterations"));
		long nb = (long)json_integer_value(json_object_get(b, "iterations"));
		double ma = json_real_value(json_object_get(a, "iteration_mean_s"));
		double mb = json_real_value(json_object_get(b, "iteration_mean_s"));
		fprintf(stderr, "    rank %d: markers %ld of %.3f ms, socket calls %ld of %.3f ms (%+.2f%%)\n", k,
		        na, ma * 1e3, nb, mb * 1e3, (mb / ma - 1) * 100);
		CHECK(labs(na - nb) <= 1 && fabs(mb - ma) <= 0.01 * ma, "rank %d: socket %ld of %.3f ms, "
		      "markers %ld of %.3f ms", k, nb, mb * 1e3, na, ma * 1e3);
	}
	json_decref(mk);
	json_decref(so);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * Runs NRANKS ranks as torchrun would start them (MASTER_ADDR,
 * MASTER_PORT, WORLD_SIZE, RANK; no --run-id), each `CMD` (a shell
 * string) under ddlprof -q -o DIR FLAGS[r] -- (FLAGS NULL: none), on
 * this host or, with NS, each in its namespace host (netns-hosts.sh, host
 * r, its address in DDLEMU_ADDR for the emulation); rank r's stdout in
 * OUT.r. 0 when every rank exited 0, else -1 (with rank 0's stderr).
 */
static int it_ranks(const char *cmd, const char *dir, const char *const *flags, const char *out,
                    int nranks, const char *ns)
{
	char *sh = malloc(65536);
	if (!sh)
		return -1;
	size_t n = (size_t)snprintf(sh, 65536, "export MASTER_ADDR=%s MASTER_PORT=%d WORLD_SIZE=%d; ",
	                            ns ? "10.99.0.1" : "127.0.0.1", tfreeports(1), nranks);
	for (int r = 0; r < nranks; r++) {
		char host[4200] = "GLOO_SOCKET_IFNAME=lo ";
		if (ns)
			snprintf(host, sizeof host, "GLOO_SOCKET_IFNAME=%s%d DDLEMU_ADDR=10.99.0.%d %s run %d ", ns, r,
			         r + 1, tbuild("../scripts/netns-hosts.sh"), r);
		n += (size_t)snprintf(sh + n, 65536 - n, "RANK=%d %s%s -q -o %s %s -- %s > %s.%d 2> %s.%d.err & "
		                      "p%d=$!; ", r, host, tbuild("bin/ddlprof"), dir,
		                      flags && flags[r] ? flags[r] : "", cmd, out, r, out, r, r);
	}
	n += (size_t)snprintf(sh + n, 65536 - n, "s=0; ");
	for (int r = 0; r < nranks; r++)
		n += (size_t)snprintf(sh + n, 65536 - n, "wait $p%d || s=1; ", r);
	snprintf(sh + n, 65536 - n, "exit $s");
	char *argv[] = {"/bin/sh", "-c", sh, NULL}, nsenv[64];
	snprintf(nsenv, sizeof nsenv, "DDL_NETNS_PREFIX=%s", ns ? ns : "ddlit");
	char *env[] = {nsenv, NULL};
	struct ddl_run_result r;
	int rc = trun(argv, env, 200, &r);
	int ok = rc == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0;
	if (!ok) {
		char path[4200], buf[2048] = "";
		snprintf(path, sizeof path, "%s.0.err", out);
		FILE *f = fopen(path, "r");
		if (f) {
			buf[fread(buf, 1, sizeof buf - 1, f)] = 0;
			fclose(f);
		}
		fprintf(stderr, "    the ranks failed: %s\n", buf);
	}
	trun_free(&r);
	free(sh);
	return ok ? 0 : -1;
}

/* The contents of PREFIX.RANK (what the rank printed); NULL when unreadable. */
static char *it_out(const char *prefix, int rank)
{
	char path[4200];
	snprintf(path, sizeof path, "%s.%d", prefix, rank);
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = calloc(1, 1 << 20);
	if (buf)
		buf[fread(buf, 1, (1 << 20) - 1, f)] = 0;
	fclose(f);
	return buf;
}

/* The JSON line a rank of sockstep.py or train.py printed; NULL when none. */
static json_t *it_json_line(const char *prefix, int rank)
{
	char *s = it_out(prefix, rank), *line = s ? strstr(s, "{\"rank\"") : NULL;
	json_t *j = line ? json_loads(line, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
	free(s);
	return j;
}

/* A Python job (SCRIPT with ARGS) of NRANKS ranks, each started as
 * torchrun would, NS as for it_ranks; its iterations found by METHOD. */
static int it_python(const char *script, const char *pyflags, const char *args, int nranks,
                     const char *ns, const char *method)
{
	char *dir = tmpdir(), t[PATH_MAX], out[PATH_MAX], cmd[8192], what[256];
	snprintf(t, sizeof t, "%s/t", dir);
	snprintf(out, sizeof out, "%s/out", dir);
	snprintf(cmd, sizeof cmd, "%s %s %s/../tests/py/%s %s", IT_PY, pyflags, tbuild(""), script, args);
	snprintf(what, sizeof what, "%s %s%s", script, args, ns ? " (namespaces)" : "");
	CHECK(it_ranks(cmd, t, NULL, out, nranks, ns) == 0, "%s: the job failed", what);
	json_t *lines[8] = {0};
	long steps = 0;
	for (int k = 0; k < nranks; k++) {
		lines[k] = it_json_line(out, k);
		CHECK(lines[k], "%s: rank %d printed no figures", what, k);
		steps = (long)json_integer_value(json_object_get(lines[k], "steps"));
	}
	json_t *steps_s[8];
	for (int k = 0; k < nranks; k++)
		steps_s[k] = json_object_get(lines[k], "step_s");
	json_t *rep = treport(t, NULL);
	int rc = it_check(rep, NULL, what, method, 0, nranks, steps, NULL, steps_s);
	for (int k = 0; k < nranks; k++)
		json_decref(lines[k]);
	json_decref(rep);
	trm(dir);
	free(dir);
	return rc;
}

static int it_sockstep_loopback(const char *args)
{
	return it_python("sockstep.py", "", args, 3, NULL, "socket");
}

/* tcpring's ranks each started on its own, as torchrun would start them,
 * through a shell that first runs a helper from a subshell, as pyenv's
 * shims do (the helper, with the rank's RANK, is no rank). */
static int it_tcpring_ranks_once(const char *args)
{
	char *dir = tmpdir(), t[PATH_MAX], out[PATH_MAX], cmd[4200];
	snprintf(t, sizeof t, "%s/t", dir);
	snprintf(out, sizeof out, "%s/out", dir);
	snprintf(cmd, sizeof cmd, "/bin/sh -c '( cat /etc/hostname > /dev/null; true ); exec %s -p %d %s'", tbuild("examples/tcpring"),
	         tfreeports(4), args);
	CHECK(it_ranks(cmd, t, NULL, out, 4, NULL) == 0, "tcpring's ranks failed");
	char *o = it_out(out, 0);
	double ms = it_after(o, "gradients: ");
	long steps = (long)it_after(o, "ranks, ");
	free(o);
	double own[4] = {ms / 1e3, NAN, NAN, NAN}; /* rank 0 prints its time */
	json_t *rep = treport(t, NULL), *all = it_report_all(t);
	int rc = it_check(rep, all, "tcpring as torchrun starts it", "socket", 0, 4, steps, own, NULL);
	json_decref(all);
	CHECK(rc != DDL_PASS || json_integer_value(tjget(rep, "job.ranks")) == 4, "ranks split into runs");
	CHECK(rc != DDL_PASS || json_array_size(json_object_get(rep, "ranks")) == 4,
	      "%zu processes in ranks[] (the shells' helpers among them?)", json_array_size(json_object_get(rep, "ranks")));
	json_decref(rep);
	trm(dir);
	free(dir);
	return rc;
}

/* Ranks started as torchrun would: tcpring (C) and sockstep.py (Python,
 * sendall and recv_into of what is left), and sockstep.py's small steps
 * (64 KiB and 5 ms: its other ranks make one send and one receive a
 * step, so that half their calls follow a pause). */
int test_iter_ranks_env(void)
{
	if (it_again(it_tcpring_ranks_once, "-n 25") != DDL_PASS ||
	    it_again(it_sockstep_loopback, "--steps 40 --kb 64 --compute-ms 5") != DDL_PASS)
		return DDL_FAIL;
	return it_again(it_sockstep_loopback, "--steps 30");
}

/* Namespace hosts 0..N-1 under prefix NS; 0, or DDL_SKIP (said why). */
static int it_netns_up(const char *ns, int n)
{
	if (geteuid() != 0) {
		fprintf(stderr, "    needs root for network namespaces: skipped\n");
		return DDL_SKIP;
	}
	char script[4096], nsenv[64], num[16];
	snprintf(script, sizeof script, "%s", tbuild("../scripts/netns-hosts.sh"));
	snprintf(nsenv, sizeof nsenv, "DDL_NETNS_PREFIX=%s", ns);
	snprintf(num, sizeof num, "%d", n);
	char *env[] = {nsenv, NULL}, *down[] = {script, "down", NULL}, *up[] = {script, "up", num, NULL};
	struct ddl_run_result d;
	trun(down, env, 30, &d);
	trun_free(&d);
	if (trun(up, env, 30, &d) != 0 || d.status != 0) {
		fprintf(stderr, "    cannot make network namespaces: skipped (%s)\n", d.err);
		trun_free(&d);
		trun(down, env, 30, &d);
		trun_free(&d);
		return DDL_SKIP;
	}
	trun_free(&d);
	return 0;
}

static void it_netns_down(const char *ns)
{
	char script[4096], nsenv[64];
	snprintf(script, sizeof script, "%s", tbuild("../scripts/netns-hosts.sh"));
	snprintf(nsenv, sizeof nsenv, "DDL_NETNS_PREFIX=%s", ns);
	char *env[] = {nsenv, NULL}, *down[] = {script, "down", NULL};
	struct ddl_run_result d;
	trun(down, env, 30, &d);
	trun_free(&d);
}

static int it_sockstep_hosts(const char *args)
{
	return it_python("sockstep.py", "", args, 3, "ddlit", "socket");
}

/* ddlsynth's ranks on two namespace hosts, as torchrun would start them. */
static int it_synth_hosts(const char *args)
{
	char *dir = tmpdir(), t[PATH_MAX], out[PATH_MAX], cmd[4200];
	snprintf(t, sizeof t, "%s/t", dir);
	snprintf(out, sizeof out, "%s/out", dir);
	snprintf(cmd, sizeof cmd, "%s %s", tbuild("examples/ddlsynth"), args);
	CHECK(it_ranks(cmd, t, NULL, out, 2, "ddlit") == 0, "ddlsynth's ranks failed");
	double own[2];
	long steps = 0;
	for (int k = 0; k < 2; k++) {
		char *o = it_out(out, k), key[64];
		snprintf(key, sizeof key, "rank %d/2 on ", k);
		const char *at = o ? strstr(o, key) : NULL;
		own[k] = it_after(at, "mean step ") / 1e3;
		steps = (long)it_after(at, "ms over ");
		free(o);
	}
	json_t *rep = treport(t, NULL), *all = it_report_all(t);
	int rc = it_check(rep, all, "ddlsynth on two hosts", "collectives", 0, 2, steps, own, NULL);
	json_decref(all);
	CHECK(rc != DDL_PASS || json_integer_value(tjget(rep, "job.hosts")) == 2, "not two hosts");
	json_decref(rep);
	trm(dir);
	free(dir);
	return rc;
}

/* mpi_allreduce's two ranks on two namespace hosts: mpirun on the first,
 * its daemon started on the second by examples/mpi_netns_agent.sh. */
static int it_mpi_hosts(const char *args)
{
	char *dir = tmpdir(), t[PATH_MAX], hosts[PATH_MAX], cmd[8192];
	snprintf(t, sizeof t, "%s/t", dir);
	snprintf(hosts, sizeof hosts, "%s/hosts", dir);
	FILE *f = fopen(hosts, "w");
	CHECK(f && fputs("10.99.0.1 slots=1\n10.99.0.2 slots=1\n", f) >= 0 && fclose(f) == 0,
	      "writing %s", hosts);
	snprintf(cmd, sizeof cmd, "exec '%s' run 0 '%s' -q -o '%s' -- mpirun --allow-run-as-root "
	         "--hostfile '%s' --mca plm_rsh_agent '%s' -np 2 --map-by node --mca btl tcp,self "
	         "--mca btl_tcp_if_include 10.99.0.0/24 --mca oob_tcp_if_include 10.99.0.0/24 "
	         "-x LD_PRELOAD -x DDLPROF_DIR -x DDLPROF_RUN_ID '%s' %s",
	         tbuild("../scripts/netns-hosts.sh"), tbuild("bin/ddlprof"), t, hosts,
	         tbuild("../examples/mpi_netns_agent.sh"), tbuild("examples/mpi_allreduce"), args);
	char *argv[] = {"/bin/sh", "-c", cmd, NULL}, *env[] = {"DDL_NETNS_PREFIX=ddlit", NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, env, 120, &r) == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "mpirun: %s %s", r.out, r.err);
	double s = it_after(r.out, "steps, ");
	long steps = (long)it_after(r.out, "2 ranks, ");
	trun_free(&r);
	double own[2] = {s, NAN}; /* rank 0 prints its time */
	json_t *rep = treport(t, NULL), *all = it_report_all(t);
	int rc = it_check(rep, all, "mpi_allreduce on two hosts", "collectives", 0, 2, steps, own, NULL);
	CHECK(rc != DDL_PASS || json_integer_value(tjget(rep, "job.hosts")) == 2, "not two hosts");
	json_decref(all);
	json_decref(rep);
	trm(dir);
	free(dir);
	return rc;
}

/* Across network namespaces: sockstep.py on three hosts, ddlsynth and
 * mpi_allreduce on two. */
int test_iter_two_hosts(void)
{
	int rc = it_netns_up("ddlit", 3);
	if (rc)
		return rc;
	rc = it_again(it_sockstep_hosts, "--steps 30");
	if (rc == DDL_PASS && access(tbuild("examples/ddlsynth"), X_OK) == 0)
		rc = it_again(it_synth_hosts, "--layers 4 --compute-ms 5 --iterations 20");
	if (rc == DDL_PASS && access("/usr/bin/mpirun", X_OK) == 0 &&
	    access(tbuild("examples/mpi_allreduce"), X_OK) == 0)
		rc = it_again(it_mpi_hosts, "-n 30");
	it_netns_down("ddlit");
	return rc;
}

static int it_mpi_once(const char *args)
{
	char *dir = tmpdir(), t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	char cmd[8192];
	snprintf(cmd, sizeof cmd, "exec '%s' -q -o '%s' -- mpirun --allow-run-as-root --oversubscribe "
	         "-np 2 --mca btl tcp,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo '%s' %s",
	         tbuild("bin/ddlprof"), t, tbuild("examples/mpi_allreduce"), args);
	char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 120, &r) == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "mpirun: %s %s", r.out, r.err);
	double s = it_after(r.out, "steps, ");
	long steps = (long)it_after(r.out, "2 ranks, ");
	trun_free(&r);
	double own[2] = {s, NAN}; /* rank 0 prints its time */
	json_t *rep = treport(t, NULL), *all = it_report_all(t);
	int rc = it_check(rep, all, "mpi_allreduce", "collectives", 0, 2, steps, own, NULL);
	json_decref(all);
	json_decref(rep);
	trm(dir);
	free(dir);
	return rc;
}

/* An MPI job under mpirun, over TCP on loopback. */
int test_iter_mpi(void)
{
	if (access("/usr/bin/mpirun", X_OK) != 0 || access(tbuild("examples/mpi_allreduce"), X_OK) != 0) {
		fprintf(stderr, "    needs Open MPI's mpirun and the MPI example: skipped\n");
		return DDL_SKIP;
	}
	return it_again(it_mpi_once, "-n 30");
}

static int it_synth_once(const char *args)
{
	char *dir = tmpdir(), t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	char cmd[8192];
	snprintf(cmd, sizeof cmd, "exec env -u RANK -u WORLD_SIZE '%s' -q -o '%s' -- '%s' %s",
	         tbuild("bin/ddlprof"), t, tbuild("examples/ddlsynth"), args);
	char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 120, &r) == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "ddlsynth: %s %s", r.out, r.err);
	double own[4];
	long steps = 0;
	for (int k = 0; k < 4; k++) {
		char key[64];
		snprintf(key, sizeof key, "rank %d/4 on ", k);
		const char *at = strstr(r.out, key) ? strstr(r.out, key) : strstr(r.err, key);
		own[k] = it_after(at, "mean step ") / 1e3;
		steps = (long)it_after(at, "ms over ");
	}
	trun_free(&r);
	json_t *rep = treport(t, NULL), *all = it_report_all(t);
	int rc = it_check(rep, all, "ddlsynth", "collectives", 0, 4, steps, own, NULL);
	json_decref(all);
	json_decref(rep);
	trm(dir);
	free(dir);
	return rc;
}

/* ddlsynth without --markers, on the emulated CUDA and NCCL. */
int test_iter_synth(void)
{
	if (access(tbuild("examples/ddlsynth"), X_OK) != 0) {
		fprintf(stderr, "    needs the emulation's ddlsynth: skipped\n");
		return DDL_SKIP;
	}
	return it_again(it_synth_once, "--layers 4 --compute-ms 5 --iterations 25");
}

static int it_torch_once(const char *args)
{
	return it_python("train.py", "-I", args, 2, NULL, "collectives");
}

/* torch's gloo DDP under python -I: no sitecustomize, so no hook; the
 * C-level gloo interposition sees the collectives. */
int test_iter_torch_isolated(void)
{
	char *probe[] = {IT_PY, "-c", "import torch.distributed as d; assert d.is_available()", NULL};
	struct ddl_run_result r;
	int ok = access(IT_PY, X_OK) == 0 && trun(probe, NULL, 60, &r) == 0 && r.status == 0;
	if (access(IT_PY, X_OK) == 0)
		trun_free(&r);
	if (!ok) {
		fprintf(stderr, "    needs Debian's python3-torch: skipped\n");
		return DDL_SKIP;
	}
	return it_again(it_torch_once, "--steps 30 --loader none");
}

static int it_waits_once(const char *args)
{
	char *dir = tmpdir(), t[PATH_MAX], times[PATH_MAX], env1[PATH_MAX + 32], cmd[8192];
	snprintf(t, sizeof t, "%s/t", dir);
	snprintf(times, sizeof times, "%s/times", dir);
	snprintf(env1, sizeof env1, "CONDSTEP_TIMES=%s", times);
	snprintf(cmd, sizeof cmd, "exec '%s' -q -o '%s' -- '%s' %s", tbuild("bin/ddlprof"), t,
	         tbuild("tests/progs/condstep"), args);
	char *argv[] = {"/bin/sh", "-c", cmd, NULL}, *env[] = {env1, NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, env, 120, &r) == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "condstep: %s", r.err);
	long steps = (long)it_after(r.out, "condstep: ");
	trun_free(&r);
	json_t *st = json_array();
	FILE *f = fopen(times, "r");
	double v;
	while (f && fscanf(f, "%lf", &v) == 1)
		json_array_append_new(st, json_real(v));
	if (f)
		fclose(f);
	json_t *rep = treport(t, NULL), *steps_s[1] = {st};
	/* a process that is no rank (rank -1); its step times are from one
	 * batch taken to the next, one fewer than its steps */
	int rc = it_check(rep, NULL, "condstep", "waits", -1, 1, steps - 1, NULL, steps_s);
	json_decref(st);
	json_decref(rep);
	trm(dir);
	free(dir);
	return rc;
}

/* A Python loop that waits on a queue.Queue (tests/py/queuestep.py). */
static int it_queuestep(const char *args)
{
	return it_python("queuestep.py", "", args, 1, NULL, "waits");
}

/* Programs whose only rhythm is their waits: on a condition variable
 * (condstep), and in Python on a queue, where CPython's locks are
 * semaphores (queuestep.py). */
int test_iter_waits(void)
{
	if (it_again(it_waits_once, "30") != DDL_PASS)
		return DDL_FAIL;
	return it_again(it_queuestep, "--steps 30");
}

/*
 * Programs with no loop: "no iterations found", status "none", no count:
 * sockstep.py's ranks exchanging once, 1 MiB each way, and 64 MiB, a
 * transfer the kernel splits in thousands of calls. (A loop inside one
 * step is a loop: tcpring -n 1's ring steps, each a reduction and an
 * exchange, may be found on some ranks; the ranks then disagree.)
 */
int test_iter_no_loop(void)
{
	static const char *const cases[] = {"--steps 0", "--steps 0 --kb 65536"};
	for (int k = 0; k < 2; k++) {
		char *dir = tmpdir(), t[PATH_MAX], out[PATH_MAX], cmd[8192];
		snprintf(t, sizeof t, "%s/t", dir);
		snprintf(out, sizeof out, "%s/out", dir);
		snprintf(cmd, sizeof cmd, "%s %s/../tests/py/sockstep.py %s", IT_PY, tbuild(""), cases[k]);
		CHECK(it_ranks(cmd, t, NULL, out, 3, NULL) == 0, "%s: the job failed", cases[k]);
		const char *what = cases[k];
		json_t *rep = treport(t, NULL);
		CHECK(rep, "%s: no report", what);
		fprintf(stderr, "    %s: %s, %lld iterations\n", what, it_str(rep, "job.iteration_status"),
		        (long long)json_integer_value(tjget(rep, "job.iterations")));
		CHECK(!strcmp(it_str(rep, "job.iteration_status"), "none") &&
		      !strcmp(it_str(rep, "job.iteration_method"), "none") &&
		      json_integer_value(tjget(rep, "job.iterations")) == 0 &&
		      json_is_null(tjget(rep, "job.iteration_mean_s")),
		      "%s: %s by %s, %lld iterations", what, it_str(rep, "job.iteration_status"),
		      it_str(rep, "job.iteration_method"),
		      (long long)json_integer_value(tjget(rep, "job.iterations")));
		json_decref(rep);
		char *argv[] = {(char *)tbuild("bin/ddlprof-report"), t, NULL};
		struct ddl_run_result r;
		CHECK(trun(argv, NULL, 60, &r) == 0 && strstr(r.out, "Iterations: no iterations found") &&
		      !strstr(r.out, "per rank after warm-up"), "%s: the text says: %s", what, r.out);
		trun_free(&r);
		trm(dir);
		free(dir);
	}
	return DDL_PASS;
}

/*
 * Ranks that disagree are named, and the job gets no count: tcpring's
 * rank 2 profiled with --trace file (no socket calls recorded: it finds
 * none while the others find their steps).
 */
int test_iter_disagree(void)
{
	char *dir = tmpdir(), t[PATH_MAX], out[PATH_MAX], cmd[4200];
	snprintf(t, sizeof t, "%s/t", dir);
	snprintf(out, sizeof out, "%s/out", dir);
	snprintf(cmd, sizeof cmd, "%s -p %d -n 20", tbuild("examples/tcpring"), tfreeports(4));
	const char *flags[4] = {NULL, NULL, "--trace file", NULL};
	CHECK(it_ranks(cmd, t, flags, out, 4, NULL) == 0, "tcpring's ranks failed");
	json_t *rep = treport(t, NULL);
	CHECK(rep, "no report");
	json_t *dis = tjget(rep, "job.iteration_disagreeing_ranks");
	CHECK(!strcmp(it_str(rep, "job.iteration_status"), "disagree") && json_array_size(dis) == 1 &&
	      json_integer_value(json_array_get(dis, 0)) == 2,
	      "status %s, disagreeing %s", it_str(rep, "job.iteration_status"), json_dumps(dis, 0));
	CHECK(json_is_true(json_object_get(it_rank(rep, 2), "iteration_disagrees")) &&
	      json_is_false(json_object_get(it_rank(rep, 0), "iteration_disagrees")),
	      "ranks[].iteration_disagrees");
	json_decref(rep);
	char *argv[] = {(char *)tbuild("bin/ddlprof-report"), t, NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 60, &r) == 0 &&
	      strstr(r.out, "the ranks disagree, so the job has no count") &&
	      strstr(r.out, "rank 2: none found, where the ranks' median is 20 of") &&
	      !strstr(r.out, "per rank after warm-up"), "the text says: %s", r.out);
	trun_free(&r);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* ---- synthetic traces: the socket method without a machine's noise ---- */

static uint64_t it_rng = 1;

static uint32_t it_rand(void)
{
	it_rng = it_rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(it_rng >> 33);
}

/* Appends chunk TYPE with N bytes of P behind its checked header to F. */
static int it_chunk(FILE *f, unsigned type, const void *p, size_t n)
{
	struct ddl_chunk c = ddl_chunk_make(type, 0, p, (uint32_t)n, (uint32_t)n);
	return fwrite(&c, sizeof c, 1, f) == 1 && fwrite(p, 1, n, f) == n ? 0 : -1;
}

/*
 * Rank RANK of WORLD of a ring job into DIR: STEPS steps of COMPUTE_MS of
 * compute (a little jitter), each then 2 (WORLD - 1) exchanges of 256 KiB
 * each way, which the "kernel" splits into 1 to 4 sends and 1 to 8
 * receives with polls between, in an order of its own each time; a
 * connect before the first. Its steps' mean in *MEAN. 0 or -1.
 */
static int it_synthetic(const char *dir, int rank, int world, int steps, double compute_ms,
                        double *mean)
{
	struct ddl_file_header h = {.ident = "DDL", .byte_order = DDL_BYTE_ORDER_MAGIC,
	                            .version = DDL_FORMAT_VERSION, .min_reader = 1,
	                            .header_size = sizeof h, .features = DDL_FEAT_SOCKET,
	                            .pid = 500 + (uint32_t)rank, .ppid = 1, .rank = rank,
	                            .world_size = world, .local_rank = rank,
	                            .clock_source = DDL_CLOCK_MONOTONIC, .tick_hz = 1000000000,
	                            .start_ticks = 1000000000, .start_mono_ns = 1000000000,
	                            .start_real_ns = 1767225600000000000, .host = "synth",
	                            .run_id = "synthetic-1"};
	h.ident[3] = 'T';
	h.hcrc = ddl_crc32c(&h, offsetof(struct ddl_file_header, hcrc));
	size_t cap = (size_t)steps * (size_t)(2 * (world - 1)) * 26 + 16, n = 0;
	struct ddl_event *ev = calloc(cap, sizeof *ev);
	if (!ev)
		return -1;
	unsigned char str[256];
	size_t ns = 0;
	const char *texts[3] = {"train", "10.0.0.1:29500", "10.0.0.2:41000"};
	struct ddl_strrec recs[3] = {{0, DDL_STR_THREAD, 5, h.pid},
	                             {1, DDL_STR_PEER, 14, DDL_PEERF_LOCAL | 2u << 8},
	                             {2, DDL_STR_PEER, 14, DDL_PEERF_LOCAL | 2u << 8}};
	for (int k = 0; k < 3; k++) {
		memcpy(str + ns, &recs[k], sizeof recs[k]);
		memcpy(str + ns + sizeof recs[k], texts[k], recs[k].len);
		ns += sizeof recs[k] + recs[k].len;
	}
	uint64_t now = h.start_ticks + 1000000;
	ev[n++] = (struct ddl_event){.start = now, .dur = 50000, .kind = DDL_EV_CONNECT, .fd = 4,
	                             .peer = 1};
	now += 60000;
	double sum = 0;
	for (int s = 0; s < steps; s++) {
		uint64_t t0 = now;
		now += (uint64_t)(compute_ms * 1e6) + it_rand() % 500000;
		for (int x = 0; x < 2 * (world - 1); x++) {
			int64_t left[2] = {262144, 262144};
			while (left[0] > 0 || left[1] > 0) {
				ev[n++] = (struct ddl_event){.start = now, .dur = 2000 + it_rand() % 40000,
				                             .kind = DDL_EV_POLL, .flags = DDL_EVF_SOCKWAIT,
				                             .result = 1, .fd = 2};
				now += ev[n - 1].dur + 400 + it_rand() % 400;
				int d = left[0] > 0 && (left[1] <= 0 || it_rand() % 2) ? 0 : 1;
				int64_t k = d ? 32768 * (1 + it_rand() % 8) : 65536 * (1 + it_rand() % 4);
				k = k < left[d] ? k : left[d];
				left[d] -= k;
				ev[n++] = (struct ddl_event){.start = now, .dur = 5000 + it_rand() % 60000,
				                             .kind = d ? DDL_EV_RECV : DDL_EV_SEND, .result = k,
				                             .fd = d ? 5 : 4, .peer = d ? 2u : 1u};
				now += ev[n - 1].dur + 300 + it_rand() % 300;
			}
		}
		sum += (double)(now - t0) / 1e9;
	}
	*mean = sum / steps;
	struct ddl_clock_sample cs = {now + 1000, (int64_t)(now + 1000),
	                              h.start_real_ns + (int64_t)(now + 1000 - h.start_ticks)};
	struct ddl_end end = {n, 0, DDL_END_EXIT, 0};
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/synth.%u.ddlt", dir, h.pid);
	FILE *f = fopen(path, "wb");
	int rc = f && fwrite(&h, sizeof h, 1, f) == 1 && !it_chunk(f, DDL_CHUNK_STRINGS, str, ns) &&
	                 !it_chunk(f, DDL_CHUNK_EVENTS, ev, n * sizeof *ev) &&
	                 !it_chunk(f, DDL_CHUNK_CLOCK, &cs, sizeof cs) &&
	                 !it_chunk(f, DDL_CHUNK_END, &end, sizeof end)
	             ? 0 : -1;
	if (f && fclose(f))
		rc = -1;
	free(ev);
	return rc;
}

/*
 * Synthetic ring jobs: four ranks of 30 steps are found whole, every step
 * (its compute seen after the connect), the mean exact to 0.5%; a fifth
 * rank whose steps take twice as long (another job under the same run id)
 * disagrees, and is named.
 */
int test_iter_synthetic(void)
{
	for (int odd = 0; odd < 2; odd++) {
		char *dir = tmpdir();
		int world = odd ? 5 : 4;
		double mean[5];
		for (int r = 0; r < world; r++)
			CHECK(it_synthetic(dir, r, world, 30, r == 4 ? 60 : 20, &mean[r]) == 0, "writing rank %d", r);
		json_t *rep = treport(dir, NULL);
		CHECK(rep, "no report");
		for (int r = 0; r < world; r++) {
			json_t *rk = it_rank(rep, r);
			long it = (long)json_integer_value(json_object_get(rk, "iterations"));
			double m = json_real_value(json_object_get(rk, "iteration_mean_s"));
			fprintf(stderr, "    %d ranks: rank %d: %ld iterations, %.3f ms, planned %.3f ms\n", world, r,
			        it, m * 1e3, mean[r] * 1e3);
			if (r == 4)
				continue;
			CHECK(it == 30 - IT_WARMUP && fabs(m - mean[r]) <= 0.005 * mean[r],
			      "rank %d: %ld iterations of %.3f ms, planned 25 of %.3f ms", r, it, m * 1e3,
			      mean[r] * 1e3);
		}
		json_t *dis = tjget(rep, "job.iteration_disagreeing_ranks");
		CHECK(!strcmp(it_str(rep, "job.iteration_status"), odd ? "disagree" : "found") &&
		      json_array_size(dis) == (size_t)odd &&
		      (!odd || json_integer_value(json_array_get(dis, 0)) == 4),
		      "%d ranks: status %s, disagreeing %s", world, it_str(rep, "job.iteration_status"),
		      json_dumps(dis, 0));
		json_decref(rep);
		trm(dir);
		free(dir);
	}
	return DDL_PASS;
}

/*
 * The autocorrelation the socket period is found in (ddl_autocorr, a
 * transform of the series as half as many complex values) against its
 * definition summed directly: series of 2 to 8,192 values, flat, noise,
 * pulses of a period that is no whole number of values, and a ramp; every
 * lag of the first quarter (those the period is looked for in) within
 * 1e-9, the rest within what their few pairs allow; and a series
 * equal to its mean all 0.
 */
int test_iter_autocorr(void)
{
	unsigned seed = 3;
	for (size_t n = 2; n <= 8192; n *= 2)
		for (int shape = 0; shape < 4; shape++) {
			double *x = malloc(n * sizeof *x), *r = malloc(n * sizeof *r);
			CHECK(x && r, "malloc");
			for (size_t i = 0; i < n; i++)
				x[i] = shape == 0   ? 2.5
				       : shape == 1 ? (double)(rand_r(&seed) % 1000) / 100
				       : shape == 2 ? (fmod((double)i, 7.3) < 1.5 ? 4.0 : 0.1)
				                    : (double)i / (double)n;
			CHECK(ddl_autocorr(x, n, r) == 0, "n %zu: without memory", n);
			double m = 0, c0 = 0;
			for (size_t i = 0; i < n; i++)
				m += x[i];
			m /= (double)n;
			for (size_t i = 0; i < n; i++)
				c0 += (x[i] - m) * (x[i] - m);
			for (size_t l = 0; l < n; l++) {
				double c = 0;
				for (size_t i = 0; i + l < n; i++)
					c += (x[i] - m) * (x[i + l] - m);
				double want = c0 > 0 ? c / c0 * (double)n / (double)(n - l) : 0;
				double tol = l < n / 4 ? 1e-9 : 1e-9 * (double)n;
				CHECK(fabs(r[l] - want) <= tol * (1 + fabs(want)),
				      "n %zu, shape %d, lag %zu: %.15g, by its definition %.15g", n, shape, l, r[l], want);
			}
			if (shape == 0)
				for (size_t l = 0; l < n; l++)
					CHECK(r[l] == 0, "n %zu: a flat series' lag %zu is %g", n, l, r[l]);
			free(x);
			free(r);
		}
	return DDL_PASS;
}
