/*
 * Counters per thread and iteration (ddlprof --papi). The library reads a
 * thread's counters at each of its marker events and records the running
 * totals (DDL_EV_COUNTER, ddlprof-trace(5)). Here each thread's readings of
 * each counter become a step function of time, interpolated linearly
 * between readings; an iteration of that thread counts what the function
 * rose from its start to its end, and the report gives the mean over the
 * iterations with readings on both sides. Counters PAPI refused on the
 * machine (hardware counters in most virtual machines) are listed with
 * PAPI's reason, never as zeros.
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"

struct ddl_reading {
	int64_t ns;
	double v;
};

struct ddl_series {
	size_t trace;            /* each exec image counts from 0 again */
	uint32_t tid;
	size_t counter;          /* index into the process's names */
	struct ddl_reading *r;
	size_t n, cap;
};

static int ddl_reading_cmp(const void *x, const void *y)
{
	const struct ddl_reading *p = x, *q = y;
	return p->ns < q->ns ? -1 : p->ns > q->ns;
}

/* A reading this close to an iteration's end stands for it: the library reads
 * the counters just before it records the marker event that ends it. */
#define DDL_CTR_SLACK_NS 1000000

/* The series' value at NS, interpolated; 0 when no reading lies on each side. */
static int ddl_series_at(const struct ddl_series *s, int64_t ns, double *v)
{
	if (s->n && ns > s->r[s->n - 1].ns && ns - s->r[s->n - 1].ns <= DDL_CTR_SLACK_NS)
		ns = s->r[s->n - 1].ns;
	if (s->n && ns < s->r[0].ns && s->r[0].ns - ns <= DDL_CTR_SLACK_NS)
		ns = s->r[0].ns;
	size_t lo = 0, hi = s->n; /* the first reading after ns */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->r[mid].ns <= ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return 0;
	const struct ddl_reading *a = &s->r[lo - 1];
	if (a->ns == ns || lo == s->n) {
		if (a->ns != ns)
			return 0;
		*v = a->v;
		return 1;
	}
	const struct ddl_reading *b = &s->r[lo];
	*v = a->v + (b->v - a->v) * (double)(ns - a->ns) / (double)(b->ns - a->ns);
	return 1;
}

/* Index of NAME among the counted names, added when new; -1 without memory. */
static long ddl_ctr_name(struct ddl_ctrsum *c, const char *name)
{
	for (size_t i = 0; i < c->ncounters; i++)
		if (!strcmp(c->names[i], name))
			return (long)i;
	char **q = realloc(c->names, (c->ncounters + 1) * sizeof *q);
	if (!q)
		return -1;
	c->names = q;
	if (!(q[c->ncounters] = strdup(name)))
		return -1;
	return (long)c->ncounters++;
}

static void ddl_ctr_refused(struct ddl_ctrsum *c, const char *text)
{
	const char *nl = strchr(text, '\n');
	size_t n = nl ? (size_t)(nl - text) : strlen(text);
	for (size_t i = 0; i < c->nrefused; i++)
		if (strlen(c->refused[i]) == n && !strncmp(c->refused[i], text, n))
			return;
	char **a = realloc(c->refused, (c->nrefused + 1) * sizeof *a);
	if (a)
		c->refused = a;
	char **b = realloc(c->refused_why, (c->nrefused + 1) * sizeof *b);
	if (b)
		c->refused_why = b;
	if (!a || !b)
		return;
	a[c->nrefused] = strndup(text, n);
	b[c->nrefused] = strdup(nl ? nl + 1 : "refused");
	if (a[c->nrefused] && b[c->nrefused])
		c->nrefused++;
	else {
		free(a[c->nrefused]);
		free(b[c->nrefused]);
	}
}

static struct ddl_series *ddl_series_get(struct ddl_series **v, size_t *n, size_t trace,
                                         uint32_t tid, size_t counter)
{
	for (size_t i = 0; i < *n; i++)
		if ((*v)[i].trace == trace && (*v)[i].tid == tid && (*v)[i].counter == counter)
			return &(*v)[i];
	struct ddl_series *q = realloc(*v, (*n + 1) * sizeof *q);
	if (!q)
		return NULL;
	*v = q;
	memset(&q[*n], 0, sizeof q[*n]);
	q[*n].trace = trace;
	q[*n].tid = tid;
	q[*n].counter = counter;
	return &q[(*n)++];
}

static void ddl_proc_counters(struct ddl_proc *p)
{
	const char *papi = NULL;
	int any = 0;
	for (size_t k = 0; k < p->ntr; k++) {
		const char *v = ddl_trace_meta(p->tr[k], "papi");
		if (v && (!papi || !strcmp(v, "on")))
			papi = v;
		any |= p->tr[k]->ncounters > 0;
	}
	const char *domain = NULL;
	for (size_t k = 0; k < p->ntr && !domain; k++)
		domain = ddl_trace_meta(p->tr[k], "papi_domain");
	if (!papi && !any)
		return; /* not asked for */
	struct ddl_ctrsum *c = calloc(1, sizeof *c);
	if (!c)
		return;
	p->ctr = c;
	c->domain = domain;
	struct ddl_series *ser = NULL;
	size_t nser = 0;
	for (size_t k = 0; k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		long *idx = calloc(t->ncounters + 1, sizeof *idx); /* counter id -> name index + 1 */
		if (!idx)
			break;
		for (size_t id = 1; id < t->ncounters; id++) {
			const struct ddl_idtext *x = &t->counters[id];
			if (!x->text)
				continue;
			if (x->value)
				ddl_ctr_refused(c, x->text);
			else
				idx[id] = ddl_ctr_name(c, x->text) + 1;
		}
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			if (e->kind != DDL_EV_COUNTER || e->fd <= 0 || (size_t)e->fd >= t->ncounters ||
			    idx[e->fd] <= 0)
				continue;
			uint32_t tid = e->tid < t->nthreads ? t->threads[e->tid].tid : 0;
			struct ddl_series *s = ddl_series_get(&ser, &nser, k, tid, (size_t)idx[e->fd] - 1);
			if (!s)
				continue;
			if (s->n == s->cap) {
				size_t nc = s->cap ? s->cap * 2 : 64;
				struct ddl_reading *q = realloc(s->r, nc * sizeof *q);
				if (!q)
					continue;
				s->r = q;
				s->cap = nc;
			}
			s->r[s->n++] = (struct ddl_reading){ddl_trace_real_ns(t, e->start), (double)e->result};
		}
		free(idx);
	}
	if (!c->ncounters && papi && strcmp(papi, "on"))
		c->error = papi; /* lives as long as the trace */
	/* one row per thread that has readings */
	for (size_t i = 0; i < nser; i++) {
		struct ddl_series *s = &ser[i];
		qsort(s->r, s->n, sizeof *s->r, ddl_reading_cmp);
		int seen = 0;
		for (size_t k = 0; k < c->nthreads; k++)
			seen |= c->threads[k].tid == s->tid;
		if (seen)
			continue;
		struct ddl_ctrthread *q = realloc(c->threads, (c->nthreads + 1) * sizeof *q);
		if (!q)
			continue;
		c->threads = q;
		struct ddl_ctrthread *th = &q[c->nthreads];
		memset(th, 0, sizeof *th);
		th->tid = s->tid;
		th->per_iter = calloc(c->ncounters, sizeof *th->per_iter);
		th->total = calloc(c->ncounters, sizeof *th->total);
		if (!th->per_iter || !th->total) {
			free(th->per_iter);
			free(th->total);
			continue;
		}
		for (size_t k = 0; k < p->nthreads; k++)
			if (p->threads[k].tid == s->tid)
				th->name = p->threads[k].name;
		c->nthreads++;
	}
	/* each thread's iterations, against each of its series (one per image) */
	for (size_t h = 0; h < c->nthreads; h++) {
		struct ddl_ctrthread *th = &c->threads[h];
		for (size_t ci = 0; ci < c->ncounters; ci++) {
			double sum = 0, total = 0;
			size_t iters = 0;
			for (size_t i = 0; i < nser; i++) {
				const struct ddl_series *s = &ser[i];
				if (s->tid != th->tid || s->counter != ci || !s->n)
					continue;
				total += s->r[s->n - 1].v - s->r[0].v;
				if (s->n > th->readings)
					th->readings = s->n;
				for (size_t k = 0; k < p->niter; k++) {
					uint32_t itid = p->iter[k].tid ? p->iter[k].tid : p->pid;
					double a, b;
					if (itid != s->tid || !ddl_series_at(s, p->iter[k].start_ns, &a) ||
					    !ddl_series_at(s, p->iter[k].end_ns, &b))
						continue;
					sum += b - a;
					iters++;
				}
			}
			th->per_iter[ci] = iters ? sum / (double)iters : 0;
			th->total[ci] = total;
			if (iters > th->iterations)
				th->iterations = iters;
		}
	}
	for (size_t i = 0; i < nser; i++)
		free(ser[i].r);
	free(ser);
}

void ddl_report_counters(struct ddl_report *r)
{
	for (size_t i = 0; i < r->nprocs; i++)
		ddl_proc_counters(&r->procs[i]);
}

void ddl_counters_free(struct ddl_report *r)
{
	for (size_t i = 0; i < r->nprocs; i++) {
		struct ddl_ctrsum *c = r->procs[i].ctr;
		if (!c)
			continue;
		for (size_t k = 0; k < c->ncounters; k++)
			free(c->names[k]);
		for (size_t k = 0; k < c->nrefused; k++) {
			free(c->refused[k]);
			free(c->refused_why[k]);
		}
		for (size_t k = 0; k < c->nthreads; k++) {
			free(c->threads[k].per_iter);
			free(c->threads[k].total);
		}
		free(c->names);
		free(c->refused);
		free(c->refused_why);
		free(c->threads);
		free(c);
		r->procs[i].ctr = NULL;
	}
}
