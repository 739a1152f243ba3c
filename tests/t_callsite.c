/*
 * Call sites and counters: ddlprof --backtrace and --papi, end to end.
 * tests/progs/callsite has one known stall (main blocks in recv inside
 * wait_for_peer while its peer thread takes 10 ms to reply), an idle wait
 * and a helper thread that spends the whole run in recv without stalling
 * anyone; the report must rank wait_for_peer first, named from the
 * program's own symbol table. Without --backtrace nothing of it may be in
 * the trace; with it the programs must behave exactly as without. --papi
 * must give real per-iteration values for a software counter and name a
 * counter the machine refuses rather than print zeros for it.
 */
#include <dlfcn.h>
#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"
#include "trace_read.h"

/* Runs PROG (tests/progs or examples) under ddlprof with OPTS into DIR/t. */
static int ddl_cs_run(const char *dir, const char *prog, char *const opts[], char *const args[],
                      struct ddl_run_result *r)
{
	char t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	char *argv[32] = {(char *)tbuild("bin/ddlprof"), "-o", t};
	int n = 3;
	for (int i = 0; opts && opts[i] && n < 16; i++)
		argv[n++] = opts[i];
	argv[n++] = "--";
	argv[n++] = (char *)tbuild(prog);
	for (int i = 0; args && args[i] && n < 30; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return trun(argv, NULL, 60, r);
}

/* Whether a frame list holds FUNCTION, in a module whose path ends in MODULE. */
static int ddl_cs_has(json_t *frames, const char *function, const char *module, size_t max)
{
	size_t i;
	json_t *fr;
	json_array_foreach(frames, i, fr) {
		if (i >= max)
			break;
		const char *fn = json_string_value(json_object_get(fr, "function"));
		const char *mod = json_string_value(json_object_get(fr, "module"));
		size_t lm = mod ? strlen(mod) : 0, l = strlen(module);
		if (fn && !strcmp(fn, function) && lm >= l && !strcmp(mod + lm - l, module))
			return 1;
	}
	return 0;
}

/* The first call site whose frames name FUNCTION, or NULL. */
static json_t *ddl_cs_find(json_t *rep, const char *function)
{
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(rep, "callsites"), i, c)
		if (ddl_cs_has(json_object_get(c, "frames"), function, "", 64))
			return c;
	return NULL;
}

/*
 * The stall is ranked where it is: wait_for_peer's recv first, symbolised
 * from the program's .symtab; the heartbeat thread's recv takes longer but
 * stalls nothing; and the call sites' stall adds up to the breakdown's.
 */
/*
 * A module the trace names, replaced by a FIFO before the report (as a
 * crafted trace could name one): the report must not wait on it.
 */
int test_callsite_module_fifo(void)
{
	char *dir = tmpdir(), t[PATH_MAX], prog[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	snprintf(prog, sizeof prog, "%s/callsite", dir);
	FILE *in = fopen(tbuild("tests/progs/callsite"), "rb"), *out = fopen(prog, "wb");
	CHECK(in && out, "cannot copy the program");
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, in)) > 0)
		CHECK(fwrite(buf, 1, n, out) == n, "copy");
	fclose(in);
	CHECK(fclose(out) == 0 && chmod(prog, 0755) == 0, "copy");
	char *argv[] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", t, "--backtrace", "8", "--", prog, "5", NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 60, &r) == 0 && r.status == 0, "callsite: status %#x %s", r.status, r.err);
	trun_free(&r);
	CHECK(unlink(prog) == 0 && mkfifo(prog, 0600) == 0, "mkfifo: %s", strerror(errno));
	char *rep[] = {(char *)tbuild("bin/ddlprof-report"), "--json", t, NULL};
	double t0 = tnow();
	int rc = trun(rep, NULL, 20, &r);
	double took = tnow() - t0;
	fprintf(stderr, "    report with the program's file a FIFO: %.2f s\n", took);
	CHECK(rc == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "the report did not finish as it should: %s", r.err);
	trun_free(&r);
	CHECK(took < 5, "the report took %.1f s", took);
	return DDL_PASS;
}

int test_callsite_top_stall(void)
{
	char *dir = tmpdir(), t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	struct ddl_run_result r;
	char *opts[] = {"-q", "--backtrace", "8", NULL}, *args[] = {"30", NULL};
	CHECK(ddl_cs_run(dir, "tests/progs/callsite", opts, args, &r) == 0 && r.status == 0,
	      "callsite under --backtrace: status %#x, stderr %s", r.status, r.err);
	trun_free(&r);
	int st;
	json_t *rep = treport(t, &st);
	CHECK(rep && st == 0, "report status %d", st);
	json_t *bt = json_object_get(json_object_get(rep, "job"), "backtrace");
	CHECK(json_integer_value(json_object_get(bt, "depth")) == 8, "job.backtrace.depth");
	json_t *top = json_array_get(json_object_get(rep, "callsites"), 0);
	CHECK(top, "no call sites in the report");
	json_t *frames = json_object_get(top, "frames");
	CHECK(ddl_cs_has(frames, "wait_for_peer", "/tests/progs/callsite", 1),
	      "the top call site does not start in wait_for_peer of the program: %s",
	      json_dumps(frames, JSON_COMPACT));
	CHECK(ddl_cs_has(frames, "main", "/tests/progs/callsite", 8), "main is not among its callers");
	CHECK(!strcmp(json_string_value(json_object_get(top, "call")), "recv"), "top call: %s",
	      json_string_value(json_object_get(top, "call")));
	double stall = json_real_value(json_object_get(top, "stall_s"));
	/* one recv a step, or a few when the reply comes in pieces */
	json_int_t calls = json_integer_value(json_object_get(top, "calls"));
	CHECK(calls >= 30 && calls <= 240, "%lld calls from that site for 30 steps", (long long)calls);
	/* 25 analysed steps of about 10 ms blocked on a local peer */
	CHECK(stall > 0.15 && stall < 0.6, "its stall %.3f s", stall);
	CHECK(json_real_value(json_object_get(top, "interconnect_stall_s")) == stall &&
	      json_real_value(json_object_get(top, "network_stall_s")) == 0,
	      "a socketpair peer is interconnect, not network");
	json_t *beat = ddl_cs_find(rep, "heartbeat_main");
	CHECK(beat, "the heartbeat thread's call site is missing");
	CHECK(json_real_value(json_object_get(beat, "time_s")) > stall &&
	      json_real_value(json_object_get(beat, "stall_s")) == 0,
	      "heartbeat: time %.3f stall %.3f (more time than the top site, no stall)",
	      json_real_value(json_object_get(beat, "time_s")), json_real_value(json_object_get(beat, "stall_s")));
	json_t *idle = ddl_cs_find(rep, "idle_wait");
	CHECK(idle && json_real_value(json_object_get(idle, "stall_s")) < stall / 20,
	      "idle_wait's poll is idle time, not stall");
	/* every blocked call of the training thread has a stack: the sites add up */
	double sum = 0;
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(rep, "callsites"), i, c)
		sum += json_real_value(json_object_get(c, "stall_s"));
	json_t *rk = json_array_get(json_object_get(rep, "ranks"), 0);
	json_t *bd = json_object_get(rk, "breakdown_s");
	double want = (json_real_value(json_object_get(bd, "interconnect_stall")) +
	               json_real_value(json_object_get(bd, "network_stall"))) *
	              (double)json_integer_value(json_object_get(rk, "iterations"));
	CHECK(sum > want * 0.99 - 1e-4 && sum < want * 1.01 + 1e-4,
	      "call sites' stall %.4f s against the breakdown's %.4f s", sum, want);
	json_decref(rep);
	char *a2[] = {(char *)tbuild("bin/ddlprof-report"), t, NULL};
	CHECK(trun(a2, NULL, 30, &r) == 0 && r.status == 0, "text report");
	CHECK(strstr(r.out, "Top call sites by stall time") && strstr(r.out, "wait_for_peer (callsite+0x"),
	      "text report: %s", r.out);
	trun_free(&r);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* Counts stack records and flagged events in every trace of DIR; -1 if unreadable. */
static int ddl_cs_count(const char *dir, long *records, long *flagged, long *paired, long *strings)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	*records = *flagged = *paired = *strings = 0;
	struct dirent *e;
	int files = 0;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 6 || strcmp(e->d_name + l - 5, ".ddlt"))
			continue;
		char path[PATH_MAX], err[512];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		struct ddl_trace t;
		if (ddl_trace_read(path, &t, err, sizeof err) < 0) {
			fprintf(stderr, "    %s\n", err);
			closedir(d);
			return -1;
		}
		files++;
		for (size_t i = 0; i < t.nev; i++) {
			*records += t.ev[i].kind == DDL_EV_STACK;
			if ((t.ev[i].flags & DDL_EVF_STACK) && ddl_event_class(t.ev[i].kind) != DDL_CLASS_ARGS) {
				(*flagged)++;
				uint32_t id = ddl_event_stack(&t, i);
				*paired += id && id < t.nstacks && t.stacks[id].text;
			}
		}
		for (size_t i = 0; i < t.nstacks; i++)
			*strings += t.stacks[i].text != NULL;
		ddl_trace_free(&t);
	}
	closedir(d);
	return files;
}

/*
 * Without --backtrace the trace holds no stack at all (the default path
 * records exactly what it did before); with it, every stack record follows
 * a flagged event and names an interned stack.
 */
int test_callsite_off_no_stacks(void)
{
	char *dir = tmpdir(), t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	struct ddl_run_result r;
	char *opts[] = {"-q", NULL}, *args[] = {"8", NULL};
	CHECK(ddl_cs_run(dir, "tests/progs/callsite", opts, args, &r) == 0 && r.status == 0,
	      "callsite: status %#x", r.status);
	trun_free(&r);
	long rec, flag, paired, strs;
	CHECK(ddl_cs_count(t, &rec, &flag, &paired, &strs) == 1, "one trace");
	CHECK(rec == 0 && flag == 0 && strs == 0,
	      "without --backtrace: %ld stack records, %ld flagged events, %ld stacks", rec, flag, strs);
	int st;
	json_t *rep = treport(t, &st);
	CHECK(rep && st == 0, "report");
	CHECK(json_array_size(json_object_get(rep, "callsites")) == 0 &&
	      json_is_null(json_object_get(json_object_get(rep, "job"), "backtrace")),
	      "callsites without --backtrace");
	json_decref(rep);
	trm(t);

	char *opts2[] = {"-q", "--backtrace", "4", NULL};
	CHECK(ddl_cs_run(dir, "tests/progs/callsite", opts2, args, &r) == 0 && r.status == 0,
	      "callsite --backtrace 4: status %#x", r.status);
	trun_free(&r);
	CHECK(ddl_cs_count(t, &rec, &flag, &paired, &strs) == 1, "one trace");
	/* 8 steps: main's poll, send and recv; the peer's poll, recv and send;
	 * the heartbeat's recv: 6 x 8 + 1 calls at least */
	CHECK(flag >= 49 && rec == flag && paired == flag && strs >= 7 && strs <= 12,
	      "with --backtrace: %ld records for %ld flagged events (%ld paired), %ld stacks", rec, flag,
	      paired, strs);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* Runs PROG plain and under ddlprof OPTS; stdout and status must match, stderr be empty. */
static int ddl_cs_same(const char *prog, char *const opts[], char *const args[])
{
	char *dir = tmpdir(), expect[PATH_MAX], env0[PATH_MAX + 16];
	snprintf(expect, sizeof expect, "%s/expect", dir);
	snprintf(env0, sizeof env0, "DDLT_EXPECT=%s", expect);
	char *argv[16] = {(char *)tbuild(prog)};
	int n = 1;
	for (int i = 0; args && args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	struct ddl_run_result plain, prof;
	char *env[] = {env0, NULL};
	CHECK(trun(argv, env, 60, &plain) == 0, "%s did not finish", prog);
	CHECK(ddl_cs_run(dir, prog, opts, args, &prof) == 0, "%s did not finish under ddlprof", prog);
	CHECK(plain.status == prof.status, "%s: status %#x without, %#x with", prog, plain.status,
	      prof.status);
	CHECK(plain.nout == prof.nout && !memcmp(plain.out, prof.out, plain.nout),
	      "%s: stdout differs:\n--- without\n%s--- with\n%s", prog, plain.out, prof.out);
	CHECK(prof.nerr == 0, "%s: ddlprof printed on stderr: %s", prog, prof.err);
	char t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	int st;
	json_t *rep = treport(t, &st);
	CHECK(rep && st == 0, "%s: report status %d", prog, st);
	CHECK(json_is_false(json_object_get(rep, "truncated")), "%s: truncated", prog);
	CHECK(json_integer_value(json_object_get(json_object_get(json_object_get(rep, "job"), "backtrace"),
	                                         "stacks")) > 0, "%s: no stacks", prog);
	json_decref(rep);
	trun_free(&plain);
	trun_free(&prof);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * Programs behave as without the profiler under --backtrace: output and
 * status, with signals and EINTR (eintr), fork and exec (forkexec), many
 * threads (threads), every socket call and wait (tcp_mix).
 */
int test_callsite_transparent(void)
{
	char *deep[] = {"-q", "--backtrace", "32", NULL}, *some[] = {"-q", "--backtrace", "8", NULL};
	char *steps[] = {"10", NULL};
	const char *progs[] = {"tests/progs/eintr", "tests/progs/forkexec", "tests/progs/threads",
	                       "tests/progs/tcp_mix"};
	if (ddl_cs_same("tests/progs/callsite", some, steps) != DDL_PASS)
		return DDL_FAIL;
	for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++)
		if (ddl_cs_same(progs[i], i % 2 ? some : deep, NULL) != DDL_PASS)
			return DDL_FAIL;
	return DDL_PASS;
}

/* tcpring: its stall is in the ring's exchange (poll, send and recv). */
int test_callsite_tcpring(void)
{
	char *dir = tmpdir(), t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	struct ddl_run_result r;
	char *opts[] = {"-q", "--backtrace", "8", NULL};
	char *args[] = {"-n", "12", "-m", "2", "-c", "5", "-k", "-p", NULL, NULL};
	char port[16];
	snprintf(port, sizeof port, "%d", tfreeports(12));
	args[8] = port;
	CHECK(ddl_cs_run(dir, "examples/tcpring", opts, args, &r) == 0 && r.status == 0,
	      "tcpring: status %#x; stderr %s", r.status, r.err);
	trun_free(&r);
	int st;
	json_t *rep = treport(t, &st);
	CHECK(rep && st == 0, "report");
	json_t *top = json_array_get(json_object_get(rep, "callsites"), 0);
	json_t *frames = json_object_get(top, "frames");
	CHECK(top && json_real_value(json_object_get(top, "stall_s")) > 0, "no stall at any call site");
	CHECK(ddl_cs_has(frames, "exchange", "/examples/tcpring", 1) ||
	      ddl_cs_has(frames, "ring_allreduce", "/examples/tcpring", 1),
	      "top call site: %s", json_dumps(frames, JSON_COMPACT));
	json_decref(rep);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* Whether this machine has a libpapi the library can load. */
static int ddl_have_papi(void)
{
	static const char *const libs[] = {"libpapi.so.7.2", "libpapi.so.7.1", "libpapi.so.7.0",
	                                   "libpapi.so.6.0", "libpapi.so.5", "libpapi.so"};
	for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
		void *h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
		if (h) {
			dlclose(h);
			return 1;
		}
	}
	return 0;
}

/* Whether the report's counters CTR say PAPI's component of the counters
 * asked for is disabled on this machine: none counted, one refused so. */
static int ddl_papi_disabled(json_t *ctr)
{
	json_t *x;
	size_t i;
	if (!json_is_string(json_object_get(ctr, "error")))
		return 0;
	json_array_foreach(json_object_get(ctr, "unavailable"), i, x) {
		const char *why = json_string_value(json_object_get(x, "error"));
		if (why && strstr(why, "Component containing event is disabled"))
			return 1;
	}
	return 0;
}

/*
 * --papi: a software counter (task clock) gives the main thread's CPU time
 * per step, about its 3 ms of compute; a hardware one this machine does not
 * expose is named as not available, on stderr once (by the launcher) and in
 * the report, never reported as 0. Where the machine does count it, it
 * must be a real figure instead.
 */
int test_callsite_papi(void)
{
	if (!ddl_have_papi()) {
		fprintf(stderr, "    no libpapi here\n");
		return DDL_SKIP;
	}
	char *dir = tmpdir(), t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	struct ddl_run_result r;
	char *opts[] = {"--papi", "perf::TASK-CLOCK,PAPI_TOT_CYC", NULL}, *args[] = {"30", NULL};
	CHECK(ddl_cs_run(dir, "tests/progs/callsite", opts, args, &r) == 0 && r.status == 0,
	      "callsite --papi: status %#x, stderr %s", r.status, r.err);
	int st;
	json_t *rep = treport(t, &st);
	CHECK(rep && st == 0, "report");
	json_t *p = json_array_get(json_object_get(rep, "processes"), 0);
	json_t *ctr = json_object_get(p, "counters");
	if (ddl_papi_disabled(ctr)) {
		/* PAPI's perf_event component, which has both counters, is off on
		 * this machine (a VM without a PMU): nothing to count, but each
		 * counter is named as refused with PAPI's reason */
		json_t *x;
		size_t i, named = 0;
		json_array_foreach(json_object_get(ctr, "unavailable"), i, x)
			named += strstr(json_string_value(json_object_get(x, "error")), "error -") != NULL;
		CHECK(named == 2 && json_array_size(json_object_get(ctr, "counted")) == 0,
		      "counters refused without their reasons: %s", json_dumps(ctr, JSON_COMPACT));
		fprintf(stderr, "    PAPI's perf_event component is disabled here: %s\n",
		        json_dumps(ctr, JSON_COMPACT));
		json_decref(rep);
		trun_free(&r);
		trm(dir);
		free(dir);
		return DDL_SKIP;
	}
	CHECK(json_is_object(ctr) && json_is_null(json_object_get(ctr, "error")), "counters: %s",
	      json_dumps(ctr, JSON_COMPACT));
	json_t *th = NULL, *x;
	size_t i;
	json_array_foreach(json_object_get(ctr, "threads"), i, x)
		if (json_integer_value(json_object_get(x, "iterations")) > 0)
			th = x;
	CHECK(th && json_integer_value(json_object_get(th, "iterations")) >= 20,
	      "no thread with counted iterations: %s", json_dumps(ctr, JSON_COMPACT));
	json_t *per = json_object_get(th, "per_iteration");
	double clk = json_real_value(json_object_get(per, "perf::TASK-CLOCK"));
	CHECK(clk > 1.5e6 && clk < 20e6, "task clock %.0f ns per step for 3 ms of compute", clk);
	int refused = 0;
	json_array_foreach(json_object_get(ctr, "unavailable"), i, x)
		if (!strcmp(json_string_value(json_object_get(x, "name")), "PAPI_TOT_CYC")) {
			const char *why = json_string_value(json_object_get(x, "error"));
			CHECK(why && strstr(why, "error "), "reason given: %s", why ? why : "none");
			refused = 1;
		}
	if (refused) {
		CHECK(!json_object_get(per, "PAPI_TOT_CYC"), "a refused counter reported as a value");
		CHECK(strstr(r.err, "not available here") && strstr(r.err, "PAPI_TOT_CYC"),
		      "the launcher did not say so: %s", r.err);
		const char *nl = strchr(r.err, '\n');
		CHECK(nl && !nl[1], "one line, not one per process: %s", r.err);
	} else {
		double cyc = json_real_value(json_object_get(per, "PAPI_TOT_CYC"));
		CHECK(cyc > 1e6, "cycles counted here, but %.0f per step", cyc);
	}
	json_decref(rep);
	trun_free(&r);
	char *a2[] = {(char *)tbuild("bin/ddlprof-report"), t, NULL};
	CHECK(trun(a2, NULL, 30, &r) == 0 && r.status == 0, "text report");
	CHECK(strstr(r.out, "Counters (--papi") && strstr(r.out, "perf::TASK-CLOCK") &&
	      (!refused || strstr(r.out, "not available here, not counted: PAPI_TOT_CYC (error")),
	      "text report: %s", r.out);
	trun_free(&r);
	trm(dir);
	free(dir);
	return DDL_PASS;
}
