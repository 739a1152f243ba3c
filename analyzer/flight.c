/*
 * Traffic in flight, for the host-side breakdown (breakdown.c) and the call
 * sites (callsites.c): when the bytes a process exchanges with others are
 * on their way. A process's own send and receive calls show only part of
 * that time. A gloo (or MPI, or NCCL socket) progress thread that has
 * handed a chunk to the kernel returns, and then sits in epoll while the
 * chunk crosses a slow link; the chunk that answers it arrives while its
 * sender is blocked in a send call. The training thread waiting on both
 * is waiting on the network, though neither of its own process's calls
 * is running.
 *
 * Both ends of a TCP connection are usually in the job's traces, so each
 * connection is paired with its other end, on another host when the peer
 * is remote and on the same host when it is local: first the connection
 * of a process that received every byte this one sent and sent every
 * byte it received (equal totals both ways; among several such, the one
 * whose receives least often end before the send that carried their
 * bytes, by offset in the stream, began); then, for the rest, where a
 * process lost events to full buffers (or its trace was cut short) and
 * so counted less than it moved, the one whose totals differ least in
 * the direction those losses allow. A connection's traffic is then in
 * flight:
 *   - while this process is in a send or receive call on it (the rule
 *     before pairing, kept whole: a thread blocked in a receive is waiting
 *     on that connection);
 *   - while the other end is in a send call on it, or in a receive call
 *     from the later of the call's start and the start of the other
 *     side's last send before it ended (before that it waited on us, not
 *     on the network);
 *   - while either end's receiving thread sits in a socket wait (poll,
 *     select, epoll) that ends with bytes, from the later of the wait's
 *     start and the start of the other side's last send before the wait
 *     ended, to the wait's end: the bytes that end a wait were sent
 *     before it ended. Before that send, the wait was for a peer still
 *     computing (a straggler), which is idle, not stall. (The last send,
 *     not the one that carried the bytes by offset, which a lost event
 *     would shift.)
 * Pairing only adds windows to what a process's own calls show, so a
 * clock error between hosts can misplace the added time but never take
 * away what the own calls count. A connection whose other end is not in
 * the traces (a server outside the job, a lost buffer that breaks the
 * totals) keeps its own calls only. Windows closer than
 * DDL_FLIGHT_GAP_NS are one, as they always were. Times are on the
 * report's common clock (align.c; jobs without collectives keep each
 * host's real-time clock).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report.h"

#define DDL_FLIGHT_GAP_NS 2000000 /* traffic closer than this is one window */
#define DDL_FLIGHT_ROUNDS 4        /* of pairing by nearest totals (ddl_fconn_pair) */

/* A send or receive with bytes, or a socket wait, of one process, as it is
 * gathered (ddl_fout_build). */
struct ddl_fx {
	int64_t a, b;
	int64_t wa, wb;   /* receive: the socket wait its thread made just before (wb 0: none) */
	int64_t bytes;
	const char *peer; /* NULL: not a connection the trace names */
	uint32_t tid;
	int32_t fd;
	uint32_t group;   /* its connection (or its fd's loose records), once grouped */
	uint8_t cls;      /* DDL_CLASS_TX, _RX or _WAIT */
	uint8_t ready;    /* a wait that returned something ready */
	uint8_t peek;     /* a receive that left its bytes in the socket (MSG_PEEK) */
	uint8_t remote;
};

/* One process's records by connection (peer and fd): where its sends and
 * its receives go among the process's records. */
struct ddl_fgroup {
	const char *peer;
	int32_t fd;
	uint32_t hash;       /* of the peer's text and the fd */
	size_t n[2], at[2];  /* sends [0] and receives [1]: how many, their first place */
	int64_t last_a[2];   /* ... the last one's start and thread as they come */
	uint32_t last_tid[2];
	int unsorted[2];     /* they did not come in the order they are kept in */
};

/* The ready socket wait a thread made last, as its records are followed. */
struct ddl_fwait {
	int64_t a, b;
	int on; /* 0: none, or a send or receive with bytes came after it */
};

/* A thread's socket state while its records are gathered: the start of its
 * last record, and its last ready wait. */
struct ddl_fthread {
	uint32_t tid;
	int used;
	int64_t last_a;
	struct ddl_fwait wait;
};

/* What gathering a process's records works in; each thread of the
 * analysis takes one and hands it on to the next process it works on
 * (their arrays grow to the largest process's, and are made once). */
struct ddl_fscratch {
	struct ddl_fx *v;
	size_t n, cap;
	size_t *ord;                  /* the kept records in the order they are kept */
	size_t ocap;
	struct ddl_fthread *th;       /* by thread id, open addressing */
	size_t thcap;
	struct ddl_fgroup *g;
	size_t ng, gcap;
	uint32_t *gtab;               /* groups by (peer text, fd): index + 1, 0 empty */
	size_t hcap;
	uint32_t *ph;                 /* the hash of each peer's text, of the trace read */
	size_t phcap;
	uint32_t *gorder;             /* the groups in the order they are kept */
	size_t gocap;
	unsigned char *pack;          /* the records packed for the spill file */
	size_t packcap;
	struct ddl_fscratch *next;    /* free list */
};

/* What pairing and the windows keep of a send or receive: 48 bytes, not
 * ddl_fx's 80, and in a spill file when a job's records are many. */
struct ddl_fxrec {
	int64_t a, b;
	int64_t wa, wb;
	uint64_t off;   /* offset of its first byte in its direction's stream */
	int64_t bytes;
};

/* One connection: a run of its process's records, sends then receives. */
struct ddl_fconn {
	size_t proc;
	const struct ddl_fxrec *tx, *rx; /* NULL when spilled: then packed in the file,
	                                  * LEN bytes at AT */
	size_t ntx, nrx;
	uint64_t at, len;
	uint64_t sent, recvd;
	int remote;
	int lossy; /* its process lost events: the totals may fall short */
	long mate; /* the other end, or -1 */
};

/* One process's connections and records: each connection's sends, then its
 * receives, then the NLOOSE sends and receives on no named connection. */
struct ddl_fout {
	struct ddl_fxrec *rec; /* NULL when spilled: the loose then packed in the file,
	                        * LEN bytes at AT */
	size_t nrec, nloose;
	uint64_t at, len;
	struct ddl_fconn *conn;
	size_t nconn;
};

/*
 * The spill file: where the records go once those in memory pass the
 * events' budget (trace_events.c), so that a job's socket records, one
 * for about every second event, do not all stay in memory until the
 * connections are paired. An unlinked file in $TMPDIR (else /tmp); where
 * it cannot be made or written, the records stay in memory.
 */
struct ddl_fspill {
	pthread_mutex_t mu;
	int fd;          /* -1: not opened yet; -2: cannot be */
	uint64_t end;
	size_t mem;      /* bytes of records kept in memory */
};

static int ddl_fspill_open(struct ddl_fspill *sp)
{
	if (sp->fd != -1)
		return sp->fd;
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0) {
		char path[4096];
		snprintf(path, sizeof path, "%s/ddlprof-report.XXXXXX", dir);
		fd = mkostemp(path, O_CLOEXEC);
		if (fd >= 0)
			unlink(path);
	}
	sp->fd = fd >= 0 ? fd : -2;
	return sp->fd;
}

/*
 * Records as the spill file holds them, packed: a head of two bytes (the
 * flags, and the length in bytes, 0 to 8, of each of the three values
 * every record has), a byte more of lengths where the flags say there is
 * a wait and one where they say there is an offset, then the values,
 * little-endian, each in its length: its start less the start of the one
 * before, its length, its bytes and, where the flags say so, its wait
 * (start less the record's, length) and its offset (less the one the
 * record before implies), each zigzagged. About 12 bytes instead of 48,
 * so that a quarter as much is written and read back; the lengths in the
 * head, not a varint's bit a byte, so that a value is one load, not a
 * branch a byte.
 */
enum { DDL_FXP_WAIT = 1, DDL_FXP_OFF = 2, DDL_FXP_MAX = 4 + 6 * 8 /* bytes, at most */ };

/* The bytes V takes: 0 (V is 0) to 8. */
static unsigned ddl_fxp_len(uint64_t v)
{
	return v ? (unsigned)(71 - __builtin_clzll(v)) / 8 : 0;
}

/* V in little-endian order (its low bytes first, the ones a length keeps). */
static uint64_t ddl_fxp_le(uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return __builtin_bswap64(v);
#else
	return v;
#endif
}

/* V stored at P in its LEN bytes; 8 bytes written (DDL_FXP_MAX leaves room). */
static unsigned char *ddl_fxp_put(unsigned char *p, uint64_t v, unsigned len)
{
	v = ddl_fxp_le(v);
	memcpy(p, &v, 8);
	return p + len;
}

/* The value of LEN (at most 8) bytes at P, 8 of which may be read. */
static const uint64_t ddl_fxp_mask[9] = {0, 0xff, 0xffff, 0xffffff, 0xffffffff, 0xffffffffff,
                                         0xffffffffffff, 0xffffffffffffff, UINT64_MAX};
static uint64_t ddl_fxp_get(const unsigned char *p, unsigned len)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return ddl_fxp_le(v) & ddl_fxp_mask[len];
}

/* X - Y wrapping, zigzagged (small either way is small), and back. */
static uint64_t ddl_zz_diff(int64_t x, int64_t y)
{
	uint64_t d = (uint64_t)x - (uint64_t)y;
	return d << 1 ^ (0 - (d >> 63));
}

static int64_t ddl_zz_add(int64_t y, uint64_t z)
{
	uint64_t d = z >> 1 ^ (0 - (z & 1));
	return (int64_t)((uint64_t)y + d);
}

/* Packs record X into OUT (room for DDL_FXP_MAX), after the record whose
 * start and end offset are *A and *OFF (0 and 0 for a run's first);
 * past it. */
static unsigned char *ddl_fx_pack(const struct ddl_fxrec *x, int64_t *a, uint64_t *off, unsigned char *out)
{
	int wait = x->wa || x->wb, moved = x->off != *off;
	uint64_t v0 = ddl_zz_diff(x->a, *a), v1 = ddl_zz_diff(x->b, x->a), v2 = ddl_zz_diff(x->bytes, 0);
	unsigned l0 = ddl_fxp_len(v0), l1 = ddl_fxp_len(v1), l2 = ddl_fxp_len(v2);
	*out++ = (unsigned char)((wait ? DDL_FXP_WAIT : 0) | (moved ? DDL_FXP_OFF : 0) | l0 << 2);
	*out++ = (unsigned char)(l1 | l2 << 4);
	uint64_t v3 = 0, v4 = 0, v5 = 0;
	unsigned l3 = 0, l4 = 0, l5 = 0;
	if (wait) {
		v3 = ddl_zz_diff(x->wa, x->a);
		v4 = ddl_zz_diff(x->wb, x->wa);
		l3 = ddl_fxp_len(v3);
		l4 = ddl_fxp_len(v4);
		*out++ = (unsigned char)(l3 | l4 << 4);
	}
	if (moved) {
		v5 = ddl_zz_diff((int64_t)x->off, (int64_t)*off);
		l5 = ddl_fxp_len(v5);
		*out++ = (unsigned char)l5;
	}
	out = ddl_fxp_put(out, v0, l0);
	out = ddl_fxp_put(out, v1, l1);
	out = ddl_fxp_put(out, v2, l2);
	out = ddl_fxp_put(out, v3, l3); /* lengths 0 where there is no wait, no offset */
	out = ddl_fxp_put(out, v4, l4);
	out = ddl_fxp_put(out, v5, l5);
	*a = x->a;
	*off = x->off + (uint64_t)x->bytes;
	return out;
}

/* N records packed at P (before END) into R; past them, or NULL. Each is
 * unpacked from a copy of its bytes where fewer than DDL_FXP_MAX + 8 are
 * left, so that every load of 8 bytes stays inside what was read. */
static const unsigned char *ddl_fx_unpack(const unsigned char *p, const unsigned char *end, struct ddl_fxrec *r,
                                          size_t n)
{
	int64_t a = 0;
	uint64_t off = 0;
	unsigned char tail[2 * DDL_FXP_MAX + 8];
	for (size_t i = 0; i < n; i++) {
		const unsigned char *q = p;
		if (end - p < DDL_FXP_MAX + 8) { /* the last few: from a copy, zeros after it */
			size_t left = (size_t)(end - p);
			memset(tail, 0, sizeof tail);
			memcpy(tail, p, left);
			q = tail;
		}
		unsigned h0 = q[0], h1 = q[1], fl = h0 & 3;
		unsigned l0 = h0 >> 2, l1 = h1 & 15, l2 = h1 >> 4, l3 = 0, l4 = 0, l5 = 0;
		const unsigned char *at = q + 2;
		if (fl & DDL_FXP_WAIT) {
			l3 = *at & 15;
			l4 = *at++ >> 4;
		}
		if (fl & DDL_FXP_OFF)
			l5 = *at++;
		if (l0 > 8 || l1 > 8 || l2 > 8 || l3 > 8 || l4 > 8 || l5 > 8)
			return NULL; /* not packed by ddl_fx_pack */
		size_t len = (size_t)(at - q) + l0 + l1 + l2 + l3 + l4 + l5;
		if (end - p < 2 || len > (size_t)(end - p))
			return NULL; /* cut off */
		uint64_t v0 = ddl_fxp_get(at, l0);
		at += l0;
		uint64_t v1 = ddl_fxp_get(at, l1);
		at += l1;
		uint64_t v2 = ddl_fxp_get(at, l2);
		at += l2;
		uint64_t v3 = ddl_fxp_get(at, l3);
		at += l3;
		uint64_t v4 = ddl_fxp_get(at, l4);
		at += l4;
		uint64_t v5 = ddl_fxp_get(at, l5);
		struct ddl_fxrec *x = &r[i];
		x->a = ddl_zz_add(a, v0);
		x->b = ddl_zz_add(x->a, v1);
		x->bytes = ddl_zz_add(0, v2);
		x->wa = fl & DDL_FXP_WAIT ? ddl_zz_add(x->a, v3) : 0;
		x->wb = fl & DDL_FXP_WAIT ? ddl_zz_add(x->wa, v4) : 0;
		x->off = fl & DDL_FXP_OFF ? (uint64_t)ddl_zz_add((int64_t)off, v5) : off;
		a = x->a;
		off = x->off + (uint64_t)x->bytes;
		p += len;
	}
	return p;
}

/* Whether records of RAW bytes in memory go to the spill file (those kept
 * are past the budget, and there is a file); else they count as kept. */
static int ddl_fspill_wants(struct ddl_fspill *sp, size_t raw)
{
	pthread_mutex_lock(&sp->mu);
	int spill = raw && sp->mem + raw > ddl_events_budget && ddl_fspill_open(sp) >= 0;
	if (!spill)
		sp->mem += raw;
	pthread_mutex_unlock(&sp->mu);
	return spill;
}

/* RAW bytes of records kept in memory after all. */
static void ddl_fspill_keep(struct ddl_fspill *sp, size_t raw)
{
	pthread_mutex_lock(&sp->mu);
	sp->mem += raw;
	pthread_mutex_unlock(&sp->mu);
}

/* Room for LEN bytes in the spill file: their place. Room is made for
 * the most a process's records could pack into, and what they leave is
 * a hole, which takes no disk. */
static uint64_t ddl_fspill_reserve(struct ddl_fspill *sp, uint64_t len)
{
	pthread_mutex_lock(&sp->mu);
	uint64_t at = sp->end;
	sp->end += len;
	pthread_mutex_unlock(&sp->mu);
	return at;
}

/* Writes LEN bytes at P to the spill file at AT; 0, or -1 (a full disk). */
static int ddl_fspill_put(const struct ddl_fspill *sp, const unsigned char *p, size_t len, uint64_t at)
{
	for (size_t done = 0; done < len;) {
		ssize_t w = pwrite(sp->fd, p + done, len - done, (off_t)(at + done));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		done += (size_t)w;
	}
	return 0;
}

/* Where spilled records are read back into: the records, and their bytes. */
struct ddl_fview {
	struct ddl_fxrec *rec;
	size_t cap;
	unsigned char *raw;
	size_t rawcap;
};

/* The N1 then N2 records packed in LEN bytes at AT of the spill file into
 * V->rec (each run packed on its own); 0 or -1. */
static int ddl_fspill_get(const struct ddl_fspill *sp, uint64_t at, size_t len, size_t n1, size_t n2,
                          struct ddl_fview *v)
{
	if (ddl_grow_charged((void **)&v->raw, &v->rawcap, len, 1) < 0 ||
	    ddl_grow_charged((void **)&v->rec, &v->cap, n1 + n2, sizeof *v->rec) < 0)
		return -1;
	for (size_t done = 0; done < len;) {
		ssize_t r = pread(sp->fd, v->raw + done, len - done, (off_t)(at + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	const unsigned char *p = ddl_fx_unpack(v->raw, v->raw + len, v->rec, n1);
	return p && ddl_fx_unpack(p, v->raw + len, v->rec + n1, n2) ? 0 : -1;
}

static void ddl_fview_free(struct ddl_fview *v)
{
	ddl_events_uncharge(v->cap * sizeof *v->rec + v->rawcap);
	free(v->rec);
	free(v->raw);
}

/* C with its records in memory: as it is, or read back into V. 0 or -1. */
static int ddl_fconn_view(const struct ddl_fspill *sp, const struct ddl_fconn *c, struct ddl_fconn *out,
                          struct ddl_fview *v)
{
	*out = *c;
	if (c->tx || !(c->ntx + c->nrx))
		return 0;
	if (ddl_fspill_get(sp, c->at, c->len, c->ntx, c->nrx, v) < 0)
		return -1;
	out->tx = v->rec;
	out->rx = v->rec + c->ntx;
	return 0;
}

static uint32_t ddl_fhash_text(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* Room for the groups' table to hold one more; 0 or -1. */
static int ddl_fgroup_room(struct ddl_fscratch *s)
{
	if (ddl_grow((void **)&s->g, &s->gcap, s->ng + 1, sizeof *s->g) < 0)
		return -1;
	if (2 * (s->ng + 1) <= s->hcap)
		return 0;
	size_t c = s->hcap ? s->hcap * 2 : 64;
	uint32_t *t = calloc(c, sizeof *t);
	if (!t)
		return -1;
	for (size_t i = 0; i < s->ng; i++) {
		size_t h = s->g[i].hash & (c - 1);
		while (t[h])
			h = (h + 1) & (c - 1);
		t[h] = (uint32_t)i + 1;
	}
	free(s->gtab);
	s->gtab = t;
	s->hcap = c;
	return 0;
}

/* The group of the records on PEER (TEXT_HASH the hash of its text; NULL:
 * on no named connection) and FD, made when new; UINT32_MAX without memory. */
static uint32_t ddl_fgroup_of(struct ddl_fscratch *s, const char *peer, uint32_t text_hash, int32_t fd)
{
	uint32_t hash = text_hash ^ ((uint32_t)fd * 0x9e3779b1u);
	if (s->hcap) {
		for (size_t h = hash & (s->hcap - 1); s->gtab[h]; h = (h + 1) & (s->hcap - 1)) {
			const struct ddl_fgroup *g = &s->g[s->gtab[h] - 1];
			if (g->fd == fd && (g->peer == peer || (g->peer && peer && !strcmp(g->peer, peer))))
				return s->gtab[h] - 1;
		}
	}
	if (ddl_fgroup_room(s) < 0)
		return UINT32_MAX;
	size_t h = hash & (s->hcap - 1);
	while (s->gtab[h])
		h = (h + 1) & (s->hcap - 1);
	s->gtab[h] = (uint32_t)s->ng + 1;
	s->g[s->ng] = (struct ddl_fgroup){.peer = peer, .fd = fd, .hash = hash,
	                                  .last_a = {INT64_MIN, INT64_MIN}};
	return (uint32_t)s->ng++;
}

/* Thread TID's state in S's table (which has room for it). */
static struct ddl_fthread *ddl_fthread_of(struct ddl_fscratch *s, uint32_t tid)
{
	size_t m = s->thcap - 1, h = (tid * 2654435761u) & m;
	while (s->th[h].used && s->th[h].tid != tid)
		h = (h + 1) & m;
	if (!s->th[h].used)
		s->th[h] = (struct ddl_fthread){tid, 1, INT64_MIN, {0, 0, 0}};
	return &s->th[h];
}

/* Record X in its thread's time order, W the ready wait the thread made
 * last: a receive with bytes takes it, a send or receive with bytes ends
 * it. */
static void ddl_fx_follow(struct ddl_fwait *w, struct ddl_fx *x)
{
	if (x->cls == DDL_CLASS_WAIT) {
		*w = (struct ddl_fwait){x->a, x->b, x->ready};
	} else if (x->bytes > 0) {
		if (x->cls == DDL_CLASS_RX && w->on) {
			x->wa = w->a;
			x->wb = w->b;
		}
		w->on = 0;
	}
}

/* Orders of record indices (qsort_r, ARG the records): by thread then
 * time; by time then thread; both then as recorded. */
static int ddl_fx_by_thread(const void *x, const void *y, void *arg)
{
	const struct ddl_fx *v = arg;
	size_t i = *(const size_t *)x, j = *(const size_t *)y;
	if (v[i].tid != v[j].tid)
		return v[i].tid < v[j].tid ? -1 : 1;
	if (v[i].a != v[j].a)
		return v[i].a < v[j].a ? -1 : 1;
	return i < j ? -1 : i > j;
}

static int ddl_fx_by_time(const void *x, const void *y, void *arg)
{
	const struct ddl_fx *v = arg;
	size_t i = *(const size_t *)x, j = *(const size_t *)y;
	if (v[i].a != v[j].a)
		return v[i].a < v[j].a ? -1 : 1;
	if (v[i].tid != v[j].tid)
		return v[i].tid < v[j].tid ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* Kept records (sends and receives with bytes) of group G in direction D
 * (0 sends, 1 receives) come in S's order; whether they come in time
 * order, ties by thread, is noted. */
static void ddl_fgroup_count(struct ddl_fgroup *g, int d, const struct ddl_fx *x)
{
	if (x->a < g->last_a[d] || (x->a == g->last_a[d] && x->tid < g->last_tid[d]))
		g->unsorted[d] = 1;
	g->last_a[d] = x->a;
	g->last_tid[d] = x->tid;
	g->n[d]++;
}

/*
 * Gathers the records of process P into S, in one pass over its events:
 * its sends and receives with bytes, each receive given the ready socket
 * wait its thread made last unless a send or receive with bytes came in
 * between (in each thread's order of starts), and grouped by connection.
 * That order is the order the records come in, unless some thread's do
 * not: then they are gathered again with the waits and the sends and
 * receives without bytes (ALL), and sorted. 0, 1 (not in order: ALL
 * needed), or -1.
 */
static int ddl_fgather_pass(const struct ddl_proc *p, struct ddl_fscratch *s, int all)
{
	s->n = s->ng = 0;
	if (s->hcap)
		memset(s->gtab, 0, s->hcap * sizeof *s->gtab);
	size_t nth = 1, tc = 16;
	for (size_t k = 0; k < p->ntr; k++)
		nth += p->tr[k]->nthreads;
	while (tc < 2 * nth)
		tc *= 2;
	if (tc > s->thcap) {
		free(s->th);
		s->thcap = 0;
		if (!(s->th = malloc(tc * sizeof *s->th)))
			return -1;
		s->thcap = tc;
	}
	memset(s->th, 0, s->thcap * sizeof *s->th);
	int resort = 0;
	for (size_t k = 0; k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		if (ddl_grow((void **)&s->ph, &s->phcap, t->npeers + 1, sizeof *s->ph) < 0)
			return -1;
		for (size_t i = 0; i < t->npeers; i++)
			s->ph[i] = t->peers[i].text ? ddl_fhash_text(t->peers[i].text) : 0;
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			int c = ddl_event_class(e->kind);
			if (c != DDL_CLASS_TX && c != DDL_CLASS_RX && c != DDL_CLASS_WAIT)
				continue;
			if (c == DDL_CLASS_WAIT && !(e->flags & DDL_EVF_SOCKWAIT))
				continue;
			if (s->n == s->cap && ddl_grow_charged((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v) < 0)
				return -1;
			struct ddl_fx *x = &s->v[s->n];
			*x = (struct ddl_fx){0};
			x->a = ddl_trace_real_ns(t, e->start);
			x->b = x->a + ddl_trace_dur_ns(t, e);
			x->tid = e->tid < t->nthreads ? t->threads[e->tid].tid : 0;
			x->fd = e->fd;
			x->cls = (uint8_t)c;
			x->ready = e->result > 0;
			x->peek = (e->flags & DDL_EVF_PEEK) != 0;
			x->bytes = e->result;
			uint32_t h = 0;
			if (c != DDL_CLASS_WAIT && e->peer && e->peer < t->npeers && t->peers[e->peer].text) {
				x->peer = t->peers[e->peer].text;
				x->remote = !t->peers[e->peer].local;
				h = s->ph[e->peer];
			}
			struct ddl_fthread *th = ddl_fthread_of(s, x->tid);
			if (x->a < th->last_a) {
				if (!all)
					return 1;
				resort = 1;
			}
			th->last_a = x->a;
			ddl_fx_follow(&th->wait, x);
			if (c != DDL_CLASS_WAIT && x->bytes > 0) {
				if ((x->group = ddl_fgroup_of(s, x->peer, h, x->fd)) == UINT32_MAX)
					return -1;
				ddl_fgroup_count(&s->g[x->group], c == DDL_CLASS_RX, x);
				s->n++;
			} else {
				s->n += all != 0; /* kept only to be followed again */
			}
		}
	}
	if (!resort)
		return 0;
	/* some thread's records came out of the order of their starts (a call
	 * made inside another): the waits followed again in that order */
	if (ddl_grow_charged((void **)&s->ord, &s->ocap, s->n, sizeof *s->ord) < 0)
		return -1;
	for (size_t i = 0; i < s->n; i++) {
		s->ord[i] = i;
		s->v[i].wa = s->v[i].wb = 0;
	}
	if (s->n > 1)
		qsort_r(s->ord, s->n, sizeof *s->ord, ddl_fx_by_thread, s->v);
	struct ddl_fwait wait = {0, 0, 0};
	for (size_t i = 0; i < s->n; i++) {
		if (i && s->v[s->ord[i]].tid != s->v[s->ord[i - 1]].tid)
			wait.on = 0;
		ddl_fx_follow(&wait, &s->v[s->ord[i]]);
	}
	return 0;
}

static int ddl_fgather(const struct ddl_proc *p, struct ddl_fscratch *s)
{
	int rc = ddl_fgather_pass(p, s, 0);
	return rc == 1 ? ddl_fgather_pass(p, s, 1) : rc;
}

/* The order groups are kept in: connections by peer, then fd; then those
 * on no named connection, by fd. */
static int ddl_fgroup_cmp(const void *x, const void *y, void *arg)
{
	const struct ddl_fgroup *g = arg, *p = &g[*(const uint32_t *)x], *q = &g[*(const uint32_t *)y];
	if (!p->peer != !q->peer)
		return p->peer ? -1 : 1;
	int c = p->peer && p->peer != q->peer ? strcmp(p->peer, q->peer) : 0;
	if (c)
		return c;
	return p->fd < q->fd ? -1 : p->fd > q->fd;
}

/* S's kept records in the order they are kept (the groups in
 * ddl_fgroup_cmp's order, each its sends then its receives, each in time
 * order, ties by thread then as recorded) into S->ord, each group's
 * places set; the number kept, or SIZE_MAX without memory. */
static size_t ddl_fgroup_order(struct ddl_fscratch *s)
{
	if (ddl_grow((void **)&s->gorder, &s->gocap, s->ng, sizeof *s->gorder) < 0)
		return SIZE_MAX;
	for (size_t i = 0; i < s->ng; i++)
		s->gorder[i] = (uint32_t)i;
	if (s->ng > 1)
		qsort_r(s->gorder, s->ng, sizeof *s->gorder, ddl_fgroup_cmp, s->g);
	size_t at = 0;
	for (size_t i = 0; i < s->ng; i++) {
		struct ddl_fgroup *g = &s->g[s->gorder[i]];
		for (int d = 0; d < 2; d++) {
			g->at[d] = at;
			at += g->n[d];
		}
	}
	if (ddl_grow_charged((void **)&s->ord, &s->ocap, at, sizeof *s->ord) < 0)
		return SIZE_MAX;
	for (size_t i = 0; i < s->n; i++) { /* as recorded into each group's place */
		const struct ddl_fx *x = &s->v[i];
		if (x->cls != DDL_CLASS_WAIT && x->bytes > 0)
			s->ord[s->g[x->group].at[x->cls == DDL_CLASS_RX]++] = i;
	}
	for (size_t i = 0; i < s->ng; i++) {
		struct ddl_fgroup *g = &s->g[i];
		for (int d = 0; d < 2; d++) {
			g->at[d] -= g->n[d];
			if (g->unsorted[d] && g->n[d] > 1)
				qsort_r(s->ord + g->at[d], g->n[d], sizeof *s->ord, ddl_fx_by_time, s->v);
		}
	}
	return at;
}

static void ddl_fscratch_free(struct ddl_fscratch *s)
{
	ddl_events_uncharge(s->cap * sizeof *s->v + s->ocap * sizeof *s->ord);
	free(s->v);
	free(s->ord);
	free(s->th);
	free(s->g);
	free(s->gtab);
	free(s->ph);
	free(s->gorder);
	free(s->pack);
	free(s);
}

/* The send of C that carried byte OFF, or NULL. */
static const struct ddl_fxrec *ddl_fconn_carrier(const struct ddl_fconn *c, uint64_t off)
{
	size_t lo = 0, hi = c->ntx;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->tx[mid].off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && off < c->tx[lo - 1].off + (uint64_t)c->tx[lo - 1].bytes ? &c->tx[lo - 1] : NULL;
}

/* The send of C that started last at or before T, or NULL; *HINT is
 * where the last such search ended (the count of sends that started by
 * then), from which this one gallops: each connection's receives ask in
 * about the order of time. */
static const struct ddl_fxrec *ddl_fconn_last_send(const struct ddl_fconn *c, int64_t t, size_t *hint)
{
	size_t n = c->ntx, lo, hi = *hint < n ? *hint : n, step = 1;
	if (hi < n && c->tx[hi].a <= t) { /* later: the count is above HI */
		lo = hi + 1;
		size_t probe = lo;
		while (probe < n && c->tx[probe].a <= t) {
			lo = probe + 1;
			probe = lo + step;
			step *= 2;
		}
		hi = probe < n ? probe : n;
	} else { /* earlier, or here: the count is at most HI */
		lo = hi;
		while (lo > 0 && c->tx[lo - 1].a > t) {
			hi = lo - 1;
			lo = hi > step ? hi - step : 0;
			step *= 2;
		}
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->tx[mid].a <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	*hint = lo;
	return lo > 0 ? &c->tx[lo - 1] : NULL;
}

/* Receives of TO that end before the send of FROM that carried their first byte began. */
static size_t ddl_fconn_violations(const struct ddl_fconn *from, const struct ddl_fconn *to)
{
	size_t v = 0;
	for (size_t i = 0; i < to->nrx; i++) {
		const struct ddl_fxrec *s = ddl_fconn_carrier(from, to->rx[i].off);
		v += !s || s->a > to->rx[i].b;
	}
	return v;
}

static int ddl_fconn_by_totals(const void *x, const void *y, void *arg)
{
	const struct ddl_fconn *c = arg;
	const struct ddl_fconn *p = &c[*(const size_t *)x], *q = &c[*(const size_t *)y];
	if (p->sent != q->sent)
		return p->sent < q->sent ? -1 : 1;
	if (p->recvd != q->recvd)
		return p->recvd < q->recvd ? -1 : 1;
	return *(const size_t *)x < *(const size_t *)y ? -1 : 1;
}

static int ddl_same_host(const struct ddl_report *r, size_t a, size_t b)
{
	const char *x = r->procs[a].host, *y = r->procs[b].host;
	return x && y && !strcmp(x, y);
}

/* Whether X bytes sent and Y received can be one direction of a stream,
 * when a side that lost events (XL, YL) may have counted less than it
 * moved; *MISS the difference. */
static int ddl_fconn_short(uint64_t x, int xl, uint64_t y, int yl, uint64_t *miss)
{
	*miss = x > y ? x - y : y - x;
	return x == y || (xl && yl) || (xl && x < y) || (yl && y < x);
}

/* Whether connection J of C[] can be I's other end by where they are:
 * neither paired yet, both remote or both local, and on other hosts when
 * remote, on the same host when local. */
static int ddl_fconn_candidate(const struct ddl_report *r, const struct ddl_fconn *c, size_t i,
                               size_t j)
{
	const struct ddl_fconn *a = &c[i], *b = &c[j];
	return j != i && b->mate < 0 && b->remote == a->remote &&
	       ddl_same_host(r, a->proc, b->proc) != a->remote;
}

/* A possible pair of connections A < B whose totals differ by MISS. */
struct ddl_fedge {
	uint64_t miss;
	size_t a, b;
};

static int ddl_fedge_cmp(const void *x, const void *y)
{
	const struct ddl_fedge *p = x, *q = y;
	if (p->miss != q->miss)
		return p->miss < q->miss ? -1 : 1;
	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	return p->b < q->b ? -1 : p->b > q->b;
}

/* Pairs each connection with its other end (the head comment); 0, or -1
 * without memory (some left unpaired). */
static int ddl_fconn_pair(const struct ddl_report *r, const struct ddl_fspill *sp, struct ddl_fconn *c,
                          size_t n)
{
	struct ddl_fview ba = {0}, bb = {0}; /* spilled records read back */
	int rc = 0;
	size_t *ix = malloc((n ? n : 1) * sizeof *ix);
	if (!ix)
		return -1;
	for (size_t i = 0; i < n; i++)
		ix[i] = i;
	qsort_r(ix, n, sizeof *ix, ddl_fconn_by_totals, c);
	for (size_t i = 0; i < n && !rc; i++) {
		struct ddl_fconn *a = &c[i], va;
		int loaded = 0;
		if (a->mate >= 0)
			continue;
		/* the first connection whose totals are A's, crossed */
		size_t lo = 0, hi = n;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			const struct ddl_fconn *q = &c[ix[mid]];
			if (q->sent < a->recvd || (q->sent == a->recvd && q->recvd < a->sent))
				lo = mid + 1;
			else
				hi = mid;
		}
		long best = -1;
		size_t end = lo, ncand = 0;
		for (; end < n && c[ix[end]].sent == a->recvd && c[ix[end]].recvd == a->sent; end++)
			if (ddl_fconn_candidate(r, c, i, ix[end]) && !ncand++)
				best = (long)ix[end];
		/* one candidate is the pair whatever its receives say: the
		 * records are read and compared only to choose among several */
		if (ncand > 1)
			best = -1;
		size_t best_v = 0;
		for (size_t k = lo; ncand > 1 && k < end; k++) {
			size_t j = ix[k];
			if (!ddl_fconn_candidate(r, c, i, j))
				continue;
			struct ddl_fconn vb;
			if ((!loaded && ddl_fconn_view(sp, a, &va, &ba) < 0) || ddl_fconn_view(sp, &c[j], &vb, &bb) < 0) {
				rc = -1;
				break;
			}
			loaded = 1;
			size_t v = ddl_fconn_violations(&va, &vb) + ddl_fconn_violations(&vb, &va);
			if (best < 0 || v < best_v) {
				best = (long)j;
				best_v = v;
			}
			if (!v)
				break;
		}
		if (best >= 0) {
			a->mate = best;
			c[best].mate = (long)i;
		}
	}
	free(ix);
	ddl_fview_free(&ba);
	ddl_fview_free(&bb);
	if (rc)
		return rc;
	/* then the rest: each takes its closest candidate, closest pairs first;
	 * a few rounds, for those whose closest was taken (every round pairs
	 * at least the closest pair left; what stays unpaired keeps its own
	 * calls, so the rounds only bound the work on very lossy traces) */
	size_t nu = 0;
	for (size_t i = 0; i < n; i++)
		nu += c[i].mate < 0;
	struct ddl_fedge *e = nu > 1 ? malloc(nu * sizeof *e) : NULL;
	if (nu > 1 && !e)
		return -1;
	for (int round = 0, more = e != NULL; round < DDL_FLIGHT_ROUNDS && more; round++) {
		size_t ne = 0;
		for (size_t i = 0; i < n; i++) {
			const struct ddl_fconn *a = &c[i];
			if (a->mate >= 0)
				continue;
			long best = -1;
			uint64_t best_miss = 0;
			for (size_t j = 0; j < n; j++) {
				const struct ddl_fconn *b = &c[j];
				uint64_t m1, m2;
				if (j == i || b->mate >= 0 || b->remote != a->remote ||
				    ddl_same_host(r, a->proc, b->proc) == a->remote ||
				    !ddl_fconn_short(a->sent, a->lossy, b->recvd, b->lossy, &m1) ||
				    !ddl_fconn_short(b->sent, b->lossy, a->recvd, a->lossy, &m2))
					continue;
				if (best < 0 || m1 + m2 < best_miss) {
					best = (long)j;
					best_miss = m1 + m2;
				}
			}
			if (best >= 0)
				e[ne++] = (struct ddl_fedge){best_miss, i < (size_t)best ? i : (size_t)best,
				                             i < (size_t)best ? (size_t)best : i};
		}
		if (ne > 1)
			qsort(e, ne, sizeof *e, ddl_fedge_cmp);
		more = 0;
		for (size_t k = 0; k < ne; k++)
			if (c[e[k].a].mate < 0 && c[e[k].b].mate < 0) {
				c[e[k].a].mate = (long)e[k].b;
				c[e[k].b].mate = (long)e[k].a;
				more = 1;
			}
	}
	free(e);
	return 0;
}

/* The windows of connection C (its own and, paired, those of its other
 * end M, or NULL), both with their records in memory. 0 or -1. */
static int ddl_fconn_windows(const struct ddl_fconn *c, const struct ddl_fconn *m, struct ddl_ivset *f)
{
	const struct ddl_fconn *ends[2] = {c, m};
	int rc = 0;
	for (int e = 0; e < 2 && ends[e]; e++) {
		const struct ddl_fconn *x = ends[e], *y = ends[1 - e]; /* Y sent what X receives */
		for (size_t i = 0; i < x->ntx; i++)
			rc |= ddl_ivset_push_merging(f, x->tx[i].a, x->tx[i].b, c->remote, DDL_FLIGHT_GAP_NS);
		size_t hb = 0, hw = 0;
		/* the wait before a receive first: pushed in about the order of
		 * their starts, the windows are a few runs to merge, not one
		 * out of order every other (the set is the same in any order) */
		for (size_t i = 0; i < x->nrx; i++) {
			const struct ddl_fxrec *rx = &x->rx[i];
			const struct ddl_fxrec *s = y && rx->wb ? ddl_fconn_last_send(y, rx->wb, &hw) : NULL;
			if (s)
				rc |= ddl_ivset_push_merging(f, rx->wa > s->a ? rx->wa : s->a, rx->wb, c->remote,
				                             DDL_FLIGHT_GAP_NS);
			if (x == c) /* its own receive calls count whole, as they always did */
				rc |= ddl_ivset_push_merging(f, rx->a, rx->b, c->remote, DDL_FLIGHT_GAP_NS);
			s = y ? ddl_fconn_last_send(y, rx->b, &hb) : NULL;
			if (s && x != c)
				rc |= ddl_ivset_push_merging(f, rx->a > s->a ? rx->a : s->a, rx->b, c->remote,
				                             DDL_FLIGHT_GAP_NS);
		}
	}
	return rc;
}

void ddl_flights_free(struct ddl_ivset *f, size_t n)
{
	for (size_t i = 0; f && i < n; i++)
		ddl_ivset_free(&f[i]);
	free(f);
}

/* The per-process stages (ddl_parallel): each writes its own out[i], fl[i]
 * and rc[i], and reads what no other writes meanwhile. */
struct ddl_fjob {
	const struct ddl_report *r;
	struct ddl_fout *out;
	struct ddl_ivset *fl;
	const struct ddl_fconn *conn;
	struct ddl_ivset *other; /* conn k's mate's windows, made with conn k's (k < its mate) */
	const size_t *first;  /* process i's connections: conn[first[i] .. first[i + 1]) */
	struct ddl_fspill *sp;
	int *rc;
	pthread_mutex_t mu;
	struct ddl_fscratch *idle; /* the threads' scratch, between processes */
};

/* Where ddl_fout_emit's records go: into O->rec, or packed through a
 * buffer of DDL_FPK_BUF records' worth into the spill file from BASE. */
enum { DDL_FPK_BUF = 4096 };
struct ddl_fpk {
	struct ddl_fspill *sp;
	unsigned char *buf;
	size_t fill;
	uint64_t base, done; /* the process's place in the file; bytes written */
	int64_t a;           /* the run's packing state (ddl_fx_pack) */
	uint64_t off;
	int err;
};

static void ddl_fpk_flush(struct ddl_fpk *k)
{
	if (!k->err && k->fill && ddl_fspill_put(k->sp, k->buf, k->fill, k->base + k->done) < 0)
		k->err = 1;
	k->done += k->fill;
	k->fill = 0;
}

/* Record X, the Ith of O->rec, stored or packed. */
static void ddl_fout_put(struct ddl_fout *o, struct ddl_fpk *k, size_t i, struct ddl_fxrec x)
{
	if (o->rec) {
		o->rec[i] = x;
		return;
	}
	if (k->fill > (DDL_FPK_BUF - 1) * DDL_FXP_MAX)
		ddl_fpk_flush(k);
	k->fill = (size_t)(ddl_fx_pack(&x, &k->a, &k->off, k->buf + k->fill) - k->buf);
}

/* Where a run of packed records starts (packing starts again), or its
 * length from AT. */
static uint64_t ddl_fpk_at(struct ddl_fpk *k)
{
	k->a = 0;
	k->off = 0;
	return k->done + k->fill;
}

/* The records of O's connections (S's groups in S->gorder, O->conn made),
 * each connection's sends then receives, then the loose, from S's
 * gathered records: into O->rec when it is there, else packed into the
 * spill file through K (each connection's place and length, relative to
 * K->base, and the loose's). */
static void ddl_fout_emit(const struct ddl_fscratch *s, struct ddl_fout *o, size_t n, struct ddl_fpk *k)
{
	const struct ddl_fx *v = s->v;
	const size_t *ord = s->ord;
	size_t x = 0;
	for (size_t i = 0; i < o->nconn; i++) {
		struct ddl_fconn *c = &o->conn[i];
		c->sent = c->recvd = 0;
		c->tx = o->rec ? &o->rec[x] : NULL;
		c->rx = o->rec ? &o->rec[x + c->ntx] : NULL;
		c->at = ddl_fpk_at(k);
		for (size_t end = x + c->ntx; x < end; x++) {
			const struct ddl_fx *y = &v[ord[x]];
			ddl_fout_put(o, k, x, (struct ddl_fxrec){y->a, y->b, y->wa, y->wb, c->sent, y->bytes});
			c->sent += (uint64_t)y->bytes;
		}
		ddl_fpk_at(k); /* the receives packed on their own */
		for (size_t end = x + c->nrx; x < end; x++) {
			const struct ddl_fx *y = &v[ord[x]];
			ddl_fout_put(o, k, x, (struct ddl_fxrec){y->a, y->b, y->wa, y->wb, c->recvd, y->bytes});
			c->recvd += y->peek ? 0 : (uint64_t)y->bytes; /* peeked bytes are read again */
		}
		c->len = ddl_fpk_at(k) - c->at;
	}
	o->nloose = n - x;
	o->at = ddl_fpk_at(k);
	for (; x < n; x++) /* the loose: their own time only */
		ddl_fout_put(o, k, x, (struct ddl_fxrec){v[ord[x]].a, v[ord[x]].b, 0, 0, 0, v[ord[x]].bytes});
	o->len = ddl_fpk_at(k) - o->at;
}

/* Process P's records (gathered in S), grouped into connections (offsets
 * counting each direction's bytes), into *O, and kept or spilled: packed
 * as they are made, so that a process's records are never all in memory
 * at once when they go to the file. 0 or -1. */
static int ddl_fout_build(const struct ddl_proc *p, size_t proc, struct ddl_fspill *sp, struct ddl_fscratch *s,
                          struct ddl_fout *o)
{
	size_t n = ddl_fgather(p, s) < 0 ? SIZE_MAX : ddl_fgroup_order(s), nconn = 0;
	if (n == SIZE_MAX)
		return -1;
	for (size_t i = 0; i < s->ng && s->g[s->gorder[i]].peer; i++)
		nconn++; /* connections first, then the loose */
	o->conn = nconn ? malloc(nconn * sizeof *o->conn) : NULL;
	if (nconn && !o->conn)
		return -1;
	o->nrec = n;
	int lossy = p->dropped > 0 || p->truncated;
	size_t x = 0;
	for (; o->nconn < nconn; o->nconn++) {
		const struct ddl_fgroup *g = &s->g[s->gorder[o->nconn]];
		o->conn[o->nconn] = (struct ddl_fconn){.proc = proc, .ntx = g->n[0], .nrx = g->n[1],
		                                       .remote = s->v[s->ord[x]].remote, .lossy = lossy,
		                                       .mate = -1};
		x += g->n[0] + g->n[1];
	}
	size_t raw = n * sizeof *o->rec;
	struct ddl_fpk k = {.sp = sp};
	if (ddl_fspill_wants(sp, raw)) {
		if (ddl_grow((void **)&s->pack, &s->packcap, DDL_FPK_BUF * DDL_FXP_MAX, 1) == 0) {
			k.buf = s->pack;
			k.base = ddl_fspill_reserve(sp, (uint64_t)n * DDL_FXP_MAX);
			ddl_fout_emit(s, o, n, &k);
			ddl_fpk_flush(&k);
			if (!k.err) {
				for (size_t c = 0; c < o->nconn; c++) /* their place in the file */
					o->conn[c].at += k.base;
				o->at += k.base;
				return 0;
			}
		}
		ddl_fspill_keep(sp, raw); /* no room to pack them, or a full disk: kept */
	}
	o->rec = n ? malloc(n * sizeof *o->rec) : NULL;
	if (n && !o->rec)
		return -1;
	k = (struct ddl_fpk){.sp = sp};
	ddl_fout_emit(s, o, n, &k);
	return 0;
}

static void ddl_fjob_build(void *arg, size_t i)
{
	struct ddl_fjob *j = arg;
	pthread_mutex_lock(&j->mu);
	struct ddl_fscratch *s = j->idle;
	if (s)
		j->idle = s->next;
	pthread_mutex_unlock(&j->mu);
	if (!s && !(s = calloc(1, sizeof *s))) {
		j->rc[i] = -1;
		return;
	}
	j->rc[i] = ddl_fout_build(&j->r->procs[i], i, j->sp, s, &j->out[i]);
	pthread_mutex_lock(&j->mu);
	s->next = j->idle;
	j->idle = s;
	pthread_mutex_unlock(&j->mu);
}

/* The windows of process I's connections paired with a later one (or
 * with themselves): both ends' records read back once for both ends'
 * windows, I's into its set and the mate's kept for its process
 * (ddl_fjob_windows), which only that process's stage writes into. */
static void ddl_fjob_pairs(void *arg, size_t i)
{
	struct ddl_fjob *j = arg;
	struct ddl_fview b1 = {0}, b2 = {0};
	int rc = 0;
	for (size_t k = j->first[i]; k < j->first[i + 1] && !rc; k++) {
		const struct ddl_fconn *c = &j->conn[k];
		if (c->mate < 0 || (size_t)c->mate < k)
			continue;
		int self = (size_t)c->mate == k;
		struct ddl_fconn vc, vm;
		rc = ddl_fconn_view(j->sp, c, &vc, &b1);
		if (!rc && !self)
			rc = ddl_fconn_view(j->sp, &j->conn[c->mate], &vm, &b2);
		if (!rc)
			rc = ddl_fconn_windows(&vc, self ? &vc : &vm, &j->fl[i]);
		if (!rc && !self) {
			struct ddl_ivset *w = &j->other[k];
			rc = ddl_fconn_windows(&vm, &vc, w);
			/* kept until the mate's stage: merged (as its set will be,
			 * a closure) and no larger than that, not the room of the
			 * 4096 pushes a set is merged at */
			ddl_ivset_merge(w, DDL_FLIGHT_GAP_NS);
			struct ddl_iv *q = w->n && w->n < w->cap ? realloc(w->v, w->n * sizeof *q) : NULL;
			if (q) {
				w->v = q;
				w->cap = w->n;
			}
		}
	}
	ddl_fview_free(&b1);
	ddl_fview_free(&b2);
	j->rc[i] = rc;
}

/* Process I's windows: its connections' (both ends), and its sends and
 * receives on no named connection (their own time, local). */
static void ddl_fjob_windows(void *arg, size_t i)
{
	struct ddl_fjob *j = arg;
	struct ddl_fview b1 = {0};
	int rc = j->rc[i];
	for (size_t k = j->first[i]; k < j->first[i + 1] && !rc; k++) {
		const struct ddl_fconn *c = &j->conn[k];
		if (c->mate >= 0) { /* made in ddl_fjob_pairs: kept for this end when its mate's came first */
			const struct ddl_ivset *w = (size_t)c->mate < k ? &j->other[c->mate] : NULL;
			for (size_t x = 0; w && x < w->n && !rc; x++)
				rc = ddl_ivset_push_merging(&j->fl[i], w->v[x].a, w->v[x].b, w->v[x].tag,
				                            DDL_FLIGHT_GAP_NS);
			if (w && w->nomem)
				rc = -1; /* windows left out */
			continue;
		}
		struct ddl_fconn vc;
		rc = ddl_fconn_view(j->sp, c, &vc, &b1);
		if (!rc)
			rc = ddl_fconn_windows(&vc, NULL, &j->fl[i]);
	}
	const struct ddl_fout *o = &j->out[i];
	const struct ddl_fxrec *loose = o->rec ? o->rec + (o->nrec - o->nloose) : NULL;
	if (!rc && o->nloose && !loose) {
		rc = ddl_fspill_get(j->sp, o->at, o->len, o->nloose, 0, &b1);
		loose = b1.rec;
	}
	for (size_t x = 0; x < o->nloose && !rc; x++)
		rc = ddl_ivset_push_merging(&j->fl[i], loose[x].a, loose[x].b, 0, DDL_FLIGHT_GAP_NS);
	if (!rc)
		ddl_ivset_merge(&j->fl[i], DDL_FLIGHT_GAP_NS);
	ddl_fview_free(&b1);
	j->rc[i] = rc;
}

/* 0 when every process's stage did. */
static int ddl_fjob_rc(const struct ddl_fjob *j, size_t np)
{
	int rc = 0;
	for (size_t i = 0; i < np; i++)
		rc |= j->rc[i];
	return rc;
}

int ddl_report_flights(const struct ddl_report *r, struct ddl_ivset **out)
{
	*out = NULL;
	size_t np = r->nprocs;
	struct ddl_fout *fo = calloc(np ? np : 1, sizeof *fo);
	struct ddl_ivset *fl = calloc(np ? np : 1, sizeof *fl);
	int *rcs = calloc(np ? np : 1, sizeof *rcs);
	size_t *first = calloc(np + 1, sizeof *first);
	struct ddl_fspill sp = {PTHREAD_MUTEX_INITIALIZER, -1, 0, 0};
	struct ddl_fconn *conn = NULL;
	size_t nc = 0;
	int rc = fo && fl && rcs && first ? 0 : -1;
	struct ddl_fjob job = {.r = r, .out = fo, .fl = fl, .first = first, .sp = &sp, .rc = rcs,
	                       .mu = PTHREAD_MUTEX_INITIALIZER};
	if (!rc) {
		ddl_parallel_procs(r, ddl_fjob_build, &job);
		rc = ddl_fjob_rc(&job, np);
	}
	for (struct ddl_fscratch *s = job.idle, *nx; s; s = nx) {
		nx = s->next;
		ddl_fscratch_free(s);
	}
	/* every process's connections, in order: the index a mate is known by */
	for (size_t i = 0; i < np && !rc; i++)
		nc += fo[i].nconn;
	if (!rc && nc && !(conn = malloc(nc * sizeof *conn)))
		rc = -1;
	for (size_t i = 0, k = 0; i < np && !rc; i++) {
		first[i] = k;
		for (size_t c = 0; c < fo[i].nconn; c++)
			conn[k++] = fo[i].conn[c];
		first[i + 1] = k;
	}
	if (!rc)
		rc = ddl_fconn_pair(r, &sp, conn, nc);
	if (!rc && nc && !(job.other = calloc(nc, sizeof *job.other)))
		rc = -1;
	if (!rc) {
		job.conn = conn;
		ddl_parallel(np, ddl_fjob_pairs, &job);
		ddl_parallel(np, ddl_fjob_windows, &job);
		rc = ddl_fjob_rc(&job, np);
	}
	for (size_t k = 0; job.other && k < nc; k++)
		ddl_ivset_free(&job.other[k]);
	free(job.other);
	for (size_t i = 0; fo && i < np; i++) {
		free(fo[i].rec);
		free(fo[i].conn);
	}
	if (sp.fd >= 0)
		close(sp.fd);
	free(fo);
	free(rcs);
	free(first);
	free(conn);
	if (rc) {
		ddl_flights_free(fl, np);
		return -1;
	}
	*out = fl;
	return 0;
}
