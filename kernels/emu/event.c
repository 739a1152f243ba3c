/*
 * Emulated events. cudaEventRecord enqueues a record op; when the stream's
 * worker reaches it, the event takes the stream's device time on the
 * CLOCK_MONOTONIC scale (stream.c): when the work before it ended, or when
 * it was recorded, whichever is later. So cudaEventElapsedTime between two
 * events measures what the emulated work between them took on the device.
 * A record on an idle stream completes at once, in the call, as it does on
 * a GPU within microseconds. An event refers to its most recent record
 * (records are numbered; a completed older record never overwrites a newer
 * one). Waits sleep on a condition variable. An event is freed when it has
 * been destroyed and no queued op refers to it.
 */
#include <stdlib.h>

#include "emu.h"

struct emu_event {
	unsigned flags;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t gen;  /* records issued */
	uint64_t done; /* the newest completed record */
	uint64_t ts;   /* its time */
	atomic_int refs;
};

static struct emu_handles emu_live_events = EMU_HANDLES_INIT;

void emu_event_unref(struct emu_event *ev)
{
	if (atomic_fetch_sub(&ev->refs, 1) != 1)
		return;
	pthread_mutex_destroy(&ev->mu);
	pthread_cond_destroy(&ev->cv);
	free(ev);
}

void emu_event_complete(struct emu_event *ev, uint64_t gen, uint64_t ts)
{
	pthread_mutex_lock(&ev->mu);
	if (gen > ev->done) {
		ev->done = gen;
		ev->ts = ts;
	}
	pthread_cond_broadcast(&ev->cv);
	pthread_mutex_unlock(&ev->mu);
}

uint64_t emu_event_wait(struct emu_event *ev, uint64_t gen)
{
	pthread_mutex_lock(&ev->mu);
	while (ev->done < gen)
		pthread_cond_wait(&ev->cv, &ev->mu);
	uint64_t ts = ev->ts;
	pthread_mutex_unlock(&ev->mu);
	return ts;
}

static cudaError_t emu_event_get(cudaEvent_t h, struct emu_event **out)
{
	if (!h || !emu_handles_has(&emu_live_events, h))
		return cudaErrorInvalidResourceHandle;
	*out = (struct emu_event *)h;
	return cudaSuccess;
}

/* The body of both creation calls (an exported name never calls another). */
static cudaError_t emu_event_create(cudaEvent_t *event, unsigned int flags)
{
	const unsigned known = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
	if (!event || (flags & ~known))
		return emu_err(cudaErrorInvalidValue);
	if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming))
		return emu_err(cudaErrorInvalidValue);
	emu_init();
	if (emu_forked)
		return emu_err(cudaErrorInitializationError);
	struct emu_event *ev = calloc(1, sizeof *ev);
	if (!ev)
		return emu_err(cudaErrorMemoryAllocation);
	ev->flags = flags;
	pthread_mutex_init(&ev->mu, NULL);
	pthread_cond_init(&ev->cv, NULL);
	atomic_init(&ev->refs, 1);
	if (emu_handles_add(&emu_live_events, ev) < 0) {
		emu_event_unref(ev);
		return emu_err(cudaErrorMemoryAllocation);
	}
	*event = (cudaEvent_t)ev;
	return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
	return emu_event_create(event, flags);
}

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
	return emu_event_create(event, cudaEventDefault);
}

static cudaError_t emu_event_record(cudaEvent_t event, cudaStream_t stream, unsigned flags)
{
	struct emu_event *ev;
	struct emu_stream *s;
	if (flags & ~(unsigned)cudaEventRecordExternal)
		return cudaErrorInvalidValue;
	cudaError_t e = emu_event_get(event, &ev);
	if (!e)
		e = emu_stream_get(stream, &s);
	if (e)
		return e;
	/* nothing ahead of it: the device passes it now (a profiler's anchor
	 * event must not wait for a worker thread to be scheduled) */
	if (emu_stream_idle(s)) {
		pthread_mutex_lock(&ev->mu);
		uint64_t gen = ++ev->gen;
		pthread_mutex_unlock(&ev->mu);
		emu_event_complete(ev, gen, emu_now());
		return cudaSuccess;
	}
	struct emu_op *op = emu_op_new(EMU_OP_RECORD, 0);
	if (!op)
		return cudaErrorMemoryAllocation;
	atomic_fetch_add(&ev->refs, 1);
	pthread_mutex_lock(&ev->mu);
	op->u.ev.gen = ++ev->gen;
	pthread_mutex_unlock(&ev->mu);
	op->u.ev.ev = ev;
	emu_stream_push(s, op);
	return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
	return emu_err(emu_event_record(event, stream, 0));
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
	return emu_err(emu_event_record(event, stream, flags));
}

cudaError_t cudaEventQuery(cudaEvent_t event)
{
	struct emu_event *ev;
	cudaError_t e = emu_event_get(event, &ev);
	if (e)
		return emu_err(e);
	pthread_mutex_lock(&ev->mu);
	int done = ev->done >= ev->gen;
	pthread_mutex_unlock(&ev->mu);
	return done ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
	struct emu_event *ev;
	cudaError_t e = emu_event_get(event, &ev);
	if (e)
		return emu_err(e);
	pthread_mutex_lock(&ev->mu);
	uint64_t gen = ev->gen;
	pthread_mutex_unlock(&ev->mu);
	emu_event_wait(ev, gen);
	return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
	struct emu_event *a, *b;
	if (!ms)
		return emu_err(cudaErrorInvalidValue);
	cudaError_t e = emu_event_get(start, &a);
	if (!e)
		e = emu_event_get(end, &b);
	if (e)
		return emu_err(e);
	if ((a->flags | b->flags) & cudaEventDisableTiming)
		return emu_err(cudaErrorInvalidResourceHandle);
	pthread_mutex_lock(&a->mu);
	uint64_t ga = a->gen, da = a->done, ta = a->ts;
	pthread_mutex_unlock(&a->mu);
	pthread_mutex_lock(&b->mu);
	uint64_t gb = b->gen, db = b->done, tb = b->ts;
	pthread_mutex_unlock(&b->mu);
	if (!ga || !gb)
		return emu_err(cudaErrorInvalidResourceHandle);
	if (da < ga || db < gb)
		return emu_err(cudaErrorNotReady);
	*ms = (float)(((double)tb - (double)ta) / 1e6);
	return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
	struct emu_event *ev;
	cudaError_t e = emu_event_get(event, &ev);
	if (!e && emu_handles_del(&emu_live_events, ev) < 0)
		e = cudaErrorInvalidResourceHandle; /* destroyed by another thread meanwhile */
	if (e)
		return emu_err(e);
	emu_event_unref(ev);
	return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
	struct emu_event *ev;
	struct emu_stream *s;
	if (flags & ~(unsigned)cudaEventWaitExternal)
		return emu_err(cudaErrorInvalidValue);
	cudaError_t e = emu_event_get(event, &ev);
	if (!e)
		e = emu_stream_get(stream, &s);
	if (e)
		return emu_err(e);
	pthread_mutex_lock(&ev->mu);
	uint64_t gen = ev->gen;
	pthread_mutex_unlock(&ev->mu);
	if (gen == 0)
		return cudaSuccess; /* never recorded: nothing to wait for */
	struct emu_op *op = emu_op_new(EMU_OP_WAIT_EVENT, 0);
	if (!op)
		return emu_err(cudaErrorMemoryAllocation);
	atomic_fetch_add(&ev->refs, 1);
	op->u.ev.ev = ev;
	op->u.ev.gen = gen;
	emu_stream_push(s, op);
	return cudaSuccess;
}

/*
 * The per-thread-default-stream entry points (programs built with
 * --default-stream per-thread call these): the same code under a second
 * name, so a profiler wrapping both still sees one call. The emulation's
 * per-thread default stream is the legacy stream (README).
 */
__typeof__(cudaEventRecord) cudaEventRecord_ptsz __attribute__((alias("cudaEventRecord")));
__typeof__(cudaEventRecordWithFlags) cudaEventRecordWithFlags_ptsz __attribute__((alias("cudaEventRecordWithFlags")));
__typeof__(cudaStreamWaitEvent) cudaStreamWaitEvent_ptsz __attribute__((alias("cudaStreamWaitEvent")));
