/*
 * ddlprof trace format, version 5: the one definition shared by the writer
 * (libddlprof) and every reader (analyzer/trace_read.c). man/ddlprof-trace.5
 * is the prose specification of the same bytes.
 *
 * A trace file is one fixed header followed by self-contained chunks, each
 * {magic, type, flags, size, raw_size, crc, hcrc} and a payload. Readers skip
 * chunk types they do not know, so new kinds of records never break old
 * readers. All integers are in the byte order of the writing machine; the
 * header's byte_order field tells a reader which one that was.
 */
#ifndef DDLPROF_TRACE_H
#define DDLPROF_TRACE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Versioning rule: bump DDL_FORMAT_VERSION for any change a reader could
 * notice (new chunk type, new flag, a field added at the end of the file
 * header or of the end record, which readers size by header_size and chunk
 * size). Event and clock records are fixed at 32 and 24 bytes: more fields
 * there take a new chunk type. Bump DDL_FORMAT_MIN_READER only when an old
 * reader would misread the new file (a field moved or changed meaning);
 * additions never need it. Readers refuse files whose min_reader is above
 * their own DDL_FORMAT_VERSION and read every older file.
 */
#define DDL_FORMAT_VERSION    6 /* 3: LZ4 chunks (DDL_CHUNKF_LZ4, DDL_FEAT_LZ4); 4: gloo
                                 * collectives, file reads, the Python hook's steps
                                 * and phases (new kinds and classes, DDL_FEAT_FILE);
                                 * 5: MPI calls (new kinds, classes HWAIT and HCOMM,
                                 * DDL_FEAT_MPI, args.aux of host collectives); the
                                 * open calls (DDL_CHUNK_OPEN, DDL_ARGF_LASTCOLL);
                                 * 6: their stacks (DDL_ARGF_STACK), the Python hook's
                                 * open phases (DDL_CHUNK_OPEN_PHASES); semaphore
                                 * waits (new kinds) */
#define DDL_FORMAT_MIN_READER 1 /* for zstd and raw files */
/* LZ4 files: a reader of version 1 or 2 would skip every events chunk and
 * show an empty job as damaged; it refuses the file instead, saying why. */
#define DDL_FORMAT_MIN_READER_LZ4 3

#define DDL_IDENT             "DDLT"
#define DDL_BYTE_ORDER_MAGIC  0x0A0B0C0Du /* reads as 0x0D0C0B0A on the other order */
#define DDL_CHUNK_MAGIC       0x4B4E4843u /* "CHNK" on little-endian machines */
#define DDL_CHUNK_MAX         (64u << 20) /* no valid chunk payload is larger */
/* A compressed chunk's payload is at most this many times its stored size:
 * the writer stores a chunk raw that would compress further, so a reader
 * refuses a chunk that claims more (a decompression bomb) unread. */
#define DDL_CHUNK_RATIO_MAX   256u
#define DDL_HOST_MAX          64
#define DDL_RUNID_MAX         64

/* Feature bits in the file header: what the writer could produce. */
#define DDL_FEAT_ZSTD   (1u << 0) /* some chunks may be zstd-compressed */
#define DDL_FEAT_SOCKET (1u << 1) /* socket interception was on */
#define DDL_FEAT_CUDA   (1u << 2) /* CUDA runtime/driver interception was on */
#define DDL_FEAT_NCCL   (1u << 3) /* NCCL interception was on */
#define DDL_FEAT_LZ4    (1u << 4) /* some chunks may be LZ4-compressed (version 3) */
#define DDL_FEAT_FILE   (1u << 5) /* file reads were recorded (version 4) */
#define DDL_FEAT_MPI    (1u << 6) /* MPI interception was on (version 5) */

enum ddl_clock_source {
	DDL_CLOCK_MONOTONIC = 1, /* ticks are CLOCK_MONOTONIC nanoseconds */
	DDL_CLOCK_TSC = 2,       /* ticks are the x86 invariant TSC */
};

struct ddl_file_header {
	char ident[4];          /* "DDLT" */
	uint32_t byte_order;    /* DDL_BYTE_ORDER_MAGIC, native order */
	uint16_t version;       /* DDL_FORMAT_VERSION of the writer */
	uint16_t min_reader;    /* oldest reader version able to read this */
	uint32_t header_size;   /* bytes from file start to the first chunk */
	uint64_t features;      /* DDL_FEAT_* */
	uint32_t pid;
	uint32_t ppid;
	int32_t rank;           /* -1 when unknown */
	int32_t world_size;     /* -1 when unknown */
	int32_t local_rank;     /* -1 when unknown */
	uint32_t clock_source;  /* enum ddl_clock_source */
	uint64_t tick_hz;       /* nominal tick rate; sync samples are authoritative */
	uint64_t start_ticks;   /* first clock-sync sample: ticks ... */
	int64_t start_mono_ns;  /* ... CLOCK_MONOTONIC at the same instant ... */
	int64_t start_real_ns;  /* ... and CLOCK_REALTIME */
	uint32_t exec_gen;      /* file number for this host and pid: 0 first, then
	                         * 1, 2, ... for later images (exec) or reused pids */
	uint32_t reserved;
	char host[DDL_HOST_MAX];    /* hostname, NUL-padded */
	char run_id[DDL_RUNID_MAX]; /* job id shared by all ranks, NUL-padded */
	uint32_t pad;
	uint32_t hcrc;          /* CRC32C of the header_size - 4 bytes before it */
};

enum ddl_chunk_type {
	DDL_CHUNK_EVENTS = 1,   /* array of struct ddl_event */
	DDL_CHUNK_STRINGS = 2,  /* struct ddl_strrec, each followed by its text */
	DDL_CHUNK_CLOCK = 3,    /* array of struct ddl_clock_sample */
	DDL_CHUNK_END = 4,      /* struct ddl_end: written on a clean close */
	DDL_CHUNK_EXEC = 5,     /* struct ddl_end: the image called exec */
	DDL_CHUNK_OPEN = 6,     /* the calls threads are blocked in (version 5): events,
	                         * each with its args record; the last one read holds */
	DDL_CHUNK_OPEN_PHASES = 7, /* the Python hook's phases open then (version 6), as
	                         * DDL_CHUNK_OPEN's records; follows each of those */
};

#define DDL_CHUNKF_ZSTD 1u /* payload is one zstd frame of raw_size bytes */
#define DDL_CHUNKF_LZ4  2u /* payload is one LZ4 block (no frame) of raw_size bytes;
                            * at most one codec flag is set (version 3) */

struct ddl_chunk {
	uint32_t magic;    /* DDL_CHUNK_MAGIC */
	uint16_t type;     /* enum ddl_chunk_type; unknown types are skipped */
	uint16_t flags;    /* DDL_CHUNKF_* */
	uint32_t size;     /* payload bytes stored after this header */
	uint32_t raw_size; /* payload bytes once decompressed */
	uint32_t crc;      /* CRC32C of the stored payload */
	uint32_t hcrc;     /* CRC32C of the 20 bytes above */
};

/*
 * Event kinds. X(NAME, "name", class): class tells the analyzer what the
 * call does with bytes. Append only; the numeric value is the position.
 */
enum ddl_class {
	DDL_CLASS_TX = 1, DDL_CLASS_RX, DDL_CLASS_WAIT, DDL_CLASS_CONN, DDL_CLASS_MARK,
	DDL_CLASS_SYNC, /* a thread waiting on another (condition variables) */
	DDL_CLASS_LAUNCH,   /* host side of a kernel (or graph) launch */
	DDL_CLASS_COPY,     /* host side of a memcpy / memset */
	DDL_CLASS_GPUSYNC,  /* host waiting for the device (stream, device, event sync) */
	DDL_CLASS_CUDA,     /* other CUDA calls (set device, malloc, event record) */
	DDL_CLASS_COLL,     /* NCCL collective (incl. point-to-point) issued on a stream */
	DDL_CLASS_NCCL,     /* NCCL group and communicator calls */
	DDL_CLASS_DEVICE,   /* an interval on the device (event pair or CUPTI) */
	DDL_CLASS_ARGS,     /* not an event: a record that goes with the event before it
	                     * (args, stack) or a reading (counters); tools that do not
	                     * know a record of this class skip it */
	DDL_CLASS_API,      /* a CUDA API call as the device back end saw it (CUPTI's
	                     * runtime and driver records): ties host calls, ours
	                     * or not, to device intervals; not a call of ours */
	DDL_CLASS_HCOLL,    /* a collective that runs on the calling thread (gloo's):
	                     * its event spans the whole operation (version 4) */
	DDL_CLASS_FILE,     /* a read from (or an open of) a regular file (version 4) */
	DDL_CLASS_STEP,     /* the Python hook: one optimizer step, the iteration's end */
	DDL_CLASS_PHASE,    /* the Python hook: a phase of the training thread (data
	                     * wait, forward, backward, ...) or of a loader worker */
	DDL_CLASS_HWAIT,    /* a wait for host operations started before (MPI_Wait and
	                     * kin): the time is the wait's, the bytes the start's (version 5) */
	DDL_CLASS_HCOMM,    /* a host library's start, end and communicator calls (MPI_Init,
	                     * MPI_Comm_split, ...) (version 5) */
};

#define DDL_EVENT_KINDS(X) \
	X(SEND, "send", DDL_CLASS_TX) \
	X(SENDTO, "sendto", DDL_CLASS_TX) \
	X(SENDMSG, "sendmsg", DDL_CLASS_TX) \
	X(SENDMMSG, "sendmmsg", DDL_CLASS_TX) \
	X(RECV, "recv", DDL_CLASS_RX) \
	X(RECVFROM, "recvfrom", DDL_CLASS_RX) \
	X(RECVMSG, "recvmsg", DDL_CLASS_RX) \
	X(RECVMMSG, "recvmmsg", DDL_CLASS_RX) \
	X(READ, "read", DDL_CLASS_RX) \
	X(WRITE, "write", DDL_CLASS_TX) \
	X(READV, "readv", DDL_CLASS_RX) \
	X(WRITEV, "writev", DDL_CLASS_TX) \
	X(CONNECT, "connect", DDL_CLASS_CONN) \
	X(ACCEPT, "accept", DDL_CLASS_CONN) \
	X(ACCEPT4, "accept4", DDL_CLASS_CONN) \
	X(POLL, "poll", DDL_CLASS_WAIT) \
	X(PPOLL, "ppoll", DDL_CLASS_WAIT) \
	X(SELECT, "select", DDL_CLASS_WAIT) \
	X(PSELECT, "pselect", DDL_CLASS_WAIT) \
	X(EPOLL_WAIT, "epoll_wait", DDL_CLASS_WAIT) \
	X(EPOLL_PWAIT, "epoll_pwait", DDL_CLASS_WAIT) \
	X(RANGE_PUSH, "range_push", DDL_CLASS_MARK) \
	X(RANGE_POP, "range_pop", DDL_CLASS_MARK) \
	X(MARK, "mark", DDL_CLASS_MARK) \
	X(COND_WAIT, "cond_wait", DDL_CLASS_SYNC) \
	X(COND_TIMEDWAIT, "cond_timedwait", DDL_CLASS_SYNC) \
	X(COND_CLOCKWAIT, "cond_clockwait", DDL_CLASS_SYNC) \
	X(ARGS, "args", DDL_CLASS_ARGS) \
	X(CUDA_LAUNCH, "cudaLaunchKernel", DDL_CLASS_LAUNCH) \
	X(CUDA_LAUNCH_EX, "cudaLaunchKernelExC", DDL_CLASS_LAUNCH) \
	X(CUDA_LAUNCH_COOP, "cudaLaunchCooperativeKernel", DDL_CLASS_LAUNCH) \
	X(CU_LAUNCH, "cuLaunchKernel", DDL_CLASS_LAUNCH) \
	X(CU_LAUNCH_EX, "cuLaunchKernelEx", DDL_CLASS_LAUNCH) \
	X(CUDA_GRAPH_LAUNCH, "cudaGraphLaunch", DDL_CLASS_LAUNCH) \
	X(CUDA_MEMCPY, "cudaMemcpy", DDL_CLASS_COPY) \
	X(CUDA_MEMCPY_ASYNC, "cudaMemcpyAsync", DDL_CLASS_COPY) \
	X(CUDA_MEMCPY_PEER, "cudaMemcpyPeer", DDL_CLASS_COPY) \
	X(CUDA_MEMCPY_PEER_ASYNC, "cudaMemcpyPeerAsync", DDL_CLASS_COPY) \
	X(CUDA_MEMSET, "cudaMemset", DDL_CLASS_COPY) \
	X(CUDA_MEMSET_ASYNC, "cudaMemsetAsync", DDL_CLASS_COPY) \
	X(CUDA_STREAM_SYNC, "cudaStreamSynchronize", DDL_CLASS_GPUSYNC) \
	X(CUDA_DEVICE_SYNC, "cudaDeviceSynchronize", DDL_CLASS_GPUSYNC) \
	X(CUDA_EVENT_SYNC, "cudaEventSynchronize", DDL_CLASS_GPUSYNC) \
	X(CUDA_STREAM_WAIT_EVENT, "cudaStreamWaitEvent", DDL_CLASS_CUDA) \
	X(CUDA_EVENT_RECORD, "cudaEventRecord", DDL_CLASS_CUDA) \
	X(CUDA_SET_DEVICE, "cudaSetDevice", DDL_CLASS_CUDA) \
	X(CUDA_MALLOC, "cudaMalloc", DDL_CLASS_CUDA) \
	X(CUDA_FREE, "cudaFree", DDL_CLASS_CUDA) \
	X(CUDA_MALLOC_ASYNC, "cudaMallocAsync", DDL_CLASS_CUDA) \
	X(CUDA_FREE_ASYNC, "cudaFreeAsync", DDL_CLASS_CUDA) \
	X(NCCL_ALLREDUCE, "ncclAllReduce", DDL_CLASS_COLL) \
	X(NCCL_BROADCAST, "ncclBroadcast", DDL_CLASS_COLL) \
	X(NCCL_BCAST, "ncclBcast", DDL_CLASS_COLL) \
	X(NCCL_REDUCE, "ncclReduce", DDL_CLASS_COLL) \
	X(NCCL_ALLGATHER, "ncclAllGather", DDL_CLASS_COLL) \
	X(NCCL_REDUCESCATTER, "ncclReduceScatter", DDL_CLASS_COLL) \
	X(NCCL_ALLTOALL, "ncclAlltoAll", DDL_CLASS_COLL) \
	X(NCCL_GATHER, "ncclGather", DDL_CLASS_COLL) \
	X(NCCL_SCATTER, "ncclScatter", DDL_CLASS_COLL) \
	X(NCCL_SEND, "ncclSend", DDL_CLASS_COLL) \
	X(NCCL_RECV, "ncclRecv", DDL_CLASS_COLL) \
	X(NCCL_GROUP_START, "ncclGroupStart", DDL_CLASS_NCCL) \
	X(NCCL_GROUP_END, "ncclGroupEnd", DDL_CLASS_NCCL) \
	X(NCCL_COMM_INIT_RANK, "ncclCommInitRank", DDL_CLASS_NCCL) \
	X(NCCL_COMM_INIT_RANK_CONFIG, "ncclCommInitRankConfig", DDL_CLASS_NCCL) \
	X(NCCL_COMM_INIT_ALL, "ncclCommInitAll", DDL_CLASS_NCCL) \
	X(NCCL_COMM_SPLIT, "ncclCommSplit", DDL_CLASS_NCCL) \
	X(NCCL_COMM_DESTROY, "ncclCommDestroy", DDL_CLASS_NCCL) \
	X(NCCL_COMM_ABORT, "ncclCommAbort", DDL_CLASS_NCCL) \
	X(DEV_KERNEL, "kernel", DDL_CLASS_DEVICE) \
	X(DEV_MEMCPY, "memcpy", DDL_CLASS_DEVICE) \
	X(DEV_MEMSET, "memset", DDL_CLASS_DEVICE) \
	X(DEV_COLL, "collective", DDL_CLASS_DEVICE) \
	X(DEV_GRAPH, "graph", DDL_CLASS_DEVICE) \
	X(NCCL_COMM_INIT_RANK_SCALABLE, "ncclCommInitRankScalable", DDL_CLASS_NCCL) \
	X(NCCL_COMM_SHRINK, "ncclCommShrink", DDL_CLASS_NCCL) \
	X(RANGE_START, "range_start", DDL_CLASS_MARK) \
	X(RANGE_END, "range_end", DDL_CLASS_MARK) \
	X(STACK, "stack", DDL_CLASS_ARGS) \
	X(COUNTER, "counter", DDL_CLASS_ARGS) \
	X(CUDA_API, "cuda_api", DDL_CLASS_API) \
	X(GLOO_ALLREDUCE, "gloo_allreduce", DDL_CLASS_HCOLL) \
	X(GLOO_BROADCAST, "gloo_broadcast", DDL_CLASS_HCOLL) \
	X(GLOO_REDUCE, "gloo_reduce", DDL_CLASS_HCOLL) \
	X(GLOO_ALLGATHER, "gloo_allgather", DDL_CLASS_HCOLL) \
	X(GLOO_ALLGATHERV, "gloo_allgatherv", DDL_CLASS_HCOLL) \
	X(GLOO_GATHER, "gloo_gather", DDL_CLASS_HCOLL) \
	X(GLOO_SCATTER, "gloo_scatter", DDL_CLASS_HCOLL) \
	X(GLOO_ALLTOALL, "gloo_alltoall", DDL_CLASS_HCOLL) \
	X(GLOO_ALLTOALLV, "gloo_alltoallv", DDL_CLASS_HCOLL) \
	X(GLOO_BARRIER, "gloo_barrier", DDL_CLASS_HCOLL) \
	X(FILE_READ, "file_read", DDL_CLASS_FILE) \
	X(FILE_PREAD, "file_pread", DDL_CLASS_FILE) \
	X(FILE_OPEN, "file_open", DDL_CLASS_FILE) \
	X(PY_STEP, "step", DDL_CLASS_STEP) \
	X(PY_PHASE, "phase", DDL_CLASS_PHASE) \
	X(MPI_INIT, "MPI_Init", DDL_CLASS_HCOMM) \
	X(MPI_INIT_THREAD, "MPI_Init_thread", DDL_CLASS_HCOMM) \
	X(MPI_FINALIZE, "MPI_Finalize", DDL_CLASS_HCOMM) \
	X(MPI_ALLREDUCE, "MPI_Allreduce", DDL_CLASS_HCOLL) \
	X(MPI_IALLREDUCE, "MPI_Iallreduce", DDL_CLASS_HCOLL) \
	X(MPI_REDUCE, "MPI_Reduce", DDL_CLASS_HCOLL) \
	X(MPI_BCAST, "MPI_Bcast", DDL_CLASS_HCOLL) \
	X(MPI_ALLGATHER, "MPI_Allgather", DDL_CLASS_HCOLL) \
	X(MPI_ALLGATHERV, "MPI_Allgatherv", DDL_CLASS_HCOLL) \
	X(MPI_REDUCE_SCATTER, "MPI_Reduce_scatter", DDL_CLASS_HCOLL) \
	X(MPI_REDUCE_SCATTER_BLOCK, "MPI_Reduce_scatter_block", DDL_CLASS_HCOLL) \
	X(MPI_ALLTOALL, "MPI_Alltoall", DDL_CLASS_HCOLL) \
	X(MPI_ALLTOALLV, "MPI_Alltoallv", DDL_CLASS_HCOLL) \
	X(MPI_BARRIER, "MPI_Barrier", DDL_CLASS_HCOLL) \
	X(MPI_SEND, "MPI_Send", DDL_CLASS_HCOLL) \
	X(MPI_RECV, "MPI_Recv", DDL_CLASS_HCOLL) \
	X(MPI_ISEND, "MPI_Isend", DDL_CLASS_HCOLL) \
	X(MPI_IRECV, "MPI_Irecv", DDL_CLASS_HCOLL) \
	X(MPI_WAIT, "MPI_Wait", DDL_CLASS_HWAIT) \
	X(MPI_WAITALL, "MPI_Waitall", DDL_CLASS_HWAIT) \
	X(MPI_WAITANY, "MPI_Waitany", DDL_CLASS_HWAIT) \
	X(MPI_WAITSOME, "MPI_Waitsome", DDL_CLASS_HWAIT) \
	X(MPI_TEST, "MPI_Test", DDL_CLASS_HWAIT) \
	X(MPI_TESTALL, "MPI_Testall", DDL_CLASS_HWAIT) \
	X(MPI_COMM_SPLIT, "MPI_Comm_split", DDL_CLASS_HCOMM) \
	X(MPI_COMM_SPLIT_TYPE, "MPI_Comm_split_type", DDL_CLASS_HCOMM) \
	X(MPI_COMM_DUP, "MPI_Comm_dup", DDL_CLASS_HCOMM) \
	X(MPI_COMM_CREATE, "MPI_Comm_create", DDL_CLASS_HCOMM) \
	X(MPI_COMM_FREE, "MPI_Comm_free", DDL_CLASS_HCOMM) \
	X(SEM_WAIT, "sem_wait", DDL_CLASS_SYNC) \
	X(SEM_TIMEDWAIT, "sem_timedwait", DDL_CLASS_SYNC) \
	X(SEM_CLOCKWAIT, "sem_clockwait", DDL_CLASS_SYNC)

/* Kinds 0xf0 to 0xff are never written to a file: the library keeps them for its own use. */
enum ddl_event_kind {
	DDL_EV_NONE = 0,
#define DDL_X_ENUM(n, s, c) DDL_EV_##n,
	DDL_EVENT_KINDS(DDL_X_ENUM)
#undef DDL_X_ENUM
	DDL_EV_COUNT
};

/* Event flags. */
#define DDL_EVF_LONG     0x01u /* dur is in units of 2^16 ticks */
#define DDL_EVF_SOCKWAIT 0x02u /* a wait that included a socket */
#define DDL_EVF_PEEK     0x04u /* MSG_PEEK: data looked at, not consumed */
#define DDL_EVF_EVPAIR   0x08u /* device interval from a CUDA event pair */
#define DDL_EVF_CUPTI    0x10u /* device interval from a CUPTI activity record */
#define DDL_EVF_ARGS     0x20u /* an args record (DDL_EV_ARGS) follows this event */
#define DDL_EVF_RUN      0x40u /* device interval of a run of kernels on one stream,
                                * from the launch whose corr it carries to the next
                                * other work on that stream */
#define DDL_EVF_STACK    0x80u /* a stack record (DDL_EV_STACK) follows this event
                                * (after its args record, if it has one) */
#define DDL_DUR_LONG_SHIFT 16

/*
 * One intercepted call, 32 bytes. result is bytes moved for data calls,
 * the return value for waits and accept, 0 for connect, or -errno.
 * Marker events (ddlprof.h) have dur 0, result the name's DDL_STR_NAME id
 * (0 for range_pop) and fd -1. NVTX start/end ranges (range_start,
 * range_end) carry the range's number in fd instead, which pairs them: they
 * do not nest, and the end may be on another thread.
 * fd is the descriptor, except: poll/ppoll, the number of descriptors;
 * select/pselect, nfds (highest descriptor + 1); epoll waits, the epoll
 * descriptor; accept, the listening socket (the new one is in result).
 */
struct ddl_event {
	uint64_t start; /* ticks, see clock_source */
	uint32_t dur;   /* ticks, or 2^16-tick units with DDL_EVF_LONG */
	uint8_t kind;   /* enum ddl_event_kind */
	uint8_t flags;  /* DDL_EVF_* */
	uint16_t tid;   /* thread index within the process (DDL_STR_THREAD) */
	int64_t result;
	int32_t fd;
	uint32_t peer;  /* peer index (DDL_STR_PEER), 0 = unknown */
};

/*
 * GPU calls (classes LAUNCH, COPY, GPUSYNC, CUDA, COLL, NCCL) use the event's
 * fields as: result = the call's return code (cudaError_t, CUresult or
 * ncclResult_t; 0 = success), fd = the CUDA device current on the calling
 * thread, peer = the stream (DDL_STR_STREAM id; 0 = the default stream).
 * Their other arguments are in the args record that follows (DDL_EVF_ARGS).
 *
 * Device intervals (class DEVICE) are written by the library's GPU thread:
 * start and dur on the trace clock, tid = the thread that issued the work,
 * fd = device, peer = stream, result = the issuing call's args.corr (event
 * pairs, DDL_EVF_EVPAIR) or CUPTI's correlation id (DDL_EVF_CUPTI). A
 * DEV_COLL interval covers one collective, or a whole ncclGroupStart/End
 * group on that stream (then corr is the ncclGroupEnd call's).
 */
struct ddl_args {
	uint64_t bytes;  /* bytes moved or allocated; launches: blocks in the grid */
	uint32_t name;   /* DDL_STR_NAME id of the kernel; 0 none */
	uint8_t kind;    /* DDL_EV_ARGS, at the same offset as an event's kind */
	uint8_t op;      /* NCCL reduction op; cudaMemcpyKind */
	uint8_t dtype;   /* NCCL data type */
	uint8_t flags;   /* DDL_ARGF_* */
	uint32_t corr;   /* per-thread call number; device intervals refer to it;
	                    0 on launches not timed on the device (ddlprof-trace(5)) */
	uint32_t comm;   /* DDL_STR_COMM id; 0 none */
	int32_t peer;    /* NCCL root or peer rank; peer copies: destination device; -1 */
	uint32_t aux;    /* launches: threads per block; peer copies: source device;
	                    MPI calls: the call's number in its communicator's sequence
	                    (below); 0 none */
};

#define DDL_ARGF_TIMED   0x01u /* a device interval was requested for this call */
#define DDL_ARGF_GROUPED 0x02u /* issued inside ncclGroupStart/End */
#define DDL_ARGF_LASTCOLL 0x04u /* open calls: comm, aux and corr (its kind) are the
                                 * last collective the thread issued, not one it is in */
#define DDL_ARGF_STACK    0x08u /* open calls (ddlprof --backtrace): name is the
                                 * DDL_STR_STACK id of the stack the call was made from */

/*
 * Call stacks (ddlprof --backtrace): a communication or synchronisation
 * call recorded with DDL_EVF_STACK is followed by this record, which names
 * the stack it was called from. Each distinct stack is interned once, as a
 * DDL_STR_STACK string; its frames name their modules (DDL_STR_MODULE).
 */
struct ddl_stackrec {
	uint64_t reserved0; /* 0 */
	uint32_t stack;     /* DDL_STR_STACK id (>= 1) */
	uint8_t kind;       /* DDL_EV_STACK, at the same offset as an event's kind */
	uint8_t flags;      /* 0 */
	uint16_t tid;       /* the event's thread index */
	uint64_t reserved[2]; /* 0 */
};

/*
 * Counter readings (ddlprof --papi) are events of kind DDL_EV_COUNTER of
 * their own: start = when read, dur = 0, tid = the thread counted, result =
 * the counter's value (a running total since the thread's counters
 * started), fd = the counter (DDL_STR_COUNTER id), peer = 0. A thread's
 * counters are read at each of its marker events (range push and pop,
 * marks, NVTX ranges), just before the marker's own event.
 */

/*
 * Host collectives (class HCOLL, gloo's): start and dur span the whole
 * operation on the thread that ran it (a gloo worker of the process group);
 * result = 0, fd = -1, peer = 0. The args record that follows gives bytes
 * (this rank's contribution: the reduced buffer, the broadcast or gathered
 * input), dtype = bytes per element, comm = the communicator (DDL_STR_COMM,
 * how=gloo), peer = the root rank or -1, aux = its number in the
 * communicator's sequence (version 5; 0 before); corr is 0.
 *
 * MPI's calls (version 5) are host collectives too (class HCOLL: the
 * collectives, blocking point-to-point and the nonblocking starts), with
 * result = the MPI return code (0 MPI_SUCCESS), fd = -1, peer = 0, on the
 * calling thread. Their args: bytes = what this rank puts in (count x type
 * size: its send buffer; a broadcast's buffer on every rank; a receive,
 * what arrived; a nonblocking receive, what it can take), dtype = bytes
 * per element (0 past 255), comm = the communicator (how=mpi), peer = the
 * root, or the peer's rank in the communicator for point-to-point (-1 any
 * source not known, -2 MPI_PROC_NULL), aux = the call's number in its
 * communicator's sequence, from 1, counted alike on every member:
 * collectives (and the communicator calls made on it) in one sequence per
 * communicator; point-to-point in one per (communicator, peer, direction),
 * the n-th send to a peer matching that peer's n-th receive from us
 * (receives from MPI_ANY_SOURCE started nonblocking count apart, as peer
 * -1). The number is taken as the call begins, when the communicator is
 * known then (a call that fails keeps it, and has no bytes), else once it
 * succeeded: a communicator first met in use is numbered from that call.
 * A blocking call is the thread's open call while it runs (DDL_CHUNK_OPEN)
 * with its communicator and number (a wait: its start's, when that is a
 * collective's). Waits (class HWAIT: MPI_Wait,
 * Waitall, Waitany, Waitsome, and MPI_Test, Testall when they complete)
 * are the time spent waiting; their args describe the first request they
 * completed whose start was recorded on the same thread: op = that start's
 * kind, comm, peer and aux its; bytes 0 (they were the start's); corr =
 * the requests completed; fd = the requests given. Communicator calls
 * (class HCOMM): comm = the communicator the call ran on (MPI_Init:
 * MPI_COMM_WORLD), aux its sequence number, name = the DDL_STR_COMM id of
 * the communicator made (0 none), peer = this rank in it.
 *
 * File reads (class FILE): read, readv, pread and preadv on a regular file,
 * and opens of files (not of /dev/shm): result = bytes read (opens: the
 * descriptor) or -errno, fd = the descriptor, peer = 0.
 *
 * The Python hook (class STEP and PHASE), through the entry points of
 * include/ddlprof/python.h: a step event spans one optimizer's step() call
 * and ends an iteration; result = the process's step count, fd = the
 * optimizer (0, 1, ... in order of first step). A phase event spans one
 * phase: fd = enum ddl_phase, result = its value (below). A phase of
 * DDL_PHASE_COLLECTIVE (a torch.distributed call) has an args record as a
 * host collective's, op = enum ddl_pyop, with comm a DDL_STR_COMM of
 * how=torch naming the process group's ranks.
 */
enum ddl_phase {
	DDL_PHASE_DATA_WAIT = 1,  /* the training thread in next() on a DataLoader
	                           * iterator; result = the batch number */
	DDL_PHASE_FORWARD = 2,    /* DistributedDataParallel.forward */
	DDL_PHASE_BACKWARD = 3,   /* the outermost backward() on the thread */
	DDL_PHASE_BATCH = 4,      /* a loader fetching and collating one batch (a
	                           * worker process, or the training thread when
	                           * the loader has none); result = batch index */
	DDL_PHASE_COLLECTIVE = 5, /* a torch.distributed call; result = 1 async */
};

enum ddl_pyop {
	DDL_PYOP_ALLREDUCE = 1, DDL_PYOP_BROADCAST, DDL_PYOP_REDUCE, DDL_PYOP_ALLGATHER,
	DDL_PYOP_GATHER, DDL_PYOP_SCATTER, DDL_PYOP_REDUCESCATTER, DDL_PYOP_ALLTOALL,
	DDL_PYOP_BARRIER, DDL_PYOP_SEND, DDL_PYOP_RECV,
};

/* String records: {id, kind, len, value} then len bytes of text, no NUL. */
enum ddl_str_kind {
	DDL_STR_PEER = 1,   /* id = peer index; value = DDL_PEERF_* | family << 8 */
	DDL_STR_THREAD = 2, /* id = thread index; value = OS thread id; text = name */
	DDL_STR_META = 3,   /* id = sequence; text = "key=value" */
	DDL_STR_NAME = 4,   /* id = name id (markers, kernels); text = the name */
	DDL_STR_STREAM = 5, /* id = stream id; value = device; text = "0x..." handle */
	DDL_STR_COMM = 6,   /* id = communicator id; text = "key=value ..." (ddlprof-trace(5)) */
	DDL_STR_STACK = 7,  /* id = stack id; value = frames; text = one line per frame,
	                     * innermost first: "0xADDR MODULE 0xOFFSET" (MODULE a
	                     * DDL_STR_MODULE id, 0 unknown; OFFSET from its start) */
	DDL_STR_MODULE = 8, /* id = module id; text = "BUILDID PATH" (BUILDID hex, or "-") */
	DDL_STR_COUNTER = 9, /* id = counter id; value = 0 when counted, else the PAPI
	                      * error (negated) that refused it; text = the event's
	                      * name, then for a refused one "\n" and why */
};

#define DDL_PEERF_LOCAL 0x01u /* the peer is on this host */

struct ddl_strrec {
	uint32_t id;
	uint16_t kind;
	uint16_t len;
	uint32_t value;
};

/* A tick reading and the wall clocks at the same instant. */
struct ddl_clock_sample {
	uint64_t ticks;
	int64_t mono_ns;
	int64_t real_ns;
};

enum ddl_end_reason {
	DDL_END_EXIT = 1,   /* normal exit, destructor ran */
	DDL_END_EXEC = 2,   /* image replaced by exec (DDL_CHUNK_EXEC) */
	DDL_END_SIGNAL = 3, /* fatal signal; value = signal number */
	DDL_END_UEXIT = 4,  /* _exit; value = status */
};

struct ddl_end {
	uint64_t events;  /* events written to this file */
	uint64_t dropped; /* events lost because a buffer was full */
	uint32_t reason;  /* enum ddl_end_reason */
	int32_t value;
};

_Static_assert(sizeof(struct ddl_event) == 32, "event record is 32 bytes");
_Static_assert(sizeof(struct ddl_args) == 32, "args record is 32 bytes");
_Static_assert(sizeof(struct ddl_stackrec) == 32, "stack record is 32 bytes");
_Static_assert(offsetof(struct ddl_stackrec, kind) == offsetof(struct ddl_event, kind),
               "stack records and events keep kind at one offset");
_Static_assert(offsetof(struct ddl_args, kind) == offsetof(struct ddl_event, kind),
               "args and events keep kind at one offset");
_Static_assert(sizeof(struct ddl_chunk) == 24, "chunk header is 24 bytes");
_Static_assert(sizeof(struct ddl_strrec) == 12, "string record head is 12 bytes");
_Static_assert(sizeof(struct ddl_file_header) % 8 == 0, "header is 8-byte aligned");

#endif
