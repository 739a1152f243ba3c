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
static struct {
	ncclComm_t handle[DDL_COMM_MAX];
	uint64_t key[DDL_COMM_MAX];
	uint32_t id[DDL_COMM_MAX]; /* the trace's communicator id (ddl_comm_id_new) */
	uint32_t n; /* slots 1..n in use */
} ddl_comms;

static uint64_t ddl_fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}
#define DDL_FNV0 0xcbf29ce484222325ull

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
	pthread_mutex_lock(&ddl_comm_lock);
	uint32_t id = 0;
	for (uint32_t i = ddl_comms.n; i >= 1 && !id; i--)
		if (ddl_comms.handle[i - 1] == c)
			id = ddl_comms.id[i - 1];
	pthread_mutex_unlock(&ddl_comm_lock);
	return id;
}

static uint64_t ddl_comm_key(uint32_t id)
{
	uint64_t key = 0;
	pthread_mutex_lock(&ddl_comm_lock);
	for (uint32_t i = ddl_comms.n; id && i >= 1 && !key; i--)
		if (ddl_comms.id[i - 1] == id)
			key = ddl_comms.key[i - 1];
	pthread_mutex_unlock(&ddl_comm_lock);
	return key;
}

/* Asks NCCL itself for what it knows of C. */
static void ddl_comm_query(ncclComm_t c, int *rank, int *nranks, int *dev)
{
	static ncclResult_t (*user_rank)(const ncclComm_t, int *);
	static ncclResult_t (*count)(const ncclComm_t, int *);
	static ncclResult_t (*cu_dev)(const ncclComm_t, int *);
	*rank = *nranks = *dev = -1;
	if (DDL_NEXT(user_rank, "ncclCommUserRank") && user_rank(c, rank) != ncclSuccess)
		*rank = -1;
	if (DDL_NEXT(count, "ncclCommCount") && count(c, nranks) != ncclSuccess)
		*nranks = -1;
	if (DDL_NEXT(cu_dev, "ncclCommCuDevice") && cu_dev(c, dev) != ncclSuccess)
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
	pthread_mutex_lock(&ddl_comm_lock);
	uint32_t id = 0;
	if (ddl_comms.n < DDL_COMM_MAX) {
		uint32_t slot = ddl_comms.n++;
		id = ddl_comm_id_new();
		ddl_comms.handle[slot] = c;
		ddl_comms.key[slot] = key;
		ddl_comms.id[slot] = id;
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

static void ddl_coll_begin(struct ddl_coll *c, struct ddl_thread *t, size_t count,
                           ncclDataType_t dt, int op, int peer, ncclComm_t comm, cudaStream_t s)
{
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
}

static void ddl_coll_end(struct ddl_coll *c, unsigned kind, uint64_t t0, uint64_t t1, ncclResult_t r)
{
	struct ddl_thread *t = c->t;
	if (c->ev) {
		int saved = errno;
		t->busy = 1;
		ddl_pair_end_event(c->ev, c->s, ddl_gtls.dev, DDL_EV_DEV_COLL, t->idx, c->a.corr, c->sid);
		t->busy = 0;
		errno = saved;
	}
	/* with --backtrace, the call's stack too (unwind.c) */
	ddl_ring_put_args_call(t, kind, 0, t0, t1, r, ddl_gtls.dev, c->sid, &c->a);
	if (ddl_unlikely(!ddl_gpu_started))
		ddl_gpu_first();
}

#define DDL_COLL(KIND, REALCALL, COUNT, DT, OP, PEER, COMM, STREAM) \
	do { \
		struct ddl_thread *t = ddl_thread_enter(DDL_FAM_NCCL); \
		if (!t) \
			return REALCALL; \
		struct ddl_coll c; \
		ddl_coll_begin(&c, t, COUNT, DT, OP, PEER, COMM, STREAM); \
		uint64_t t0 = ddl_clock_now(); \
		ncclResult_t r = REALCALL; \
		uint64_t t1 = ddl_clock_now(); \
		ddl_coll_end(&c, KIND, t0, t1, r); \
		return r; \
	} while (0)

#define DDL_REAL_OR_FAIL(slot, name) \
	if (!DDL_NEXT(slot, name)) \
		return ncclSystemError

DDL_EXPORT ncclResult_t ncclAllReduce(const void *sb, void *rb, size_t count, ncclDataType_t dt,
                                      ncclRedOp_t op, ncclComm_t comm, cudaStream_t s)
{
	static ncclResult_t (*real)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
	                            ncclComm_t, cudaStream_t);
	DDL_REAL_OR_FAIL(real, "ncclAllReduce");
	DDL_COLL(DDL_EV_NCCL_ALLREDUCE, real(sb, rb, count, dt, op, comm, s), count, dt, op, -1, comm, s);
}

DDL_EXPORT ncclResult_t ncclReduce(const void *sb, void *rb, size_t count, ncclDataType_t dt,
                                   ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t s)
{
	static ncclResult_t (*real)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, int,
	                            ncclComm_t, cudaStream_t);
	DDL_REAL_OR_FAIL(real, "ncclReduce");
	DDL_COLL(DDL_EV_NCCL_REDUCE, real(sb, rb, count, dt, op, root, comm, s), count, dt, op, root,
	         comm, s);
}

DDL_EXPORT ncclResult_t ncclBroadcast(const void *sb, void *rb, size_t count, ncclDataType_t dt,
                                      int root, ncclComm_t comm, cudaStream_t s)
{
	static ncclResult_t (*real)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
	                            cudaStream_t);
	DDL_REAL_OR_FAIL(real, "ncclBroadcast");
	DDL_COLL(DDL_EV_NCCL_BROADCAST, real(sb, rb, count, dt, root, comm, s), count, dt, 0, root,
	         comm, s);
}

DDL_EXPORT ncclResult_t ncclBcast(void *b, size_t count, ncclDataType_t dt, int root, ncclComm_t comm,
                                  cudaStream_t s)
{
	static ncclResult_t (*real)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
	DDL_REAL_OR_FAIL(real, "ncclBcast");
	DDL_COLL(DDL_EV_NCCL_BCAST, real(b, count, dt, root, comm, s), count, dt, 0, root, comm, s);
}

DDL_EXPORT ncclResult_t ncclAllGather(const void *sb, void *rb, size_t count, ncclDataType_t dt,
                                      ncclComm_t comm, cudaStream_t s)
{
	static ncclResult_t (*real)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
	                            cudaStream_t);
	DDL_REAL_OR_FAIL(real, "ncclAllGather");
	DDL_COLL(DDL_EV_NCCL_ALLGATHER, real(sb, rb, count, dt, comm, s), count, dt, 0, -1, comm, s);
}

DDL_EXPORT ncclResult_t ncclReduceScatter(const void *sb, void *rb, size_t count, ncclDataType_t dt,
                                          ncclRedOp_t op, ncclComm_t comm, cudaStream_t s)
{
	static ncclResult_t (*real)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
	                            ncclComm_t, cudaStream_t);
	DDL_REAL_OR_FAIL(real, "ncclReduceScatter");
	DDL_COLL(DDL_EV_NCCL_REDUCESCATTER, real(sb, rb, count, dt, op, comm, s), count, dt, op, -1,
	         comm, s);
}

DDL_EXPORT ncclResult_t ncclAlltoAll(const void *sb, void *rb, size_t count, ncclDataType_t dt,
                                     ncclComm_t comm, cudaStream_t s)
{
	static ncclResult_t (*real)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
	                            cudaStream_t);
	DDL_REAL_OR_FAIL(real, "ncclAlltoAll");
	DDL_COLL(DDL_EV_NCCL_ALLTOALL, real(sb, rb, count, dt, comm, s), count, dt, 0, -1, comm, s);
}

DDL_EXPORT ncclResult_t ncclGather(const void *sb, void *rb, size_t count, ncclDataType_t dt,
                                   int root, ncclComm_t comm, cudaStream_t s)
{
	static ncclResult_t (*real)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
	                            cudaStream_t);
	DDL_REAL_OR_FAIL(real, "ncclGather");
	DDL_COLL(DDL_EV_NCCL_GATHER, real(sb, rb, count, dt, root, comm, s), count, dt, 0, root, comm, s);
}

DDL_EXPORT ncclResult_t ncclScatter(const void *sb, void *rb, size_t count, ncclDataType_t dt,
                                    int root, ncclComm_t comm, cudaStream_t s)
{
	static ncclResult_t (*real)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
	                            cudaStream_t);
	DDL_REAL_OR_FAIL(real, "ncclScatter");
	DDL_COLL(DDL_EV_NCCL_SCATTER, real(sb, rb, count, dt, root, comm, s), count, dt, 0, root, comm, s);
}

DDL_EXPORT ncclResult_t ncclSend(const void *sb, size_t count, ncclDataType_t dt, int peer,
                                 ncclComm_t comm, cudaStream_t s)
{
	static ncclResult_t (*real)(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
	DDL_REAL_OR_FAIL(real, "ncclSend");
	DDL_COLL(DDL_EV_NCCL_SEND, real(sb, count, dt, peer, comm, s), count, dt, 0, peer, comm, s);
}

DDL_EXPORT ncclResult_t ncclRecv(void *rb, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm,
                                 cudaStream_t s)
{
	static ncclResult_t (*real)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
	DDL_REAL_OR_FAIL(real, "ncclRecv");
	DDL_COLL(DDL_EV_NCCL_RECV, real(rb, count, dt, peer, comm, s), count, dt, 0, peer, comm, s);
}

/* ---- groups ---- */

DDL_EXPORT ncclResult_t ncclGroupStart(void)
{
	static ncclResult_t (*real)(void);
	DDL_REAL_OR_FAIL(real, "ncclGroupStart");
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
	static ncclResult_t (*real)(void);
	DDL_REAL_OR_FAIL(real, "ncclGroupEnd");
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

/* Runs the real creation, then records the new communicator. */
#define DDL_COMM_CREATE(KIND, REALCALL, NEWCOMM, KEY, PARENT, COLOR, HOW, RANK, NRANKS) \
	do { \
		struct ddl_thread *t = ddl_thread_enter(DDL_FAM_NCCL); \
		if (!t) \
			return REALCALL; \
		uint64_t t0 = ddl_clock_now(); \
		ncclResult_t r = REALCALL; \
		uint64_t t1 = ddl_clock_now(); \
		int saved = errno; \
		uint32_t id = 0; \
		t->busy = 1; \
		if ((r == ncclSuccess || r == ncclInProgress) && (NEWCOMM)) \
			id = ddl_comm_add((NEWCOMM), (KEY), (PARENT), (COLOR), (HOW), (RANK), (NRANKS), \
			                  r == ncclSuccess && ddl_gtls.group_depth == 0); \
		t->busy = 0; \
		ddl_comm_event(t, KIND, t0, t1, r, id, RANK, NRANKS); \
		errno = saved; \
		return r; \
	} while (0)

DDL_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
	static ncclResult_t (*real)(ncclComm_t *, int, ncclUniqueId, int);
	DDL_REAL_OR_FAIL(real, "ncclCommInitRank");
	uint64_t key = ddl_fnv(DDL_FNV0, &id, sizeof id);
	DDL_COMM_CREATE(DDL_EV_NCCL_COMM_INIT_RANK, real(comm, nranks, id, rank), comm ? *comm : NULL,
	                key, 0, -1, "init", rank, nranks);
}

DDL_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id,
                                               int rank, ncclConfig_t *config)
{
	static ncclResult_t (*real)(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *);
	DDL_REAL_OR_FAIL(real, "ncclCommInitRankConfig");
	uint64_t key = ddl_fnv(DDL_FNV0, &id, sizeof id);
	DDL_COMM_CREATE(DDL_EV_NCCL_COMM_INIT_RANK_CONFIG, real(comm, nranks, id, rank, config),
	                comm ? *comm : NULL, key, 0, -1, "init", rank, nranks);
}

DDL_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nid,
                                                 ncclUniqueId *ids, ncclConfig_t *config)
{
	static ncclResult_t (*real)(ncclComm_t *, int, int, int, ncclUniqueId *, ncclConfig_t *);
	DDL_REAL_OR_FAIL(real, "ncclCommInitRankScalable");
	uint64_t key = ids && nid > 0 ? ddl_fnv(DDL_FNV0, ids, sizeof *ids) : 0;
	DDL_COMM_CREATE(DDL_EV_NCCL_COMM_INIT_RANK_SCALABLE, real(comm, nranks, rank, nid, ids, config),
	                comm ? *comm : NULL, key, 0, -1, "init", rank, nranks);
}

DDL_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                      ncclConfig_t *config)
{
	static ncclResult_t (*real)(ncclComm_t, int, int, ncclComm_t *, ncclConfig_t *);
	DDL_REAL_OR_FAIL(real, "ncclCommSplit");
	uint64_t parent = ddl_comm_key(ddl_comm_find(comm));
	uint64_t k = ddl_fnv(ddl_fnv(DDL_FNV0, &parent, sizeof parent), &color, sizeof color);
	DDL_COMM_CREATE(DDL_EV_NCCL_COMM_SPLIT, real(comm, color, key, newcomm, config),
	                newcomm && color != NCCL_SPLIT_NOCOLOR ? *newcomm : NULL, k, parent, color,
	                "split", -1, -1);
}

DDL_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int *excl, int nexcl, ncclComm_t *newcomm,
                                       ncclConfig_t *config, int flags)
{
	static ncclResult_t (*real)(ncclComm_t, int *, int, ncclComm_t *, ncclConfig_t *, int);
	DDL_REAL_OR_FAIL(real, "ncclCommShrink");
	uint64_t parent = ddl_comm_key(ddl_comm_find(comm));
	uint64_t k = ddl_fnv(DDL_FNV0, &parent, sizeof parent);
	if (excl && nexcl > 0)
		k = ddl_fnv(k, excl, (size_t)nexcl * sizeof *excl);
	DDL_COMM_CREATE(DDL_EV_NCCL_COMM_SHRINK, real(comm, excl, nexcl, newcomm, config, flags),
	                newcomm ? *newcomm : NULL, k, parent, -1, "shrink", -1, -1);
}

DDL_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
	static ncclResult_t (*real)(ncclComm_t *, int, const int *);
	DDL_REAL_OR_FAIL(real, "ncclCommInitAll");
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
	static ncclResult_t (*real)(ncclComm_t);
	DDL_REAL_OR_FAIL(real, "ncclCommDestroy");
	return ddl_comm_end(real, DDL_EV_NCCL_COMM_DESTROY, comm);
}

DDL_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	static ncclResult_t (*real)(ncclComm_t);
	DDL_REAL_OR_FAIL(real, "ncclCommAbort");
	return ddl_comm_end(real, DDL_EV_NCCL_COMM_ABORT, comm);
}

#endif
