/*
 * NCCL wrappers. Every collective and point-to-point call is recorded with
 * op, count, type, bytes, root or peer, communicator and stream, and timed
 * on the device with an event pair: around the call itself, or, inside
 * ncclGroupStart/End, around the whole group on each stream it used (NCCL
 * launches a group's work at ncclGroupEnd, not at each call).
 *
 * Communicator creation writes a DDL_STR_COMM record: a key shared by every
 * member (a hash of the ncclUniqueId, or of the parent's key and the split
 * colour), this rank, the size, the device and this process's host, so the
 * analyzer can gather the members of each communicator across all traces
 * and tell one inside a machine from one spanning machines.
 */
#ifdef DDL_HAVE_CUDA
#include <string.h>
#include <unistd.h>

#include "gpu.h"

#define DDL_COMM_MAX 4096

static pthread_mutex_t ddl_comm_lock = PTHREAD_MUTEX_INITIALIZER;
struct ddl_comm_tab {
	ncclComm_t handle[DDL_COMM_MAX];
	uint64_t key[DDL_COMM_MAX];
	uint32_t id[DDL_COMM_MAX]; /* the trace's communicator id (ddl_comm_id_new) */
	uint32_t n; /* slots 1..n in use */
};
static void *_Atomic ddl_comms; /* a struct ddl_comm_tab, mapped on the first communicator */

static size_t ddl_nccl_type_size(ncclDataType_t t)
{
	switch ((int)t) {
	case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2:
		return 1;
	case ncclFloat16: case ncclBfloat16:
		return 2;
	case ncclInt32: case ncclUint32: case ncclFloat32:
		return 4;
	case ncclInt64: case ncclUint64: case ncclFloat64:
		return 8;
	default:
		return 0;
	}
}

/* The id of a communicator we saw created, or 0. Newest first: handles are reused. */
static uint32_t ddl_comm_find(ncclComm_t c)
{
	struct ddl_comm_tab *ct = atomic_load(&ddl_comms);
	uint32_t id = 0;
	if (!ct)
		return 0;
	pthread_mutex_lock(&ddl_comm_lock);
	for (uint32_t i = ct->n; i >= 1 && !id; i--)
		if (ct->handle[i - 1] == c)
			id = ct->id[i - 1];
	pthread_mutex_unlock(&ddl_comm_lock);
	return id;
}

static uint64_t ddl_comm_key(uint32_t id)
{
	struct ddl_comm_tab *ct = atomic_load(&ddl_comms);
	uint64_t key = 0;
	if (!ct)
		return 0;
	pthread_mutex_lock(&ddl_comm_lock);
	for (uint32_t i = ct->n; id && i >= 1 && !key; i--)
		if (ct->id[i - 1] == id)
			key = ct->key[i - 1];
	pthread_mutex_unlock(&ddl_comm_lock);
	return key;
}

/* Asks NCCL itself for what it knows of C. */
static void ddl_comm_query(ncclComm_t c, int *rank, int *nranks, int *dev)
{
	__typeof__(ddl_gpu_real.ncclCommUserRank) user_rank = DDL_GPU_REAL(ncclCommUserRank);
	__typeof__(ddl_gpu_real.ncclCommCount) count = DDL_GPU_REAL(ncclCommCount);
	__typeof__(ddl_gpu_real.ncclCommCuDevice) cu_dev = DDL_GPU_REAL(ncclCommCuDevice);
	*rank = *nranks = *dev = -1;
	if (user_rank && user_rank(c, rank) != ncclSuccess)
		*rank = -1;
	if (count && count(c, nranks) != ncclSuccess)
		*nranks = -1;
	if (cu_dev && cu_dev(c, dev) != ncclSuccess)
		*dev = -1;
}

/*
 * Records a new communicator; returns its id. RANK and NRANKS are what the
 * creating call said (-1 unknown); NCCL is asked only for a communicator
 * that is ready (not non-blocking and in progress, not created inside a
 * group): asking before makes NCCL warn and fail.
 */
static uint32_t ddl_comm_add(ncclComm_t c, uint64_t key, uint64_t parent, int color, const char *how,
                             int rank, int nranks, int ready)
{
	int dev = ddl_gtls.dev;
	if (ready) {
		int qr, qn, qd;
		ddl_comm_query(c, &qr, &qn, &qd);
		if (qr >= 0)
			rank = qr;
		if (qn > 0)
			nranks = qn;
		if (qd >= 0)
			dev = qd;
	}
	struct ddl_comm_tab *ct = ddl_lazy(&ddl_comms, sizeof *ct);
	uint32_t id = 0;
	pthread_mutex_lock(&ddl_comm_lock);
	if (ct && ct->n < DDL_COMM_MAX) {
		uint32_t slot = ct->n++;
		id = ddl_comm_id_new();
		ct->handle[slot] = c;
		ct->key[slot] = key;
		ct->id[slot] = id;
	}
	pthread_mutex_unlock(&ddl_comm_lock);
	if (!id)
		return 0;
	char text[256];
	int n = snprintf(text, sizeof text,
	                 "key=%016llx rank=%d nranks=%d dev=%d host=%s how=%s parent=%016llx color=%d",
	                 (unsigned long long)key, rank, nranks, dev, ddl_g.host, how,
	                 (unsigned long long)parent, color);
	ddl_strings_add(DDL_STR_COMM, id, (uint32_t)ddl_gtls.dev, text,
	                n < (int)sizeof text ? (size_t)n : sizeof text - 1);
	return id;
}

/* A communicator created past our wrappers: record what NCCL says of it. */
static uint32_t ddl_comm_id(ncclComm_t c)
{
	if (!c)
		return 0;
	uint32_t id = ddl_comm_find(c);
	if (!id)
		id = ddl_comm_add(c, ddl_fnv(DDL_FNV0, &c, sizeof c) ^ (uint64_t)getpid(), 0, -1, "unknown",
		                  -1, -1, ddl_gtls.group_depth == 0);
	return id;
}

void ddl_nccl_after_fork_child(void)
{
	pthread_mutex_init(&ddl_comm_lock, NULL);
}

/* ---- collectives ---- */

struct ddl_coll {
	struct ddl_thread *t;
	struct ddl_args a;
	cudaEvent_t ev;
	cudaStream_t s;
	uint32_t sid;
	uint64_t t0;
};

static void ddl_group_note_stream(struct ddl_thread *t, cudaStream_t s)
{
	struct ddl_gpu_tls *g = &ddl_gtls;
	for (int i = 0; i < g->ngroup_streams; i++)
		if (g->group_stream[i] == s)
			return;
	if (g->ngroup_streams >= 8)
		return;
	t->busy = 1;
	cudaEvent_t e = ddl_pair_start_event(s, g->dev);
	t->busy = 0;
	if (!e)
		return;
	int i = g->ngroup_streams++;
	g->group_stream[i] = s;
	g->group_start[i] = e;
	g->group_dev[i] = g->dev;
}

/*
 * Starts recording a collective or point-to-point call: 0 when this call
 * is not recorded (the wrapper then makes the real call alone). Takes the
 * start time last, ddl_coll_end the end time first.
 */
static inline int ddl_coll_begin(struct ddl_coll *c, size_t count, ncclDataType_t dt, int op, int peer,
                                 ncclComm_t comm, cudaStream_t s)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_NCCL);
	if (!t)
		return 0;
	int saved = errno;
	c->t = t;
	c->a = ddl_args_make();
	c->a.corr = ++ddl_gtls.corr;
	c->a.bytes = (uint64_t)count * ddl_nccl_type_size(dt);
	c->a.dtype = (uint8_t)dt;
	c->a.op = (uint8_t)op;
	c->a.peer = peer;
	t->busy = 1;
	c->a.comm = ddl_comm_id(comm);
	t->busy = 0;
	c->s = s;
	c->sid = ddl_stream_id(s);
	c->ev = NULL;
	ddl_seg_close(t, c->sid); /* the kernels before the collective end their run */
	if (ddl_gtls.group_depth > 0) {
		c->a.flags |= DDL_ARGF_GROUPED;
		if (ddl_gpu_started) {
			ddl_group_note_stream(t, s);
			c->a.flags |= DDL_ARGF_TIMED;
		}
	} else if (ddl_gpu_started) {
		t->busy = 1;
		c->ev = ddl_pair_start_event(s, ddl_gtls.dev);
		t->busy = 0;
		if (c->ev)
			c->a.flags |= DDL_ARGF_TIMED;
	}
	errno = saved;
	c->t0 = ddl_clock_now();
	return 1;
}

static inline void ddl_coll_end(struct ddl_coll *c, unsigned kind, ncclResult_t r)
{
	uint64_t t1 = ddl_clock_now();
	struct ddl_thread *t = c->t;
	if (c->ev) {
		int saved = errno;
		t->busy = 1;
		ddl_pair_end_event(c->ev, c->s, ddl_gtls.dev, DDL_EV_DEV_COLL, t->idx, c->a.corr, c->sid);
		t->busy = 0;
		errno = saved;
	}
	/* its number in the communicator's sequence; the thread's last collective */
	int p2p = kind == DDL_EV_NCCL_SEND || kind == DDL_EV_NCCL_RECV;
	if (r == ncclSuccess || r == ncclInProgress) { /* a failed call is no member's */
		c->a.aux = p2p ? ddl_p2p_seq_next(c->a.comm, c->a.peer, kind == DDL_EV_NCCL_RECV)
		               : ddl_comm_seq_next(c->a.comm);
		if (!p2p)
			ddl_open_issued(t, kind, c->a.comm, c->a.aux);
	}
	/* with --backtrace, the call's stack too (unwind.c) */
	ddl_ring_put_args_call(t, kind, 0, c->t0, t1, r, ddl_gtls.dev, c->sid, &c->a);
	if (ddl_unlikely(!ddl_gpu_started))
		ddl_gpu_first();
}

DDL_EXPORT ncclResult_t ncclAllReduce(const void *sb, void *rb, size_t count, ncclDataType_t dt,
                                      ncclRedOp_t op, ncclComm_t comm, cudaStream_t s)
{
	__typeof__(ddl_gpu_real.ncclAllReduce) real = DDL_GPU_REAL(ncclAllReduce);
	if (!real)
		return ncclSystemError;
	struct ddl_coll c;
	if (!ddl_coll_begin(&c, count, dt, op, -1, comm, s))
		return real(sb, rb, count, dt, op, comm, s);
	ncclResult_t r = real(sb, rb, count, dt, op, comm, s);
	ddl_coll_end(&c, DDL_EV_NCCL_ALLREDUCE, r);
	return r;
}

DDL_EXPORT ncclResult_t ncclReduce(const void *sb, void *rb, size_t count, ncclDataType_t dt,
                                   ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t s)
{
	__typeof__(ddl_gpu_real.ncclReduce) real = DDL_GPU_REAL(ncclReduce);
	if (!real)
		return ncclSystemError;
	struct ddl_coll c;
	if (!ddl_coll_begin(&c, count, dt, op, root, comm, s))
		return real(sb, rb, count, dt, op, root, comm, s);
	ncclResult_t r = real(sb, rb, count, dt, op, root, comm, s);
	ddl_coll_end(&c, DDL_EV_NCCL_REDUCE, r);
	return r;
}

DDL_EXPORT ncclResult_t ncclBroadcast(const void *sb, void *rb, size_t count, ncclDataType_t dt,
                                      int root, ncclComm_t comm, cudaStream_t s)
{
	__typeof__(ddl_gpu_real.ncclBroadcast) real = DDL_GPU_REAL(ncclBroadcast);
	if (!real)
		return ncclSystemError;
	struct ddl_coll c;
	if (!ddl_coll_begin(&c, count, dt, 0, root, comm, s))
		return real(sb, rb, count, dt, root, comm, s);
	ncclResult_t r = real(sb, rb, count, dt, root, comm, s);
	ddl_coll_end(&c, DDL_EV_NCCL_BROADCAST, r);
	return r;
}

DDL_EXPORT ncclResult_t ncclBcast(void *b, size_t count, ncclDataType_t dt, int root, ncclComm_t comm,
                                  cudaStream_t s)
{
	__typeof__(ddl_gpu_real.ncclBcast) real = DDL_GPU_REAL(ncclBcast);
	if (!real)
		return ncclSystemError;
	struct ddl_coll c;
	if (!ddl_coll_begin(&c, count, dt, 0, root, comm, s))
		return real(b, count, dt, root, comm, s);
	ncclResult_t r = real(b, count, dt, root, comm, s);
	ddl_coll_end(&c, DDL_EV_NCCL_BCAST, r);
	return r;
}

DDL_EXPORT ncclResult_t ncclAllGather(const void *sb, void *rb, size_t count, ncclDataType_t dt,
                                      ncclComm_t comm, cudaStream_t s)
{
	__typeof__(ddl_gpu_real.ncclAllGather) real = DDL_GPU_REAL(ncclAllGather);
	if (!real)
		return ncclSystemError;
	struct ddl_coll c;
	if (!ddl_coll_begin(&c, count, dt, 0, -1, comm, s))
		return real(sb, rb, count, dt, comm, s);
	ncclResult_t r = real(sb, rb, count, dt, comm, s);
	ddl_coll_end(&c, DDL_EV_NCCL_ALLGATHER, r);
	return r;
}

DDL_EXPORT ncclResult_t ncclReduceScatter(const void *sb, void *rb, size_t count, ncclDataType_t dt,
                                          ncclRedOp_t op, ncclComm_t comm, cudaStream_t s)
{
	__typeof__(ddl_gpu_real.ncclReduceScatter) real = DDL_GPU_REAL(ncclReduceScatter);
	if (!real)
		return ncclSystemError;
	struct ddl_coll c;
	if (!ddl_coll_begin(&c, count, dt, op, -1, comm, s))
		return real(sb, rb, count, dt, op, comm, s);
	ncclResult_t r = real(sb, rb, count, dt, op, comm, s);
	ddl_coll_end(&c, DDL_EV_NCCL_REDUCESCATTER, r);
	return r;
}

DDL_EXPORT ncclResult_t ncclAlltoAll(const void *sb, void *rb, size_t count, ncclDataType_t dt,
                                     ncclComm_t comm, cudaStream_t s)
{
	__typeof__(ddl_gpu_real.ncclAlltoAll) real = DDL_GPU_REAL(ncclAlltoAll);
	if (!real)
		return ncclSystemError;
	struct ddl_coll c;
	if (!ddl_coll_begin(&c, count, dt, 0, -1, comm, s))
		return real(sb, rb, count, dt, comm, s);
	ncclResult_t r = real(sb, rb, count, dt, comm, s);
	ddl_coll_end(&c, DDL_EV_NCCL_ALLTOALL, r);
	return r;
}

DDL_EXPORT ncclResult_t ncclGather(const void *sb, void *rb, size_t count, ncclDataType_t dt,
                                   int root, ncclComm_t comm, cudaStream_t s)
{
	__typeof__(ddl_gpu_real.ncclGather) real = DDL_GPU_REAL(ncclGather);
	if (!real)
		return ncclSystemError;
	struct ddl_coll c;
	if (!ddl_coll_begin(&c, count, dt, 0, root, comm, s))
		return real(sb, rb, count, dt, root, comm, s);
	ncclResult_t r = real(sb, rb, count, dt, root, comm, s);
	ddl_coll_end(&c, DDL_EV_NCCL_GATHER, r);
	return r;
}

DDL_EXPORT ncclResult_t ncclScatter(const void *sb, void *rb, size_t count, ncclDataType_t dt,
                                    int root, ncclComm_t comm, cudaStream_t s)
{
	__typeof__(ddl_gpu_real.ncclScatter) real = DDL_GPU_REAL(ncclScatter);
	if (!real)
		return ncclSystemError;
	struct ddl_coll c;
	if (!ddl_coll_begin(&c, count, dt, 0, root, comm, s))
		return real(sb, rb, count, dt, root, comm, s);
	ncclResult_t r = real(sb, rb, count, dt, root, comm, s);
	ddl_coll_end(&c, DDL_EV_NCCL_SCATTER, r);
	return r;
}

DDL_EXPORT ncclResult_t ncclSend(const void *sb, size_t count, ncclDataType_t dt, int peer,
                                 ncclComm_t comm, cudaStream_t s)
{
	__typeof__(ddl_gpu_real.ncclSend) real = DDL_GPU_REAL(ncclSend);
	if (!real)
		return ncclSystemError;
	struct ddl_coll c;
	if (!ddl_coll_begin(&c, count, dt, 0, peer, comm, s))
		return real(sb, count, dt, peer, comm, s);
	ncclResult_t r = real(sb, count, dt, peer, comm, s);
	ddl_coll_end(&c, DDL_EV_NCCL_SEND, r);
	return r;
}

DDL_EXPORT ncclResult_t ncclRecv(void *rb, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm,
                                 cudaStream_t s)
{
	__typeof__(ddl_gpu_real.ncclRecv) real = DDL_GPU_REAL(ncclRecv);
	if (!real)
		return ncclSystemError;
	struct ddl_coll c;
	if (!ddl_coll_begin(&c, count, dt, 0, peer, comm, s))
		return real(rb, count, dt, peer, comm, s);
	ncclResult_t r = real(rb, count, dt, peer, comm, s);
	ddl_coll_end(&c, DDL_EV_NCCL_RECV, r);
	return r;
}

/* ---- groups ---- */

DDL_EXPORT ncclResult_t ncclGroupStart(void)
{
	__typeof__(ddl_gpu_real.ncclGroupStart) real = DDL_GPU_REAL(ncclGroupStart);
	if (!real)
		return ncclSystemError;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_NCCL);
	if (!t)
		return real();
	struct ddl_args a = ddl_args_make();
	a.corr = ++ddl_gtls.corr;
	uint64_t t0 = ddl_clock_now();
	ncclResult_t r = real();
	uint64_t t1 = ddl_clock_now();
	if (r == ncclSuccess && ddl_gtls.group_depth++ == 0)
		ddl_gtls.ngroup_streams = 0;
	a.aux = (uint32_t)ddl_gtls.group_depth;
	ddl_ring_put_args(t, DDL_EV_NCCL_GROUP_START, 0, t0, t1, r, ddl_gtls.dev, 0, &a);
	return r;
}

DDL_EXPORT ncclResult_t ncclGroupEnd(void)
{
	__typeof__(ddl_gpu_real.ncclGroupEnd) real = DDL_GPU_REAL(ncclGroupEnd);
	if (!real)
		return ncclSystemError;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_NCCL);
	if (!t) {
		if (ddl_gtls.group_depth > 0)
			ddl_gtls.group_depth--; /* stay in step while recording is off */
		return real();
	}
	struct ddl_args a = ddl_args_make();
	a.corr = ++ddl_gtls.corr;
	uint64_t t0 = ddl_clock_now();
	ncclResult_t r = real();
	uint64_t t1 = ddl_clock_now();
	if (ddl_gtls.group_depth > 0 && --ddl_gtls.group_depth == 0) {
		int saved = errno;
		struct ddl_gpu_tls *g = &ddl_gtls;
		t->busy = 1;
		for (int i = 0; i < g->ngroup_streams; i++)
			ddl_pair_end_event(g->group_start[i], g->group_stream[i], g->group_dev[i],
			                   DDL_EV_DEV_COLL, t->idx, a.corr, ddl_stream_id(g->group_stream[i]));
		t->busy = 0;
		if (g->ngroup_streams)
			a.flags |= DDL_ARGF_TIMED;
		g->ngroup_streams = 0;
		errno = saved;
	}
	a.aux = (uint32_t)ddl_gtls.group_depth;
	ddl_ring_put_args(t, DDL_EV_NCCL_GROUP_END, 0, t0, t1, r, ddl_gtls.dev, 0, &a);
	return r;
}

/* ---- communicators ---- */

static void ddl_comm_event(struct ddl_thread *t, unsigned kind, uint64_t t0, uint64_t t1,
                           ncclResult_t r, uint32_t comm_id, int rank, int nranks)
{
	struct ddl_args a = ddl_args_make();
	a.corr = ++ddl_gtls.corr;
	a.comm = comm_id;
	a.peer = rank;
	a.aux = nranks > 0 ? (uint32_t)nranks : 0;
	ddl_ring_put_args(t, kind, 0, t0, t1, r, ddl_gtls.dev, 0, &a);
	if (ddl_unlikely(!ddl_gpu_started))
		ddl_gpu_first();
}

/* What a creating call says of the communicator it makes. */
struct ddl_newcomm {
	uint64_t key, parent;
	int color;
	const char *how;
	int rank, nranks;
};

/*
 * After a creating call of T's that began at T0 and returned R: records the
 * call and NEWCOMM, the communicator it made (NULL: none); returns R.
 */
static ncclResult_t ddl_comm_created(struct ddl_thread *t, unsigned kind, uint64_t t0, ncclResult_t r,
                                     ncclComm_t newcomm, const struct ddl_newcomm *n)
{
	uint64_t t1 = ddl_clock_now();
	int saved = errno;
	uint32_t id = 0;
	t->busy = 1;
	if ((r == ncclSuccess || r == ncclInProgress) && newcomm)
		id = ddl_comm_add(newcomm, n->key, n->parent, n->color, n->how, n->rank, n->nranks,
		                  r == ncclSuccess && ddl_gtls.group_depth == 0);
	t->busy = 0;
	ddl_comm_event(t, kind, t0, t1, r, id, n->rank, n->nranks);
	errno = saved;
	return r;
}

DDL_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
	__typeof__(ddl_gpu_real.ncclCommInitRank) real = DDL_GPU_REAL(ncclCommInitRank);
	if (!real)
		return ncclSystemError;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_NCCL);
	if (!t)
		return real(comm, nranks, id, rank);
	struct ddl_newcomm n = {ddl_fnv(DDL_FNV0, &id, sizeof id), 0, -1, "init", rank, nranks};
	uint64_t t0 = ddl_clock_now();
	ncclResult_t r = real(comm, nranks, id, rank);
	return ddl_comm_created(t, DDL_EV_NCCL_COMM_INIT_RANK, t0, r, comm ? *comm : NULL, &n);
}

DDL_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id,
                                               int rank, ncclConfig_t *config)
{
	__typeof__(ddl_gpu_real.ncclCommInitRankConfig) real = DDL_GPU_REAL(ncclCommInitRankConfig);
	if (!real)
		return ncclSystemError;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_NCCL);
	if (!t)
		return real(comm, nranks, id, rank, config);
	struct ddl_newcomm n = {ddl_fnv(DDL_FNV0, &id, sizeof id), 0, -1, "init", rank, nranks};
	uint64_t t0 = ddl_clock_now();
	ncclResult_t r = real(comm, nranks, id, rank, config);
	return ddl_comm_created(t, DDL_EV_NCCL_COMM_INIT_RANK_CONFIG, t0, r, comm ? *comm : NULL, &n);
}

DDL_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nid,
                                                 ncclUniqueId *ids, ncclConfig_t *config)
{
	__typeof__(ddl_gpu_real.ncclCommInitRankScalable) real = DDL_GPU_REAL(ncclCommInitRankScalable);
	if (!real)
		return ncclSystemError;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_NCCL);
	if (!t)
		return real(comm, nranks, rank, nid, ids, config);
	struct ddl_newcomm n = {ids && nid > 0 ? ddl_fnv(DDL_FNV0, ids, sizeof *ids) : 0, 0, -1, "init",
	                        rank, nranks};
	uint64_t t0 = ddl_clock_now();
	ncclResult_t r = real(comm, nranks, rank, nid, ids, config);
	return ddl_comm_created(t, DDL_EV_NCCL_COMM_INIT_RANK_SCALABLE, t0, r, comm ? *comm : NULL, &n);
}

DDL_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                      ncclConfig_t *config)
{
	__typeof__(ddl_gpu_real.ncclCommSplit) real = DDL_GPU_REAL(ncclCommSplit);
	if (!real)
		return ncclSystemError;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_NCCL);
	if (!t)
		return real(comm, color, key, newcomm, config);
	uint64_t parent = ddl_comm_key(ddl_comm_find(comm));
	struct ddl_newcomm n = {ddl_fnv(ddl_fnv(DDL_FNV0, &parent, sizeof parent), &color, sizeof color),
	                        parent, color, "split", -1, -1};
	uint64_t t0 = ddl_clock_now();
	ncclResult_t r = real(comm, color, key, newcomm, config);
	return ddl_comm_created(t, DDL_EV_NCCL_COMM_SPLIT, t0, r,
	                        newcomm && color != NCCL_SPLIT_NOCOLOR ? *newcomm : NULL, &n);
}

DDL_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int *excl, int nexcl, ncclComm_t *newcomm,
                                       ncclConfig_t *config, int flags)
{
	__typeof__(ddl_gpu_real.ncclCommShrink) real = DDL_GPU_REAL(ncclCommShrink);
	if (!real)
		return ncclSystemError;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_NCCL);
	if (!t)
		return real(comm, excl, nexcl, newcomm, config, flags);
	uint64_t parent = ddl_comm_key(ddl_comm_find(comm));
	struct ddl_newcomm n = {ddl_fnv(DDL_FNV0, &parent, sizeof parent), parent, -1, "shrink", -1, -1};
	if (excl && nexcl > 0)
		n.key = ddl_fnv(n.key, excl, (size_t)nexcl * sizeof *excl);
	uint64_t t0 = ddl_clock_now();
	ncclResult_t r = real(comm, excl, nexcl, newcomm, config, flags);
	return ddl_comm_created(t, DDL_EV_NCCL_COMM_SHRINK, t0, r, newcomm ? *newcomm : NULL, &n);
}

DDL_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
	__typeof__(ddl_gpu_real.ncclCommInitAll) real = DDL_GPU_REAL(ncclCommInitAll);
	if (!real)
		return ncclSystemError;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_NCCL);
	if (!t)
		return real(comms, ndev, devlist);
	uint64_t t0 = ddl_clock_now();
	ncclResult_t r = real(comms, ndev, devlist);
	uint64_t t1 = ddl_clock_now();
	int saved = errno;
	uint32_t first = 0;
	if (r == ncclSuccess && comms && ndev > 0) {
		/* One process owns every member: its pid and the array make the key. */
		uint64_t key = ddl_fnv(ddl_fnv(DDL_FNV0, &ddl_g.pid, sizeof ddl_g.pid), &comms, sizeof comms);
		t->busy = 1;
		for (int i = 0; i < ndev; i++) {
			uint32_t id = ddl_comm_add(comms[i], key, 0, -1, "all", i, ndev,
			                           ddl_gtls.group_depth == 0);
			if (!first)
				first = id;
		}
		t->busy = 0;
	}
	ddl_comm_event(t, DDL_EV_NCCL_COMM_INIT_ALL, t0, t1, r, first, 0, ndev);
	errno = saved;
	return r;
}

static ncclResult_t ddl_comm_end(ncclResult_t (*real)(ncclComm_t), unsigned kind, ncclComm_t comm)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_NCCL);
	if (!t)
		return real(comm);
	t->busy = 1;
	uint32_t id = ddl_comm_find(comm);
	t->busy = 0;
	uint64_t t0 = ddl_clock_now();
	ncclResult_t r = real(comm);
	uint64_t t1 = ddl_clock_now();
	ddl_comm_event(t, kind, t0, t1, r, id, -1, -1);
	return r;
}

DDL_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	__typeof__(ddl_gpu_real.ncclCommDestroy) real = DDL_GPU_REAL(ncclCommDestroy);
	if (!real)
		return ncclSystemError;
	return ddl_comm_end(real, DDL_EV_NCCL_COMM_DESTROY, comm);
}

DDL_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	__typeof__(ddl_gpu_real.ncclCommAbort) real = DDL_GPU_REAL(ncclCommAbort);
	if (!real)
		return ncclSystemError;
	return ddl_comm_end(real, DDL_EV_NCCL_COMM_ABORT, comm);
}

#endif
