/*
 * The fuzzers' seeds and the crashes they found (tests/fuzz/ *_seeds), read
 * in the ordinary build: make check runs this plain and under ASan/UBSan
 * (build-san), so a fixed crash stays fixed without clang or libFuzzer.
 * Traces go through the reader linked in (ddl_trace_read and
 * ddl_trace_stream, and the accessors the report uses) and through
 * ddlprof-report; the loaders the test binary does not link (catalog,
 * profiles, --wait-history, job traces) through their tools:
 * ddlprof-recommend --catalog / --profile / --slurm --wait-history and
 * ddlprof-sim --trace / a trace naming a profile. Each must end with a
 * status, not a signal, and name the file when it refuses one. Seeds are
 * stored as the fuzzers take them: a job seed's first byte picks the
 * format (fuzz_jobs.c), a --slurm seed's first byte the job's shape and
 * "\n%%\n" splits a report from the history (fuzz_slurm.c).
 */
#include <dirent.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "test.h"
#include "trace_read.h"

#define FS_MAX_SEEDS 256

/* The files of tests/fuzz/DIR, sorted, as full paths; their count. */
static int fs_list(const char *dir, char ***out)
{
	char rel[128];
	snprintf(rel, sizeof rel, "../tests/fuzz/%s", dir);
	const char *d = tbuild(rel);
	DIR *dp = opendir(d);
	char **v = calloc(FS_MAX_SEEDS, sizeof *v);
	int n = 0;
	for (struct dirent *e; dp && v && (e = readdir(dp)) && n < FS_MAX_SEEDS;) {
		if (e->d_name[0] == '.')
			continue;
		v[n] = malloc(PATH_MAX);
		snprintf(v[n++], PATH_MAX, "%s/%s", d, e->d_name);
	}
	if (dp)
		closedir(dp);
	for (int i = 1; i < n; i++) /* insertion sort: stable messages */
		for (int k = i; k > 0 && strcmp(v[k - 1], v[k]) > 0; k--) {
			char *x = v[k];
			v[k] = v[k - 1];
			v[k - 1] = x;
		}
	*out = v;
	return n;
}

static void fs_free(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* A tool run ended by itself (no signal, no time-out), and when it failed
 * its messages name FILE. 0, or -1 with the reason printed. */
static int fs_tool_ok(char *const argv[], const char *file, const char *seed)
{
	struct ddl_run_result r;
	int rc = trun(argv, NULL, 60, &r);
	int ok = rc == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) < 128;
	if (!ok)
		fprintf(stderr, "    %s on %s: %s\n", argv[0], seed,
		        rc < 0 ? "did not finish" : WIFSIGNALED(r.status) ? "killed by a signal" : "status >= 128");
	else if (WEXITSTATUS(r.status) != 0 && (!r.err || !strstr(r.err, file))) {
		fprintf(stderr, "    %s on %s: status %d without naming %s:\n%s", argv[0], seed,
		        WEXITSTATUS(r.status), file, r.err ? r.err : "");
		ok = 0;
	}
	trun_free(&r);
	return ok ? 0 : -1;
}

/* Writes N bytes at P to PATH; 0 or -1. */
static int fs_write(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(p, 1, n, f) == n;
	if (f && fclose(f))
		ok = 0;
	return ok ? 0 : -1;
}

/* The whole file at PATH (NUL-terminated); NULL on failure. */
static char *fs_slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t cap = 0;
	*n = 0;
	for (;;) {
		if (*n + 4097 > cap) {
			char *q = realloc(buf, cap = cap * 2 + 8192);
			if (!q)
				break;
			buf = q;
		}
		size_t k = fread(buf + *n, 1, cap - *n - 1, f);
		*n += k;
		if (k == 0)
			break;
	}
	fclose(f);
	if (buf)
		buf[*n] = 0;
	return buf;
}

struct fs_stream {
	uint64_t events;
	int misaligned;
};

static int fs_on_events(void *ctx, const struct ddl_trace *t, const struct ddl_event *ev, size_t n)
{
	struct fs_stream *s = ctx;
	(void)t;
	if (n && (uintptr_t)ev % _Alignof(struct ddl_event))
		s->misaligned = 1;
	for (size_t i = 0; i < n; i++)
		s->events += ev[i].kind != DDL_EV_NONE;
	return 0;
}

/* Reads PATH whole and streamed; the checks every trace passes. */
static int fs_read_trace(const char *path, int *corrupt, int *window)
{
	struct ddl_trace t, ts;
	char err[1024] = "", serr[1024] = "";
	int rc = ddl_trace_read(path, &t, err, sizeof err);
	struct fs_stream s = {0, 0};
	int src = ddl_trace_stream(path, &ts, fs_on_events, &s, serr, sizeof serr);
	size_t k = strlen(path);
	CHECK(rc == src, "%s: read %d, streamed %d", path, rc, src);
	*corrupt = *window = 0;
	if (rc < 0) {
		CHECK(!strncmp(err, path, k) && err[k] == ':', "refusal does not name the file: %s", err);
		CHECK(!strcmp(err, serr), "streamed refusal differs: %s / %s", err, serr);
	} else {
		CHECK(!s.misaligned, "%s: streamed events not 8-byte aligned", path);
		CHECK(ts.nstreamed == t.nev && !ts.nev, "%s: %llu events streamed, %zu read", path,
		      (unsigned long long)ts.nstreamed, t.nev);
		CHECK(ts.nproblems == t.nproblems && ts.corrupt == t.corrupt, "%s: streamed problems differ",
		      path);
		CHECK(!(t.corrupt || t.truncated) || t.nproblems, "%s: damage without a problem", path);
		for (int i = 0; i < t.nproblems; i++) {
			CHECK(!strncmp(t.problems[i], path, k) && !strncmp(t.problems[i] + k, ": offset ", 9),
			      "problem does not name the file and offset: %s", t.problems[i]);
			*window |= strstr(t.problems[i], "(damaged or forged times; chunk skipped)") != NULL;
		}
		*corrupt = t.corrupt;
		/* what the report touches; the sanitizers watch */
		volatile uint64_t sink = 0;
		for (size_t i = 0; i < t.nev; i++) {
			const struct ddl_event *e = &t.ev[i];
			sink += (uint64_t)ddl_trace_mono_ns(&t, e->start) + (uint64_t)ddl_trace_real_ns(&t, e->start) +
			        (uint64_t)ddl_trace_dur_ns(&t, e) + strlen(ddl_event_name(e->kind));
			const struct ddl_args *a = ddl_event_args(&t, i);
			if (a) {
				const char *name = ddl_trace_name(&t, a->name);
				const struct ddl_comm_info *c = ddl_trace_comm(&t, a->comm);
				sink += (name ? strlen(name) : 0) + (c ? (uint64_t)c->nranks : 0);
			}
			uint32_t st = ddl_event_stack(&t, i);
			if (st && st < t.nstacks && t.stacks[st].text)
				sink += strlen(t.stacks[st].text);
		}
		int64_t d = ddl_trace_mono_ns(&t, UINT64_MAX) - ddl_trace_mono_ns(&t, 0);
		sink += (uint64_t)d; /* saturated ends subtract without overflow */
		(void)sink;
	}
	ddl_trace_free(&t);
	ddl_trace_free(&ts);
	return DDL_PASS;
}

/* Every trace seed through the reader and ddlprof-report. */
int test_fuzzseeds_traces(void)
{
	static const char *const dirs[] = {"seeds", "report_seeds"};
	int total = 0, windows = 0;
	for (size_t d = 0; d < sizeof dirs / sizeof *dirs; d++) {
		char **v;
		int n = fs_list(dirs[d], &v);
		total += n;
		for (int i = 0; i < n; i++) {
			int corrupt, window;
			CHECK(fs_read_trace(v[i], &corrupt, &window) == DDL_PASS, "%s", v[i]);
			windows += window;
			const char *base = strrchr(v[i], '/') + 1;
			if (!strncmp(base, "clock-", 6))
				CHECK(corrupt && window, "%s: hostile clock samples not flagged", base);
			if (!strncmp(base, "gpu-", 4) && d == 0)
				CHECK(!corrupt, "%s: a real trace flagged as damaged", base);
			char *argv[] = {(char *)tbuild("bin/ddlprof-report"), "--json", "-q", v[i], NULL};
			CHECK(fs_tool_ok(argv, v[i], base) == 0, "ddlprof-report on %s", base);
		}
		fs_free(v, n);
	}
	CHECK(total >= 12, "only %d trace seeds found under tests/fuzz", total);
	CHECK(windows >= 2, "%d seeds with times outside their clock samples flagged", windows);
	return DDL_PASS;
}

/* Catalog, profile, --slurm and job-trace seeds through their tools. */
int test_fuzzseeds_loaders(void)
{
	char *dir = tmpdir(), tmp[PATH_MAX], hist[PATH_MAX], csv[PATH_MAX];
	const char *rec = tbuild("bin/ddlprof-recommend"), *sim = tbuild("bin/ddlprof-sim");
	char **v;
	int n = fs_list("catalog_seeds", &v), total = n;
	for (int i = 0; i < n; i++) {
		const char *base = strrchr(v[i], '/') + 1;
		char *a1[] = {(char *)rec, "--catalog", v[i], "--layers", "4", "--params", "1000000", "--compute-ms",
		              "10", "--iterations", "100", NULL};
		char *a2[] = {(char *)rec, "--profile", v[i], "--iterations", "100", NULL};
		CHECK(fs_tool_ok(a1, v[i], base) == 0, "--catalog %s", base);
		CHECK(fs_tool_ok(a2, v[i], base) == 0, "--profile %s", base);
	}
	fs_free(v, n);

	/* profiles: named by a job of our CSV */
	n = fs_list("profile_seeds", &v);
	total += n;
	snprintf(csv, sizeof csv, "%s/jobs.csv", dir);
	for (int i = 0; i < n; i++) {
		const char *base = strrchr(v[i], '/') + 1;
		char text[PATH_MAX + 128];
		int k = snprintf(text, sizeof text,
		                 "id,arrival_s,gpus,duration_s,model,profile\nj,0,16,100,vgg16,%s\n", v[i]);
		CHECK(fs_write(csv, text, (size_t)k) == 0, "write %s", csv);
		char *a[] = {(char *)sim, "--trace", csv, "--cluster", "2x2x8", "-q", NULL};
		CHECK(fs_tool_ok(a, csv, base) == 0, "profile %s", base);
		char *s[] = {(char *)sim, "--trace", csv, "--cluster", "2x2x8", "--strict", "-q", NULL};
		CHECK(fs_tool_ok(s, csv, base) == 0, "profile %s --strict", base);
	}
	fs_free(v, n);

	/* job traces: the first byte picks the format and --strict */
	static const char *const formats[4] = {"csv", "tiresias", "helios", "philly"};
	n = fs_list("jobs_seeds", &v);
	total += n;
	for (int i = 0; i < n; i++) {
		const char *base = strrchr(v[i], '/') + 1;
		size_t len;
		char *buf = fs_slurp(v[i], &len);
		CHECK(buf && len >= 1, "read %s", v[i]);
		snprintf(tmp, sizeof tmp, "%s/%s", dir, base);
		CHECK(fs_write(tmp, buf + 1, len - 1) == 0, "write %s", tmp);
		char *a[] = {(char *)sim, "--trace", tmp, "--format", (char *)formats[buf[0] & 3],
		             "--cluster", "2x4x8", "-q", buf[0] & 4 ? "--strict" : NULL, NULL};
		free(buf);
		CHECK(fs_tool_ok(a, tmp, base) == 0, "job trace %s", base);
	}
	fs_free(v, n);

	/* --slurm: a report (or the fixed one) and a --wait-history */
	n = fs_list("slurm_seeds", &v);
	total += n;
	snprintf(tmp, sizeof tmp, "%s/report.json", dir);
	snprintf(hist, sizeof hist, "%s/waits.csv", dir);
	char *fixed = fs_slurp(tbuild("../tests/rec/slurm_sensitive.json"), &(size_t){0});
	CHECK(fixed, "tests/rec/slurm_sensitive.json");
	for (int i = 0; i < n; i++) {
		const char *base = strrchr(v[i], '/') + 1;
		size_t len;
		char *buf = fs_slurp(v[i], &len);
		CHECK(buf && len >= 1, "read %s", v[i]);
		char *sep = strstr(buf + 1, "\n%%\n");
		int wrote = sep ? fs_write(tmp, buf + 1, (size_t)(sep + 1 - (buf + 1))) |
		                      fs_write(hist, sep + 4, len - (size_t)(sep + 4 - buf))
		                : fs_write(tmp, fixed, strlen(fixed)) | fs_write(hist, buf + 1, len - 1);
		free(buf);
		CHECK(wrote == 0, "write %s", dir);
		char *a[] = {(char *)rec, "--slurm", "--profile", tmp, "--wait-history", hist, NULL};
		struct ddl_run_result r;
		CHECK(trun(a, NULL, 60, &r) == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) < 128,
		      "--slurm on %s: no status", base);
		CHECK(WEXITSTATUS(r.status) == 0 || (r.err && (strstr(r.err, tmp) || strstr(r.err, hist))),
		      "--slurm on %s: status %d naming neither file:\n%s", base, WEXITSTATUS(r.status),
		      r.err ? r.err : "");
		if (!strcmp(base, "history-bad-line"))
			CHECK(WEXITSTATUS(r.status) == 1 && strstr(r.err, "waits.csv:2: "),
			      "a bad history line not refused by its number:\n%s", r.err ? r.err : "");
		trun_free(&r);
	}
	fs_free(v, n);
	free(fixed);
	CHECK(total >= 30, "only %d loader seeds found under tests/fuzz", total);
	trm(dir);
	free(dir);
	return DDL_PASS;
}
