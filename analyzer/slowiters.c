/*
 * Iterations that run slow (after iterations.c): per rank, on its analysed
 * iterations' durations, a change point, where the steps go on at another
 * pace for good (a thermal throttle, a neighbour's job, a leak), and the
 * single iterations that stand out of the pace around them (a checkpoint,
 * a garbage collection, a retransmission).
 *
 * The change point is the split of the series into a before and an after,
 * five iterations or more each, their medians a tenth apart or more, that
 * leaves the least absolute deviation from the two sides' medians: a
 * robust segmentation, which a slow iteration on either side pulls far
 * less than squared deviations do (by Welch's t alone, a neighbour's burst
 * of load three steps before the change moved the split onto it). It
 * counts when Welch's t over the two sides, each clipped to its median and
 * four robust deviations, is 5 or more. Only a change to a slower pace is
 * reported (a job that speeds up is not one that runs slow); either kind
 * splits the series for the slow iterations, so that the steps before a
 * speed-up are not all named slow. A slow iteration
 * is one longer than the median of its side of the split by four robust
 * deviations (1.4826 times the median absolute deviation) and a fifth of
 * that median, and 0.5 ms. Ranks with fewer than eight iterations are not
 * looked at.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

#define DDL_SLOW_MIN_ITERS 8

/* The median of X[0..N) (reordering TMP, a copy). */
static double ddl_median(const double *x, size_t n, double *tmp)
{
	memcpy(tmp, x, n * sizeof *tmp);
	qsort(tmp, n, sizeof *tmp, ddl_cmp_double);
	return ddl_sorted_median(tmp, n);
}

/* The robust deviation of X[0..N) around M. */
static double ddl_mad(const double *x, size_t n, double m, double *tmp)
{
	for (size_t i = 0; i < n; i++)
		tmp[i] = fabs(x[i] - m);
	qsort(tmp, n, sizeof *tmp, ddl_cmp_double);
	double mad = ddl_sorted_median(tmp, n);
	return 1.4826 * mad;
}

/*
 * A running median with the absolute deviation around it: the lower half
 * in a max-heap, the upper in a min-heap (each kept as a min-heap, the
 * lower of negated values), with their sums.
 */
struct ddl_rmed {
	double *lo, *hi, slo, shi;
	size_t nlo, nhi;
};

static void ddl_heap_push(double *h, size_t *n, double v)
{
	size_t i = (*n)++;
	for (; i && h[(i - 1) / 2] > v; i = (i - 1) / 2)
		h[i] = h[(i - 1) / 2];
	h[i] = v;
}

static double ddl_heap_pop(double *h, size_t *n)
{
	double top = h[0], v = h[--*n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] < h[c])
			c++;
		if (h[c] >= v)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = v;
	return top;
}

static void ddl_rmed_add(struct ddl_rmed *m, double v)
{
	if (m->nlo && v > -m->lo[0]) {
		ddl_heap_push(m->hi, &m->nhi, v);
		m->shi += v;
	} else {
		ddl_heap_push(m->lo, &m->nlo, -v);
		m->slo += v;
	}
	if (m->nlo > m->nhi + 1) {
		double x = -ddl_heap_pop(m->lo, &m->nlo);
		m->slo -= x;
		ddl_heap_push(m->hi, &m->nhi, x);
		m->shi += x;
	} else if (m->nhi > m->nlo) {
		double x = ddl_heap_pop(m->hi, &m->nhi);
		m->shi -= x;
		ddl_heap_push(m->lo, &m->nlo, -x);
		m->slo += x;
	}
}

/* The median so far into *MED; returns the sum of absolute deviations from it. */
static double ddl_rmed_get(const struct ddl_rmed *m, double *med)
{
	*med = m->nlo > m->nhi ? -m->lo[0] : (-m->lo[0] + m->hi[0]) / 2;
	return m->shi - m->slo + (m->nlo > m->nhi ? *med : 0);
}

/* Each side's median and the absolute deviation from it, for every prefix
 * (or, REV, every suffix) of X[0..N): MED[k], COST[k] for the first k
 * (the last N - k). -1 without memory. */
static int ddl_side_costs(const double *x, size_t n, int rev, double *med, double *cost)
{
	struct ddl_rmed m = {malloc(n * sizeof(double)), malloc(n * sizeof(double)), 0, 0, 0, 0};
	if (!m.lo || !m.hi) {
		free(m.lo);
		free(m.hi);
		return -1;
	}
	for (size_t j = 0; j < n; j++) {
		size_t k = rev ? n - 1 - j : j + 1; /* the side that holds J + 1 values */
		ddl_rmed_add(&m, x[rev ? n - 1 - j : j]);
		cost[k] = ddl_rmed_get(&m, &med[k]);
	}
	free(m.lo);
	free(m.hi);
	return 0;
}

/* Welch's t (its size) between X[0..K) and X[K..N), each side clipped to its median
 * M1, M2 and four robust deviations. */
static double ddl_clipped_t(const double *x, size_t k, size_t n, double m1, double m2, double *tmp,
                            double *mean1, double *mean2)
{
	double mean[2], var[2], cnt[2] = {(double)k, (double)(n - k)};
	for (int side = 0; side < 2; side++) {
		size_t a = side ? k : 0, b = side ? n : k;
		double m = side ? m2 : m1, dev = ddl_mad(x + a, b - a, m, tmp), s = 0, q = 0;
		for (size_t i = a; i < b; i++) {
			double v = x[i] > m + 4 * dev ? m + 4 * dev : x[i] < m - 4 * dev ? m - 4 * dev : x[i];
			s += v;
			q += v * v;
		}
		mean[side] = s / cnt[side];
		var[side] = q / cnt[side] - mean[side] * mean[side];
		var[side] = var[side] > 0 ? var[side] : 0;
	}
	*mean1 = mean[0];
	*mean2 = mean[1];
	double se = sqrt(var[0] / cnt[0] + var[1] / cnt[1]), d = fabs(mean[1] - mean[0]);
	/* a split between two flat paces has no spread at all: as sure as a split gets */
	return d == 0 ? 0 : se > 0 ? d / se : INFINITY;
}

/* The split of X[0..N) into two paces, 0 when there is none, SIZE_MAX
 * without memory; *SLOWER whether the after is the slower (by the sides'
 * medians, as the split was chosen), *BEFORE and *AFTER the sides' means,
 * each clipped as for the t (one checkpoint does not move them). */
static size_t ddl_change_point(const double *x, size_t n, int *slower, double *before, double *after, double *tmp)
{
	double *buf = malloc(4 * (n + 1) * sizeof *buf);
	if (!buf)
		return SIZE_MAX;
	double *pmed = buf, *pcost = buf + n + 1, *smed = buf + 2 * (n + 1), *scost = buf + 3 * (n + 1);
	size_t at = 0;
	if (ddl_side_costs(x, n, 0, pmed, pcost) || ddl_side_costs(x, n, 1, smed, scost))
		at = SIZE_MAX;
	else {
		double best = INFINITY;
		for (size_t k = 5; k + 5 <= n; k++)
			if ((smed[k] >= 1.1 * pmed[k] || pmed[k] >= 1.1 * smed[k]) && pcost[k] + scost[k] < best) {
				best = pcost[k] + scost[k];
				at = k;
			}
	}
	if (at && at != SIZE_MAX) {
		*slower = smed[at] > pmed[at];
		if (ddl_clipped_t(x, at, n, pmed[at], smed[at], tmp, before, after) < 5)
			at = 0;
	}
	free(buf);
	return at;
}

/* The slow iterations among X[A..B) of P, appended to P->slow. -1 without memory. */
static int ddl_slow_in(struct ddl_proc *p, const double *x, size_t a, size_t b, double *tmp)
{
	if (b - a < 3)
		return 0;
	double m = ddl_median(x + a, b - a, tmp), dev = ddl_mad(x + a, b - a, m, tmp);
	double lim = m + 4 * dev + 0.2 * m;
	if (lim < m + 0.0005)
		lim = m + 0.0005;
	for (size_t i = a; i < b; i++) {
		if (x[i] <= lim)
			continue;
		if (p->nslow % 16 == 0) {
			struct ddl_slowiter *q = realloc(p->slow, (p->nslow + 16) * sizeof *q);
			if (!q)
				return -1;
			p->slow = q;
		}
		p->slow[p->nslow++] = (struct ddl_slowiter){i + (size_t)p->warmup_skipped, x[i], m};
	}
	return 0;
}

void ddl_report_slow_iterations(struct ddl_report *r)
{
	r->nslow = 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		struct ddl_proc *p = &r->procs[i];
		p->shift_at = -1;
		if (p->niter < DDL_SLOW_MIN_ITERS || !p->iter_s)
			continue;
		double *tmp = malloc(p->niter * sizeof *tmp);
		if (!tmp) {
			p->incomplete = 1; /* not looked at */
			continue;
		}
		double before = 0, after = 0;
		int slower = 0;
		size_t k = ddl_change_point(p->iter_s, p->niter, &slower, &before, &after, tmp);
		if (k == SIZE_MAX) {
			p->incomplete = 1; /* no change of pace looked for */
			k = 0;
		}
		if (k && slower) {
			p->shift_at = (long)(k + (size_t)p->warmup_skipped);
			p->shift_before_s = before;
			p->shift_after_s = after;
		}
		if (ddl_slow_in(p, p->iter_s, 0, k ? k : p->niter, tmp) < 0 ||
		    (k && ddl_slow_in(p, p->iter_s, k, p->niter, tmp) < 0))
			p->incomplete = 1; /* fewer slow iterations named */
		r->nslow += p->nslow;
		free(tmp);
	}
}
