/*
 * A progress line on standard error for the long runs of the tools (many
 * traces to read, a long simulation): only when stderr is a terminal, not
 * with -q, only once a run has taken a second, at most five updates a
 * second, and erased when done, so pipes and logs never see it.
 */
#ifndef DDL_PROGRESS_H
#define DDL_PROGRESS_H

#include <stdio.h>
#include <time.h>
#include <unistd.h>

struct ddl_progress {
	int on;
	int shown;
	double start, last;
	const char *what;
};

static inline double ddl_progress_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static inline void ddl_progress_init(struct ddl_progress *p, const char *what, int quiet)
{
	p->on = !quiet && isatty(2);
	p->shown = 0;
	p->start = p->last = p->on ? ddl_progress_now() : 0;
	p->what = what;
}

static inline void ddl_progress_update(struct ddl_progress *p, double done, double total,
                                       const char *unit)
{
	if (!p->on)
		return;
	double now = ddl_progress_now();
	if (now - p->start < 1.0 || now - p->last < 0.2)
		return;
	p->last = now;
	p->shown = 1;
	if (total > 0)
		fprintf(stderr, "\r%s: %.0f of %.0f %s (%.0f%%) ", p->what, done, total, unit,
		        100 * done / total);
	else
		fprintf(stderr, "\r%s: %.0f %s ", p->what, done, unit);
	fflush(stderr);
}

/* A new phase, K of N: shown at once (a long phase must not show the last one's name). */
static inline void ddl_progress_phase(struct ddl_progress *p, int k, int n, const char *name)
{
	if (!p->on)
		return;
	double now = ddl_progress_now();
	if (now - p->start < 1.0)
		return;
	p->last = now;
	p->shown = 1;
	fprintf(stderr, "\r\033[K%s: %s (%d of %d) ", p->what, name, k, n);
	fflush(stderr);
}

static inline void ddl_progress_done(struct ddl_progress *p)
{
	if (p->on && p->shown)
		fputs("\r\033[K", stderr);
	p->shown = 0;
}

#endif
