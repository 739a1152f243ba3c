/*
 * The slow iterations' change point (analyzer/slowiters.c) on series whose
 * answer is known: a change of pace with a burst of load just before it,
 * a spike, a noisy flat run, a speed-up, and a long series; and on random
 * series, the split it finds against the plainest model, every split's
 * absolute deviation from its sides' medians summed by sorting.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "test.h"

/* Runs the analysis on X[0..N) as one rank's iterations, after 5 of warm-up. */
static void ddl_slow_run(struct ddl_proc *p, double *x, size_t n)
{
	struct ddl_report r;
	memset(p, 0, sizeof *p);
	memset(&r, 0, sizeof r);
	p->niter = n;
	p->iter_s = x;
	p->warmup_skipped = 5;
	r.procs = p;
	r.nprocs = 1;
	ddl_report_slow_iterations(&r);
}

static int ddl_has_slow(const struct ddl_proc *p, size_t it)
{
	for (size_t i = 0; i < p->nslow; i++)
		if (p->slow[i].iteration == it)
			return 1;
	return 0;
}

static int ddl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median of X[A..B) and the absolute deviation from it, by sorting. */
static double ddl_side(const double *x, size_t a, size_t b, double *med)
{
	double *t = malloc((b - a) * sizeof *t), c = 0;
	memcpy(t, x + a, (b - a) * sizeof *t);
	qsort(t, b - a, sizeof *t, ddl_cmp);
	size_t n = b - a;
	*med = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
	for (size_t i = 0; i < n; i++)
		c += fabs(t[i] - *med);
	free(t);
	return c;
}

static double ddl_noise(unsigned *seed)
{
	return (double)rand_r(seed) / RAND_MAX - 0.5;
}

int test_slowiters_change_point(void)
{
	unsigned seed = 7;
	double x[25];
	struct ddl_proc p;
	/* steps 18 on twice as long; iterations 14, 16, 17 slowed by a neighbour */
	for (int i = 0; i < 25; i++)
		x[i] = (i + 5 >= 18 ? 2 : 1) + 0.02 * ddl_noise(&seed);
	x[9] = 1.45, x[11] = 1.4, x[12] = 1.3;
	ddl_slow_run(&p, x, 25);
	CHECK(p.shift_at == 18 && p.shift_after_s > 1.8 * p.shift_before_s / 1.1,
	      "burst before the change: shift at %ld (%.2f, %.2f)", p.shift_at, p.shift_before_s, p.shift_after_s);
	CHECK(ddl_has_slow(&p, 14) && ddl_has_slow(&p, 16) && ddl_has_slow(&p, 17) && p.nslow == 3,
	      "burst before the change: %zu slow", p.nslow);
	free(p.slow);
	/* one step three times as long */
	for (int i = 0; i < 25; i++)
		x[i] = 1 + 0.02 * ddl_noise(&seed);
	x[7] = 3;
	ddl_slow_run(&p, x, 25);
	CHECK(p.shift_at == -1 && p.nslow == 1 && ddl_has_slow(&p, 12), "spike: shift %ld, %zu slow", p.shift_at,
	      p.nslow);
	free(p.slow);
	/* noise of 30% and no change */
	for (int i = 0; i < 25; i++)
		x[i] = 1 + 0.3 * ddl_noise(&seed);
	ddl_slow_run(&p, x, 25);
	CHECK(p.shift_at == -1 && p.nslow == 0, "noisy flat: shift %ld, %zu slow", p.shift_at, p.nslow);
	free(p.slow);
	/* a job that speeds up at 17: no shift, and its first steps not slow */
	for (int i = 0; i < 25; i++)
		x[i] = (i < 12 ? 2 : 1) + 0.02 * ddl_noise(&seed);
	ddl_slow_run(&p, x, 25);
	CHECK(p.shift_at == -1 && p.nslow == 0, "speed-up: shift %ld, %zu slow", p.shift_at, p.nslow);
	free(p.slow);
	/* 30% slower from iteration 20, with a checkpoint seven times as long
	 * at 8: the change found, its means not moved by the checkpoint */
	double y30[30];
	for (int i = 0; i < 30; i++)
		y30[i] = (i < 15 ? 1 : 1.3) + 0.01 * ddl_noise(&seed);
	y30[3] = 7;
	ddl_slow_run(&p, y30, 30);
	CHECK(p.shift_at == 20 && fabs(p.shift_before_s - 1) < 0.02 && fabs(p.shift_after_s - 1.3) < 0.02 &&
	      ddl_has_slow(&p, 8), "checkpoint then slower: shift at %ld (%.3f, %.3f), %zu slow", p.shift_at,
	      p.shift_before_s, p.shift_after_s, p.nslow);
	free(p.slow);
	/* 15% faster from iteration 20, one step four times as long near the end: no shift */
	for (int i = 0; i < 30; i++)
		y30[i] = (i < 15 ? 1 : 0.85) + 0.01 * ddl_noise(&seed);
	y30[27] = 4;
	ddl_slow_run(&p, y30, 30);
	CHECK(p.shift_at == -1 && ddl_has_slow(&p, 32), "faster, one slow step: shift at %ld (%.3f, %.3f), %zu slow",
	      p.shift_at, p.shift_before_s, p.shift_after_s, p.nslow);
	free(p.slow);
	/* 200,000 iterations, 20% slower from 150,005 */
	size_t n = 200000;
	double *y = malloc(n * sizeof *y);
	CHECK(y, "no memory");
	for (size_t i = 0; i < n; i++)
		y[i] = (i >= 150000 ? 1.2 : 1) + 0.05 * ddl_noise(&seed);
	ddl_slow_run(&p, y, n);
	CHECK(p.shift_at == 150005 && fabs(p.shift_after_s - 1.2) < 0.01, "long: shift at %ld", p.shift_at);
	free(p.slow);
	free(y);
	/* random series of two paces and outliers: the split is the model's */
	int found = 0;
	for (int round = 0; round < 300; round++) {
		size_t m = 10 + (size_t)(rand_r(&seed) % 50), cut = 5 + (size_t)(rand_r(&seed) % (m - 9));
		double z[60], best = INFINITY;
		for (size_t i = 0; i < m; i++)
			z[i] = (i >= cut ? 1.5 : 1) + 0.1 * ddl_noise(&seed) + (rand_r(&seed) % 8 ? 0 : 1.5);
		long want = -1;
		for (size_t k = 5; k + 5 <= m; k++) {
			double m1, m2, c = ddl_side(z, 0, k, &m1) + ddl_side(z, k, m, &m2);
			if ((m2 >= 1.1 * m1 || m1 >= 1.1 * m2) && c < best - 1e-12) {
				best = c;
				want = m2 > m1 ? (long)k + 5 : -2;
			}
		}
		ddl_slow_run(&p, z, m);
		/* the model's split, or one as good to rounding (two splits can
		 * leave the same deviation); the analysis may judge it unsure */
		double m1, m2, got = 0;
		if (p.shift_at >= 0) {
			size_t k = (size_t)p.shift_at - 5;
			got = ddl_side(z, 0, k, &m1) + ddl_side(z, k, m, &m2);
		}
		CHECK(p.shift_at == -1 || (want >= 0 && got <= best + 1e-9 && m2 >= 1.1 * m1),
		      "round %d (%zu iterations, cut at %zu): shift at %ld, the model's %ld", round, m, cut, p.shift_at,
		      want);
		found += p.shift_at >= 0;
		free(p.slow);
	}
	fprintf(stderr, "    random series: %d of 300 with a change of pace, each at the model's split\n", found);
	CHECK(found > 150, "a change of pace in only %d of 300 random series with one", found);
	return DDL_PASS;
}
