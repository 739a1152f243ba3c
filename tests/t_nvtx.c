/*
 * NVTX injection (libddlprof/nvtx.c) end to end: tests/nvtx/nvtx_prog, a C
 * program using the NVTX 3 headers as PyTorch does, runs under ddlprof; its
 * "step" ranges must become the report's iterations, every kind of call
 * must appear in --dump under the expected name, and the program must run
 * the same with NVTX recording on, off, or without the profiler. The
 * program is built here with cc, as it needs the CUDA toolkit's headers;
 * without them the tests report themselves skipped.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

/* The CUDA include directory holding nvtx3/, or NULL. */
static const char *ddl_nvtx_include(void)
{
	static char inc[PATH_MAX];
	char h[PATH_MAX + 32];
	const char *home = getenv("CUDA_HOME");
	snprintf(inc, sizeof inc, "%s/include", home && *home ? home : "/usr/local/cuda");
	snprintf(h, sizeof h, "%s/nvtx3/nvToolsExt.h", inc);
	return access(h, R_OK) == 0 ? inc : NULL;
}

/* A source file of tests/nvtx: beside the build directory, or from the cwd. */
static const char *ddl_nvtx_src(const char *name, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s%s", tbuild("../tests/nvtx/"), name);
	if (access(buf, R_OK) != 0)
		snprintf(buf, cap, "tests/nvtx/%s", name);
	return buf;
}

static int ddl_newer(const char *a, const char *b)
{
	struct stat sa, sb;
	return stat(a, &sa) != 0 || stat(b, &sb) != 0 || sa.st_mtime >= sb.st_mtime;
}

/*
 * Builds nvtx_prog (and libnvtxlib.so, its second NVTX instance) into
 * BUILD/tests/nvtx when a source is newer. Returns DDL_PASS with the
 * program's path in PROG, DDL_SKIP without the NVTX headers, or DDL_FAIL.
 */
static int ddl_nvtx_build(char *prog, size_t cap)
{
	const char *inc = ddl_nvtx_include();
	if (!inc) {
		fprintf(stderr, "    no nvtx3/nvToolsExt.h under $CUDA_HOME/include: skipped\n");
		return DDL_SKIP;
	}
	char dir[PATH_MAX], lib[PATH_MAX + 32], psrc[PATH_MAX], lsrc[PATH_MAX], I[PATH_MAX + 4];
	char L[PATH_MAX + 4], rpath[PATH_MAX + 16];
	snprintf(dir, sizeof dir, "%s", tbuild("tests/nvtx"));
	mkdir(tbuild("tests"), 0755);
	mkdir(dir, 0755);
	snprintf(lib, sizeof lib, "%s/libnvtxlib.so", dir);
	snprintf(prog, cap, "%s/nvtx_prog", dir);
	ddl_nvtx_src("nvtx_prog.c", psrc, sizeof psrc);
	ddl_nvtx_src("nvtx_lib.c", lsrc, sizeof lsrc);
	snprintf(I, sizeof I, "-I%s", inc);
	snprintf(L, sizeof L, "-L%s", dir);
	snprintf(rpath, sizeof rpath, "-Wl,-rpath,%s", dir);
	struct ddl_run_result r;
	if (ddl_newer(lsrc, lib)) {
		char *cl[] = {"cc", "-std=gnu11", "-O1", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", I,
		              "-o", lib, lsrc, NULL};
		CHECK(trun(cl, NULL, 120, &r) == 0 && r.status == 0, "cc %s: %s", lsrc, r.err);
		trun_free(&r);
	}
	if (ddl_newer(psrc, prog) || ddl_newer(lib, prog)) {
		char *cp[] = {"cc", "-std=gnu11", "-O1", "-Wall", "-Wextra", "-Werror", "-pthread", I, "-o", prog,
		              psrc, L, "-lnvtxlib", rpath, "-ldl", NULL};
		CHECK(trun(cp, NULL, 120, &r) == 0 && r.status == 0, "cc %s: %s", psrc, r.err);
		trun_free(&r);
	}
	return DDL_PASS;
}

/* Runs PROG ARG... under ddlprof -q -o DIR with extra ENV; 0 on a clean run. */
static int ddl_nvtx_profile(const char *dir, char *const env[], const char *trace, char *const args[],
                            struct ddl_run_result *r)
{
	char *argv[16] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", (char *)dir};
	int n = 4;
	if (trace) {
		argv[n++] = "--trace";
		argv[n++] = (char *)trace;
	}
	argv[n++] = "--";
	for (int i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return trun(argv, env, 60, r);
}

/*
 * ddlprof-report --dump DIR; its stdout (caller frees), or NULL, with a
 * message unless QUIET (a run expected to leave no trace).
 */
static char *ddl_nvtx_dump(const char *dir, int quiet)
{
	char *argv[] = {(char *)tbuild("bin/ddlprof-report"), "--dump", (char *)dir, NULL};
	struct ddl_run_result r;
	if (trun(argv, NULL, 60, &r) != 0 || r.status != 0) {
		if (!quiet)
			fprintf(stderr, "    ddlprof-report --dump %s: %s", dir, r.err);
		trun_free(&r);
		return NULL;
	}
	free(r.err);
	return r.out;
}

struct ddl_dump_line {
	long pid, tid;
	char event[64];
	int fd;
	long long result;
	char name[512];
};

static int ddl_dump_parse(const char *line, struct ddl_dump_line *d)
{
	return line[0] != '#' &&
	       sscanf(line, "%*s %ld %ld %*s %63s %d %lld %*s %511[^\n]", &d->pid, &d->tid, d->event,
	              &d->fd, &d->result, d->name) == 6;
}

/* Lines of DUMP with this event (NULL: any) and name (NULL: any). */
static int ddl_dump_count(const char *dump, const char *event, const char *name)
{
	int n = 0;
	for (const char *p = dump; p && *p;) {
		const char *e = strchr(p, '\n');
		char line[1024];
		size_t len = e ? (size_t)(e - p) : strlen(p);
		snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line - 1 ? len : sizeof line - 1), p);
		struct ddl_dump_line d;
		if (ddl_dump_parse(line, &d) && (!event || !strcmp(d.event, event)) &&
		    (!name || !strcmp(d.name, name)))
			n++;
		p = e ? e + 1 : NULL;
	}
	return n;
}

/* The first line of DUMP with this event and name; 0 if none. */
static int ddl_dump_find(const char *dump, const char *event, const char *name, struct ddl_dump_line *out)
{
	for (const char *p = dump; p && *p;) {
		const char *e = strchr(p, '\n');
		char line[1024];
		size_t len = e ? (size_t)(e - p) : strlen(p);
		snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line - 1 ? len : sizeof line - 1), p);
		if (ddl_dump_parse(line, out) && !strcmp(out->event, event) && !strcmp(out->name, name))
			return 1;
		p = e ? e + 1 : NULL;
	}
	return 0;
}

/*
 * 20 "step" ranges of 5 ms, pushed with nvtxRangePushA and nvtxRangePushW
 * in turn and holding nested ranges of their own: the report must find 15
 * iterations (5 warm-up) by the marker method, of 5 ms within 20%.
 */
static int ddl_nvtx_iterations_once(void)
{
	char prog[PATH_MAX];
	int rc = ddl_nvtx_build(prog, sizeof prog);
	if (rc != DDL_PASS)
		return rc;
	char *dir = tmpdir(), t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	char *args[] = {prog, NULL};
	struct ddl_run_result r;
	CHECK(ddl_nvtx_profile(t, NULL, NULL, args, &r) == 0 && r.status == 0 && r.nerr == 0,
	      "nvtx_prog under ddlprof: status %#x, stderr: %s", r.status, r.err);
	trun_free(&r);
	int st;
	json_t *rep = treport(t, &st);
	CHECK(rep && st == 0, "report of the NVTX run");
	json_t *job = json_object_get(rep, "job");
	const char *method = json_string_value(json_object_get(job, "iteration_method"));
	CHECK(method && !strcmp(method, "markers"), "iteration_method %s", method ? method : "(none)");
	json_int_t n = json_integer_value(json_object_get(job, "iterations"));
	double mean = json_real_value(json_object_get(job, "iteration_mean_s"));
	fprintf(stderr, "    %lld iterations from NVTX ranges, mean %.3f ms\n", (long long)n, mean * 1e3);
	CHECK(n == 15, "20 steps less 5 warm-up: %lld", (long long)n);
	CHECK(mean > 0.004 && mean < 0.006, "5 ms steps measured as %.4f s", mean);
	CHECK(json_is_false(json_object_get(rep, "truncated")), "report says truncated");
	json_decref(rep);
	char *a2[] = {(char *)tbuild("bin/ddlprof-report"), "--json", "--warmup", "0", t, NULL};
	CHECK(trun(a2, NULL, 60, &r) == 0, "report --warmup 0");
	rep = json_loads(r.out, 0, NULL);
	CHECK(json_integer_value(json_object_get(json_object_get(rep, "job"), "iterations")) == 20,
	      "--warmup 0 gives all 20");
	json_decref(rep);
	trun_free(&r);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* Measured once more on a miss: on a loaded machine a 5 ms sleep can overshoot
 * by a millisecond. */
int test_nvtx_iterations(void)
{
	int rc = ddl_nvtx_iterations_once();
	if (rc == DDL_FAIL) {
		fprintf(stderr, "    again\n");
		rc = ddl_nvtx_iterations_once();
	}
	return rc;
}

/*
 * Every call the program makes, under its name in --dump: the default
 * domain plain, named domains as "domain:name" (also from the second NVTX
 * instance in libnvtxlib.so, which shares the domain), wide strings as
 * UTF-8, registered strings, attribute structures; start/end ranges paired
 * by their number, one ended on another thread; pops as many as pushes;
 * the thread name in the trace's metadata.
 */
int test_nvtx_names(void)
{
	char prog[PATH_MAX];
	int rc = ddl_nvtx_build(prog, sizeof prog);
	if (rc != DDL_PASS)
		return rc;
	char *dir = tmpdir(), t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	char *args[] = {prog, NULL};
	char *env[] = {"DDLPROF_COMPRESS=0", NULL}; /* to find the metadata in the file */
	struct ddl_run_result r;
	CHECK(ddl_nvtx_profile(t, env, NULL, args, &r) == 0 && r.status == 0, "nvtx_prog: %s", r.err);
	trun_free(&r);
	char *dump = ddl_nvtx_dump(t, 0);
	CHECK(dump, "no dump");
	static const struct {
		const char *event, *name;
		int count;
	} want[] = {
		{"range_push", "step", 20},
		{"range_push", "wide_range_\xc3\xa4", 20},
		{"range_push", "ddltest:registered_load", 20},
		{"range_push", "ddltest:fetch", 20},
		{"range_push", "ex_wide_\xc3\xb6", 20},
		{"range_push", "ddltest:lib_range", 20},
		{"range_push", NULL, 120},
		{"range_pop", NULL, 120},
		{"mark", "begin", 1},
		{"mark", "wide_mark_\xc3\xbc\xe4\xb8\x96", 1},
		{"mark", "wdomain_\xc3\xa9:wide_registered", 20},
		{"mark", "ex_mark", 20},
		{"mark", "lib_mark", 20},
		{"range_start", "async_io", 1},
		{"range_end", "async_io", 1},
		{"range_start", "async_wide", 1},
		{"range_end", "async_wide", 1},
		{"range_start", "ddltest:domain_async", 1},
		{"range_end", "ddltest:domain_async", 1},
		{"range_start", "ex_async", 1},
		{"range_end", "ex_async", 1},
		{"range_start", NULL, 4},
		{"range_end", NULL, 4},
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		int n = ddl_dump_count(dump, want[i].event, want[i].name);
		CHECK(n == want[i].count, "%s %s: %d in the dump, expected %d\n%s", want[i].event,
		      want[i].name ? want[i].name : "(any)", n, want[i].count, dump);
	}
	/* A start/end pair shares its number; async_io ended on another thread. */
	const char *pairs[] = {"async_io", "async_wide", "ddltest:domain_async", "ex_async"};
	for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
		struct ddl_dump_line s, e;
		CHECK(ddl_dump_find(dump, "range_start", pairs[i], &s) &&
		      ddl_dump_find(dump, "range_end", pairs[i], &e), "%s pair", pairs[i]);
		CHECK(s.fd > 0 && s.fd == e.fd, "%s: start number %d, end number %d", pairs[i], s.fd, e.fd);
		if (i == 0 || i == 2)
			CHECK(s.tid != e.tid && s.pid == e.pid, "%s: ended on thread %ld, started on %ld", pairs[i],
			      e.tid, s.tid);
		else
			CHECK(s.tid == e.tid, "%s: ended on thread %ld, started on %ld", pairs[i], e.tid, s.tid);
	}
	free(dump);
	/* nvtxNameOsThreadA: "nvtx_thread.TID=nvtx-main" in the (uncompressed) trace */
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof cmd, "grep -c 'nvtx_thread\\.[0-9]*=nvtx-main' %s/*.ddlt", t);
	char *g[] = {"sh", "-c", cmd, NULL};
	CHECK(trun(g, NULL, 20, &r) == 0 && r.status == 0, "thread name not in the trace: %s", r.err);
	trun_free(&r);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * The program's stdout and status are the same without the profiler, with
 * it, with the nvtx family off (--trace socket: nothing recorded), with
 * the library off (DDLPROF_DISABLE=1), and when NVTX alone loads the
 * library (NVTX_INJECTION64_PATH without LD_PRELOAD), which still records.
 */
int test_nvtx_transparent(void)
{
	char prog[PATH_MAX];
	int rc = ddl_nvtx_build(prog, sizeof prog);
	if (rc != DDL_PASS)
		return rc;
	char *dir = tmpdir(), t[PATH_MAX], envdir[PATH_MAX + 16], envinj[PATH_MAX + 32];
	char *args[] = {prog, NULL};
	struct ddl_run_result plain, r;
	CHECK(trun(args, NULL, 60, &plain) == 0 && WIFEXITED(plain.status) && plain.status == 0,
	      "nvtx_prog without ddlprof: %s", plain.err);
	CHECK(strstr(plain.out, "push returned -2, pop returned -2"), "plain output: %s", plain.out);

	static const struct {
		const char *what, *trace, *env;
		int records;
	} runs[] = {
		{"ddlprof", NULL, NULL, 1},
		{"ddlprof --trace socket", "socket", NULL, 0},
		{"ddlprof --trace socket,nvtx", "socket,nvtx", NULL, 1},
		{"DDLPROF_DISABLE=1", NULL, "DDLPROF_DISABLE=1", 0},
	};
	for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
		snprintf(t, sizeof t, "%s/t%zu", dir, i);
		char *env[] = {(char *)runs[i].env, NULL};
		CHECK(ddl_nvtx_profile(t, env, runs[i].trace, args, &r) == 0, "%s did not finish", runs[i].what);
		CHECK(r.status == plain.status && r.nout == plain.nout && !memcmp(r.out, plain.out, r.nout),
		      "%s: status %#x, stdout '%s'; without ddlprof %#x '%s'", runs[i].what, r.status, r.out,
		      plain.status, plain.out);
		CHECK(r.nerr == 0, "%s printed: %s", runs[i].what, r.err);
		trun_free(&r);
		char *dump = ddl_nvtx_dump(t, !runs[i].records);
		int steps = dump ? ddl_dump_count(dump, "range_push", "step") : 0;
		int marks = dump ? ddl_dump_count(dump, "mark", NULL) + ddl_dump_count(dump, "range_start", NULL)
		                 : 0;
		free(dump);
		CHECK(runs[i].records ? steps == 20 : steps == 0 && marks == 0,
		      "%s: %d step ranges and %d marks/starts recorded", runs[i].what, steps, marks);
	}

	/* NVTX loads the library by itself: no preload, no launcher. */
	snprintf(t, sizeof t, "%s/alone", dir);
	snprintf(envdir, sizeof envdir, "DDLPROF_DIR=%s", t);
	char lib[PATH_MAX];
	CHECK(realpath(tbuild("lib/libddlprof.so"), lib), "library path");
	snprintf(envinj, sizeof envinj, "NVTX_INJECTION64_PATH=%s", lib);
	char *env[] = {envdir, envinj, NULL};
	CHECK(trun(args, env, 60, &r) == 0, "nvtx_prog with NVTX_INJECTION64_PATH only");
	CHECK(r.status == plain.status && r.nout == plain.nout && !memcmp(r.out, plain.out, r.nout) &&
	      r.nerr == 0, "NVTX-loaded library: status %#x, stdout '%s', stderr '%s'", r.status, r.out, r.err);
	trun_free(&r);
	json_t *rep = treport(t, NULL);
	json_t *job = json_object_get(rep, "job");
	const char *method = json_string_value(json_object_get(job, "iteration_method"));
	CHECK(method && !strcmp(method, "markers") && json_integer_value(json_object_get(job, "iterations")) == 15,
	      "NVTX-loaded library: method %s, %lld iterations", method ? method : "(none)",
	      (long long)json_integer_value(json_object_get(job, "iterations")));
	json_decref(rep);
	trun_free(&plain);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * 8 threads at once, each 500 times: a push of one of 50 names they all
 * intern concurrently, a mark, a start/end range, a pop. Every event is in
 * the trace, none dropped, each name exactly as often as pushed.
 */
int test_nvtx_storm(void)
{
	char prog[PATH_MAX];
	int rc = ddl_nvtx_build(prog, sizeof prog);
	if (rc != DDL_PASS)
		return rc;
	char *dir = tmpdir(), t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	char *args[] = {prog, "storm", "8", "500", NULL};
	struct ddl_run_result r;
	CHECK(ddl_nvtx_profile(t, NULL, NULL, args, &r) == 0 && r.status == 0 && r.nerr == 0,
	      "storm: status %#x, stderr: %s", r.status, r.err);
	trun_free(&r);
	char *dump = ddl_nvtx_dump(t, 0);
	CHECK(dump, "no dump");
	CHECK(ddl_dump_count(dump, "range_push", NULL) == 4000, "pushes: %d",
	      ddl_dump_count(dump, "range_push", NULL));
	CHECK(ddl_dump_count(dump, "range_pop", NULL) == 4000, "pops");
	CHECK(ddl_dump_count(dump, "mark", "storm_mark") == 4000, "marks");
	CHECK(ddl_dump_count(dump, "range_start", "storm_async") == 4000, "starts");
	CHECK(ddl_dump_count(dump, "range_end", "storm_async") == 4000, "ends");
	for (int k = 0; k < 50; k++) {
		char name[32];
		snprintf(name, sizeof name, "storm_%d", k);
		int n = ddl_dump_count(dump, "range_push", name);
		CHECK(n == 80, "%s pushed %d times, expected 80", name, n);
	}
	free(dump);
	json_t *rep = treport(t, NULL);
	json_t *p = json_array_get(json_object_get(rep, "processes"), 0);
	CHECK(json_integer_value(json_object_get(p, "events_dropped")) == 0, "events dropped: %lld",
	      (long long)json_integer_value(json_object_get(p, "events_dropped")));
	json_decref(rep);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* A forked child's NVTX ranges are in the child's own trace. */
int test_nvtx_fork(void)
{
	char prog[PATH_MAX];
	int rc = ddl_nvtx_build(prog, sizeof prog);
	if (rc != DDL_PASS)
		return rc;
	char *dir = tmpdir(), t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	char *args[] = {prog, "fork", NULL};
	struct ddl_run_result r;
	CHECK(ddl_nvtx_profile(t, NULL, NULL, args, &r) == 0 && r.status == 0 && r.nerr == 0 &&
	      strstr(r.out, "child exited 0"), "fork: status %#x, stdout %s, stderr: %s", r.status, r.out,
	      r.err);
	trun_free(&r);
	char *dump = ddl_nvtx_dump(t, 0);
	CHECK(dump, "no dump");
	struct ddl_dump_line parent, child;
	CHECK(ddl_dump_find(dump, "range_push", "parent_range", &parent) &&
	      ddl_dump_find(dump, "range_push", "child_step", &child), "ranges missing:\n%s", dump);
	CHECK(parent.pid != child.pid, "child's ranges recorded in the parent's trace");
	CHECK(ddl_dump_count(dump, "range_push", "child_step") == 3 &&
	      ddl_dump_count(dump, "range_push", "parent_range") == 1, "counts:\n%s", dump);
	free(dump);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * The launcher names the library in NVTX_INJECTION64_PATH, unless the user
 * named a tool there already.
 */
int test_nvtx_launcher_env(void)
{
	char *dir = tmpdir(), t[PATH_MAX], lib[PATH_MAX], want[PATH_MAX + 32];
	snprintf(t, sizeof t, "%s/t", dir);
	CHECK(realpath(tbuild("lib/libddlprof.so"), lib), "library path");
	snprintf(want, sizeof want, "\nNVTX_INJECTION64_PATH=%s\n", lib);
	char *args[] = {"env", NULL};
	struct ddl_run_result r;
	CHECK(ddl_nvtx_profile(t, NULL, NULL, args, &r) == 0 && r.status == 0, "env under ddlprof");
	CHECK(strstr(r.out, want), "NVTX_INJECTION64_PATH not set to %s:\n%s", lib, r.out);
	trun_free(&r);
	char *env[] = {"NVTX_INJECTION64_PATH=/opt/othertool/libinject.so", NULL};
	CHECK(ddl_nvtx_profile(t, env, NULL, args, &r) == 0 && r.status == 0, "env under ddlprof");
	CHECK(strstr(r.out, "\nNVTX_INJECTION64_PATH=/opt/othertool/libinject.so\n") && !strstr(r.out, want),
	      "the user's NVTX_INJECTION64_PATH was replaced:\n%s", r.out);
	trun_free(&r);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * A setuid program using NVTX, run by an ordinary user: the loader ignores
 * LD_PRELOAD, but NVTX still dlopens the library named in
 * NVTX_INJECTION64_PATH. The library must stay off there, silently: same
 * stdout, nothing on stderr, no trace.
 */
int test_nvtx_setuid(void)
{
	char prog[PATH_MAX];
	int rc = ddl_nvtx_build(prog, sizeof prog);
	if (rc != DDL_PASS)
		return rc;
	if (geteuid() != 0 || access("/usr/bin/setpriv", X_OK) != 0) {
		fprintf(stderr, "    needs root and setpriv: skipped\n");
		return DDL_SKIP;
	}
	char *dir = tmpdir(), suid[PATH_MAX], out[PATH_MAX], cmd[4 * PATH_MAX];
	chmod(dir, 0755);
	snprintf(suid, sizeof suid, "%s/nvtx_prog", dir);
	snprintf(out, sizeof out, "%s/t", dir);
	mkdir(out, 0700);
	CHECK(chown(out, 65534, 65534) == 0, "chown");
	snprintf(cmd, sizeof cmd, "cp %s %s && chmod 4755 %s", prog, suid, suid);
	CHECK(system(cmd) == 0, "copy the program");
	/* the build tree (the library, libnvtxlib.so) must be reachable by that user */
	snprintf(cmd, sizeof cmd, "test -x %s && test -r %s", tbuild("bin/ddlprof"), tbuild("lib/libddlprof.so"));
	char *probe[] = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh",
	                 "-c", cmd, NULL};
	struct ddl_run_result a, b;
	if (trun(probe, NULL, 30, &a) != 0 || a.status != 0) {
		fprintf(stderr, "    the build tree is not reachable by an ordinary user: skipped\n");
		trun_free(&a);
		trm(dir);
		return DDL_SKIP;
	}
	trun_free(&a);
	char *plain[] = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", suid, NULL};
	char *prof[] = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
	                (char *)tbuild("bin/ddlprof"), "-q", "-o", out, "--", suid, NULL};
	CHECK(trun(plain, NULL, 30, &a) == 0 && trun(prof, NULL, 30, &b) == 0, "runs");
	if (WIFEXITED(b.status) && WEXITSTATUS(b.status) == 125) {
		fprintf(stderr, "    the launcher cannot run as an ordinary user here (%s): skipped\n", b.err);
		trm(dir);
		return DDL_SKIP;
	}
	CHECK(a.status == 0 && a.status == b.status, "status %#x without, %#x with ddlprof: %s", a.status,
	      b.status, b.err);
	CHECK(a.nout == b.nout && !memcmp(a.out, b.out, a.nout), "stdout differs: '%s' / '%s'", a.out, b.out);
	CHECK(b.nerr == 0, "the library spoke in a setuid process: %s", b.err);
	snprintf(cmd, sizeof cmd, "ls %s | grep -q .", out);
	CHECK(system(cmd) != 0, "a trace was written for the setuid process");
	trun_free(&a);
	trun_free(&b);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * torch.cuda.nvtx ranges, where torch has its NVTX bindings (a CUDA build;
 * no GPU needed). Debian's CPU-only torch has none: torch.cuda.nvtx raises
 * "NVTX functions not installed. Are you sure you have a CUDA build?", and
 * the test is skipped. Tries $DDLT_PYTHON, python3 on PATH, /usr/bin/python3.
 */
int test_nvtx_torch(void)
{
	static const char script[] =
		"import sys, time\n"
		"try:\n"
		"    import torch\n"
		"    torch.cuda.nvtx.range_push('probe')\n"
		"    torch.cuda.nvtx.range_pop()\n"
		"except Exception as e:\n"
		"    print('%s: %s' % (sys.executable, e), file=sys.stderr)\n"
		"    sys.exit(77)\n"
		"for i in range(20):\n"
		"    torch.cuda.nvtx.range_push('step')\n"
		"    time.sleep(0.01)\n"
		"    torch.cuda.nvtx.mark('torch_mark')\n"
		"    torch.cuda.nvtx.range_pop()\n"
		"with torch.cuda.nvtx.range('torch_ctx'):\n"
		"    pass\n"
		"print('done')\n";
	const char *py[] = {getenv("DDLT_PYTHON"), "python3", "/usr/bin/python3"};
	char *args[] = {NULL, "-c", (char *)script, NULL};
	struct ddl_run_result r;
	for (size_t i = 0; i < sizeof py / sizeof py[0] && !args[0]; i++) {
		if (!py[i] || !*py[i])
			continue;
		args[0] = (char *)py[i];
		if (trun(args, NULL, 120, &r) != 0 || r.status != 0 || !strstr(r.out, "done")) {
			if (r.nerr)
				fprintf(stderr, "    %s", r.err); /* one line: why this python cannot */
			args[0] = NULL;
		}
		trun_free(&r);
	}
	if (!args[0]) {
		fprintf(stderr, "    no torch with NVTX bindings (a CUDA build): skipped\n");
		return DDL_SKIP;
	}
	char *dir = tmpdir(), t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	CHECK(ddl_nvtx_profile(t, NULL, NULL, args, &r) == 0 && r.status == 0 && strstr(r.out, "done"),
	      "torch script under ddlprof: %s", r.err);
	trun_free(&r);
	json_t *rep = treport(t, NULL);
	json_t *job = json_object_get(rep, "job");
	const char *method = json_string_value(json_object_get(job, "iteration_method"));
	json_int_t n = json_integer_value(json_object_get(job, "iterations"));
	double mean = json_real_value(json_object_get(job, "iteration_mean_s"));
	fprintf(stderr, "    torch.cuda.nvtx (%s): %lld iterations, mean %.2f ms\n", args[0], (long long)n,
	        mean * 1e3);
	CHECK(method && !strcmp(method, "markers") && n == 15, "method %s, %lld iterations",
	      method ? method : "(none)", (long long)n);
	CHECK(mean > 0.009 && mean < 0.015, "10 ms steps measured as %.4f s", mean);
	json_decref(rep);
	char *dump = ddl_nvtx_dump(t, 0);
	CHECK(dump && ddl_dump_count(dump, "mark", "torch_mark") == 20 &&
	      ddl_dump_count(dump, "range_push", "torch_ctx") == 1, "torch names in the dump");
	free(dump);
	trm(dir);
	free(dir);
	return DDL_PASS;
}
