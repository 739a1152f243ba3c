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
