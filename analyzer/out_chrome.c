/*
 * --format chrome: the run as a Chrome trace-event JSON file, which
 * Perfetto (ui.perfetto.dev) and chrome://tracing open. One trace process
 * per process, named by its rank; one track per thread with its socket,
 * wait, CUDA and NCCL calls, marker ranges and marks; one track per CUDA
 * stream with the device intervals; one track with the analysed iterations
 * and their breakdown. Flow arrows join a timed launch to its device
 * interval.
 *
 * Traces can hold millions of events, so the file is streamed with fprintf,
 * event by event, in each process's stored order (viewers sort by time);
 * nothing but small per-trace indexes is kept in memory. Every string goes
 * through one escaper that keeps the output valid JSON (and valid UTF-8)
 * whatever bytes a name holds.
 *
 * This file also holds the UTF-8 check the outputs share; what a device
 * interval was comes from devcalls.c. Kernel names are shown demangled
 * (kernels.c), the name as recorded kept beside them as the arg "mangled".
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* ---- shared helpers ---- */

size_t ddl_utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	if (c < 0x80)
		return c ? 1 : 0;
	size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
	for (size_t k = 1; k < n; k++)
		if ((s[k] & 0xc0) != 0x80)
			return 0;
	/* overlong forms, UTF-16 surrogates and code points past U+10FFFF */
	if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0) || (c == 0xf0 && s[1] < 0x90) ||
	    (c == 0xf4 && s[1] >= 0x90))
		return 0;
	return n;
}

/* ---- the writer ---- */

/* Device intervals that overlap the one before on their stream by less than
 * this are rounding (two clocks' conversions), not work: they start where
 * it ended, so that no track holds overlapping complete events. */
#define DDL_CW_TOUCH_NS 10000

struct ddl_cw {
	FILE *f;
	int64_t t0;   /* the run's start on the real-time clock */
	int first;    /* no event written yet */
	int nargs;    /* -1: no args object open */
	long pid;     /* the process being written */
	uint64_t flow; /* last flow id */
	int nomem;    /* memory ran out: the output lacks something, and fails */
	int64_t wa, wb; /* the window (--iterations): events outside it are left out */
	int skip;     /* the event being written is left out */
};

/*
 * S as a JSON string. Bytes that are not UTF-8, and control characters
 * without a short escape, become U+FFFD, written as UTF-8: some versions of
 * Perfetto's JSON reader refuse backslash-u escapes and a raw DEL.
 */
static void ddl_cw_str(FILE *f, const char *s)
{
	static const char *const esc[32] = {['\b'] = "\\b", ['\f'] = "\\f", ['\n'] = "\\n",
	                                    ['\r'] = "\\r", ['\t'] = "\\t"};
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	fputc('"', f);
	while (*p) {
		size_t n = ddl_utf8_len(p);
		if (n == 0 || *p == 0x7f || (*p < 0x20 && !esc[*p])) {
			fputs("\xef\xbf\xbd", f);
			p++;
		} else if (*p < 0x20) {
			fputs(esc[*p++], f);
		} else if (*p == '"' || *p == '\\') {
			fputc('\\', f);
			fputc(*p++, f);
		} else {
			fwrite(p, 1, n, f);
			p += n;
		}
	}
	fputc('"', f);
}

/* Nanoseconds as microseconds with three decimals, exactly. */
static void ddl_cw_us(FILE *f, int64_t ns)
{
	if (ns < 0)
		ns = 0;
	fprintf(f, "%" PRId64 ".%03d", ns / 1000, (int)(ns % 1000));
}

/* Opens an event: {"ph":PH,"ts":..,"pid":..,"tid":..,"name":NAME,"cat":CAT
 * (the time first: Perfetto's reader looks for it before decoding names). */
static void ddl_cw_start(struct ddl_cw *w, const char *ph, const char *name, const char *cat, int64_t at_ns,
                         long tid)
{
	w->skip = 0;
	fputs(w->first ? "\n" : ",\n", w->f);
	w->first = 0;
	w->nargs = -1;
	fprintf(w->f, "{\"ph\":\"%s\",\"ts\":", ph);
	ddl_cw_us(w->f, at_ns - w->t0);
	fprintf(w->f, ",\"pid\":%ld,\"tid\":%ld,\"name\":", w->pid, tid);
	ddl_cw_str(w->f, name);
	if (cat)
		fprintf(w->f, ",\"cat\":\"%s\"", cat);
}

/* As ddl_cw_start, for an event at AT_NS: left out (with its args and
 * close) when outside the window. */
static void ddl_cw_open(struct ddl_cw *w, const char *ph, const char *name, const char *cat,
                        int64_t at_ns, long tid)
{
	if (at_ns < w->wa || at_ns > w->wb) {
		w->skip = 1;
		return;
	}
	ddl_cw_start(w, ph, name, cat, at_ns, tid);
}

/* A complete ("X") event; a start before the run's is moved to it, keeping
 * the end; left out when it does not overlap the window. */
static void ddl_cw_slice(struct ddl_cw *w, const char *name, const char *cat, int64_t a, int64_t b,
                         long tid)
{
	if (a < w->t0)
		a = w->t0;
	if (b < a)
		b = a;
	if (a > w->wb || b < w->wa || (a < b && (a == w->wb || b == w->wa))) {
		w->skip = 1;
		return;
	}
	ddl_cw_start(w, "X", name, cat, a, tid);
	fputs(",\"dur\":", w->f);
	ddl_cw_us(w->f, b - a);
}

static void ddl_cw_key(struct ddl_cw *w, const char *k)
{
	if (w->skip)
		return;
	fputs(w->nargs < 0 ? ",\"args\":{" : w->nargs > 0 ? "," : "", w->f);
	w->nargs = w->nargs < 0 ? 1 : w->nargs + 1;
	fprintf(w->f, "\"%s\":", k);
}

static void ddl_arg_str(struct ddl_cw *w, const char *k, const char *v)
{
	ddl_cw_key(w, k);
	if (!w->skip)
		ddl_cw_str(w->f, v);
}

static void ddl_arg_int(struct ddl_cw *w, const char *k, long long v)
{
	ddl_cw_key(w, k);
	if (!w->skip)
		fprintf(w->f, "%lld", v);
}

static void ddl_arg_num(struct ddl_cw *w, const char *k, double v)
{
	ddl_cw_key(w, k);
	if (w->skip)
		return;
	if (isfinite(v))
		fprintf(w->f, "%.6f", v);
	else
		fputs("null", w->f);
}

static void ddl_cw_close(struct ddl_cw *w)
{
	if (!w->skip)
		fputs(w->nargs >= 0 ? "}}" : "}", w->f);
	w->skip = 0;
}

/* A metadata event naming a process or thread, or ordering it. */
static void ddl_cw_meta(struct ddl_cw *w, const char *what, long tid, const char *name, long sort)
{
	fputs(w->first ? "\n" : ",\n", w->f);
	w->first = 0;
	fprintf(w->f, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%ld,\"tid\":%ld,\"args\":{", what, w->pid,
	        tid);
	if (name) {
		fputs("\"name\":", w->f);
		ddl_cw_str(w->f, name);
	} else {
		fprintf(w->f, "\"sort_index\":%ld", sort);
	}
	fputs("}}", w->f);
}

/* ---- per process ---- */

/*
 * Track ids. A thread keeps its OS thread id (Linux's are below 2^22); one
 * whose id the trace lost gets 2^22 plus its index. Each process numbers
 * its iterations and stream tracks from 2^23 + 1024 x its index: Perfetto
 * applies a thread name by the id alone, so no two processes may share one.
 */
#define DDL_TID_LOST  (1L << 22)
#define DDL_TID_SYNTH (1L << 23)
#define DDL_TRACKS    1024 /* per process: iterations, streams, "other streams" */

static long ddl_tid(const struct ddl_trace *t, unsigned idx)
{
	uint32_t tid = idx < t->nthreads ? t->threads[idx].tid : 0;
	return tid ? (long)tid : DDL_TID_LOST + (long)idx;
}

/* The tracks of one process: its threads, then its streams. */
struct ddl_tracks {
	long *tids;        /* the threads named: a table by id (0 empty), ctids slots */
	size_t ntids, ctids;
	uint64_t *streams; /* image << 32 | stream id */
	size_t nstreams;
	long base;         /* the iterations track; streams follow */
	int more;          /* streams past DDL_TRACKS - 2 share the last track */
};

/* The slot of TID (positive) in table TAB of CAP slots (a power of two):
 * its own, or the empty one it would take. */
static size_t ddl_tid_slot(const long *tab, size_t cap, long tid)
{
	size_t h = ((uint64_t)tid * UINT64_C(0x9e3779b97f4a7c15)) >> 32 & (cap - 1);
	while (tab[h] && tab[h] != tid)
		h = (h + 1) & (cap - 1);
	return h;
}

/* Adds TID to TK's threads: 1 when new, 0 when there already, -1 without memory. */
static int ddl_tid_add(struct ddl_tracks *tk, long tid)
{
	if (tk->ctids && tk->tids[ddl_tid_slot(tk->tids, tk->ctids, tid)] == tid)
		return 0;
	if (2 * (tk->ntids + 1) > tk->ctids) {
		size_t c = tk->ctids ? tk->ctids * 2 : 64;
		long *q = calloc(c, sizeof *q);
		if (!q)
			return -1;
		for (size_t i = 0; i < tk->ctids; i++)
			if (tk->tids[i])
				q[ddl_tid_slot(q, c, tk->tids[i])] = tk->tids[i];
		free(tk->tids);
		tk->tids = q;
		tk->ctids = c;
	}
	tk->tids[ddl_tid_slot(tk->tids, tk->ctids, tid)] = tid;
	tk->ntids++;
	return 1;
}

/* Names the track of thread IDX of T; -1 without memory. */
static int ddl_thread_track(struct ddl_cw *w, const struct ddl_proc *p, const struct ddl_trace *t,
                            unsigned idx, struct ddl_tracks *tk)
{
	long tid = ddl_tid(t, idx);
	int added = ddl_tid_add(tk, tid);
	if (added <= 0)
		return added;
	const char *name = ddl_thread_name(p, t, idx);
	char label[64];
	if (!*name) {
		snprintf(label, sizeof label, "thread %ld", tid);
		name = label;
	}
	ddl_cw_meta(w, "thread_name", tid, name, 0);
	/* iterations, the main thread, streams, then the other threads */
	ddl_cw_meta(w, "thread_sort_index", tid, NULL, tid == (long)p->pid ? 1 : 2 * DDL_TRACKS);
	return 0;
}

/* Names the track of stream E->peer of image K; -1 without memory. */
static int ddl_stream_new(struct ddl_cw *w, const struct ddl_trace *t, size_t k,
                          const struct ddl_event *e, struct ddl_tracks *tk)
{
	char name[96];
	long tid;
	if (tk->nstreams == DDL_TRACKS - 2) {
		if (tk->more++)
			return 0;
		tid = tk->base + DDL_TRACKS - 1;
		snprintf(name, sizeof name, "other streams");
	} else {
		uint64_t *q = realloc(tk->streams, (tk->nstreams + 1) * sizeof *q);
		if (!q)
			return -1;
		tk->streams = q;
		tk->streams[tk->nstreams++] = (uint64_t)k << 32 | e->peer;
		tid = tk->base + (long)tk->nstreams;
		/* CUPTI's own stream numbers have bit 31 set (ddlprof-trace(5)) */
		int dev = e->peer < t->nstreams && t->streams[e->peer].dev >= 0 ? t->streams[e->peer].dev
		                                                                : e->fd;
		snprintf(name, sizeof name, "stream %u (device %d%s)", e->peer & 0x7fffffffu, dev,
		         e->peer & 0x80000000u ? ", CUPTI" : "");
		if (k > 0)
			snprintf(name + strlen(name), sizeof name - strlen(name), " image %zu", k + 1);
	}
	ddl_cw_meta(w, "thread_name", tid, name, 0);
	ddl_cw_meta(w, "thread_sort_index", tid, NULL, 1 + (tid - tk->base));
	return 0;
}

/* The track of stream PEER of image K; the last one when it has none of its own. */
static long ddl_stream_tid(const struct ddl_tracks *tk, size_t k, uint32_t peer)
{
	uint64_t key = (uint64_t)k << 32 | peer;
	for (size_t i = 0; i < tk->nstreams; i++)
		if (tk->streams[i] == key)
			return tk->base + 1 + (long)i;
	return tk->base + DDL_TRACKS - 1;
}

/*
 * Names every thread that made a call and every stream that ran work, in
 * order of first appearance, before any event: metadata carries no time,
 * and a viewer applies it where it sorts it.
 */
static int ddl_tracks_name(struct ddl_cw *w, const struct ddl_proc *p, struct ddl_tracks *tk)
{
	for (size_t k = 0; k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		unsigned last = UINT_MAX; /* events of one thread come in runs */
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			int cls = ddl_event_class(e->kind);
			if (cls == DDL_CLASS_ARGS)
				continue;
			if (cls == DDL_CLASS_DEVICE) {
				if (ddl_stream_tid(tk, k, e->peer) == tk->base + DDL_TRACKS - 1 &&
				    ddl_stream_new(w, t, k, e, tk) < 0)
					return -1;
			} else if (e->tid != last) {
				last = e->tid;
				if (ddl_thread_track(w, p, t, e->tid, tk) < 0)
					return -1;
			}
		}
	}
	return 0;
}

static const char *ddl_cat_of(int cls)
{
	switch (cls) {
	case DDL_CLASS_TX:
	case DDL_CLASS_RX:
	case DDL_CLASS_WAIT:
	case DDL_CLASS_CONN:
		return "net";
	case DDL_CLASS_SYNC:
		return "sync";
	case DDL_CLASS_COLL:
	case DDL_CLASS_NCCL:
		return "nccl";
	case DDL_CLASS_LAUNCH:
	case DDL_CLASS_COPY:
	case DDL_CLASS_GPUSYNC:
	case DDL_CLASS_CUDA:
		return "cuda";
	default:
		return "other";
	}
}

/* A socket call, a wait on a thread, or a call of a kind newer than us. */
static void ddl_host_args(struct ddl_cw *w, const struct ddl_trace *t, const struct ddl_event *e,
                          int cls)
{
	ddl_arg_int(w, "fd", e->fd);
	ddl_arg_int(w, "result", (long long)e->result);
	if ((cls == DDL_CLASS_TX || cls == DDL_CLASS_RX) && e->result > 0 && !(e->flags & DDL_EVF_PEEK))
		ddl_arg_int(w, "bytes", (long long)e->result);
	if (cls != DDL_CLASS_SYNC && e->peer && e->peer < t->npeers && t->peers[e->peer].text) {
		ddl_arg_str(w, "peer", t->peers[e->peer].text);
		ddl_arg_str(w, "peer_host", t->peers[e->peer].local ? "local" : "remote");
	}
	if (e->flags & DDL_EVF_SOCKWAIT)
		ddl_arg_str(w, "waited_on", "socket");
	if (e->flags & DDL_EVF_PEEK)
		ddl_arg_str(w, "flags", "MSG_PEEK");
}

/* A CUDA or NCCL call: its return code, device, stream and ddl_args. */
static void ddl_gpu_args(struct ddl_cw *w, const struct ddl_trace *t, size_t i, int cls,
                         const struct ddl_devcalls *dc)
{
	const struct ddl_event *e = &t->ev[i];
	const struct ddl_args *a = ddl_event_args(t, i);
	ddl_arg_int(w, "result", (long long)e->result);
	ddl_arg_int(w, "device", e->fd);
	ddl_arg_int(w, "stream", e->peer);
	if (!a)
		return;
	if (a->bytes)
		ddl_arg_int(w, cls == DDL_CLASS_LAUNCH ? "blocks" : "bytes", (long long)a->bytes);
	if (cls == DDL_CLASS_LAUNCH && a->aux)
		ddl_arg_int(w, "threads_per_block", a->aux);
	const char *name = ddl_devcalls_name(dc, t, a->name);
	if (name)
		ddl_arg_str(w, "kernel", name);
	if (name && name != ddl_trace_name(t, a->name))
		ddl_arg_str(w, "mangled", ddl_trace_name(t, a->name));
	const struct ddl_comm_info *ci = a->comm ? ddl_trace_comm(t, a->comm) : NULL;
	if (ci) {
		char key[24];
		snprintf(key, sizeof key, "%016llx", (unsigned long long)ci->key);
		ddl_arg_str(w, "comm", key);
		ddl_arg_int(w, "comm_rank", ci->rank);
		ddl_arg_int(w, "comm_size", ci->nranks);
	}
	if (cls == DDL_CLASS_COLL) {
		const char *op = ddl_nccl_redop_name(e->kind, a->op);
		if (op)
			ddl_arg_str(w, "op", op);
		ddl_arg_int(w, "dtype", a->dtype);
		if (a->peer >= 0)
			ddl_arg_int(w, "peer", a->peer);
	} else if (cls == DDL_CLASS_COPY && e->kind != DDL_EV_CUDA_MEMSET &&
	           e->kind != DDL_EV_CUDA_MEMSET_ASYNC) {
		ddl_arg_str(w, "copy", ddl_copy_kind(a->op));
	}
	ddl_arg_int(w, "corr", a->corr);
	if (a->flags & DDL_ARGF_TIMED)
		ddl_arg_int(w, "timed", 1);
	if (a->flags & DDL_ARGF_GROUPED)
		ddl_arg_int(w, "grouped", 1);
}

static const char *const ddl_part_names[] = {"compute", "collective intra", "collective inter",
                                             "copy"};

/* A device interval as drawn: [a, b) on track tid; i, its event. */
struct ddl_cwdev {
	int64_t a, b;
	long tid;
	size_t i;
};

static int ddl_cwdev_track_cmp(const void *x, const void *y)
{
	const struct ddl_cwdev *p = x, *q = y;
	if (p->tid != q->tid)
		return p->tid < q->tid ? -1 : 1;
	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	return p->b < q->b ? -1 : p->b > q->b;
}

static int ddl_cwdev_event_cmp(const void *x, const void *y)
{
	const struct ddl_cwdev *p = x, *q = y;
	return p->i < q->i ? -1 : p->i > q->i;
}

/*
 * The device intervals of image K of P as they are drawn, in event order:
 * on each stream, an interval that overlaps the one before by less than
 * DDL_CW_TOUCH_NS (the rounding of two clocks' conversions, not work)
 * starts where that one ended, so that no track holds overlapping complete
 * events. *N their count; NULL without any, or without memory (*N = 0
 * then too, and they are drawn as recorded).
 */
static struct ddl_cwdev *ddl_cwdevs(const struct ddl_proc *p, size_t k, const struct ddl_tracks *tk,
                                    size_t *n)
{
	const struct ddl_trace *t = p->tr[k];
	size_t nd = 0;
	for (size_t i = 0; i < t->nev; i++)
		nd += ddl_event_class(t->ev[i].kind) == DDL_CLASS_DEVICE;
	*n = 0;
	struct ddl_cwdev *v = nd ? malloc(nd * sizeof *v) : NULL;
	if (!v)
		return NULL;
	for (size_t i = 0; i < t->nev; i++) {
		const struct ddl_event *e = &t->ev[i];
		if (ddl_event_class(e->kind) != DDL_CLASS_DEVICE)
			continue;
		int64_t a = ddl_trace_real_ns(t, e->start);
		v[(*n)++] = (struct ddl_cwdev){a, a + ddl_trace_dur_ns(t, e), ddl_stream_tid(tk, k, e->peer), i};
	}
	qsort(v, *n, sizeof *v, ddl_cwdev_track_cmp);
	for (size_t j = 1; j < *n; j++) {
		const struct ddl_cwdev *pr = &v[j - 1];
		if (v[j].tid == pr->tid && v[j].a < pr->b && v[j].b > pr->b && pr->b - v[j].a < DDL_CW_TOUCH_NS)
			v[j].a = pr->b;
	}
	qsort(v, *n, sizeof *v, ddl_cwdev_event_cmp);
	return v;
}

/* A device interval on its stream's track, and the flow from its launch. */
static void ddl_device_event(struct ddl_cw *w, const struct ddl_proc *p, size_t k, size_t i,
                             const struct ddl_devcalls *dc, const struct ddl_tracks *tk,
                             const struct ddl_cwdev *drawn)
{
	const struct ddl_trace *t = p->tr[k];
	const struct ddl_event *e = &t->ev[i];
	long tid = ddl_stream_tid(tk, k, e->peer);
	struct ddl_devinfo d;
	ddl_device_info(t, i, dc, &d);
	int64_t a = ddl_trace_real_ns(t, e->start), b = a + ddl_trace_dur_ns(t, e);
	if (drawn)
		a = drawn->a;
	ddl_cw_slice(w, d.name, "device", a, b, tid);
	ddl_arg_str(w, "kind", ddl_event_name(e->kind));
	if (d.mangled)
		ddl_arg_str(w, "mangled", d.mangled);
	ddl_arg_str(w, "part", ddl_part_names[d.part]);
	ddl_arg_int(w, "device", e->fd);
	ddl_arg_int(w, "issued_by", ddl_tid(t, e->tid));
	ddl_arg_str(w, "timing", e->flags & DDL_EVF_CUPTI ? "cupti" : "events");
	ddl_arg_int(w, e->flags & DDL_EVF_CUPTI ? "cupti_corr" : "corr", (long long)e->result);
	if (d.args && d.args->bytes && e->kind != DDL_EV_DEV_KERNEL)
		ddl_arg_int(w, "bytes", (long long)d.args->bytes);
	if (e->kind == DDL_EV_DEV_COLL)
		ddl_arg_str(w, "span", d.span == DDL_SPAN_INTRA ? "intra" : d.span == DDL_SPAN_INTER
		                                                             ? "inter" : "unknown");
	ddl_cw_close(w);
	/* from the call: the wrapped one that holds CUPTI's record of it, or the
	 * record itself (drawn as a slice of its own, ddl_image_events) */
	size_t from = d.call;
	if (from == SIZE_MAX && d.api != SIZE_MAX) {
		size_t h = ddl_hostcalls_find(&dc->host, t, d.api);
		from = h != SIZE_MAX ? h : d.api;
	}
	if (from == SIZE_MAX)
		return;
	/* "s" inside the launch, "f" bound to the enclosing device slice */
	const struct ddl_event *h = &t->ev[from];
	int64_t ha = ddl_trace_real_ns(t, h->start), fs = ha + ddl_trace_dur_ns(t, h) / 2, fe = a + (b - a) / 2;
	if (fs < w->wa || fs > w->wb || fe < w->wa || fe > w->wb)
		return; /* an arrow with an end outside the window */
	w->flow++;
	ddl_cw_start(w, "s", "launch", "flow", fs, ddl_tid(t, h->tid));
	fprintf(w->f, ",\"id\":%" PRIu64 "}", w->flow);
	ddl_cw_start(w, "f", "launch", "flow", fe, tid);
	fprintf(w->f, ",\"bp\":\"e\",\"id\":%" PRIu64 "}", w->flow);
}

/* Open marker ranges of one thread of one image: the first DDL_MDEPTH, as
 * deep as they went (CAP of them held). */
#define DDL_MDEPTH 256
struct ddl_mstack {
	uint16_t tidx;
	int depth, cap;
	int64_t *at, *name;
};

/* Every thread's of one image, found by thread index. */
struct ddl_mstacks {
	struct ddl_mstack *v;
	size_t n, cap;
	uint32_t *slot; /* by thread index: its entry + 1, 0 none */
};

/* The stack of thread TIDX, with room for one more range; NULL without memory. */
static struct ddl_mstack *ddl_mstack_get(struct ddl_mstacks *s, uint16_t tidx)
{
	if (!s->slot && !(s->slot = calloc(UINT16_MAX + 1, sizeof *s->slot)))
		return NULL;
	if (!s->slot[tidx]) {
		if (s->n == s->cap) {
			size_t c = s->cap ? 2 * s->cap : 64;
			struct ddl_mstack *q = realloc(s->v, c * sizeof *q);
			if (!q)
				return NULL;
			s->v = q;
			s->cap = c;
		}
		s->v[s->n] = (struct ddl_mstack){.tidx = tidx};
		s->slot[tidx] = (uint32_t)++s->n;
	}
	struct ddl_mstack *m = &s->v[s->slot[tidx] - 1];
	if (m->depth >= m->cap && m->cap < DDL_MDEPTH) {
		int c = m->cap ? 2 * m->cap : 4;
		int64_t *a = realloc(m->at, (size_t)c * sizeof *a);
		if (a)
			m->at = a;
		int64_t *nm = a ? realloc(m->name, (size_t)c * sizeof *nm) : NULL;
		if (!nm)
			return NULL;
		m->name = nm;
		m->cap = c;
	}
	return m;
}

static void ddl_mstacks_free(struct ddl_mstacks *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].at);
		free(s->v[i].name);
	}
	free(s->v);
	free(s->slot);
}

static void ddl_range_slice(struct ddl_cw *w, const struct ddl_trace *t, const struct ddl_mstack *m,
                            int level, int64_t end, int closed)
{
	const char *name = ddl_trace_name(t, (uint64_t)m->name[level]);
	ddl_cw_slice(w, name ? name : "(unnamed range)", "marker", m->at[level], end,
	             ddl_tid(t, m->tidx));
	if (!closed)
		ddl_arg_int(w, "unclosed", 1);
	ddl_cw_close(w);
}

/* range_push and range_pop pair into one slice; marks are instants. */
static void ddl_marker_event(struct ddl_cw *w, const struct ddl_trace *t, const struct ddl_event *e,
                             struct ddl_mstacks *ms)
{
	int64_t at = ddl_trace_real_ns(t, e->start);
	if (e->kind == DDL_EV_MARK) {
		const char *name = ddl_trace_name(t, (uint64_t)e->result);
		ddl_cw_open(w, "i", name ? name : "(unnamed mark)", "marker", at < w->t0 ? w->t0 : at,
		            ddl_tid(t, e->tid));
		if (!w->skip)
			fputs(",\"s\":\"t\"}", w->f);
		w->skip = 0;
		return;
	}
	if (e->kind != DDL_EV_RANGE_PUSH && e->kind != DDL_EV_RANGE_POP)
		return; /* start/end ranges (NVTX) are not nested: not on the push/pop stack */
	struct ddl_mstack *m = ddl_mstack_get(ms, e->tid);
	if (!m) {
		w->nomem = 1;
		return;
	}
	if (e->kind == DDL_EV_RANGE_PUSH) {
		if (m->depth < DDL_MDEPTH) {
			m->at[m->depth] = at;
			m->name[m->depth] = e->result;
		}
		m->depth++;
	} else if (m->depth > 0 && --m->depth < DDL_MDEPTH) {
		ddl_range_slice(w, t, m, m->depth, at, 1);
	}
}

/* The iterations track: one slice per analysed iteration, with its parts. */
static void ddl_iteration_track(struct ddl_cw *w, const struct ddl_report *r, const struct ddl_proc *p,
                                long tid)
{
	if (!p->niter)
		return;
	ddl_cw_meta(w, "thread_name", tid, "iterations", 0);
	ddl_cw_meta(w, "thread_sort_index", tid, NULL, 0);
	for (size_t k = 0; k < p->niter; k++) {
		char name[48];
		size_t n = k + (size_t)p->warmup_skipped;
		if (r->chrome_it_a >= 0 && ((long)n < r->chrome_it_a || (long)n > r->chrome_it_b))
			continue; /* --iterations: those only (others' times overlap the window) */
		snprintf(name, sizeof name, "iteration %zu", n);
		ddl_cw_slice(w, name, "iteration", p->iter[k].start_ns, p->iter[k].end_ns, tid);
		ddl_arg_int(w, "iteration", (long long)n);
		ddl_arg_str(w, "found_by", p->iteration_method);
		ddl_arg_num(w, "duration_ms", p->iter_s[k] * 1e3);
		const struct ddl_parts *pp = p->iter_parts ? &p->iter_parts[k] : &p->per_iter;
#define DDL_X_ARG(f) ddl_arg_num(w, #f "_ms", pp->f * 1e3);
		DDL_PARTS(DDL_X_ARG)
#undef DDL_X_ARG
		ddl_arg_str(w, "parts", p->iter_parts ? "this iteration" : "mean of the rank");
		ddl_cw_close(w);
	}
}

/* Every event of one image of a process. */
static void ddl_image_events(struct ddl_cw *w, const struct ddl_report *r, const struct ddl_proc *p,
                             size_t k, const struct ddl_tracks *tk)
{
	const struct ddl_trace *t = p->tr[k];
	struct ddl_devcalls dc;
	if (ddl_devcalls_build(r, t, &dc) < 0)
		w->nomem = 1; /* intervals would go unnamed */
	struct ddl_mstacks ms = {0};
	size_t ndev, at = 0;
	struct ddl_cwdev *devs = ddl_cwdevs(p, k, tk, &ndev);
	for (size_t i = 0; i < t->nev; i++) {
		const struct ddl_event *e = &t->ev[i];
		int cls = ddl_event_class(e->kind);
		if (cls == DDL_CLASS_ARGS)
			continue;
		if (cls == DDL_CLASS_MARK) {
			ddl_marker_event(w, t, e, &ms);
			continue;
		}
		if (cls == DDL_CLASS_DEVICE) {
			ddl_device_event(w, p, k, i, &dc, tk, at < ndev && devs[at].i == i ? &devs[at] : NULL);
			at++;
			continue;
		}
		if (cls == DDL_CLASS_API) {
			/* CUPTI's record of a call: drawn only for calls the wrappers did
			 * not see (the wrapped call's own slice holds the others) */
			if (ddl_hostcalls_find(&dc.host, t, i) == SIZE_MAX) {
				const struct ddl_args *a = ddl_event_args(t, i);
				const char *api = a ? ddl_trace_name(t, a->name) : NULL;
				int64_t a0 = ddl_trace_real_ns(t, e->start);
				ddl_cw_slice(w, api ? api : "cuda_api", "cuda", a0, a0 + ddl_trace_dur_ns(t, e),
				             ddl_tid(t, e->tid));
				ddl_arg_str(w, "seen_by", "cupti");
				ddl_arg_int(w, "cupti_corr", (long long)e->result);
				ddl_cw_close(w);
			}
			continue;
		}
		int64_t a = ddl_trace_real_ns(t, e->start);
		ddl_cw_slice(w, ddl_event_name(e->kind), ddl_cat_of(cls), a, a + ddl_trace_dur_ns(t, e),
		             ddl_tid(t, e->tid));
		if (cls >= DDL_CLASS_LAUNCH)
			ddl_gpu_args(w, t, i, cls, &dc);
		else
			ddl_host_args(w, t, e, cls);
		ddl_cw_close(w);
	}
	/* ranges still open when the image ended run to its last clock sample */
	int64_t end = t->nclk ? ddl_trace_real_ns(t, t->clk[t->nclk - 1].ticks) : p->end_real_ns;
	for (size_t m = 0; m < ms.n; m++)
		for (int d = ms.v[m].depth < DDL_MDEPTH ? ms.v[m].depth : DDL_MDEPTH; d-- > 0;)
			ddl_range_slice(w, t, &ms.v[m], d, end > ms.v[m].at[d] ? end : ms.v[m].at[d], 0);
	ddl_mstacks_free(&ms);
	ddl_devcalls_free(&dc);
	free(devs);
}

/*
 * Trace pids: the OS pid, or, when two processes of the run share it (two
 * hosts, containers) or it is 0 (which Perfetto keeps for the kernel's idle
 * task), 2^24 plus the process's index, beyond any Linux pid. The rank is
 * in the process's name, and process_sort_index keeps the report's order.
 */
static long ddl_chrome_pid(const struct ddl_report *r, size_t i)
{
	uint32_t pid = r->procs[i].pid;
	for (size_t k = 0; k < r->nprocs; k++)
		if (k != i && r->procs[k].pid == pid)
			pid = 0;
	return pid ? (long)pid : (1L << 24) + (long)i;
}

static void ddl_process(struct ddl_cw *w, const struct ddl_report *r, size_t i)
{
	const struct ddl_proc *p = &r->procs[i];
	w->pid = ddl_chrome_pid(r, i);
	char name[240], what[64], prog[80] = "";
	if (p->name[0])
		snprintf(prog, sizeof prog, ": %s", p->name);
	if (*ddl_proc_what(r, p, what, sizeof what))
		snprintf(name, sizeof name, "%s on %s%s (pid %u)", what, p->host, prog, p->pid);
	else
		snprintf(name, sizeof name, "%s%s (pid %u)", p->host, prog, p->pid);
	ddl_cw_meta(w, "process_name", w->pid, name, 0);
	ddl_cw_meta(w, "process_sort_index", w->pid, NULL, (long)i);
	struct ddl_tracks tk = {0};
	tk.base = DDL_TID_SYNTH + DDL_TRACKS * (long)i;
	if (ddl_tracks_name(w, p, &tk) < 0)
		w->nomem = 1; /* some tracks would go unnamed */
	ddl_iteration_track(w, r, p, tk.base);
	for (size_t k = 0; k < p->ntr; k++)
		ddl_image_events(w, r, p, k, &tk);
	free(tk.tids);
	free(tk.streams);
}

/* ---- the window: --ranks, --iterations ---- */

/* The next item of LIST at *S: a rank or a range A-B; 1, 0 at the end, -1 malformed. */
static int ddl_rank_item(const char **s, long *a, long *b)
{
	if (!**s)
		return 0;
	char *end;
	errno = 0;
	*a = strtol(*s, &end, 10);
	if (end == *s || *a < 0 || *a > 10000000 || errno || !(**s >= '0' && **s <= '9'))
		return -1;
	*b = *a;
	if (*end == '-') {
		const char *q = end + 1;
		*b = strtol(q, &end, 10);
		if (end == q || *b < *a || *b > 10000000 || errno || !(*q >= '0' && *q <= '9'))
			return -1;
	}
	if (*end != ',' && *end)
		return -1;
	*s = *end ? end + 1 : end;
	return **s || !*end ? 1 : -1; /* "1," ends in nothing */
}

int ddl_rank_list_check(const char *list, char *err, size_t n)
{
	if (!strcmp(list, "all"))
		return 0;
	const char *s = list;
	long a, b;
	int k, any = 0;
	while ((k = ddl_rank_item(&s, &a, &b)) > 0)
		any = 1;
	if (k < 0 || !any) {
		snprintf(err, n, "--ranks '%s': ranks and ranges of them, such as 0,2,4-7, or all", list);
		return -1;
	}
	return 0;
}

int ddl_rank_list_has(const char *list, int rank)
{
	if (!strcmp(list, "all"))
		return 1;
	const char *s = list;
	long a, b;
	while (ddl_rank_item(&s, &a, &b) > 0)
		if (rank >= a && rank <= b)
			return 1;
	return 0;
}

int ddl_proc_listed(const struct ddl_report *r, size_t i, const char *list)
{
	if (!strcmp(list, "all"))
		return 1;
	const struct ddl_proc *p = &r->procs[i];
	for (int hops = 0; p && p->rank < 0 && hops < 16; hops++) /* a helper a rank's shell started */
		p = ddl_proc_served(r, p);
	return p && p->rank >= 0 && ddl_rank_list_has(list, p->rank);
}

/* Whether process I is exported: a listed rank, or one that serves one. */
static int ddl_chrome_has(const struct ddl_report *r, size_t i)
{
	return !r->chrome_ranks || ddl_proc_listed(r, i, r->chrome_ranks);
}

int ddl_rank_list_names(const struct ddl_report *r, const char *list, char *err, size_t n)
{
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].rank >= 0 && ddl_proc_listed(r, i, list))
			return 0;
	snprintf(err, n, "--ranks %s: no such rank in run %s (%d rank%s, from 0)", list, r->run->id, r->nranks,
	         r->nranks == 1 ? "" : "s");
	return -1;
}

int ddl_chrome_window(const struct ddl_report *r, int64_t *a, int64_t *b, char *err, size_t n)
{
	*a = INT64_MIN;
	*b = INT64_MAX;
	if (r->chrome_ranks && ddl_rank_list_names(r, r->chrome_ranks, err, n) < 0)
		return -1;
	if (r->chrome_it_a < 0)
		return 0;
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	long first = LONG_MAX, last = -1;
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!ddl_chrome_has(r, i) || !p->niter)
			continue;
		/* the iterations as numbered in the report: the warm-up counts */
		long w = p->warmup_skipped, k0 = r->chrome_it_a - w, k1 = r->chrome_it_b - w;
		first = w < first ? w : first;
		last = w + (long)p->niter - 1 > last ? w + (long)p->niter - 1 : last;
		k0 = k0 < 0 ? 0 : k0;
		k1 = k1 >= (long)p->niter ? (long)p->niter - 1 : k1;
		if (k0 > k1)
			continue;
		lo = p->iter[k0].start_ns < lo ? p->iter[k0].start_ns : lo;
		hi = p->iter[k1].end_ns > hi ? p->iter[k1].end_ns : hi;
	}
	if (lo > hi) {
		if (last < 0)
			snprintf(err, n, "--iterations %ld:%ld: the ranks exported have no analysed iterations",
			         r->chrome_it_a, r->chrome_it_b);
		else
			snprintf(err, n, "--iterations %ld:%ld: no such iterations (the ranks exported have %ld to %ld)",
			         r->chrome_it_a, r->chrome_it_b, first, last);
		return -1;
	}
	*a = lo;
	*b = hi;
	return 0;
}

int ddl_out_chrome(const struct ddl_report *r, FILE *f)
{
	struct ddl_cw w = {f, r->nprocs ? r->start_real_ns : 0, 1, -1, 0, 0, 0, INT64_MIN, INT64_MAX, 0};
	char err[256];
	if (ddl_chrome_window(r, &w.wa, &w.wb, err, sizeof err) < 0) {
		errno = EINVAL; /* report.c checks it first, saying why */
		return -1;
	}
	fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"schema\":\"ddlprof-chrome/1\",\"run_id\":", f);
	ddl_cw_str(f, r->run->id);
	fprintf(f, ",\"start_unix_ns\":%" PRId64 ",\"ddlprof\":\"%s\"", w.t0, DDLPROF_VERSION);
	/* as in the JSON: memory ran out, the timeline misses what was not read */
	fprintf(f, ",\"truncated\":%s,\"incomplete\":%s", r->truncated ? "true" : "false",
	        r->incomplete ? "true" : "false");
	if (r->chrome_ranks || r->chrome_it_a >= 0) { /* a window: what it holds */
		fputs(",\"window\":{\"ranks\":", f);
		ddl_cw_str(f, r->chrome_ranks ? r->chrome_ranks : "all");
		if (r->chrome_it_a >= 0) {
			fprintf(f, ",\"iterations\":[%ld,%ld],\"start_us\":", r->chrome_it_a, r->chrome_it_b);
			ddl_cw_us(f, w.wa - w.t0);
			fputs(",\"end_us\":", f);
			ddl_cw_us(f, w.wb - w.t0);
		}
		fputc('}', f);
	}
	fputs("},\n\"traceEvents\":[", f);
	for (size_t i = 0; i < r->nprocs && !w.nomem; i++)
		if (ddl_chrome_has(r, i)) {
			ddl_proc_hold(&r->procs[i]);
			ddl_process(&w, r, i);
			ddl_proc_release(&r->procs[i]);
		}
	fputs("\n]}\n", f);
	if (w.nomem) {
		errno = ENOMEM;
		return -1;
	}
	return ferror(f) ? -1 : 0;
}
