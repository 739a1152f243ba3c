/*
 * Per-thread event rings. Each thread that makes a wrapped call gets one
 * single-producer/single-consumer ring on first use: the thread appends
 * (ddl_ring_put in ddl.h), the writer thread drains. Rings are never freed
 * while the process lives: when a thread ends, its ring is marked dead, the
 * writer drains it and marks it free, and the next new thread reuses it, so
 * thousands of short-lived threads cost a bounded amount of memory.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ddl.h"

__thread struct ddl_thread *ddl_self __attribute__((tls_model("initial-exec")));
__thread int ddl_self_state __attribute__((tls_model("initial-exec")));
__thread int ddl_private_fds __attribute__((tls_model("initial-exec")));

enum { DDL_TS_NEW = 0, DDL_TS_READY, DDL_TS_INTERNAL, DDL_TS_BUSY, DDL_TS_GONE,
       DDL_TS_UNRECORDED /* found no buffer (ddl_thread_unrecorded): passes through */ };
enum { DDL_RING_LIVE = 0, DDL_RING_DEAD = 1, DDL_RING_FREE = 2 };

static pthread_mutex_t ddl_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ddl_thread *_Atomic ddl_reg_head;
static unsigned ddl_next_idx = 1;
static pthread_key_t ddl_key;
static pthread_once_t ddl_key_once = PTHREAD_ONCE_INIT;

static void ddl_thread_exit(void *p)
{
	struct ddl_thread *t = p;
	/* the next thread to claim the ring gets the stack, unless this one is
	 * still on it (it leaves from a handler): then nobody does */
	if (ddl_altstack_drop(t->alt) < 0)
		t->alt = NULL;
	ddl_self = NULL;
	ddl_self_state = DDL_TS_GONE;
	ddl_open_clear(t); /* it may end inside a blocking call (cancelled) */
	atomic_store_explicit(&t->dead, DDL_RING_DEAD, memory_order_release);
}

static void ddl_key_make(void)
{
	if (pthread_key_create(&ddl_key, ddl_thread_exit) != 0)
		ddl_key = (pthread_key_t)-1;
}

static void ddl_thread_name(struct ddl_thread *t)
{
	char name[17] = "";
	prctl(PR_GET_NAME, name, 0, 0, 0);
	ddl_strings_add(DDL_STR_THREAD, t->idx, (uint32_t)t->tid, name, strlen(name));
}

/*
 * The events of a new ring, carved from maps that a forked child does not
 * inherit (MADV_WIPEONFORK, Linux 4.14: the child sees zeros, and drops
 * what the parent buffered anyway, ddl_threads_after_fork_child). Inherited
 * copy-on-write, as they were, every fork() write-protected every ring page
 * in the parent; each recording thread then took a copy-on-write fault (a
 * page copy and a TLB shootdown) per 128 events, and the next fork() waited
 * for the address space's lock behind those faults. Each map has room for
 * as many rings as there are already, up to 16 (one under ulimit -v), so
 * the maps the kernel counts against vm.max_map_count, beside the program's
 * thread stacks, stay as many as before: two a ring (the guard page, the
 * alternate stack with the header), and these few. Under ddl_reg_lock.
 */
static char *ddl_slab_at;          /* what is left of the last events map */
static size_t ddl_slab_left, ddl_slab_rings;

static struct ddl_event *ddl_events_new(size_t bytes)
{
	char *free_at = ddl_slab_at;
	size_t left = ddl_slab_left, rings = ddl_slab_rings;
	if (left < bytes) {
		size_t k = ddl_g.cfg.as_limited || rings < 1 ? 1 : rings < 16 ? rings : 16;
		void *m = mmap(NULL, k * bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return NULL;
		madvise(m, k * bytes, MADV_WIPEONFORK); /* refused before 4.14: inherited, as before */
		free_at = m;
		left = k * bytes;
	}
	struct ddl_event *ev = (struct ddl_event *)free_at;
	ddl_slab_at = free_at + bytes;
	ddl_slab_left = left - bytes;
	ddl_slab_rings = rings + 1;
	return ev;
}

int ddl_thread_hush(void)
{
	struct ddl_thread *t = ddl_self;
	if (t) {
		int was = t->busy;
		t->busy = 1;
		return was;
	}
	int was = ddl_self_state;
	if (was == DDL_TS_NEW)
		ddl_self_state = DDL_TS_BUSY; /* no ring claimed meanwhile */
	return 2 + was;
}

void ddl_thread_unhush(int token)
{
	if (token < 2) {
		if (ddl_self)
			ddl_self->busy = token;
	} else if (token - 2 == DDL_TS_NEW && ddl_self_state == DDL_TS_BUSY) {
		ddl_self_state = DDL_TS_NEW;
	}
}

/* Bytes of rings and alternate stacks mapped, against ddl_g.cfg.thread_budget
 * (under ddl_reg_lock); threads that found no room. */
static size_t ddl_rings_mapped;
static _Atomic unsigned ddl_unrecorded;

unsigned ddl_threads_unrecorded(void)
{
	return atomic_load(&ddl_unrecorded);
}

/*
 * The calling thread found no buffer (the budget under ulimit -v spent, or
 * the mapping refused): it passes through unrecorded from now on, and the
 * rest of the process is profiled as before. Said once a job; the count
 * goes into the trace at each power of two and exactly at the end.
 */
static void ddl_thread_unrecorded(int err)
{
	unsigned n = atomic_fetch_add(&ddl_unrecorded, 1) + 1;
	if (!(n & (n - 1)))
		ddl_meta_unrecorded(n);
	if (ddl_told_first(DDL_TOLD_BUDGET)) {
		if (ddl_g.cfg.as_limited)
			ddl_warn("no room for another thread's buffer within ulimit -v (the library keeps its "
			         "threads' buffers to a 64th of it, %zu KiB): threads from here on are not "
			         "recorded; the program continues", ddl_g.cfg.thread_budget / 1024);
		else
			ddl_warn("cannot map a thread buffer: %s; threads from here on are not recorded, the "
			         "program continues", strerror(err));
	}
}

/* Claim a drained ring of an ended thread, or map a new one. NULL on failure. */
static struct ddl_thread *ddl_thread_claim(void)
{
	for (struct ddl_thread *t = atomic_load(&ddl_reg_head); t; t = t->next) {
		int expect = DDL_RING_FREE;
		if (atomic_compare_exchange_strong(&t->dead, &expect, DDL_RING_LIVE)) {
			/* what the ring's last thread left of the Python hook's state */
			t->py_depth = 0;
			t->py_in = 0;
			t->gloo_key = 0;
			t->gloo_key_n = 0;
			ddl_open_clear(t);
			return t;
		}
	}
	size_t n = ddl_g.cfg.ring_events, page = (size_t)getpagesize();
	size_t head = (sizeof(struct ddl_thread) + page - 1) & ~(page - 1);
	size_t bytes = page + DDL_ALTSTACK + head; /* guard page, alternate stack, header */
	size_t cost = bytes + n * sizeof(struct ddl_event);
	if (ddl_rings_mapped &&
	    (ddl_rings_mapped >= ddl_g.cfg.thread_budget || cost > ddl_g.cfg.thread_budget - ddl_rings_mapped)) {
		errno = ENOMEM; /* the first ring whatever it costs, the others within the budget */
		return NULL;
	}
	void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	struct ddl_event *ev = ddl_events_new(n * sizeof(struct ddl_event));
	if (!ev) {
		munmap(m, bytes);
		return NULL;
	}
	ddl_rings_mapped += cost;
	/* above the alternate stack's top, which a handler never writes past */
	struct ddl_thread *t = (struct ddl_thread *)((char *)m + page + DDL_ALTSTACK);
	memset(t, 0, sizeof *t);
	/* a handler that overflows the alternate stack faults on the guard page
	 * rather than write over what lies below */
	t->alt = mprotect(m, page, PROT_NONE) == 0 ? (char *)m + page : NULL;
	t->ev = ev;
	t->mask = n - 1;
	t->map_bytes = bytes;
	t->next = atomic_load(&ddl_reg_head);
	atomic_store_explicit(&ddl_reg_head, t, memory_order_release);
	return t;
}

/* A claimed ring made the calling thread's, under ddl_reg_lock; an
 * INTERNAL ring's events each name their own thread. */
static void ddl_thread_take(struct ddl_thread *t, int internal)
{
	uint64_t h = t->head;
	t->cached_tail = h;
	atomic_store(&t->tail, h);
	t->idx = (uint16_t)(ddl_next_idx < 0xffff ? ddl_next_idx++ : 0xffff);
	t->tidbits = internal ? 0 : ddl_tidbits(t->idx);
	t->busy = 0;
	t->kick_tail = 0;
	/* the slow path's first look: at half full, or soon in inline mode */
	t->half = (t->mask + 1) / 2;
	if (ddl_g.writer_inline && t->half > DDL_INLINE_CHECK)
		t->half = DDL_INLINE_CHECK;
	t->tid = (pid_t)syscall(SYS_gettid);
}

struct ddl_thread *ddl_thread_slow(unsigned family)
{
	if (ddl_self_state != DDL_TS_NEW || !ddl_g.initialised ||
	    !atomic_load_explicit(&ddl_g.enabled, memory_order_relaxed))
		return NULL;
	int saved = errno;
	ddl_self_state = DDL_TS_BUSY; /* wrappers called from here pass through */
	pthread_once(&ddl_key_once, ddl_key_make);
	pthread_mutex_lock(&ddl_reg_lock);
	struct ddl_thread *t = ddl_thread_claim();
	if (t)
		ddl_thread_take(t, 0);
	pthread_mutex_unlock(&ddl_reg_lock);
	if (!t) {
		ddl_thread_unrecorded(errno);
		ddl_self_state = DDL_TS_UNRECORDED; /* its calls pass through, until a fork */
		errno = saved;
		return NULL;
	}
	ddl_thread_name(t);
	ddl_altstack_take(t->alt);
	if (ddl_key != (pthread_key_t)-1)
		pthread_setspecific(ddl_key, t);
	ddl_writer_start_pending(family); /* a forked child's first ring: its writer, where safe */
	ddl_self = t;
	ddl_self_state = DDL_TS_READY;
	errno = saved;
	return t;
}

/*
 * A ring for one of the library's own threads (the GPU resolver, CUPTI's
 * buffer callbacks), which write device intervals on behalf of the threads
 * that issued the work. The thread stays internal: wrappers it calls (the
 * CUDA runtime waits on condition variables, say) still pass through
 * unrecorded. NULL when no ring can be had.
 */
struct ddl_thread *ddl_thread_internal_ring(void)
{
	static __thread struct ddl_thread *own;
	if (own)
		return own;
	if (!ddl_g.initialised || !atomic_load_explicit(&ddl_g.enabled, memory_order_relaxed))
		return NULL;
	int saved = errno;
	pthread_once(&ddl_key_once, ddl_key_make);
	pthread_mutex_lock(&ddl_reg_lock);
	struct ddl_thread *t = ddl_thread_claim();
	if (t)
		ddl_thread_take(t, 1);
	pthread_mutex_unlock(&ddl_reg_lock);
	if (t) {
		ddl_thread_name(t);
		if (ddl_key != (pthread_key_t)-1)
			pthread_setspecific(ddl_key, t);
		own = t;
		ddl_writer_start_pending(~0u); /* the library's own thread: never a handler's */
	}
	errno = saved;
	return t;
}

/* The library's own threads never record. */
void ddl_thread_mark_internal(void)
{
	ddl_self_state = DDL_TS_INTERNAL;
}

/*
 * The ring looked half full: reread how far the writer got. Wakes it once
 * per position it reaches (not on every call while it is busy). Returns 1
 * when there is room for one more event, 0 when full (the event is counted
 * as dropped).
 */
int ddl_ring_room(struct ddl_thread *t, uint64_t h)
{
	t->cached_tail = atomic_load_explicit(&t->tail, memory_order_acquire);
	uint64_t used = h - t->cached_tail;
	if (ddl_g.writer_inline) {
		if (ddl_writer_inline(t, used)) {
			t->cached_tail = atomic_load_explicit(&t->tail, memory_order_acquire);
			used = h - t->cached_tail;
		}
	} else if (used >= t->half && t->kick_tail != t->cached_tail + 1) {
		t->kick_tail = t->cached_tail + 1;
		ddl_writer_wake();
	}
	if (!ddl_g.writer_inline && t->half < (t->mask + 1) / 2)
		t->half = (t->mask + 1) / 2; /* taken in inline mode, before a forked child's writer */
	if (used > t->mask) {
		t->dropped++;
		return 0;
	}
	return 1;
}

struct ddl_thread *ddl_threads_first(void)
{
	return atomic_load_explicit(&ddl_reg_head, memory_order_acquire);
}

/*
 * In the child after fork only the calling thread lives on. Events buffered
 * before the fork belong to the parent, which writes them: drop them, free
 * every ring, and let the surviving thread take one afresh on its next call.
 */
void ddl_threads_after_fork_child(void)
{
	pthread_mutex_init(&ddl_reg_lock, NULL);
	/* a fork during another thread's ddl_events_new may have left the slab
	 * half-updated: the child starts a map of its own */
	ddl_slab_at = NULL;
	ddl_slab_left = 0;
	void *mine = ddl_altstack_mine();
	for (struct ddl_thread *t = atomic_load(&ddl_reg_head); t; t = t->next) {
		atomic_store(&t->tail, t->head);
		t->cached_tail = t->head;
		t->kick_tail = 0;
		t->dropped = 0; /* the parent's losses are the parent's to report */
		ddl_open_clear(t); /* the parent's threads' waits are not the child's */
		/* the ring whose alternate stack this thread still has (it may be on
		 * it: fork from a handler) is nobody else's, ever */
		atomic_store(&t->dead, t->alt && t->alt == mine ? DDL_RING_LIVE : DDL_RING_FREE);
	}
	ddl_self = NULL;
	if (atomic_exchange(&ddl_unrecorded, 0)) /* the parent's; the child's trace says its own */
		ddl_meta_unrecorded(0);
	if (ddl_self_state == DDL_TS_READY || ddl_self_state == DDL_TS_UNRECORDED)
		ddl_self_state = DDL_TS_NEW; /* a ring of its own in the child, where there is room */
}

/*
 * The trace's thread index of the live thread with OS id TID, or -1. Rings
 * are recycled, never unmapped, so the walk is safe from any thread; a ring
 * changing hands meanwhile gives -1 or its new owner.
 */
int ddl_thread_idx_of(pid_t tid)
{
	for (struct ddl_thread *t = atomic_load(&ddl_reg_head); t; t = t->next)
		if (atomic_load(&t->dead) == DDL_RING_LIVE && t->tid == tid)
			return t->idx;
	return -1;
}

/* Writer side: after a ring is drained, an ended thread's ring becomes free. */
void ddl_threads_reap(void)
{
	for (struct ddl_thread *t = atomic_load(&ddl_reg_head); t; t = t->next) {
		if (atomic_load(&t->dead) == DDL_RING_DEAD &&
		    atomic_load(&t->tail) == atomic_load_explicit((_Atomic uint64_t *)&t->head,
		                                                  memory_order_acquire))
			atomic_store(&t->dead, DDL_RING_FREE);
	}
}
