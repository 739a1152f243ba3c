/*
 * Private interface of libddlemu, the CPU emulation of the CUDA runtime and
 * NCCL subset (kernels/README.md). Only the real API names (cuda*, cu*,
 * nccl*, __cuda*) are exported; everything declared here is hidden, so calls
 * inside the library never go through a profiler that interposes on the
 * exported names.
 */
#ifndef DDL_EMU_H
#define DDL_EMU_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "ddlemu.h"

#pragma GCC visibility push(hidden)

#define EMU_MAX_DEVICES 64
#define EMU_HOST_MAX 64 /* as DDL_HOST_MAX in the trace format */
#define EMU_UNAME_MAX 48

/* ---- configuration (env.c) ---- */

struct emu_cfg {
	int devices;
	/* bandwidths in bits per second; 0 means "not paced" */
	double pcie_bps, hbm_bps, p2p_bps, intra_bps, net_bps;
	struct in_addr addr; /* address to bind and advertise */
	char host[EMU_HOST_MAX];
};
extern struct emu_cfg emu_cfg;

void emu_init(void);
uint64_t emu_now(void);
struct emu_op;
/* The activity hook's kernel record for op, run on stream number sid of dev from start to end. */
void emu_act_kernel(const struct emu_op *op, int dev, uint32_t sid, uint64_t start, uint64_t end);
void emu_sleep_until(uint64_t t);
/* Nanoseconds that bytes take at bps bits per second (0 when bps is 0). */
uint64_t emu_wire_ns(size_t bytes, double bps);
/* Nonzero in a child forked after worker threads existed. */
extern int emu_forked;
extern atomic_int emu_threads_started;
/* Creates a detached thread with every signal blocked; 0 or an errno. */
int emu_thread_start(void *(*fn)(void *), void *arg);

/* ---- live handles (handle.c) ---- */

struct emu_handles {
	pthread_mutex_t mu;
	uintptr_t *slots;
	size_t cap, used, live;
};
#define EMU_HANDLES_INIT {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0}
/* 0, or -1 without memory. */
int emu_handles_add(struct emu_handles *h, const void *p);
int emu_handles_has(struct emu_handles *h, const void *p);
/* 0, or -1 when p was not there. */
int emu_handles_del(struct emu_handles *h, const void *p);

/* ---- errors (error.c) ---- */

/* Records e as the calling thread's last error when it is one; returns e. */
cudaError_t emu_err(cudaError_t e);

/* ---- devices and memory (device.c, memory.c) ---- */

int emu_device_current(void);
void emu_device_set_current(int dev);
int emu_device_valid(int dev);
/* Waits until every stream of dev has finished what was enqueued before. */
void emu_device_sync(int dev);
void emu_device_sync_all(void);

enum { EMU_MEM_NONE, EMU_MEM_DEVICE, EMU_MEM_HOST };
/* Kind of memory p points into, and its device (-1 for host memory). */
int emu_mem_kind(const void *p, int *dev);
/* Frees device memory from cudaFreeAsync, on the stream's worker. */
void emu_mem_release(void *p);

/* ---- streams (stream.c) ---- */

struct emu_stream;
struct emu_event;
struct emu_ncclwork;

enum emu_op_kind {
	EMU_OP_KERNEL,
	EMU_OP_COPY,
	EMU_OP_SET,
	EMU_OP_RECORD,
	EMU_OP_WAIT_EVENT,
	EMU_OP_WAIT_STREAM,
	EMU_OP_HOSTFN,
	EMU_OP_CALLBACK,
	EMU_OP_FREE,
	EMU_OP_NCCL,
};

struct emu_op {
	struct emu_op *next;
	enum emu_op_kind kind;
	int pooled; /* EMU_OP_POOLED bytes long, kept for reuse when done (stream.c) */
	uint64_t seq;
	uint64_t enq_ns; /* when it was enqueued: the earliest the device can start it */
	union {
		struct {
			ddlemu_kernel_fn fn;
			void **args;
			uint32_t corr;    /* activity records: 0 when no hook was set */
			const char *name; /* the same */
			unsigned grid[3], block[3];
		} kern;
		struct { void *dst; const void *src; size_t n; uint64_t ns; } copy;
		struct { void *dst; int val; size_t n; uint64_t ns; } set;
		struct { struct emu_event *ev; uint64_t gen; } ev;
		struct { struct emu_stream *s; uint64_t seq; } sw;
		struct { cudaHostFn_t fn; void *arg; } host;
		struct { cudaStreamCallback_t fn; void *arg; cudaStream_t h; } cb;
		struct { void *p; } free;
		struct { struct emu_ncclwork *w; } nccl;
	} u;
	/* a kernel's argument copies follow the op in the same allocation */
};

/* Allocates an op with extra bytes after it (zeroed); NULL without memory.
 * free() releases one that was never pushed. */
struct emu_op *emu_op_new(enum emu_op_kind kind, size_t extra);
/*
 * Resolves a handle (NULL, cudaStreamLegacy and cudaStreamPerThread mean the
 * current device's legacy default stream). Returns cudaSuccess or
 * cudaErrorInvalidResourceHandle.
 */
cudaError_t emu_stream_get(cudaStream_t h, struct emu_stream **out);
/* The same, with NULL meaning the legacy stream of device dev. */
cudaError_t emu_stream_get_dev(cudaStream_t h, int dev, struct emu_stream **out);
/* Appends op (which it then owns); returns its sequence number. */
uint64_t emu_stream_push(struct emu_stream *s, struct emu_op *op);
/* Sequence number of the last op enqueued so far. */
uint64_t emu_stream_tail(struct emu_stream *s);
void emu_stream_wait(struct emu_stream *s, uint64_t seq);
/*
 * Whether s has nothing enqueued or running, and nothing it would wait for
 * implicitly (legacy-stream synchronisation): work pushed now would start
 * at once.
 */
int emu_stream_idle(struct emu_stream *s);
void emu_stream_ref(struct emu_stream *s);
void emu_stream_unref(struct emu_stream *s);
int emu_stream_device(struct emu_stream *s);

/* ---- events (event.c) ---- */

/* Completes record gen of ev with device time ts. */
void emu_event_complete(struct emu_event *ev, uint64_t gen, uint64_t ts);
/* Waits for record gen of ev; returns the device time of the newest completed record. */
uint64_t emu_event_wait(struct emu_event *ev, uint64_t gen);
void emu_event_unref(struct emu_event *ev);

/* ---- kernels (launch.c) ---- */

/* CORR: the launch call's activity correlation id, 0 without a hook. */
cudaError_t emu_launch(const void *func, dim3 grid, dim3 block, void **args, void **extra,
                       size_t shmem, cudaStream_t stream, uint32_t corr);

/* ---- NCCL (nccl.c, net.c, coll.c, reduce.c) ---- */

struct emu_peer {
	struct in_addr ip;
	uint16_t port; /* TCP listener, network order */
	char host[EMU_HOST_MAX];
	char uname[EMU_UNAME_MAX]; /* abstract Unix listener name */
};

struct emu_conn {
	int fd; /* -1 until connected */
	int intra;
};

struct ncclComm {
	int rank, nranks, dev;
	uint64_t nonce;
	int lfd_tcp, lfd_unix;
	struct emu_peer *peers;
	struct emu_conn *conns;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t issued, executed; /* ops take turns in issue order */
	ncclResult_t async_err;
	int aborting;
	unsigned splits;  /* ncclCommSplit calls so far: the same on every rank */
	/*
	 * Device time of the operation that has the turn (coll.c): when it
	 * started (its stream reached it and the previous one had ended), the
	 * end of the last link slot it reserved, and the previous one's end.
	 */
	uint64_t op_start, sched_end, last_end;
	/* working buffers of the collectives, kept from one operation to the next (coll.c) */
	char *scratch[2];
	size_t scratch_cap[2];
	int init_pending; /* initialised at ncclGroupEnd */
	char errmsg[160];
};

struct emu_ncclop {
	int kind; /* EMU_NCCL_* */
	const void *sendbuff;
	void *recvbuff;
	size_t count;
	ncclDataType_t type;
	ncclRedOp_t op;
	int peer; /* root or peer */
	struct ncclComm *comm;
	cudaStream_t stream;
	struct emu_stream *s; /* stream, resolved at the call */
};

enum {
	EMU_NCCL_ALLREDUCE,
	EMU_NCCL_BROADCAST,
	EMU_NCCL_REDUCE,
	EMU_NCCL_ALLGATHER,
	EMU_NCCL_REDUCESCATTER,
	EMU_NCCL_ALLTOALL,
	EMU_NCCL_GATHER,
	EMU_NCCL_SCATTER,
	EMU_NCCL_SEND,
	EMU_NCCL_RECV,
};

/* Everything one communicator does for one group, run by a stream worker. */
struct emu_ncclwork {
	struct ncclComm *comm;
	uint64_t seq;
	int nops;
	struct emu_ncclop ops[];
};

/* Runs w on its stream's worker, started on the device at `start`; returns its device end. */
uint64_t emu_nccl_run(struct emu_ncclwork *w, uint64_t start);

/* comm.c: communicator lifetime; each returns a ncclResult_t. */
/* Whether c is a communicator handed out and not destroyed. */
int emu_comm_valid(const struct ncclComm *c);
ncclResult_t emu_uid_new(ncclUniqueId *id);
struct ncclComm *emu_comm_alloc(void);
void emu_comm_free(struct ncclComm *c);
ncclResult_t emu_comm_init(struct ncclComm *c, int nranks, const ncclUniqueId *uid, int rank, int dev);
ncclResult_t emu_comm_split(struct ncclComm *c, int color, int key, struct ncclComm **out);
ncclResult_t emu_comm_destroy(struct ncclComm *c);
ncclResult_t emu_comm_abort(struct ncclComm *c);
ncclResult_t emu_comm_finalize(struct ncclComm *c);
/* The next operation number of c (its turn). */
uint64_t emu_comm_take_turn(struct ncclComm *c);
/* Waits for the turn of op seq on comm; 0, or -1 when the comm is aborting. */
int emu_comm_turn_wait(struct ncclComm *c, uint64_t seq);
void emu_comm_turn_done(struct ncclComm *c);
void emu_comm_fail(struct ncclComm *c, ncclResult_t r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

size_t emu_type_size(ncclDataType_t t);
/* dst[i] = dst[i] OP src[i] (the two do not overlap); 0, or -1 for a type or op it cannot reduce. */
int emu_reduce(void *dst, const void *src, size_t count, ncclDataType_t t, ncclRedOp_t op);
int emu_reduce_ok(ncclDataType_t t, ncclRedOp_t op);
/* dst[i] /= n, for ncclAvg. */
void emu_divide(void *dst, size_t count, ncclDataType_t t, int n);

/* net.c: sockets, pacing and the transfer engine. */
int emu_listen_tcp(struct in_addr ip, uint16_t *port);
int emu_listen_unix(char name[EMU_UNAME_MAX]);
int emu_connect_tcp(struct in_addr ip, uint16_t port);
int emu_connect_unix(const char *name);
int emu_write_full(int fd, const void *buf, size_t n);
int emu_read_full(int fd, void *buf, size_t n);
/* Reads exactly n bytes within timeout_ms (-1: no limit); 0 or -1. */
int emu_read_full_timeout(int fd, void *buf, size_t n, int timeout_ms);
uint64_t emu_random64(void);
/* Makes sure comm has connections to the given peers (ranks). 0 or -1. */
int emu_comm_connect(struct ncclComm *c, const int *peers, int n);

struct emu_xfer {
	int peer;
	int send;
	char *buf;
	size_t len;
	int after; /* 1 + index of a transfer that must finish first (data dependency), or 0 */
	/*
	 * A receive with red_dst reduces buf into red_dst as soon as it is
	 * complete (then divides by red_div when not 0), before any transfer
	 * that comes after it starts.
	 */
	char *red_dst;
	ncclDataType_t red_type;
	ncclRedOp_t red_op;
	int red_div;
	/* engine state */
	int prev; /* the previous transfer with the same peer and direction, or -1 */
	size_t hdr_done, done, budget;
	uint64_t ready_at;
	int fin;
	unsigned char hdr[24];
};
/*
 * Moves every transfer concurrently (sends paced; transfers to one peer in
 * one direction in list order; `after` dependencies respected), so a whole
 * ring algorithm runs as one pipelined dataflow. tag identifies the
 * operation on the wire. Returns 0, or a ncclResult_t error after
 * recording it on the comm.
 */
int emu_xfer_run(struct ncclComm *c, struct emu_xfer *x, int n, uint64_t tag);

/* coll.c: ncclComm all-gather of fixed-size records, used by split. */
int emu_coll_allgather_bytes(struct ncclComm *c, void *buf, size_t each, uint64_t tag);

#pragma GCC visibility pop
#endif
