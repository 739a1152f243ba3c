/*
 * ddlprof-report's chrome, html and csv formats on real profiled jobs:
 * tcpring (sockets and markers) and ddlsynth on the CUDA/NCCL emulation
 * (device intervals; skipped where it was not built). The Chrome trace
 * must parse, name one process per process of the JSON report and one
 * track per thread that made a call, and hold exactly the events --dump
 * lists, kind by kind; the CSV must have one row per analysed iteration,
 * whose parts add up to its duration; the HTML must be one self-contained
 * page. A program with hostile names (markup, quotes, bytes that are not
 * UTF-8) checks the escaping of all three. The big formats refuse a
 * terminal, and messages about outputs name the user's paths.
 */
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "ddlprof/crc32c.h"
#include "ddlprof/trace.h"
#include "test.h"

static int ddl_status(const struct ddl_run_result *r)
{
	return WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1;
}

/* ddlprof-report ARG... DIR; stdout into *OUT (caller frees); exit status, -1 if it did not finish. */
static int ddl_report_run(const char *dir, const char *a1, const char *a2, char **out)
{
	char *argv[] = {(char *)tbuild("bin/ddlprof-report"), (char *)a1, (char *)a2, (char *)dir, NULL};
	if (!a2) {
		argv[2] = (char *)dir;
		argv[3] = NULL;
	}
	struct ddl_run_result r;
	*out = NULL;
	if (trun(argv, NULL, 120, &r) < 0) {
		trun_free(&r);
		return -1;
	}
	int st = ddl_status(&r);
	if (st != 0)
		fprintf(stderr, "    ddlprof-report %s: status %d: %s\n", a1, st, r.err);
	*out = r.out;
	free(r.err);
	return st;
}

/* Profiles ARGS (NULL-terminated, at most 39) into TDIR; 0 or -1. */
static int ddl_profile(const char *tdir, const char *const *args)
{
	char *argv[48] = {(char *)tbuild("bin/ddlprof"), "-q", "--kernel-sample", "1", "-o", (char *)tdir, "--"};
	int n = 7;
	for (int i = 0; args[i] && n < 46; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	struct ddl_run_result r;
	int rc = trun(argv, NULL, 180, &r);
	if (rc != 0 || ddl_status(&r) != 0) {
		fprintf(stderr, "    %s failed under ddlprof (status %d): %s\n", args[0], r.status, r.err);
		rc = -1;
	}
	trun_free(&r);
	return rc;
}

/* ---- counting events by process and kind ---- */

#define DDL_MAXP 16
#define DDL_MAXK 160

struct ddl_count {
	long pid;
	char key[DDL_MAXK][80];
	long n[DDL_MAXK];
	int nk;
	long tids[512];
	int ntids;
};

struct ddl_counts {
	struct ddl_count p[DDL_MAXP];
	int np;
};

static struct ddl_count *ddl_count_proc(struct ddl_counts *c, long pid)
{
	for (int i = 0; i < c->np; i++)
		if (c->p[i].pid == pid)
			return &c->p[i];
	if (c->np == DDL_MAXP)
		return NULL;
	struct ddl_count *p = &c->p[c->np++];
	memset(p, 0, sizeof *p);
	p->pid = pid;
	return p;
}

static void ddl_count_add(struct ddl_count *p, const char *a, const char *b)
{
	char key[80];
	snprintf(key, sizeof key, "%s%s", a, b);
	for (int i = 0; i < p->nk; i++)
		if (!strcmp(p->key[i], key)) {
			p->n[i]++;
			return;
		}
	if (p->nk == DDL_MAXK)
		return;
	snprintf(p->key[p->nk], sizeof p->key[0], "%s", key);
	p->n[p->nk++] = 1;
}

static long ddl_count_get(const struct ddl_count *p, const char *key)
{
	for (int i = 0; i < p->nk; i++)
		if (!strcmp(p->key[i], key))
			return p->n[i];
	return 0;
}

static void ddl_count_tid(struct ddl_count *p, long tid)
{
	for (int i = 0; i < p->ntids; i++)
		if (p->tids[i] == tid)
			return;
	if (p->ntids < 512)
		p->tids[p->ntids++] = tid;
}

static int ddl_is_device_kind(const char *k)
{
	return !strcmp(k, "kernel") || !strcmp(k, "memcpy") || !strcmp(k, "memset") ||
	       !strcmp(k, "collective") || !strcmp(k, "graph");
}

/* --dump's lines, by process: "K:kind" for calls, "D:kind" for device
 * intervals, "M:push" and "M:mark" for markers; threads of non-device lines. */
static int ddl_count_dump(char *dump, struct ddl_counts *c)
{
	memset(c, 0, sizeof *c);
	char *save;
	for (char *line = strtok_r(dump, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		char host[128], kind[96];
		long pid, tid;
		double ts;
		CHECK(sscanf(line, "%127s %ld %ld %lf %95s", host, &pid, &tid, &ts, kind) == 5, "dump line '%s'", line);
		char *br = strchr(kind, '[');
		if (br)
			*br = 0; /* poll[sock] is a poll */
		struct ddl_count *p = ddl_count_proc(c, pid);
		CHECK(p, "too many processes");
		if (ddl_is_device_kind(kind)) {
			ddl_count_add(p, "D:", kind);
			continue;
		}
		ddl_count_tid(p, tid);
		if (!strcmp(kind, "range_push"))
			ddl_count_add(p, "M:", "push");
		else if (!strcmp(kind, "mark"))
			ddl_count_add(p, "M:", "mark");
		else if (strcmp(kind, "range_pop"))
			ddl_count_add(p, "K:", kind);
	}
	return DDL_PASS;
}

static const char *ddl_jstr(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

/* The same from the Chrome trace, by OS pid (from "(pid P)" in each process's name). */
static int ddl_count_chrome(json_t *events, struct ddl_counts *c, int *nprocs, int *kernels)
{
	memset(c, 0, sizeof *c);
	long map[DDL_MAXP][2];
	int nmap = 0;
	size_t i;
	json_t *e;
	*nprocs = 0;
	*kernels = 0;
	json_array_foreach(events, i, e)
		if (!strcmp(ddl_jstr(e, "ph"), "M") && !strcmp(ddl_jstr(e, "name"), "process_name")) {
			const char *nm = ddl_jstr(json_object_get(e, "args"), "name"), *at = strstr(nm, "(pid ");
			CHECK(at && nmap < DDL_MAXP, "process name '%s'", nm);
			map[nmap][0] = (long)json_integer_value(json_object_get(e, "pid"));
			map[nmap++][1] = strtol(at + 5, NULL, 10);
			(*nprocs)++;
		}
	long flows[DDL_MAXP][2] = {{0}};
	json_array_foreach(events, i, e) {
		const char *ph = ddl_jstr(e, "ph"), *cat = ddl_jstr(e, "cat"), *name = ddl_jstr(e, "name");
		long cpid = (long)json_integer_value(json_object_get(e, "pid"));
		long tid = (long)json_integer_value(json_object_get(e, "tid"));
		int m = -1;
		for (int k = 0; k < nmap; k++)
			if (map[k][0] == cpid)
				m = k;
		CHECK(m >= 0, "event of pid %ld, which has no process_name", cpid);
		struct ddl_count *p = ddl_count_proc(c, map[m][1]);
		CHECK(p, "too many processes");
		json_t *ts = json_object_get(e, "ts"), *args = json_object_get(e, "args");
		if (strcmp(ph, "M"))
			CHECK(json_is_number(ts) && json_number_value(ts) >= 0, "%s event %s: ts", ph, name);
		if (!strcmp(ph, "M")) {
			if (!strcmp(name, "thread_name") && tid < (1L << 23))
				ddl_count_tid(p, tid);
		} else if (!strcmp(ph, "X")) {
			json_t *dur = json_object_get(e, "dur");
			CHECK(json_is_number(dur) && json_number_value(dur) >= 0, "X event %s: dur", name);
			if (!strcmp(cat, "device")) {
				ddl_count_add(p, "D:", ddl_jstr(args, "kind"));
				*kernels += !strcmp(name, "ddk_compute_kernel");
				CHECK(tid >= (1L << 23), "device slice %s on a thread's track", name);
			} else if (!strcmp(cat, "marker")) {
				ddl_count_add(p, "M:", "push");
			} else if (!strcmp(cat, "iteration")) {
				ddl_count_add(p, "I:", "iteration");
			} else {
				ddl_count_add(p, "K:", name);
			}
		} else if (!strcmp(ph, "i")) {
			ddl_count_add(p, "M:", "mark");
		} else if (!strcmp(ph, "s") || !strcmp(ph, "f")) {
			flows[m][ph[0] == 'f']++;
		} else {
			CHECK(0, "unexpected phase '%s'", ph);
		}
	}
	for (int k = 0; k < nmap; k++)
		CHECK(flows[k][0] == flows[k][1], "pid %ld: %ld flow starts, %ld ends", map[k][1], flows[k][0],
		      flows[k][1]);
	return DDL_PASS;
}

struct ddl_slice {
	long pid, tid;
	long long a, b; /* ns */
};

static int ddl_slice_cmp(const void *x, const void *y)
{
	const struct ddl_slice *p = x, *q = y;
	if (p->pid != q->pid)
		return p->pid < q->pid ? -1 : 1;
	if (p->tid != q->tid)
		return p->tid < q->tid ? -1 : 1;
	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	return p->b > q->b ? -1 : p->b < q->b; /* the enclosing one first */
}

/* No two complete events on one track overlap unless one holds the other
 * (Perfetto moves such to an overflow track and logs
 * slice_spill_overlapping_complete_event). */
static int ddl_chrome_nests(json_t *events)
{
	size_t n = 0, i;
	json_t *e;
	struct ddl_slice *v = calloc(json_array_size(events) + 1, sizeof *v);
	CHECK(v, "out of memory");
	json_array_foreach(events, i, e)
		if (!strcmp(ddl_jstr(e, "ph"), "X")) {
			long long a = llround(json_number_value(json_object_get(e, "ts")) * 1000);
			v[n++] = (struct ddl_slice){(long)json_integer_value(json_object_get(e, "pid")),
			                            (long)json_integer_value(json_object_get(e, "tid")), a,
			                            a + llround(json_number_value(json_object_get(e, "dur")) * 1000)};
		}
	qsort(v, n, sizeof *v, ddl_slice_cmp);
	enum { DEPTH = 64 };
	long long open[DEPTH];
	int depth = 0;
	size_t bad = 0, first = 0;
	for (size_t k = 0; k < n; k++) {
		if (k && (v[k].pid != v[k - 1].pid || v[k].tid != v[k - 1].tid))
			depth = 0;
		while (depth && open[depth - 1] <= v[k].a)
			depth--;
		if (depth && v[k].b > open[depth - 1] && !bad++)
			first = k;
		if (depth < DEPTH)
			open[depth++] = v[k].b;
	}
	struct ddl_slice f = bad ? v[first] : (struct ddl_slice){0};
	free(v);
	CHECK(!bad, "%zu complete events overlap another on their track without nesting; the first on pid "
	      "%ld tid %ld at %lld ns", bad, f.pid, f.tid, f.a);
	return DDL_PASS;
}

/* The JSON report's iterations for OS pid PID, or -1 when it is not a rank. */
static long ddl_rank_iters(json_t *rep, long pid)
{
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(rep, "ranks"), i, r)
		if (json_integer_value(json_object_get(r, "pid")) == pid)
			return (long)json_integer_value(json_object_get(r, "iterations"));
	return -1;
}

/* The Chrome trace against --dump and the JSON report. KERNEL: expect device kernels. */
static int ddl_check_chrome(const char *dir, json_t *rep, int kernel)
{
	char *out, *dump;
	CHECK(ddl_report_run(dir, "--chrome", NULL, &out) == 0, "--chrome");
	CHECK(ddl_report_run(dir, "--dump", NULL, &dump) == 0, "--dump");
	json_error_t je;
	json_t *j = json_loads(out, 0, &je);
	CHECK(j, "chrome output is not JSON: %s at line %d", je.text, je.line);
	json_t *events = json_object_get(j, "traceEvents");
	CHECK(json_is_array(events) && json_array_size(events) > 0, "no traceEvents");
	CHECK(!strcmp(ddl_jstr(json_object_get(j, "otherData"), "schema"), "ddlprof-chrome/1"), "schema");
	static struct ddl_counts want, got;
	if (ddl_count_dump(dump, &want) != DDL_PASS)
		return DDL_FAIL;
	int nprocs, kernels;
	if (ddl_count_chrome(events, &got, &nprocs, &kernels) != DDL_PASS || ddl_chrome_nests(events) != DDL_PASS)
		return DDL_FAIL;
	CHECK(nprocs == (int)json_array_size(json_object_get(rep, "processes")),
	      "%d processes in the trace, %zu in the report", nprocs,
	      json_array_size(json_object_get(rep, "processes")));
	/* the launcher's command leaves its process even when it recorded
	 * nothing (a launcher of ranks): named in the trace, no events */
	int busy = 0;
	for (int k = 0; k < got.np; k++)
		busy += got.p[k].nk > 0;
	CHECK(busy == want.np, "%d processes with events, %d in the dump", busy, want.np);
	for (int i = 0; i < want.np; i++) {
		const struct ddl_count *w = &want.p[i];
		const struct ddl_count *g = NULL;
		for (int k = 0; k < got.np; k++)
			if (got.p[k].pid == w->pid)
				g = &got.p[k];
		CHECK(g, "pid %ld is not in the trace", w->pid);
		CHECK(g->ntids == w->ntids, "pid %ld: %d thread tracks, %d threads in the dump", w->pid,
		      g->ntids, w->ntids);
		for (int k = 0; k < w->nk; k++)
			CHECK(ddl_count_get(g, w->key[k]) == w->n[k], "pid %ld: %ld slices of %s, %ld in the dump",
			      w->pid, ddl_count_get(g, w->key[k]), w->key[k], w->n[k]);
		for (int k = 0; k < g->nk; k++)
			CHECK(!strcmp(g->key[k], "I:iteration") || ddl_count_get(w, g->key[k]) == g->n[k],
			      "pid %ld: %ld slices of %s, not in the dump", w->pid, g->n[k], g->key[k]);
		long it = ddl_rank_iters(rep, w->pid);
		CHECK(ddl_count_get(g, "I:iteration") == (it > 0 ? it : 0), "pid %ld: %ld iteration slices, "
		      "report says %ld", w->pid, ddl_count_get(g, "I:iteration"), it);
	}
	if (kernel)
		CHECK(kernels > 0, "no device slice named ddk_compute_kernel");
	json_decref(j);
	free(out);
	free(dump);
	return DDL_PASS;
}

/* One CSV line into at most 16 fields (RFC 4180 quotes); returns how many. */
static int ddl_csv_split(char *line, char **f, int max)
{
	int n = 0;
	char *w = line, *p = line;
	while (n < max) {
		f[n++] = w;
		if (*p == '"') {
			for (p++; *p; p++) {
				if (*p == '"' && p[1] == '"')
					*w++ = *p++;
				else if (*p == '"')
					break;
				else
					*w++ = *p;
			}
			if (*p)
				p++;
		}
		while (*p && *p != ',')
			*w++ = *p++;
		int more = *p == ',';
		*w++ = 0;
		if (!more)
			break;
		w = ++p;
	}
	return n;
}

/* The CSV: the header, one row per analysed iteration of every rank, parts adding up. */
static int ddl_check_csv(const char *dir, json_t *rep)
{
	char *out;
	CHECK(ddl_report_run(dir, "--csv", NULL, &out) == 0, "--csv");
	const char *head = "rank,host,pid,iteration,start_s,duration_s,compute_s,data_stall_s,"
	                   "interconnect_stall_s,network_stall_s,idle_s,incomplete\n";
	CHECK(!strncmp(out, head, strlen(head)), "header: %.200s", out);
	long pids[DDL_MAXP], rows[DDL_MAXP];
	int np = 0;
	char *save;
	for (char *line = strtok_r(out + strlen(head), "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[16];
		CHECK(ddl_csv_split(line, f, 16) == 12 && !strcmp(f[11], "0"), "row '%s'", line);
		long pid = strtol(f[2], NULL, 10);
		double v[7];
		for (int k = 0; k < 7; k++) {
			char *end;
			v[k] = strtod(f[4 + k], &end);
			CHECK(*end == 0 && isfinite(v[k]), "row '%s': field %d", line, 5 + k);
		}
		CHECK(v[0] >= 0 && v[1] > 0, "row of pid %ld: start %g, duration %g", pid, v[0], v[1]);
		double sum = v[2] + v[3] + v[4] + v[5] + v[6];
		CHECK(fabs(sum - v[1]) <= 1e-6, "pid %ld iteration %s: parts add up to %.9f, duration %.9f", pid,
		      f[3], sum, v[1]);
		for (int k = 2; k < 7; k++)
			CHECK(v[k] >= -1e-9, "pid %ld iteration %s: negative part %.9f", pid, f[3], v[k]);
		int i = 0;
		while (i < np && pids[i] != pid)
			i++;
		if (i == np) {
			CHECK(np < DDL_MAXP, "too many processes");
			pids[np] = pid;
			rows[np++] = 0;
			json_t *pr = tproc(rep, pid);
			CHECK(pr, "pid %ld is not in the report", pid);
			CHECK(!strcmp(f[1], ddl_jstr(pr, "host")), "pid %ld: host '%s', report '%s'", pid, f[1],
			      ddl_jstr(pr, "host"));
			CHECK(strtol(f[0], NULL, 10) == json_integer_value(json_object_get(pr, "rank")),
			      "pid %ld: rank %s", pid, f[0]);
		}
		rows[i]++;
	}
	size_t i;
	json_t *r;
	int ranks_with = 0;
	json_array_foreach(json_object_get(rep, "ranks"), i, r) {
		long pid = (long)json_integer_value(json_object_get(r, "pid"));
		long want = (long)json_integer_value(json_object_get(r, "iterations")), have = 0;
		for (int k = 0; k < np; k++)
			if (pids[k] == pid)
				have = rows[k];
		CHECK(have == want, "pid %ld: %ld rows, report says %ld iterations", pid, have, want);
		ranks_with += want > 0;
	}
	CHECK(ranks_with == np && np > 0, "%d processes in the CSV, %d ranks with iterations", np, ranks_with);
	free(out);
	return DDL_PASS;
}

static int ddl_count_of(const char *s, const char *what)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* The HTML page: self-contained, a row and a timeline per rank, tags closed. */
static int ddl_check_html(const char *dir, json_t *rep, char **page)
{
	char *out;
	CHECK(ddl_report_run(dir, "--html", NULL, &out) == 0, "--html");
	CHECK(!strncmp(out, "<!DOCTYPE html>\n", 16), "start: %.60s", out);
	CHECK(strstr(out, "</html>\n"), "no </html>");
	CHECK(!strcasestr(out, "<script") && !strcasestr(out, "http") && !strcasestr(out, "<link") &&
	      !strcasestr(out, "url(") && !strcasestr(out, "@import"), "the page refers to something outside it");
	static const char *const pairs[][2] = {{"<svg", "</svg>"}, {"<table", "</table>"}, {"<tr", "</tr>"},
	                                       {"<td", "</td>"}, {"<h2", "</h2>"}, {"<title>", "</title>"}};
	for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++)
		CHECK(ddl_count_of(out, pairs[k][0]) == ddl_count_of(out, pairs[k][1]), "%d %s, %d %s",
		      ddl_count_of(out, pairs[k][0]), pairs[k][0], ddl_count_of(out, pairs[k][1]), pairs[k][1]);
	size_t i;
	json_t *r;
	int ranks = 0;
	json_array_foreach(json_object_get(rep, "ranks"), i, r) {
		if (json_integer_value(json_object_get(r, "iterations")) <= 0)
			continue;
		char row[96];
		long long rank = (long long)json_integer_value(json_object_get(r, "rank"));
		long long pid = (long long)json_integer_value(json_object_get(r, "pid"));
		snprintf(row, sizeof row, "<tr class=\"rank\"><td class=\"l\">%s %lld</td>",
		         rank >= 0 ? "rank" : "pid", rank >= 0 ? rank : pid);
		CHECK(strstr(out, row), "no row %s", row);
		ranks++;
	}
	CHECK(ddl_count_of(out, "<tr class=\"rank\">") == ranks, "%d rank rows, %d ranks",
	      ddl_count_of(out, "<tr class=\"rank\">"), ranks);
	CHECK(ddl_count_of(out, "(the median)</h3>") == ranks, "%d timelines, %d ranks",
	      ddl_count_of(out, "(the median)</h3>"), ranks);
	if (page)
		*page = out;
	else
		free(out);
	return DDL_PASS;
}

/* All three formats on one profiled run. */
static int ddl_check_all(const char *tdir, int kernel)
{
	int st;
	json_t *rep = treport(tdir, &st);
	CHECK(rep && st == 0, "no JSON report (status %d)", st);
	CHECK(json_integer_value(json_object_get(json_object_get(rep, "job"), "iterations")) > 0,
	      "no iterations found");
	int rc = ddl_check_chrome(tdir, rep, kernel);
	if (rc == DDL_PASS)
		rc = ddl_check_csv(tdir, rep);
	if (rc == DDL_PASS)
		rc = ddl_check_html(tdir, rep, NULL);
	json_decref(rep);
	return rc;
}

int test_report_out_tcpring(void)
{
	char *dir = tmpdir(), tdir[4200];
	snprintf(tdir, sizeof tdir, "%s/t", dir);
	const char *args[] = {tbuild("examples/tcpring"), "-n", "14", "-m", "1", "-c", "8", "-k", NULL};
	/* tcpring's ports follow its pid: one more try if another job holds them */
	if (ddl_profile(tdir, args) != 0) {
		trm(tdir);
		CHECK(ddl_profile(tdir, args) == 0, "tcpring, twice");
	}
	int rc = ddl_check_all(tdir, 0);
	trm(dir);
	free(dir);
	return rc;
}

/*
 * --chrome --ranks 1,3 --iterations 6:6 on a job of four ranks: only those
 * ranks' processes, every event overlapping the window the file says
 * (iteration 6 of those ranks, from its first start to its last end), the
 * one iteration slice each, device work among them, tracks still nested;
 * and a window of nothing, or --iterations without --chrome, refused.
 */
static int ddl_check_chrome_window(const char *dir, json_t *rep)
{
	const char *R = tbuild("bin/ddlprof-report");
	char *argv[] = {(char *)R, "--chrome", "--ranks", "1,3", "--iterations", "6:6", (char *)dir, NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 60, &r) == 0 && ddl_status(&r) == 0, "--ranks 1,3 --iterations 6:6: %s", r.err);
	json_t *j = json_loads(r.out, 0, NULL), *ev = json_object_get(j, "traceEvents");
	trun_free(&r);
	json_t *win = tjget(j, "otherData.window");
	double a = json_number_value(json_object_get(win, "start_us")), b = json_number_value(json_object_get(win, "end_us"));
	CHECK(json_is_object(win) && b > a, "no window in otherData");
	long want[2] = {-1, -1};
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(rep, "ranks"), i, e) {
		long rk = (long)json_integer_value(json_object_get(e, "rank"));
		if (rk == 1 || rk == 3)
			want[rk == 3] = (long)json_integer_value(json_object_get(e, "pid"));
	}
	size_t slices = 0, iters = 0, device = 0, outside = 0, others = 0;
	json_array_foreach(ev, i, e) {
		const char *ph = ddl_jstr(e, "ph"), *cat = ddl_jstr(e, "cat");
		long pid = (long)json_integer_value(json_object_get(e, "pid"));
		others += pid != want[0] && pid != want[1];
		if (!strcmp(ph, "M"))
			continue;
		double ts = json_number_value(json_object_get(e, "ts")), d = json_number_value(json_object_get(e, "dur"));
		outside += ts > b + 0.001 || ts + d < a - 0.001;
		slices += !strcmp(ph, "X");
		if (!strcmp(cat, "iteration")) {
			iters++;
			CHECK(!strcmp(ddl_jstr(e, "name"), "iteration 6"), "%s in the window", ddl_jstr(e, "name"));
		}
		device += !strcmp(cat, "kernel") || !strncmp(cat, "gpu", 3) || !strncmp(cat, "device", 6);
	}
	fprintf(stderr, "    window %.3f-%.3f ms: %zu slices, %zu iterations, %zu device, %zu outside, %zu of other "
	        "processes\n", a / 1e3, b / 1e3, slices, iters, device, outside, others);
	CHECK(!others && !outside && iters == 2 && slices > 10 && device > 0,
	      "the window holds %zu events of other processes, %zu outside it, %zu iterations, %zu device slices",
	      others, outside, iters, device);
	int nest = ddl_chrome_nests(ev);
	json_decref(j);
	if (nest != DDL_PASS)
		return nest;
	static const char *const bad[][3] = {{"--ranks", "9", "no such rank"}, {"--iterations", "0:1", "no such iterations"}};
	for (int k = 0; k < 2; k++) {
		char *b2[] = {(char *)R, "--chrome", (char *)bad[k][0], (char *)bad[k][1], (char *)dir, NULL};
		CHECK(trun(b2, NULL, 60, &r) == 0 && ddl_status(&r) == 1 && strstr(r.err, bad[k][2]) && !*r.out,
		      "%s %s: status %d: %s", bad[k][0], bad[k][1], ddl_status(&r), r.err);
		trun_free(&r);
	}
	char *b3[] = {(char *)R, "--iterations", "6:6", (char *)dir, NULL};
	CHECK(trun(b3, NULL, 60, &r) == 0 && ddl_status(&r) == 2 && strstr(r.err, "--chrome"), "--iterations "
	      "without --chrome: status %d: %s", ddl_status(&r), r.err);
	trun_free(&r);
	return DDL_PASS;
}

int test_report_out_synth(void)
{
	const char *synth = tbuild("examples/ddlsynth");
	if (access(synth, X_OK) != 0)
		return DDL_SKIP; /* built without the CUDA headers */
	char *dir = tmpdir(), tdir[4200];
	snprintf(tdir, sizeof tdir, "%s/t", dir);
	const char *args[] = {synth, "--ranks", "4", "--ranks-per-host", "2", "--layers", "3",
	                      "--params-per-layer", "200k", "--compute-ms", "3", "--bucket-mb", "1",
	                      "--iterations", "8", "--overlap", "off", "--net-gbps", "0.5", "--markers",
	                      "--quiet", NULL};
	CHECK(ddl_profile(tdir, args) == 0, "ddlsynth");
	int rc = ddl_check_all(tdir, 1);
	if (rc == DDL_PASS) {
		json_t *rep = treport(tdir, NULL);
		rc = ddl_check_chrome_window(tdir, rep);
		json_decref(rep);
	}
	trm(dir);
	free(dir);
	return rc;
}

/* The event named NAME of phase PH, or NULL. */
static json_t *ddl_find_event(json_t *events, const char *ph, const char *name)
{
	size_t i;
	json_t *e;
	json_array_foreach(events, i, e)
		if (!strcmp(ddl_jstr(e, "ph"), ph) && !strcmp(ddl_jstr(e, "name"), name))
			return e;
	return NULL;
}

int test_report_out_hostile_names(void)
{
	char *dir = tmpdir(), tdir[4200];
	snprintf(tdir, sizeof tdir, "%s/t", dir);
	const char *args[] = {tbuild("tests/progs/outnames"), NULL};
	CHECK(ddl_profile(tdir, args) == 0, "outnames");
	int rc = ddl_check_all(tdir, 0);
	if (rc != DDL_PASS)
		return rc;
	/* Chrome: valid JSON (jansson refuses bad UTF-8) holding the names as they were */
	char *out;
	CHECK(ddl_report_run(tdir, "--chrome", NULL, &out) == 0, "--chrome");
	json_t *j = json_loads(out, 0, NULL), *ev = json_object_get(j, "traceEvents");
	CHECK(ddl_find_event(ev, "X", "<script>alert(1)</script>"), "no <script> range slice");
	CHECK(ddl_find_event(ev, "X", "data,\"quoted\" \\ back"), "no quoted range slice");
	CHECK(ddl_find_event(ev, "i", "bad \xef\xbf\xbd\xef\xbf\xbd utf-8 \xef\xbf\xbd\xef\xbf\xbd ctl "
	                     "\xef\xbf\xbd\xef\xbf\xbd cut"),
	      "mark with bad bytes and control characters not as U+FFFD");
	CHECK(!strstr(out, "\\u"), "\\u escapes, which some Perfetto versions refuse");
	size_t i;
	json_t *e;
	int named = 0;
	json_array_foreach(ev, i, e)
		named |= !strcmp(ddl_jstr(json_object_get(e, "args"), "name"), "<b>\"x&y'");
	CHECK(named, "thread name lost");
	json_decref(j);
	free(out);
	/* HTML: markup as text */
	int st;
	json_t *rep = treport(tdir, &st);
	char *page = NULL;
	CHECK(ddl_check_html(tdir, rep, &page) == DDL_PASS, "html");
	CHECK(!strstr(page, "<script>") && !strstr(page, "<b>\"x"), "markup from the trace in the page");
	CHECK(strstr(page, "&lt;script&gt;alert(1)&lt;/script&gt;"), "marker name not shown escaped");
	CHECK(strstr(page, "&lt;b&gt;&quot;x&amp;y&#39;"), "thread name not shown escaped");
	CHECK(strstr(page, "bad &#xfffd;&#xfffd; utf-8 &#xfffd;&#xfffd; ctl &#xfffd;&#xfffd; cut"),
	      "mark with bad bytes not shown with U+FFFD");
	free(page);
	json_decref(rep);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* Sets the host in the header of every trace in DIR; 0 or -1. */
static int ddl_rehost(const char *dir, const char *host)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	for (struct dirent *de; (de = readdir(d));) {
		if (!strstr(de->d_name, ".ddlt"))
			continue;
		char path[4400];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		int fd = open(path, O_RDWR);
		struct ddl_file_header h;
		if (fd < 0 || pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h || h.header_size != sizeof h) {
			if (fd >= 0)
				close(fd);
			closedir(d);
			return -1;
		}
		memset(h.host, 0, sizeof h.host);
		snprintf(h.host, sizeof h.host, "%s", host);
		h.hcrc = ddl_crc32c(&h, offsetof(struct ddl_file_header, hcrc));
		int ok = pwrite(fd, &h, sizeof h, 0) == (ssize_t)sizeof h;
		close(fd);
		if (!ok)
			break;
		n++;
	}
	closedir(d);
	return n > 0 ? 0 : -1;
}

/* Aliases, -o and --force, and a host name that needs CSV quoting. */
/* Whether no "*.tmp.*" is left in DIR. */
static int ddl_no_tmp_left(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int clean = d != NULL;
	while (d && (e = readdir(d)))
		if (strstr(e->d_name, ".tmp."))
			clean = 0;
	if (d)
		closedir(d);
	return clean;
}

/*
 * -o at what is not a regular file: a character device (a private node
 * of /dev/null's numbers, made here), a FIFO and a symlink are written
 * where they are and stay what they were; a directory is refused.
 */
int test_report_out_special_targets(void)
{
	char *dir = tmpdir(), tdir[4200], dev[4200], fifo[4200], got[4200], link[4200], real[4200],
	     sub[4200];
	snprintf(tdir, sizeof tdir, "%s/t", dir);
	const char *args[] = {tbuild("tests/progs/markers"), NULL};
	CHECK(ddl_profile(tdir, args) == 0, "markers");
	const char *R = tbuild("bin/ddlprof-report");
	struct ddl_run_result r;
	struct stat st;
	/* a character device, with --force and without */
	snprintf(dev, sizeof dev, "%s/null", dir);
	if (mknod(dev, S_IFCHR | 0666, makedev(1, 3)) == 0) {
		for (int force = 0; force < 2; force++) {
			char *a[] = {(char *)R, "--json", "-o", dev, force ? "--force" : tdir, tdir, NULL};
			if (!force)
				a[5] = NULL;
			CHECK(trun(a, NULL, 30, &r) == 0 && ddl_status(&r) == 0, "-o a device: %s", r.err);
			trun_free(&r);
			CHECK(lstat(dev, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3),
			      "-o %s%s: the device was replaced (mode %o)", dev, force ? " --force" : "",
			      (unsigned)st.st_mode);
		}
	} else {
		fprintf(stderr, "    mknod: %s: the device case left out\n", strerror(errno));
	}
	/* a FIFO: the report comes out of its other end */
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	snprintf(got, sizeof got, "%s/fifo.out", dir);
	CHECK(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno));
	pid_t cat = fork();
	if (cat == 0) {
		int in = open(fifo, O_RDONLY), out = open(got, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		char buf[4096];
		ssize_t n;
		while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
			if (write(out, buf, (size_t)n) != n)
				_exit(1);
		_exit(in >= 0 && out >= 0 ? 0 : 1);
	}
	char *af[] = {(char *)R, "--json", "-o", fifo, tdir, NULL};
	CHECK(trun(af, NULL, 30, &r) == 0 && ddl_status(&r) == 0, "-o a FIFO: %s", r.err);
	trun_free(&r);
	int cst;
	CHECK(waitpid(cat, &cst, 0) == cat && WIFEXITED(cst) && WEXITSTATUS(cst) == 0, "the FIFO's reader");
	CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO was replaced");
	json_error_t je;
	json_t *j = json_load_file(got, 0, &je);
	CHECK(j && json_object_get(j, "job"), "what came out of the FIFO is not the report: %s", je.text);
	json_decref(j);
	/* a symlink to a file: refused without --force, written through with it */
	snprintf(real, sizeof real, "%s/real.json", dir);
	snprintf(link, sizeof link, "%s/link.json", dir);
	FILE *f = fopen(real, "w");
	CHECK(f && fputs("old\n", f) >= 0 && fclose(f) == 0, "%s", real);
	CHECK(symlink(real, link) == 0, "symlink: %s", strerror(errno));
	char *al[] = {(char *)R, "--json", "-o", link, tdir, NULL};
	CHECK(trun(al, NULL, 30, &r) == 0 && ddl_status(&r) == 1 && strstr(r.err, "--force"),
	      "an existing link's target not refused: %s", r.err);
	trun_free(&r);
	char *alf[] = {(char *)R, "--json", "--force", "-o", link, tdir, NULL};
	CHECK(trun(alf, NULL, 30, &r) == 0 && ddl_status(&r) == 0, "-o a link --force: %s", r.err);
	trun_free(&r);
	CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "the symlink was replaced");
	j = json_load_file(real, 0, &je);
	CHECK(j && json_object_get(j, "job"), "the link's target does not hold the report: %s", je.text);
	json_decref(j);
	/* a directory: refused, nothing written in it */
	snprintf(sub, sizeof sub, "%s/sub", dir);
	CHECK(mkdir(sub, 0700) == 0, "mkdir");
	char *ad[] = {(char *)R, "--json", "--force", "-o", sub, tdir, NULL};
	CHECK(trun(ad, NULL, 30, &r) == 0 && ddl_status(&r) != 0 && strstr(r.err, "directory"),
	      "-o a directory: status %d: %s", ddl_status(&r), r.err);
	trun_free(&r);
	CHECK(rmdir(sub) == 0, "something was written into the directory");
	CHECK(ddl_no_tmp_left(dir), "a temporary file was left in %s", dir);
	return DDL_PASS;
}

/* Reads FIFO to its end into the void, in a child; its pid. */
static pid_t ddl_fifo_drain(const char *fifo)
{
	pid_t pid = fork();
	if (pid == 0) {
		alarm(60); /* a tool that replaced the FIFO never opens it: fail, not hang */
		int in = open(fifo, O_RDONLY);
		char buf[4096];
		long total = 0;
		ssize_t n;
		while (in >= 0 && (n = read(in, buf, sizeof buf)) > 0)
			total += n;
		_exit(in >= 0 && total > 0 ? 0 : 1);
	}
	return pid;
}

/*
 * The other tools' outputs on a device node and a FIFO (issue 18, 1):
 * ddlprof-sim -o and --jobs-out, ddlprof-recommend -o, ddlsynth
 * --plan-json, each with --force: written in place, never replaced.
 */
int test_tools_out_special_targets(void)
{
	char *dir = tmpdir(), dev[4200], fifo[4200];
	snprintf(dev, sizeof dev, "%s/null", dir);
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	int have_dev = mknod(dev, S_IFCHR | 0666, makedev(1, 3)) == 0;
	if (!have_dev)
		fprintf(stderr, "    mknod: %s: the device case left out\n", strerror(errno));
	CHECK(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno));
	const char *jobs = tbuild("../examples/jobs.csv"), *synth = tbuild("examples/ddlsynth");
	char *cmds[][16] = {
		{(char *)tbuild("bin/ddlprof-sim"), "--trace", (char *)jobs, "-q", "--json", "--force", "-o", NULL},
		{(char *)tbuild("bin/ddlprof-sim"), "--trace", (char *)jobs, "-q", "--force", "--jobs-out", NULL},
		{(char *)tbuild("bin/ddlprof-recommend"), "--layers", "8", "--params", "10000000", "--compute-ms",
		 "20", "--iterations", "1000", "--json", "--force", "-o", NULL},
		{(char *)synth, "--ranks", "2", "--layers", "2", "--params-per-layer", "1000", "--compute-ms", "1",
		 "--iterations", "2", "--force", "--plan-json", NULL},
	};
	for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
		if (k == 3 && access(synth, X_OK) != 0)
			continue; /* no CUDA headers: no ddlsynth */
		int n = 0;
		while (cmds[k][n])
			n++;
		for (int which = have_dev ? 0 : 1; which < 2; which++) {
			const char *target = which ? fifo : dev;
			cmds[k][n] = (char *)target;
			cmds[k][n + 1] = NULL;
			pid_t drain = which ? ddl_fifo_drain(fifo) : -1;
			struct ddl_run_result r;
			CHECK(trun(cmds[k], NULL, 60, &r) == 0 && ddl_status(&r) == 0, "%s ... %s: status %d: %s",
			      cmds[k][0], target, ddl_status(&r), r.err);
			trun_free(&r);
			int st;
			CHECK(drain < 0 || (waitpid(drain, &st, 0) == drain && WIFEXITED(st) && WEXITSTATUS(st) == 0),
			      "%s: nothing came out of the FIFO", cmds[k][0]);
			struct stat sb;
			CHECK(lstat(target, &sb) == 0 && (which ? S_ISFIFO(sb.st_mode)
			                                        : S_ISCHR(sb.st_mode) && sb.st_rdev == makedev(1, 3)),
			      "%s %s %s: the target was replaced (mode %o)", cmds[k][0], cmds[k][n - 1], target,
			      (unsigned)sb.st_mode);
			cmds[k][n] = NULL;
		}
	}
	CHECK(ddl_no_tmp_left(dir), "a temporary file was left in %s", dir);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

int test_report_out_options(void)
{
	char *dir = tmpdir(), tdir[4200], file[4200];
	snprintf(tdir, sizeof tdir, "%s/t", dir);
	snprintf(file, sizeof file, "%s/out.csv", dir);
	const char *args[] = {tbuild("tests/progs/markers"), NULL};
	CHECK(ddl_profile(tdir, args) == 0, "markers");
	static const char *const fmt[][2] = {{"--csv", "csv"}, {"--html", "html"}, {"--chrome", "chrome"}};
	for (int k = 0; k < 3; k++) {
		char *a, *b;
		CHECK(ddl_report_run(tdir, fmt[k][0], NULL, &a) == 0, "%s", fmt[k][0]);
		CHECK(ddl_report_run(tdir, "--format", fmt[k][1], &b) == 0, "--format %s", fmt[k][1]);
		CHECK(!strcmp(a, b), "%s and --format %s differ", fmt[k][0], fmt[k][1]);
		free(a);
		free(b);
	}
	const char *R = tbuild("bin/ddlprof-report");
	char *a1[] = {(char *)R, "--csv", "-o", file, tdir, NULL};
	struct ddl_run_result r;
	CHECK(trun(a1, NULL, 30, &r) == 0 && ddl_status(&r) == 0, "-o: %s", r.err);
	trun_free(&r);
	CHECK(trun(a1, NULL, 30, &r) == 0 && ddl_status(&r) == 1 && strstr(r.err, "--force"),
	      "existing output not refused: %s", r.err);
	trun_free(&r);
	char *a2[] = {(char *)R, "--html", "--force", "-o", file, tdir, NULL};
	CHECK(trun(a2, NULL, 30, &r) == 0 && ddl_status(&r) == 0, "--force: %s", r.err);
	trun_free(&r);
	FILE *f = fopen(file, "r");
	char head[32] = "";
	CHECK(f && fgets(head, sizeof head, f) && !strcmp(head, "<!DOCTYPE html>\n"), "replaced: %s", head);
	fclose(f);
	/* a window of a program with marks (instants) outside it: still JSON,
	 * the marks of iterations 7 and 8 in it, tracks nested */
	char *a4[] = {(char *)R, "--chrome", "--iterations", "7:8", tdir, NULL};
	CHECK(trun(a4, NULL, 30, &r) == 0 && ddl_status(&r) == 0, "--chrome --iterations 7:8: %s", r.err);
	json_t *win = json_loads(r.out, 0, NULL), *ev = json_object_get(win, "traceEvents");
	trun_free(&r);
	size_t marks = 0, iters = 0, i;
	json_t *e;
	json_array_foreach(ev, i, e) {
		marks += !strcmp(ddl_jstr(e, "ph"), "i");
		iters += !strcmp(ddl_jstr(e, "cat"), "iteration");
	}
	CHECK(win && marks == 2 && iters == 2, "window of iterations 7 and 8: %s, %zu marks, %zu iterations",
	      win ? "JSON" : "not JSON", marks, iters);
	int nest = ddl_chrome_nests(ev);
	json_decref(win);
	if (nest != DDL_PASS)
		return nest;
	char *a3[] = {(char *)R, "--format", "svg", tdir, NULL};
	CHECK(trun(a3, NULL, 30, &r) == 0 && ddl_status(&r) == 2 && strstr(r.err, "chrome, html or csv"),
	      "bad format: %s", r.err);
	trun_free(&r);
	/* a host name with a comma and a quote: the library writes host names
	 * tamed, so the trace's header is rewritten (and its checksum) */
	CHECK(ddl_rehost(tdir, "h,o\"st") == 0, "cannot rewrite the trace header");
	char *out;
	CHECK(ddl_report_run(tdir, "--csv", NULL, &out) == 0, "--csv");
	CHECK(strstr(out, "\n-1,\"h,o\"\"st\","), "host not quoted: %s", out);
	int st;
	json_t *rep = treport(tdir, &st);
	CHECK(rep && ddl_check_csv(tdir, rep) == DDL_PASS, "csv with a quoted host");
	json_decref(rep);
	free(out);
	trun_free(&r);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* The lines of S that begin with PREFIX. */
static int ddl_lines_with(const char *s, const char *prefix)
{
	int n = 0;
	size_t k = strlen(prefix);
	for (const char *p = s; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		n += !strncmp(p, prefix, k);
	return n;
}

static int ddl_num_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/*
 * A job of 40 ranks (bench/bigtrace's, 20000 events each): the text sums
 * the ranks up rather than a line each (the extremes of their mean
 * iteration, each part's least, median and most across them, held against
 * the JSON's ranks) and shows the three slowest and fastest; --ranks all
 * every rank's line, --ranks 3,7-8 those; JSON keeps every rank; a list
 * of no rank, or --ranks with --json, refused.
 */
/*
 * The per-process stages run on several threads (analyzer/parallel.c);
 * the report is the same byte for byte with 1 thread or many, in every
 * format: on bench/bigtrace's 24 ranks, on tcpring's real traces and, where
 * ddlsynth was built, on a GPU job of the emulation. So it is with
 * --memory 0, where every stage and output reads the events it holds
 * again from the files, and the socket records of the traffic in flight
 * go through the spill file (analyzer/trace_events.c, flight.c).
 */
int test_report_threads_identical(void)
{
	char *dir = tmpdir(), big[4200], ring[4200], gpu[4200];
	snprintf(big, sizeof big, "%s/big", dir);
	snprintf(ring, sizeof ring, "%s/ring", dir);
	snprintf(gpu, sizeof gpu, "%s/gpu", dir);
	char *gen[] = {(char *)tbuild("bench/bigtrace"), big, "24", "10000", NULL};
	struct ddl_run_result r;
	CHECK(trun(gen, NULL, 60, &r) == 0 && ddl_status(&r) == 0, "bigtrace: %s", r.err);
	trun_free(&r);
	const char *tcp[] = {tbuild("examples/tcpring"), "-n", "12", "-m", "2", "-c", "5", NULL};
	CHECK(ddl_profile(ring, tcp) == 0, "tcpring");
	const char *dirs[3] = {big, ring, NULL};
	const char *synth = tbuild("examples/ddlsynth");
	if (access(synth, X_OK) == 0) {
		const char *s[] = {synth, "--ranks", "4", "--ranks-per-host", "2", "--layers", "4", "--params-per-layer",
		                   "200k", "--compute-ms", "2", "--iterations", "10", "--markers", NULL};
		CHECK(ddl_profile(gpu, s) == 0, "ddlsynth");
		dirs[2] = gpu;
	}
	const char *fmts[] = {NULL, "--json", "--html", "--csv", "--chrome", "--dump"};
	for (int d = 0; d < 3 && dirs[d]; d++)
		for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++) {
			char *one, *many, *none;
			int st1 = ddl_report_run(dirs[d], "--threads=1", fmts[k], &one);
			int st7 = ddl_report_run(dirs[d], "--threads=7", fmts[k], &many);
			int st0 = ddl_report_run(dirs[d], "--memory=0", fmts[k], &none);
			CHECK(st1 == 0 && st7 == 0 && st0 == 0 && one && many && none && *one, "%s %s: no report",
			      dirs[d], fmts[k] ? fmts[k] : "text");
			CHECK(!strcmp(one, many), "%s %s: 7 threads give another report than 1 (%zu and %zu bytes)",
			      dirs[d], fmts[k] ? fmts[k] : "text", strlen(one), strlen(many));
			CHECK(!strcmp(one, none), "%s %s: --memory 0 gives another report (%zu and %zu bytes)",
			      dirs[d], fmts[k] ? fmts[k] : "text", strlen(one), strlen(none));
			free(one);
			free(many);
			free(none);
		}
	trm(dir);
	free(dir);
	return DDL_PASS;
}

int test_report_out_many_ranks(void)
{
	char *dir = tmpdir(), tdir[4200];
	snprintf(tdir, sizeof tdir, "%s/t", dir);
	char *gen[] = {(char *)tbuild("bench/bigtrace"), tdir, "40", "20000", NULL};
	struct ddl_run_result r;
	CHECK(trun(gen, NULL, 60, &r) == 0 && ddl_status(&r) == 0, "bigtrace: %s", r.err);
	trun_free(&r);
	json_t *rep = treport(tdir, NULL);
	json_t *ranks = json_object_get(rep, "ranks");
	CHECK(json_array_size(ranks) == 40, "%zu ranks in the JSON", json_array_size(ranks));
	double mean[40], comp[40];
	size_t i;
	json_t *e;
	json_array_foreach(ranks, i, e) {
		mean[i] = json_number_value(json_object_get(e, "iteration_mean_s")) * 1e3;
		comp[i] = json_number_value(tjget(e, "breakdown_s.compute")) * 1e3;
	}
	json_decref(rep);
	qsort(mean, 40, sizeof *mean, ddl_num_cmp);
	qsort(comp, 40, sizeof *comp, ddl_num_cmp);
	char *out;
	CHECK(ddl_report_run(tdir, "-q", NULL, &out) == 0, "the text report");
	int lines = ddl_lines_with(out, ""), rows = ddl_lines_with(out, "  big"), least = ddl_lines_with(out, "  least of the ranks");
	char want[128];
	snprintf(want, sizeof want, "  40 ranks: a mean iteration from %.3f ms (", mean[0]);
	const char *at = strstr(out, want), *to = at ? strstr(at, ") to ") : NULL;
	double hi = to ? strtod(to + 5, NULL) : 0, med = 0;
	const char *m = strstr(out, "\n  median ");
	if (m)
		med = strtod(m + 10, NULL);
	fprintf(stderr, "    40 ranks: %d lines, %d of ranks; mean iteration %.3f to %.3f ms, median compute %.2f ms "
	        "(the JSON's %.3f, %.3f, %.2f)\n", lines, rows, mean[0], hi, med, mean[0], mean[39],
	        (comp[19] + comp[20]) / 2);
	CHECK(lines < 80 && least == 1 && at && fabs(hi - mean[39]) < 0.001 &&
	      fabs(med - (comp[19] + comp[20]) / 2) < 0.006 && strstr(out, "\n  all 40 processes "),
	      "the summary:\n%s", out);
	/* 6 ranks shown, a line each in the iterations, the breakdown and the network's table */
	CHECK(rows == 6 * 3, "%d lines of ranks, want 18 (6 ranks in 3 tables):\n%s", rows, out);
	free(out);
	CHECK(ddl_report_run(tdir, "--ranks", "all", &out) == 0, "--ranks all");
	rows = ddl_lines_with(out, "  big");
	CHECK(rows == 40 * 3 && !strstr(out, "least of the ranks"), "--ranks all: %d lines of ranks", rows);
	free(out);
	CHECK(ddl_report_run(tdir, "--ranks", "3,7-8", &out) == 0, "--ranks 3,7-8");
	rows = ddl_lines_with(out, "  big");
	CHECK(rows == 3 * 3 && strstr(out, " rank 3: ") && strstr(out, " rank 7: ") && strstr(out, " rank 8: ") &&
	      strstr(out, "\n  below: the ranks of --ranks 3,7-8 (37 more: --ranks all)\n"),
	      "--ranks 3,7-8: %d lines of ranks:\n%s", rows, out);
	free(out);
	const char *R = tbuild("bin/ddlprof-report");
	char *bad1[] = {(char *)R, "--ranks", "99", tdir, NULL}, *bad2[] = {(char *)R, "--json", "--ranks", "1", tdir, NULL};
	CHECK(trun(bad1, NULL, 60, &r) == 0 && ddl_status(&r) == 1 && strstr(r.err, "no such rank") && !*r.out,
	      "--ranks 99: status %d: %s", ddl_status(&r), r.err);
	trun_free(&r);
	CHECK(trun(bad2, NULL, 60, &r) == 0 && ddl_status(&r) == 2 && strstr(r.err, "every rank"),
	      "--json --ranks: status %d: %s", ddl_status(&r), r.err);
	trun_free(&r);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* A headless browser on PATH, or NULL. */
static const char *ddl_chromium(void)
{
	static const char *const names[] = {"chromium", "chromium-browser", "google-chrome"};
	static char found[PATH_MAX];
	const char *path = getenv("PATH");
	for (size_t i = 0; path && i < sizeof names / sizeof names[0]; i++) {
		for (const char *p = path; *p;) {
			size_t n = strcspn(p, ":");
			snprintf(found, sizeof found, "%.*s/%s", (int)n, p, names[i]);
			if (n && access(found, X_OK) == 0)
				return found;
			p += n + (p[n] == ':');
		}
	}
	return NULL;
}

/* Screenshots HTML (a file) into PNG with CHROME in a window of W x H
 * pixels; the PNG's size in bytes, or -1 (with a message). */
static long ddl_screenshot(const char *chrome, const char *dir, const char *html, const char *png,
                           unsigned w, unsigned h)
{
	char url[PATH_MAX + 16], shot[PATH_MAX + 16], prof[PATH_MAX + 32], win[64];
	snprintf(url, sizeof url, "file://%s", html);
	snprintf(shot, sizeof shot, "--screenshot=%s", png);
	snprintf(prof, sizeof prof, "--user-data-dir=%s/chrome-profile", dir);
	snprintf(win, sizeof win, "--window-size=%u,%u", w, h);
	char *argv[] = {(char *)chrome, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
	                "--hide-scrollbars", "--no-first-run", prof, win, shot, url, NULL};
	struct ddl_run_result r;
	int rc = trun(argv, NULL, 90, &r);
	int ok = rc == 0 && ddl_status(&r) == 0;
	if (!ok)
		fprintf(stderr, "    %s: status %d: %.400s\n", chrome, r.status, r.err);
	trun_free(&r);
	struct stat st;
	FILE *f = ok ? fopen(png, "rb") : NULL;
	unsigned char sig[24] = {0};
	int png_ok = f && fread(sig, 1, sizeof sig, f) == sizeof sig && !memcmp(sig, "\x89PNG\r\n\x1a\n", 8) &&
	             !memcmp(sig + 12, "IHDR", 4);
	if (f)
		fclose(f);
	if (!png_ok || stat(png, &st) != 0)
		return -1;
	/* IHDR: width and height, big-endian */
	unsigned pw = (unsigned)sig[16] << 24 | sig[17] << 16 | sig[18] << 8 | sig[19];
	unsigned ph = (unsigned)sig[20] << 24 | sig[21] << 16 | sig[22] << 8 | sig[23];
	if (pw != w || ph != h) {
		fprintf(stderr, "    %s: screenshot is %ux%u, not %ux%u\n", png, pw, ph, w, h);
		return -1;
	}
	return (long)st.st_size;
}

/* HTML (a file) as CHROME's DOM makes it, serialised, into *OUT (the
 * caller frees); 0, or -1 with a message. */
static int ddl_dom(const char *chrome, const char *dir, const char *html, char **out)
{
	char url[PATH_MAX + 16], prof[PATH_MAX + 32];
	snprintf(url, sizeof url, "file://%s", html);
	snprintf(prof, sizeof prof, "--user-data-dir=%s/chrome-profile", dir);
	char *argv[] = {(char *)chrome, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
	                "--no-first-run", prof, "--dump-dom", url, NULL};
	struct ddl_run_result r;
	int ok = trun(argv, NULL, 90, &r) == 0 && ddl_status(&r) == 0 && r.out && strstr(r.out, "</html>");
	if (!ok)
		fprintf(stderr, "    %s --dump-dom: status %d: %.400s\n", chrome, r.status, r.err);
	*out = ok ? r.out : NULL;
	if (ok)
		r.out = NULL;
	trun_free(&r);
	return ok ? 0 : -1;
}

static uint32_t ddl_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A screenshot's pixels, RGB, row after row. */
struct ddl_img {
	uint32_t w, h;
	unsigned char *rgb;
};

/*
 * Reads PNG (8-bit RGB or RGBA, not interlaced, as Chromium writes its
 * screenshots) into IMG; 0, or -1 when the file is not such a PNG. zlib
 * inflates; the row filters are undone here.
 */
static int ddl_png_load(const char *png, struct ddl_img *img)
{
	FILE *f = fopen(png, "rb");
	if (!f)
		return -1;
	unsigned char *buf = NULL, *idat = NULL, *raw = NULL;
	size_t n = 0, ni = 0;
	int rc = -1;
	struct stat st;
	memset(img, 0, sizeof *img);
	if (fstat(fileno(f), &st) != 0 || st.st_size < 33 || !(buf = malloc((size_t)st.st_size)) ||
	    fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size)
		goto out;
	n = (size_t)st.st_size;
	if (memcmp(buf, "\x89PNG\r\n\x1a\n", 8) || memcmp(buf + 12, "IHDR", 4))
		goto out;
	uint32_t w = ddl_be32(buf + 16), h = ddl_be32(buf + 20);
	unsigned depth = buf[24], type = buf[25], lace = buf[28];
	unsigned bpp = type == 6 ? 4 : type == 2 ? 3 : 0;
	if (depth != 8 || !bpp || lace || !w || !h || w > 10000 || h > 10000 || !(idat = malloc(n)))
		goto out;
	for (size_t off = 8; off + 12 <= n;) {
		uint32_t len = ddl_be32(buf + off);
		if (len > n - off - 12)
			goto out;
		if (!memcmp(buf + off + 4, "IDAT", 4)) {
			memcpy(idat + ni, buf + off + 8, len);
			ni += len;
		}
		off += 12 + (size_t)len;
	}
	size_t stride = (size_t)w * bpp, want = (size_t)h * (stride + 1);
	uLongf got = (uLongf)want;
	if (!(raw = malloc(want)) || uncompress(raw, &got, idat, (uLong)ni) != Z_OK || got != want ||
	    !(img->rgb = malloc((size_t)w * h * 3)))
		goto out;
	for (uint32_t y = 0; y < h; y++) {
		unsigned char *row = raw + (size_t)y * (stride + 1), *px = row + 1;
		unsigned char *up = y ? raw + (size_t)(y - 1) * (stride + 1) + 1 : NULL;
		for (size_t x = 0; x < stride; x++) {
			int a = x >= bpp ? px[x - bpp] : 0, b = up ? up[x] : 0, c = up && x >= bpp ? up[x - bpp] : 0;
			int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
			switch (row[0]) {
			case 1: px[x] = (unsigned char)(px[x] + a); break;
			case 2: px[x] = (unsigned char)(px[x] + b); break;
			case 3: px[x] = (unsigned char)(px[x] + (a + b) / 2); break;
			case 4: px[x] = (unsigned char)(px[x] + (pa <= pb && pa <= pc ? a : pb <= pc ? b : c)); break;
			default: break;
			}
		}
		for (uint32_t x = 0; x < w; x++)
			memcpy(img->rgb + ((size_t)y * w + x) * 3, px + (size_t)x * bpp, 3);
	}
	img->w = w;
	img->h = h;
	rc = 0;
out:
	fclose(f);
	free(buf);
	free(idat);
	free(raw);
	if (rc)
		free(img->rgb);
	return rc;
}

/* Pixels of IMG in columns X0 to X1 (not included) within 8 of colour RGB
 * in each channel; RGB -1: those that are not white (any channel below 240). */
static long ddl_img_count(const struct ddl_img *img, long rgb, uint32_t x0, uint32_t x1)
{
	long count = 0;
	for (uint32_t y = 0; y < img->h; y++)
		for (uint32_t x = x0; x < x1 && x < img->w; x++) {
			const unsigned char *q = img->rgb + ((size_t)y * img->w + x) * 3;
			count += rgb < 0 ? q[0] < 240 || q[1] < 240 || q[2] < 240
			                 : abs(q[0] - (int)(rgb >> 16 & 255)) <= 8 &&
			                       abs(q[1] - (int)(rgb >> 8 & 255)) <= 8 &&
			                       abs(q[2] - (int)(rgb & 255)) <= 8;
		}
	return count;
}

/* Pixels of the PNG within 8 of colour RGB, as ddl_img_count; -1 when it cannot be read. */
static long ddl_png_count(const char *png, unsigned rgb)
{
	struct ddl_img img;
	if (ddl_png_load(png, &img) < 0)
		return -1;
	long n = ddl_img_count(&img, rgb, 0, img.w);
	free(img.rgb);
	return n;
}

/*
 * The demo's page (issue 16, item 9) at WIDTH pixels into PNG: a
 * screenshot of the window's size, drawn (far from blank, the charts in
 * their colours), and no wider than the window: its right margin clear.
 */
static int ddl_check_shot(const char *chrome, const char *dir, const char *html, const char *png,
                          unsigned width, unsigned height)
{
	CHECK(ddl_screenshot(chrome, dir, html, png, width, height) > 0, "no screenshot at %u pixels", width);
	struct ddl_img img;
	CHECK(ddl_png_load(png, &img) == 0, "%s: not a PNG of ours", png);
	long ink = ddl_img_count(&img, -1, 0, img.w), margin = ddl_img_count(&img, -1, img.w - 12, img.w);
	long blue = ddl_img_count(&img, 0x4e79a7, 0, img.w), red = ddl_img_count(&img, 0xe15759, 0, img.w);
	long green = ddl_img_count(&img, 0x59a14f, 0, img.w);
	free(img.rgb);
	fprintf(stderr, "    %u px: %s: %ld pixels drawn, %ld compute blue, %ld interconnect green, %ld "
	        "network red, %ld in the right margin\n", width, png, ink, blue, green, red, margin);
	CHECK(ink > (long)width * 300, "the page at %u pixels is nearly blank: %ld pixels drawn", width, ink);
	CHECK(blue > 5000 && green > 5000 && red > 5000, "the charts did not render at %u pixels", width);
	CHECK(margin == 0, "at %u pixels the page is wider than the window (%ld pixels in its right margin)",
	      width, margin);
	return DDL_PASS;
}

/* A duration as the page writes it ("12.345 ms", "81.2 us", "640 ns") at S, in seconds; -1 if none. */
static double ddl_page_dur(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s)
		return -1;
	return !strncmp(end, " ms", 3) ? v / 1e3 : !strncmp(end, " us", 3) ? v / 1e6
	       : !strncmp(end, " ns", 3) ? v / 1e9 : -1;
}

/*
 * The breakdown drawn in time under each timeline of PAGE is that
 * iteration's breakdown: per part, its stretches' durations (their hover
 * texts) add up to what the CSV gives that rank and iteration.
 */
static int ddl_check_lanes(const char *page, const char *csv)
{
	static const char *const part[] = {"compute", "data stall", "interconnect stall", "network stall", "idle"};
	int lanes = 0;
	for (const char *h = page; (h = strstr(h, "<h3>rank ")); h++, lanes++) {
		int rank = -1;
		size_t it = 0;
		const char *at = strstr(h, ": iteration ");
		CHECK(sscanf(h, "<h3>rank %d", &rank) == 1 && at && sscanf(at, ": iteration %zu", &it) == 1,
		      "timeline heading '%.60s'", h);
		const char *end = strstr(h, "</svg></div>");
		CHECK(end, "timeline of rank %d not closed", rank);
		double sum[5] = {0};
		for (const char *t = h; (t = strstr(t, "<title>")) && t < end; t++)
			for (int k = 0; k < 5; k++) {
				size_t n = strlen(part[k]);
				const char *d = t + 7 + n;
				if (strncmp(t + 7, part[k], n) || (*d != ':' && strncmp(d, " and ", 5)))
					continue;
				d = *d == ':' ? d + 2 : strstr(d, " stretches, ") + 12;
				CHECK(ddl_page_dur(d) >= 0, "a stretch's time in '%.80s'", t);
				sum[k] += ddl_page_dur(d);
			}
		/* rank,host,pid,iteration,start_s,duration_s,compute_s,... */
		char key[64];
		snprintf(key, sizeof key, "\n%d,", rank);
		const char *row = NULL;
		for (const char *c = csv; (c = strstr(c, key)); c++) {
			const char *f = c + 1;
			for (int k = 0; k < 3 && f; k++)
				f = strchr(f, ',') ? strchr(f, ',') + 1 : NULL;
			if (f && strtoul(f, NULL, 10) == it)
				row = f;
		}
		CHECK(row, "no CSV row of rank %d, iteration %zu", rank, it);
		for (int k = 0; k < 2 && row; k++)
			row = strchr(row, ',') + 1;
		for (int k = 0; k < 5; k++) {
			double want = strtod(strchr(row, ',') + 1, NULL);
			row = strchr(row, ',') + 1;
			/* each hover text rounds to 0.5 us at most; a lane has tens of them */
			CHECK(fabs(sum[k] - want) < 50e-6, "rank %d, iteration %zu: %s %.6f s drawn in time, %.6f s "
			      "in the CSV", rank, it, part[k], sum[k], want);
		}
	}
	CHECK(lanes == 4, "%d timelines, not 4", lanes);
	return DDL_PASS;
}

/*
 * The demo's HTML page (make demo's job: 4 ranks on 2 emulated hosts) in
 * the browser: the DOM Chromium builds holds the chart of iteration times
 * with its legend and labelled axes, the overlap and straggler sections,
 * the breakdown drawn in time under each timeline, and hover texts with
 * durations and bytes, the stretches of each drawn breakdown adding up to
 * that iteration's parts; screenshots at 1400 and 900 pixels wide are left in
 * build/tests/ (html-1400.png, html-900.png, beside the page, html-demo.html)
 * to look at.
 */
static int ddl_check_demo_page(const char *chrome, const char *dir)
{
	const char *synth = tbuild("examples/ddlsynth");
	if (access(synth, X_OK) != 0) {
		fprintf(stderr, "    no ddlsynth (built without the CUDA headers): the demo's page left out\n");
		return DDL_PASS;
	}
	char tdir[4200], html[PATH_MAX];
	snprintf(tdir, sizeof tdir, "%s/demo", dir);
	snprintf(html, sizeof html, "%s", tbuild("tests/html-demo.html"));
	const char *args[] = {synth, "--ranks", "4", "--ranks-per-host", "2", "--layers", "6",
	                      "--params-per-layer", "500k", "--compute-ms", "4", "--bucket-mb", "4",
	                      "--overlap", "off", "--allreduce", "hierarchical", "--intra-gbps", "2",
	                      "--net-gbps", "0.5", "--input-mb", "2", "--data-ms", "3", "--iterations", "12",
	                      "--markers", "--quiet", NULL};
	CHECK(ddl_profile(tdir, args) == 0, "the demo's ddlsynth");
	char *argv[] = {(char *)tbuild("bin/ddlprof-report"), "--html", "--force", "-o", html, tdir, NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 60, &r) == 0 && ddl_status(&r) == 0, "ddlprof-report --html: %s", r.err);
	trun_free(&r);
	char *page, *csv;
	CHECK(ddl_report_run(tdir, "--html", NULL, &page) == 0 && ddl_report_run(tdir, "--csv", NULL, &csv) == 0,
	      "--html and --csv");
	int rc = ddl_check_lanes(page, csv);
	free(page);
	free(csv);
	if (rc != DDL_PASS)
		return rc;
	char *dom;
	CHECK(ddl_dom(chrome, dir, html, &dom) == 0, "no DOM of the demo's page");
	static const char *const want[] = {
		"<h2>Iteration time over the run</h2>", "class=\"legend\"><span><i class=\"ln\"",
		">iteration time (ms)</text>", "iteration (numbered from the start of the run",
		"<h2>Communication and computation overlap</h2>", "of communication was hidden",
		"<th>hidden", "<h2>Stragglers</h2>", "makes others wait",
		"breakdown in time</div>", "is drawn on the same time axis (it is not a sum)",
		"<title>network stall: ", "<title>ddk_compute_kernel", "<title>allreduce: ", " ms at +", " MiB</title>",
	};
	for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
		CHECK(strstr(dom, want[k]), "the demo's page in the browser has no '%s'", want[k]);
	/* the chart: a line, and a legend entry, for each of the 4 ranks */
	CHECK(ddl_count_of(dom, "<polyline") == 4 && ddl_count_of(dom, "<i class=\"ln\"") == 4,
	      "%d lines and %d legend entries in the chart of iteration times, not 4",
	      ddl_count_of(dom, "<polyline"), ddl_count_of(dom, "<i class=\"ln\""));
	/* the ranks' lines in none of the parts' colours */
	static const char *const parts[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#bab0ac"};
	for (const char *l = dom; (l = strstr(l, "<polyline")); l++) {
		const char *stroke = strstr(l, "stroke=\"");
		for (size_t k = 0; stroke && k < 5; k++)
			CHECK(strncmp(stroke + 8, parts[k], 7), "a rank's line in the colour of %s", parts[k]);
	}
	/* the breakdown under each timeline, in time: from the iteration's start */
	CHECK(ddl_count_of(dom, "breakdown in time</div>") == 4, "%d breakdowns drawn in time, not 4",
	      ddl_count_of(dom, "breakdown in time</div>"));
	free(dom);
	char png[2][PATH_MAX];
	snprintf(png[0], sizeof png[0], "%s", tbuild("tests/html-1400.png"));
	snprintf(png[1], sizeof png[1], "%s", tbuild("tests/html-900.png"));
	if (ddl_check_shot(chrome, dir, html, png[0], 1400, 3400) != DDL_PASS)
		return DDL_FAIL;
	return ddl_check_shot(chrome, dir, html, png[1], 900, 4400);
}

/*
 * The HTML page renders in headless Chromium: a screenshot of a real job's
 * page is a PNG of the window's size that holds far more than the same
 * browser's screenshot of an empty page, and its charts are drawn: the
 * breakdown bars' colours cover thousands of pixels. A CPU job (tcpring)
 * shows its training thread's lane; the demo's GPU job is checked as
 * ddl_check_demo_page says. Skipped where no Chromium is installed.
 */
int test_report_out_html_chromium(void)
{
	const char *chrome = ddl_chromium();
	if (!chrome) {
		fprintf(stderr, "    no chromium on PATH: skipped\n");
		return DDL_SKIP;
	}
	char *dir = tmpdir(), tdir[4200], html[4300], blank[4300], png[4300], png0[4300];
	snprintf(tdir, sizeof tdir, "%s/t", dir);
	snprintf(html, sizeof html, "%s/report.html", dir);
	snprintf(blank, sizeof blank, "%s/blank.html", dir);
	snprintf(png, sizeof png, "%s/report.png", dir);
	snprintf(png0, sizeof png0, "%s/blank.png", dir);
	const char *args[] = {tbuild("examples/tcpring"), "-n", "14", "-m", "1", "-c", "8", "-k", NULL};
	if (ddl_profile(tdir, args) != 0) {
		trm(tdir);
		CHECK(ddl_profile(tdir, args) == 0, "tcpring, twice");
	}
	char *argv[] = {(char *)tbuild("bin/ddlprof-report"), "--html", "-o", html, tdir, NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 60, &r) == 0 && ddl_status(&r) == 0, "ddlprof-report --html: %s", r.err);
	trun_free(&r);
	FILE *f = fopen(blank, "w");
	CHECK(f && fputs("<!DOCTYPE html>\n<html><body></body></html>\n", f) >= 0 && fclose(f) == 0, "%s", blank);
	long empty = ddl_screenshot(chrome, dir, blank, png0, 1280, 2000);
	if (empty <= 0) {
		fprintf(stderr, "    %s cannot take a screenshot of an empty page here: skipped\n", chrome);
		trm(dir);
		free(dir);
		return DDL_SKIP;
	}
	long page = ddl_screenshot(chrome, dir, html, png, 1280, 2000);
	CHECK(page > 0, "no screenshot of the report page");
	fprintf(stderr, "    screenshot: %ld bytes for the report, %ld for an empty page\n", page, empty);
	CHECK(page > 8 * empty, "the report's screenshot (%ld bytes) is not much more than an empty page's (%ld)",
	      page, empty);
	/* the charts are drawn: the breakdown bars in the compute and
	 * interconnect colours (tcpring's ranks share one host) */
	long blue = ddl_png_count(png, 0x4e79a7), green = ddl_png_count(png, 0x59a14f);
	fprintf(stderr, "    chart pixels: %ld compute blue, %ld interconnect green\n", blue, green);
	CHECK(blue > 3000 && green > 3000, "the charts did not render: %ld blue and %ld green pixels", blue, green);
	/* a CPU job: each timeline ends in its training thread's lane, drawn in time */
	char *dom;
	CHECK(ddl_dom(chrome, dir, html, &dom) == 0, "no DOM of tcpring's page");
	CHECK(ddl_count_of(dom, ">training thread</div>") == 4 &&
	      ddl_count_of(dom, ": the training thread\">") == 4,
	      "%d training threads' lanes and %d rows, not tcpring's 4",
	      ddl_count_of(dom, ">training thread</div>"), ddl_count_of(dom, ": the training thread\">"));
	CHECK(strstr(dom, "<h2>Communication and computation overlap</h2>") && strstr(dom, "<h2>Stragglers</h2>"),
	      "tcpring's page has no overlap or straggler section");
	free(dom);
	int rc = ddl_check_demo_page(chrome, dir);
	trm(dir);
	free(dir);
	return rc;
}

/* The text report's Network activity table: the lines from the process
 * row of PID to the next process row, into LINES (at most CAP); their
 * count, -1 when there is no such row. Each line is cut at its newline. */
static int ddl_net_block(char *text, long pid, char **lines, int cap)
{
	char key[32];
	snprintf(key, sizeof key, ":%ld ", pid);
	char *at = strstr(text, "\nNetwork activity by process and thread\n");
	int n = -1;
	for (char *line = at ? at + 1 : NULL, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		int process_row = !strncmp(line, "  ", 2) && line[2] != ' ';
		if (process_row && n >= 0)
			break;
		if (process_row && strstr(line, key))
			n = 0;
		else if (n >= 0 && n < cap)
			lines[n++] = line;
		if (!next)
			break;
	}
	return n;
}

/*
 * Names (issue 16, item 6). A program that runs itself again through
 * /proc/self/exe has every thread named "exe" by Linux: the report names
 * them, and the process, by the program's own name, in every output. In
 * the text report each process's command line comes whole right under its
 * row, wrapped at its spaces to the table's 100 columns, before the rows
 * of its threads (ddlsynth's, re-executed as each rank, is longer than a
 * line).
 */
int test_report_out_names(void)
{
	char *dir = tmpdir(), tdir[4200], sdir[4200];
	snprintf(tdir, sizeof tdir, "%s/t", dir);
	snprintf(sdir, sizeof sdir, "%s/s", dir);
	const char *args[] = {tbuild("tests/progs/reexec"), NULL};
	CHECK(ddl_profile(tdir, args) == 0, "reexec");
	int st;
	json_t *rep = treport(tdir, &st);
	CHECK(rep && st == 0, "no JSON report (status %d)", st);
	size_t i, k;
	json_t *p, *th;
	int threads = 0;
	json_array_foreach(json_object_get(rep, "processes"), i, p) {
		CHECK(!strcmp(ddl_jstr(p, "name"), "reexec"), "process %s named '%s'", ddl_jstr(p, "command"),
		      ddl_jstr(p, "name"));
		json_array_foreach(json_object_get(p, "threads"), k, th) {
			CHECK(!strcmp(ddl_jstr(th, "name"), "reexec"), "thread %lld named '%s', not reexec",
			      (long long)json_integer_value(json_object_get(th, "tid")), ddl_jstr(th, "name"));
			threads++;
		}
	}
	CHECK(threads == 2, "%d threads, not reexec's 2", threads);
	json_decref(rep);
	char *out;
	CHECK(ddl_report_run(tdir, "--format", "text", &out) == 0, "text report");
	CHECK(strstr(out, " reexec ") && !strstr(out, " exe "), "text report's threads: %s", out);
	free(out);
	CHECK(ddl_report_run(tdir, "--chrome", NULL, &out) == 0, "--chrome");
	json_t *j = json_loads(out, 0, NULL), *e;
	int named = 0;
	json_array_foreach(json_object_get(j, "traceEvents"), i, e) {
		const char *what = ddl_jstr(e, "name"), *name = ddl_jstr(json_object_get(e, "args"), "name");
		if (!strcmp(what, "thread_name") && !strncmp(name, "stream", 6))
			continue;
		if (!strcmp(what, "thread_name"))
			named += !strcmp(name, "reexec");
		CHECK(strcmp(what, "thread_name") || !strcmp(name, "reexec") || !strcmp(name, "iterations"),
		      "Chrome track '%s'", name);
		CHECK(strcmp(what, "process_name") || strstr(name, ": reexec (pid "), "Chrome process '%s'",
		      name);
	}
	CHECK(named == 2, "%d Chrome tracks named reexec", named);
	json_decref(j);
	free(out);

	const char *synth = tbuild("examples/ddlsynth");
	if (access(synth, X_OK) != 0) {
		fprintf(stderr, "    no ddlsynth (built without the CUDA headers): its command lines left out\n");
		trm(dir);
		free(dir);
		return DDL_PASS;
	}
	const char *sargs[] = {synth, "--ranks", "2", "--layers", "2", "--params-per-layer", "100k",
	                       "--compute-ms", "1", "--bucket-mb", "1", "--iterations", "3",
	                       "--overlap", "off", "--allreduce", "flat", "--intra-gbps", "2",
	                       "--net-gbps", "0.5", "--input-mb", "1", "--data-ms", "1", "--markers",
	                       "--quiet", NULL};
	CHECK(ddl_profile(sdir, sargs) == 0, "ddlsynth");
	rep = treport(sdir, &st);
	CHECK(rep && st == 0, "no JSON report of ddlsynth (status %d)", st);
	CHECK(ddl_report_run(sdir, "--format", "text", &out) == 0, "ddlsynth's text report");
	int procs = 0;
	json_array_foreach(json_object_get(rep, "processes"), i, p) {
		const char *cmd = ddl_jstr(p, "command");
		CHECK(strlen(cmd) > 120, "ddlsynth's command line is only '%s'", cmd);
		CHECK(!strcmp(ddl_jstr(p, "name"), "ddlsynth"), "process named '%s'", ddl_jstr(p, "name"));
		json_array_foreach(json_object_get(p, "threads"), k, th)
			CHECK(!strcmp(ddl_jstr(th, "name"), "ddlsynth"), "a thread of ddlsynth named '%s'",
			      ddl_jstr(th, "name"));
		if (!json_array_size(json_object_get(p, "threads")))
			continue; /* the launcher's command, which recorded nothing itself */
		char *copy = strdup(out), *lines[64];
		long pid = (long)json_integer_value(json_object_get(p, "pid"));
		int n = ddl_net_block(copy, pid, lines, 64);
		CHECK(n >= 2, "no rows under process %ld in the network table", pid);
		/* the command's lines first: "      command: " then lines indented as far */
		CHECK(!strncmp(lines[0], "      command: ", 15), "under process %ld: '%s', not its command",
		      pid, lines[0]);
		char joined[4096] = "";
		int cmd_lines = 0;
		for (int l = 0; l < n && (l == 0 || !strncmp(lines[l], "               ", 15)); l++) {
			const char *text = lines[l] + 15;
			CHECK(strlen(lines[l]) <= 100, "command line wider than the table (%zu): '%s'",
			      strlen(lines[l]), lines[l]);
			CHECK(*text != ' ' && text[strlen(text) - 1] != ' ', "command line padded: '%s'", lines[l]);
			snprintf(joined + strlen(joined), sizeof joined - strlen(joined), "%s%s",
			         cmd_lines++ ? " " : "", text);
		}
		/* whole and cut only at spaces: the lines joined by one space are the command
		 * (and what the report says of the process after it) */
		size_t len = strlen(cmd);
		CHECK(cmd_lines >= 2 && !strncmp(joined, cmd, len) &&
		      (!joined[len] || !strcmp(joined + len, " (after exec)")),
		      "%d lines of command '%s', not '%s'", cmd_lines, joined, cmd);
		/* then the threads, none before the command */
		CHECK(cmd_lines < n && !strncmp(lines[cmd_lines], "    thread ", 11),
		      "after the command of %ld: '%s'", pid, cmd_lines < n ? lines[cmd_lines] : "(nothing)");
		for (int l = cmd_lines; l < n && lines[l][0]; l++)
			CHECK(!strncmp(lines[l], "    thread ", 11) && strstr(lines[l], " ddlsynth "),
			      "a row under process %ld's threads: '%s'", pid, lines[l]);
		free(copy);
		procs++;
	}
	CHECK(procs == 2, "%d processes, not ddlsynth's 2", procs);
	free(out);
	json_decref(rep);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * Runs ARGV with its standard output on a new pseudo-terminal, as from an
 * interactive shell, and stderr captured: into R, what the terminal got
 * in R->out. Returns 0, or -1 when no pseudo-terminal can be had here.
 */
static int ddl_run_on_tty(char *const argv[], struct ddl_run_result *r)
{
	memset(r, 0, sizeof *r);
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0 || !ptsname(m)) {
		if (m >= 0)
			close(m);
		return -1;
	}
	char slave[PATH_MAX], errf[] = "/tmp/ddltest-tty.XXXXXX";
	snprintf(slave, sizeof slave, "%s", ptsname(m));
	int ef = mkstemp(errf);
	if (ef < 0) {
		close(m);
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		setsid();
		int s = open(slave, O_RDWR);
		if (s < 0)
			_exit(120);
		dup2(s, 1);
		dup2(ef, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	size_t cap = 0;
	for (;;) { /* until the terminal's last writer is gone (EIO) */
		char buf[65536];
		ssize_t k = read(m, buf, sizeof buf);
		if (k <= 0)
			break;
		char *q = realloc(r->out, (cap += (size_t)k) + 1);
		if (!q)
			break;
		r->out = q;
		memcpy(r->out + r->nout, buf, (size_t)k);
		r->nout += (size_t)k;
		r->out[r->nout] = 0;
	}
	waitpid(pid, &r->status, 0);
	close(m);
	off_t n = lseek(ef, 0, SEEK_END);
	r->err = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
	if (r->err && n > 0 && pread(ef, r->err, (size_t)n, 0) == n)
		r->nerr = (size_t)n;
	close(ef);
	unlink(errf);
	if (!r->out)
		r->out = calloc(1, 1);
	return 0;
}

/*
 * --chrome and --html with no -o, standard output a terminal: refused,
 * status 2, one line saying to use -o FILE, and nothing on the terminal.
 * With -o, or the text report, a terminal is fine; piped, as every other
 * test here reads them, both are written as before.
 */
int test_report_out_terminal(void)
{
	char *dir = tmpdir(), tdir[4200], file[4300];
	snprintf(tdir, sizeof tdir, "%s/t", dir);
	snprintf(file, sizeof file, "%s/page.html", dir);
	const char *args[] = {tbuild("tests/progs/socketpair"), NULL};
	CHECK(ddl_profile(tdir, args) == 0, "socketpair");
	const char *R = tbuild("bin/ddlprof-report");
	struct ddl_run_result r;
	const char *const refused[][3] = {{"--chrome", NULL}, {"--html", NULL}, {"--format", "html"},
	                                  {"--format", "chrome"}};
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		char *argv[] = {(char *)R, (char *)refused[i][0], (char *)(refused[i][1] ? refused[i][1] : tdir),
		                refused[i][1] ? tdir : NULL, NULL};
		if (ddl_run_on_tty(argv, &r) < 0) {
			fprintf(stderr, "    no pseudo-terminal here: skipped\n");
			trm(dir);
			return DDL_SKIP;
		}
		CHECK(ddl_status(&r) == 2 && r.nout == 0 && strstr(r.err, "use -o FILE") &&
		      strchr(r.err, '\n') == r.err + r.nerr - 1,
		      "%s %s on a terminal: status %d, %zu bytes on it, stderr '%s'", refused[i][0],
		      refused[i][1] ? refused[i][1] : "", ddl_status(&r), r.nout, r.err);
		trun_free(&r);
	}
	char *to_file[] = {(char *)R, "--html", "-o", file, tdir, NULL};
	CHECK(ddl_run_on_tty(to_file, &r) == 0 && ddl_status(&r) == 0 && r.nout == 0, "--html -o: %d %s",
	      ddl_status(&r), r.err);
	trun_free(&r);
	struct stat st;
	CHECK(stat(file, &st) == 0 && st.st_size > 1000, "--html -o wrote no page");
	char *text[] = {(char *)R, tdir, NULL};
	CHECK(ddl_run_on_tty(text, &r) == 0 && ddl_status(&r) == 0 && strstr(r.out, "ddlprof report"),
	      "text on a terminal: %d %s", ddl_status(&r), r.err);
	trun_free(&r);
	char *out;
	CHECK(ddl_report_run(tdir, "--html", NULL, &out) == 0 && strstr(out, "<html"), "--html piped");
	free(out);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * A trace named twice is read once: the directory twice, the directory and
 * its own files, a file through another path (issue 16, 1: the report had
 * counted 19 iterations of a 12-iteration job, and every byte twice).
 */
int test_report_same_file_twice(void)
{
	char *dir = tmpdir(), tdir[4200], other[4300], link[4300];
	snprintf(tdir, sizeof tdir, "%s/t", dir);
	const char *args[] = {tbuild("examples/tcpring"), "-n", "8", "-m", "1", "-c", "5", NULL};
	CHECK(ddl_profile(tdir, args) == 0, "tcpring");
	snprintf(other, sizeof other, "%s/t/../t/.", dir);
	snprintf(link, sizeof link, "%s/l", dir);
	CHECK(symlink(tdir, link) == 0, "symlink");
	char *once;
	CHECK(ddl_report_run(tdir, "--json", NULL, &once) == 0, "report once");
	json_t *a = json_loads(once, 0, NULL);
	CHECK(a && json_array_size(json_object_get(a, "processes")) == 5, "5 processes once (the job and its 4 ranks)");
	const char *R = tbuild("bin/ddlprof-report");
	char pattern[4300];
	snprintf(pattern, sizeof pattern, "%s/*.ddlt", tdir);
	glob_t g;
	CHECK(glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc == 5, "5 trace files");
	char *sets[][8] = {{tdir, tdir}, {tdir, other, link}, {tdir, g.gl_pathv[0], g.gl_pathv[3]},
	                   {g.gl_pathv[1], link}};
	for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++) {
		char *argv[12] = {(char *)R, "--json"};
		int n = 2;
		for (int i = 0; sets[k][i]; i++)
			argv[n++] = sets[k][i];
		argv[n] = NULL;
		struct ddl_run_result r;
		CHECK(trun(argv, NULL, 60, &r) == 0 && ddl_status(&r) == 0, "report of set %zu: %s", k, r.err);
		json_t *b = json_loads(r.out, 0, NULL);
		trun_free(&r);
		CHECK(b, "set %zu: no JSON", k);
		/* the same report, field for field, but for the paths it was given */
		json_object_del(a, "inputs");
		json_object_del(b, "inputs");
		char *x = json_dumps(a, JSON_SORT_KEYS), *y = json_dumps(b, JSON_SORT_KEYS);
		CHECK(x && y && !strcmp(x, y), "set %zu: not the report of the traces once (%zu and %zu bytes)",
		      k, x ? strlen(x) : 0, y ? strlen(y) : 0);
		free(x);
		free(y);
		json_decref(b);
	}
	globfree(&g);
	json_decref(a);
	free(once);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* Whether stderr names PATH and no temporary file of ours. */
static int ddl_names_path(const struct ddl_run_result *r, const char *path)
{
	return strstr(r->err, path) && !strstr(r->err, ".tmp");
}

/*
 * Every message about an output names the path the user gave, never a
 * temporary file of ours (the report writes PATH.tmp.PID, then renames):
 * every format of ddlprof-report and --compare into a directory that is
 * not there, and (as root) into a full file system, where the write
 * fails; ddlprof-sim --jobs-out, ddlprof-recommend -o and ddlsynth
 * --plan-json likewise.
 */
int test_report_out_user_paths(void)
{
	char *dir = tmpdir(), tdir[4200], out[4300], cmp1[4300], cmp2[4300];
	snprintf(tdir, sizeof tdir, "%s/t", dir);
	const char *args[] = {tbuild("tests/progs/socketpair"), NULL};
	CHECK(ddl_profile(tdir, args) == 0, "socketpair");
	const char *R = tbuild("bin/ddlprof-report");
	struct ddl_run_result r;
	const char *formats[] = {"--json", "--csv", "--chrome", "--html", "--dump", "--quiet"};
	for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
		snprintf(out, sizeof out, "%s/missing/r%zu.out", dir, i);
		char *argv[] = {(char *)R, (char *)formats[i], "-o", out, tdir, NULL};
		CHECK(trun(argv, NULL, 30, &r) == 0 && ddl_status(&r) == 1 && ddl_names_path(&r, out),
		      "%s -o %s: status %d, stderr '%s'", formats[i], out, ddl_status(&r), r.err);
		trun_free(&r);
	}
	snprintf(cmp1, sizeof cmp1, "single=%s", tdir);
	snprintf(cmp2, sizeof cmp2, "node=%s", tdir);
	snprintf(out, sizeof out, "%s/missing/compare.txt", dir);
	char *cmp[] = {(char *)R, "--compare", cmp1, cmp2, "-o", out, NULL};
	CHECK(trun(cmp, NULL, 30, &r) == 0 && ddl_status(&r) != 0 && ddl_names_path(&r, out),
	      "--compare -o %s: status %d, stderr '%s'", out, ddl_status(&r), r.err);
	trun_free(&r);

	if (geteuid() == 0) {
		char mnt[4300];
		snprintf(mnt, sizeof mnt, "%s/mnt", dir);
		if (tfulldisk(mnt) == 0) {
			int rc = DDL_PASS;
			for (size_t i = 0; i < 4 && rc == DDL_PASS; i++) {
				snprintf(out, sizeof out, "%s/r%zu.out", mnt, i);
				char *argv[] = {(char *)R, (char *)formats[i], "-o", out, tdir, NULL};
				if (trun(argv, NULL, 30, &r) != 0 || ddl_status(&r) != 1 || !ddl_names_path(&r, out) ||
				    !strstr(r.err, "No space left") || !ddl_no_tmp_left(mnt)) {
					fprintf(stderr, "    %s -o %s (full): status %d, stderr '%s'\n", formats[i], out,
					        ddl_status(&r), r.err);
					rc = DDL_FAIL;
				}
				trun_free(&r);
			}
			umount(mnt);
			if (rc != DDL_PASS)
				return rc;
		} else {
			fprintf(stderr, "    cannot mount a tmpfs: the full disk left out\n");
		}
	}

	snprintf(out, sizeof out, "%s/missing/jobs.json", dir);
	char *sim[] = {(char *)tbuild("bin/ddlprof-sim"), "--trace", (char *)tbuild("../examples/jobs.csv"),
	               "-q", "--jobs-out", out, NULL};
	CHECK(trun(sim, NULL, 60, &r) == 0 && ddl_status(&r) == 1 && ddl_names_path(&r, out),
	      "ddlprof-sim --jobs-out %s: status %d, stderr '%s'", out, ddl_status(&r), r.err);
	trun_free(&r);
	snprintf(out, sizeof out, "%s/missing/rec.json", dir);
	char *rec[] = {(char *)tbuild("bin/ddlprof-recommend"), "--layers", "8", "--params", "10000000",
	               "--compute-ms", "20", "--iterations", "1000", "--json", "-o", out, NULL};
	CHECK(trun(rec, NULL, 60, &r) == 0 && ddl_status(&r) == 1 && ddl_names_path(&r, out),
	      "ddlprof-recommend -o %s: status %d, stderr '%s'", out, ddl_status(&r), r.err);
	trun_free(&r);
	const char *synth = tbuild("examples/ddlsynth");
	if (access(synth, X_OK) == 0) {
		snprintf(out, sizeof out, "%s/missing/plan.json", dir);
		char *s[] = {(char *)synth, "--ranks", "2", "--layers", "2", "--params-per-layer", "1000",
		             "--compute-ms", "1", "--iterations", "2", "--plan-json", out, NULL};
		CHECK(trun(s, NULL, 60, &r) == 0 && ddl_status(&r) != 0 && ddl_names_path(&r, out),
		      "ddlsynth --plan-json %s: status %d, stderr '%s'", out, ddl_status(&r), r.err);
		trun_free(&r);
	}
	trm(dir);
	free(dir);
	return DDL_PASS;
}
