/*
 * Events on demand: what keeps the report's memory from growing with the
 * events of the traces it reads (the memory model: analyze.c's head comment).
 * A lazy trace is read once to check it and learn everything but its
 * events (strings, clock samples, the count of events), and its events
 * are read again from the file, checked the same way, whenever a stage
 * of the analysis or an output holds it and they are not in memory. Held
 * traces stay; released ones
 * stay too until the events in memory pass the budget, when the least
 * recently released go. The first read keeps the events it can within
 * the budget (trace_set.c), so a job with fewer events than the budget is
 * read once in all; a larger one is read again by each stage that goes
 * over its processes, one process (a thread's) at a time. A trace whose
 * events cannot be read again (its file changed, or memory ran out) has none from
 * then on, and says why among its problems.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_read.h"

size_t ddl_events_budget = DDL_EVENTS_BUDGET;
_Atomic unsigned long ddl_events_rereads;
_Atomic unsigned long ddl_events_rereads_unchecked;

static pthread_mutex_t ddl_ev_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ddl_ev_cv = PTHREAD_COND_INITIALIZER;
static struct ddl_trace **ddl_ev_all; /* the registered lazy traces */
static size_t ddl_ev_n, ddl_ev_cap;
static size_t ddl_ev_resident;        /* bytes of their events in memory */
static uint64_t ddl_ev_clock;
/* Arrays of evicted events, for the next reads to fill: a stage goes
 * over the processes one a thread at a time, and an array given back
 * and mapped anew would be cleared by the kernel each time. They count
 * against the budget with the events in memory (a pool of the largest
 * process's arrays would grow with its events): a read makes room for
 * its events first, and fills the array it evicted. */
enum { DDL_EV_POOL = 4 };
static struct {
	struct ddl_event *v;
	size_t cap;
} ddl_ev_pool[DDL_EV_POOL];
static int ddl_ev_npool;
static size_t ddl_ev_pooled; /* bytes of the pool's arrays */
static size_t ddl_ev_charged; /* bytes of the stages' working arrays (ddl_events_charge) */

/* The pool's smallest array with room for CAP events, or -1. Under the lock. */
static int ddl_ev_pool_fitting(size_t cap)
{
	int best = -1;
	for (int i = 0; i < ddl_ev_npool; i++)
		if (ddl_ev_pool[i].cap >= cap && (best < 0 || ddl_ev_pool[i].cap < ddl_ev_pool[best].cap))
			best = i;
	return best;
}

/* The pool's largest array, or -1 when it is empty. Under the lock. */
static int ddl_ev_pool_largest(void)
{
	int big = ddl_ev_npool ? 0 : -1;
	for (int i = 1; i < ddl_ev_npool; i++)
		if (ddl_ev_pool[i].cap > ddl_ev_pool[big].cap)
			big = i;
	return big;
}

/* Array I out of the pool, its room (events) in *CAP. Under the lock. */
static struct ddl_event *ddl_ev_pool_take(int i, size_t *cap)
{
	struct ddl_event *v = ddl_ev_pool[i].v;
	*cap = ddl_ev_pool[i].cap;
	ddl_ev_pooled -= *cap * sizeof *v;
	ddl_ev_pool[i] = ddl_ev_pool[--ddl_ev_npool];
	return v;
}

/* V (room for CAP events) into the pool; -1 when it is full (V is the
 * caller's still). Under the lock. */
static int ddl_ev_pool_put(void *v, size_t cap)
{
	if (ddl_ev_npool >= DDL_EV_POOL)
		return -1;
	ddl_ev_pool[ddl_ev_npool].v = v;
	ddl_ev_pool[ddl_ev_npool++].cap = cap;
	ddl_ev_pooled += cap * sizeof(struct ddl_event);
	return 0;
}

static void ddl_ev_fit(void);

void ddl_events_register(struct ddl_trace *t, size_t n)
{
	pthread_mutex_lock(&ddl_ev_mu);
	for (size_t i = 0; i < n; i++) {
		if (!t[i].lazy)
			continue;
		if (ddl_ev_n == ddl_ev_cap) {
			size_t c = ddl_ev_cap ? ddl_ev_cap * 2 : 256;
			struct ddl_trace **q = realloc(ddl_ev_all, c * sizeof *q);
			if (!q) {
				/* not evicted, then: held events stay, which costs
				 * memory but never a result */
				t[i].lazy = 2;
				continue;
			}
			ddl_ev_all = q;
			ddl_ev_cap = c;
		}
		ddl_ev_all[ddl_ev_n++] = &t[i];
		if (t[i].ev) { /* kept by the first read (trace_set.c), released */
			ddl_ev_resident += t[i].nev * sizeof *t[i].ev;
			t[i].used = ++ddl_ev_clock;
		}
	}
	ddl_ev_fit();
	pthread_mutex_unlock(&ddl_ev_mu);
}

void ddl_events_unregister(struct ddl_trace *t, size_t n)
{
	pthread_mutex_lock(&ddl_ev_mu);
	size_t m = 0;
	for (size_t i = 0; i < ddl_ev_n; i++) {
		struct ddl_trace *u = ddl_ev_all[i];
		if (u >= t && u < t + n) {
			if (u->ev)
				ddl_ev_resident -= u->nev * sizeof *u->ev;
			continue;
		}
		ddl_ev_all[m++] = u;
	}
	ddl_ev_n = m;
	if (!m) {
		for (int i = 0; i < ddl_ev_npool; i++)
			free(ddl_ev_pool[i].v);
		ddl_ev_npool = 0;
		ddl_ev_pooled = 0;
		free(ddl_ev_all);
		ddl_ev_all = NULL;
		ddl_ev_cap = 0;
	}
	pthread_mutex_unlock(&ddl_ev_mu);
}

/* Notes WHY among T's problems, and marks T incomplete; under the lock. */
static void ddl_ev_problem(struct ddl_trace *t, const char *why)
{
	t->incomplete = 1;
	if (t->nproblems >= DDL_READ_MAX_PROBLEMS)
		return;
	char buf[600];
	snprintf(buf, sizeof buf, "%s: its events could not be read again for the analysis (%s)", t->path,
	         why);
	char *p = strdup(buf);
	if (p)
		t->problems[t->nproblems++] = p;
}

/* T's events read again (T is marked loading, and this runs outside the
 * lock); NULL with WHY (ERR bytes) when they could not be. */
static struct ddl_event *ddl_ev_read(const struct ddl_trace *t, struct ddl_event *buf, size_t cap,
                                     size_t *got, int *nomem, int *touched, char *why, size_t n)
{
	struct ddl_trace again;
	char err[512];
	struct ddl_event *ev = NULL;
	atomic_fetch_add(&ddl_events_rereads, 1);
	if (cap < t->nev) { /* as many as the first read found */
		struct ddl_event *q = realloc(buf, t->nev * sizeof *buf);
		if (q) {
			buf = q;
			cap = t->nev;
		}
	}
	*nomem = 0;
	if (ddl_trace_read_again(t, &again, buf, buf ? cap : 0, err, sizeof err) < 0) {
		*nomem = errno == ENOMEM || strstr(err, "out of memory");
		snprintf(why, n, "%s", err);
	}
	else if (again.file_dev != t->file_dev || again.file_ino != t->file_ino)
		snprintf(why, n, "the file was replaced");
	else if (again.file_size != t->file_size || again.shrunk)
		snprintf(why, n, "the file was cut shorter");
	else if (again.nev != t->nev && (*nomem = again.incomplete))
		snprintf(why, n, "out of memory");
	else if (again.nev != t->nev)
		snprintf(why, n, "the file changed");
	else {
		if (again.checked_before)
			atomic_fetch_add(&ddl_events_rereads_unchecked, 1);
		/* written to since the first read (the same size and count): the
		 * places it noted may not be these events' */
		*touched = again.file_mtime_ns != t->file_mtime_ns || again.file_ctime_ns != t->file_ctime_ns;
		ev = again.ev;
		*got = again.cap_ev;
		again.ev = NULL;
		again.nev = 0;
	}
	ddl_trace_free(&again);
	return ev;
}

/* Gives back the events of the least recently released traces until
 * those in memory, and NEED bytes more, fit the budget; their arrays go
 * to the pool. Under the lock. */
static void ddl_ev_evict(size_t need)
{
	while (ddl_ev_resident + ddl_ev_charged + need > ddl_events_budget) {
		struct ddl_trace *lru = NULL;
		for (size_t i = 0; i < ddl_ev_n; i++) {
			struct ddl_trace *u = ddl_ev_all[i];
			if (u->lazy == 1 && u->ev && !u->pins && !u->loading &&
			    (!lru || u->used < lru->used))
				lru = u;
		}
		if (!lru)
			return;
		ddl_ev_resident -= lru->nev * sizeof *lru->ev;
		if (ddl_ev_pool_put(lru->ev, lru->cap_ev) < 0)
			free(lru->ev);
		lru->ev = NULL;
		lru->cap_ev = 0;
	}
}

/* Frees pooled arrays, the largest first, until they fit the budget
 * beside the events in memory and NEED bytes more. Under the lock. */
static void ddl_ev_trim(size_t need)
{
	while (ddl_ev_npool && ddl_ev_resident + ddl_ev_charged + need + ddl_ev_pooled > ddl_events_budget) {
		size_t cap;
		free(ddl_ev_pool_take(ddl_ev_pool_largest(), &cap));
	}
}

/* Evicts and trims until everything fits the budget; under the lock. */
static void ddl_ev_fit(void)
{
	ddl_ev_evict(0);
	ddl_ev_trim(0);
}

void ddl_trace_hold(const struct ddl_trace *ct)
{
	struct ddl_trace *t = (struct ddl_trace *)ct; /* the events are a cache of the file */
	if (!t->lazy)
		return;
	pthread_mutex_lock(&ddl_ev_mu);
	t->pins++;
	while (t->loading)
		pthread_cond_wait(&ddl_ev_cv, &ddl_ev_mu);
	if (!t->ev && t->nev && !t->ev_lost) {
		t->loading = 1;
		size_t need = t->nev * sizeof *t->ev;
		ddl_ev_evict(need); /* room for them first */
		/* the smallest pooled array with room for them, else the
		 * largest, which the read grows (in place, or its pages moved:
		 * only the room added is new memory, where a new array would
		 * be all new pages for the kernel to clear) */
		int best = ddl_ev_pool_fitting(t->nev);
		if (best < 0)
			best = ddl_ev_pool_largest();
		size_t cap = 0, got = 0;
		struct ddl_event *buf = best >= 0 ? ddl_ev_pool_take(best, &cap) : NULL;
		ddl_ev_trim(need);
		pthread_mutex_unlock(&ddl_ev_mu);
		char why[512];
		int nomem, touched = 0;
		struct ddl_event *ev = ddl_ev_read(t, buf, cap, &got, &nomem, &touched, why, sizeof why);
		pthread_mutex_lock(&ddl_ev_mu);
		t->loading = 0;
		if (ev) {
			if (touched)
				t->rare_kept = 0; /* every event gone over from now on (ddl_trace_next_rare) */
			t->ev = ev;
			t->cap_ev = got;
			ddl_ev_resident += t->nev * sizeof *t->ev;
		} else {
			/* none from now on: every stage and output that holds it
			 * sees a trace without events (only holders read the
			 * count, and each holds it under this lock first) */
			t->nev = 0;
			t->ev_lost = nomem ? 2 : 1;
			ddl_ev_problem(t, why);
		}
		ddl_ev_fit();
		pthread_cond_broadcast(&ddl_ev_cv);
	}
	pthread_mutex_unlock(&ddl_ev_mu);
}

void ddl_trace_release(const struct ddl_trace *ct)
{
	struct ddl_trace *t = (struct ddl_trace *)ct;
	if (!t->lazy)
		return;
	pthread_mutex_lock(&ddl_ev_mu);
	t->pins--;
	t->used = ++ddl_ev_clock;
	ddl_ev_fit();
	pthread_mutex_unlock(&ddl_ev_mu);
}

int ddl_trace_in_memory(const struct ddl_trace *t)
{
	if (!t->lazy)
		return 1;
	pthread_mutex_lock(&ddl_ev_mu);
	int in = t->ev != NULL || !t->nev;
	pthread_mutex_unlock(&ddl_ev_mu);
	return in;
}

void ddl_events_charge(size_t bytes)
{
	pthread_mutex_lock(&ddl_ev_mu);
	ddl_ev_charged += bytes;
	ddl_ev_fit();
	pthread_mutex_unlock(&ddl_ev_mu);
}

void ddl_events_uncharge(size_t bytes)
{
	pthread_mutex_lock(&ddl_ev_mu);
	ddl_ev_charged -= bytes < ddl_ev_charged ? bytes : ddl_ev_charged;
	pthread_mutex_unlock(&ddl_ev_mu);
}

int ddl_grow_charged(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = ddl_grow_cap(*cap, need);
	if (!*p && elem) { /* a pooled array's pages, cleared once, rather than new ones */
		pthread_mutex_lock(&ddl_ev_mu);
		size_t ev = sizeof(struct ddl_event);
		int best = ddl_ev_pool_fitting((n * elem + ev - 1) / ev);
		if (best >= 0) {
			size_t room;
			*p = ddl_ev_pool_take(best, &room);
			*cap = room * ev / elem;
			ddl_ev_charged += *cap * elem; /* moved from the pool: the total is the same */
		}
		pthread_mutex_unlock(&ddl_ev_mu);
		if (*p)
			return 0;
	}
	ddl_events_charge((n - *cap) * elem); /* room made before it is taken */
	void *q = realloc(*p, n * elem);
	if (!q) {
		ddl_events_uncharge((n - *cap) * elem);
		return -1;
	}
	*p = q;
	*cap = n;
	return 0;
}

void ddl_events_give(void *p, size_t bytes)
{
	pthread_mutex_lock(&ddl_ev_mu);
	ddl_ev_charged -= bytes < ddl_ev_charged ? bytes : ddl_ev_charged;
	size_t cap = bytes / sizeof(struct ddl_event);
	if (p && ddl_ev_n && cap && ddl_ev_pool_put(p, cap) == 0)
		ddl_ev_fit();
	else
		free(p);
	pthread_mutex_unlock(&ddl_ev_mu);
}

size_t ddl_events_in_memory(void)
{
	pthread_mutex_lock(&ddl_ev_mu);
	size_t n = ddl_ev_resident + ddl_ev_pooled + ddl_ev_charged;
	pthread_mutex_unlock(&ddl_ev_mu);
	return n;
}
