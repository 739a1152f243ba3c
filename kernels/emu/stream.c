/*
 * Emulated streams: an in-order queue of ops and one worker thread per
 * stream that runs them, so that everything enqueued (kernels, copies,
 * event records, collectives) happens at the time a GPU would do it,
 * relative to the other work of its stream. Each device has a legacy
 * default stream (NULL, cudaStreamLegacy; cudaStreamPerThread maps to it
 * too), created on first use, with the runtime's implicit synchronisation:
 * work on the legacy stream waits for earlier work on the device's blocking
 * streams, and work on a blocking stream waits for earlier work on the
 * legacy stream. Non-blocking streams are independent. Streams of one
 * device run concurrently (kernels do not share the emulated GPU).
 *
 * Device time: each stream keeps the time its last op ended on the
 * emulated device. An op starts when it was enqueued or when the op before
 * it ended, whichever is later (as a GPU starts queued work), not when the
 * worker thread happens to wake up; it takes its planned time, or the CPU
 * time its work really needed when that is longer, and the worker sleeps
 * until that end before it goes on. Event records take the device time, so
 * the intervals a profiler measures are the emulated device's, without the
 * scheduling delays of the worker threads; device times never run ahead of
 * the real clock. A record on an idle stream completes in the call.
 *
 * Locks: emu_dev_mu (device stream lists, and every push that implies
 * cross-stream waits, so that those waits always point backwards in time
 * and can never form a cycle), then a stream's mu. A stream is freed when
 * its handle is destroyed, its worker has drained it and no op of another
 * stream waits on it any more (reference count).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "emu.h"

struct emu_stream {
	int dev;
	unsigned flags;
	int prio;
	int legacy;
	pthread_mutex_t mu;
	pthread_cond_t work, done_cv;
	struct emu_op *head, *tail; /* under mu */
	uint64_t enq;               /* under mu */
	/* Set by the worker alone, without mu: done_at, then done. A waiter
	 * lowers `want` to the op it waits for, under mu, before it reads
	 * `done`; the worker, after setting `done`, takes mu to wake the waiters
	 * (and raise `want` again) only once `done` reaches `want` (both
	 * sequentially consistent: one of the two sees the other). A launch
	 * then never waits for the worker's lock, and a waiter wakes once. */
	_Atomic uint64_t done;
	_Atomic uint64_t done_at; /* device time at which op `done` ended */
	_Atomic uint64_t want;    /* the lowest op waited for; UINT64_MAX for none */
	uint64_t dev_t;   /* the same, kept by the worker alone */
	int dying;
	atomic_int refs;
	struct emu_stream *dnext; /* the device's list, under emu_dev_mu */
	uint32_t num;             /* from 1, in creation order (activity records) */
};

static pthread_mutex_t emu_dev_mu = PTHREAD_MUTEX_INITIALIZER;
static struct emu_handles emu_live_streams = EMU_HANDLES_INIT;
static struct emu_stream *emu_dev_streams[EMU_MAX_DEVICES];
static struct emu_stream *emu_dev_legacy[EMU_MAX_DEVICES];

/*
 * Ops of up to EMU_OP_POOLED bytes (every launch with its arguments, most
 * others) are kept for reuse: a launch takes one from its thread's cache,
 * refilled EMU_OP_GRAB at a time from the pool, where the workers give back
 * what they ran, a batch at a time. A launch then costs neither the heap's
 * lock nor, as a queue grows and drains, fresh pages; the pool keeps at
 * most EMU_POOL_MAX. A thread's cache goes back to the pool when it ends.
 */
#define EMU_OP_POOLED 512
#define EMU_OP_GRAB 64
#define EMU_POOL_MAX 16384

static pthread_mutex_t emu_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static struct emu_op *emu_pool;
static size_t emu_npool;
static __thread struct emu_op *emu_cache;
static pthread_key_t emu_cache_key;
static pthread_once_t emu_cache_once = PTHREAD_ONCE_INIT;

/* Gives back list (n ops, pooled): to the pool while it has room, else freed. */
static void emu_pool_give(struct emu_op *list, size_t n)
{
	if (!list)
		return;
	pthread_mutex_lock(&emu_pool_mu);
	while (list && emu_npool < EMU_POOL_MAX) {
		struct emu_op *next = list->next;
		list->next = emu_pool;
		emu_pool = list;
		emu_npool++;
		list = next;
		n--;
	}
	pthread_mutex_unlock(&emu_pool_mu);
	while (list) {
		struct emu_op *next = list->next;
		free(list);
		list = next;
	}
	(void)n;
}

static void emu_cache_exit(void *unused)
{
	(void)unused;
	struct emu_op *list = emu_cache;
	if (emu_forked) { /* a forked child: the pool's lock may be held by a thread it lacks */
		emu_cache = NULL;
		while (list) {
			struct emu_op *next = list->next;
			free(list);
			list = next;
		}
		return;
	}
	size_t n = 0;
	for (struct emu_op *o = list; o; o = o->next)
		n++;
	emu_cache = NULL;
	emu_pool_give(list, n);
}

static int emu_cache_keyed; /* 0 without a key: no thread caches ops */

static void emu_cache_key_make(void)
{
	emu_cache_keyed = pthread_key_create(&emu_cache_key, emu_cache_exit) == 0;
}

static struct emu_op *emu_op_take(void)
{
	struct emu_op *op = emu_cache;
	if (!op) {
		pthread_once(&emu_cache_once, emu_cache_key_make);
		if (!emu_cache_keyed || pthread_setspecific(emu_cache_key, &emu_cache) != 0)
			return malloc(EMU_OP_POOLED); /* the destructor would not give a cache back */
		/* non-NULL: the destructor runs */
		pthread_mutex_lock(&emu_pool_mu);
		op = emu_pool;
		struct emu_op *last = NULL;
		for (int i = 0; i < EMU_OP_GRAB && emu_pool; i++) {
			last = emu_pool;
			emu_pool = emu_pool->next;
			emu_npool--;
		}
		if (last)
			last->next = NULL;
		pthread_mutex_unlock(&emu_pool_mu);
		if (!op)
			return malloc(EMU_OP_POOLED);
	}
	emu_cache = op->next;
	return op;
}

struct emu_op *emu_op_new(enum emu_op_kind kind, size_t extra)
{
	size_t size = sizeof(struct emu_op) + extra;
	struct emu_op *op;
	if (size <= EMU_OP_POOLED) {
		op = emu_op_take();
		if (op) {
			memset(op, 0, size);
			op->pooled = 1;
		}
	} else {
		op = calloc(1, size);
	}
	if (op)
		op->kind = kind;
	return op;
}

void emu_stream_ref(struct emu_stream *s)
{
	atomic_fetch_add(&s->refs, 1);
}

void emu_stream_unref(struct emu_stream *s)
{
	if (atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->work);
	pthread_cond_destroy(&s->done_cv);
	free(s);
}

int emu_stream_device(struct emu_stream *s)
{
	return s->dev;
}

/* Set by ddlemu_kernel_time from a kernel's code, on its worker thread. */
static __thread int emu_in_kernel;
static __thread uint64_t emu_kernel_ns;

void ddlemu_kernel_time(uint64_t ns)
{
	if (emu_in_kernel)
		emu_kernel_ns = ns;
}

/* CPU time of the calling thread: work that was preempted took no longer on the device. */
static uint64_t emu_cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/*
 * Runs op on the worker as the device starts it at `start` (<= now);
 * returns its device end, slept out here: start plus its planned time or
 * the CPU time its work took, whichever is longer (copies, memsets, and
 * kernels that give their time), or plus the time it ran (other kernels
 * and host functions, which may block). Waits end when what they wait for
 * ended on the device.
 *
 * The thread's CPU clock is a system call, so it is read only where it can
 * matter: for work with a planned time, and there only when it ran past
 * it. A kernel whose last run gave no time (it takes the time it runs) is
 * not clocked; should this run give one, the time it ran stands in for its
 * CPU time, and it is clocked again from its next run.
 */
static __thread struct {
	ddlemu_kernel_fn fn;
	int unplanned; /* its last run gave no time */
} emu_kquick[16];

static uint64_t emu_op_run(struct emu_op *op, uint64_t start)
{
	uint64_t t0 = emu_now(), c0 = 0, ns = 0, t;
	int planned = 1, clocked = 1;
	switch (op->kind) {
	case EMU_OP_KERNEL: {
		ddlemu_kernel_fn fn = op->u.kern.fn;
		size_t slot;
		memcpy(&slot, &fn, sizeof slot < sizeof fn ? sizeof slot : sizeof fn);
		slot = (slot >> 4) % 16;
		clocked = !(emu_kquick[slot].fn == fn && emu_kquick[slot].unplanned);
		if (clocked)
			c0 = emu_cpu_now();
		emu_in_kernel = 1;
		emu_kernel_ns = 0;
		fn(op->u.kern.args);
		emu_in_kernel = 0;
		ns = emu_kernel_ns;
		planned = ns > 0;
		emu_kquick[slot].fn = fn;
		emu_kquick[slot].unplanned = !planned;
		break;
	}
	case EMU_OP_COPY:
		c0 = emu_cpu_now();
		memmove(op->u.copy.dst, op->u.copy.src, op->u.copy.n);
		ns = op->u.copy.ns;
		break;
	case EMU_OP_SET:
		c0 = emu_cpu_now();
		memset(op->u.set.dst, op->u.set.val, op->u.set.n);
		ns = op->u.set.ns;
		break;
	case EMU_OP_RECORD:
		emu_event_complete(op->u.ev.ev, op->u.ev.gen, start);
		emu_event_unref(op->u.ev.ev);
		return start;
	case EMU_OP_WAIT_EVENT:
		t = emu_event_wait(op->u.ev.ev, op->u.ev.gen);
		emu_event_unref(op->u.ev.ev);
		return t > start ? t : start;
	case EMU_OP_WAIT_STREAM:
		emu_stream_wait(op->u.sw.s, op->u.sw.seq);
		pthread_mutex_lock(&op->u.sw.s->mu);
		t = atomic_load(&op->u.sw.s->done_at);
		pthread_mutex_unlock(&op->u.sw.s->mu);
		emu_stream_unref(op->u.sw.s);
		return t > start ? t : start;
	case EMU_OP_HOSTFN:
		op->u.host.fn(op->u.host.arg);
		planned = 0;
		break;
	case EMU_OP_CALLBACK:
		op->u.cb.fn(op->u.cb.h, cudaSuccess, op->u.cb.arg);
		planned = 0;
		break;
	case EMU_OP_FREE:
		c0 = emu_cpu_now();
		emu_mem_release(op->u.free.p);
		break;
	case EMU_OP_NCCL:
		return emu_nccl_run(op->u.nccl.w, start);
	}
	/* within its plan, the CPU time (at most the time it ran) cannot matter */
	uint64_t now = emu_now(), busy = now - t0;
	if (planned && busy > ns && clocked)
		busy = emu_cpu_now() - c0;
	uint64_t end = start + (busy > ns ? busy : ns);
	if (end > now)
		emu_sleep_until(end);
	return end;
}

static void *emu_worker(void *arg)
{
	struct emu_stream *s = arg;
	/* wake up on time: the default 50 us slack would show in every step of a job */
	prctl(PR_SET_TIMERSLACK, 1000UL);
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->head && !s->dying)
			pthread_cond_wait(&s->work, &s->mu);
		/* all that is queued, in one go: launches meanwhile find mu free */
		struct emu_op *op = s->head;
		if (!op)
			break;
		s->head = s->tail = NULL;
		pthread_mutex_unlock(&s->mu);
		struct emu_op *done = NULL; /* what ran, for the pool */
		size_t ndone = 0;
		while (op) {
			struct emu_op *next = op->next;
			uint64_t start = op->enq_ns > s->dev_t ? op->enq_ns : s->dev_t;
			uint64_t end = emu_op_run(op, start);
			s->dev_t = end;
			if (op->kind == EMU_OP_KERNEL)
				emu_act_kernel(op, s->dev, s->num, start, end);
			atomic_store(&s->done_at, end);
			atomic_store(&s->done, op->seq);
			if (atomic_load(&s->want) <= op->seq) {
				pthread_mutex_lock(&s->mu);
				atomic_store(&s->want, UINT64_MAX); /* those still waiting lower it again */
				pthread_cond_broadcast(&s->done_cv);
				pthread_mutex_unlock(&s->mu);
			}
			if (op->pooled) {
				op->next = done;
				done = op;
				ndone++;
			} else {
				free(op);
			}
			op = next;
		}
		emu_pool_give(done, ndone);
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_lock(&emu_dev_mu);
	for (struct emu_stream **p = &emu_dev_streams[s->dev]; *p; p = &(*p)->dnext)
		if (*p == s) {
			*p = s->dnext;
			break;
		}
	pthread_mutex_unlock(&emu_dev_mu);
	emu_stream_unref(s);
	return NULL;
}

/* A new stream with a running worker; NULL without memory or threads. Caller holds emu_dev_mu. */
static struct emu_stream *emu_stream_new_locked(int dev, unsigned flags, int prio, int legacy)
{
	static uint32_t nums; /* under emu_dev_mu */
	struct emu_stream *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->dev = dev;
	s->num = ++nums;
	s->flags = flags;
	s->prio = prio;
	s->legacy = legacy;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->work, NULL);
	pthread_cond_init(&s->done_cv, NULL);
	atomic_init(&s->refs, 2); /* the handle and the worker */
	atomic_init(&s->want, UINT64_MAX);
	if (emu_thread_start(emu_worker, s) != 0) {
		pthread_mutex_destroy(&s->mu);
		pthread_cond_destroy(&s->work);
		pthread_cond_destroy(&s->done_cv);
		free(s);
		return NULL;
	}
	s->dnext = emu_dev_streams[dev];
	emu_dev_streams[dev] = s;
	return s;
}

static struct emu_stream *emu_legacy_locked(int dev)
{
	if (!emu_dev_legacy[dev])
		emu_dev_legacy[dev] = emu_stream_new_locked(dev, 0, 0, 1);
	return emu_dev_legacy[dev];
}

static cudaError_t emu_stream_resolve(cudaStream_t h, int dev, struct emu_stream **out)
{
	emu_init();
	if (emu_forked)
		return cudaErrorInitializationError;
	if (h == NULL || h == cudaStreamLegacy || h == cudaStreamPerThread) {
		pthread_mutex_lock(&emu_dev_mu);
		*out = emu_legacy_locked(dev);
		pthread_mutex_unlock(&emu_dev_mu);
		return *out ? cudaSuccess : cudaErrorMemoryAllocation;
	}
	if (!emu_handles_has(&emu_live_streams, h))
		return cudaErrorInvalidResourceHandle;
	*out = (struct emu_stream *)h;
	return cudaSuccess;
}

cudaError_t emu_stream_get(cudaStream_t h, struct emu_stream **out)
{
	return emu_stream_resolve(h, emu_device_current(), out);
}

cudaError_t emu_stream_get_dev(cudaStream_t h, int dev, struct emu_stream **out)
{
	return emu_stream_resolve(h, dev, out);
}

static int emu_blocking(const struct emu_stream *s)
{
	return !s->legacy && !(s->flags & cudaStreamNonBlocking);
}

/* Prepends to list a wait for what t has pending; caller holds emu_dev_mu. */
static void emu_wait_pending(struct emu_stream *t, struct emu_op **list)
{
	pthread_mutex_lock(&t->mu);
	uint64_t enq = t->enq, done = atomic_load(&t->done);
	pthread_mutex_unlock(&t->mu);
	if (enq == done)
		return;
	struct emu_op *w = emu_op_new(EMU_OP_WAIT_STREAM, 0);
	if (!w)
		return; /* no memory: the ordering degrades, nothing breaks */
	emu_stream_ref(t);
	w->u.sw.s = t;
	w->u.sw.seq = enq;
	w->next = *list;
	*list = w;
}

static uint64_t emu_append(struct emu_stream *s, struct emu_op *first)
{
	uint64_t seq = 0, now = emu_now();
	pthread_mutex_lock(&s->mu);
	for (struct emu_op *op = first, *next; op; op = next) {
		next = op->next;
		op->next = NULL;
		op->seq = seq = ++s->enq;
		op->enq_ns = now;
		if (s->tail)
			s->tail->next = op;
		else
			s->head = op;
		s->tail = op;
	}
	pthread_cond_signal(&s->work);
	pthread_mutex_unlock(&s->mu);
	return seq;
}

uint64_t emu_stream_push(struct emu_stream *s, struct emu_op *op)
{
	op->next = NULL;
	if (!s->legacy && !emu_blocking(s))
		return emu_append(s, op);
	struct emu_op *waits = NULL;
	pthread_mutex_lock(&emu_dev_mu);
	if (s->legacy) {
		for (struct emu_stream *t = emu_dev_streams[s->dev]; t; t = t->dnext)
			if (t != s && emu_blocking(t))
				emu_wait_pending(t, &waits);
	} else if (emu_dev_legacy[s->dev]) {
		emu_wait_pending(emu_dev_legacy[s->dev], &waits);
	}
	struct emu_op **end = &waits;
	while (*end)
		end = &(*end)->next;
	*end = op;
	uint64_t seq = emu_append(s, waits);
	pthread_mutex_unlock(&emu_dev_mu);
	return seq;
}

static int emu_quiet(struct emu_stream *t)
{
	pthread_mutex_lock(&t->mu);
	int q = t->enq == atomic_load(&t->done);
	pthread_mutex_unlock(&t->mu);
	return q;
}

int emu_stream_idle(struct emu_stream *s)
{
	if (!s->legacy && !emu_blocking(s))
		return emu_quiet(s);
	pthread_mutex_lock(&emu_dev_mu);
	int idle = emu_quiet(s);
	if (idle && s->legacy) {
		for (struct emu_stream *t = emu_dev_streams[s->dev]; t && idle; t = t->dnext)
			if (t != s && emu_blocking(t))
				idle = emu_quiet(t);
	} else if (idle && emu_dev_legacy[s->dev]) {
		idle = emu_quiet(emu_dev_legacy[s->dev]);
	}
	pthread_mutex_unlock(&emu_dev_mu);
	return idle;
}

uint64_t emu_stream_tail(struct emu_stream *s)
{
	pthread_mutex_lock(&s->mu);
	uint64_t enq = s->enq;
	pthread_mutex_unlock(&s->mu);
	return enq;
}

void emu_stream_wait(struct emu_stream *s, uint64_t seq)
{
	if (atomic_load(&s->done) >= seq)
		return;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		if (atomic_load(&s->want) > seq)
			atomic_store(&s->want, seq);
		if (atomic_load(&s->done) >= seq)
			break;
		pthread_cond_wait(&s->done_cv, &s->mu);
	}
	pthread_mutex_unlock(&s->mu);
}

/* Waits for what the streams of devices lo..hi-1 had enqueued when called. */
static void emu_sync_streams(int lo, int hi)
{
	size_t n = 0, cap = 0;
	pthread_mutex_lock(&emu_dev_mu);
	for (int d = lo; d < hi; d++)
		for (struct emu_stream *t = emu_dev_streams[d]; t; t = t->dnext)
			cap++;
	pthread_mutex_unlock(&emu_dev_mu);
	/* streams created after this point are not waited for: they are newer than the call */
	struct emu_stream **list = malloc((cap + 1) * sizeof *list);
	uint64_t *seqs = malloc((cap + 1) * sizeof *seqs);
	if (!list || !seqs) {
		free(list);
		free(seqs);
		return;
	}
	pthread_mutex_lock(&emu_dev_mu);
	for (int d = lo; d < hi; d++)
		for (struct emu_stream *t = emu_dev_streams[d]; t && n < cap; t = t->dnext) {
			emu_stream_ref(t);
			seqs[n] = emu_stream_tail(t);
			list[n++] = t;
		}
	pthread_mutex_unlock(&emu_dev_mu);
	for (size_t i = 0; i < n; i++) {
		emu_stream_wait(list[i], seqs[i]);
		emu_stream_unref(list[i]);
	}
	free(list);
	free(seqs);
}

void emu_device_sync(int dev)
{
	if (dev >= 0 && dev < EMU_MAX_DEVICES)
		emu_sync_streams(dev, dev + 1);
}

void emu_device_sync_all(void)
{
	emu_sync_streams(0, EMU_MAX_DEVICES);
}

/* ---- the stream API ---- */

static cudaError_t emu_stream_create(cudaStream_t *out, unsigned flags, int prio)
{
	if (!out)
		return cudaErrorInvalidValue;
	if (flags & ~(unsigned)cudaStreamNonBlocking)
		return cudaErrorInvalidValue;
	emu_init();
	if (emu_forked)
		return cudaErrorInitializationError;
	prio = prio > 0 ? 0 : prio < -5 ? -5 : prio;
	pthread_mutex_lock(&emu_dev_mu);
	struct emu_stream *s = emu_stream_new_locked(emu_device_current(), flags, prio, 0);
	pthread_mutex_unlock(&emu_dev_mu);
	if (!s)
		return cudaErrorMemoryAllocation;
	if (emu_handles_add(&emu_live_streams, s) < 0) {
		/* no handle to give out: let the worker end and free it */
		pthread_mutex_lock(&s->mu);
		s->dying = 1;
		pthread_cond_signal(&s->work);
		pthread_mutex_unlock(&s->mu);
		emu_stream_unref(s);
		return cudaErrorMemoryAllocation;
	}
	*out = (cudaStream_t)s;
	return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
	return emu_err(emu_stream_create(pStream, 0, 0));
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
	return emu_err(emu_stream_create(pStream, flags, 0));
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
{
	return emu_err(emu_stream_create(pStream, flags, priority));
}

/* Returns at once; the stream's work still runs, then the worker frees it. */
cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
	struct emu_stream *s;
	if (!stream || stream == cudaStreamLegacy || stream == cudaStreamPerThread)
		return emu_err(cudaErrorInvalidResourceHandle);
	cudaError_t e = emu_stream_get(stream, &s);
	if (e)
		return emu_err(e);
	if (emu_handles_del(&emu_live_streams, s) < 0)
		return emu_err(cudaErrorInvalidResourceHandle); /* destroyed by another thread meanwhile */
	pthread_mutex_lock(&s->mu);
	s->dying = 1;
	pthread_cond_signal(&s->work);
	pthread_mutex_unlock(&s->mu);
	emu_stream_unref(s);
	return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
	struct emu_stream *s;
	cudaError_t e = emu_stream_get(stream, &s);
	if (e)
		return emu_err(e);
	emu_stream_wait(s, emu_stream_tail(s));
	return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream)
{
	struct emu_stream *s;
	cudaError_t e = emu_stream_get(stream, &s);
	if (e)
		return emu_err(e);
	pthread_mutex_lock(&s->mu);
	int idle = atomic_load(&s->done) == s->enq;
	pthread_mutex_unlock(&s->mu);
	return idle ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority)
{
	struct emu_stream *s;
	cudaError_t e = priority ? emu_stream_get(hStream, &s) : cudaErrorInvalidValue;
	if (e)
		return emu_err(e);
	*priority = s->prio;
	return cudaSuccess;
}

cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags)
{
	struct emu_stream *s;
	cudaError_t e = flags ? emu_stream_get(hStream, &s) : cudaErrorInvalidValue;
	if (e)
		return emu_err(e);
	*flags = s->flags;
	return cudaSuccess;
}

cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int *device)
{
	struct emu_stream *s;
	cudaError_t e = device ? emu_stream_get(hStream, &s) : cudaErrorInvalidValue;
	if (e)
		return emu_err(e);
	*device = s->dev;
	return cudaSuccess;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
	struct emu_stream *s;
	if (!fn)
		return emu_err(cudaErrorInvalidValue);
	cudaError_t e = emu_stream_get(stream, &s);
	if (e)
		return emu_err(e);
	struct emu_op *op = emu_op_new(EMU_OP_HOSTFN, 0);
	if (!op)
		return emu_err(cudaErrorMemoryAllocation);
	op->u.host.fn = fn;
	op->u.host.arg = userData;
	emu_stream_push(s, op);
	return cudaSuccess;
}

cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void *userData,
                                  unsigned int flags)
{
	struct emu_stream *s;
	if (!callback || flags)
		return emu_err(cudaErrorInvalidValue);
	cudaError_t e = emu_stream_get(stream, &s);
	if (e)
		return emu_err(e);
	struct emu_op *op = emu_op_new(EMU_OP_CALLBACK, 0);
	if (!op)
		return emu_err(cudaErrorMemoryAllocation);
	op->u.cb.fn = callback;
	op->u.cb.arg = userData;
	op->u.cb.h = stream;
	emu_stream_push(s, op);
	return cudaSuccess;
}

/*
 * The per-thread-default-stream entry points (programs built with
 * --default-stream per-thread call these): the same code under a second
 * name, so a profiler wrapping both still sees one call. The emulation's
 * per-thread default stream is the legacy stream (README).
 */
__typeof__(cudaStreamQuery) cudaStreamQuery_ptsz __attribute__((alias("cudaStreamQuery")));
__typeof__(cudaStreamGetDevice) cudaStreamGetDevice_ptsz __attribute__((alias("cudaStreamGetDevice")));
__typeof__(cudaStreamGetFlags) cudaStreamGetFlags_ptsz __attribute__((alias("cudaStreamGetFlags")));
__typeof__(cudaStreamGetPriority) cudaStreamGetPriority_ptsz __attribute__((alias("cudaStreamGetPriority")));
__typeof__(cudaStreamAddCallback) cudaStreamAddCallback_ptsz __attribute__((alias("cudaStreamAddCallback")));
__typeof__(cudaStreamSynchronize) cudaStreamSynchronize_ptsz __attribute__((alias("cudaStreamSynchronize")));
__typeof__(cudaLaunchHostFunc) cudaLaunchHostFunc_ptsz __attribute__((alias("cudaLaunchHostFunc")));
