/*
 * Shared machinery of the GPU wrappers: the tables of real functions (gpu.h), the
 * stream and kernel-name tables, and the event-pair back end.
 *
 * Event pairs (DESIGN.md section 6): a wrapper records a pooled CUDA event
 * on the stream before the real call and another after it, and queues the
 * pair. A resolver thread of ours polls the queue off the hot path, and
 * turns each completed pair into a device interval on the trace clock:
 * per device it keeps an anchor event whose completion it watched happen
 * (so its trace-clock time is known to a few microseconds), and measures
 * every event from the newest anchor with cudaEventElapsedTime. Anchors are
 * renewed every second, which keeps the float milliseconds that API returns
 * precise to well under a microsecond.
 */
#ifdef DDL_HAVE_CUDA
#include <link.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu.h"

struct ddl_gpu_real ddl_gpu_real;

#define DDL_X_CUDART(n, r, p) {#n, "cuda-runtime", (void **)&ddl_gpu_real.n},
#define DDL_X_CUDRV(n, r, p) {#n, "cuda-driver", (void **)&ddl_gpu_real.n},
#define DDL_X_NCCL(n, r, p) {#n, "nccl", (void **)&ddl_gpu_real.n},
const struct ddl_hook_entry ddl_gpu_hooks[] = {
	DDL_CUDART_HOOKS(DDL_X_CUDART)
	DDL_CUDA_DRIVER_HOOKS(DDL_X_CUDRV)
	DDL_NCCL_HOOKS(DDL_X_NCCL)
};
#undef DDL_X_CUDART
#undef DDL_X_CUDRV
#undef DDL_X_NCCL
const size_t ddl_gpu_nhooks = sizeof ddl_gpu_hooks / sizeof ddl_gpu_hooks[0];
__thread struct ddl_gpu_tls ddl_gtls __attribute__((tls_model("initial-exec")));
_Atomic int ddl_gpu_started;

static pthread_mutex_t ddl_gpu_lock = PTHREAD_MUTEX_INITIALIZER;

void *ddl_gpu_next(const char *name)
{
	if (ddl_unlikely(!ddl_g.initialised))
		ddl_init();
	return ddl_real_find(name);
}

/*
 * DDL_NEXT's slow path: finds NAME and stores it in SLOT, unless a thread
 * got there first; returns what the slot holds (NULL when not found). The
 * store is made under a lock, not by compare-and-swap: ThreadSanitizer
 * counts a failed swap as a write, racing with the plain reads of the slot
 * that wrappers make after DDL_NEXT.
 */
static pthread_mutex_t ddl_next_lock = PTHREAD_MUTEX_INITIALIZER;

void *ddl_gpu_next_slot(void **slot, const char *name)
{
	void *f = ddl_gpu_next(name); /* not under our lock: dlsym takes the loader's */
	/* the wrappers call through the slot itself, so it is filled before
	 * any returns; no signal handler of this thread comes in while it
	 * holds the lock (its own first call would wait for it). Once per slot. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_mutex_lock(&ddl_next_lock);
	void *cur = __atomic_load_n(slot, __ATOMIC_RELAXED);
	if (!cur && f)
		__atomic_store_n(slot, cur = f, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ddl_next_lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return cur;
}

int ddl_cuda_own_resolve(void)
{
	static const struct {
		const char *name;
		void **slot;
		int optional;
	} names[] = {
#define DDL_X_OWN(n, o) {#n, (void **)&ddl_gpu_real.n, o},
		DDL_CUDA_OWN(DDL_X_OWN)
#undef DDL_X_OWN
	};
	/* Once a runtime is complete, for good; until then every call looks again
	 * (the runtime may be loaded later). Optional calls do not count. */
	static _Atomic int done;
	if (atomic_load_explicit(&done, memory_order_acquire))
		return 0;
	/* Threads may get here together: the slots are read and filled under
	 * ddl_next_lock, the lookups made outside it (dlsym takes the loader's
	 * lock); ddl_gpu_real is read without a lock only once done. */
	enum { n = sizeof names / sizeof names[0] };
	void *f[n];
	/* no signal handler of this thread may come in while it holds the lock
	 * (its CUDA call would wait for it): blocked, until the table is done */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_mutex_lock(&ddl_next_lock);
	for (size_t i = 0; i < n; i++)
		f[i] = __atomic_load_n(names[i].slot, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ddl_next_lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	for (size_t i = 0; i < n; i++)
		if (!f[i])
			f[i] = ddl_gpu_next(names[i].name);
	int missing = 0;
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_mutex_lock(&ddl_next_lock);
	if (atomic_load_explicit(&done, memory_order_relaxed)) {
		/* completed meanwhile: the slots are no longer ours to write */
		pthread_mutex_unlock(&ddl_next_lock);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		void *cur = __atomic_load_n(names[i].slot, __ATOMIC_RELAXED);
		if (!cur && f[i])
			__atomic_store_n(names[i].slot, cur = f[i], __ATOMIC_RELEASE);
		/* a runtime without stream capture cannot be capturing */
		missing |= !cur && !names[i].optional;
	}
	if (!missing)
		atomic_store_explicit(&done, 1, memory_order_release);
	pthread_mutex_unlock(&ddl_next_lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return missing ? -1 : 0;
}

/* ---- pointer tables: lock-free lookup, insertion under ddl_gpu_lock ---- */

#define DDL_PTAB_SLOTS 8192

struct ddl_ptab {
	_Atomic uintptr_t key[DDL_PTAB_SLOTS];
	uint32_t val[DDL_PTAB_SLOTS];
	unsigned n;
};

static unsigned ddl_ptab_hash(uintptr_t k)
{
	uint64_t h = (uint64_t)k * 0x9E3779B97F4A7C15ull;
	return (unsigned)(h >> 51) & (DDL_PTAB_SLOTS - 1);
}

/* A kernel whose name could not be interned (the name table is full). */
#define DDL_NO_NAME 0xffffffffu

/* The value stored for K in the table at SLOT (mapped on the first put), or 0. */
static uint32_t ddl_ptab_find(void *_Atomic *slot, uintptr_t k)
{
	struct ddl_ptab *t = atomic_load_explicit(slot, memory_order_acquire);
	if (!t)
		return 0;
	for (unsigned i = 0, s = ddl_ptab_hash(k); i < DDL_PTAB_SLOTS; i++, s = (s + 1) & (DDL_PTAB_SLOTS - 1)) {
		uintptr_t x = atomic_load_explicit(&t->key[s], memory_order_acquire);
		if (x == k)
			return t->val[s];
		if (!x)
			return 0;
	}
	return 0;
}

/* Caller holds ddl_gpu_lock. Keeps the first value for a key; full tables stop growing. */
static void ddl_ptab_put(void *_Atomic *slot, uintptr_t k, uint32_t v)
{
	struct ddl_ptab *t = ddl_lazy(slot, sizeof *t);
	if (!t || t->n >= DDL_PTAB_SLOTS * 3 / 4)
		return;
	for (unsigned s = ddl_ptab_hash(k);; s = (s + 1) & (DDL_PTAB_SLOTS - 1)) {
		uintptr_t x = atomic_load_explicit(&t->key[s], memory_order_relaxed);
		if (x == k)
			return;
		if (!x) {
			t->val[s] = v;
			atomic_store_explicit(&t->key[s], k, memory_order_release);
			t->n++;
			return;
		}
	}
}

static void *_Atomic ddl_streams, *_Atomic ddl_funcs; /* struct ddl_ptab each */
static uint32_t ddl_next_stream = 1;

uint32_t ddl_stream_id_slow(cudaStream_t s)
{
	uintptr_t k = (uintptr_t)s;
	/* the per-thread default stream is one handle for every thread: key it by
	 * thread, so runs of one thread's kernels are not closed by another's */
	if (s == cudaStreamPerThread && ddl_self)
		k = (uintptr_t)s | (uintptr_t)ddl_self->idx << 16;
	uint32_t id = ddl_ptab_find(&ddl_streams, k);
	if (id)
		return id;
	struct ddl_thread *t = ddl_self;
	if (t)
		t->busy = 1; /* the string lock below */
	pthread_mutex_lock(&ddl_gpu_lock);
	id = ddl_ptab_find(&ddl_streams, k);
	if (!id) {
		id = ddl_next_stream;
		__atomic_store_n(&ddl_next_stream, id + 1, __ATOMIC_RELAXED); /* ddl_seg_close_all */
		char text[48];
		int n = k != (uintptr_t)s ? snprintf(text, sizeof text, "per-thread:%u", (unsigned)(k >> 16))
		                          : snprintf(text, sizeof text, "%p", (void *)s);
		ddl_strings_add(DDL_STR_STREAM, id, (uint32_t)ddl_gtls.dev, text, (size_t)n);
		ddl_ptab_put(&ddl_streams, k, id);
	}
	pthread_mutex_unlock(&ddl_gpu_lock);
	if (t)
		t->busy = 0;
	return id;
}

void ddl_kernel_register(const void *func, const char *name)
{
	if (!func || !name || !ddl_g.initialised || !atomic_load(&ddl_g.enabled))
		return;
	uint32_t id = ddl_name_intern(name);
	if (!id)
		return;
	pthread_mutex_lock(&ddl_gpu_lock);
	ddl_ptab_put(&ddl_funcs, (uintptr_t)func, id);
	pthread_mutex_unlock(&ddl_gpu_lock);
}

void ddl_kernel_alias(const void *handle, const void *func)
{
	int final = 1;
	uint32_t id = ddl_kernel_name_slow(func, 0, &final);
	id = id ? id : DDL_NO_NAME;
	if (!final) /* a stand-in: the handle is named at its launch instead */
		return;
	pthread_mutex_lock(&ddl_gpu_lock);
	ddl_ptab_put(&ddl_funcs, (uintptr_t)handle, id);
	pthread_mutex_unlock(&ddl_gpu_lock);
}

/* A kernel never registered with us: ask the driver, then the symbol table. */
uint32_t ddl_kernel_name_slow(const void *func, int driver, int *final)
{
	uint32_t id = ddl_ptab_find(&ddl_funcs, (uintptr_t)func);
	if (id)
		return id == DDL_NO_NAME ? 0 : id;
	struct ddl_thread *t = ddl_self;
	if (t)
		t->busy = 1;
	int saved = errno;
	char buf[160];
	const char *name = NULL;
	int deferred = 0; /* the runtime was not asked: ask again next time */
	if (driver) {
		static CUresult (*get_name_slot)(const char **, CUfunction);
		CUresult (*get_name)(const char **, CUfunction) = __atomic_load_n(&get_name_slot, __ATOMIC_ACQUIRE);
		if (!get_name) {
			get_name = (CUresult(*)(const char **, CUfunction))dlsym(RTLD_DEFAULT, "cuFuncGetName");
			__atomic_store_n(&get_name_slot, get_name, __ATOMIC_RELEASE);
		}
		if (get_name && get_name(&name, (CUfunction)(uintptr_t)func) != CUDA_SUCCESS)
			name = NULL;
	} else if (ddl_cuda_own_resolve() == 0 && ddl_gpu_real.cudaFuncGetName) {
		/* Kernels registered before we were loaded, and kernel handles
		 * (cudaKernel_t, as PyTorch launches with CUDA 12 and later): the
		 * runtime (12.3 and later) knows their names. Only with no error of
		 * the program's pending (else asked again at the next launch), and
		 * any error of ours cleared. */
		if (ddl_gpu_real.cudaPeekAtLastError() != cudaSuccess) {
			deferred = 1;
		} else if (ddl_gpu_real.cudaFuncGetName(&name, func) != cudaSuccess) {
			name = NULL;
			ddl_gpu_real.cudaGetLastError();
		}
	}
	Dl_info info;
	if (!name && dladdr(func, &info) && info.dli_sname && info.dli_saddr == func)
		name = info.dli_sname;
	if (!name) {
		snprintf(buf, sizeof buf, "kernel@%p", func);
		name = buf;
	}
	id = ddl_name_intern(name);
	*final = !deferred || name != buf;
	if (*final) {
		pthread_mutex_lock(&ddl_gpu_lock);
		ddl_ptab_put(&ddl_funcs, (uintptr_t)func, id ? id : DDL_NO_NAME); /* a miss is cached too */
		pthread_mutex_unlock(&ddl_gpu_lock);
	}
	errno = saved;
	if (t)
		t->busy = 0;
	return id;
}

/* ---- device intervals from back-end threads ---- */

void ddl_device_put(unsigned kind, unsigned flags, uint64_t t0, uint64_t t1, uint16_t tid,
                    int dev, uint32_t stream_id, int64_t corr, const struct ddl_args *a)
{
	struct ddl_thread *t = ddl_thread_internal_ring();
	if (!t)
		return;
	uint64_t h = t->head;
	unsigned n = a ? 2 : 1;
	if (!ddl_ring_claim(t, h, n, n))
		return;
	if (t1 < t0)
		t1 = t0;
	ddl_event_fill(&t->ev[h & t->mask], kind, flags | (a ? DDL_EVF_ARGS : 0), ddl_tidbits(tid), t0, t1,
	               corr, dev, stream_id);
	if (a)
		memcpy(&t->ev[(h + 1) & t->mask], a, sizeof *a);
	ddl_ring_publish(t, h + n);
}

/* ---- the event-pair back end ---- */

#define DDL_MAX_DEV 64
#define DDL_PENDING_MAX 16384
#define DDL_POOL_MAX 4096

struct ddl_pending {
	cudaEvent_t a, b;
	int dev;
	uint16_t kind, tid; /* kind: the device event's, DDL_EVF_* flags << 8 */
	uint32_t corr, stream_id;
};

static struct {
	struct ddl_pending *q; /* FIFO of queued pairs, DDL_PENDING_MAX long */
	size_t n;
	cudaEvent_t *pool[DDL_MAX_DEV]; /* free events per device */
	size_t npool[DDL_MAX_DEV];
	uint64_t skipped;
	pthread_t thread;
	int running;
	_Atomic int stop;
	_Atomic int captures; /* stream captures in progress in the process */
} ddl_pairs;

static struct {
	cudaEvent_t ev;
	cudaStream_t stream;
	uint64_t ticks; /* trace clock when ev completed */
	int valid;
} ddl_anchor[DDL_MAX_DEV];

static void ddl_pool_put_locked(int dev, cudaEvent_t e)
{
	if (!ddl_pairs.pool[dev])
		ddl_pairs.pool[dev] = calloc(DDL_POOL_MAX, sizeof(cudaEvent_t));
	if (ddl_pairs.pool[dev] && ddl_pairs.npool[dev] < DDL_POOL_MAX)
		ddl_pairs.pool[dev][ddl_pairs.npool[dev]++] = e;
	else
		ddl_gpu_real.cudaEventDestroy(e);
}

static cudaEvent_t ddl_pool_get(int dev)
{
	cudaEvent_t e = NULL;
	pthread_mutex_lock(&ddl_gpu_lock);
	if (ddl_pairs.npool[dev])
		e = ddl_pairs.pool[dev][--ddl_pairs.npool[dev]];
	pthread_mutex_unlock(&ddl_gpu_lock);
	if (!e && ddl_gpu_real.cudaEventCreateWithFlags(&e, cudaEventDefault) != cudaSuccess)
		e = NULL;
	return e;
}

void ddl_gpu_capture_begin(void)
{
	atomic_fetch_add(&ddl_pairs.captures, 1);
}

void ddl_gpu_capture_end(void)
{
	ddl_gtls.seg_skip = 0;
	int c = atomic_load(&ddl_pairs.captures);
	while (c > 0 && !atomic_compare_exchange_weak(&ddl_pairs.captures, &c, c - 1))
		;
}

/*
 * Records a start event on S, or returns NULL when this call goes untimed.
 * The runtime's sticky "last error" is the program's: we only act when none
 * is pending, and clear any error we cause ourselves.
 */
/*
 * Whether an event of ours may not go on S now: S is being captured into a
 * graph (the event would become part of it), or S is the legacy stream while
 * any capture is open (touching it would end a global capture with an
 * error). Call with no CUDA error of the program pending.
 */
static int ddl_stream_capturing(cudaStream_t s)
{
	int legacy = s == NULL || s == cudaStreamLegacy;
	if (legacy && atomic_load_explicit(&ddl_pairs.captures, memory_order_relaxed))
		return 1;
	enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
	if (ddl_gpu_real.cudaStreamIsCapturing && ddl_gpu_real.cudaStreamIsCapturing(s, &cs) != cudaSuccess) {
		ddl_gpu_real.cudaGetLastError();
		return 1;
	}
	return cs != cudaStreamCaptureStatusNone;
}

cudaEvent_t ddl_pair_start_event(cudaStream_t s, int dev)
{
	if (dev < 0 || dev >= DDL_MAX_DEV || !ddl_gpu_started || ddl_cuda_own_resolve() < 0)
		return NULL;
	if (ddl_gpu_real.cudaPeekAtLastError() != cudaSuccess || ddl_stream_capturing(s))
		return NULL;
	cudaEvent_t e = ddl_pool_get(dev);
	if (!e) {
		ddl_gpu_real.cudaGetLastError();
		return NULL;
	}
	if (ddl_gpu_real.cudaEventRecord(e, s) != cudaSuccess) {
		ddl_gpu_real.cudaGetLastError();
		pthread_mutex_lock(&ddl_gpu_lock);
		ddl_pool_put_locked(dev, e);
		pthread_mutex_unlock(&ddl_gpu_lock);
		return NULL;
	}
	return e;
}

void ddl_pair_end_event(cudaEvent_t a, cudaStream_t s, int dev, unsigned dev_kind, uint16_t tid,
                        uint32_t corr, uint32_t stream_id)
{
	if (!a)
		return;
	cudaEvent_t b = NULL;
	/* the stream may have begun a capture since the start event */
	int ok = ddl_gpu_real.cudaPeekAtLastError() == cudaSuccess && !ddl_stream_capturing(s);
	if (ok) {
		b = ddl_pool_get(dev);
		if (b && ddl_gpu_real.cudaEventRecord(b, s) != cudaSuccess) {
			ddl_gpu_real.cudaGetLastError();
			pthread_mutex_lock(&ddl_gpu_lock);
			ddl_pool_put_locked(dev, b);
			pthread_mutex_unlock(&ddl_gpu_lock);
			b = NULL;
		} else if (!b) {
			ddl_gpu_real.cudaGetLastError();
		}
	}
	pthread_mutex_lock(&ddl_gpu_lock);
	if (!b || !ddl_pairs.q || ddl_pairs.n >= DDL_PENDING_MAX) {
		ddl_pool_put_locked(dev, a);
		if (b)
			ddl_pool_put_locked(dev, b);
		ddl_pairs.skipped++;
	} else {
		ddl_pairs.q[ddl_pairs.n++] = (struct ddl_pending){
		    a, b, dev, (uint16_t)dev_kind, tid, corr, stream_id};
	}
	pthread_mutex_unlock(&ddl_gpu_lock);
}

/* ---- kernel segments ---- */

_Atomic int ddl_seg_on;
_Atomic int ddl_seg_open[DDL_SEG_MAX];
static pthread_mutex_t ddl_seg_lock = PTHREAD_MUTEX_INITIALIZER;
struct ddl_seg {
	cudaEvent_t start;
	cudaStream_t s;
	int dev;
	uint16_t tid;
	uint32_t corr;
};
static void *_Atomic ddl_segs; /* struct ddl_seg[DDL_SEG_MAX], mapped on the first run */

int ddl_seg_launch_slow(cudaStream_t s, uint32_t sid, uint16_t tid, uint32_t corr)
{
	if (ddl_gtls.seg_skip) {
		ddl_gtls.seg_skip--;
		return 0;
	}
	int opened = 0;
	struct ddl_seg *seg = ddl_lazy(&ddl_segs, DDL_SEG_MAX * sizeof *seg);
	pthread_mutex_lock(&ddl_seg_lock);
	if (seg && !atomic_load(&ddl_seg_open[sid])) {
		cudaEvent_t e = ddl_pair_start_event(s, ddl_gtls.dev);
		if (e) {
			seg[sid].start = e;
			seg[sid].s = s;
			seg[sid].dev = ddl_gtls.dev;
			seg[sid].tid = tid;
			seg[sid].corr = corr;
			atomic_store(&ddl_seg_open[sid], 1);
			opened = 1;
		}
	}
	pthread_mutex_unlock(&ddl_seg_lock);
	/* not another thread's run either, and an error of the program's pending
	 * (per thread): a capture is per stream, and ends by its own call */
	if (!opened && !atomic_load(&ddl_seg_open[sid]) && ddl_cuda_own_resolve() == 0 &&
	    ddl_gpu_real.cudaPeekAtLastError() != cudaSuccess)
		ddl_gtls.seg_skip = DDL_SEG_RETRY;
	return opened;
}

void ddl_seg_close_slow(uint32_t sid)
{
	struct ddl_seg *seg = atomic_load(&ddl_segs); /* mapped by the run's start */
	pthread_mutex_lock(&ddl_seg_lock);
	if (seg && atomic_load(&ddl_seg_open[sid])) {
		ddl_pair_end_event(seg[sid].start, seg[sid].s, seg[sid].dev,
		                   DDL_EV_DEV_KERNEL | DDL_EVF_RUN << 8, seg[sid].tid, seg[sid].corr, sid);
		atomic_store(&ddl_seg_open[sid], 0);
	}
	pthread_mutex_unlock(&ddl_seg_lock);
}

void ddl_seg_close_all(void)
{
	uint32_t n = __atomic_load_n(&ddl_next_stream, __ATOMIC_RELAXED);
	n = n < DDL_SEG_MAX ? n : DDL_SEG_MAX;
	for (uint32_t sid = 0; sid < n; sid++)
		if (atomic_load_explicit(&ddl_seg_open[sid], memory_order_relaxed))
			ddl_seg_close_slow(sid);
}

/* ---- the resolver thread ---- */

static double ddl_tpn; /* ticks per nanosecond, measured at each pass */

static uint64_t ddl_ms_ticks(double ms)
{
	return (uint64_t)(ms * 1e6 * ddl_tpn);
}

/* Watches a fresh event complete on an idle stream of DEV: an anchor. */
static int ddl_anchor_make(int dev)
{
	if (ddl_gpu_real.cudaSetDevice(dev) != cudaSuccess)
		goto fail;
	if (!ddl_anchor[dev].stream &&
	    ddl_gpu_real.cudaStreamCreateWithFlags(&ddl_anchor[dev].stream, cudaStreamNonBlocking) != cudaSuccess)
		goto fail;
	if (!ddl_anchor[dev].ev &&
	    ddl_gpu_real.cudaEventCreateWithFlags(&ddl_anchor[dev].ev, cudaEventDefault) != cudaSuccess)
		goto fail;
	uint64_t before = ddl_clock_now();
	if (ddl_gpu_real.cudaEventRecord(ddl_anchor[dev].ev, ddl_anchor[dev].stream) != cudaSuccess)
		goto fail;
	/* Poll: the anchor's time lies between the last "not ready" and the
	 * first "done", which polling keeps a few microseconds apart. */
	for (int i = 0; i < 200000; i++) {
		cudaError_t r = ddl_gpu_real.cudaEventQuery(ddl_anchor[dev].ev);
		uint64_t now = ddl_clock_now();
		if (r == cudaSuccess) {
			ddl_anchor[dev].ticks = before + (now - before) / 2;
			ddl_anchor[dev].valid = 1;
			return 0;
		}
		if (r != cudaErrorNotReady)
			goto fail;
		before = now;
		if (i > 100)
			sched_yield();
	}
fail:
	ddl_gpu_real.cudaGetLastError();
	return -1;
}

/* Resolves every completed pair; returns how many are still pending. */
static size_t ddl_resolve_pass(void)
{
	static uint64_t made[DDL_MAX_DEV];
	pthread_mutex_lock(&ddl_gpu_lock);
	size_t n = ddl_pairs.n;
	struct ddl_pending *work = n ? malloc(n * sizeof *work) : NULL;
	if (work)
		memcpy(work, ddl_pairs.q, n * sizeof *work);
	pthread_mutex_unlock(&ddl_gpu_lock);
	if (!work)
		return 0;
	ddl_tpn = ddl_clock_ticks_per_ns();
	uint64_t hz = (uint64_t)(ddl_tpn * 1e9);
	char *done = calloc(n, 1);
	for (size_t i = 0; done && i < n; i++) {
		struct ddl_pending *p = &work[i];
		cudaError_t r = ddl_gpu_real.cudaEventQuery(p->b);
		if (r == cudaErrorNotReady)
			continue;
		done[i] = 1;
		if (r != cudaSuccess) {
			ddl_gpu_real.cudaGetLastError();
			continue;
		}
		uint64_t now = ddl_clock_now();
		if (!ddl_anchor[p->dev].valid || now - made[p->dev] > hz) {
			if (ddl_anchor_make(p->dev) == 0)
				made[p->dev] = now;
		}
		if (!ddl_anchor[p->dev].valid)
			continue;
		float ma = 0, mb = 0;
		if (ddl_gpu_real.cudaEventElapsedTime(&ma, ddl_anchor[p->dev].ev, p->a) != cudaSuccess ||
		    ddl_gpu_real.cudaEventElapsedTime(&mb, ddl_anchor[p->dev].ev, p->b) != cudaSuccess) {
			ddl_gpu_real.cudaGetLastError();
			continue;
		}
		uint64_t base = ddl_anchor[p->dev].ticks;
		uint64_t t0 = ma >= 0 ? base + ddl_ms_ticks(ma) : base - ddl_ms_ticks(-ma);
		uint64_t t1 = mb >= 0 ? base + ddl_ms_ticks(mb) : base - ddl_ms_ticks(-mb);
		ddl_device_put(p->kind & 0xff, DDL_EVF_EVPAIR | p->kind >> 8, t0, t1, p->tid, p->dev,
		               p->stream_id, p->corr, NULL);
	}
	/* Drop the resolved ones from the shared queue (new pairs were appended
	 * after our snapshot, in order) and return their events to the pools. */
	size_t left = 0;
	pthread_mutex_lock(&ddl_gpu_lock);
	size_t keep = 0;
	for (size_t i = 0; i < ddl_pairs.n; i++) {
		if (i < n && done && done[i]) {
			ddl_pool_put_locked(ddl_pairs.q[i].dev, ddl_pairs.q[i].a);
			ddl_pool_put_locked(ddl_pairs.q[i].dev, ddl_pairs.q[i].b);
		} else {
			ddl_pairs.q[keep++] = ddl_pairs.q[i];
		}
	}
	ddl_pairs.n = keep;
	left = keep;
	pthread_mutex_unlock(&ddl_gpu_lock);
	free(done);
	free(work);
	return left;
}

static void *ddl_resolver_main(void *arg)
{
	(void)arg;
	ddl_thread_mark_internal();
	/* our queries must not count against a program's global-mode capture */
	enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
	if (ddl_gpu_real.cudaThreadExchangeStreamCaptureMode)
		ddl_gpu_real.cudaThreadExchangeStreamCaptureMode(&mode);
	while (!atomic_load(&ddl_pairs.stop)) {
		/* and while a capture is open, leave the runtime alone */
		if (!atomic_load_explicit(&ddl_pairs.captures, memory_order_relaxed))
			ddl_resolve_pass();
		struct timespec ts = {0, 2 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/*
 * Before the CUDA runtime tears itself down (our atexit handler was
 * registered after its own, so it runs first): give queued pairs up to a
 * second to complete, resolve them, stop the resolver.
 */
static void ddl_gpu_atexit(void)
{
	ddl_gpu_stop();
}

void ddl_gpu_stop(void)
{
	if (ddl_g.pid != getpid())
		return;
	ddl_cupti_close(); /* no start from now on */
	if (ddl_cupti_on)
		ddl_cupti_flush(); /* also when CUPTI came through injection alone */
	if (!ddl_pairs.running)
		return;
	/* this is the program's exiting thread: keep its current device */
	int dev = -1;
	if (ddl_gpu_real.cudaGetDevice(&dev) != cudaSuccess)
		dev = -1;
	ddl_seg_close_all(); /* runs still open end here */
	atomic_store(&ddl_pairs.stop, 1);
	pthread_join(ddl_pairs.thread, NULL);
	ddl_pairs.running = 0;
	for (int i = 0; i < 500 && ddl_resolve_pass(); i++) {
		struct timespec ts = {0, 2 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	if (dev >= 0)
		ddl_gpu_real.cudaSetDevice(dev);
}

static void ddl_gpu_start_once(void)
{
	if (ddl_cuda_own_resolve() < 0)
		return; /* NCCL without the CUDA runtime loaded: no event pairs */
	ddl_pairs.q = calloc(DDL_PENDING_MAX, sizeof *ddl_pairs.q);
	if (!ddl_pairs.q)
		return;
	/* The GPU model, for the report and the recommender. */
	int dev = 0, ndev = 0;
	/* only when no error of the program's is pending: we may cause one,
	 * and must clear it without losing theirs */
	struct cudaDeviceProp *prop =
	    ddl_gpu_real.cudaPeekAtLastError() == cudaSuccess ? calloc(1, sizeof *prop) : NULL;
	if (prop && ddl_gpu_real.cudaGetDevice(&dev) == cudaSuccess &&
	    ddl_gpu_real.cudaGetDeviceProperties(prop, dev) == cudaSuccess) {
		prop->name[sizeof prop->name - 1] = 0;
		ddl_meta("gpu_model", prop->name);
		char mem[32];
		snprintf(mem, sizeof mem, "%zu", prop->totalGlobalMem);
		ddl_meta("gpu_memory_bytes", mem);
	}
	if (prop && ddl_gpu_real.cudaGetDeviceCount(&ndev) == cudaSuccess) {
		char n[16];
		snprintf(n, sizeof n, "%d", ndev);
		ddl_meta("gpu_count", n);
	}
	if (prop)
		ddl_gpu_real.cudaGetLastError(); /* any error now is ours */
	free(prop);
	if (ddl_g.cfg.cupti != 0)
		ddl_cupti_start();
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&ddl_pairs.thread, NULL, ddl_resolver_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return;
	ddl_pairs.running = 1;
	atexit(ddl_gpu_atexit);
	ddl_seg_on = ddl_g.cfg.kernel_sample == 0 && !ddl_cupti_on;
	ddl_gpu_started = 1;
}

static pthread_once_t ddl_gpu_once = PTHREAD_ONCE_INIT;

void ddl_gpu_first(void)
{
	struct ddl_thread *t = ddl_self;
	if (t)
		t->busy = 1;
	int saved = errno;
	pthread_once(&ddl_gpu_once, ddl_gpu_start_once);
	errno = saved;
	if (t)
		t->busy = 0;
}

/* fork: the child has no resolver, and CUDA does not survive fork anyway. */
void ddl_gpu_after_fork_child(void)
{
	pthread_mutex_init(&ddl_gpu_lock, NULL);
	pthread_mutex_init(&ddl_next_lock, NULL);
	ddl_nccl_after_fork_child();
	ddl_cupti_after_fork_child();
	ddl_pairs.running = 0;
	ddl_pairs.n = 0;
	ddl_gpu_started = 0;
	ddl_seg_on = 0;
	pthread_mutex_init(&ddl_seg_lock, NULL);
	for (int i = 0; i < DDL_SEG_MAX; i++)
		atomic_store(&ddl_seg_open[i], 0);
	memset(ddl_pairs.npool, 0, sizeof ddl_pairs.npool);
	memset(ddl_anchor, 0, sizeof ddl_anchor);
	ddl_gpu_once = (pthread_once_t)PTHREAD_ONCE_INIT;
}

#else /* no CUDA headers: nothing to stop */
#include "ddl.h"
void ddl_gpu_after_fork_child(void)
{
}
void ddl_gpu_stop(void)
{
}
#endif
