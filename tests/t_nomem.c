/*
 * ddlprof-report short of memory, one allocation at a time: with
 * tests/nomem/failalloc.c preloaded, the Nth allocation its own code
 * makes fails (and, "N+", every one after it), for every N a whole run
 * makes. Whatever fails, the report either comes out exactly as with all
 * its memory (exit 0), or says it is incomplete (exit 4, an INCOMPLETE
 * line or "incomplete": true, "out of memory" on stderr), or stops with a
 * message that memory ran out (exit 1); it never crashes, hangs, nor
 * prints other figures as if they were whole. The traces: a program's
 * sockets and marker iterations with call stacks and counters (--backtrace,
 * --papi); the header of its trace alone (no clock sample: the reader fits
 * its clock on the header's); and, where ddlsynth was built, a two-rank job
 * on the CUDA and NCCL emulation (device intervals, communicators,
 * kernels). The shim is
 * built here with cc; glibc only, and not under AddressSanitizer, whose
 * allocator comes first.
 *
 * report_nomem_each     the report: text, --json, --html, --csv, --chrome and
 *                       --dump, each of which says it is incomplete
 * report_nomem_compare  --compare single=... node=..., text and --json
 */
#include <dirent.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ddlprof/trace.h"
#include "test.h"

/* Builds BUILD/tests/nomem/libfailalloc.so when its source is newer;
 * its path, or NULL (with a message). */
static const char *nm_shim(void)
{
	static char lib[PATH_MAX];
	char src[PATH_MAX];
	snprintf(src, sizeof src, "%s", tbuild("../tests/nomem/failalloc.c"));
	if (access(src, R_OK) != 0)
		snprintf(src, sizeof src, "tests/nomem/failalloc.c");
	snprintf(lib, sizeof lib, "%s", tbuild("tests/nomem/libfailalloc.so"));
	mkdir(tbuild("tests"), 0755);
	mkdir(tbuild("tests/nomem"), 0755);
	struct stat a, b;
	if (stat(lib, &b) == 0 && stat(src, &a) == 0 && b.st_mtime > a.st_mtime)
		return lib;
	char *cc[] = {"cc", "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", "-o", lib,
	              src, NULL};
	struct ddl_run_result r;
	int ok = trun(cc, NULL, 120, &r) == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0;
	if (!ok)
		fprintf(stderr, "    cc %s: %s\n", src, r.err);
	trun_free(&r);
	return ok ? lib : NULL;
}

/* Runs ARGV under ddlprof into DIR; 0 on a clean run. */
static int nm_profile(const char *dir, char *const opts[], char *const argv[])
{
	char *a[32] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", (char *)dir};
	int n = 4;
	for (int i = 0; opts[i] && n < 16; i++)
		a[n++] = opts[i];
	a[n++] = "--";
	for (int i = 0; argv[i] && n < 31; i++)
		a[n++] = argv[i];
	a[n] = NULL;
	struct ddl_run_result r;
	int rc = trun(a, NULL, 120, &r) == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 ? 0 : -1;
	if (rc)
		fprintf(stderr, "    %s under ddlprof: status %#x: %s\n", argv[0], r.status, r.err);
	trun_free(&r);
	return rc;
}

/* DIR/bare/bare.ddlt: the file header of the trace in SOCK, nothing after it. 0 or -1. */
static int nm_bare(const char *dir, const char *sock)
{
	DIR *d = opendir(sock);
	struct dirent *e;
	char from[PATH_MAX + 256] = "", to[PATH_MAX + 16];
	while (d && (e = readdir(d)))
		if (strstr(e->d_name, ".ddlt"))
			snprintf(from, sizeof from, "%s/%s", sock, e->d_name);
	if (d)
		closedir(d);
	struct ddl_file_header h;
	FILE *f = from[0] ? fopen(from, "rb") : NULL;
	int ok = f && fread(&h, sizeof h, 1, f) == 1 && h.header_size >= sizeof h && h.header_size <= 4096;
	unsigned char buf[4096];
	ok = ok && fseek(f, 0, SEEK_SET) == 0 && fread(buf, 1, h.header_size, f) == h.header_size;
	if (f)
		fclose(f);
	snprintf(to, sizeof to, "%s/bare", dir);
	mkdir(to, 0700);
	snprintf(to, sizeof to, "%s/bare/bare.ddlt", dir);
	FILE *o = ok ? fopen(to, "wb") : NULL;
	ok = o && fwrite(buf, 1, h.header_size, o) == h.header_size;
	if (o && fclose(o))
		ok = 0;
	if (!ok)
		fprintf(stderr, "    cannot make %s from %s\n", to, from);
	return ok ? 0 : -1;
}

/*
 * The traces: DIR/sockets, DIR/bare (nm_bare), and DIR/gpu where ddlsynth
 * was built (*GPU set). 0, or -1 with a message.
 */
static int nm_traces(const char *dir, int *gpu)
{
	char t[PATH_MAX];
	snprintf(t, sizeof t, "%s/sockets", dir);
	char *o1[] = {"--backtrace", "8", "--papi", "perf::TASK-CLOCK,PAPI_TOT_INS", NULL};
	char *p1[] = {(char *)tbuild("tests/progs/callsite"), "20", NULL};
	if (nm_profile(t, o1, p1) < 0 || nm_bare(dir, t) < 0)
		return -1;
	const char *synth = tbuild("examples/ddlsynth");
	*gpu = access(synth, X_OK) == 0;
	if (!*gpu)
		return 0;
	snprintf(t, sizeof t, "%s/gpu", dir);
	char *o2[] = {"--kernel-sample", "1", NULL};
	char *p2[] = {(char *)synth, "--ranks", "2", "--ranks-per-host", "1", "--layers", "2",
	              "--params-per-layer", "50k", "--compute-ms", "1", "--bucket-mb", "1",
	              "--iterations", "10", "--markers", "--quiet", NULL};
	return nm_profile(t, o2, p2);
}

struct nm_run {
	const char *what;   /* for messages */
	char *argv[12];     /* ddlprof-report and its arguments */
	int format;         /* NM_TEXT ... */
	char *out;          /* stdout with all its memory */
	int status;         /* and its exit status */
	unsigned long allocs; /* allocations of its own code it made */
	char count[PATH_MAX];
};

/* ARGV with every allocation in place: its output, status and count. 0 or -1. */
static int nm_reference(struct nm_run *x, const char *shim, const char *dir)
{
	char pre[PATH_MAX + 16], cnt[PATH_MAX + 32];
	snprintf(x->count, sizeof x->count, "%s/count", dir);
	snprintf(pre, sizeof pre, "LD_PRELOAD=%s", shim);
	snprintf(cnt, sizeof cnt, "DDLT_ALLOC_COUNT=%s", x->count);
	char *env[] = {pre, cnt, NULL};
	struct ddl_run_result r;
	if (trun(x->argv, env, 60, &r) != 0 || !WIFEXITED(r.status)) {
		fprintf(stderr, "    the report did not finish: %s\n", r.err);
		trun_free(&r);
		return -1;
	}
	x->status = WEXITSTATUS(r.status);
	x->out = r.out;
	r.out = NULL;
	trun_free(&r);
	FILE *f = fopen(x->count, "r");
	int got = f && fscanf(f, "%lu", &x->allocs) == 1;
	if (f)
		fclose(f);
	if (!got || !x->allocs || x->status != 0) {
		fprintf(stderr, "    with all its memory: status %d, %lu allocations counted\n", x->status,
		        x->allocs);
		return -1;
	}
	return 0;
}

enum { NM_TEXT, NM_JSON, NM_HTML, NM_CSV, NM_CHROME, NM_DUMP };

/* Whether OUT says the report is incomplete, in X's format. */
static int nm_says_incomplete(const struct nm_run *x, const char *out)
{
	if (x->format == NM_TEXT)
		return strstr(out, "INCOMPLETE: memory ran out") != NULL;
	if (x->format == NM_HTML)
		return strstr(out, "<b>Incomplete:</b> memory ran out") != NULL;
	if (x->format == NM_DUMP)
		return strstr(out, "\n# INCOMPLETE: memory ran out") != NULL;
	if (x->format == NM_CSV) { /* every row, when there are rows */
		const char *row = strchr(out, '\n');
		int rows = 0, marked = 0;
		for (; row && row[1]; row = strchr(row + 1, '\n')) {
			const char *end = strchr(row + 1, '\n');
			rows++;
			marked += end && end - row >= 2 && !strncmp(end - 2, ",1", 2);
		}
		return strstr(out, ",incomplete\n") && marked == rows;
	}
	json_t *j = json_loads(out, 0, NULL);
	json_t *o = x->format == NM_CHROME ? json_object_get(j, "otherData") : j;
	int said = json_is_true(json_object_get(o, "incomplete"));
	json_decref(j);
	return said;
}

/*
 * X with allocation SPEC failing ("N", or "N+" from N on): as the head
 * comment says, or DDL_FAIL with what happened. *KIND gets its exit
 * status (0, 1 or 4).
 */
static int nm_one(const struct nm_run *x, const char *shim, const char *spec, int *kind)
{
	char pre[PATH_MAX + 16], fail[64];
	snprintf(pre, sizeof pre, "LD_PRELOAD=%s", shim);
	snprintf(fail, sizeof fail, "DDLT_FAIL_ALLOC=%s", spec);
	char *env[] = {pre, fail, NULL};
	struct ddl_run_result r;
	int rc = trun(x->argv, env, 60, &r);
	CHECK(rc == 0, "%s, %s: did not finish: %s", x->what, spec, r.err);
	CHECK(WIFEXITED(r.status), "%s, %s: killed by signal %d: %s", x->what, spec,
	      WIFSIGNALED(r.status) ? WTERMSIG(r.status) : 0, r.err);
	int st = WEXITSTATUS(r.status);
	*kind = st;
	if (st == 0)
		CHECK(r.nout == strlen(x->out) && !memcmp(r.out, x->out, r.nout),
		      "%s, %s: exit 0, but not the report made with all its memory (%zu bytes, not %zu): %s",
		      x->what, spec, r.nout, strlen(x->out), r.err);
	else if (st == 4)
		CHECK(strstr(r.err, "out of memory") && nm_says_incomplete(x, r.out),
		      "%s, %s: exit 4, but the report does not say it is incomplete: %s", x->what, spec,
		      r.err);
	else
		CHECK(st == 1 && (strstr(r.err, "out of memory") || strstr(r.err, "Cannot allocate memory")),
		      "%s, %s: exit %d without saying memory ran out: %s", x->what, spec, st, r.err);
	trun_free(&r);
	return DDL_PASS;
}

/*
 * Every allocation of X failing in turn, and every EVERY-th from there on;
 * how many runs said they were incomplete in *INCOMPLETE.
 */
static int nm_sweep(struct nm_run *x, const char *shim, const char *dir, unsigned long stride,
                    unsigned long every, int *incomplete)
{
	if (nm_reference(x, shim, dir) < 0)
		return DDL_FAIL;
	int n[5] = {0};
	for (unsigned long i = 1; i <= x->allocs; i++) {
		char spec[32];
		int kind;
		if (i % stride == 0 || i == 1) {
			snprintf(spec, sizeof spec, "%lu", i);
			if (nm_one(x, shim, spec, &kind) != DDL_PASS)
				return DDL_FAIL;
			n[kind]++;
		}
		if (i % every == 0) {
			snprintf(spec, sizeof spec, "%lu+", i);
			if (nm_one(x, shim, spec, &kind) != DDL_PASS)
				return DDL_FAIL;
			n[kind]++;
		}
	}
	fprintf(stderr, "    %s: %lu allocations: %d runs as if whole, %d incomplete (exit 4), %d stopped "
	        "(exit 1)\n", x->what, x->allocs, n[0], n[4], n[1]);
	*incomplete += n[4];
	free(x->out);
	x->out = NULL;
	return DDL_PASS;
}

#if defined(__SANITIZE_ADDRESS__) || !defined(__GLIBC__)
#define NM_SKIP 1 /* the shim takes glibc's allocator's place, which ASan has taken */
#else
#define NM_SKIP 0
#endif

int test_report_nomem_each(void)
{
	if (NM_SKIP)
		return DDL_SKIP;
	const char *shim = nm_shim();
	CHECK(shim, "the shim did not build");
	char *dir = tmpdir(), sock[PATH_MAX], gpu[PATH_MAX], bare[PATH_MAX];
	int have_gpu;
	CHECK(nm_traces(dir, &have_gpu) == 0, "no traces made");
	snprintf(sock, sizeof sock, "%s/sockets", dir);
	snprintf(gpu, sizeof gpu, "%s/gpu", dir);
	snprintf(bare, sizeof bare, "%s/bare", dir);
	const char *rep = tbuild("bin/ddlprof-report");
	int incomplete = 0;
	struct nm_run text = {"report of sockets", {(char *)rep, sock, NULL}, NM_TEXT};
	CHECK(nm_sweep(&text, shim, dir, 1, 4, &incomplete) == DDL_PASS, "text report");
	struct nm_run hdr = {"report of a header alone", {(char *)rep, bare, NULL}, NM_TEXT};
	CHECK(nm_sweep(&hdr, shim, dir, 1, 1, &incomplete) == DDL_PASS, "header alone");
	/* --json: jansson's allocations too, so every third */
	struct nm_run json = {"--json report of sockets", {(char *)rep, "--json", sock, NULL}, NM_JSON};
	CHECK(nm_sweep(&json, shim, dir, 3, 16, &incomplete) == DDL_PASS, "--json report");
	/* the other formats, every other allocation: each says so on its own */
	static const struct {
		const char *what, *flag;
		int format;
	} other[] = {{"--html report of sockets", "--html", NM_HTML},
	             {"--csv report of sockets", "--csv", NM_CSV},
	             {"--chrome report of sockets", "--chrome", NM_CHROME},
	             {"--dump of sockets", "--dump", NM_DUMP}};
	for (size_t k = 0; k < sizeof other / sizeof other[0]; k++) {
		struct nm_run o = {other[k].what, {(char *)rep, (char *)other[k].flag, sock, NULL}, other[k].format};
		CHECK(nm_sweep(&o, shim, dir, 2, 16, &incomplete) == DDL_PASS, "%s", other[k].what);
	}
	if (have_gpu) {
		struct nm_run dev = {"report of the GPU job", {(char *)rep, gpu, NULL}, NM_TEXT};
		CHECK(nm_sweep(&dev, shim, dir, 1, 4, &incomplete) == DDL_PASS, "text report, GPU job");
		struct nm_run devh = {"--html report of the GPU job", {(char *)rep, "--html", gpu, NULL}, NM_HTML};
		CHECK(nm_sweep(&devh, shim, dir, 2, 16, &incomplete) == DDL_PASS, "--html report, GPU job");
	} else {
		fprintf(stderr, "    no ddlsynth (no CUDA headers): the GPU job left out\n");
	}
	CHECK(incomplete > 0, "no failure made a report that says it is incomplete");
	trm(dir);
	free(dir);
	return DDL_PASS;
}

int test_report_nomem_compare(void)
{
	if (NM_SKIP)
		return DDL_SKIP;
	const char *shim = nm_shim();
	CHECK(shim, "the shim did not build");
	char *dir = tmpdir(), single[PATH_MAX + 8], node[PATH_MAX + 8];
	int have_gpu;
	CHECK(nm_traces(dir, &have_gpu) == 0, "no traces made");
	snprintf(single, sizeof single, "single=%s/sockets", dir);
	snprintf(node, sizeof node, "node=%s/%s", dir, have_gpu ? "gpu" : "sockets");
	const char *rep = tbuild("bin/ddlprof-report");
	int incomplete = 0;
	struct nm_run text = {"--compare", {(char *)rep, "--compare", single, node, NULL}, NM_TEXT};
	CHECK(nm_sweep(&text, shim, dir, 1, 4, &incomplete) == DDL_PASS, "--compare");
	struct nm_run json = {"--compare --json", {(char *)rep, "--compare", single, node, "--json", NULL},
	                      NM_JSON};
	CHECK(nm_sweep(&json, shim, dir, 3, 16, &incomplete) == DDL_PASS, "--compare --json");
	CHECK(incomplete > 0, "no failure made a comparison that says it is incomplete");
	trm(dir);
	free(dir);
	return DDL_PASS;
}
