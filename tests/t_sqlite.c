/*
 * ddlprof-report --sqlite, queried as its users query it: with the sqlite3
 * shell and with Python's sqlite3 module (/usr/bin/python3), each query
 * through both, their answers held against the JSON report and --dump of
 * the same traces.
 *
 * sqlite_synth      ddlsynth on the CUDA/NCCL emulation (4 ranks on 2
 *                   hosts; skipped where it was not built): network stall
 *                   per rank equals the JSON's ranks[].breakdown_s, bytes
 *                   per collective operation its job.collectives.by_op,
 *                   calls and device intervals the lines of --dump, and
 *                   iterations per rank the JSON's
 * sqlite_cpu        a program with hostile names (tests/progs/outnames):
 *                   calls equal the JSON's events and --dump's lines, every
 *                   row of every table reads in Python (valid UTF-8), and
 *                   every table and column is in ddlprof-report(1)
 * sqlite_bad_paths  where the database may not go: a missing directory, a
 *                   file there already (--force), a directory, a FIFO, a
 *                   device, a link to nothing, a file-size limit; a link to
 *                   a file stays a link; nothing is left half-written
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

static int sq_status(const struct ddl_run_result *r)
{
	return WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1;
}

/* Runs ARGV; its stdout into *OUT (caller frees); its exit status, -1 if it did not finish. */
static int sq_run(char *const argv[], char **out)
{
	struct ddl_run_result r;
	*out = NULL;
	if (trun(argv, NULL, 120, &r) < 0) {
		trun_free(&r);
		return -1;
	}
	int st = sq_status(&r);
	if (st != 0)
		fprintf(stderr, "    %s: status %d: %s\n", argv[0], st, r.err);
	*out = r.out;
	free(r.err);
	return st;
}

/* The rows SQL gives on DB, as one of the two clients prints them. */
#define SQ_ROWS 256
#define SQ_COLS 8
struct sq_rows {
	int n;
	char f[SQ_ROWS][SQ_COLS][64];
	int nf[SQ_ROWS];
};

static const char sq_py[] =
	"import sqlite3, sys\n"
	"c = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True)\n"
	"for row in c.execute(sys.argv[2]):\n"
	"    print('|'.join('' if v is None else repr(v) if isinstance(v, float) else str(v)"
	" for v in row))\n";

/* SQL on DB through the sqlite3 shell (PY 0) or Python (PY 1) into R: fields split at '|'. */
static int sq_query(const char *db, const char *sql, int py, struct sq_rows *r)
{
	char *cli[] = {"sqlite3", "-batch", "-bail", "-readonly", (char *)db, (char *)sql, NULL};
	char *pyv[] = {"/usr/bin/python3", "-c", (char *)sq_py, (char *)db, (char *)sql, NULL};
	char *out;
	CHECK(sq_run(py ? pyv : cli, &out) == 0, "%s: %s", py ? "python3" : "sqlite3", sql);
	memset(r, 0, sizeof *r);
	char *save;
	for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		CHECK(r->n < SQ_ROWS, "more than %d rows: %s", SQ_ROWS, sql);
		char *p = line;
		for (;;) {
			size_t len = strcspn(p, "|");
			CHECK(r->nf[r->n] < SQ_COLS && len < sizeof r->f[0][0], "row '%s'", line);
			memcpy(r->f[r->n][r->nf[r->n]++], p, len);
			if (!p[len])
				break;
			p += len + 1;
		}
		r->n++;
	}
	free(out);
	return DDL_PASS;
}

static double sq_num(const struct sq_rows *r, int row, int col)
{
	char *end;
	double v = row < r->n && col < r->nf[row] ? strtod(r->f[row][col], &end) : NAN;
	return row < r->n && col < r->nf[row] && *r->f[row][col] && !*end ? v : NAN;
}

/* Whether A and B agree to REL (relative) or 1e-12 (absolute). */
static int sq_close(double a, double b, double rel)
{
	return isfinite(a) && isfinite(b) && fabs(a - b) <= rel * fabs(b) + 1e-12;
}

/* SQL through both clients into R (the shell's), which must agree row by row. */
static int sq_both(const char *db, const char *sql, struct sq_rows *r)
{
	static struct sq_rows py;
	if (sq_query(db, sql, 0, r) != DDL_PASS || sq_query(db, sql, 1, &py) != DDL_PASS)
		return DDL_FAIL;
	CHECK(r->n == py.n, "%s: %d rows from sqlite3, %d from Python", sql, r->n, py.n);
	for (int i = 0; i < r->n; i++) {
		CHECK(r->nf[i] == py.nf[i], "%s: row %d has %d and %d fields", sql, i, r->nf[i], py.nf[i]);
		for (int k = 0; k < r->nf[i]; k++) {
			double a = sq_num(r, i, k), b = sq_num(&py, i, k);
			CHECK(isnan(a) && isnan(b) ? !strcmp(r->f[i][k], py.f[i][k]) : sq_close(a, b, 1e-13),
			      "%s: row %d field %d: '%s' from sqlite3, '%s' from Python", sql, i, k,
			      r->f[i][k], py.f[i][k]);
		}
	}
	return DDL_PASS;
}

/* ddlprof-report OPT DIR's stdout (caller frees), or NULL. */
static char *sq_report(const char *dir, const char *opt)
{
	char *argv[] = {(char *)tbuild("bin/ddlprof-report"), "-q", (char *)opt, (char *)dir, NULL};
	char *out;
	if (sq_run(argv, &out) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* --dump's events of OS pid PID (-1: all), device intervals alone when DEVICE. */
static long sq_dump_count(const char *dump, long pid, int device)
{
	long n = 0;
	for (const char *l = dump; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
		char host[128], kind[96];
		long p, tid;
		double ts;
		if (*l == '#' || sscanf(l, "%127s %ld %ld %lf %95s", host, &p, &tid, &ts, kind) != 5)
			continue;
		int dev = !strcmp(kind, "kernel") || !strcmp(kind, "memcpy") || !strcmp(kind, "memset") ||
		          !strcmp(kind, "collective") || !strcmp(kind, "graph");
		n += (pid < 0 || p == pid) && (!device || dev);
	}
	return n;
}

/* Profiles ARGS (NULL-terminated) into TDIR and writes its database DB; 0 or -1. */
static int sq_profile(const char *tdir, const char *db, const char *const *args)
{
	char *argv[40] = {(char *)tbuild("bin/ddlprof"), "-q", "--kernel-sample", "1", "-o", (char *)tdir, "--"};
	int n = 7;
	for (int i = 0; args[i] && n < 38; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 180, &r) == 0 && sq_status(&r) == 0, "%s under ddlprof: %s", args[0], r.err);
	trun_free(&r);
	char *rep[] = {(char *)tbuild("bin/ddlprof-report"), "--sqlite", (char *)db, (char *)tdir, NULL};
	CHECK(trun(rep, NULL, 120, &r) == 0 && sq_status(&r) == 0, "--sqlite: status %d: %s", sq_status(&r),
	      r.err);
	CHECK(r.nout == 0 && r.nerr == 0, "--sqlite alone printed '%.200s' and '%.200s'", r.out, r.err);
	trun_free(&r);
	return DDL_PASS;
}

/*
 * What the acceptance asks of every database, against the JSON report
 * REP and --dump DUMP of the same traces: network stall per rank, bytes
 * per collective operation, calls, iterations per rank; and the meta.
 */
static int sq_check_against(const char *db, json_t *rep, const char *dump)
{
	static struct sq_rows q;
	/* network stall per rank: the mean over its analysed iterations */
	CHECK(sq_both(db, "SELECT p.rank, p.pid, AVG(b.network_stall_s) FROM breakdown b JOIN processes p "
	              "ON p.id = b.process_id GROUP BY b.process_id ORDER BY b.process_id", &q) == DDL_PASS,
	      "network stall per rank");
	int ranks_with = 0;
	size_t i;
	json_t *jr;
	json_array_foreach(json_object_get(rep, "ranks"), i, jr)
		ranks_with += json_integer_value(json_object_get(jr, "iterations")) > 0;
	CHECK(q.n == ranks_with && q.n > 0, "%d ranks with iterations in the database, %d in the JSON", q.n,
	      ranks_with);
	for (int k = 0; k < q.n; k++) {
		json_t *r = trank(rep, (long)sq_num(&q, k, 1));
		CHECK(r, "pid %s is not a rank of the JSON", q.f[k][1]);
		double want = json_number_value(tjget(r, "breakdown_s.network_stall")), got = sq_num(&q, k, 2);
		CHECK(sq_close(got, want, 1e-7), "pid %s: network stall %.12g s in SQL, %.12g in the JSON",
		      q.f[k][1], got, want);
	}
	/* the other parts too, and the parts of each iteration add up to it */
	CHECK(sq_query(db, "SELECT p.pid, AVG(compute_s), AVG(data_stall_s), AVG(interconnect_stall_s), "
	               "AVG(idle_s), MAX(ABS(compute_s + data_stall_s + interconnect_stall_s + "
	               "network_stall_s + idle_s - duration_s)) FROM breakdown b JOIN processes p ON "
	               "p.id = b.process_id GROUP BY b.process_id", 1, &q) == DDL_PASS, "parts");
	static const char *const parts[] = {"compute", "data_stall", "interconnect_stall", "idle"};
	for (int k = 0; k < q.n; k++) {
		json_t *bs = json_object_get(trank(rep, (long)sq_num(&q, k, 0)), "breakdown_s");
		for (int p = 0; p < 4; p++)
			CHECK(sq_close(sq_num(&q, k, 1 + p), json_number_value(json_object_get(bs, parts[p])), 1e-7),
			      "pid %s: %s %s in SQL", q.f[k][0], parts[p], q.f[k][1 + p]);
		CHECK(sq_num(&q, k, 5) <= 1e-6, "pid %s: parts off their iteration by %s s", q.f[k][0], q.f[k][5]);
	}
	/* bytes per collective operation, as the JSON's job.collectives.by_op */
	CHECK(sq_both(db, "SELECT op, SUM(bytes), COUNT(*) FROM collectives GROUP BY op ORDER BY op", &q) ==
	      DDL_PASS, "bytes per op");
	json_t *by_op = tjget(rep, "job.collectives.by_op");
	CHECK((size_t)q.n == json_object_size(by_op), "%d operations in SQL, %zu in the JSON", q.n,
	      json_object_size(by_op));
	for (int k = 0; k < q.n; k++) {
		json_t *o = json_object_get(by_op, q.f[k][0]);
		CHECK(o, "operation '%s' is not in the JSON", q.f[k][0]);
		CHECK(sq_num(&q, k, 1) == (double)json_integer_value(json_object_get(o, "bytes")) &&
		      sq_num(&q, k, 2) == (double)json_integer_value(json_object_get(o, "count")),
		      "%s: %s bytes in %s calls in SQL, %lld in %lld in the JSON", q.f[k][0], q.f[k][1], q.f[k][2],
		      (long long)json_integer_value(json_object_get(o, "bytes")),
		      (long long)json_integer_value(json_object_get(o, "count")));
	}
	CHECK(sq_both(db, "SELECT COUNT(*), (SELECT COUNT(*) FROM device_intervals), (SELECT SUM(events) FROM "
	              "processes) FROM calls", &q) == DDL_PASS, "counts");
	long json_events = 0;
	json_t *p;
	json_array_foreach(json_object_get(rep, "processes"), i, p)
		json_events += (long)json_integer_value(json_object_get(p, "events"));
	CHECK(sq_num(&q, 0, 0) == (double)sq_dump_count(dump, -1, 0), "%s calls, %ld events in --dump",
	      q.f[0][0], sq_dump_count(dump, -1, 0));
	CHECK(sq_num(&q, 0, 1) == (double)sq_dump_count(dump, -1, 1), "%s device intervals, %ld in --dump",
	      q.f[0][1], sq_dump_count(dump, -1, 1));
	CHECK(sq_num(&q, 0, 2) == (double)json_events, "processes.events sum to %s, the JSON's to %ld",
	      q.f[0][2], json_events);
	/* per process: calls against --dump, iterations against the JSON */
	CHECK(sq_both(db, "SELECT p.pid, (SELECT COUNT(*) FROM calls c WHERE c.process_id = p.id), "
	              "(SELECT COUNT(*) FROM iterations i WHERE i.process_id = p.id), p.events FROM "
	              "processes p ORDER BY p.id", &q) == DDL_PASS, "per process");
	CHECK((size_t)q.n == json_array_size(json_object_get(rep, "processes")), "%d processes", q.n);
	for (int k = 0; k < q.n; k++) {
		long pid = (long)sq_num(&q, k, 0);
		json_t *r = trank(rep, pid);
		long iters = r ? (long)json_integer_value(json_object_get(r, "iterations")) : 0;
		CHECK(sq_num(&q, k, 1) == (double)sq_dump_count(dump, pid, 0), "pid %ld: %s calls, %ld in --dump",
		      pid, q.f[k][1], sq_dump_count(dump, pid, 0));
		CHECK(sq_num(&q, k, 2) == (double)iters, "pid %ld: %s iterations, the JSON says %ld", pid,
		      q.f[k][2], iters);
		CHECK(sq_num(&q, k, 3) == (double)json_integer_value(json_object_get(tproc(rep, pid), "events")),
		      "pid %ld: events %s", pid, q.f[k][3]);
	}
	/* the meta, and the file's own marks */
	CHECK(sq_both(db, "SELECT (SELECT value FROM meta WHERE key = 'schema_version'), (SELECT value FROM "
	              "meta WHERE key = 'run_id'), (SELECT value FROM meta WHERE key = 'ddlprof_version'), "
	              "(SELECT user_version FROM pragma_user_version), (SELECT application_id FROM "
	              "pragma_application_id)", &q) == DDL_PASS, "meta");
	CHECK(q.n == 1 && !strcmp(q.f[0][0], "1") && !strcmp(q.f[0][3], "1") &&
	      !strcmp(q.f[0][4], "1684302960"), "schema version %s, user_version %s, application_id %s",
	      q.f[0][0], q.f[0][3], q.f[0][4]);
	CHECK(!strcmp(q.f[0][1], json_string_value(json_object_get(rep, "run_id"))), "run id %s", q.f[0][1]);
	CHECK(*q.f[0][2], "no ddlprof version");
	return DDL_PASS;
}

/*
 * Profiles ARGS into a new directory *DIR (for the caller to remove and
 * free), writes its database DB (N bytes) and holds it against the JSON
 * report *REP (for the caller to release) and --dump.
 */
static int sq_fixture(const char *const *args, char **dir, char *db, size_t n, json_t **rep)
{
	char tdir[4200];
	*dir = tmpdir();
	snprintf(tdir, sizeof tdir, "%s/t", *dir);
	snprintf(db, n, "%s/run.db", *dir);
	CHECK(sq_profile(tdir, db, args) == DDL_PASS, "%s", args[0]);
	int st;
	*rep = treport(tdir, &st);
	char *dump = sq_report(tdir, "--dump");
	CHECK(*rep && st == 0 && dump, "the JSON report and --dump");
	CHECK(sq_check_against(db, *rep, dump) == DDL_PASS, "against the JSON and --dump");
	free(dump);
	return DDL_PASS;
}

int test_sqlite_synth(void)
{
	const char *synth = tbuild("examples/ddlsynth");
	if (access(synth, X_OK) != 0)
		return DDL_SKIP; /* built without the CUDA headers */
	char *dir, db[4200];
	json_t *rep;
	const char *args[] = {synth, "--ranks", "4", "--ranks-per-host", "2", "--layers", "3",
	                      "--params-per-layer", "200k", "--compute-ms", "3", "--bucket-mb", "1",
	                      "--iterations", "8", "--overlap", "off", "--net-gbps", "0.5", "--markers",
	                      "--quiet", NULL};
	CHECK(sq_fixture(args, &dir, db, sizeof db, &rep) == DDL_PASS, "ddlsynth");
	/* a GPU job has all of it: network stall, collectives, device intervals */
	static struct sq_rows q;
	CHECK(sq_both(db, "SELECT (SELECT SUM(network_stall_s) FROM breakdown), (SELECT COUNT(*) FROM "
	              "collectives WHERE span = 'inter'), (SELECT COUNT(*) FROM device_intervals WHERE kind = "
	              "'kernel' AND name = 'ddk_compute_kernel' AND part = 'compute'), (SELECT COUNT(*) FROM "
	              "device_intervals d JOIN calls c ON c.id = d.issued_by WHERE d.kind = 'kernel' AND "
	              "c.class = 'launch'), (SELECT COUNT(*) FROM device_intervals WHERE kind = 'kernel')",
	              &q) == DDL_PASS, "GPU job");
	CHECK(sq_num(&q, 0, 0) > 0 && sq_num(&q, 0, 1) > 0 && sq_num(&q, 0, 2) > 0,
	      "network stall %s s, %s collectives across hosts, %s compute kernels", q.f[0][0], q.f[0][1],
	      q.f[0][2]);
	CHECK(!strcmp(q.f[0][3], q.f[0][4]), "%s of %s kernels tied to their launch", q.f[0][3], q.f[0][4]);
	json_decref(rep);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* Whether SECTION (of ddlprof-report(1)) has NAME in the tag of a .TP paragraph, in bold. */
static int sq_documented(const char *section, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = section; (p = strstr(p, "\n.TP\n.B")); p += 8) {
		const char *tag = p + 5, *eol = strchr(tag, '\n');
		for (const char *w = tag + 3; w && w < (eol ? eol : w + strlen(w)); w++) {
			int start = w[-1] == ' ' || w[-1] == '"';
			if (start && !strncmp(w, name, n) && strchr(" \",\n", w[n]))
				return 1;
		}
	}
	return 0;
}

int test_sqlite_cpu(void)
{
	char *dir, db[4200];
	json_t *rep;
	const char *args[] = {tbuild("tests/progs/outnames"), NULL};
	CHECK(sq_fixture(args, &dir, db, sizeof db, &rep) == DDL_PASS, "outnames");
	/* a trace without args records: a row per event the JSON counts */
	static struct sq_rows q;
	CHECK(sq_both(db, "SELECT COUNT(*), (SELECT SUM(events) FROM processes) FROM calls", &q) == DDL_PASS,
	      "calls");
	CHECK(!strcmp(q.f[0][0], q.f[0][1]), "%s calls, %s events", q.f[0][0], q.f[0][1]);
	/* every row of every table reads in Python, names as the program gave them (bad bytes U+FFFD) */
	char *all[] = {"/usr/bin/python3", "-c",
	               "import sqlite3, sys\n"
	               "c = sqlite3.connect(sys.argv[1])\n"
	               "n = 0\n"
	               "for (t,) in c.execute(\"SELECT name FROM sqlite_master WHERE type = 'table'\"):\n"
	               "    n += len(c.execute('SELECT * FROM ' + t).fetchall())\n"
	               "names = {r[0] for r in c.execute('SELECT name FROM calls UNION SELECT name FROM threads')}\n"
	               "assert '<script>alert(1)</script>' in names, names\n"
	               "assert '<b>\"x&y\\'' in names, names\n"
	               "assert any(s and s.startswith('bad \\ufffd\\ufffd utf-8') for s in names), names\n"
	               "print(n)\n",
	               db, NULL};
	char *out;
	CHECK(sq_run(all, &out) == 0 && atol(out) > 0, "reading every row in Python: %s", out ? out : "");
	free(out);
	/* every table and column the database has is in the man page's SQLITE SCHEMA */
	CHECK(sq_query(db, "SELECT m.name, c.name FROM sqlite_master m, pragma_table_info(m.name) c WHERE "
	               "m.type = 'table' ORDER BY m.name, c.cid", 0, &q) == DDL_PASS, "columns");
	FILE *f = fopen(tbuild("../man/ddlprof-report.1"), "r");
	CHECK(f, "man/ddlprof-report.1: %s", strerror(errno));
	char *man = NULL;
	size_t cap = 0;
	CHECK(getdelim(&man, &cap, 0, f) > 0, "man page empty");
	fclose(f);
	char *sec = strstr(man, "\n.SH SQLITE SCHEMA\n"), *end = sec ? strstr(sec + 1, "\n.SH ") : NULL;
	CHECK(sec, "ddlprof-report(1) has no SQLITE SCHEMA section");
	if (end)
		*end = 0;
	CHECK(q.n >= 9 * 2, "%d columns", q.n);
	char last[64] = "";
	for (int k = 0; k < q.n; k++) {
		char ss[96];
		snprintf(ss, sizeof ss, "\n.SS %s\n", q.f[k][0]);
		if (strcmp(last, q.f[k][0]))
			CHECK(strstr(sec, ss), "table %s is not documented", q.f[k][0]);
		snprintf(last, sizeof last, "%s", q.f[k][0]);
		char *t = strstr(sec, ss), *next = t ? strstr(t + 1, "\n.SS ") : NULL;
		char save = next ? *next : 0;
		if (next)
			*next = 0;
		int ok = t && sq_documented(t, q.f[k][1]);
		if (next)
			*next = save;
		CHECK(ok, "column %s.%s is not documented under its table", q.f[k][0], q.f[k][1]);
	}
	free(man);
	json_decref(rep);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* Whether DIR holds only the entries named (NULL-terminated): nothing half-written left. */
static int sq_only(const char *dir, const char *const *names)
{
	DIR *d = opendir(dir);
	int ok = d != NULL;
	for (struct dirent *e; d && (e = readdir(d));) {
		int known = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
		for (int i = 0; names[i]; i++)
			known |= !strcmp(e->d_name, names[i]);
		if (!known) {
			fprintf(stderr, "    left in %s: %s\n", dir, e->d_name);
			ok = 0;
		}
	}
	if (d)
		closedir(d);
	return ok;
}

/* Whether PATH is an SQLite database. */
static int sq_is_db(const char *path)
{
	char head[16] = "";
	FILE *f = fopen(path, "rb");
	int ok = f && fread(head, 1, sizeof head, f) == sizeof head && !memcmp(head, "SQLite format 3", 16);
	if (f)
		fclose(f);
	return ok;
}

/* ddlprof-report A...: status STATUS, and one line on stderr holding WHAT and WHAT2 (WHAT NULL: nothing). */
static int sq_expect(const char *const *a, int status, const char *what, const char *what2)
{
	char *argv[12] = {(char *)tbuild("bin/ddlprof-report")};
	char cmd[512] = "";
	for (int i = 0; a[i] && i < 10; i++) {
		argv[i + 1] = (char *)a[i];
		snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), " %s", a[i]);
	}
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 30, &r) == 0, "ddlprof-report%s did not finish", cmd);
	CHECK(sq_status(&r) == status, "ddlprof-report%s: status %d, not %d: %s", cmd, sq_status(&r), status,
	      r.err);
	if (what) {
		CHECK(strstr(r.err, what) && (!what2 || strstr(r.err, what2)), "ddlprof-report%s: '%s' (wanted %s, %s)",
		      cmd, r.err, what, what2 ? what2 : "");
		CHECK(strchr(r.err, '\n') == r.err + r.nerr - 1, "ddlprof-report%s: not one line: '%s'", cmd, r.err);
	} else {
		CHECK(r.nerr == 0, "ddlprof-report%s: '%s'", cmd, r.err);
	}
	trun_free(&r);
	return DDL_PASS;
}

#define SQ_EXPECT(status, what, what2, ...) \
	sq_expect((const char *const[]){__VA_ARGS__, NULL}, status, what, what2)

int test_sqlite_bad_paths(void)
{
	char *dir = tmpdir(), tdir[4200], p[4200], db[4200], nodir[4200], fifo[4200], link[4200],
	     dangling[4200], big[4200];
	snprintf(tdir, sizeof tdir, "%s/t", dir);
	snprintf(db, sizeof db, "%s/run.db", dir);
	const char *args[] = {tbuild("tests/progs/markers"), NULL};
	CHECK(sq_profile(tdir, db, args) == DDL_PASS, "markers");
	struct stat st, st2;
	CHECK(stat(db, &st) == 0 && (st.st_mode & 0777) == 0600 && sq_is_db(db), "the database: mode %o",
	      (unsigned)st.st_mode);
	/* a directory that is not there: its path named, nothing written */
	snprintf(nodir, sizeof nodir, "%s/nodir/run.db", dir);
	CHECK(SQ_EXPECT(1, nodir, "No such file", "--sqlite", nodir, tdir) == DDL_PASS, "missing dir");
	/* there already: refused, untouched; replaced with --force */
	CHECK(SQ_EXPECT(1, db, "--force", "--sqlite", db, tdir) == DDL_PASS, "existing file");
	CHECK(stat(db, &st2) == 0 && st2.st_ino == st.st_ino && st2.st_mtime == st.st_mtime, "touched");
	CHECK(SQ_EXPECT(0, NULL, NULL, "--force", "--sqlite", db, tdir) == DDL_PASS, "--force");
	CHECK(stat(db, &st2) == 0 && st2.st_ino != st.st_ino && sq_is_db(db), "not replaced");
	/* a directory, a FIFO, a device, a link to nothing: refused, each left as it was */
	CHECK(SQ_EXPECT(1, dir, "directory", "--force", "--sqlite", dir, tdir) == DDL_PASS, "directory");
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	CHECK(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno));
	CHECK(SQ_EXPECT(1, fifo, "not a regular file", "--force", "--sqlite", fifo, tdir) == DDL_PASS, "FIFO");
	CHECK(lstat(fifo, &st2) == 0 && S_ISFIFO(st2.st_mode), "the FIFO was replaced");
	CHECK(SQ_EXPECT(1, "/dev/null", "not a regular file", "--force", "--sqlite", "/dev/null", tdir) ==
	      DDL_PASS, "device");
	CHECK(stat("/dev/null", &st2) == 0 && S_ISCHR(st2.st_mode), "/dev/null was replaced");
	snprintf(dangling, sizeof dangling, "%s/dangling.db", dir);
	CHECK(symlink("nowhere/at/all", dangling) == 0, "symlink: %s", strerror(errno));
	CHECK(SQ_EXPECT(1, dangling, "link to nothing", "--force", "--sqlite", dangling, tdir) == DDL_PASS,
	      "dangling link");
	/* a link to a database: refused without --force; with it the link stays, its target replaced */
	snprintf(link, sizeof link, "%s/link.db", dir);
	CHECK(symlink("run.db", link) == 0, "symlink: %s", strerror(errno));
	CHECK(stat(db, &st) == 0, "stat");
	CHECK(SQ_EXPECT(1, link, "--force", "--sqlite", link, tdir) == DDL_PASS, "link");
	CHECK(SQ_EXPECT(0, NULL, NULL, "--force", "--sqlite", link, tdir) == DDL_PASS, "link --force");
	CHECK(lstat(link, &st2) == 0 && S_ISLNK(st2.st_mode), "the link was replaced");
	CHECK(stat(db, &st2) == 0 && st2.st_ino != st.st_ino && sq_is_db(db), "the link's target not replaced");
	/* a full disk, as a file-size limit (SIGXFSZ ignored: writes fail with EFBIG) */
	snprintf(big, sizeof big, "%s/big.db", dir);
	snprintf(p, sizeof p, "trap '' XFSZ; ulimit -f 8; exec \"$0\" --sqlite \"$1\" \"$2\"");
	char *lim[] = {"/bin/sh", "-c", p, (char *)tbuild("bin/ddlprof-report"), big, tdir, NULL};
	struct ddl_run_result r;
	CHECK(trun(lim, NULL, 60, &r) == 0 && sq_status(&r) == 1 && strstr(r.err, big) &&
	      strchr(r.err, '\n') == r.err + r.nerr - 1, "a file-size limit: status %d: '%s'", sq_status(&r),
	      r.err);
	trun_free(&r);
	CHECK(access(big, F_OK) != 0, "%s was left behind", big);
	static const char *const left[] = {"t", "run.db", "fifo", "dangling.db", "link.db", NULL};
	CHECK(sq_only(dir, left), "something half-written was left in %s", dir);
	/* usage: not with --compare, not the same file as -o; with a format, both outputs */
	CHECK(SQ_EXPECT(2, "--compare", NULL, "--sqlite", "x.db", "--compare", "single=x", "node=y") == DDL_PASS,
	      "--compare");
	CHECK(SQ_EXPECT(2, "both", db, "-o", db, "--sqlite", db, tdir) == DDL_PASS, "-o and --sqlite");
	snprintf(p, sizeof p, "%s/both.db", dir);
	char *both[] = {(char *)tbuild("bin/ddlprof-report"), "--json", "--sqlite", p, tdir, NULL};
	CHECK(trun(both, NULL, 30, &r) == 0 && sq_status(&r) == 0 && sq_is_db(p), "--json --sqlite: %s", r.err);
	json_t *j = json_loads(r.out, 0, NULL);
	CHECK(j && json_object_get(j, "job"), "--json --sqlite: stdout is not the JSON report");
	json_decref(j);
	trun_free(&r);
	trm(dir);
	free(dir);
	return DDL_PASS;
}
