/*
 * The emulated collectives, as NCCL's ring algorithms, run by a stream
 * worker when the operation's turn on its communicator comes (comm.c).
 * Real bytes move between the rank processes through the transfer engine
 * (net.c), so an operation takes the time its traffic takes at the paced
 * bandwidth: a ring all-reduce of B bytes over n ranks sends 2(n-1)/n * B
 * per rank, and the slowest link of the ring sets the pace.
 *
 *   all-reduce      reduce-scatter, then all-gather, around the ring
 *   reduce-scatter  ring, rank r ends with chunk r
 *   all-gather      ring
 *   broadcast       chain root -> root+1 -> ... in pipelined chunks
 *   reduce          chain root+1 -> ... -> root, reducing on the way
 *   gather/scatter/all-to-all, send/recv   direct, all transfers at once
 *
 * Each operation is planned as one list of transfers with data
 * dependencies and run by the engine in one go, cut into slices as NCCL
 * cuts its buffers: a slice received is reduced at once and forwarded as
 * soon as it is, while later slices are still on the wire. No rank waits
 * for a whole step to finish, so the ring runs as a pipeline.
 *
 * On the device timeline an operation starts when its stream reached it
 * (or the communicator's previous operation ended) and ends when its last
 * byte has arrived and been reduced, but not before the end of the last
 * slot its sends reserved on the link: the pacing clock runs from the
 * start, so the CPU time of setting up, copying and reducing is spent
 * inside the paced transfer time instead of on top of it.
 *
 * A group's collectives run in issue order, then all its point-to-point
 * transfers at once, so the classic "everyone sends to the next and
 * receives from the previous" group cannot deadlock.
 */
#include <stdlib.h>
#include <string.h>

#include "emu.h"

#define EMU_SLICE_MIN (64u << 10)
#define EMU_SLICES 8 /* per chunk, about */

static int emu_mod(int a, int n)
{
	return (a % n + n) % n;
}

static int emu_is_p2p(int kind)
{
	return kind == EMU_NCCL_SEND || kind == EMU_NCCL_RECV;
}

static int emu_oom(struct ncclComm *c)
{
	emu_comm_fail(c, ncclSystemError, "rank %d: out of memory", c->rank);
	return ncclSystemError;
}

/*
 * Working buffer `slot` (0 or 1) of c, at least n bytes, kept for the next
 * operation: no allocation, and no first touch of fresh pages, inside the
 * time of an operation once the sizes have been seen. NULL without memory.
 */
static char *emu_scratch(struct ncclComm *c, int slot, size_t n)
{
	if (n <= c->scratch_cap[slot])
		return c->scratch[slot];
	free(c->scratch[slot]);
	c->scratch_cap[slot] = 0;
	c->scratch[slot] = malloc(n);
	if (!c->scratch[slot])
		return NULL;
	memset(c->scratch[slot], 0, n); /* take the page faults now */
	c->scratch_cap[slot] = n;
	return c->scratch[slot];
}

/* Slice size for chunks of at most max_bytes: about an eighth, at least 64 KiB, a multiple of 64. */
static size_t emu_slice(size_t max_bytes)
{
	size_t s = max_bytes / EMU_SLICES;
	s = s < EMU_SLICE_MIN ? EMU_SLICE_MIN : s;
	return (s + 63) / 64 * 64;
}

static size_t emu_nslices(size_t len, size_t slice)
{
	return len ? (len + slice - 1) / slice : 1;
}

/* A plan: the transfers of one operation, and how far each slice has come. */
struct emu_plan {
	struct emu_xfer *x;
	int m, cap;
	size_t slice;
	int *last; /* per slice: 1 + index of the receive that last brought it in, or 0 */
};

static int emu_plan_init(struct emu_plan *p, size_t max_bytes, int steps)
{
	p->slice = emu_slice(max_bytes);
	size_t ns = emu_nslices(max_bytes, p->slice);
	p->m = 0;
	p->cap = (int)(2 * ns * (size_t)(steps > 0 ? steps : 1));
	p->x = calloc((size_t)p->cap, sizeof *p->x);
	p->last = calloc(ns, sizeof *p->last);
	if (p->x && p->last)
		return 0;
	free(p->x);
	free(p->last);
	return -1;
}

static void emu_plan_free(struct emu_plan *p)
{
	free(p->x);
	free(p->last);
}

/*
 * One step of a ring or chain: send slen bytes of sbuf to `to` (each slice
 * after the receive that brought it, when `forward`), and receive rlen
 * bytes from `from` into rbuf (reduced into red_dst when not NULL). A
 * peer of -1 leaves that side out.
 */
static void emu_plan_step(struct emu_plan *p, int to, const char *sbuf, size_t slen, int forward, int from, char *rbuf,
                          size_t rlen, char *red_dst, ncclDataType_t t, ncclRedOp_t op, int div)
{
	size_t ns;
	if (to >= 0) {
		ns = emu_nslices(slen, p->slice);
		for (size_t k = 0; k < ns; k++) {
			size_t o = k * p->slice;
			p->x[p->m++] = (struct emu_xfer){.peer = to, .send = 1, .buf = (char *)sbuf + o,
			                                 .len = slen - o < p->slice ? slen - o : p->slice,
			                                 .after = forward ? p->last[k] : 0};
		}
	}
	if (from >= 0) {
		ns = emu_nslices(rlen, p->slice);
		for (size_t k = 0; k < ns; k++) {
			size_t o = k * p->slice;
			struct emu_xfer *x = &p->x[p->m++];
			*x = (struct emu_xfer){.peer = from, .buf = rbuf + o, .len = rlen - o < p->slice ? rlen - o : p->slice};
			if (red_dst) {
				x->red_dst = red_dst + o;
				x->red_type = t;
				x->red_op = op;
				x->red_div = div;
			}
			p->last[k] = p->m;
		}
	}
}

/* Chunk boundaries in elements: balanced (each == 0) or `each` per rank. */
static size_t *emu_offsets(int n, size_t count, size_t each)
{
	size_t *off = malloc((size_t)(n + 1) * sizeof *off);
	if (!off)
		return NULL;
	size_t q = count / (size_t)n, rem = count % (size_t)n;
	for (int i = 0; i <= n; i++)
		off[i] = each ? each * (size_t)i : q * (size_t)i + ((size_t)i < rem ? (size_t)i : rem);
	return off;
}

static size_t emu_max_chunk(const size_t *off, int n)
{
	size_t m = 0;
	for (int i = 0; i < n; i++)
		m = off[i + 1] - off[i] > m ? off[i + 1] - off[i] : m;
	return m;
}

/*
 * Plans ring reduce-scatter steps over buf (chunk i is elements
 * off[i]..off[i+1]): afterwards chunk `rank` holds the reduction over all
 * ranks (divided by n for ncclAvg). When `mine` is not NULL the result
 * goes there instead (it holds this rank's own chunk to start with), and
 * the first step sends from src, not buf: then buf needs only the chunks
 * that partial sums go through. Received slices land in tmp.
 */
static void emu_plan_rs(struct emu_plan *p, struct ncclComm *c, char *buf, const size_t *off, size_t esz,
                        ncclDataType_t t, ncclRedOp_t op, char *tmp, char *mine, const char *src)
{
	int n = c->nranks, r = c->rank, next = (r + 1) % n, prev = emu_mod(r - 1, n);
	for (int s = 0; s < n - 1; s++) {
		int sc = emu_mod(r - s - 1, n), rc = emu_mod(r - s - 2, n);
		const char *from = (s == 0 && mine ? src : buf) + off[sc] * esz;
		char *dst = s == n - 2 && mine ? mine : buf + off[rc] * esz;
		emu_plan_step(p, next, from, (off[sc + 1] - off[sc]) * esz, s > 0, prev, tmp,
		              (off[rc + 1] - off[rc]) * esz, dst, t, op, s == n - 2 && op == ncclAvg ? n : 0);
	}
}

/* Plans ring all-gather steps: every rank starts with its chunk of buf and ends with all. */
static void emu_plan_ag(struct emu_plan *p, struct ncclComm *c, char *buf, const size_t *off, size_t esz,
                        int after_rs)
{
	int n = c->nranks, r = c->rank, next = (r + 1) % n, prev = emu_mod(r - 1, n);
	for (int s = 0; s < n - 1; s++) {
		int sc = emu_mod(r - s, n), rc = emu_mod(r - s - 1, n);
		emu_plan_step(p, next, buf + off[sc] * esz, (off[sc + 1] - off[sc]) * esz, s > 0 || after_rs, prev,
		              buf + off[rc] * esz, (off[rc + 1] - off[rc]) * esz, NULL, ncclInt8, ncclSum, 0);
	}
}

static int emu_plan_run(struct emu_plan *p, struct ncclComm *c, uint64_t tag)
{
	int e = emu_xfer_run(c, p->x, p->m, tag);
	emu_plan_free(p);
	return e;
}

static int emu_allreduce(struct ncclComm *c, const struct emu_ncclop *o, uint64_t tag)
{
	int n = c->nranks;
	size_t esz = emu_type_size(o->type);
	struct emu_plan p;
	if (o->sendbuff != o->recvbuff)
		memmove(o->recvbuff, o->sendbuff, o->count * esz);
	if (n == 1)
		return 0;
	size_t *off = emu_offsets(n, o->count, 0);
	size_t maxb = off ? emu_max_chunk(off, n) * esz : 0;
	char *tmp = off ? emu_scratch(c, 0, maxb + 1) : NULL;
	int e = tmp && emu_plan_init(&p, maxb, 2 * (n - 1)) == 0 ? 0 : emu_oom(c);
	if (!e) {
		emu_plan_rs(&p, c, o->recvbuff, off, esz, o->type, o->op, tmp, NULL, NULL);
		emu_plan_ag(&p, c, o->recvbuff, off, esz, 1);
		e = emu_plan_run(&p, c, tag);
	}
	free(off);
	return e;
}

static int emu_reducescatter(struct ncclComm *c, const struct emu_ncclop *o, uint64_t tag)
{
	int n = c->nranks;
	size_t esz = emu_type_size(o->type), each = o->count * esz;
	struct emu_plan p;
	if (n == 1) {
		memmove(o->recvbuff, o->sendbuff, each);
		return 0;
	}
	/*
	 * The first step sends straight from sendbuff and the last reduces
	 * straight into recvbuff; the partial sums in between go through
	 * copies of the chunks they are made in (chunks rank-2 ... rank-n+1).
	 */
	size_t *off = emu_offsets(n, 0, o->count);
	char *wb = emu_scratch(c, 0, each * (size_t)n + 1), *tmp = emu_scratch(c, 1, each + 1);
	int e = off && wb && tmp && emu_plan_init(&p, each, n - 1) == 0 ? 0 : emu_oom(c);
	if (!e) {
		for (int s = 0; s < n - 2; s++) {
			size_t at = each * (size_t)emu_mod(c->rank - s - 2, n);
			memcpy(wb + at, (const char *)o->sendbuff + at, each);
		}
		memmove(o->recvbuff, (const char *)o->sendbuff + each * (size_t)c->rank, each);
		emu_plan_rs(&p, c, wb, off, esz, o->type, o->op, tmp, o->recvbuff, o->sendbuff);
		e = emu_plan_run(&p, c, tag);
	}
	free(off);
	return e;
}

/* All-gather of `each` bytes per rank in buf, this rank's block already in place. */
static int emu_ring_allgather(struct ncclComm *c, char *buf, size_t each, size_t esz, uint64_t tag)
{
	struct emu_plan p;
	size_t *off = emu_offsets(c->nranks, 0, each / esz);
	int e = off && emu_plan_init(&p, each, c->nranks - 1) == 0 ? 0 : emu_oom(c);
	if (!e) {
		emu_plan_ag(&p, c, buf, off, esz, 0);
		e = emu_plan_run(&p, c, tag);
	}
	free(off);
	return e;
}

static int emu_allgather(struct ncclComm *c, const struct emu_ncclop *o, uint64_t tag)
{
	size_t esz = emu_type_size(o->type), each = o->count * esz;
	char *mine = (char *)o->recvbuff + each * (size_t)c->rank;
	if (mine != o->sendbuff)
		memmove(mine, o->sendbuff, each);
	return c->nranks == 1 ? 0 : emu_ring_allgather(c, o->recvbuff, each, esz, tag);
}

int emu_coll_allgather_bytes(struct ncclComm *c, void *buf, size_t each, uint64_t tag)
{
	c->op_start = c->sched_end = emu_now(); /* called by the host thread, which has the turn */
	return c->nranks == 1 ? 0 : emu_ring_allgather(c, buf, each, 1, tag);
}

/* Broadcast along the chain root, root+1, ...: each rank forwards every slice as it arrives. */
static int emu_broadcast(struct ncclComm *c, const struct emu_ncclop *o, uint64_t tag)
{
	int n = c->nranks, r = c->rank, p = emu_mod(r - o->peer, n);
	size_t bytes = o->count * emu_type_size(o->type);
	struct emu_plan pl;
	if (p == 0 && o->sendbuff != o->recvbuff)
		memmove(o->recvbuff, o->sendbuff, bytes);
	if (n == 1)
		return 0;
	if (emu_plan_init(&pl, bytes, 1) < 0)
		return emu_oom(c);
	if (p == 0)
		emu_plan_step(&pl, (r + 1) % n, o->sendbuff, bytes, 0, -1, NULL, 0, NULL, ncclInt8, ncclSum, 0);
	else
		emu_plan_step(&pl, -1, NULL, 0, 0, emu_mod(r - 1, n), o->recvbuff, bytes, NULL, ncclInt8, ncclSum, 0);
	if (p > 0 && p < n - 1) /* forward what came in, slice by slice */
		emu_plan_step(&pl, (r + 1) % n, o->recvbuff, bytes, 1, -1, NULL, 0, NULL, ncclInt8, ncclSum, 0);
	return emu_plan_run(&pl, c, tag);
}

/* Reduce along the chain root+1, ..., root: each rank adds its data to every slice as it passes. */
static int emu_reduce_chain(struct ncclComm *c, const struct emu_ncclop *o, uint64_t tag)
{
	int n = c->nranks, r = c->rank, p = emu_mod(r - o->peer - 1, n);
	size_t esz = emu_type_size(o->type), bytes = o->count * esz;
	struct emu_plan pl;
	if (n == 1) {
		memmove(o->recvbuff, o->sendbuff, bytes);
		return 0;
	}
	if (emu_plan_init(&pl, bytes, 1) < 0)
		return emu_oom(c);
	if (p == 0) {
		emu_plan_step(&pl, (r + 1) % n, o->sendbuff, bytes, 0, -1, NULL, 0, NULL, o->type, o->op, 0);
		return emu_plan_run(&pl, c, tag);
	}
	int root = p == n - 1;
	/* the partial result: recvbuff at the root, a copy elsewhere; slices come in through tmp */
	char *acc = root ? o->recvbuff : emu_scratch(c, 0, bytes + 1), *tmp = emu_scratch(c, 1, bytes + 1);
	if (!acc || !tmp) {
		emu_plan_free(&pl);
		return emu_oom(c);
	}
	if (acc != o->sendbuff)
		memmove(acc, o->sendbuff, bytes);
	emu_plan_step(&pl, -1, NULL, 0, 0, emu_mod(r - 1, n), tmp, bytes, acc, o->type, o->op,
	              root && o->op == ncclAvg ? n : 0);
	if (!root)
		emu_plan_step(&pl, (r + 1) % n, acc, bytes, 1, -1, NULL, 0, NULL, o->type, o->op, 0);
	return emu_plan_run(&pl, c, tag);
}

/* Gather, scatter and all-to-all: direct transfers with every peer at once. */
static int emu_direct(struct ncclComm *c, const struct emu_ncclop *o, uint64_t tag)
{
	int n = c->nranks, r = c->rank, m = 0;
	size_t each = o->count * emu_type_size(o->type);
	const char *sb = o->sendbuff;
	char *rb = o->recvbuff;
	struct emu_xfer *x = calloc((size_t)(2 * n), sizeof *x);
	if (!x)
		return emu_oom(c);
	for (int i = 0; i < n; i++) {
		if (i == r)
			continue;
		int to_i = o->kind == EMU_NCCL_ALLTOALL || (o->kind == EMU_NCCL_SCATTER && r == o->peer) ||
		           (o->kind == EMU_NCCL_GATHER && i == o->peer);
		int from_i = o->kind == EMU_NCCL_ALLTOALL || (o->kind == EMU_NCCL_GATHER && r == o->peer) ||
		             (o->kind == EMU_NCCL_SCATTER && i == o->peer);
		if (to_i)
			x[m++] = (struct emu_xfer){.peer = i, .send = 1,
			                           .buf = (char *)sb + (o->kind == EMU_NCCL_GATHER ? 0 : each * (size_t)i),
			                           .len = each};
		if (from_i)
			x[m++] = (struct emu_xfer){.peer = i, .buf = rb + (o->kind == EMU_NCCL_SCATTER ? 0 : each * (size_t)i),
			                           .len = each};
	}
	/* this rank's own block */
	if (o->kind == EMU_NCCL_ALLTOALL)
		memmove(rb + each * (size_t)r, sb + each * (size_t)r, each);
	else if (o->kind == EMU_NCCL_GATHER && r == o->peer)
		memmove(rb + each * (size_t)r, sb, each);
	else if (o->kind == EMU_NCCL_SCATTER && r == o->peer)
		memmove(rb, sb + each * (size_t)r, each);
	int e = emu_xfer_run(c, x, m, tag);
	free(x);
	return e;
}

static int emu_coll_one(struct ncclComm *c, const struct emu_ncclop *o, uint64_t tag)
{
	switch (o->kind) {
	case EMU_NCCL_ALLREDUCE: return emu_allreduce(c, o, tag);
	case EMU_NCCL_REDUCESCATTER: return emu_reducescatter(c, o, tag);
	case EMU_NCCL_ALLGATHER: return emu_allgather(c, o, tag);
	case EMU_NCCL_BROADCAST: return emu_broadcast(c, o, tag);
	case EMU_NCCL_REDUCE: return emu_reduce_chain(c, o, tag);
	default: return emu_direct(c, o, tag);
	}
}

/* Every ncclSend and ncclRecv of the group at once; sends to self meet receives from self in order. */
static int emu_p2p_run(struct ncclComm *c, const struct emu_ncclwork *w)
{
	int m = 0, self_send = 0, self_recv = 0;
	for (int i = 0; i < w->nops; i++) {
		const struct emu_ncclop *o = &w->ops[i];
		self_send += o->kind == EMU_NCCL_SEND && o->peer == c->rank;
		self_recv += o->kind == EMU_NCCL_RECV && o->peer == c->rank;
	}
	if (self_send != self_recv) {
		emu_comm_fail(c, ncclInvalidUsage, "rank %d: %d sends to self but %d receives from self", c->rank,
		              self_send, self_recv);
		return ncclInvalidUsage;
	}
	struct emu_xfer *x = calloc((size_t)w->nops + 1, sizeof *x);
	if (!x)
		return emu_oom(c);
	int in = 0; /* the next receive from self */
	for (int i = 0; i < w->nops; i++) {
		const struct emu_ncclop *o = &w->ops[i];
		size_t bytes = o->count * emu_type_size(o->type);
		if (!emu_is_p2p(o->kind))
			continue;
		if (o->peer != c->rank) {
			x[m++] = (struct emu_xfer){.peer = o->peer, .send = o->kind == EMU_NCCL_SEND,
			                           .buf = o->kind == EMU_NCCL_SEND ? (char *)o->sendbuff : o->recvbuff,
			                           .len = bytes};
			continue;
		}
		if (o->kind != EMU_NCCL_SEND)
			continue;
		while (w->ops[in].kind != EMU_NCCL_RECV || w->ops[in].peer != c->rank)
			in++;
		const struct emu_ncclop *r = &w->ops[in++];
		if (r->count * emu_type_size(r->type) != bytes) {
			free(x);
			emu_comm_fail(c, ncclInvalidUsage, "rank %d: a send to self of %zu bytes, a receive of %zu", c->rank,
			              bytes, r->count * emu_type_size(r->type));
			return ncclInvalidUsage;
		}
		memmove(r->recvbuff, o->sendbuff, bytes);
	}
	int e = m ? emu_xfer_run(c, x, m, w->seq) : 0;
	free(x);
	return e;
}

uint64_t emu_nccl_run(struct emu_ncclwork *w, uint64_t start)
{
	struct ncclComm *c = w->comm;
	uint64_t end = start;
	if (emu_comm_turn_wait(c, w->seq) == 0 && !c->async_err) {
		/*
		 * The link's clock starts when the device started the operation, not
		 * when this thread got to it: setting up, and a late wake-up, are
		 * caught up while the transfers run (net.c). The operation ends when
		 * its last byte is through, and not before its last slot on the link.
		 */
		c->op_start = c->last_end > start ? c->last_end : start;
		c->sched_end = c->op_start;
		int e = 0;
		for (int i = 0; i < w->nops && !e; i++)
			if (!emu_is_p2p(w->ops[i].kind))
				e = emu_coll_one(c, &w->ops[i], w->seq);
		if (!e)
			emu_p2p_run(c, w);
		uint64_t now = emu_now();
		end = c->sched_end > now ? c->sched_end : now;
		if (end > now)
			emu_sleep_until(end);
		c->last_end = end;
	} else {
		uint64_t now = emu_now();
		end = now > start ? now : start;
	}
	emu_comm_turn_done(c);
	free(w);
	return end;
}
