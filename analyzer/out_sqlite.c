/*
 * --sqlite FILE: the report as an SQLite database, the way Nsight Systems'
 * `nsys export --type sqlite` is what its users script against. Tables:
 * meta, processes, threads, calls (one row per event --dump lists, with its
 * fields), device_intervals, collectives, communicators, iterations and
 * breakdown (the five parts of each analysed iteration, as the JSON
 * report's means are made of); ddlprof-report(1), SQLITE SCHEMA, documents
 * every column. Like every output it only reads the model analyze.c made,
 * and the traces it was made from.
 *
 * Large traces write fast: one transaction, one prepared insert per table,
 * no journal (report.c writes a temporary file and renames it when this
 * succeeds, so nothing half-written is ever kept), the indexes made after
 * the rows. Text is stored as valid UTF-8: bytes that are not (a cut
 * command line, a hostile marker name) become U+FFFD, so that every
 * SQLite client (Python's refuses bad UTF-8) reads every row.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/*
 * The schema's version, in meta and in the file header's user_version
 * (PRAGMA user_version). Tables and columns are added, never renamed or
 * given another meaning, within one version; bump it for any change a
 * query written against the old schema could notice otherwise.
 */
#define DDL_SQLITE_SCHEMA 1
/* PRAGMA application_id: "ddlp", which file(1) shows for the database. */
#define DDL_SQLITE_APP_ID 0x64646c70

struct ddl_sqlcol {
	const char *name, *type;
};

static const struct ddl_sqlcol ddl_meta_cols[] = {{"key", "TEXT PRIMARY KEY"}, {"value", "TEXT"}};

static const struct ddl_sqlcol ddl_process_cols[] = {
	{"id", "INTEGER PRIMARY KEY"}, {"host", "TEXT"}, {"pid", "INTEGER"}, {"ppid", "INTEGER"},
	{"rank", "INTEGER"}, {"world_size", "INTEGER"}, {"role", "TEXT"},
	{"serves", "INTEGER REFERENCES processes(id)"}, {"command", "TEXT"}, {"start_ns", "INTEGER"},
	{"end_ns", "INTEGER"}, {"images", "INTEGER"}, {"events", "INTEGER"}, {"dropped", "INTEGER"},
	{"truncated", "INTEGER"}, {"corrupt", "INTEGER"}, {"incomplete", "INTEGER"},
	{"iterations", "INTEGER"}, {"iteration_method", "TEXT"}, {"iteration_mean_s", "REAL"}};

static const struct ddl_sqlcol ddl_thread_cols[] = {
	{"id", "INTEGER PRIMARY KEY"}, {"process_id", "INTEGER REFERENCES processes(id)"},
	{"tid", "INTEGER"}, {"name", "TEXT"}};

static const struct ddl_sqlcol ddl_call_cols[] = {
	{"id", "INTEGER PRIMARY KEY"}, {"process_id", "INTEGER REFERENCES processes(id)"},
	{"thread_id", "INTEGER REFERENCES threads(id)"}, {"image", "INTEGER"}, {"kind", "TEXT"},
	{"class", "TEXT"}, {"start_ns", "INTEGER"}, {"end_ns", "INTEGER"}, {"duration_ns", "INTEGER"},
	{"fd", "INTEGER"}, {"result", "INTEGER"}, {"bytes", "INTEGER"}, {"peer", "TEXT"},
	{"remote", "INTEGER"}, {"name", "TEXT"}, {"device", "INTEGER"}, {"stream", "INTEGER"},
	{"comm_key", "TEXT REFERENCES communicators(key)"}, {"comm_rank", "INTEGER"},
	{"comm_size", "INTEGER"}, {"op", "TEXT"}, {"redop", "TEXT"}, {"dtype", "INTEGER"},
	{"count", "INTEGER"}, {"root", "INTEGER"}, {"blocks", "INTEGER"}, {"block_threads", "INTEGER"},
	{"corr", "INTEGER"}, {"flags", "TEXT"}};

static const struct ddl_sqlcol ddl_device_cols[] = {
	{"id", "INTEGER PRIMARY KEY REFERENCES calls(id)"},
	{"process_id", "INTEGER REFERENCES processes(id)"}, {"issued_by", "INTEGER REFERENCES calls(id)"},
	{"kind", "TEXT"}, {"name", "TEXT"}, {"mangled", "TEXT"}, {"part", "TEXT"}, {"span", "TEXT"},
	{"device", "INTEGER"}, {"stream", "INTEGER"}, {"start_ns", "INTEGER"}, {"end_ns", "INTEGER"},
	{"duration_ns", "INTEGER"}, {"bytes", "INTEGER"}, {"timing", "TEXT"}, {"kernel_run", "INTEGER"},
	{"iteration", "INTEGER"}};

static const struct ddl_sqlcol ddl_coll_cols[] = {
	{"id", "INTEGER PRIMARY KEY REFERENCES calls(id)"},
	{"process_id", "INTEGER REFERENCES processes(id)"}, {"rank", "INTEGER"},
	{"thread_id", "INTEGER REFERENCES threads(id)"}, {"source", "TEXT"}, {"op", "TEXT"},
	{"bytes", "INTEGER"}, {"count", "INTEGER"}, {"dtype", "INTEGER"},
	{"comm_key", "TEXT REFERENCES communicators(key)"}, {"comm_rank", "INTEGER"},
	{"comm_size", "INTEGER"}, {"span", "TEXT"}, {"root", "INTEGER"}, {"start_ns", "INTEGER"},
	{"end_ns", "INTEGER"}, {"duration_ns", "INTEGER"}, {"iteration", "INTEGER"}};

static const struct ddl_sqlcol ddl_comm_cols[] = {
	{"key", "TEXT PRIMARY KEY"}, {"nranks", "INTEGER"}, {"members_traced", "INTEGER"},
	{"hosts", "INTEGER"}, {"span", "TEXT"}, {"host_names", "TEXT"}, {"created_by", "TEXT"}};

static const struct ddl_sqlcol ddl_iter_cols[] = {
	{"id", "INTEGER PRIMARY KEY"}, {"process_id", "INTEGER REFERENCES processes(id)"},
	{"rank", "INTEGER"}, {"iteration", "INTEGER"}, {"start_ns", "INTEGER"}, {"end_ns", "INTEGER"},
	{"duration_ns", "INTEGER"}, {"tid", "INTEGER"}};

static const struct ddl_sqlcol ddl_breakdown_cols[] = {
	{"iteration_id", "INTEGER PRIMARY KEY REFERENCES iterations(id)"},
	{"process_id", "INTEGER REFERENCES processes(id)"}, {"rank", "INTEGER"},
	{"iteration", "INTEGER"}, {"duration_s", "REAL"},
#define DDL_X_PART_COL(n) {#n "_s", "REAL"},
	DDL_PARTS(DDL_X_PART_COL)
#undef DDL_X_PART_COL
	{"means", "INTEGER"}};

enum { DDL_T_META, DDL_T_PROC, DDL_T_THREAD, DDL_T_CALL, DDL_T_DEVICE, DDL_T_COLL, DDL_T_COMM,
       DDL_T_ITER, DDL_T_BREAKDOWN, DDL_NTABLES };

#define DDL_TAB(name, cols) {name, cols, sizeof cols / sizeof cols[0]}
static const struct {
	const char *name;
	const struct ddl_sqlcol *cols;
	size_t ncols;
} ddl_tables[DDL_NTABLES] = {
	DDL_TAB("meta", ddl_meta_cols), DDL_TAB("processes", ddl_process_cols),
	DDL_TAB("threads", ddl_thread_cols), DDL_TAB("calls", ddl_call_cols),
	DDL_TAB("device_intervals", ddl_device_cols), DDL_TAB("collectives", ddl_coll_cols),
	DDL_TAB("communicators", ddl_comm_cols), DDL_TAB("iterations", ddl_iter_cols),
	DDL_TAB("breakdown", ddl_breakdown_cols)};
#undef DDL_TAB

/* Made once the rows are in (documented in ddlprof-report(1)). */
static const char *const ddl_indexes[] = {
	"CREATE UNIQUE INDEX threads_by_tid ON threads(process_id, tid)",
	"CREATE INDEX calls_by_time ON calls(process_id, start_ns)",
	"CREATE INDEX calls_by_thread ON calls(thread_id, start_ns)",
	"CREATE INDEX calls_by_kind ON calls(kind)",
	"CREATE INDEX device_intervals_by_time ON device_intervals(process_id, start_ns)",
	"CREATE INDEX device_intervals_by_call ON device_intervals(issued_by)",
	"CREATE INDEX collectives_by_time ON collectives(process_id, start_ns)",
	"CREATE INDEX collectives_by_op ON collectives(op)",
	"CREATE UNIQUE INDEX iterations_by_index ON iterations(process_id, iteration)",
	"CREATE UNIQUE INDEX breakdown_by_index ON breakdown(process_id, iteration)",
};

/* The writer: the database, an insert per table, the row being bound. */
struct ddl_sq {
	sqlite3 *db;
	sqlite3_stmt *ins[DDL_NTABLES];
	sqlite3_stmt *st;  /* the row being bound ... */
	int table, col;    /* ... into this table, at this column (from 1) */
	int rc;            /* the first failure (an SQLite result code), SQLITE_OK */
	const char *what;  /* ... what it was doing then */
	int sys;           /* ... errno then, where the failure was a system call's */
	char *buf;         /* text made valid UTF-8 */
	size_t cap;
};

/* Notes RC of what was just done, WHAT; the first failure is the one kept. */
static void ddl_sq_fail(struct ddl_sq *q, int rc, const char *what)
{
	if (q->rc == SQLITE_OK && rc != SQLITE_OK) {
		int prim = rc & 0xff; /* SQLite keeps no errno of a failed write: take it now */
		q->sys = prim == SQLITE_IOERR || prim == SQLITE_FULL || prim == SQLITE_CANTOPEN ||
		         prim == SQLITE_PERM || prim == SQLITE_READONLY ? errno : 0;
		q->rc = rc;
		q->what = what;
	}
}

static void ddl_sq_exec(struct ddl_sq *q, const char *sql, const char *what)
{
	if (q->rc == SQLITE_OK)
		ddl_sq_fail(q, sqlite3_exec(q->db, sql, NULL, NULL, NULL), what);
}

static void ddl_row(struct ddl_sq *q, int table)
{
	q->st = q->ins[table];
	q->table = table;
	q->col = 1;
}

static void ddl_put_int(struct ddl_sq *q, int64_t v)
{
	if (q->rc == SQLITE_OK)
		ddl_sq_fail(q, sqlite3_bind_int64(q->st, q->col, v), "binding a value");
	q->col++;
}

static void ddl_put_null(struct ddl_sq *q)
{
	if (q->rc == SQLITE_OK)
		ddl_sq_fail(q, sqlite3_bind_null(q->st, q->col), "binding a value");
	q->col++;
}

/* V, or NULL where WHEN is false. */
static void ddl_put_int_if(struct ddl_sq *q, int when, int64_t v)
{
	if (when)
		ddl_put_int(q, v);
	else
		ddl_put_null(q);
}

static void ddl_put_real(struct ddl_sq *q, double v)
{
	if (q->rc == SQLITE_OK)
		ddl_sq_fail(q, sqlite3_bind_double(q->st, q->col, v), "binding a value");
	q->col++;
}

/*
 * S (NULL: SQL NULL) as valid UTF-8. S must stay valid until the row is
 * written (ddl_row_end), which every caller does before S goes; a copy
 * made valid is handed to SQLite to keep.
 */
static void ddl_put_text(struct ddl_sq *q, const char *s)
{
	if (!s) {
		ddl_put_null(q);
		return;
	}
	const unsigned char *p = (const unsigned char *)s;
	size_t n, len = 0, bad = 0;
	for (; *p; p += n ? n : 1, len += n ? n : 3)
		bad += (n = ddl_utf8_len(p)) == 0;
	if (q->rc == SQLITE_OK && !bad) {
		ddl_sq_fail(q, sqlite3_bind_text(q->st, q->col, s, (int)len, SQLITE_STATIC), "binding text");
	} else if (q->rc == SQLITE_OK) {
		if (len + 1 > q->cap) {
			char *b = realloc(q->buf, len + 1);
			if (!b) {
				ddl_sq_fail(q, SQLITE_NOMEM, "making text valid UTF-8");
				q->col++;
				return;
			}
			q->buf = b;
			q->cap = len + 1;
		}
		char *w = q->buf;
		for (p = (const unsigned char *)s; *p; p += n ? n : 1) {
			if ((n = ddl_utf8_len(p)) == 0) {
				memcpy(w, "\xef\xbf\xbd", 3);
				w += 3;
			} else {
				memcpy(w, p, n);
				w += n;
			}
		}
		ddl_sq_fail(q, sqlite3_bind_text(q->st, q->col, q->buf, (int)len, SQLITE_TRANSIENT),
		            "binding text");
	}
	q->col++;
}

/* Writes the row bound since ddl_row: every column of its table, in order. */
static void ddl_row_end(struct ddl_sq *q)
{
	if (q->rc != SQLITE_OK)
		return;
	if ((size_t)q->col - 1 != ddl_tables[q->table].ncols) {
		ddl_sq_fail(q, SQLITE_MISUSE, ddl_tables[q->table].name); /* a bug of ours */
		return;
	}
	int rc = sqlite3_step(q->st);
	ddl_sq_fail(q, rc == SQLITE_DONE ? SQLITE_OK : rc, ddl_tables[q->table].name);
	sqlite3_reset(q->st);
}

/* Creates the tables and prepares their inserts. */
static void ddl_sq_schema(struct ddl_sq *q)
{
	for (int t = 0; t < DDL_NTABLES && q->rc == SQLITE_OK; t++) {
		char create[2048], insert[1024];
		size_t nc = 0, ni = 0;
		nc += (size_t)snprintf(create, sizeof create, "CREATE TABLE %s (", ddl_tables[t].name);
		ni += (size_t)snprintf(insert, sizeof insert, "INSERT INTO %s VALUES (", ddl_tables[t].name);
		for (size_t c = 0; c < ddl_tables[t].ncols && nc < sizeof create && ni < sizeof insert; c++) {
			const struct ddl_sqlcol *col = &ddl_tables[t].cols[c];
			nc += (size_t)snprintf(create + nc, sizeof create - nc, "%s%s %s", c ? ", " : "",
			                       col->name, col->type);
			ni += (size_t)snprintf(insert + ni, sizeof insert - ni, "%s?", c ? ", " : "");
		}
		if (nc + 2 > sizeof create || ni + 2 > sizeof insert) {
			ddl_sq_fail(q, SQLITE_TOOBIG, ddl_tables[t].name); /* a bug of ours */
			return;
		}
		strcpy(create + nc, ")");
		strcpy(insert + ni, ")");
		ddl_sq_exec(q, create, ddl_tables[t].name);
		if (q->rc == SQLITE_OK)
			ddl_sq_fail(q, sqlite3_prepare_v3(q->db, insert, -1, SQLITE_PREPARE_PERSISTENT,
			                                  &q->ins[t], NULL), ddl_tables[t].name);
	}
}

static void ddl_meta(struct ddl_sq *q, const char *key, const char *value)
{
	ddl_row(q, DDL_T_META);
	ddl_put_text(q, key);
	ddl_put_text(q, value);
	ddl_row_end(q);
}

static void ddl_meta_num(struct ddl_sq *q, const char *key, const char *fmt, double v)
{
	char buf[64];
	snprintf(buf, sizeof buf, fmt, v);
	ddl_meta(q, key, buf);
}

static void ddl_sq_meta(struct ddl_sq *q, const struct ddl_report *r)
{
	char v[64];
	snprintf(v, sizeof v, "ddlprof-sqlite/%d", DDL_SQLITE_SCHEMA);
	ddl_meta(q, "schema", v);
	ddl_meta_num(q, "schema_version", "%.0f", DDL_SQLITE_SCHEMA);
	ddl_meta(q, "ddlprof_version", DDLPROF_VERSION);
	ddl_meta(q, "run_id", r->run->id);
	ddl_meta(q, "clock", r->clock_method ? r->clock_method : "realtime");
	if (r->clock_residual_s >= 0)
		ddl_meta_num(q, "clock_residual_s", "%.9f", r->clock_residual_s);
	snprintf(v, sizeof v, "%lld", r->nprocs ? (long long)r->start_real_ns : 0LL);
	ddl_meta(q, "time_origin_ns", v);
	ddl_meta(q, "iteration_method", r->iteration_method);
	ddl_meta_num(q, "warmup", "%.0f", r->warmup);
	ddl_meta_num(q, "iterations", "%.0f", (double)r->iterations);
	ddl_meta_num(q, "truncated", "%.0f", r->truncated);
	ddl_meta_num(q, "corrupt", "%.0f", r->corrupt);
	ddl_meta_num(q, "incomplete", "%.0f", r->incomplete);
}

/* The rank of P, or NULL for a process that is not one. */
static void ddl_put_rank(struct ddl_sq *q, const struct ddl_proc *p)
{
	ddl_put_int_if(q, p->rank >= 0, p->rank);
}

static void ddl_sq_process(struct ddl_sq *q, const struct ddl_report *r, size_t i)
{
	const struct ddl_proc *p = &r->procs[i];
	const struct ddl_proc *of = ddl_proc_served(r, p);
	ddl_row(q, DDL_T_PROC);
	ddl_put_int(q, (int64_t)i);
	ddl_put_text(q, p->host);
	ddl_put_int(q, p->pid);
	ddl_put_int(q, p->ppid);
	ddl_put_rank(q, p);
	ddl_put_int_if(q, p->world_size >= 0, p->world_size);
	ddl_put_text(q, ddl_role_name(p->role));
	ddl_put_int_if(q, of != NULL, of ? of - r->procs : 0);
	ddl_put_text(q, p->command);
	ddl_put_int(q, p->start_real_ns);
	ddl_put_int(q, p->end_real_ns);
	ddl_put_int(q, p->images);
	ddl_put_int(q, (int64_t)p->events);
	ddl_put_int(q, (int64_t)p->dropped);
	ddl_put_int(q, p->truncated);
	ddl_put_int(q, p->corrupt);
	ddl_put_int(q, p->incomplete);
	ddl_put_int(q, (int64_t)p->niter);
	ddl_put_text(q, p->iteration_method);
	if (p->niter)
		ddl_put_real(q, p->iter_mean_s);
	else
		ddl_put_null(q);
	ddl_row_end(q);
}

/* ---- threads: one row per OS thread of a process that recorded an event ---- */

struct ddl_sqthread {
	uint32_t tid;
	uint32_t image, idx; /* its thread index in that image; idx == nthreads: unknown */
};

static int ddl_sqthread_cmp(const void *x, const void *y)
{
	const struct ddl_sqthread *a = x, *b = y;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->image != b->image)
		return a->image < b->image ? -1 : 1;
	return (a->idx > b->idx) - (a->idx < b->idx);
}

/*
 * The threads of P that recorded events, one row per OS thread id across
 * its images (0: the trace lost it), named by the first image that names
 * it; MAP[k][idx] gets the row id of thread index IDX of image K (index
 * nthreads: an event whose thread the trace does not describe). Row ids
 * go on from *NEXT. MAP is P->ntr arrays for the caller to free.
 */
static void ddl_sq_threads(struct ddl_sq *q, const struct ddl_proc *p, size_t pi, int64_t *next,
                           int64_t **map)
{
	struct ddl_sqthread *v = NULL;
	size_t n = 0, cap = 0;
	for (size_t k = 0; k < p->ntr && q->rc == SQLITE_OK; k++) {
		const struct ddl_trace *t = p->tr[k];
		map[k] = calloc(t->nthreads + 1, sizeof *map[k]);
		if (!map[k]) {
			ddl_sq_fail(q, SQLITE_NOMEM, "threads");
			break;
		}
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			size_t idx = e->tid < t->nthreads ? e->tid : t->nthreads;
			if (ddl_event_class(e->kind) == DDL_CLASS_ARGS || map[k][idx])
				continue; /* an args record's bytes there are not a thread index */
			map[k][idx] = -1; /* seen */
			if (n == cap) {
				size_t c = cap ? cap * 2 : 16;
				struct ddl_sqthread *w = realloc(v, c * sizeof *w);
				if (!w) {
					ddl_sq_fail(q, SQLITE_NOMEM, "threads");
					break;
				}
				v = w;
				cap = c;
			}
			v[n++] = (struct ddl_sqthread){idx < t->nthreads ? t->threads[idx].tid : 0,
			                               (uint32_t)k, (uint32_t)idx};
		}
	}
	if (q->rc == SQLITE_OK && n)
		qsort(v, n, sizeof *v, ddl_sqthread_cmp);
	for (size_t a = 0, b; a < n && q->rc == SQLITE_OK; a = b) {
		const char *name = NULL;
		for (b = a; b < n && v[b].tid == v[a].tid; b++) {
			const struct ddl_trace *t = p->tr[v[b].image];
			const char *nm = v[b].idx < t->nthreads ? t->threads[v[b].idx].name : NULL;
			if (!name && nm && *nm)
				name = nm;
			map[v[b].image][v[b].idx] = *next;
		}
		ddl_row(q, DDL_T_THREAD);
		ddl_put_int(q, (*next)++);
		ddl_put_int(q, (int64_t)pi);
		ddl_put_int(q, v[a].tid);
		ddl_put_text(q, name);
		ddl_row_end(q);
	}
	free(v);
}

/* ---- calls: one row per event --dump lists ---- */

static const char *ddl_class_name(int cls)
{
	static const char *const names[] = {
		[DDL_CLASS_TX] = "tx", [DDL_CLASS_RX] = "rx", [DDL_CLASS_WAIT] = "wait",
		[DDL_CLASS_CONN] = "conn", [DDL_CLASS_MARK] = "mark", [DDL_CLASS_SYNC] = "sync",
		[DDL_CLASS_LAUNCH] = "launch", [DDL_CLASS_COPY] = "copy", [DDL_CLASS_GPUSYNC] = "gpusync",
		[DDL_CLASS_CUDA] = "cuda", [DDL_CLASS_COLL] = "coll", [DDL_CLASS_NCCL] = "nccl",
		[DDL_CLASS_DEVICE] = "device", [DDL_CLASS_ARGS] = "args", [DDL_CLASS_API] = "api",
		[DDL_CLASS_HCOLL] = "hcoll", [DDL_CLASS_FILE] = "file", [DDL_CLASS_STEP] = "step",
		[DDL_CLASS_PHASE] = "phase", [DDL_CLASS_HWAIT] = "hwait", [DDL_CLASS_HCOMM] = "hcomm"};
	return cls > 0 && (size_t)cls < sizeof names / sizeof names[0] && names[cls] ? names[cls]
	                                                                           : "unknown";
}

static const char *ddl_span_text(int span)
{
	return span == DDL_SPAN_INTRA ? "intra" : span == DDL_SPAN_INTER ? "inter" : "unknown";
}

/* The communicator KEY as the JSON report writes it, into BUF (17 bytes or more). */
static const char *ddl_comm_key(const struct ddl_comm_info *ci, char *buf, size_t n)
{
	if (!ci)
		return NULL;
	snprintf(buf, n, "%016llx", (unsigned long long)ci->key);
	return buf;
}

/* Whether event I of T carries a collective's args: NCCL's, gloo's, MPI's, torch's. */
static int ddl_is_coll_call(const struct ddl_trace *t, size_t i)
{
	const struct ddl_event *e = &t->ev[i];
	int cls = ddl_event_class(e->kind);
	return cls == DDL_CLASS_COLL || cls == DDL_CLASS_HCOLL ||
	       (e->kind == DDL_EV_PY_PHASE && e->fd == DDL_PHASE_COLLECTIVE);
}

/* Event I of T, image K of process PI, as row ID of calls. */
static void ddl_sq_call(struct ddl_sq *q, const struct ddl_trace *t, size_t pi, size_t k,
                        size_t i, const struct ddl_devcalls *dc, int64_t thread, int64_t id)
{
	const struct ddl_event *e = &t->ev[i];
	int cls = ddl_event_class(e->kind);
	int gpu = cls >= DDL_CLASS_LAUNCH && cls <= DDL_CLASS_DEVICE;
	int coll = ddl_is_coll_call(t, i);
	const struct ddl_args *a = cls == DDL_CLASS_DEVICE ? NULL : ddl_event_args(t, i);
	struct ddl_devinfo d = {0};
	if (cls == DDL_CLASS_DEVICE) {
		ddl_device_info(t, i, dc, &d);
		a = d.args;
	}
	int64_t start = ddl_trace_real_ns(t, e->start), dur = ddl_trace_dur_ns(t, e);
	ddl_row(q, DDL_T_CALL);
	ddl_put_int(q, id);
	ddl_put_int(q, (int64_t)pi);
	ddl_put_int(q, thread);
	ddl_put_int(q, (int64_t)k);
	ddl_put_text(q, ddl_event_name(e->kind));
	ddl_put_text(q, ddl_class_name(cls));
	ddl_put_int(q, start);
	ddl_put_int(q, start + dur);
	ddl_put_int(q, dur);
	ddl_put_int(q, e->fd);
	ddl_put_int(q, e->result);
	/* bytes: what the call moved, as the report counts it */
	int moved = ((cls == DDL_CLASS_TX || cls == DDL_CLASS_RX) && !(e->flags & DDL_EVF_PEEK)) ||
	            e->kind == DDL_EV_FILE_READ || e->kind == DDL_EV_FILE_PREAD;
	if (moved)
		ddl_put_int_if(q, e->result > 0, e->result > 0 ? e->result : 0);
	else
		ddl_put_int_if(q, a && cls != DDL_CLASS_LAUNCH && cls != DDL_CLASS_API &&
		                  e->kind != DDL_EV_DEV_KERNEL && (a->bytes || coll),
		               a ? (int64_t)a->bytes : 0);
	/* the peer of a socket call */
	const struct ddl_peer_info *peer = cls != DDL_CLASS_SYNC && ddl_event_is_net(e->kind) &&
	                                   e->peer && e->peer < t->npeers && t->peers[e->peer].text
	                                       ? &t->peers[e->peer] : NULL;
	ddl_put_text(q, peer ? peer->text : NULL);
	ddl_put_int_if(q, peer != NULL, peer && !peer->local);
	/* a name: markers', kernels', CUPTI's record of a call, device intervals' */
	const char *name = NULL;
	if (cls == DDL_CLASS_MARK && e->result > 0)
		name = ddl_trace_name(t, (uint64_t)e->result);
	else if (cls == DDL_CLASS_DEVICE)
		name = d.name;
	else if (cls == DDL_CLASS_API && a)
		name = ddl_trace_name(t, a->name);
	else if (a && a->name && cls == DDL_CLASS_LAUNCH)
		name = ddl_devcalls_name(dc, t, a->name);
	ddl_put_text(q, name);
	ddl_put_int_if(q, gpu, e->fd);
	ddl_put_int_if(q, gpu, e->peer);
	/* a collective's communicator, operation, type and count */
	const struct ddl_comm_info *ci = (coll || cls == DDL_CLASS_NCCL) && a && a->comm
	                                     ? ddl_trace_comm(t, a->comm) : NULL;
	char key[24];
	ddl_put_text(q, ddl_comm_key(ci, key, sizeof key));
	ddl_put_int_if(q, ci != NULL, ci ? ci->rank : 0);
	ddl_put_int_if(q, ci != NULL, ci ? ci->nranks : 0);
	unsigned op = coll ? ddl_coll_op_of(t, i) : DDL_COLL_OPS;
	ddl_put_text(q, ddl_coll_op_name(op));
	ddl_put_text(q, a && cls == DDL_CLASS_COLL ? ddl_nccl_redop_name(e->kind, a->op) : NULL);
	ddl_put_int_if(q, coll && a, a ? a->dtype : 0);
	size_t size = coll ? ddl_coll_elem_size(t, i) : 0;
	ddl_put_int_if(q, size > 0, size ? (int64_t)(a->bytes / size) : 0);
	ddl_put_int_if(q, coll && a && a->peer >= 0, a ? a->peer : 0);
	ddl_put_int_if(q, cls == DDL_CLASS_LAUNCH && a, a ? (int64_t)a->bytes : 0);
	ddl_put_int_if(q, cls == DDL_CLASS_LAUNCH && a && a->aux, a ? a->aux : 0);
	if (cls == DDL_CLASS_DEVICE || cls == DDL_CLASS_API)
		ddl_put_int(q, (uint32_t)e->result); /* the id device intervals are matched by */
	else
		ddl_put_int_if(q, gpu && a, a ? a->corr : 0);
	char flags[96] = "";
	size_t n = 0;
	static const struct {
		unsigned bit;
		const char *name;
	} evf[] = {{DDL_EVF_SOCKWAIT, "socket_wait"}, {DDL_EVF_PEEK, "peek"}, {DDL_EVF_EVPAIR, "events"},
	           {DDL_EVF_CUPTI, "cupti"}, {DDL_EVF_RUN, "run"}};
	for (size_t f = 0; f < sizeof evf / sizeof evf[0]; f++)
		if (e->flags & evf[f].bit)
			n += (size_t)snprintf(flags + n, sizeof flags - n, "%s%s", n ? "," : "", evf[f].name);
	if (a && gpu && cls != DDL_CLASS_DEVICE && (a->flags & DDL_ARGF_TIMED))
		n += (size_t)snprintf(flags + n, sizeof flags - n, "%stimed", n ? "," : "");
	if (a && gpu && cls != DDL_CLASS_DEVICE && (a->flags & DDL_ARGF_GROUPED))
		n += (size_t)snprintf(flags + n, sizeof flags - n, "%sgrouped", n ? "," : "");
	ddl_put_text(q, n ? flags : NULL);
	ddl_row_end(q);
}

/* The analysed iteration of P that instant AT falls in, by its index, or NULL. */
static void ddl_put_iteration(struct ddl_sq *q, const struct ddl_proc *p, int64_t at)
{
	size_t it = ddl_proc_iter_at(p, at);
	ddl_put_int_if(q, it != SIZE_MAX, (int64_t)(it + (size_t)p->warmup_skipped));
}

/* Device interval I of T: ROW its calls row, ROWS every event's. */
static void ddl_sq_device(struct ddl_sq *q, const struct ddl_proc *p, size_t pi,
                          const struct ddl_trace *t, size_t i, const struct ddl_devcalls *dc,
                          const int64_t *rows)
{
	static const char *const parts[] = {[DDL_DEV_COMPUTE] = "compute",
	                                    [DDL_DEV_INTRA] = "interconnect",
	                                    [DDL_DEV_INTER] = "network", [DDL_DEV_COPY] = "copy"};
	const struct ddl_event *e = &t->ev[i];
	struct ddl_devinfo d;
	ddl_device_info(t, i, dc, &d);
	/* issued by the wrapped call, else by the call CUPTI saw (as the Chrome trace draws it) */
	size_t from = d.call;
	if (from == SIZE_MAX && d.api != SIZE_MAX) {
		size_t h = ddl_hostcalls_find(&dc->host, t, d.api);
		from = h != SIZE_MAX ? h : d.api;
	}
	int64_t start = ddl_trace_real_ns(t, e->start), dur = ddl_trace_dur_ns(t, e);
	ddl_row(q, DDL_T_DEVICE);
	ddl_put_int(q, rows[i]);
	ddl_put_int(q, (int64_t)pi);
	ddl_put_int_if(q, from != SIZE_MAX, from != SIZE_MAX ? rows[from] : 0);
	ddl_put_text(q, ddl_event_name(e->kind));
	ddl_put_text(q, d.name);
	ddl_put_text(q, d.mangled);
	ddl_put_text(q, parts[d.part]);
	ddl_put_text(q, e->kind == DDL_EV_DEV_COLL ? ddl_span_text(d.span) : NULL);
	ddl_put_int(q, e->fd);
	ddl_put_int(q, e->peer);
	ddl_put_int(q, start);
	ddl_put_int(q, start + dur);
	ddl_put_int(q, dur);
	ddl_put_int_if(q, d.args && d.args->bytes && e->kind != DDL_EV_DEV_KERNEL,
	               d.args ? (int64_t)d.args->bytes : 0);
	ddl_put_text(q, e->flags & DDL_EVF_CUPTI ? "cupti" : "events");
	ddl_put_int(q, (e->flags & DDL_EVF_RUN) != 0);
	ddl_put_iteration(q, p, start);
	ddl_row_end(q);
}

/* Collective I of T, one P's summary counts: ROWS every event's calls row. */
static void ddl_sq_coll(struct ddl_sq *q, const struct ddl_report *r, const struct ddl_proc *p,
                        size_t pi, const struct ddl_trace *t, size_t i, int64_t thread,
                        const int64_t *rows)
{
	const struct ddl_event *e = &t->ev[i];
	const struct ddl_args *a = ddl_event_args(t, i);
	const struct ddl_comm_info *ci = a && a->comm ? ddl_trace_comm(t, a->comm) : NULL;
	int cls = ddl_event_class(e->kind);
	size_t size = ddl_coll_elem_size(t, i);
	int64_t start = ddl_trace_real_ns(t, e->start), dur = ddl_trace_dur_ns(t, e);
	char key[24];
	ddl_row(q, DDL_T_COLL);
	ddl_put_int(q, rows[i]);
	ddl_put_int(q, (int64_t)pi);
	ddl_put_rank(q, p);
	ddl_put_int(q, thread);
	ddl_put_text(q, cls == DDL_CLASS_COLL ? "nccl"
	                : cls == DDL_CLASS_HCOLL ? (ddl_kind_is_mpi(e->kind) ? "mpi" : "gloo") : "torch");
	ddl_put_text(q, ddl_coll_op_name(ddl_coll_op_of(t, i)));
	ddl_put_int(q, a ? (int64_t)a->bytes : 0); /* as p->coll counts it */
	ddl_put_int_if(q, size > 0, size ? (int64_t)(a->bytes / size) : 0);
	ddl_put_int_if(q, a != NULL, a ? a->dtype : 0);
	ddl_put_text(q, ddl_comm_key(ci, key, sizeof key));
	ddl_put_int_if(q, ci != NULL, ci ? ci->rank : 0);
	ddl_put_int_if(q, ci != NULL, ci ? ci->nranks : 0);
	ddl_put_text(q, ddl_span_text(a ? ddl_comm_span(r, t, a->comm) : DDL_SPAN_UNKNOWN));
	ddl_put_int_if(q, a && a->peer >= 0, a ? a->peer : 0);
	ddl_put_int(q, start);
	ddl_put_int(q, start + dur);
	ddl_put_int(q, dur);
	ddl_put_iteration(q, p, start);
	ddl_row_end(q);
}

/* Every event of process PI: its threads, calls, device intervals, collectives. */
static void ddl_sq_events(struct ddl_sq *q, const struct ddl_report *r, size_t pi,
                          int64_t *next_thread, int64_t *next_call)
{
	const struct ddl_proc *p = &r->procs[pi];
	int64_t **map = calloc(p->ntr ? p->ntr : 1, sizeof *map);
	if (!map) {
		ddl_sq_fail(q, SQLITE_NOMEM, "threads");
		return;
	}
	ddl_sq_threads(q, p, pi, next_thread, map);
	for (size_t k = 0; k < p->ntr && q->rc == SQLITE_OK; k++) {
		const struct ddl_trace *t = p->tr[k];
		int64_t *rows = malloc((t->nev ? t->nev : 1) * sizeof *rows);
		struct ddl_devcalls dc;
		if (!rows || ddl_devcalls_build(r, t, &dc) < 0) {
			free(rows);
			ddl_sq_fail(q, SQLITE_NOMEM, "calls");
			break;
		}
		/* the calls first: device intervals and collectives refer to them */
		for (size_t i = 0; i < t->nev && q->rc == SQLITE_OK; i++) {
			const struct ddl_event *e = &t->ev[i];
			rows[i] = 0;
			if (ddl_event_class(e->kind) == DDL_CLASS_ARGS)
				continue; /* args, stack and counter records: part of their event */
			rows[i] = (*next_call)++;
			int64_t th = map[k][e->tid < t->nthreads ? e->tid : t->nthreads];
			ddl_sq_call(q, t, pi, k, i, &dc, th, rows[i]);
		}
		for (size_t i = 0; i < t->nev && q->rc == SQLITE_OK; i++) {
			const struct ddl_event *e = &t->ev[i];
			int cls = ddl_event_class(e->kind);
			if (cls == DDL_CLASS_DEVICE)
				ddl_sq_device(q, p, pi, t, i, &dc, rows);
			else if (cls != DDL_CLASS_ARGS && ddl_proc_coll_counted(p, t, i))
				ddl_sq_coll(q, r, p, pi, t, i, map[k][e->tid < t->nthreads ? e->tid : t->nthreads],
				            rows);
		}
		ddl_devcalls_free(&dc);
		free(rows);
	}
	for (size_t k = 0; k < p->ntr; k++)
		free(map[k]);
	free(map);
}

/* The analysed iterations of process PI and their parts; row ids from *NEXT. */
static void ddl_sq_iterations(struct ddl_sq *q, const struct ddl_proc *p, size_t pi, int64_t *next)
{
	for (size_t k = 0; k < p->niter && q->rc == SQLITE_OK; k++) {
		int64_t id = (*next)++, n = (int64_t)(k + (size_t)p->warmup_skipped);
		ddl_row(q, DDL_T_ITER);
		ddl_put_int(q, id);
		ddl_put_int(q, (int64_t)pi);
		ddl_put_rank(q, p);
		ddl_put_int(q, n);
		ddl_put_int(q, p->iter[k].start_ns);
		ddl_put_int(q, p->iter[k].end_ns);
		ddl_put_int(q, p->iter[k].end_ns - p->iter[k].start_ns);
		ddl_put_int(q, p->iter[k].tid);
		ddl_row_end(q);
		/* the means of the rank stand in only when memory ran out (as the CSV) */
		const struct ddl_parts *pp = p->iter_parts ? &p->iter_parts[k] : &p->per_iter;
		ddl_row(q, DDL_T_BREAKDOWN);
		ddl_put_int(q, id);
		ddl_put_int(q, (int64_t)pi);
		ddl_put_rank(q, p);
		ddl_put_int(q, n);
		ddl_put_real(q, p->iter_s[k]);
#define DDL_X_PART(f) ddl_put_real(q, pp->f);
		DDL_PARTS(DDL_X_PART)
#undef DDL_X_PART
		ddl_put_int(q, p->iter_parts == NULL);
		ddl_row_end(q);
	}
}

static void ddl_sq_comms(struct ddl_sq *q, const struct ddl_report *r)
{
	for (size_t i = 0; i < r->ncomms && q->rc == SQLITE_OK; i++) {
		const struct ddl_commjob *c = &r->comms[i];
		char key[24];
		snprintf(key, sizeof key, "%016llx", (unsigned long long)c->key);
		ddl_row(q, DDL_T_COMM);
		ddl_put_text(q, key);
		ddl_put_int(q, c->nranks);
		ddl_put_int(q, c->members);
		ddl_put_int(q, c->nhosts);
		ddl_put_text(q, ddl_span_text(c->span));
		ddl_put_text(q, c->hosts);
		ddl_put_text(q, c->how);
		ddl_row_end(q);
	}
}

int ddl_out_sqlite(const struct ddl_report *r, const char *path, char *err, size_t errlen)
{
	struct ddl_sq q = {0};
	int rc = sqlite3_open_v2(path, &q.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
	                         SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, NULL);
	ddl_sq_fail(&q, rc, "opening the database");
	/* no journal: a failed write leaves a file report.c removes, not a database to recover */
	ddl_sq_exec(&q, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-65536", "setting it up");
	char pragma[96];
	snprintf(pragma, sizeof pragma, "PRAGMA application_id=%d; PRAGMA user_version=%d",
	         DDL_SQLITE_APP_ID, DDL_SQLITE_SCHEMA);
	ddl_sq_exec(&q, pragma, "setting it up");
	ddl_sq_exec(&q, "BEGIN", "setting it up");
	ddl_sq_schema(&q);
	if (q.rc == SQLITE_OK)
		ddl_sq_meta(&q, r);
	int64_t next_thread = 1, next_call = 1, next_iter = 1;
	for (size_t i = 0; i < r->nprocs && q.rc == SQLITE_OK; i++) {
		ddl_sq_process(&q, r, i);
		ddl_proc_hold(&r->procs[i]);
		ddl_sq_events(&q, r, i, &next_thread, &next_call);
		ddl_proc_release(&r->procs[i]);
		ddl_sq_iterations(&q, &r->procs[i], i, &next_iter);
	}
	ddl_sq_comms(&q, r);
	for (size_t i = 0; i < sizeof ddl_indexes / sizeof ddl_indexes[0]; i++)
		ddl_sq_exec(&q, ddl_indexes[i], "indexes");
	ddl_sq_exec(&q, "COMMIT", "committing the rows");
	/* SQLite's own message where the failure was SQLite's (with the system's
	 * error under it: a full disk, a file-size limit), else its code's */
	if (q.rc != SQLITE_OK)
		snprintf(err, errlen, "%s%s%s (%s)",
		         q.db && sqlite3_errcode(q.db) == q.rc ? sqlite3_errmsg(q.db) : sqlite3_errstr(q.rc),
		         q.sys ? ": " : "", q.sys ? strerror(q.sys) : "", q.what);
	for (int t = 0; t < DDL_NTABLES; t++)
		sqlite3_finalize(q.ins[t]);
	rc = sqlite3_close(q.db);
	if (q.rc == SQLITE_OK && rc != SQLITE_OK) {
		snprintf(err, errlen, "%s (closing the database)", sqlite3_errstr(rc));
		q.rc = rc;
	}
	free(q.buf);
	return q.rc == SQLITE_OK ? 0 : -1;
}
