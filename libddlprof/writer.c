/*
 * The writer: the one thread per process that turns thread rings into trace
 * file chunks. It wakes every DDLPROF_FLUSH_MS, or when a ring passes half
 * full, drains every ring, and appends a clock sample, what is new in the
 * string table (strings.c) and the events as chunks, compressed with the
 * codec DDLPROF_COMPRESS names (LZ4 by default: readers decode it over
 * twice as fast as zstd) when its library can be loaded, else with the
 * other codec, else raw.
 *
 * The trace file is opened for each flush and closed again, so a program
 * that closes every descriptor, or dup2()s over one, can never make us write
 * into its own files. One lock (a plain atomic flag, so a fatal-signal
 * handler can try it) serialises all writes to the file.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ddl.h"
#include "ddlprof/tracedir.h"
#include "ddlprof/chunk.h"

/* Events per chunk: 32768 (1 MiB raw), or 4096 where RLIMIT_AS is set;
 * fixed before the stage is first mapped. */
static size_t ddl_stage_events = 32768;

/* ---- the locks of the file and of the string table (strings.c) ---- */

int ddl_spin_try(_Atomic int *l, int tries)
{
	for (int i = 0; i < tries || tries < 0; i++) {
		int expect = 0;
		if (atomic_compare_exchange_weak(l, &expect, 1))
			return 1;
		if (i > 64) {
			struct timespec ts = {0, 100000};
			nanosleep(&ts, NULL);
		}
	}
	return 0;
}

void ddl_spin_unlock(_Atomic int *l)
{
	atomic_store_explicit(l, 0, memory_order_release);
}

/* ---- the file ---- */

static struct {
	_Atomic int lock;       /* held while writing the file */
	char path[4352];
	int created;
	int broken;             /* a write failed: stop for good */
	dev_t dev;
	ino_t ino;
	uint64_t events;
	int64_t last_sample_ns; /* CLOCK_MONOTONIC of the last clock chunk */
	pid_t owner;            /* the pid this state belongs to */
	pthread_t thread;
	int running;            /* a writer thread was started and not joined */
	_Atomic int alive;      /* ... and has not returned */
	_Atomic int stopping;
	int finished;           /* an end or exec chunk was written */
	_Atomic int stop;
	uint32_t end_reason;    /* for the writer's last flush */
	int32_t end_value;
	_Atomic int sig_req;    /* a fatal signal asks for a flush */
	_Atomic int sig_done;   /* futex word: that flush is done */
	uint32_t sig_reason;
	int32_t sig_value;
	_Atomic int wake;       /* futex word */
	_Atomic int64_t sig_flushed_ns; /* CLOCK_MONOTONIC of the last flush before a handler */
	_Atomic int *told;      /* shared with forked children: a failure was reported */
	struct ddl_event *stage; /* ddl_stage_events, mapped on the first events (ddl_buffers_map) */
	int inline_mode;        /* no writer thread: the recording threads write (ddl_writer_inline) */
	_Atomic int start_pending; /* a forked child's writer, started on its first ring */
	int64_t last_flush_ns;  /* CLOCK_MONOTONIC of the last flush, in inline mode */
	/* the codec, found at run time: set once, before the first file is made */
	int codec_tried;
	uint16_t codec;         /* DDL_CHUNKF_LZ4, DDL_CHUNKF_ZSTD, or 0: raw */
	void *zctx;             /* zstd's context, or LZ4's state */
	size_t (*z_compress)(void *, void *, size_t, const void *, size_t, int);
	unsigned (*z_iserror)(size_t);
	int (*lz_compress)(void *, const char *, char *, int, int, int);
	void *zbuf;             /* compressed output, room for a full stage: mapped with it */
	size_t zcap;
	/* the open calls last written (DDL_CHUNK_OPEN): their signature */
	uint64_t open_sig;
} ddl_w;

/*
 * Open calls (DDL_CHUNK_OPEN): the blocking calls threads have been in for
 * DDL_OPEN_MIN_NS or more, as of a flush: an event and its args record
 * each. Written when the set changes, so that a trace cut short (SIGKILL)
 * says what every thread was waiting in. With --hang-timeout, a call open
 * that long is said on standard error, once (the watchdog).
 */
#define DDL_OPEN_MIN_NS 1000000000LL
#define DDL_OPEN_MAX    128
static struct ddl_event ddl_open_buf[2 * DDL_OPEN_MAX];
static size_t ddl_open_calls; /* of its records, the calls' (the phases' follow) */
static unsigned ddl_kind_class(unsigned kind)
{
	static const unsigned char cls[] = {
#define DDL_X_CLASS(n, str, c) [DDL_EV_##n] = c,
		DDL_EVENT_KINDS(DDL_X_CLASS)
#undef DDL_X_CLASS
	};
	return kind < sizeof cls ? cls[kind] : 0;
}

/* Whether a call of KIND keeps a descriptor in fd (waits keep counts, CUDA's calls the device). */
static int ddl_kind_has_fd(unsigned kind)
{
	unsigned c = ddl_kind_class(kind);
	return c == DDL_CLASS_TX || c == DDL_CLASS_RX || c == DDL_CLASS_CONN || c == DDL_CLASS_FILE;
}

static const char *ddl_kind_name(unsigned kind)
{
	static const char *const names[] = {
#define DDL_X_NAME(n, str, c) [DDL_EV_##n] = str,
		DDL_EVENT_KINDS(DDL_X_NAME)
#undef DDL_X_NAME
	};
	return kind < sizeof names / sizeof names[0] && names[kind] ? names[kind] : "a call";
}

/* One line on stderr for a call open past --hang-timeout. */
static void ddl_hang_say(const struct ddl_thread *t, const struct ddl_event *e, const struct ddl_args *a,
                         double secs)
{
	char what[192] = "";
	unsigned long long key = (unsigned long long)ddl_comm_key_of(a->comm);
	if (a->comm && !(a->flags & DDL_ARGF_LASTCOLL))
		snprintf(what, sizeof what, ", collective %u of communicator %016llx", a->aux, key);
	else if (a->comm)
		snprintf(what, sizeof what, "; its last collective: %s, number %u of communicator %016llx",
		         ddl_kind_name(a->corr), a->aux, key);
	else if (e->fd >= 0 && ddl_kind_has_fd(e->kind))
		snprintf(what, sizeof what, " (descriptor %d)", e->fd);
	char rank[32] = "";
	if (ddl_g.rank >= 0)
		snprintf(rank, sizeof rank, "rank %d, ", ddl_g.rank);
	ddl_warn("hang? %sthread %d: in %s for %.1f s%s (--hang-timeout %u); the job goes on", rank,
	         (int)t->tid, ddl_kind_name(e->kind), secs, what, ddl_g.cfg.hang_timeout_s);
}

/* Whether the watchdog speaks of an open call of KIND on thread T: a
 * collective or a wait on the device anywhere; a socket call, poll or
 * condition variable on the main thread only (the library's and runtimes'
 * worker pools idle in those for as long as they like). */
static int ddl_hang_watched(const struct ddl_thread *t, unsigned kind)
{
	unsigned c = ddl_kind_class(kind);
	if (c == DDL_CLASS_HCOLL || c == DDL_CLASS_GPUSYNC || c == DDL_CLASS_COPY || c == DDL_CLASS_COLL)
		return 1;
	return t->tid == ddl_g.pid;
}

/* The watchdog speaks only on the writer thread, never a program's. */
static __thread int ddl_on_writer;

/* How telling an open call of KIND on T is, for which to keep when there
 * are more than DDL_OPEN_MAX: a collective or a wait on the device, or
 * any on the main thread, before other threads' waits (idle pools). */
static int ddl_open_telling(const struct ddl_thread *t, unsigned kind)
{
	unsigned c = ddl_kind_class(kind);
	return c == DDL_CLASS_HCOLL || c == DDL_CLASS_GPUSYNC || c == DDL_CLASS_COPY || c == DDL_CLASS_COLL ||
	       t->tid == ddl_g.pid;
}

/*
 * Fills ddl_open_buf with the calls open DDL_OPEN_MIN_NS or more, now,
 * the most telling first; returns how many records (two a call) and sets
 * *SIG to a signature of the set. With --hang-timeout, on the writer
 * thread, says the calls open that long (once each).
 */
static size_t ddl_open_scan(uint64_t *sig)
{
	*sig = 0;
	ddl_open_calls = 0;
	int any = 0;
	for (struct ddl_thread *t = ddl_threads_first(); t && !any; t = t->next)
		any = atomic_load_explicit(&t->open.kind, memory_order_relaxed) != 0 ||
		      atomic_load_explicit(&t->py_open, memory_order_relaxed) != 0;
	if (!any)
		return 0; /* the common case, and no clock rate asked for */
	uint64_t now = ddl_clock_now();
	double tpn = ddl_clock_ticks_per_ns();
	uint64_t min = (uint64_t)(DDL_OPEN_MIN_NS * tpn);
	uint64_t hang = ddl_g.cfg.hang_timeout_s ? (uint64_t)(ddl_g.cfg.hang_timeout_s * 1e9 * tpn) : 0;
	size_t n = 0;
	for (int pass = 0; pass < 2; pass++)
		for (struct ddl_thread *t = ddl_threads_first(); t && n < 2 * DDL_OPEN_MAX; t = t->next) {
			unsigned kind = atomic_load_explicit(&t->open.kind, memory_order_acquire);
			uint64_t t0 = atomic_load_explicit(&t->open.t0, memory_order_relaxed);
			if (!kind || now < t0 || now - t0 < min || atomic_load(&t->dead) ||
			    ddl_open_telling(t, kind) != !pass)
				continue;
			struct ddl_event *e = &ddl_open_buf[n];
			struct ddl_args *a = (struct ddl_args *)&ddl_open_buf[n + 1];
			memset(e, 0, 2 * sizeof *e);
			ddl_event_fill(e, kind, DDL_EVF_ARGS, t->tidbits, t0, now, 0,
			               atomic_load_explicit(&t->open.fd, memory_order_acquire),
			               atomic_load_explicit(&t->open.peer, memory_order_acquire));
			a->kind = DDL_EV_ARGS;
			a->peer = -1;
			a->comm = atomic_load_explicit(&t->open.comm, memory_order_acquire);
			a->aux = atomic_load_explicit(&t->open.seq, memory_order_acquire);
			a->bytes = a->comm ? atomic_load_explicit(&t->open.bytes, memory_order_acquire) : 0;
			unsigned last = atomic_load_explicit(&t->open.last_kind, memory_order_acquire);
			if (!a->comm && last) {
				a->comm = atomic_load_explicit(&t->open.last_comm, memory_order_acquire);
				a->aux = atomic_load_explicit(&t->open.last_seq, memory_order_acquire);
				a->corr = last;
				a->flags = DDL_ARGF_LASTCOLL;
			}
			a->name = atomic_load_explicit(&t->open.stack, memory_order_acquire);
			a->flags |= a->name ? DDL_ARGF_STACK : 0;
			/* the thread may have left the call (and entered another) meanwhile;
			 * the loads above are acquires, so this one comes after them */
			if (atomic_load_explicit(&t->open.kind, memory_order_relaxed) != kind ||
			    atomic_load_explicit(&t->open.t0, memory_order_relaxed) != t0)
				continue;
			*sig = (*sig ^ ((uint64_t)t->idx << 40 ^ t0 ^ (uint64_t)kind << 56)) * 0x100000001b3ull;
			if (ddl_on_writer && hang && now - t0 >= hang && ddl_hang_watched(t, kind) &&
			    atomic_load_explicit(&t->open_said_t0, memory_order_relaxed) != t0) {
				atomic_store_explicit(&t->open_said_t0, t0, memory_order_relaxed);
				char v[96];
				snprintf(v, sizeof v, "%s thread=%d t0=%llu", ddl_kind_name(kind), (int)t->tid,
				         (unsigned long long)t0);
				ddl_meta("hang", v);
				ddl_hang_say(t, e, a, (double)(now - t0) / tpn / 1e9);
			}
			n += 2;
		}
	/* last, the Python hook's phases open as long (what the training loop
	 * was in: the wait for a batch, forward, backward, the optimizer's
	 * step), for DDL_CHUNK_OPEN_PHASES */
	ddl_open_calls = n;
	for (struct ddl_thread *t = ddl_threads_first(); t && n < 2 * DDL_OPEN_MAX; t = t->next) {
		unsigned ph = atomic_load_explicit(&t->py_open, memory_order_acquire);
		uint64_t t0 = atomic_load_explicit(&t->py_open_t0, memory_order_acquire);
		if (!ph || now < t0 || now - t0 < min || atomic_load(&t->dead) ||
		    atomic_load_explicit(&t->py_open, memory_order_relaxed) != ph)
			continue;
		struct ddl_event *e = &ddl_open_buf[n];
		struct ddl_args *a = (struct ddl_args *)&ddl_open_buf[n + 1];
		memset(e, 0, 2 * sizeof *e);
		ddl_event_fill(e, ph == DDL_PY_OPEN_STEP ? DDL_EV_PY_STEP : DDL_EV_PY_PHASE, DDL_EVF_ARGS, t->tidbits, t0,
		               now, 0, ph == DDL_PY_OPEN_STEP ? -1 : (int)ph, 0);
		a->kind = DDL_EV_ARGS;
		a->peer = -1;
		*sig = (*sig ^ ((uint64_t)t->idx << 40 ^ t0 ^ (uint64_t)(ph + DDL_EV_COUNT) << 56)) * 0x100000001b3ull;
		n += 2;
	}
	return n;
}

#define DDL_STAGE_BYTES (ddl_stage_events * sizeof(struct ddl_event))

/*
 * The writer's scratch memory (the stage, the codec's state and output):
 * contents that mean nothing past one flush, so a forked child gets them
 * zeroed (MADV_WIPEONFORK) instead of shared copy-on-write. Else every
 * fork() write-protects them and the next flush takes a copy-on-write
 * fault per page in the parent, while the program forks again. Keeps errno.
 */
static void *ddl_map(size_t n)
{
	int saved = errno;
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED)
		madvise(p, n, MADV_WIPEONFORK); /* Linux 4.14; else copied as before */
	errno = saved;
	return p == MAP_FAILED ? NULL : p;
}

static int64_t ddl_mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Profiling off, with one line for a process and the children it forks
 * (a full disk, a lost directory, no threads left fail them all alike). */
int ddl_told_first(int what)
{
	return !ddl_w.told || !(atomic_fetch_or(ddl_w.told, what) & what);
}

void ddl_writer_disable_once(const char *why, int err)
{
	if (!ddl_told_first(DDL_TOLD_DISABLED))
		atomic_store(&ddl_g.enabled, 0);
	else
		ddl_disable(why, err);
}

/*
 * LZ4 through LZ4_compress_fast_extState, with its 16 KiB state mapped here
 * once: LZ4_compress_default would put that state on the stack, and the
 * last flush may run on any program thread, whose stack may be small.
 * Returns 0 or -1 when liblz4.so.1 or one of its functions is missing.
 */
static int ddl_lz4_open(void)
{
	void *h = dlopen("liblz4.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return -1;
	int (*state_size)(void) = (int (*)(void))dlsym(h, "LZ4_sizeofState");
	int (*bound)(int) = (int (*)(int))dlsym(h, "LZ4_compressBound");
	ddl_w.lz_compress = (int (*)(void *, const char *, char *, int, int, int))dlsym(
		h, "LZ4_compress_fast_extState");
	int ss = state_size ? state_size() : 0;
	int cap = bound ? bound((int)DDL_STAGE_BYTES) : 0;
	void *state = ss > 0 && cap > 0 && ddl_w.lz_compress ? ddl_map((size_t)ss) : NULL;
	if (!state) {
		dlclose(h);
		return -1;
	}
	ddl_w.zctx = state;
	ddl_w.zcap = (size_t)cap;
	ddl_w.codec = DDL_CHUNKF_LZ4;
	return 0;
}

/* zstd at level 1. Returns 0 or -1 when libzstd.so.1 cannot be used. */
static int ddl_zstd_open(void)
{
	void *h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return -1;
	void *(*mk)(void) = (void *(*)(void))dlsym(h, "ZSTD_createCCtx");
	size_t (*bound)(size_t) = (size_t(*)(size_t))dlsym(h, "ZSTD_compressBound");
	ddl_w.z_compress = (size_t(*)(void *, void *, size_t, const void *, size_t, int))dlsym(
		h, "ZSTD_compressCCtx");
	ddl_w.z_iserror = (unsigned (*)(size_t))dlsym(h, "ZSTD_isError");
	if (!mk || !bound || !ddl_w.z_compress || !ddl_w.z_iserror) {
		dlclose(h);
		return -1;
	}
	void *ctx = mk();
	if (!ctx) {
		dlclose(h);
		return -1;
	}
	ddl_w.zcap = bound(DDL_STAGE_BYTES);
	ddl_w.zctx = ctx;
	ddl_w.codec = DDL_CHUNKF_ZSTD;
	return 0;
}

/* The codec asked for when its library loads, else the other one, else
 * none: a program on a machine without either still runs, writing raw.
 * Tried once, and never once a file was made: its header names the codec.
 * Its output buffer is mapped with the stage, on the first events. */
static void ddl_codec_open(void)
{
	if (ddl_w.codec_tried || ddl_w.created)
		return;
	ddl_w.codec_tried = 1;
	if (ddl_g.cfg.compress == DDL_COMPRESS_NONE)
		return;
	if (ddl_g.cfg.compress == DDL_COMPRESS_ZSTD) {
		if (ddl_zstd_open() < 0)
			ddl_lz4_open();
	} else if (ddl_lz4_open() < 0) {
		ddl_zstd_open();
	}
}

/* Writes all of buf; returns 0 or a negative errno. Async-signal-safe. */
static int ddl_write_all(int fd, const struct iovec *iov0, int n)
{
	struct iovec iov[4];
	memcpy(iov, iov0, (size_t)n * sizeof *iov);
	struct iovec *v = iov;
	while (n > 0) {
		long r = syscall(SYS_writev, fd, v, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO;
		size_t left = (size_t)r;
		while (n > 0 && left >= v->iov_len) {
			left -= v->iov_len;
			v++;
			n--;
		}
		if (n > 0) {
			v->iov_base = (char *)v->iov_base + left;
			v->iov_len -= left;
		}
	}
	return 0;
}

static int ddl_chunk_write(int fd, uint16_t type, const void *p, size_t n, int may_compress)
{
	const void *out = p;
	uint32_t size = (uint32_t)n;
	unsigned flags = 0;
	/* Either codec fails cleanly when the output would not fit in zcap
	 * (a strings chunk may be longer than a stage): the chunk goes raw. */
	if (may_compress && ddl_w.codec && ddl_w.zbuf && n >= 256 && n <= DDL_CHUNK_MAX) {
		size_t z = 0;
		if (ddl_w.codec == DDL_CHUNKF_LZ4) {
			int r = ddl_w.lz_compress(ddl_w.zctx, p, ddl_w.zbuf, (int)n, (int)ddl_w.zcap, 1);
			z = r > 0 ? (size_t)r : 0;
		} else {
			size_t r = ddl_w.z_compress(ddl_w.zctx, ddl_w.zbuf, ddl_w.zcap, p, n, 1);
			z = ddl_w.z_iserror(r) ? 0 : r;
		}
		if (z && z < n && (uint64_t)z * DDL_CHUNK_RATIO_MAX >= n) {
			out = ddl_w.zbuf;
			size = (uint32_t)z;
			flags = ddl_w.codec;
		}
	}
	struct ddl_chunk c = ddl_chunk_make(type, flags, out, size, (uint32_t)n);
	struct iovec iov[2] = {{&c, sizeof c}, {(void *)out, c.size}};
	return ddl_write_all(fd, iov, 2);
}

static void ddl_header_fill(struct ddl_file_header *h)
{
	const struct ddl_clock_sample *s = &ddl_g.start;
	memset(h, 0, sizeof *h);
	memcpy(h->ident, DDL_IDENT, 4);
	h->byte_order = DDL_BYTE_ORDER_MAGIC;
	h->version = DDL_FORMAT_VERSION;
	h->min_reader = ddl_w.codec == DDL_CHUNKF_LZ4 ? DDL_FORMAT_MIN_READER_LZ4 : DDL_FORMAT_MIN_READER;
	h->header_size = sizeof *h;
	h->features = (ddl_w.codec == DDL_CHUNKF_ZSTD ? DDL_FEAT_ZSTD : 0) |
	              (ddl_w.codec == DDL_CHUNKF_LZ4 ? DDL_FEAT_LZ4 : 0) |
	              (ddl_g.cfg.trace_socket ? DDL_FEAT_SOCKET : 0) |
	              (ddl_g.cfg.trace_cuda ? DDL_FEAT_CUDA : 0) | (ddl_g.cfg.trace_nccl ? DDL_FEAT_NCCL : 0) |
	              (ddl_g.cfg.trace_file ? DDL_FEAT_FILE : 0) | (ddl_g.cfg.trace_mpi ? DDL_FEAT_MPI : 0);
	h->pid = (uint32_t)getpid();
	h->ppid = (uint32_t)ddl_g.ppid;
	h->rank = ddl_g.rank;
	h->world_size = ddl_g.world_size;
	h->local_rank = ddl_g.local_rank;
	h->clock_source = ddl_clock_tsc ? DDL_CLOCK_TSC : DDL_CLOCK_MONOTONIC;
	h->tick_hz = ddl_clock_hz();
	h->start_ticks = s->ticks;
	h->start_mono_ns = s->mono_ns;
	h->start_real_ns = s->real_ns;
	h->exec_gen = ddl_g.exec_gen;
	memcpy(h->host, ddl_g.host, sizeof h->host);
	memcpy(h->run_id, ddl_g.cfg.run_id, sizeof h->run_id);
	h->hcrc = ddl_crc32c(h, sizeof *h - 4);
}

/* The trace file of exec image GEN of this process into ddl_w.path. */
static void ddl_file_gen_path(unsigned gen)
{
	if (gen == 0)
		snprintf(ddl_w.path, sizeof ddl_w.path, "%s/%s.%d.ddlt", ddl_g.cfg.dir, ddl_g.host,
		         (int)getpid());
	else
		snprintf(ddl_w.path, sizeof ddl_w.path, "%s/%s.%d.%u.ddlt", ddl_g.cfg.dir, ddl_g.host,
		         (int)getpid(), gen);
}

/* Whether image GEN's file exists. */
static int ddl_file_gen_taken(unsigned gen)
{
	struct stat st;
	ddl_file_gen_path(gen);
	return lstat(ddl_w.path, &st) == 0;
}

/* Creates HOST.PID.ddlt (or HOST.PID.N.ddlt after exec), never overwriting. */
static int ddl_file_create(void)
{
	struct ddl_file_header h;
	struct stat ds;
	int fd = -1;
	/* the launcher's and the constructor's rule again (the directory may
	 * have been replaced since): a real directory of ours, never a link */
	int trap = ddl_tracedir_prepare(ddl_g.cfg.dir, 1, &ds);
	if (trap < 0)
		return trap;
	if (trap == DDL_TRACEDIR_LINK || trap == DDL_TRACEDIR_NOTDIR)
		return -ENOTDIR;
	if (trap)
		return -EPERM;
	/* After exec the images before this one hold .0 (no number), .1 ...
	 * .K: the first free number is found by doubling, then halving (a
	 * dozen lookups after a thousand execs, not a thousand), and taken
	 * with O_EXCL, counting on from it should another process of this pid
	 * (a namespace's) have it. */
	unsigned gen = 0;
	if (ddl_file_gen_taken(0)) {
		unsigned lo = 0, hi = 1; /* lo taken, hi to be looked at */
		while (hi < (1u << 30) && ddl_file_gen_taken(hi)) {
			lo = hi;
			hi *= 2;
		}
		while (hi - lo > 1) {
			unsigned mid = lo + (hi - lo) / 2;
			if (ddl_file_gen_taken(mid))
				lo = mid;
			else
				hi = mid;
		}
		gen = hi;
	}
	for (unsigned tries = 0; tries < 1000 && fd < 0; tries++, gen++) {
		ddl_file_gen_path(gen);
		ddl_g.exec_gen = gen;
		fd = open(ddl_w.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0)
		return -errno;
	ddl_header_fill(&h);
	struct iovec iov = {&h, sizeof h};
	struct stat st;
	int rc = ddl_write_all(fd, &iov, 1);
	if (rc == 0 && fstat(fd, &st) == 0) {
		ddl_w.dev = st.st_dev;
		ddl_w.ino = st.st_ino;
	}
	syscall(SYS_close, fd);
	if (rc < 0) {
		/* no header, no trace: a file we made and cannot start (a full
		 * disk) would only be an empty file for the reader to refuse */
		unlink(ddl_w.path);
		return rc;
	}
	ddl_w.created = 1;
	ddl_str.done = 0;
	return 0;
}

/* Opens our file for append and checks it is still the file we made. */
static int ddl_file_open(void)
{
	int fd = open(ddl_w.path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_dev != ddl_w.dev || st.st_ino != ddl_w.ino) {
		syscall(SYS_close, fd);
		return -ESTALE;
	}
	return fd;
}

/* The stage and the codec's output, mapped on the first flush that writes
 * (mmap: a signal handler's flush may be the first). Without room for the
 * codec's output chunks go raw. Returns 0 or -ENOMEM. */
static int ddl_buffers_map(void)
{
	if (!ddl_w.stage && !(ddl_w.stage = ddl_map(DDL_STAGE_BYTES)))
		return -ENOMEM;
	if (ddl_w.codec && !ddl_w.zbuf)
		ddl_w.zbuf = ddl_map(ddl_w.zcap);
	return 0;
}

static int ddl_rings_pending(void)
{
	for (struct ddl_thread *t = ddl_threads_first(); t; t = t->next)
		if (atomic_load(&t->tail) !=
		    atomic_load_explicit((_Atomic uint64_t *)&t->head, memory_order_acquire))
			return 1;
	return 0;
}

/*
 * One flush, with the file lock held. compress = 0 on signal paths (zstd
 * allocates; a dying process is better served by a quick raw write).
 * end = 0 for none, else the chunk type and reason. Returns 0 or a
 * negative errno.
 */
static int ddl_flush_locked(int compress, uint16_t end_type, uint32_t reason, int32_t value,
                            int string_tries)
{
	if (ddl_w.broken)
		return -EIO;
	/* the calls its threads are blocked in, a second or more */
	uint64_t open_sig;
	size_t nopen = ddl_open_scan(&open_sig);
	if (!ddl_w.created) {
		/* A process that recorded nothing leaves no file: shell scripts
		 * and helpers around the job would only add noise. But the
		 * command the launcher started (same pid after its exec) leaves
		 * one at its end, with header, command line and exit, so that
		 * a run which did nothing we record still shows what ran; and
		 * so does one blocked in a call from the start (a hang). Not
		 * at exec: the next image, the same process, leaves it. */
		if (!ddl_rings_pending() && !nopen &&
		    !(end_type == DDL_CHUNK_END && ddl_g.cfg.command_pid == (long)getpid()))
			return 0;
		int rc = ddl_file_create();
		if (rc < 0)
			return rc;
	}
	/* An idle process appends nothing, but a clock sample every second
	 * (its heartbeat: a trace cut short by SIGKILL shows how long the
	 * process lived on, blocked or computing, after its last call), and
	 * the calls its threads are blocked in when those change. */
	struct ddl_clock_sample s;
	ddl_clock_sample(&s);
	if (!end_type && !ddl_rings_pending() && open_sig == ddl_w.open_sig &&
	    __atomic_load_n(&ddl_str.len, __ATOMIC_RELAXED) == ddl_str.done &&
	    s.mono_ns - ddl_w.last_sample_ns < 1000000000LL) {
		ddl_threads_reap();
		return 0;
	}
	if (ddl_buffers_map() < 0)
		return -ENOMEM;
	int fd = ddl_file_open();
	if (fd < 0)
		return fd;
	int rc = ddl_chunk_write(fd, DDL_CHUNK_CLOCK, &s, sizeof s, 0);
	ddl_w.last_sample_ns = s.mono_ns;
	/* The string lock is held only to write the strings, not the events:
	 * threads meeting a new peer wait for one write at most. */
	if (rc == 0 && __atomic_load_n(&ddl_str.len, __ATOMIC_RELAXED) > ddl_str.done &&
	    ddl_spin_try(&ddl_str.lock, string_tries)) {
		rc = ddl_chunk_write(fd, DDL_CHUNK_STRINGS, ddl_str.buf + ddl_str.done,
		                     ddl_str.len - ddl_str.done, compress);
		if (rc == 0)
			ddl_str.done = ddl_str.len;
		ddl_spin_unlock(&ddl_str.lock);
	}
	size_t n = 0;
	uint64_t dropped = 0;
	for (struct ddl_thread *t = ddl_threads_first(); t && rc == 0; t = t->next) {
		uint64_t tail = atomic_load(&t->tail);
		uint64_t head = atomic_load_explicit((_Atomic uint64_t *)&t->head, memory_order_acquire);
		while (tail != head && rc == 0) {
			size_t take = (size_t)(head - tail);
			size_t off = (size_t)(tail & t->mask);
			if (take > ddl_stage_events - n)
				take = ddl_stage_events - n;
			if (take > t->mask + 1 - off)
				take = t->mask + 1 - off; /* up to the ring's wrap */
			/* packed launches become their event and args record here */
			size_t out;
			size_t used = ddl_ring_unpack(&ddl_w.stage[n], ddl_stage_events - n, &t->ev[off], take, &out);
			n += out;
			tail += used;
			atomic_store_explicit(&t->tail, tail, memory_order_release);
			if (n == ddl_stage_events || used < take) {
				rc = ddl_chunk_write(fd, DDL_CHUNK_EVENTS, ddl_w.stage,
				                     n * sizeof(struct ddl_event), compress);
				ddl_w.events += n;
				n = 0;
			}
		}
		dropped += t->dropped;
	}
	if (rc == 0 && n) {
		rc = ddl_chunk_write(fd, DDL_CHUNK_EVENTS, ddl_w.stage, n * sizeof(struct ddl_event),
		                     compress);
		ddl_w.events += n;
	}
	if (rc == 0 && open_sig != ddl_w.open_sig) {
		rc = ddl_chunk_write(fd, DDL_CHUNK_OPEN, ddl_open_buf, ddl_open_calls * sizeof(struct ddl_event), 0);
		if (rc == 0)
			rc = ddl_chunk_write(fd, DDL_CHUNK_OPEN_PHASES, ddl_open_buf + ddl_open_calls,
			                     (nopen - ddl_open_calls) * sizeof(struct ddl_event), 0);
		if (rc == 0)
			ddl_w.open_sig = open_sig;
	}
	if (rc == 0 && end_type) {
		struct ddl_end e = {ddl_w.events, dropped, reason, value};
		rc = ddl_chunk_write(fd, end_type, &e, sizeof e, 0);
	}
	syscall(SYS_close, fd);
	ddl_threads_reap();
	return rc;
}

/* A flush failed (rc < 0), with the file lock held, which this releases:
 * the trace is broken for good, said once for a process and the children
 * it forks. */
static void ddl_flush_failed(int rc)
{
	if (rc < 0 && !ddl_w.broken) {
		char why[4400];
		ddl_w.broken = 1;
		if (ddl_w.created)
			snprintf(why, sizeof why, "cannot write %s", ddl_w.path);
		else
			snprintf(why, sizeof why, "cannot create a trace file in %s", ddl_g.cfg.dir);
		ddl_spin_unlock(&ddl_w.lock);
		/* A full disk or a lost directory fails every process of a job:
		 * one line for a process and the children it forks. */
		ddl_writer_disable_once(why, -rc);
		return;
	}
	ddl_spin_unlock(&ddl_w.lock);
}

/* ddl_flush_here could not have the file lock within its tries. */
#define DDL_FLUSH_BUSY 1

/*
 * A flush on a program thread (inline mode, the last one without a writer,
 * a fatal signal's without one), with every signal blocked from before the
 * file lock is tried until after it is released: a handler that exits,
 * or jumps out, must never find the lock held by the code it interrupted,
 * nor cut the last flush short; and a write past RLIMIT_FSIZE must not kill
 * the program (the writer thread blocks signals for the same reason): the
 * SIGXFSZ our write raised is taken back, unless one was pending already.
 * The thread's own calls meanwhile (the trace file's open) pass through
 * unrecorded. Tries the lock LOCK_TRIES times (-1: until it has it).
 * Returns 0, a negative errno (the trace is broken, said once), or
 * DDL_FLUSH_BUSY.
 */
static int ddl_flush_here(int compress, uint16_t end_type, uint32_t reason, int32_t value,
                          int lock_tries, int string_tries)
{
	sigset_t all, old, pend, xfsz;
	sigfillset(&all);
	sigemptyset(&xfsz);
	sigaddset(&xfsz, SIGXFSZ);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = DDL_FLUSH_BUSY;
	if (ddl_spin_try(&ddl_w.lock, lock_tries)) {
		int had = sigpending(&pend) == 0 && sigismember(&pend, SIGXFSZ);
		int hush = ddl_thread_hush();
		rc = ddl_flush_locked(compress, end_type, reason, value, string_tries);
		ddl_flush_failed(rc); /* and the lock released */
		ddl_thread_unhush(hush);
		if (!had && sigpending(&pend) == 0 && sigismember(&pend, SIGXFSZ)) {
			struct timespec zero = {0, 0};
			sigtimedwait(&xfsz, NULL, &zero);
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

static int ddl_flush(int compress, uint16_t end_type, uint32_t reason, int32_t value)
{
	ddl_spin_try(&ddl_w.lock, -1);
	if (ddl_w.finished) { /* an exiting thread wrote the end (a child's writer starting late) */
		ddl_spin_unlock(&ddl_w.lock);
		return 0;
	}
	/* bounded on the last flushes: a thread stuck holding the string lock
	 * must not keep the end chunk from being written */
	int rc = ddl_flush_locked(compress, end_type, reason, value, end_type ? 2000 : -1);
	ddl_flush_failed(rc);
	return rc;
}

/*
 * Inline mode (no writer thread, ddl_writer_start): the recording thread T
 * writes, from ddl_ring_room, once its ring is half full or once a flush
 * period has passed since the last flush; T->half makes the ring look
 * again DDL_INLINE_CHECK events later. USED is how full T's ring is.
 * Returns 1 when it wrote (the tails moved). Keeps errno; may run in a
 * signal handler: the file lock is only tried, and only LZ4 (no
 * allocation) compresses.
 */
int ddl_writer_inline(struct ddl_thread *t, uint64_t used)
{
	ddl_writer_start_pending(0); /* a forked child's writer, where it is safe now (by the mask) */
	uint64_t full_half = (t->mask + 1) / 2;
	uint64_t next = used + DDL_INLINE_CHECK;
	t->half = next < full_half ? next : full_half;
	if (used < full_half &&
	    ddl_mono_ns() - ddl_w.last_flush_ns < (int64_t)ddl_g.cfg.flush_ms * 1000000)
		return 0;
	if (ddl_w.owner != getpid() || ddl_w.finished || ddl_w.broken)
		return 0;
	int saved = errno;
	int rc = ddl_flush_here(ddl_w.codec == DDL_CHUNKF_LZ4, 0, 0, 0, 1, 64);
	errno = saved;
	if (rc == DDL_FLUSH_BUSY)
		return 0; /* another thread is writing */
	ddl_w.last_flush_ns = ddl_mono_ns();
	t->half = DDL_INLINE_CHECK < full_half ? DDL_INLINE_CHECK : full_half;
	return 1;
}

/* Called from wrappers: keeps errno. */
void ddl_writer_wake(void)
{
	int saved = errno;
	atomic_store(&ddl_w.wake, 1);
	syscall(SYS_futex, &ddl_w.wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	errno = saved;
}

/*
 * The writer works with a descriptor table of its own (unshare(CLONE_FILES),
 * then every inherited descriptor closed), so the program can neither close
 * nor renumber the descriptors we write through, and our opens never take
 * the low numbers the program expects to get. Where that is refused, the
 * writer shares the program's table as before.
 */
static void ddl_writer_private_fds(void)
{
	/* One call: the new table copies no descriptor at all (Linux 5.9). */
	if (syscall(SYS_close_range, 0u, ~0u, CLOSE_RANGE_UNSHARE) == 0) {
		ddl_private_fds = 1;
		return;
	}
	if (unshare(CLONE_FILES) != 0)
		return;
	ddl_private_fds = 1;
	/* Older kernels: close every copied descriptor, listed from our table. */
	int d = open("/proc/thread-self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		return;
	char buf[4096];
	for (;;) {
		long n = syscall(SYS_getdents64, d, buf, sizeof buf);
		if (n <= 0)
			break;
		for (long off = 0; off < n;) {
			struct {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *e = (void *)(buf + off);
			char *end;
			long fd = strtol(e->name, &end, 10);
			if (end != e->name && !*end && fd != d)
				syscall(SYS_close, (int)fd);
			off += e->reclen;
		}
	}
	syscall(SYS_close, d);
}

/*
 * The next periodic flush: on a fixed grid from the writer's start, so the
 * time a flush takes, and how late the thread was woken, do not push every
 * later flush back (a relative sleep made each period DDLPROF_FLUSH_MS plus
 * both). A writer behind by a whole period starts the grid again from now.
 */
static int64_t ddl_next_deadline(int64_t deadline, int64_t period, int64_t now)
{
	deadline += period;
	return deadline > now ? deadline : now + period;
}

static void *ddl_writer_main(void *arg)
{
	(void)arg;
	ddl_thread_mark_internal();
	ddl_writer_private_fds();
	ddl_on_writer = 1;
	int64_t period = (int64_t)ddl_g.cfg.flush_ms * 1000000;
	int64_t deadline = ddl_mono_ns() + period;
	int ok = 1;
	while (!atomic_load(&ddl_w.stop)) {
		if (!atomic_exchange(&ddl_w.wake, 0)) {
			struct timespec at = {(time_t)(deadline / 1000000000), (long)(deadline % 1000000000)};
			/* an absolute CLOCK_MONOTONIC time; woken early by ddl_writer_wake */
			syscall(SYS_futex, &ddl_w.wake, FUTEX_WAIT_BITSET_PRIVATE, 0, &at, NULL,
			        FUTEX_BITSET_MATCH_ANY);
		}
		atomic_store(&ddl_w.wake, 0);
		int64_t now = ddl_mono_ns();
		if (now >= deadline)
			deadline = ddl_next_deadline(deadline, period, now);
		if (atomic_exchange(&ddl_w.sig_req, 0)) {
			/* a fatal signal on a program thread: write everything, uncompressed */
			uint32_t r = ddl_w.sig_reason;
			ok = ddl_flush(0, r ? DDL_CHUNK_END : 0, r, ddl_w.sig_value) == 0;
			atomic_store(&ddl_w.sig_done, 1);
			syscall(SYS_futex, &ddl_w.sig_done, FUTEX_WAKE_PRIVATE, 64, NULL, NULL, 0);
		} else if (!atomic_load(&ddl_w.stop)) {
			ok = ddl_flush(1, 0, 0, 0) == 0;
		}
		if (!ok)
			break;
	}
	if (ok && atomic_load(&ddl_w.stop)) {
		uint32_t r = ddl_w.end_reason;
		ddl_flush(1, r == DDL_END_EXEC ? DDL_CHUNK_EXEC : r ? DDL_CHUNK_END : 0, r, ddl_w.end_value);
	}
	atomic_store(&ddl_w.alive, 0);
	syscall(SYS_futex, &ddl_w.alive, FUTEX_WAKE_PRIVATE, 64, NULL, NULL, 0);
	atomic_store(&ddl_w.sig_done, 1);
	syscall(SYS_futex, &ddl_w.sig_done, FUTEX_WAKE_PRIVATE, 64, NULL, NULL, 0);
	return NULL;
}

/*
 * Whether a thread of ours could cost the program a process: RLIMIT_NPROC
 * counts every thread of the user's (root's, in the first user namespace,
 * are not held to it, but root's in a container are: uid 0 is not taken
 * to be free of it), and a limit this low is one a program may meet. The kernel's own default, half
 * its thread maximum, is far above.
 */
#define DDL_NPROC_TIGHT 16384

static int ddl_nproc_tight(void)
{
	struct rlimit rl;
	return getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	       rl.rlim_cur <= DDL_NPROC_TIGHT;
}

static int ddl_tls_sum(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_TLS)
			*(size_t *)data += info->dlpi_phdr[i].p_memsz + info->dlpi_phdr[i].p_align;
	return 0;
}

/*
 * The writer's stack: 64 KiB of its own (32 ran every test, under ASan
 * too) beside the static TLS of every loaded object, which glibc carves
 * out of the size asked for: a program whose libraries hold large
 * thread-locals must not leave the writer a few KiB.
 */
static size_t ddl_writer_stack_size(void)
{
	size_t tls = 0, page = (size_t)getpagesize();
	dl_iterate_phdr(ddl_tls_sum, &tls);
	return (64 * 1024 + tls + page - 1) & ~(page - 1);
}

/*
 * Starts the writer thread with every signal blocked, so signals meant for
 * the program are never delivered to it (and a write past RLIMIT_FSIZE only
 * leaves SIGXFSZ pending there). Where that thread would count against a
 * tight process limit, or cannot be made for want of one (EAGAIN), there is
 * none: inline mode, the recording threads write (ddl_writer_inline), and
 * the program keeps every process its limit allows. Returns 0 or a
 * negative errno.
 */
int ddl_writer_start(void)
{
	sigset_t all, old;
	pthread_attr_t a;
	if (ddl_w.running || ddl_w.finished)
		return 0;
	ddl_w.owner = getpid();
	if (!ddl_w.told) { /* kept across fork: shared with every child */
		void *p = mmap(NULL, sizeof *ddl_w.told, PROT_READ | PROT_WRITE,
		               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		ddl_w.told = p == MAP_FAILED ? NULL : p;
	}
	if (!ddl_w.stage && ddl_g.cfg.as_limited)
		ddl_stage_events = 4096; /* a program under ulimit -v keeps more of it */
	/* The codec loads here, on the program's thread: the writer thread's
	 * first malloc would reserve a 64 MiB arena of address space. */
	ddl_codec_open();
	int mode = ddl_g.cfg.writer;
	if (mode == DDL_WRITER_AUTO)
		mode = ddl_w.inline_mode || ddl_nproc_tight() ? DDL_WRITER_INLINE : DDL_WRITER_THREAD;
	int rc = EAGAIN;
	atomic_store(&ddl_w.stop, 0);
	atomic_store(&ddl_w.stopping, 0);
	if (mode == DDL_WRITER_THREAD) {
		atomic_store(&ddl_w.alive, 1);
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		pthread_attr_init(&a);
		pthread_attr_setstacksize(&a, ddl_writer_stack_size());
		rc = pthread_create(&ddl_w.thread, &a, ddl_writer_main, NULL);
		pthread_attr_destroy(&a);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (rc == 0) {
			pthread_setname_np(ddl_w.thread, "ddlprof-writer");
			ddl_w.running = 1;
			ddl_g.writer_inline = 0; /* a forked child's inline start, if it had one, is over */
			atomic_store(&ddl_w.start_pending, 0);
			return 0;
		}
		atomic_store(&ddl_w.alive, 0);
		if (rc != EAGAIN || ddl_g.cfg.writer == DDL_WRITER_THREAD)
			return -rc;
	}
	ddl_w.inline_mode = 1;
	ddl_g.writer_inline = 1;
	ddl_w.last_flush_ns = ddl_mono_ns();
	return 0;
}

/*
 * A forked child's writer thread starts when the child first records (its
 * first ring), not in fork() itself: most children exec or exit at once,
 * and a thread made for each of them cost the parent's fork and wait a
 * clone, the thread's set-up and a CPU to run it on, milliseconds apiece
 * beside busy threads on a loaded machine (bench/forkbusy). Until then the
 * child is in inline mode: its threads write their own events, and its
 * exit or exec writes from the exiting thread.
 *
 * pthread_create is not async-signal-safe (it allocates; a handler may
 * have interrupted malloc), and a recorded call may run in a signal
 * handler; fork() resets those locks in the child, which is why the
 * writer could start there. Later it starts from a call no handler may
 * make (one that is not async-signal-safe: a condition or semaphore wait,
 * CUDA, NCCL, MPI, gloo, the Python hook, markers), or from a socket or
 * file call made with no signal blocked, as at fork (a handler runs with
 * its own signal blocked, but for SA_NODEFER); and only in the child
 * itself (a vfork child of it shares this memory). A child that makes
 * only socket and file calls with signals blocked stays in inline mode:
 * its events are written as it records them, and it has no heartbeat nor
 * --hang-timeout watchdog.
 */
static int ddl_fork_mask_empty;

/* Whether the calling thread blocks no signal at all. */
static int ddl_mask_empty(void)
{
	sigset_t cur;
	sigemptyset(&cur); /* the kernel fills 8 of glibc's 128 bytes: the rest stays empty */
	return pthread_sigmask(SIG_BLOCK, NULL, &cur) == 0 && sigisemptyset(&cur);
}

void ddl_writer_start_later(void)
{
	if (ddl_w.inline_mode || ddl_g.cfg.writer == DDL_WRITER_INLINE)
		return; /* inline in the parent: inline here too (ddl_writer_start) */
	ddl_fork_mask_empty = ddl_mask_empty();
	ddl_w.owner = getpid();
	ddl_w.last_flush_ns = ddl_mono_ns();
	ddl_g.writer_inline = 1; /* meanwhile */
	atomic_store(&ddl_w.start_pending, 1);
}

void ddl_writer_start_pending(unsigned family)
{
	if (ddl_likely(!atomic_load_explicit(&ddl_w.start_pending, memory_order_relaxed)))
		return;
	int saved = errno;
	int safe = (family & ~(DDL_FAM_SOCKET | DDL_FAM_FILE)) != 0 || (ddl_fork_mask_empty && ddl_mask_empty());
	if (!safe || ddl_w.owner != getpid() || !ddl_spin_try(&ddl_w.lock, 64)) {
		errno = saved;
		return;
	}
	/* under the file lock: an exiting thread writes its end under it too */
	if (ddl_w.finished || atomic_load(&ddl_w.stopping) || !atomic_exchange(&ddl_w.start_pending, 0)) {
		ddl_spin_unlock(&ddl_w.lock);
		errno = saved;
		return;
	}
	int hush = ddl_thread_hush(); /* what starting a thread calls is not the program's */
	int rc = ddl_writer_start();
	ddl_spin_unlock(&ddl_w.lock);
	if (rc < 0)
		ddl_writer_disable_once("cannot start the trace writer in a forked child", -rc);
	ddl_thread_unhush(hush);
	errno = saved;
}

/* After a failed exec the image goes on: its trace may too. */
void ddl_writer_reopen(void)
{
	ddl_w.finished = 0;
}

/*
 * Stops the writer thread, which writes everything buffered and then an end
 * (or exec) chunk when end_reason is set. Only in the process that owns the
 * writer (a vfork child shares our memory and must not touch it), and only
 * once: a signal handler calling _exit while exit() is flushing returns at
 * once instead of waiting on itself.
 */
void ddl_writer_stop(uint32_t end_reason, int32_t value)
{
	if (ddl_w.owner != getpid() || ddl_w.finished)
		return;
	if (atomic_exchange(&ddl_w.stopping, 1)) {
		/* Re-entered (a handler's _exit while exit() stops the writer): let
		 * the writer finish its last flush, for at most five seconds. */
		struct timespec step = {0, 100000000};
		for (int i = 0; i < 50 && atomic_load(&ddl_w.alive) &&
		                !pthread_equal(pthread_self(), ddl_w.thread); i++)
			syscall(SYS_futex, &ddl_w.alive, FUTEX_WAIT_PRIVATE, 1, &step, NULL, 0);
		return;
	}
	unsigned lost = ddl_threads_unrecorded();
	if (end_reason && lost) /* the exact count, beside the powers of two said on the way */
		ddl_meta_unrecorded(lost);
	if (ddl_w.running && !pthread_equal(pthread_self(), ddl_w.thread)) {
		ddl_w.end_reason = end_reason;
		ddl_w.end_value = value;
		atomic_store(&ddl_w.stop, 1);
		ddl_writer_wake();
		pthread_join(ddl_w.thread, NULL);
		ddl_w.running = 0;
	} else {
		/* No writer (inline mode, or it failed): write from here, maybe
		 * in a signal handler (_exit): zstd would allocate. */
		uint16_t type = end_reason == DDL_END_EXEC ? DDL_CHUNK_EXEC : end_reason ? DDL_CHUNK_END : 0;
		ddl_flush_here(ddl_w.codec == DDL_CHUNKF_LZ4, type, end_reason, value, -1, 2000);
	}
	if (end_reason)
		ddl_w.finished = 1; /* nothing is written after an end or exec chunk */
}

/*
 * _exit or _Exit of a process that has no trace file and nothing buffered
 * (a forked child leaving at once, a helper that recorded nothing): the
 * writer's last flush would write nothing, so it is neither woken nor
 * joined. On a busy machine each hand-over between the two threads waits
 * for a CPU, milliseconds apiece, and fork plus wait costs the parent all
 * of them. The file lock is taken and kept, so the writer cannot start a
 * file in the moment before the process ends. Returns 1 when so (the caller
 * exits now), 0 when the writer is to be stopped as usual.
 */
int ddl_writer_exit_idle(void)
{
	if (ddl_w.owner != getpid() || ddl_w.finished || ddl_w.created ||
	    atomic_load(&ddl_w.stopping) || ddl_g.cfg.command_pid == (long)getpid())
		return 0; /* the launcher's command leaves a trace even when it recorded nothing */
	if (!ddl_spin_try(&ddl_w.lock, 64))
		return 0; /* the writer is flushing: let it finish */
	if (ddl_w.created || ddl_rings_pending()) {
		ddl_spin_unlock(&ddl_w.lock);
		return 0;
	}
	ddl_w.finished = 1; /* and the lock stays held: nothing more is written */
	return 1;
}

/*
 * From a fatal-signal handler (async-signal-safe: atomics, clock_gettime
 * and futex only). With end_reason set the process is about to die: the
 * writer writes what is buffered and an end chunk. With 0 a handler of the
 * program's runs next, which may end the process by any means (even a raw
 * exit_group) or carry on: the writer writes what is buffered, no end
 * chunk. Either way we wait up to a second for it. A program that takes
 * such signals all the time (a runtime catching its own faults) pays for
 * one such flush per flush period at most: within a period of the last
 * one the writer is only woken, and what the handler's end would lose is
 * what SIGKILL would. Without a live writer, we write from here if the
 * file lock is free within about 50 ms.
 */
void ddl_writer_flush_signal(uint32_t end_reason, int32_t value)
{
	if (ddl_w.owner != getpid() || ddl_w.broken || ddl_w.finished)
		return;
	unsigned lost = ddl_threads_unrecorded();
	if (end_reason && lost) /* dying: the exact count, as ddl_writer_stop writes it */
		ddl_meta_unrecorded(lost);
	if (ddl_w.running && pthread_equal(pthread_self(), ddl_w.thread))
		return;
	if (ddl_w.running && atomic_load(&ddl_w.alive)) {
		int64_t last = atomic_load(&ddl_w.sig_flushed_ns);
		if (!end_reason && last && ddl_mono_ns() - last < (int64_t)ddl_g.cfg.flush_ms * 1000000) {
			ddl_writer_wake();
			return;
		}
		ddl_w.sig_reason = end_reason;
		ddl_w.sig_value = value;
		atomic_store(&ddl_w.sig_done, 0);
		atomic_store(&ddl_w.sig_req, 1);
		ddl_writer_wake();
		struct timespec step = {0, 100000000};
		for (int i = 0; i < 10 && !atomic_load(&ddl_w.sig_done); i++)
			syscall(SYS_futex, &ddl_w.sig_done, FUTEX_WAIT_PRIVATE, 0, &step, NULL, 0);
		atomic_store(&ddl_w.sig_flushed_ns, ddl_mono_ns());
		return;
	}
	/* no writer thread (inline mode, or it failed): from here, as often as
	 * the writer would be asked */
	int64_t last = atomic_load(&ddl_w.sig_flushed_ns);
	if (!end_reason && last && ddl_mono_ns() - last < (int64_t)ddl_g.cfg.flush_ms * 1000000)
		return;
	int saved = errno;
	ddl_flush_here(0, end_reason ? DDL_CHUNK_END : 0, end_reason, value, 600, 64);
	atomic_store(&ddl_w.sig_flushed_ns, ddl_mono_ns());
	errno = saved;
}

/*
 * unshare(CLONE_NEWUSER or CLONE_NEWNS) and setns into such namespaces need a
 * single-threaded process: the writer steps aside (writing what it has)
 * and comes back after. Returns 1 when it was paused. Keeps errno.
 */
int ddl_writer_pause(void)
{
	if (!ddl_w.running || ddl_w.owner != getpid())
		return 0;
	int saved = errno;
	ddl_writer_stop(0, 0);
	errno = saved;
	return 1;
}

void ddl_writer_resume(int paused)
{
	if (!paused)
		return;
	int saved = errno;
	int rc = ddl_writer_start();
	if (rc < 0)
		ddl_disable("cannot restart the trace writer thread", -rc);
	errno = saved;
}

/* Child after fork: no writer thread, no file yet; everything restarts. */
void ddl_writer_after_fork_child(void)
{
	atomic_store(&ddl_w.lock, 0);
	atomic_store(&ddl_str.lock, 0);
	ddl_str.done = 0;
	ddl_w.created = 0;
	ddl_w.running = 0;
	ddl_w.events = 0;
	ddl_w.owner = getpid();
	atomic_store(&ddl_w.wake, 0);
	atomic_store(&ddl_w.alive, 0);
	atomic_store(&ddl_w.stopping, 0);
	atomic_store(&ddl_w.sig_req, 0);
	atomic_store(&ddl_w.sig_flushed_ns, 0); /* the child's own first fault flushes */
	ddl_w.finished = 0;
	ddl_w.open_sig = 0; /* a new file: its open calls are its own */
	atomic_store(&ddl_w.start_pending, 0);
}

/*
 * fork() must not copy the string table half-grown: hold its lock across,
 * unless fork was called from a signal handler that interrupted its holder.
 */
static int ddl_fork_held;

void ddl_writer_atfork_prepare(void)
{
	ddl_fork_held = ddl_spin_try(&ddl_str.lock, 600);
}

void ddl_writer_atfork_parent(void)
{
	if (ddl_fork_held)
		ddl_spin_unlock(&ddl_str.lock);
}
