/*
 * Internal interface of libddlprof, the preload library. Everything here is
 * hidden from the profiled program; only the wrappers (DDL_EXPORT) and the
 * marker/test API are visible.
 *
 * Data flow: a wrapper calls ddl_thread_enter(), times the real call with
 * ddl_clock_now(), appends one struct ddl_event to its thread's ring with
 * ddl_ring_put(), and the writer thread (writer.c) drains every ring into
 * chunks of the trace file.
 */
#ifndef DDL_INTERNAL_H
#define DDL_INTERNAL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include "ddlprof/trace.h"

#define DDL_EXPORT __attribute__((visibility("default")))
#define DDL_HIDDEN __attribute__((visibility("hidden")))
#define ddl_likely(x) __builtin_expect(!!(x), 1)
#define ddl_unlikely(x) __builtin_expect(!!(x), 0)

/*
 * Tables the library may never need (descriptors past the first thousand,
 * peers, names, GPU handles, stacks) are mapped on first use, not kept in
 * .bss, so the program's address space (RLIMIT_AS) pays only for what is
 * used. ddl_lazy returns *SLOT, mapping BYTES of zeros there first when it
 * is empty; of two racing threads the loser unmaps its copy. NULL when the
 * mapping fails: the caller records without the table. Async-signal-safe.
 */
void *ddl_lazy_map(void *_Atomic *slot, size_t bytes) DDL_HIDDEN;
static inline void *ddl_lazy(void *_Atomic *slot, size_t bytes)
{
	void *p = atomic_load_explicit(slot, memory_order_acquire);
	return ddl_likely(p != NULL) ? p : ddl_lazy_map(slot, bytes);
}

/*
 * Every libc function we interpose, with its type, one X-list per family:
 * X(name, ret, params). The real versions live in one table, resolved once
 * with dlsym(RTLD_NEXT); tests may point an entry at a fake through
 * ddl_real_set(). The GPU families (CUDA runtime, driver, NCCL) have their
 * lists in gpu.h, resolved per entry on first use.
 */
/* Sockets, descriptors and the waits on them (socket.c) */
#define DDL_SOCKET_HOOKS(X) \
	X(send, ssize_t, (int, const void *, size_t, int)) \
	X(sendto, ssize_t, (int, const void *, size_t, int, const struct sockaddr *, socklen_t)) \
	X(sendmsg, ssize_t, (int, const struct msghdr *, int)) \
	X(sendmmsg, int, (int, struct mmsghdr *, unsigned int, int)) \
	X(recv, ssize_t, (int, void *, size_t, int)) \
	X(recvfrom, ssize_t, (int, void *, size_t, int, struct sockaddr *, socklen_t *)) \
	X(recvmsg, ssize_t, (int, struct msghdr *, int)) \
	X(recvmmsg, int, (int, struct mmsghdr *, unsigned int, int, struct timespec *)) \
	X(read, ssize_t, (int, void *, size_t)) \
	X(__read_chk, ssize_t, (int, void *, size_t, size_t)) \
	X(__recv_chk, ssize_t, (int, void *, size_t, size_t, int)) \
	X(__recvfrom_chk, ssize_t, (int, void *, size_t, size_t, int, struct sockaddr *, socklen_t *)) \
	X(__poll_chk, int, (struct pollfd *, nfds_t, int, size_t)) \
	X(__ppoll_chk, int, (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *, size_t)) \
	X(write, ssize_t, (int, const void *, size_t)) \
	X(readv, ssize_t, (int, const struct iovec *, int)) \
	X(writev, ssize_t, (int, const struct iovec *, int)) \
	X(connect, int, (int, const struct sockaddr *, socklen_t)) \
	X(accept, int, (int, struct sockaddr *, socklen_t *)) \
	X(accept4, int, (int, struct sockaddr *, socklen_t *, int)) \
	X(poll, int, (struct pollfd *, nfds_t, int)) \
	X(ppoll, int, (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *)) \
	X(select, int, (int, fd_set *, fd_set *, fd_set *, struct timeval *)) \
	X(pselect, int, (int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *)) \
	X(epoll_wait, int, (int, struct epoll_event *, int, int)) \
	X(epoll_pwait, int, (int, struct epoll_event *, int, int, const sigset_t *)) \
	X(epoll_ctl, int, (int, int, int, struct epoll_event *)) \
	X(socket, int, (int, int, int)) \
	X(socketpair, int, (int, int, int, int *)) \
	X(close, int, (int)) \
	X(dup2, int, (int, int)) \
	X(dup3, int, (int, int, int)) \
	X(close_range, int, (unsigned int, unsigned int, int)) \
	X(closefrom, void, (int)) \
	X(dup, int, (int)) \
	X(fcntl, int, (int, int, ...)) \
	X(fcntl64, int, (int, int, ...)) \
	X(fclose, int, (FILE *))

/* Processes: exec, exit, signals, namespaces (process.c, signal.c) */
#define DDL_PROCESS_HOOKS(X) \
	X(execve, int, (const char *, char *const[], char *const[])) \
	X(execv, int, (const char *, char *const[])) \
	X(execvp, int, (const char *, char *const[])) \
	X(execvpe, int, (const char *, char *const[], char *const[])) \
	X(execveat, int, (int, const char *, char *const[], char *const[], int)) \
	X(fexecve, int, (int, char *const[], char *const[])) \
	X(_exit, void, (int)) \
	X(_Exit, void, (int)) \
	X(sigaction, int, (int, const struct sigaction *, struct sigaction *)) \
	X(sigaltstack, int, (const stack_t *, stack_t *)) \
	X(signal, sighandler_t, (int, sighandler_t)) \
	X(unshare, int, (int)) \
	X(setns, int, (int, int)) \
	X(daemon, int, (int, int))

/* Waits of threads on each other (sync.c) */
#define DDL_THREAD_HOOKS(X) \
	X(pthread_cond_wait, int, (pthread_cond_t *, pthread_mutex_t *)) \
	X(pthread_cond_timedwait, int, (pthread_cond_t *, pthread_mutex_t *, const struct timespec *)) \
	X(pthread_cond_clockwait, int, (pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *)) \
	X(sem_wait, int, (sem_t *)) \
	X(sem_timedwait, int, (sem_t *, const struct timespec *)) \
	X(sem_clockwait, int, (sem_t *, clockid_t, const struct timespec *))

/* Files read for input data (file.c) */
#define DDL_FILE_HOOKS(X) \
	X(open, int, (const char *, int, ...)) \
	X(open64, int, (const char *, int, ...)) \
	X(openat, int, (int, const char *, int, ...)) \
	X(openat64, int, (int, const char *, int, ...)) \
	X(pread, ssize_t, (int, void *, size_t, off_t)) \
	X(pread64, ssize_t, (int, void *, size_t, off_t)) \
	X(preadv, ssize_t, (int, const struct iovec *, int, off_t)) \
	X(preadv64, ssize_t, (int, const struct iovec *, int, off_t)) \
	X(__pread_chk, ssize_t, (int, void *, size_t, off_t, size_t)) \
	X(__pread64_chk, ssize_t, (int, void *, size_t, off_t, size_t))

#define DDL_HOOKS(X) DDL_SOCKET_HOOKS(X) DDL_PROCESS_HOOKS(X) DDL_THREAD_HOOKS(X) DDL_FILE_HOOKS(X)

struct ddl_real {
#define DDL_X_FIELD(n, r, p) r(*n) p;
	DDL_HOOKS(DDL_X_FIELD)
#undef DDL_X_FIELD
};
extern struct ddl_real ddl_real DDL_HIDDEN;
void ddl_real_resolve(void) DDL_HIDDEN;
/* An entry of a table of real functions: its name, its family, its slot. */
struct ddl_hook_entry {
	const char *name, *family;
	void **slot;
};
/*
 * The real NAME where RTLD_NEXT cannot see it: a library loaded RTLD_LOCAL
 * (by a Python extension, say) is not in the global scope, though its users
 * bind to our exports; then every loaded object but ours is asked in turn.
 * NULL when no object has it. Cold path: once per wrapper.
 */
void *ddl_real_find(const char *name) DDL_HIDDEN;

/* DDLPROF_COMPRESS: the writer falls back to the other codec, then none,
 * when the library of the one asked for cannot be loaded (writer.c). */
enum ddl_compress { DDL_COMPRESS_NONE = 0, DDL_COMPRESS_LZ4 = 1, DDL_COMPRESS_ZSTD = 2 };

/* Settings from DDLPROF_* variables, parsed once in the constructor. */
struct ddl_settings {
	char dir[4096];
	char run_id[DDL_RUNID_MAX];
	unsigned flush_ms;       /* DDLPROF_FLUSH_MS: writer period */
	unsigned ring_events;    /* DDLPROF_BUFFER_EVENTS: per-thread ring, power of 2 */
	int compress;            /* DDLPROF_COMPRESS: enum ddl_compress, the codec asked for */
	int quiet;               /* DDLPROF_QUIET */
	int trace_socket;        /* "socket" in DDLPROF_TRACE */
	int trace_cuda;          /* "cuda" in DDLPROF_TRACE */
	int trace_nccl;          /* "nccl" in DDLPROF_TRACE */
	int trace_nvtx;          /* "nvtx" in DDLPROF_TRACE: NVTX injection (nvtx.c) */
	int trace_gloo;          /* "gloo" in DDLPROF_TRACE: gloo's collectives (gloo.c) */
	int trace_file;          /* "file" in DDLPROF_TRACE: reads and opens of files */
	int trace_mpi;           /* "mpi" in DDLPROF_TRACE: MPI's calls (mpi.c) */
	unsigned kernel_sample;  /* DDLPROF_KERNEL_SAMPLE: time 1 launch in N (0 never) */
	int cupti;               /* DDLPROF_CUPTI: -1 auto (when a GPU is present), 0, 1 */
	int clock;               /* DDLPROF_CLOCK: 0 auto, or enum ddl_clock_source */
	unsigned backtrace;      /* DDLPROF_BACKTRACE: frames of call stacks, 0 off (unwind.c) */
	char papi[512];          /* DDLPROF_PAPI: counters to read, comma-separated (papi.c) */
	int writer;              /* DDLPROF_WRITER: enum ddl_writer_mode */
	int as_limited;          /* RLIMIT_AS is set (ulimit -v): smaller buffers */
	size_t thread_budget;    /* under it, the bytes of thread buffers we may map (thread.c) */
	long command_pid;        /* DDLPROF_COMMAND_PID: the pid of the launcher's command, or 0 */
	unsigned hang_timeout_s; /* DDLPROF_HANG_TIMEOUT: the watchdog's limit, 0 off (writer.c) */
};

/* Who writes the trace: a thread of the library's (the writer), or, where a
 * thread would cost the program a process (a tight RLIMIT_NPROC), the
 * program's own threads as they record (ddl_writer_inline). */
enum ddl_writer_mode { DDL_WRITER_AUTO = 0, DDL_WRITER_THREAD = 1, DDL_WRITER_INLINE = 2 };

/* Families of recorded calls: the bits of ddl_g.enabled. */
#define DDL_FAM_SOCKET 1u
#define DDL_FAM_MARK   2u /* the marker API, always on with profiling */
#define DDL_FAM_SYNC   4u /* condition-variable waits: where a training thread blocks */
#define DDL_FAM_CUDA   8u /* CUDA runtime and driver calls */
#define DDL_FAM_NCCL  16u /* NCCL calls */
#define DDL_FAM_GLOO  32u /* gloo's collectives (gloo.c) */
#define DDL_FAM_FILE  64u /* reads and opens of regular files (file.c, socket.c) */
#define DDL_FAM_MPI  128u /* MPI's calls (mpi.c) */
/* The Python hook's entry points (python.c): recorded whenever markers
 * are, but no marker event of the API's, so no counter reading (--papi) */
#define DDL_FAM_PY    (DDL_FAM_MARK | 0x80000000u)

/* Global state. enabled is read on every call: the families recording. */
struct ddl_global {
	_Atomic unsigned enabled;
	int initialised;
	struct ddl_settings cfg;
	char host[DDL_HOST_MAX];
	int32_t rank, world_size, local_rank;
	uint32_t exec_gen;
	pid_t pid;               /* the process this state belongs to */
	pid_t ppid;              /* its parent at start */
	struct ddl_clock_sample start; /* taken at start (or fork): the header's */
	int writer_inline;       /* no writer thread: the recording threads write */
};
extern struct ddl_global ddl_g DDL_HIDDEN;

/* ---- clock.c ---- */
extern int ddl_clock_tsc DDL_HIDDEN;
void ddl_clock_init(int want) DDL_HIDDEN;
void ddl_clock_sample(struct ddl_clock_sample *s) DDL_HIDDEN;
uint64_t ddl_clock_hz(void) DDL_HIDDEN;
double ddl_clock_ticks_per_ns(void) DDL_HIDDEN;
extern int64_t ddl_clock_skew_ns DDL_HIDDEN;

static inline uint64_t ddl_clock_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (ddl_likely(ddl_clock_tsc)) {
		uint32_t lo, hi;
		__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
		return ((uint64_t)hi << 32) | lo;
	}
#endif
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The call a thread is blocked in, for the hang report and the watchdog
 * (writer.c): written by the owner before a blocking call and cleared
 * after it, read by the writer. kind last, with release: a reader that
 * sees it sees the rest (and checks that t0 has not moved since). The
 * NCCL wrappers keep the thread's last collective (kind, communicator,
 * sequence) beside it, so that a wait on the device can say what it waits
 * for.
 */
struct ddl_open {
	_Atomic uint64_t t0;
	_Atomic uint32_t kind;    /* enum ddl_event_kind; 0 none */
	_Atomic int32_t fd;
	_Atomic uint32_t peer;
	_Atomic uint32_t comm;    /* host collectives: DDL_STR_COMM id, 0 none */
	_Atomic uint32_t seq;     /* ... and their number in its sequence */
	_Atomic uint64_t bytes;   /* ... and this rank's bytes */
	_Atomic uintptr_t sp;     /* the frame of the call that opened it */
	_Atomic uint32_t last_kind; /* the last collective the thread issued (NCCL) */
	_Atomic uint32_t last_comm, last_seq;
	_Atomic uint32_t stack;   /* --backtrace: the DDL_STR_STACK id it was called from, 0 */
};

#define DDL_PY_OPEN_STEP 64 /* struct ddl_thread.py_open: an optimizer's step */

/* FNV-1a over N bytes at P from H (DDL_FNV0 to start): the keys the
 * library makes from what every member of a communicator, or every end of
 * a connection, sees alike. */
#define DDL_FNV0 0xcbf29ce484222325ull
static inline uint64_t ddl_fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* ---- thread.c: per-thread single-producer rings ---- */
struct ddl_thread {
	/* owner's cache line */
	uint64_t head;          /* next slot to write; published with release */
	uint64_t cached_tail;
	uint64_t mask;          /* ring_events - 1 */
	struct ddl_event *ev;
	uint64_t half;          /* ring_events / 2: past this, wake the writer */
	uint64_t kick_tail;     /* tail + 1 when the writer was last woken */
	uint16_t idx;           /* thread index in the trace */
	uint32_t tidbits;       /* idx in the place the event's kind/flags/tid word has it */
	int busy;               /* recursion/signal guard */
	_Atomic uint64_t dropped; /* the writer sums it while the owner counts */
	/* writer's cache line */
	_Alignas(64) _Atomic uint64_t tail; /* next slot to read; written by the writer */
	_Atomic int dead;       /* owner exited; writer frees after draining */
	pid_t tid;
	int name_emitted;
	struct ddl_thread *next;
	size_t map_bytes;
	void *alt;               /* DDL_ALTSTACK bytes in the same mapping, past a guard page */
	/* the Python hook's open phases (python.c): their start ticks */
	int py_depth;
	unsigned py_in;          /* outermost forward, backward, step open (python.c) */
	uint64_t py_t0[16];
	/* ... and the innermost one the C wrappers time, for the trace's open
	 * calls: its kind (DDL_PHASE_*, or DDL_PY_OPEN_STEP), 0 none */
	_Atomic uint32_t py_open;
	_Atomic uint64_t py_open_t0;
	/* gloo.c: a communicator key the Python hook named for the contexts
	 * this thread creates next (a torch process group), 0 none */
	uint64_t gloo_key;
	unsigned gloo_key_n;
	/* mpi.c: the nonblocking MPI operations this thread started that are
	 * in flight (struct ddl_mpi_reqtab), mapped on the first; kept with the
	 * ring, and started anew by the next thread that takes it */
	void *_Atomic mpi_reqs;
	/* unwind.c, --backtrace: the stack taken as the open call began, for
	 * its record at the end (the same call: its kind and start), and when
	 * the unwinding ended (the record's start: not the call's time) */
	uint32_t bt_stack, bt_kind;
	uint64_t bt_t0, bt_t1;
	/* the blocking call the thread is in (ddl_open_enter): the writer
	 * reads it for the trace's open calls and the hang watchdog */
	_Alignas(64) struct ddl_open open;
	_Atomic uint64_t open_said_t0; /* the writer's: the open call the watchdog said */
};

extern __thread struct ddl_thread *ddl_self DDL_HIDDEN;
extern __thread int ddl_self_state DDL_HIDDEN; /* 0 new, 1 ready, 2 internal ... (thread.c) */
extern __thread int ddl_private_fds DDL_HIDDEN; /* this thread has its own fd table */
struct ddl_thread *ddl_thread_slow(unsigned family) DDL_HIDDEN;
int ddl_ring_room(struct ddl_thread *t, uint64_t h) DDL_HIDDEN;
void ddl_thread_mark_internal(void) DDL_HIDDEN;
struct ddl_thread *ddl_thread_internal_ring(void) DDL_HIDDEN;
int ddl_thread_idx_of(pid_t tid) DDL_HIDDEN;
void ddl_threads_after_fork_child(void) DDL_HIDDEN;
/* Writer side: iterate registered rings; caller holds no lock. */
struct ddl_thread *ddl_threads_first(void) DDL_HIDDEN;
void ddl_threads_reap(void) DDL_HIDDEN;

/*
 * ---- packed.c: one-slot launch records in the rings ----
 * Kinds that exist only in a thread's ring, never in a file: a kernel
 * launch packed in one slot (result = grid blocks | block threads << 32 |
 * return code << 48; fd = kernel name id | device << 24; peer = stream id;
 * no call number). The writer expands each into DDL_EV_CUDA_LAUNCH (or
 * _COOP) and its args record. ddl_ring_unpack copies events from IN to OUT
 * (ROOM slots), expanding packed ones; returns how many it took from IN and
 * sets NOUT to how many it wrote.
 */
#define DDL_RING_LAUNCH      0xfeu
#define DDL_RING_LAUNCH_COOP 0xfdu
size_t ddl_ring_unpack(struct ddl_event *out, size_t room, const struct ddl_event *in, size_t n,
                       size_t *nout) DDL_HIDDEN;

/* ---- papi.c: counters read at marker events (ddlprof --papi) ---- */
extern int ddl_papi_on DDL_HIDDEN;
/* Reads the calling thread's counters and appends them (DDL_EV_COUNTER). */
void ddl_papi_sample(struct ddl_thread *t) DDL_HIDDEN;
void ddl_papi_init(void) DDL_HIDDEN;
void ddl_papi_after_fork_child(void) DDL_HIDDEN;

/*
 * Returns the calling thread's ring, or NULL when this call must pass
 * through unrecorded: profiling off, the library's own thread, or a signal
 * handler that interrupted us while we were appending or in a cold path
 * (busy). The thread is not marked busy during the real call itself, so a
 * handler that longjmps out of it leaves nothing behind, and calls a
 * handler makes meanwhile are recorded.
 */
static inline struct ddl_thread *ddl_thread_enter(unsigned family)
{
	struct ddl_thread *t = ddl_self;
	if (ddl_unlikely(!t))
		t = ddl_thread_slow(family);
	if (ddl_unlikely(!t || t->busy ||
	                 !(atomic_load_explicit(&ddl_g.enabled, memory_order_relaxed) & family)))
		return NULL;
	/* Marker calls read the thread's counters first (--papi); FAMILY is a
	 * constant, so no other wrapper pays for this test. */
	if (family == DDL_FAM_MARK && ddl_unlikely(ddl_papi_on))
		ddl_papi_sample(t);
	return t;
}

/*
 * The one event encoder, in three steps that every put path takes
 * (ddl_ring_put, ddl_ring_put_args, ddl_ring_put_stacked in unwind.c,
 * ddl_device_put in gpu.c, the packed launch in cuda.c): claim the slots,
 * fill the event, publish. Only the owner thread writes its ring (the
 * internal ring: under its lock). The fast path is two loads and a compare:
 * the slow path (ddl_ring_room) runs once the ring looks half full, to
 * reread the writer's tail and wake it.
 *
 * ddl_ring_claim: room for SLOTS slots at head H: 1, or 0 when the ring is
 * full, and then the RECORDS events that the trace file would have had
 * are counted as dropped (a packed launch is one slot and two records).
 */
static inline int ddl_ring_claim(struct ddl_thread *t, uint64_t h, unsigned slots, unsigned records)
{
	if (ddl_likely(h + slots - 1 - t->cached_tail < t->half) || ddl_ring_room(t, h + slots - 1))
		return 1;
	t->dropped += records - 1; /* ddl_ring_room counted one */
	return 0;
}

/* Where the kind/flags/tid word has thread index IDX. */
static inline uint32_t ddl_tidbits(uint16_t idx)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return (uint32_t)idx << 16;
#else
	return idx;
#endif
}

/* Fills event E; TIDBITS names its thread (ddl_tidbits). */
static inline void ddl_event_fill(struct ddl_event *e, unsigned kind, unsigned flags, uint32_t tidbits,
                                  uint64_t t0, uint64_t t1, int64_t result, int32_t fd, uint32_t peer)
{
	uint64_t d = t1 - t0;
	if (ddl_unlikely(d >> 32)) {
		d >>= DDL_DUR_LONG_SHIFT;
		flags |= DDL_EVF_LONG;
		if (d >> 32)
			d = UINT32_MAX;
	}
	e->start = t0;
	e->dur = (uint32_t)d;
	/* kind, flags and tid in one store */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint32_t kft = kind | flags << 8 | tidbits;
#else
	uint32_t kft = kind << 24 | flags << 16 | tidbits;
#endif
	__builtin_memcpy(&e->kind, &kft, 4);
	e->result = result;
	e->fd = fd;
	e->peer = peer;
}

/* The writer may read the slots before HEAD. */
static inline void ddl_ring_publish(struct ddl_thread *t, uint64_t head)
{
	atomic_store_explicit((_Atomic uint64_t *)&t->head, head, memory_order_release);
}

/* Appends an event. */
static inline void ddl_ring_put(struct ddl_thread *t, unsigned kind, unsigned flags,
                                uint64_t t0, uint64_t t1, int64_t result, int fd,
                                uint32_t peer)
{
	t->busy = 1;
	uint64_t h = t->head;
	if (ddl_ring_claim(t, h, 1, 1)) {
		ddl_event_fill(&t->ev[h & t->mask], kind, flags, t->tidbits, t0, t1, result, fd, peer);
		ddl_ring_publish(t, h + 1);
	}
	t->busy = 0;
}

/*
 * Append an event and the args record that follows it (DDL_EVF_ARGS), as
 * one unit: the writer never sees one without the other.
 */
static inline void ddl_ring_put_args(struct ddl_thread *t, unsigned kind, unsigned flags,
                                     uint64_t t0, uint64_t t1, int64_t result, int fd,
                                     uint32_t peer, const struct ddl_args *a)
{
	t->busy = 1;
	uint64_t h = t->head;
	if (ddl_ring_claim(t, h, 2, 2)) {
		ddl_event_fill(&t->ev[h & t->mask], kind, flags | DDL_EVF_ARGS, t->tidbits, t0, t1, result, fd,
		               peer);
		__builtin_memcpy(&t->ev[(h + 1) & t->mask], a, sizeof *a);
		ddl_ring_publish(t, h + 2);
	}
	t->busy = 0;
}

/*
 * The blocking call T is about to make (KIND from T0; FD and PEER as its
 * event will have them), and its end: 1 when it is the thread's open call,
 * 0 when the thread is already in one (a wait inside a wait: a CUDA
 * synchronisation's condition variable), which stays. A call whose frame
 * is not below the open one's cannot be inside it: that one was left by a
 * jump (a signal handler's longjmp) and is replaced. Relaxed stores, one
 * with release: a handful of plain stores beside the call's own record.
 */
static inline int ddl_open_take(struct ddl_thread *t)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	if (atomic_load_explicit(&t->open.kind, memory_order_relaxed) &&
	    sp < atomic_load_explicit(&t->open.sp, memory_order_relaxed))
		return 0;
	atomic_store_explicit(&t->open.kind, 0, memory_order_relaxed);
	atomic_store_explicit(&t->open.sp, sp, memory_order_relaxed);
	return 1;
}

extern unsigned ddl_bt_depth DDL_HIDDEN; /* unwind.c: frames to record; 0 = off */
/* --backtrace: the stack of the call of KIND from T0 that T opens now, kept
 * for its record at the end; the DDL_STR_STACK id, 0 none. Keeps errno. */
uint32_t ddl_stack_open(struct ddl_thread *t, unsigned kind, uint64_t t0) DDL_HIDDEN;

/* The open call's fields, kind last; 1, or 0 when the thread is in one already. */
static inline int ddl_open_set(struct ddl_thread *t, unsigned kind, uint64_t t0, int fd, uint32_t peer,
                               uint32_t comm, uint32_t seq, uint64_t bytes)
{
	if (!ddl_open_take(t))
		return 0;
	/* file reads are recorded without one, semaphore waits only when they
	 * blocked (CPython takes every lock with one, most of them free) */
	uint32_t stack = ddl_unlikely(ddl_bt_depth) && kind != DDL_EV_FILE_READ && kind != DDL_EV_SEM_WAIT &&
	                 kind != DDL_EV_SEM_TIMEDWAIT && kind != DDL_EV_SEM_CLOCKWAIT
	                 ? ddl_stack_open(t, kind, t0) : 0;
	/* release: a reader that sees one of these sees kind 0 before it (a
	 * seqlock's order; plain stores on x86) */
	atomic_store_explicit(&t->open.t0, t0, memory_order_release);
	atomic_store_explicit(&t->open.fd, fd, memory_order_release);
	atomic_store_explicit(&t->open.peer, peer, memory_order_release);
	atomic_store_explicit(&t->open.comm, comm, memory_order_release);
	atomic_store_explicit(&t->open.seq, seq, memory_order_release);
	atomic_store_explicit(&t->open.bytes, bytes, memory_order_release);
	atomic_store_explicit(&t->open.stack, stack, memory_order_release); /* after t0, as the rest */
	atomic_store_explicit(&t->open.kind, kind, memory_order_release);
	return 1;
}

static inline int ddl_open_enter(struct ddl_thread *t, unsigned kind, uint64_t t0, int fd,
                                 uint32_t peer)
{
	return ddl_open_set(t, kind, t0, fd, peer, 0, 0, 0);
}

/* As ddl_open_enter, for a host collective on communicator COMM (its SEQ-th, of BYTES). */
static inline int ddl_open_enter_coll(struct ddl_thread *t, unsigned kind, uint64_t t0, uint32_t comm,
                                      uint32_t seq, uint64_t bytes)
{
	return ddl_open_set(t, kind, t0, -1, 0, comm, seq, bytes);
}

/* The end of a call ddl_open_enter returned MINE for. */
static inline void ddl_open_leave(struct ddl_thread *t, int mine)
{
	if (mine)
		atomic_store_explicit(&t->open.kind, 0, memory_order_relaxed);
}

/* No open call and no last collective: a ring passed to another thread
 * (one that ended inside a blocking call, cancelled, or one of a parent
 * before fork). */
static inline void ddl_open_clear(struct ddl_thread *t)
{
	t->bt_stack = 0;
	atomic_store_explicit(&t->py_open, 0, memory_order_relaxed);
	atomic_store_explicit(&t->open.kind, 0, memory_order_relaxed);
	atomic_store_explicit(&t->open.last_kind, 0, memory_order_relaxed);
	atomic_store_explicit(&t->open.sp, 0, memory_order_relaxed);
	atomic_store_explicit(&t->open_said_t0, 0, memory_order_relaxed);
}

/* The collective T issued last (NCCL: queued on the device, not waited in). */
static inline void ddl_open_issued(struct ddl_thread *t, unsigned kind, uint32_t comm, uint32_t seq)
{
	atomic_store_explicit(&t->open.last_comm, comm, memory_order_relaxed);
	atomic_store_explicit(&t->open.last_seq, seq, memory_order_relaxed);
	atomic_store_explicit(&t->open.last_kind, kind, memory_order_release);
}

/* ---- unwind.c: call stacks of communication calls (ddlprof --backtrace) ---- */
/*
 * Like ddl_ring_put (A == NULL) or ddl_ring_put_args, with the caller's
 * stack: takes it (or the one ddl_stack_open took as the call began),
 * interns it on first sight and appends the event, its args record and a
 * stack record (DDL_EVF_STACK) as one unit. Keeps errno.
 */
void ddl_ring_put_stacked(struct ddl_thread *t, unsigned kind, unsigned flags, uint64_t t0,
                          uint64_t t1, int64_t result, int fd, uint32_t peer,
                          const struct ddl_args *a) DDL_HIDDEN;
void ddl_unwind_init(void) DDL_HIDDEN;
void ddl_unwind_after_fork_child(void) DDL_HIDDEN;

/*
 * The recording step of the wrappers of communication and synchronisation
 * calls, whose call sites ddlprof-report ranks: ddl_ring_put, or with
 * --backtrace the same with the stack (out of line).
 */
static inline void ddl_ring_put_call(struct ddl_thread *t, unsigned kind, unsigned flags,
                                     uint64_t t0, uint64_t t1, int64_t result, int fd,
                                     uint32_t peer)
{
	if (ddl_unlikely(ddl_bt_depth))
		ddl_ring_put_stacked(t, kind, flags, t0, t1, result, fd, peer, NULL);
	else
		ddl_ring_put(t, kind, flags, t0, t1, result, fd, peer);
}

static inline void ddl_ring_put_args_call(struct ddl_thread *t, unsigned kind, unsigned flags,
                                          uint64_t t0, uint64_t t1, int64_t result, int fd,
                                          uint32_t peer, const struct ddl_args *a)
{
	if (ddl_unlikely(ddl_bt_depth))
		ddl_ring_put_stacked(t, kind, flags, t0, t1, result, fd, peer, a);
	else
		ddl_ring_put_args(t, kind, flags, t0, t1, result, fd, peer, a);
}

/* ---- writer.c ---- */
int ddl_writer_start(void) DDL_HIDDEN;
/* A forked child's writer: started by ddl_writer_start_pending, when the
 * child first takes a ring. */
void ddl_writer_start_later(void) DDL_HIDDEN;
void ddl_writer_start_pending(unsigned family) DDL_HIDDEN;
/* ddl_disable, said once for a process and the children it forks. */
void ddl_writer_disable_once(const char *why, int err) DDL_HIDDEN;
/* 1 the first time WHAT (a bit, DDL_TOLD_*) is asked for in this process
 * and the children it forks, 0 after: a line said once a job. */
#define DDL_TOLD_DISABLED 1
#define DDL_TOLD_BUDGET 2
int ddl_told_first(int what) DDL_HIDDEN;
/* Threads that found no room for a buffer of their own (thread.c). */
unsigned ddl_threads_unrecorded(void) DDL_HIDDEN;
void ddl_writer_reopen(void) DDL_HIDDEN;
/* Stop the writer around calls the kernel refuses to multi-threaded processes. */
int ddl_writer_pause(void) DDL_HIDDEN;
void ddl_writer_resume(int paused) DDL_HIDDEN;
/* Drain every ring and write; end_reason 0 = no end chunk. Not signal-safe. */
void ddl_writer_stop(uint32_t end_reason, int32_t value) DDL_HIDDEN;
/* _exit with no file and nothing buffered: 1, and the writer is left to
 * die with the process (the file lock held); 0: stop it as usual. */
int ddl_writer_exit_idle(void) DDL_HIDDEN;
/* Async-signal-safe best-effort flush, uncompressed, then an end chunk. */
void ddl_writer_flush_signal(uint32_t end_reason, int32_t value) DDL_HIDDEN;
void ddl_writer_wake(void) DDL_HIDDEN;
/* Inline mode: a ring looks whether to write every DDL_INLINE_CHECK events. */
#define DDL_INLINE_CHECK 256
int ddl_writer_inline(struct ddl_thread *t, uint64_t used) DDL_HIDDEN;
/* The calling thread's calls pass through unrecorded until unhushed with
 * what ddl_thread_hush returned (the library's own writes on a program
 * thread). */
int ddl_thread_hush(void) DDL_HIDDEN;
void ddl_thread_unhush(int token) DDL_HIDDEN;
void ddl_writer_after_fork_child(void) DDL_HIDDEN;
void ddl_writer_atfork_prepare(void) DDL_HIDDEN;
void ddl_writer_atfork_parent(void) DDL_HIDDEN;
/* The locks of the file and of the string table: a plain atomic flag, so a
 * signal handler can try one. Takes L within TRIES tries (< 0: until it is
 * free), napping between tries past the 64th; 1 when taken, 0 when not. */
int ddl_spin_try(_Atomic int *l, int tries) DDL_HIDDEN;
void ddl_spin_unlock(_Atomic int *l) DDL_HIDDEN;

/*
 * ---- strings.c: the trace's string table ----
 * Records (struct ddl_strrec, then the text), append-only. strings.c
 * appends under the lock; the writer writes buf[done, len) into the file
 * under the same lock and moves done, sets done to 0 for a new file, and
 * holds the lock across fork (writer.c). len is also read without the lock.
 */
struct ddl_strtab {
	_Atomic int lock;
	char *buf;
	size_t len, cap;
	size_t done; /* bytes already in the current file */
};
extern struct ddl_strtab ddl_str DDL_HIDDEN;
/* Records a string for the trace. Never allocates with malloc (signal paths). */
void ddl_strings_add(uint16_t kind, uint32_t id, uint32_t value, const char *text, size_t len) DDL_HIDDEN;
/* The same, waiting for the string lock TRIES tries at most (< 0: as long
 * as it takes); 0 when added, -1 when not (the lock held, no memory). */
int ddl_strings_try_add(uint16_t kind, uint32_t id, uint32_t value, const char *text, size_t len,
                        int tries) DDL_HIDDEN;
/* A new communicator id for DDL_STR_COMM (NCCL, gloo, torch groups): 1, 2, ... */
uint32_t ddl_id_wait(_Atomic uint32_t *id) DDL_HIDDEN;
uint32_t ddl_comm_id_new(void) DDL_HIDDEN;
/* The next number in communicator COMM's sequence of collectives (args.aux),
 * and in its point-to-point sequence with PEER (a rank of COMM) one way. */
uint32_t ddl_comm_seq_next(uint32_t comm) DDL_HIDDEN;
/* The key of communicator id COMM (as its DDL_STR_COMM says), 0 unknown. */
uint64_t ddl_comm_key_of(uint32_t comm) DDL_HIDDEN;
uint32_t ddl_p2p_seq_next(uint32_t comm, int peer, int recv) DDL_HIDDEN;

/* ---- socket.c ---- */
void ddl_socket_init(void) DDL_HIDDEN;

/* ---- perturb.c: ddlprof --perturb-net ---- */
extern int ddl_perturb_on DDL_HIDDEN;
/* Slows the send that just moved BYTES, as the setting says. Keeps errno. */
void ddl_perturb(uint64_t bytes) DDL_HIDDEN;
/* Parses "delay=USEC" or "rate=N[kbit|mbit|gbit|KB|MB|GB]" and turns the
 * perturbation on; 0 or -EINVAL. */
int ddl_perturb_parse(const char *spec) DDL_HIDDEN;

/* ---- file.c ---- */
/* socket.c: a descriptor open() gave: whatever the table knew of that number
 * is stale; not DATA (/proc, /sys, /dev), its reads are never recorded */
void ddl_fd_opened(int fd, int data) DDL_HIDDEN;

/* ---- gloo.c ---- */
void ddl_gloo_after_fork_child(void) DDL_HIDDEN;

/* ---- mpi.c ---- */
void ddl_mpi_after_fork_child(void) DDL_HIDDEN;

/* ---- marker.c ---- */
/* Interns a name (marker, kernel) into the string table: its id, 0 if full. */
uint32_t ddl_name_intern(const char *name) DDL_HIDDEN;

/* ---- gpu.c, cuda.c, nccl.c, cupti.c (with CUDA headers only) ---- */
void ddl_gpu_after_fork_child(void) DDL_HIDDEN;
void ddl_gpu_stop(void) DDL_HIDDEN;

/* ---- diag.c ---- */
/* A key=value fact about the process, in the trace's string table. */
void ddl_meta(const char *key, const char *val) DDL_HIDDEN;
/* The count of threads that found no buffer, for the trace: waits for the
 * string lock a while at most (an exit from a handler during fork). */
void ddl_meta_unrecorded(unsigned n) DDL_HIDDEN;
/* Turn profiling off for good in this process, with one line on stderr. */
void ddl_disable(const char *why, int err) DDL_HIDDEN;
void ddl_warn(const char *fmt, ...) DDL_HIDDEN __attribute__((format(printf, 1, 2)));
/* Notes which file stderr is (ddl_init, first thing): warnings go only there. */
void ddl_diag_init(void) DDL_HIDDEN;

/* ---- core.c ---- */
/* Ensure the library is initialised (constructor may not have run yet). */
void ddl_init(void) DDL_HIDDEN;

/* ---- process.c: fork, exec, daemon, namespaces, _exit ---- */
/* Registers the fork handlers: a child starts a trace of its own. */
void ddl_process_init(void) DDL_HIDDEN;

/* ---- signal.c ---- */
void ddl_signal_init(void) DDL_HIDDEN;
/* An alternate signal stack for our fatal-signal handler, per thread that
 * records, where the program has none (a stack overflow could not run the
 * handler otherwise); sigaltstack() shows the program only its own. */
#define DDL_ALTSTACK (64 * 1024)
void ddl_altstack_take(void *sp) DDL_HIDDEN;
/* The thread ends: 0 when it has no stack of ours (SP or another), or
 * gave it back; -1 when it is still on it. */
int ddl_altstack_drop(void *sp) DDL_HIDDEN;
/* The stack of ours the calling thread has, or NULL. */
void *ddl_altstack_mine(void) DDL_HIDDEN;

#endif
