/*
 * The NCCL API of the emulation, with the prototypes of nccl.h: argument
 * checks, groups, and enqueueing. A collective or point-to-point call is
 * checked at once (errors come back from the call), then becomes work for
 * a stream worker; the transfers happen when the stream reaches it (coll.c).
 * Between ncclGroupStart and ncclGroupEnd, calls are collected per thread;
 * at the outermost ncclGroupEnd, deferred ncclCommInitRank calls run
 * concurrently, then each communicator's operations become one unit of
 * work on the stream of its first operation (other streams of the group
 * wait for it, and it for them, as NCCL orders them).
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"

struct emu_pinit {
	struct ncclComm *c;
	int nranks, rank, dev;
	ncclUniqueId id;
	ncclResult_t res;
};

struct emu_group {
	int depth;
	struct emu_ncclop *ops;
	int nops, cap;
	struct emu_pinit *inits;
	int ninits, icap;
	ncclResult_t err;
};

static __thread struct emu_group emu_grp;
static __thread char emu_lasterr[256];

static ncclResult_t emu_fail(ncclResult_t r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Records the reason of a failed call for ncclGetLastError; returns r. */
static ncclResult_t emu_fail(ncclResult_t r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(emu_lasterr, sizeof emu_lasterr, fmt, ap);
	va_end(ap);
	if (emu_grp.depth > 0 && !emu_grp.err)
		emu_grp.err = r;
	return r;
}

static ncclResult_t emu_comm_check(const struct ncclComm *c, const char *call)
{
	if (!emu_comm_valid(c))
		return emu_fail(ncclInvalidArgument, "%s: invalid communicator", call);
	if (c->init_pending)
		return emu_fail(ncclInvalidUsage, "%s: communicator not initialised (its group has not ended)", call);
	if (c->async_err)
		return emu_fail(c->async_err, "%s: communicator failed earlier: %s", call, c->errmsg);
	return ncclSuccess;
}

ncclResult_t ncclGetVersion(int *version)
{
	if (!version)
		return emu_fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
	*version = NCCL_VERSION_CODE;
	return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
	if (!uniqueId)
		return emu_fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
	ncclResult_t r = emu_uid_new(uniqueId);
	return r ? emu_fail(r, "ncclGetUniqueId: cannot start the rendezvous listener") : ncclSuccess;
}

static const char *emu_result_string(ncclResult_t result)
{
	switch (result) {
	case ncclSuccess: return "no error";
	case ncclUnhandledCudaError: return "unhandled cuda error";
	case ncclSystemError: return "unhandled system error";
	case ncclInternalError: return "internal error";
	case ncclInvalidArgument: return "invalid argument";
	case ncclInvalidUsage: return "invalid usage";
	case ncclRemoteError: return "remote process exited or there was a network error";
	case ncclInProgress: return "NCCL operation in progress";
	default: return "unknown result code";
	}
}

const char *ncclGetErrorString(ncclResult_t result)
{
	return emu_result_string(result);
}

const char *ncclGetLastError(ncclComm_t comm)
{
	if (emu_lasterr[0])
		return emu_lasterr;
	if (emu_comm_valid(comm) && comm->errmsg[0])
		return comm->errmsg;
	return "";
}

/* ---- communicators ---- */

static void *emu_init_main(void *arg)
{
	struct emu_pinit *p = arg;
	emu_device_set_current(p->dev);
	p->res = emu_comm_init(p->c, p->nranks, &p->id, p->rank, p->dev);
	return NULL;
}

/* Runs communicator initialisations concurrently (they wait for each other); the first error. */
static ncclResult_t emu_run_inits(struct emu_pinit *p, int n)
{
	pthread_t *t = calloc((size_t)n, sizeof *t);
	char *started = calloc((size_t)n, 1);
	ncclResult_t r = ncclSuccess;
	if (n == 1 || !t || !started) {
		int cur = emu_device_current();
		for (int i = 0; i < n; i++)
			emu_init_main(&p[i]);
		emu_device_set_current(cur);
	} else {
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		for (int i = 0; i < n; i++) {
			started[i] = pthread_create(&t[i], NULL, emu_init_main, &p[i]) == 0;
			if (!started[i])
				p[i].res = ncclSystemError;
		}
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		for (int i = 0; i < n; i++)
			if (started[i])
				pthread_join(t[i], NULL);
	}
	for (int i = 0; i < n; i++) {
		if (!p[i].res)
			p[i].c->init_pending = 0;
		else if (!r)
			r = emu_fail(p[i].res, "rank %d of %d: initialisation failed: %s", p[i].rank, p[i].nranks,
			             p[i].c->errmsg[0] ? p[i].c->errmsg : emu_result_string(p[i].res));
	}
	free(t);
	free(started);
	return r;
}

static ncclResult_t emu_init_rank(ncclComm_t *comm, int nranks, const ncclUniqueId *id, int rank,
                                  const ncclConfig_t *config, const char *call)
{
	if (!comm)
		return emu_fail(ncclInvalidArgument, "%s: comm is NULL", call);
	if (nranks < 1 || rank < 0 || rank >= nranks)
		return emu_fail(ncclInvalidArgument, "%s: rank %d of %d", call, rank, nranks);
	if (config && config->magic != 0xcafebeef)
		return emu_fail(ncclInvalidArgument, "%s: config not set with NCCL_CONFIG_INITIALIZER", call);
	struct ncclComm *c = emu_comm_alloc();
	if (!c)
		return emu_fail(ncclSystemError, "%s: out of memory", call);
	struct emu_pinit p = {c, nranks, rank, emu_device_current(), *id, ncclSuccess};
	if (emu_grp.depth > 0) {
		if (emu_grp.ninits == emu_grp.icap) {
			int cap = emu_grp.icap ? emu_grp.icap * 2 : 8;
			struct emu_pinit *a = realloc(emu_grp.inits, (size_t)cap * sizeof *a);
			if (!a) {
				emu_comm_free(c);
				return emu_fail(ncclSystemError, "%s: out of memory", call);
			}
			emu_grp.inits = a;
			emu_grp.icap = cap;
		}
		c->init_pending = 1;
		emu_grp.inits[emu_grp.ninits++] = p;
		*comm = c;
		return ncclSuccess;
	}
	ncclResult_t r = emu_comm_init(c, nranks, id, rank, p.dev);
	if (r) {
		emu_fail(r, "%s: rank %d of %d: %s", call, rank, nranks,
		         c->errmsg[0] ? c->errmsg : "bad unique id or no listener");
		emu_comm_free(c);
		*comm = NULL;
		return r;
	}
	*comm = c;
	return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
	return emu_init_rank(comm, nranks, &commId, rank, NULL, "ncclCommInitRank");
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t *config)
{
	return emu_init_rank(comm, nranks, &commId, rank, config, "ncclCommInitRankConfig");
}

ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
	if (!comm || ndev < 1)
		return emu_fail(ncclInvalidArgument, "ncclCommInitAll: comm is NULL or ndev %d < 1", ndev);
	emu_init();
	for (int i = 0; i < ndev; i++) {
		int d = devlist ? devlist[i] : i;
		if (!emu_device_valid(d))
			return emu_fail(ncclInvalidArgument, "ncclCommInitAll: device %d does not exist", d);
		for (int j = 0; devlist && j < i; j++)
			if (devlist[j] == d)
				return emu_fail(ncclInvalidUsage, "ncclCommInitAll: device %d listed twice", d);
	}
	ncclUniqueId id;
	struct emu_pinit *p = calloc((size_t)ndev, sizeof *p);
	ncclResult_t r = p ? emu_uid_new(&id) : ncclSystemError;
	for (int i = 0; !r && i < ndev; i++) {
		p[i] = (struct emu_pinit){emu_comm_alloc(), ndev, i, devlist ? devlist[i] : i, id, ncclSuccess};
		if (!p[i].c)
			r = ncclSystemError;
	}
	if (!r)
		r = emu_run_inits(p, ndev);
	for (int i = 0; p && i < ndev; i++) {
		if (r)
			emu_comm_free(p[i].c);
		comm[i] = r ? NULL : p[i].c;
	}
	free(p);
	return r ? emu_fail(r, "ncclCommInitAll: %s", emu_result_string(r)) : ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config)
{
	ncclResult_t r = emu_comm_check(comm, "ncclCommSplit");
	if (r)
		return r;
	if (!newcomm || (color < 0 && color != NCCL_SPLIT_NOCOLOR))
		return emu_fail(ncclInvalidArgument, "ncclCommSplit: newcomm is NULL or color %d < 0", color);
	if (config && config->magic != 0xcafebeef)
		return emu_fail(ncclInvalidArgument, "ncclCommSplit: config not set with NCCL_CONFIG_INITIALIZER");
	r = emu_comm_split(comm, color, key, newcomm);
	return r ? emu_fail(r, "ncclCommSplit: %s", comm->errmsg[0] ? comm->errmsg : emu_result_string(r))
	         : ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
	if (!emu_comm_valid(comm))
		return emu_fail(ncclInvalidArgument, "ncclCommFinalize: invalid communicator");
	return emu_comm_finalize(comm);
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	if (!comm)
		return ncclSuccess;
	if (!emu_comm_valid(comm))
		return emu_fail(ncclInvalidArgument, "ncclCommDestroy: invalid communicator");
	if (comm->init_pending) {
		emu_comm_free(comm);
		return ncclSuccess;
	}
	return emu_comm_destroy(comm);
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	if (!comm)
		return ncclSuccess;
	if (!emu_comm_valid(comm))
		return emu_fail(ncclInvalidArgument, "ncclCommAbort: invalid communicator");
	if (comm->init_pending) {
		emu_comm_free(comm);
		return ncclSuccess;
	}
	return emu_comm_abort(comm);
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
	if (!emu_comm_valid(comm) || !asyncError)
		return emu_fail(ncclInvalidArgument, "ncclCommGetAsyncError: invalid argument");
	*asyncError = comm->async_err;
	return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
	ncclResult_t r = emu_comm_check(comm, "ncclCommCount");
	if (r)
		return r;
	if (!count)
		return emu_fail(ncclInvalidArgument, "ncclCommCount: count is NULL");
	*count = comm->nranks;
	return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
	ncclResult_t r = emu_comm_check(comm, "ncclCommCuDevice");
	if (r)
		return r;
	if (!device)
		return emu_fail(ncclInvalidArgument, "ncclCommCuDevice: device is NULL");
	*device = comm->dev;
	return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
	ncclResult_t r = emu_comm_check(comm, "ncclCommUserRank");
	if (r)
		return r;
	if (!rank)
		return emu_fail(ncclInvalidArgument, "ncclCommUserRank: rank is NULL");
	*rank = comm->rank;
	return ncclSuccess;
}

/* ---- operations ---- */

static const char *const emu_op_names[] = {
	[EMU_NCCL_ALLREDUCE] = "ncclAllReduce", [EMU_NCCL_BROADCAST] = "ncclBroadcast",
	[EMU_NCCL_REDUCE] = "ncclReduce",       [EMU_NCCL_ALLGATHER] = "ncclAllGather",
	[EMU_NCCL_REDUCESCATTER] = "ncclReduceScatter", [EMU_NCCL_ALLTOALL] = "ncclAlltoAll",
	[EMU_NCCL_GATHER] = "ncclGather",       [EMU_NCCL_SCATTER] = "ncclScatter",
	[EMU_NCCL_SEND] = "ncclSend",           [EMU_NCCL_RECV] = "ncclRecv",
};

/* Which buffers an operation reads and writes on this rank. */
static void emu_op_buffers(const struct emu_ncclop *o, int rank, int *needs_send, int *needs_recv)
{
	int root = rank == o->peer;
	switch (o->kind) {
	case EMU_NCCL_BROADCAST: *needs_send = root; *needs_recv = 1; break;
	case EMU_NCCL_REDUCE: case EMU_NCCL_GATHER: *needs_send = 1; *needs_recv = root; break;
	case EMU_NCCL_SCATTER: *needs_send = root; *needs_recv = 1; break;
	case EMU_NCCL_SEND: *needs_send = 1; *needs_recv = 0; break;
	case EMU_NCCL_RECV: *needs_send = 0; *needs_recv = 1; break;
	default: *needs_send = *needs_recv = 1; break;
	}
}

static ncclResult_t emu_op_check(struct emu_ncclop *o)
{
	const char *call = emu_op_names[o->kind];
	ncclResult_t r = emu_comm_check(o->comm, call);
	if (r)
		return r;
	struct ncclComm *c = o->comm;
	size_t esz = emu_type_size(o->type);
	int reduces = o->kind == EMU_NCCL_ALLREDUCE || o->kind == EMU_NCCL_REDUCE ||
	              o->kind == EMU_NCCL_REDUCESCATTER;
	int rooted = o->kind != EMU_NCCL_ALLREDUCE && o->kind != EMU_NCCL_ALLGATHER &&
	             o->kind != EMU_NCCL_REDUCESCATTER && o->kind != EMU_NCCL_ALLTOALL;
	if (!esz)
		return emu_fail(ncclInvalidArgument, "%s: invalid data type %d", call, (int)o->type);
	if (reduces && !emu_reduce_ok(o->type, o->op))
		return emu_fail(ncclInvalidArgument, "%s: reduction %d on data type %d is not supported", call,
		                (int)o->op, (int)o->type);
	if (rooted && (o->peer < 0 || o->peer >= c->nranks))
		return emu_fail(ncclInvalidArgument, "%s: %s %d is not a rank of %d", call,
		                o->kind == EMU_NCCL_SEND || o->kind == EMU_NCCL_RECV ? "peer" : "root", o->peer,
		                c->nranks);
	if (o->count > SIZE_MAX / esz / (size_t)c->nranks)
		return emu_fail(ncclInvalidArgument, "%s: count %zu is too large", call, o->count);
	int ns, nr;
	emu_op_buffers(o, c->rank, &ns, &nr);
	if (o->count && ((ns && !o->sendbuff) || (nr && !o->recvbuff)))
		return emu_fail(ncclInvalidArgument, "%s: NULL buffer", call);
	if (emu_stream_get_dev(o->stream, c->dev, &o->s) != cudaSuccess)
		return emu_fail(ncclUnhandledCudaError, "%s: invalid stream", call);
	return ncclSuccess;
}

/* Pushes on s a wait for what t has enqueued so far. */
static void emu_push_wait(struct emu_stream *s, struct emu_stream *t, uint64_t seq)
{
	struct emu_op *op = emu_op_new(EMU_OP_WAIT_STREAM, 0);
	if (!op)
		return;
	emu_stream_ref(t);
	op->u.sw.s = t;
	op->u.sw.seq = seq;
	emu_stream_push(s, op);
}

/* Enqueues the operations of one communicator (ops[i] where mine[i]) as one unit of work. */
static ncclResult_t emu_submit_comm(struct emu_ncclop *ops, int n, const char *mine, int m)
{
	struct emu_ncclwork *w = malloc(sizeof *w + (size_t)m * sizeof w->ops[0]);
	struct emu_stream **others = calloc((size_t)m, sizeof *others);
	struct emu_op *op = emu_op_new(EMU_OP_NCCL, 0);
	if (!w || !op || !others) {
		free(w);
		free(op);
		free(others);
		return emu_fail(ncclSystemError, "out of memory");
	}
	w->nops = 0;
	for (int i = 0; i < n; i++)
		if (mine[i])
			w->ops[w->nops++] = ops[i];
	struct emu_stream *s = w->ops[0].s;
	struct ncclComm *c = w->comm = w->ops[0].comm;
	/* the group's other streams, each once: the work waits for them, then they for it */
	int no = 0;
	for (int i = 1; i < m; i++) {
		int seen = w->ops[i].s == s;
		for (int j = 0; j < no && !seen; j++)
			seen = others[j] == w->ops[i].s;
		if (!seen)
			others[no++] = w->ops[i].s;
	}
	for (int j = 0; j < no; j++)
		emu_push_wait(s, others[j], emu_stream_tail(others[j]));
	w->seq = emu_comm_take_turn(c);
	op->u.nccl.w = w; /* the worker frees w once it has run: no use of w after the push */
	uint64_t seq = emu_stream_push(s, op);
	for (int j = 0; j < no; j++)
		emu_push_wait(others[j], s, seq);
	free(others);
	return ncclSuccess;
}

static ncclResult_t emu_submit(struct emu_ncclop *ops, int n)
{
	char *done = calloc((size_t)n, 1), *mine = calloc((size_t)n, 1);
	ncclResult_t r = done && mine ? ncclSuccess : emu_fail(ncclSystemError, "out of memory");
	for (int i = 0; !r && i < n; i++) {
		if (done[i])
			continue;
		int m = 0;
		for (int j = i; j < n; j++) {
			mine[j] = !done[j] && ops[j].comm == ops[i].comm;
			done[j] |= mine[j];
			m += mine[j];
		}
		r = emu_submit_comm(ops, n, mine, m);
		memset(mine, 0, (size_t)n);
	}
	free(done);
	free(mine);
	return r;
}

static ncclResult_t emu_op_call(struct emu_ncclop o)
{
	ncclResult_t r = emu_op_check(&o);
	if (r || o.count == 0)
		return r; /* nothing to move: NCCL does nothing either */
	if (emu_grp.depth == 0)
		return emu_submit(&o, 1);
	if (emu_grp.nops == emu_grp.cap) {
		int cap = emu_grp.cap ? emu_grp.cap * 2 : 16;
		struct emu_ncclop *a = realloc(emu_grp.ops, (size_t)cap * sizeof *a);
		if (!a)
			return emu_fail(ncclSystemError, "%s: out of memory", emu_op_names[o.kind]);
		emu_grp.ops = a;
		emu_grp.cap = cap;
	}
	emu_grp.ops[emu_grp.nops++] = o;
	return ncclSuccess;
}

ncclResult_t ncclGroupStart(void)
{
	emu_grp.depth++;
	return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void)
{
	if (emu_grp.depth == 0)
		return emu_fail(ncclInvalidUsage, "ncclGroupEnd: no ncclGroupStart");
	if (--emu_grp.depth > 0)
		return ncclSuccess;
	ncclResult_t r = emu_grp.err;
	if (emu_grp.ninits) {
		ncclResult_t e = emu_run_inits(emu_grp.inits, emu_grp.ninits);
		r = r ? r : e;
	}
	if (emu_grp.nops) {
		ncclResult_t e = emu_submit(emu_grp.ops, emu_grp.nops);
		r = r ? r : e;
	}
	free(emu_grp.ops);
	free(emu_grp.inits);
	memset(&emu_grp, 0, sizeof emu_grp);
	return r;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
	return emu_op_call((struct emu_ncclop){EMU_NCCL_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0,
	                                       comm, stream, NULL});
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           int root, ncclComm_t comm, cudaStream_t stream)
{
	return emu_op_call((struct emu_ncclop){EMU_NCCL_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum,
	                                       root, comm, stream, NULL});
}

ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream)
{
	return emu_op_call((struct emu_ncclop){EMU_NCCL_BROADCAST, buff, buff, count, datatype, ncclSum, root,
	                                       comm, stream, NULL});
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)
{
	return emu_op_call((struct emu_ncclop){EMU_NCCL_REDUCE, sendbuff, recvbuff, count, datatype, op, root,
	                                       comm, stream, NULL});
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream)
{
	return emu_op_call((struct emu_ncclop){EMU_NCCL_ALLGATHER, sendbuff, recvbuff, sendcount, datatype,
	                                       ncclSum, 0, comm, stream, NULL});
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
	return emu_op_call((struct emu_ncclop){EMU_NCCL_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype,
	                                       op, 0, comm, stream, NULL});
}

ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                          ncclComm_t comm, cudaStream_t stream)
{
	return emu_op_call((struct emu_ncclop){EMU_NCCL_ALLTOALL, sendbuff, recvbuff, count, datatype, ncclSum,
	                                       0, comm, stream, NULL});
}

ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream)
{
	return emu_op_call((struct emu_ncclop){EMU_NCCL_GATHER, sendbuff, recvbuff, count, datatype, ncclSum,
	                                       root, comm, stream, NULL});
}

ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream)
{
	return emu_op_call((struct emu_ncclop){EMU_NCCL_SCATTER, sendbuff, recvbuff, count, datatype, ncclSum,
	                                       root, comm, stream, NULL});
}

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
	return emu_op_call((struct emu_ncclop){EMU_NCCL_SEND, sendbuff, NULL, count, datatype, ncclSum, peer,
	                                       comm, stream, NULL});
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
	return emu_op_call((struct emu_ncclop){EMU_NCCL_RECV, NULL, recvbuff, count, datatype, ncclSum, peer,
	                                       comm, stream, NULL});
}
