/*
 * Iterations that run slow (after iterations.c): per rank, on its analysed
 * iterations' durations, a change point, where the steps go on at another
 * pace for good (a thermal throttle, a neighbour's job, a leak), and the
 * single iterations that stand out of the pace around them (a checkpoint,
 * a garbage collection, a retransmission).
 *
 * The change point is the split of the series into a before and an after,
 * the after the slower, whose means differ most against their spread
 * (Welch's t, over every split leaving five iterations or more on each
 * side); it counts when t is 5 or more and the after is a tenth slower or
 * more (a job that speeds up is not one that runs slow). A slow iteration
 * is one longer than the median of its side of the split by four robust
 * deviations (1.4826 times the median absolute deviation) and a fifth of
 * that median, and 0.5 ms. Ranks with fewer than eight iterations are not
 * looked at.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

#define DDL_SLOW_MIN_ITERS 8

static int ddl_dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median of X[0..N) (reordering TMP, a copy). */
static double ddl_median(const double *x, size_t n, double *tmp)
{
	memcpy(tmp, x, n * sizeof *tmp);
	qsort(tmp, n, sizeof *tmp, ddl_dbl_cmp);
	return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

/* The robust deviation of X[0..N) around M. */
static double ddl_mad(const double *x, size_t n, double m, double *tmp)
{
	for (size_t i = 0; i < n; i++)
		tmp[i] = fabs(x[i] - m);
	qsort(tmp, n, sizeof *tmp, ddl_dbl_cmp);
	double mad = n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
	return 1.4826 * mad;
}

/* The split of X[0..N) into two paces, or 0 when there is none. */
static size_t ddl_change_point(const double *x, size_t n, double *before, double *after)
{
	double best = 0;
	size_t at = 0;
	double s1 = 0, q1 = 0, st = 0, qt = 0;
	for (size_t i = 0; i < n; i++) {
		st += x[i];
		qt += x[i] * x[i];
	}
	for (size_t k = 1; k < n; k++) {
		s1 += x[k - 1];
		q1 += x[k - 1] * x[k - 1];
		if (k < 5 || n - k < 5)
			continue;
		double n1 = (double)k, n2 = (double)(n - k);
		double m1 = s1 / n1, m2 = (st - s1) / n2;
		double v1 = q1 / n1 - m1 * m1, v2 = (qt - q1) / n2 - m2 * m2;
		v1 = v1 > 0 ? v1 : 0;
		v2 = v2 > 0 ? v2 : 0;
		double se = sqrt(v1 / n1 + v2 / n2);
		double d = m2 - m1;
		if (d < 0.1 * m1)
			continue;
		/* a split between two flat paces has no spread at all: as sure
		 * as a split gets */
		double t = se > 0 ? d / se : INFINITY;
		if (t > best) {
			best = t;
			at = k;
			*before = m1;
			*after = m2;
		}
	}
	return best >= 5 ? at : 0;
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
		size_t k = ddl_change_point(p->iter_s, p->niter, &before, &after);
		if (k) {
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
