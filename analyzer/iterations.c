/*
 * Iterations from the marker API: on each thread, a range whose name
 * matches one of the iteration patterns (shell globs, case-insensitive;
 * default "*step*,*iter*") and is not inside another matching range is one
 * iteration. The first warm-up iterations of each process are skipped, but
 * never all of them. Later issues add detection from collectives and from
 * the rhythm of socket traffic when there are no markers.
 */
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

static int ddl_name_matches(const char *name, const char *patterns)
{
	if (!name)
		return 0;
	char buf[512];
	snprintf(buf, sizeof buf, "%s", patterns);
	char *save;
	for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save))
		if (fnmatch(p, name, FNM_CASEFOLD) == 0)
			return 1;
	return 0;
}

#define DDL_DEPTH_MAX 256

struct ddl_open {
	uint32_t tid;
	int depth;                    /* open ranges on this thread */
	int match[DDL_DEPTH_MAX];     /* whether each open range is an iteration */
	int64_t start[DDL_DEPTH_MAX];
	int matching;                 /* open iteration ranges */
};

static int ddl_push_iter(struct ddl_proc *p, double s)
{
	double *q = realloc(p->iter_s, (p->niter + 1) * sizeof *q);
	if (!q)
		return -1;
	p->iter_s = q;
	p->iter_s[p->niter++] = s;
	return 0;
}

/* Fills p->iter_s with the durations of its iterations, in time order. */
static void ddl_proc_iterations(struct ddl_proc *p, const char *patterns)
{
	struct ddl_open *open = NULL;
	size_t nopen = 0;
	for (size_t k = 0; k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			if (e->kind != DDL_EV_RANGE_PUSH && e->kind != DDL_EV_RANGE_POP)
				continue;
			struct ddl_open *o = NULL;
			for (size_t j = 0; j < nopen && !o; j++)
				if (open[j].tid == e->tid)
					o = &open[j];
			if (!o) {
				struct ddl_open *q = realloc(open, (nopen + 1) * sizeof *q);
				if (!q)
					break;
				open = q;
				o = &open[nopen++];
				memset(o, 0, sizeof *o);
				o->tid = e->tid;
			}
			int64_t now = ddl_trace_real_ns(t, e->start);
			if (e->kind == DDL_EV_RANGE_PUSH) {
				if (o->depth >= DDL_DEPTH_MAX) {
					o->depth++;
					continue;
				}
				const char *name = e->result > 0 && (size_t)e->result < t->nnames
				                       ? t->names[e->result] : NULL;
				int m = !o->matching && ddl_name_matches(name, patterns);
				o->match[o->depth] = m;
				o->start[o->depth] = now;
				o->matching += m;
				o->depth++;
			} else if (o->depth > 0) {
				o->depth--;
				if (o->depth < DDL_DEPTH_MAX && o->match[o->depth]) {
					o->matching--;
					ddl_push_iter(p, (double)(now - o->start[o->depth]) / 1e9);
				}
			}
		}
	}
	free(open);
}

static int ddl_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The q-quantile of n sorted values, nearest rank. */
static double ddl_quantile(const double *v, size_t n, double q)
{
	size_t i = (size_t)ceil(q * (double)n);
	return v[i ? i - 1 : 0];
}

void ddl_report_iterations(struct ddl_report *r, const char *patterns, int warmup)
{
	size_t total = 0;
	r->iterations = -1;
	for (size_t i = 0; i < r->nprocs; i++) {
		struct ddl_proc *p = &r->procs[i];
		ddl_proc_iterations(p, patterns);
		if (!p->niter)
			continue;
		size_t skip = (size_t)warmup < p->niter ? (size_t)warmup : p->niter - 1;
		memmove(p->iter_s, p->iter_s + skip, (p->niter - skip) * sizeof *p->iter_s);
		p->niter -= skip;
		p->warmup_skipped = (int)skip;
		double sum = 0;
		for (size_t k = 0; k < p->niter; k++)
			sum += p->iter_s[k];
		p->iter_mean_s = sum / (double)p->niter;
		total += p->niter;
		if (r->iterations < 0 || (long)p->niter < r->iterations)
			r->iterations = (long)p->niter;
	}
	if (!total) {
		r->iterations = 0;
		r->iteration_method = "none";
		return;
	}
	r->iteration_method = "markers";
	double *all = malloc(total * sizeof *all);
	if (!all)
		return;
	size_t n = 0;
	double sum = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		for (size_t k = 0; k < r->procs[i].niter; k++) {
			all[n++] = r->procs[i].iter_s[k];
			sum += r->procs[i].iter_s[k];
		}
	qsort(all, n, sizeof *all, ddl_cmp_double);
	r->iter_mean_s = sum / (double)n;
	r->iter_p50_s = ddl_quantile(all, n, 0.5);
	r->iter_p99_s = ddl_quantile(all, n, 0.99);
	free(all);
}
