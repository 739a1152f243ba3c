/*
 * The simulator's event queue: a binary min-heap of timed events (job
 * finishes, lease ends), ordered by time and then by insertion order so
 * simultaneous events come out the same way every run. Arrivals do not go
 * through it: the engine walks the jobs, already sorted by arrival, beside
 * it. A finish event carries the job's version; the engine drops it when
 * the job was preempted or moved since.
 */
#include <stdlib.h>

#include "sim.h"

static int ddl_sim_before(const struct ddl_sim_event *a, const struct ddl_sim_event *b)
{
	if (a->t != b->t)
		return a->t < b->t;
	return a->seq < b->seq;
}

int ddl_sim_heap_push(struct ddl_sim_heap *h, double t, int kind, int job, unsigned version)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 1024;
		struct ddl_sim_event *ev = realloc(h->ev, cap * sizeof *ev);
		if (!ev)
			return -1;
		h->ev = ev;
		h->cap = cap;
	}
	struct ddl_sim_event e = {t, h->seq++, kind, job, version};
	size_t i = h->n++;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!ddl_sim_before(&e, &h->ev[p]))
			break;
		h->ev[i] = h->ev[p];
		i = p;
	}
	h->ev[i] = e;
	return 0;
}

const struct ddl_sim_event *ddl_sim_heap_top(const struct ddl_sim_heap *h)
{
	return h->n ? &h->ev[0] : NULL;
}

int ddl_sim_heap_pop(struct ddl_sim_heap *h, struct ddl_sim_event *e)
{
	if (!h->n)
		return 0;
	*e = h->ev[0];
	struct ddl_sim_event last = h->ev[--h->n];
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		const struct ddl_sim_event *best = &last;
		if (l < h->n && ddl_sim_before(&h->ev[l], best)) {
			m = l;
			best = &h->ev[l];
		}
		if (r < h->n && ddl_sim_before(&h->ev[r], best))
			m = r;
		if (m == i)
			break;
		h->ev[i] = h->ev[m];
		i = m;
	}
	if (h->n)
		h->ev[i] = last;
	return 1;
}

void ddl_sim_heap_free(struct ddl_sim_heap *h)
{
	free(h->ev);
	h->ev = NULL;
	h->n = h->cap = 0;
}
