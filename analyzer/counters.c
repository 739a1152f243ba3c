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

/* Adds the refused counter TEXT ("NAME\nwhy") once; 0, or -1 without memory. */
static int ddl_ctr_refused(struct ddl_ctrsum *c, const char *text)
{
	const char *nl = strchr(text, '\n');
	size_t n = nl ? (size_t)(nl - text) : strlen(text);
	for (size_t i = 0; i < c->nrefused; i++)
		if (strlen(c->refused[i]) == n && !strncmp(c->refused[i], text, n))
			return 0;
	char **a = realloc(c->refused, (c->nrefused + 1) * sizeof *a);
	if (a)
		c->refused = a;
	char **b = realloc(c->refused_why, (c->nrefused + 1) * sizeof *b);
	if (b)
		c->refused_why = b;
	if (!a || !b)
		return -1;
	a[c->nrefused] = strndup(text, n);
	b[c->nrefused] = strdup(nl ? nl + 1 : "refused");
	if (a[c->nrefused] && b[c->nrefused]) {
		c->nrefused++;
		return 0;
	}
	free(a[c->nrefused]);
	free(b[c->nrefused]);
	return -1;
}

/* A table from 64-bit keys to indices, so a process of many threads is
 * no search per reading: open addressing, CAP slots (a power of two, at
 * most half full), VAL index + 1 (0: empty). */
struct ddl_kmap {
	uint64_t *key;
	size_t *val;
	size_t cap, n;
};

static size_t ddl_kmap_slot(const struct ddl_kmap *m, uint64_t key)
{
	uint64_t h = key * UINT64_C(0x9e3779b97f4a7c15);
	size_t i = (size_t)(h ^ h >> 29) & (m->cap - 1);
	while (m->val[i] && m->key[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

/* The index KEY maps to, or SIZE_MAX. */
static size_t ddl_kmap_get(const struct ddl_kmap *m, uint64_t key)
{
	if (!m->cap)
		return SIZE_MAX;
	size_t i = ddl_kmap_slot(m, key);
	return m->val[i] ? m->val[i] - 1 : SIZE_MAX;
}

/* Maps KEY (not there yet) to index V; 0, or -1 without memory. */
static int ddl_kmap_put(struct ddl_kmap *m, uint64_t key, size_t v)
{
	if (2 * (m->n + 1) > m->cap) {
		struct ddl_kmap g = {NULL, NULL, m->cap ? 2 * m->cap : 64, 0};
		g.key = malloc(g.cap * sizeof *g.key);
		g.val = calloc(g.cap, sizeof *g.val);
		if (!g.key || !g.val) {
			free(g.key);
			free(g.val);
			return -1;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->val[i]) {
				size_t j = ddl_kmap_slot(&g, m->key[i]);
				g.key[j] = m->key[i];
				g.val[j] = m->val[i];
			}
		g.n = m->n;
		free(m->key);
		free(m->val);
		*m = g;
	}
	size_t i = ddl_kmap_slot(m, key);
	m->key[i] = key;
	m->val[i] = v + 1;
	m->n++;
	return 0;
}

static void ddl_kmap_free(struct ddl_kmap *m)
{
	free(m->key);
	free(m->val);
	memset(m, 0, sizeof *m);
}

/*
 * The series of counter COUNTER on thread TID in image TRACE (the first
 * reading of a new one makes it, in order), through MAP; NULL without
 * memory.
 */
static struct ddl_series *ddl_series_get(struct ddl_series **v, size_t *n, size_t *cap,
                                         struct ddl_kmap *map, size_t trace, uint32_t tid,
                                         size_t counter)
{
	if (trace > 0xffff || counter > 0xffff)
		return NULL; /* no process has so many images, or counters */
	uint64_t key = (uint64_t)tid << 32 | (uint64_t)trace << 16 | counter;
	size_t i = ddl_kmap_get(map, key);
	if (i != SIZE_MAX)
		return &(*v)[i];
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 64;
		struct ddl_series *q = realloc(*v, c * sizeof *q);
		if (!q)
			return NULL;
		*v = q;
		*cap = c;
	}
	if (ddl_kmap_put(map, key, *n) < 0)
		return NULL;
	struct ddl_series *s = &(*v)[(*n)++];
	memset(s, 0, sizeof *s);
	s->trace = trace;
	s->tid = tid;
	s->counter = counter;
	return s;
}

/* P's counters; where memory runs out, P is incomplete. */
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
	if (!c) {
		p->incomplete = 1;
		return;
	}
	p->ctr = c;
	c->domain = domain;
	struct ddl_series *ser = NULL;
	size_t nser = 0, cser = 0;
	struct ddl_kmap by_key = {0};
	for (size_t k = 0; k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		long *idx = calloc(t->ncounters + 1, sizeof *idx); /* counter id -> name index + 1 */
		if (!idx) {
			p->incomplete = 1;
			break;
		}
		for (size_t id = 1; id < t->ncounters; id++) {
			const struct ddl_idtext *x = &t->counters[id];
			if (!x->text)
				continue;
			int rc = 0;
			if (x->value)
				rc = ddl_ctr_refused(c, x->text);
			else if ((idx[id] = ddl_ctr_name(c, x->text) + 1) <= 0)
				rc = -1;
			if (rc < 0)
				p->incomplete = 1; /* a counter left out */
		}
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			if (e->kind != DDL_EV_COUNTER || e->fd <= 0 || (size_t)e->fd >= t->ncounters ||
			    idx[e->fd] <= 0)
				continue;
			uint32_t tid = e->tid < t->nthreads ? t->threads[e->tid].tid : 0;
			struct ddl_series *s = ddl_series_get(&ser, &nser, &cser, &by_key, k, tid,
			                                      (size_t)idx[e->fd] - 1);
			if (!s) {
				p->incomplete = 1;
				continue;
			}
			if (s->n == s->cap) {
				size_t nc = s->cap ? s->cap * 2 : 64;
				struct ddl_reading *q = realloc(s->r, nc * sizeof *q);
				if (!q) {
					p->incomplete = 1;
					continue;
				}
				s->r = q;
				s->cap = nc;
			}
			s->r[s->n++] = (struct ddl_reading){ddl_trace_real_ns(t, e->start), (double)e->result};
		}
		free(idx);
	}
	if (!c->ncounters && papi && strcmp(papi, "on"))
		c->error = papi; /* lives as long as the trace */
	ddl_kmap_free(&by_key);
	/* one row per thread that has readings, in the order of its first */
	struct ddl_kmap rows = {0}, names = {0};
	size_t *row_of = calloc(nser + 1, sizeof *row_of), crow = 0; /* series -> row + 1 */
	for (size_t k = 0; row_of && k < p->nthreads; k++)
		if (ddl_kmap_get(&names, p->threads[k].tid) == SIZE_MAX &&
		    ddl_kmap_put(&names, p->threads[k].tid, k) < 0)
			p->incomplete = 1; /* a thread's row unnamed */
	if (!row_of)
		p->incomplete = 1; /* no rows */
	for (size_t i = 0; row_of && i < nser; i++) {
		struct ddl_series *s = &ser[i];
		qsort(s->r, s->n, sizeof *s->r, ddl_reading_cmp);
		size_t h = ddl_kmap_get(&rows, s->tid);
		if (h != SIZE_MAX) {
			row_of[i] = h + 1;
			continue;
		}
		if (c->nthreads == crow) {
			size_t nc = crow ? 2 * crow : 16;
			struct ddl_ctrthread *q = realloc(c->threads, nc * sizeof *q);
			if (!q) {
				p->incomplete = 1;
				continue;
			}
			c->threads = q;
			crow = nc;
		}
		struct ddl_ctrthread *th = &c->threads[c->nthreads];
		memset(th, 0, sizeof *th);
		th->tid = s->tid;
		th->per_iter = calloc(c->ncounters, sizeof *th->per_iter);
		th->total = calloc(c->ncounters, sizeof *th->total);
		if (!th->per_iter || !th->total || ddl_kmap_put(&rows, s->tid, c->nthreads) < 0) {
			free(th->per_iter);
			free(th->total);
			p->incomplete = 1;
			continue;
		}
		size_t k = ddl_kmap_get(&names, s->tid);
		if (k != SIZE_MAX)
			th->name = p->threads[k].name;
		row_of[i] = ++c->nthreads;
	}
	ddl_kmap_free(&rows);
	ddl_kmap_free(&names);
	/* each thread's iterations, against each of its series (one per image),
	 * summed in the order of the series; the iterations are mostly of one
	 * thread (ONE, 0 when not), whose series alone can count them */
	size_t *iters = row_of ? calloc(c->nthreads * c->ncounters + 1, sizeof *iters) : NULL;
	if (row_of && !iters)
		p->incomplete = 1;
	uint32_t one = p->niter ? (p->iter[0].tid ? p->iter[0].tid : p->pid) : 0;
	for (size_t k = 1; k < p->niter && one; k++)
		if ((p->iter[k].tid ? p->iter[k].tid : p->pid) != one)
			one = 0;
	for (size_t i = 0; iters && i < nser; i++) {
		const struct ddl_series *s = &ser[i];
		if (!row_of[i] || !s->n)
			continue;
		struct ddl_ctrthread *th = &c->threads[row_of[i] - 1];
		size_t ci = s->counter;
		th->total[ci] += s->r[s->n - 1].v - s->r[0].v;
		if (s->n > th->readings)
			th->readings = s->n;
		for (size_t k = 0; k < p->niter && (!one || one == s->tid); k++) {
			uint32_t itid = p->iter[k].tid ? p->iter[k].tid : p->pid;
			double a, b;
			if (itid != s->tid || !ddl_series_at(s, p->iter[k].start_ns, &a) ||
			    !ddl_series_at(s, p->iter[k].end_ns, &b))
				continue;
			th->per_iter[ci] += b - a; /* the sum, until divided below */
			iters[(row_of[i] - 1) * c->ncounters + ci]++;
		}
	}
	for (size_t h = 0; iters && h < c->nthreads; h++) {
		struct ddl_ctrthread *th = &c->threads[h];
		for (size_t ci = 0; ci < c->ncounters; ci++) {
			size_t n = iters[h * c->ncounters + ci];
			th->per_iter[ci] = n ? th->per_iter[ci] / (double)n : 0;
			if (n > th->iterations)
				th->iterations = n;
		}
	}
	free(iters);
	free(row_of);
	for (size_t i = 0; i < nser; i++)
		free(ser[i].r);
	free(ser);
}

void ddl_report_counters(struct ddl_report *r)
{
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		int asked = 0; /* what ddl_proc_counters looks at first: the events only then */
		for (size_t k = 0; k < p->ntr && !asked; k++)
			asked = ddl_trace_meta(p->tr[k], "papi") || p->tr[k]->ncounters > 0;
		if (!asked)
			continue;
		ddl_proc_hold(p);
		ddl_proc_counters(&r->procs[i]);
		ddl_proc_release(p);
	}
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
