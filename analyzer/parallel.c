/*
 * The analysis's per-process stages on several cores: ddl_parallel runs
 * FN(ARG, i) for every i below N on up to ddl_report_threads threads
 * (--threads; default the CPUs this process may run on), each taking the
 * next i as it finishes the last. FN may only write what belongs to its
 * own i (a process's results) and read what no other i writes, so the
 * result is the same whatever the order, and the report is the same byte
 * for byte with one thread or many (report_threads_identical). Where a
 * thread cannot be made, the calling thread does the rest.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "report.h"

int ddl_report_threads; /* 0: the CPUs we may run on */

struct ddl_par {
	void (*fn)(void *, size_t);
	void *arg;
	size_t n;
	_Atomic size_t next;
};

static void *ddl_par_main(void *v)
{
	struct ddl_par *p = v;
	for (size_t i; (i = atomic_fetch_add(&p->next, 1)) < p->n;)
		p->fn(p->arg, i);
	return NULL;
}

int ddl_parallel_threads(void)
{
	if (ddl_report_threads > 0)
		return ddl_report_threads;
	cpu_set_t set;
	int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
	return n < 1 ? 1 : n > DDL_THREADS_MAX ? DDL_THREADS_MAX : n;
}

void ddl_parallel(size_t n, void (*fn)(void *arg, size_t i), void *arg)
{
	struct ddl_par p = {fn, arg, n, 0};
	size_t k = (size_t)ddl_parallel_threads();
	if (k > n)
		k = n;
	pthread_t th[DDL_THREADS_MAX];
	size_t made = 0;
	while (made + 1 < k && pthread_create(&th[made], NULL, ddl_par_main, &p) == 0)
		made++;
	ddl_par_main(&p); /* this thread too, and all of it where none could be made */
	for (size_t i = 0; i < made; i++)
		pthread_join(th[i], NULL);
}

void ddl_proc_hold(const struct ddl_proc *p)
{
	for (size_t k = 0; k < p->ntr; k++)
		ddl_trace_hold(p->tr[k]);
}

uint32_t ddl_proc_classes(const struct ddl_proc *p)
{
	uint32_t m = 0;
	for (size_t k = 0; k < p->ntr; k++)
		m |= ddl_trace_classes(p->tr[k]);
	return m;
}

int ddl_proc_has_class(const struct ddl_proc *p, int cls)
{
	return ddl_proc_classes(p) >> cls & 1u;
}

void ddl_proc_release(const struct ddl_proc *p)
{
	for (size_t k = 0; k < p->ntr; k++)
		ddl_trace_release(p->tr[k]);
}

struct ddl_parp {
	const struct ddl_report *r;
	void (*fn)(void *, size_t);
	void *arg;
	const size_t *order; /* NULL: in order */
};

static void ddl_parp_one(void *v, size_t i)
{
	struct ddl_parp *q = v;
	size_t k = q->order ? q->order[i] : i;
	ddl_proc_hold(&q->r->procs[k]);
	q->fn(q->arg, k);
	ddl_proc_release(&q->r->procs[k]);
}

static int ddl_proc_in_memory(const struct ddl_proc *p)
{
	for (size_t k = 0; k < p->ntr; k++)
		if (!ddl_trace_in_memory(p->tr[k]))
			return 0;
	return 1;
}

/* The processes whose events are in memory first: the last stage left the
 * budget's worth of them there, and they are worked on before reading the
 * others evicts them (in order they would be the first evicted, every
 * stage reading all again). The order never shows in the results. */
void ddl_parallel_procs_some(const struct ddl_report *r, const unsigned char *want,
                             void (*fn)(void *arg, size_t i), void *arg)
{
	size_t n = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		n += !want || want[i];
	size_t *order = n > 1 || want ? malloc((n ? n : 1) * sizeof *order) : NULL, k = 0, m = n;
	if (!order)
		n = r->nprocs; /* without memory: all of them, in order */
	for (size_t i = 0; order && i < r->nprocs; i++) /* those in memory from the front, the rest from the back */
		if (!want || want[i])
			order[ddl_proc_in_memory(&r->procs[i]) ? k++ : --m] = i;
	for (size_t a = m, b = n; order && a + 1 < b; a++, b--) { /* the rest in order too */
		size_t x = order[a];
		order[a] = order[b - 1];
		order[b - 1] = x;
	}
	struct ddl_parp q = {r, fn, arg, order};
	ddl_parallel(n, ddl_parp_one, &q);
	free(order);
}

void ddl_parallel_procs(const struct ddl_report *r, void (*fn)(void *arg, size_t i), void *arg)
{
	ddl_parallel_procs_some(r, NULL, fn, arg);
}
