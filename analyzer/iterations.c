/*
 * Iterations, by the first method that finds any, per process:
 *  0. steps: the Python hook's optimizer steps. On the thread with the most
 *     steps, an iteration ends with each step of the optimizer that steps
 *     least often there (of several that step alike, the one whose first
 *     step ends last: the iteration's last step); optimizers that follow
 *     one another, never stepping side by side, count as one. The first
 *     iteration starts with the last wait for a batch (else forward or
 *     backward) before it. When --iteration-name is given, markers come
 *     first instead;
 *  1. markers: on each thread, a range whose name matches one of the
 *     iteration patterns (shell globs, case-insensitive; default
 *     "*step*,*iter*") and is not inside another matching range;
 *  2. socket: the rhythm of the process's network traffic. The bytes moved
 *     are binned over time; the autocorrelation of that series gives the
 *     period (the shortest lag whose correlation is close to the best); the
 *     quietest phase of the folded period (the compute phase, where a
 *     data-parallel job does not communicate) is where iterations start,
 *     and each boundary is then moved to the nearest quiet point of the
 *     real series, so jitter does not accumulate.
 *  2. collectives (before socket): the sequence of NCCL calls of the thread
 *     that issues most of them, each known by its operation, bytes and
 *     communicator, repeats with the training step; the shortest period
 *     that repeats (95% of calls equal one period later) is the step, and
 *     each step starts at the call of the period that follows the longest
 *     pause (the compute before a step's first collective); of MPI's
 *     calls, which block the thread that makes them until the collective
 *     is done on every member, at the end of the step before, the end of
 *     its last call (the same instant on every rank, where the program's
 *     own step timer reads).
 * The first warm-up iterations of each process are skipped, but never all.
 */
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
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

/* The open ranges of one thread: an iteration's range opens only while no
 * other is open on its thread, so there is one at most, at MATCH_DEPTH. */
struct ddl_open {
	uint16_t tid;                 /* the thread's index */
	int depth;                    /* open ranges on this thread */
	int matching;                 /* an iteration's range is open */
	int match_depth;              /* ... at this depth (below DDL_DEPTH_MAX) */
	int64_t start;                /* ... from then */
};

/* Appends an iteration to P; 0, or -1 without memory (P then incomplete). */
static int ddl_push_iter(struct ddl_proc *p, int64_t start, int64_t end, uint32_t tid)
{
	if (p->niter == p->iter_cap) { /* doubling: a thread's ranges may be many */
		size_t c = p->iter_cap ? 2 * p->iter_cap : 64;
		double *q = realloc(p->iter_s, c * sizeof *q);
		if (q)
			p->iter_s = q;
		struct ddl_iter *it = q ? realloc(p->iter, c * sizeof *it) : NULL;
		if (!it) {
			p->incomplete = 1;
			return -1;
		}
		p->iter = it;
		p->iter_cap = c;
	}
	p->iter_s[p->niter] = (double)(end - start) / 1e9;
	p->iter[p->niter++] = (struct ddl_iter){start, end, tid};
	return 0;
}

/* Adds the iterations of every thread's marker ranges (then see
 * ddl_keep_training_thread). */
static void ddl_proc_iterations(struct ddl_proc *p, const char *patterns)
{
	struct ddl_open *open = NULL;
	size_t nopen = 0, cap = 0;
	uint32_t *slot = NULL; /* by thread index: its entry of OPEN + 1, 0 none */
	for (size_t k = 0; k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		for (size_t j = 0; j < nopen; j++)
			slot[open[j].tid] = 0;
		nopen = 0; /* ranges left open when an image exec'd end with it */
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			if (e->kind != DDL_EV_RANGE_PUSH && e->kind != DDL_EV_RANGE_POP)
				continue;
			if (!slot && !(slot = calloc(UINT16_MAX + 1, sizeof *slot))) {
				p->incomplete = 1; /* no iterations from the markers */
				return;
			}
			if (!slot[e->tid]) {
				if (nopen == cap) {
					size_t c = cap ? 2 * cap : 64;
					struct ddl_open *q = realloc(open, c * sizeof *q);
					if (!q) {
						p->incomplete = 1; /* the image's later ranges left out */
						break;
					}
					open = q;
					cap = c;
				}
				open[nopen] = (struct ddl_open){.tid = e->tid};
				slot[e->tid] = (uint32_t)++nopen;
			}
			struct ddl_open *o = &open[slot[e->tid] - 1];
			int64_t now = ddl_trace_real_ns(t, e->start);
			if (e->kind == DDL_EV_RANGE_PUSH) {
				if (o->depth >= DDL_DEPTH_MAX) {
					o->depth++;
					continue;
				}
				const char *name = e->result > 0 && (size_t)e->result < t->nnames
				                       ? t->names[e->result] : NULL;
				if (!o->matching && ddl_name_matches(name, patterns)) {
					o->matching = 1;
					o->match_depth = o->depth;
					o->start = now;
				}
				o->depth++;
			} else if (o->depth > 0) {
				o->depth--;
				if (o->matching && o->depth == o->match_depth) {
					o->matching = 0;
					ddl_push_iter(p, o->start, now,
					              e->tid < t->nthreads ? t->threads[e->tid].tid : 0);
				}
			}
		}
	}
	free(open);
	free(slot);
}

static int ddl_cmp_i64(const void *a, const void *b);

/* Iterations from the Python hook's optimizer steps (above); 1 when found. */
static int ddl_proc_step_iterations(struct ddl_proc *p)
{
	struct {
		uint32_t tid;
		int64_t opt;
		size_t n;
		int64_t first_start, first_end, last_end;
		int chain;
	} c[64];
	size_t nc = 0;
	for (size_t k = 0; k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			if (e->kind != DDL_EV_PY_STEP)
				continue;
			uint32_t tid = e->tid < t->nthreads ? t->threads[e->tid].tid : 0;
			int64_t a = ddl_trace_real_ns(t, e->start), end = a + ddl_trace_dur_ns(t, e);
			size_t j = 0;
			while (j < nc && !(c[j].tid == tid && c[j].opt == e->fd))
				j++;
			if (j == nc) {
				if (nc == 64)
					continue;
				c[nc++] = (__typeof__(c[0])){tid, e->fd, 0, a, end, end, -1};
			}
			c[j].n++;
			if (end > c[j].last_end)
				c[j].last_end = end;
		}
	}
	if (!nc)
		return 0;
	/* the training thread: the one with the most steps */
	uint32_t tid = 0;
	size_t most = 0;
	for (size_t j = 0; j < nc; j++) {
		size_t sum = 0;
		for (size_t q = 0; q < nc; q++)
			sum += c[q].tid == c[j].tid ? c[q].n : 0;
		if (sum > most) {
			most = sum;
			tid = c[j].tid;
		}
	}
	/* Optimizers that follow one another (a new one made each epoch) are one
	 * chain; those that step side by side (a GAN's two) are chains of their
	 * own. The iterations are the steps of the chain with the fewest, of
	 * several alike the one that steps last in the iteration; of the chains
	 * that span half the steps' time at least (not an optimizer used a few
	 * times, for a warm-up or a probe). */
	size_t steps[64] = {0};
	int64_t first_end[64], chain_start[64], chain_end[64];
	int nchains = 0;
	for (int pass = 0; pass < (int)nc; pass++) {
		size_t j = SIZE_MAX; /* the earliest optimizer not in a chain yet */
		for (size_t q = 0; q < nc; q++)
			if (c[q].tid == tid && c[q].chain < 0 &&
			    (j == SIZE_MAX || c[q].first_start < c[j].first_start))
				j = q;
		if (j == SIZE_MAX)
			break;
		int ch = -1;
		for (int h = 0; h < nchains && ch < 0; h++)
			if (chain_end[h] <= c[j].first_start)
				ch = h;
		if (ch < 0) {
			ch = nchains++;
			steps[ch] = 0;
			first_end[ch] = c[j].first_end;
			chain_start[ch] = c[j].first_start;
		}
		c[j].chain = ch;
		steps[ch] += c[j].n;
		chain_end[ch] = c[j].last_end;
	}
	int64_t from = INT64_MAX, to = INT64_MIN;
	for (int h = 0; h < nchains; h++) {
		from = chain_start[h] < from ? chain_start[h] : from;
		to = chain_end[h] > to ? chain_end[h] : to;
	}
	int best = -1;
	for (int all = 0; all < 2 && best < 0; all++) /* then, none spanning half, any */
		for (int h = 0; h < nchains; h++)
			if ((all || 2 * (chain_end[h] - chain_start[h]) >= to - from) &&
			    (best < 0 || steps[h] < steps[best] ||
			     (steps[h] == steps[best] && first_end[h] > first_end[best])))
				best = h;
	int64_t *ends = malloc(steps[best] * sizeof *ends);
	if (!ends) {
		p->incomplete = 1; /* not found from the steps */
		return 0;
	}
	size_t n = 0;
	for (size_t k = 0; k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		for (size_t i = 0; i < t->nev && n < steps[best]; i++) {
			const struct ddl_event *e = &t->ev[i];
			if (e->kind != DDL_EV_PY_STEP ||
			    (e->tid < t->nthreads ? t->threads[e->tid].tid : 0) != tid)
				continue;
			size_t j = 0;
			while (j < nc && !(c[j].tid == tid && c[j].opt == e->fd))
				j++;
			if (j < nc && c[j].chain == best)
				ends[n++] = ddl_trace_real_ns(t, e->start) + ddl_trace_dur_ns(t, e);
		}
	}
	qsort(ends, n, sizeof *ends, ddl_cmp_i64);
	/* where the first iteration began: its last batch wait, else its first
	 * forward or backward, before the first end */
	int64_t wait = INT64_MIN, other = INT64_MAX;
	for (size_t k = 0; n && k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			if (e->kind != DDL_EV_PY_PHASE ||
			    (e->tid < t->nthreads ? t->threads[e->tid].tid : 0) != tid)
				continue;
			int64_t a = ddl_trace_real_ns(t, e->start);
			if (a >= ends[0])
				continue;
			if (e->fd == DDL_PHASE_DATA_WAIT && a > wait)
				wait = a;
			else if ((e->fd == DDL_PHASE_FORWARD || e->fd == DDL_PHASE_BACKWARD) && a < other)
				other = a;
		}
	}
	int64_t first_start = wait != INT64_MIN ? wait : other;
	if (n && first_start < ends[0])
		ddl_push_iter(p, first_start, ends[0], tid);
	for (size_t i = 1; i < n; i++)
		ddl_push_iter(p, ends[i - 1], ends[i], tid);
	free(ends);
	return p->niter > 0;
}

#define DDL_BINS_MAX 20000

/* Bytes moved per time bin over the process's active span; NULL if idle,
 * or without memory (*NOMEM set). */
static double *ddl_traffic_series(const struct ddl_proc *p, size_t *nbins, int64_t *t0,
                                  int64_t *bin_ns, int *nomem)
{
	/* Each send or receive, at its midpoint, with its bytes. */
	struct {
		int64_t at;
		double bytes;
	} *pt = NULL;
	size_t npt = 0, cap = 0;
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	for (size_t k = 0; k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			int c = ddl_event_class(e->kind);
			if ((c != DDL_CLASS_TX && c != DDL_CLASS_RX) || e->result <= 0)
				continue;
			if (npt == cap) {
				cap = cap ? cap * 2 : 4096;
				void *q = realloc(pt, cap * sizeof *pt);
				if (!q) {
					free(pt);
					*nomem = 1;
					return NULL;
				}
				pt = q;
			}
			int64_t m = ddl_trace_real_ns(t, e->start) + ddl_trace_dur_ns(t, e) / 2;
			pt[npt].at = m;
			pt[npt++].bytes = (double)e->result;
			lo = m < lo ? m : lo;
			hi = m > hi ? m : hi;
		}
	}
	/* 2 ms bins: single calls are points, and only at this scale do they
	 * add up to the phases of an iteration. */
	int64_t w = lo < hi ? (hi - lo) / DDL_BINS_MAX + 1 : 1;
	if (w < 2000000)
		w = 2000000;
	size_t n = lo < hi ? (size_t)((hi - lo) / w) + 1 : 0;
	double *x = n >= 32 ? calloc(n, sizeof *x) : NULL;
	if (n >= 32 && !x)
		*nomem = 1;
	for (size_t i = 0; x && i < npt; i++)
		x[(size_t)((pt[i].at - lo) / w)] += pt[i].bytes;
	free(pt);
	if (!x)
		return NULL;
	for (size_t i = 0; i < n; i++)
		x[i] = sqrt(x[i]); /* a few huge transfers must not drown the rhythm */
	*nbins = n;
	*t0 = lo;
	*bin_ns = w;
	return x;
}

/* The period in bins, or 0 when the traffic has no clear rhythm or there
 * is no memory (*NOMEM set). */
static size_t ddl_period(const double *x, size_t n, int *nomem)
{
	double m = 0, var = 0;
	for (size_t i = 0; i < n; i++)
		m += x[i];
	m /= (double)n;
	for (size_t i = 0; i < n; i++)
		var += (x[i] - m) * (x[i] - m);
	if (var <= 0)
		return 0;
	size_t lmax = n / 3; /* three periods at least */
	if (lmax < 3)
		return 0;
	double *r = calloc(lmax + 1, sizeof *r);
	if (!r) {
		*nomem = 1;
		return 0;
	}
	double best = 0;
	for (size_t l = 2; l <= lmax; l++) {
		double s = 0;
		for (size_t i = 0; i + l < n; i++)
			s += (x[i] - m) * (x[i + l] - m);
		r[l] = s / var * (double)n / (double)(n - l);
		if (r[l] > best)
			best = r[l];
	}
	/* Bursts make r high at small lags only because a burst lasts: skip
	 * that first lobe (up to where r first turns negative), then take the
	 * best peak beyond it, preferring the shortest lag near it over its
	 * multiples. */
	size_t l0 = 2;
	while (l0 < lmax && r[l0] > 0)
		l0++;
	best = 0;
	for (size_t l = l0; l <= lmax; l++)
		if (r[l] > best)
			best = r[l];
	size_t period = 0;
	if (best >= 0.15)
		for (size_t l = l0 + 1; l < lmax && !period; l++)
			if (r[l] >= 0.85 * best && r[l] >= r[l - 1] && r[l] >= r[l + 1])
				period = l;
	free(r);
	return period;
}

/* Sum of x over [a, b), clipped to the series. */
static double ddl_sum(const double *x, size_t n, size_t a, size_t b)
{
	double s = 0;
	for (size_t k = a; k < b && k < n; k++)
		s += x[k];
	return s;
}

/* Where in one period (folded over [s, e)) the activity falls most; 0
 * without memory (*NOMEM set). */
static size_t ddl_phase(const double *x, size_t s, size_t e, size_t per, size_t sw, int *nomem)
{
	double *f = calloc(per, sizeof *f);
	if (!f) {
		*nomem = 1;
		return 0;
	}
	for (size_t i = s; i < e; i++)
		f[(i - s) % per] += x[i];
	size_t phase = 0;
	double drop = -1;
	for (size_t j = 0; j < per; j++) {
		double before = 0, after = 0;
		for (size_t k = 1; k <= sw; k++) {
			before += f[(j + per - k % per) % per];
			after += f[(j + k - 1) % per];
		}
		if (before - after > drop) {
			drop = before - after;
			phase = j;
		}
	}
	free(f);
	return phase;
}

/*
 * Iterations from the rhythm of socket traffic; returns how many. The
 * series is cut into active segments at quiet stretches of a second or
 * more (set-up, evaluation, checkpoints): the period comes from the longest
 * segment, and iterations are only found inside segments.
 */
static size_t ddl_proc_socket_iterations(struct ddl_proc *p)
{
	size_t n;
	int64_t t0, w;
	int nomem = 0;
	double *x = ddl_traffic_series(p, &n, &t0, &w, &nomem);
	if (!x) {
		p->incomplete |= nomem;
		return 0;
	}
	size_t quiet = (size_t)(1000000000 / w);
	if (quiet < 8)
		quiet = 8;
	size_t seg[64][2], nseg = 0, s = SIZE_MAX, last = 0;
	for (size_t i = 0; i <= n && nseg < 64; i++) {
		if (i < n && x[i] > 0) {
			if (s == SIZE_MAX)
				s = i;
			last = i;
		} else if (s != SIZE_MAX && (i == n || i - last > quiet)) {
			seg[nseg][0] = s;
			seg[nseg++][1] = last + 1;
			s = SIZE_MAX;
		}
	}
	size_t longest = 0;
	for (size_t k = 1; k < nseg; k++)
		if (seg[k][1] - seg[k][0] > seg[longest][1] - seg[longest][0])
			longest = k;
	size_t per = nseg ? ddl_period(x + seg[longest][0], seg[longest][1] - seg[longest][0], &nomem)
	                  : 0;
	size_t cnt = 0;
	for (size_t k = 0; per && k < nseg; k++) {
		size_t a0 = seg[k][0], e = seg[k][1];
		if (e - a0 < 2 * per)
			continue;
		size_t sw = per / 16 + 1, reach = per / 5;
		/* Each boundary one period after the last one found, moved to the
		 * sharpest fall of the series nearby, so an estimate a little off
		 * does not drift; an iteration must hold some traffic. */
		size_t prev = SIZE_MAX;
		for (size_t b = a0 + ddl_phase(x, a0, e, per, sw, &nomem); b < e;
		     b = (prev == SIZE_MAX ? b + per : prev + per)) {
			size_t lo = b > a0 + reach ? b - reach : a0, hi = b + reach < e ? b + reach : e - 1;
			size_t at = b;
			double bestd = -1;
			for (size_t i = lo; i <= hi; i++) {
				double d = ddl_sum(x, n, i >= sw ? i - sw : 0, i) - ddl_sum(x, n, i, i + sw);
				if (d > bestd) {
					bestd = d;
					at = i;
				}
			}
			if (prev != SIZE_MAX && at > prev && ddl_sum(x, n, prev, at) > 0) {
				ddl_push_iter(p, t0 + (int64_t)prev * w, t0 + (int64_t)at * w, 0);
				cnt++;
			}
			prev = at;
		}
	}
	free(x);
	p->incomplete |= nomem;
	return cnt;
}

static int ddl_cmp_iter(const void *a, const void *b)
{
	const struct ddl_iter *x = a, *y = b;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/*
 * Several threads may name steps (a prefetcher's "prefetch_step" beside the
 * trainer's "train_step"): the training thread is the one whose iterations
 * cover the most time, and only its iterations count. Then in time order.
 */
static void ddl_keep_training_thread(struct ddl_proc *p)
{
	uint32_t tids[64], best = p->niter ? p->iter[0].tid : 0;
	double sums[64];
	size_t nt = 0;
	for (size_t i = 0; i < p->niter; i++) {
		size_t k = 0;
		while (k < nt && tids[k] != p->iter[i].tid)
			k++;
		if (k == nt && nt < 64) {
			tids[nt] = p->iter[i].tid;
			sums[nt++] = 0;
		}
		if (k < nt)
			sums[k] += p->iter_s[i];
	}
	double best_s = -1;
	for (size_t k = 0; k < nt; k++)
		if (sums[k] > best_s) {
			best_s = sums[k];
			best = tids[k];
		}
	size_t m = 0;
	for (size_t i = 0; i < p->niter; i++)
		if (p->iter[i].tid == best)
			p->iter[m++] = p->iter[i];
	p->niter = m;
	if (m)
		qsort(p->iter, m, sizeof *p->iter, ddl_cmp_iter);
	for (size_t i = 0; i < m; i++)
		p->iter_s[i] = (double)(p->iter[i].end_ns - p->iter[i].start_ns) / 1e9;
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

static int ddl_cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

struct ddl_collcall {
	int64_t a, b;
	uint64_t sig;
	int mpi; /* one of MPI's calls */
};

/* The thread whose collectives E's are: its own for NCCL's and MPI's; for
 * gloo's, all of the process's as one (ProcessGroupGloo runs them on its
 * threads in turn), or ~0 for other events. */
#define DDL_GLOO_THREADS 0xFFFFFFFFu
static uint32_t ddl_coll_thread(const struct ddl_trace *t, const struct ddl_event *e)
{
	int cls = ddl_event_class(e->kind);
	if (cls == DDL_CLASS_HCOLL && !ddl_kind_is_mpi(e->kind))
		return DDL_GLOO_THREADS;
	if (cls != DDL_CLASS_COLL && cls != DDL_CLASS_HCOLL)
		return 0;
	return e->tid < t->nthreads ? t->threads[e->tid].tid : 0;
}

static int ddl_collcall_cmp(const void *a, const void *b)
{
	const struct ddl_collcall *x = a, *y = b;
	return x->a < y->a ? -1 : x->a > y->a;
}

/* The shortest period after which 95% of the calls V[1..N) repeat (all of
 * them, STRICT), or 0. A period is given up as soon as more than 5% of its
 * pairs differ. */
static size_t ddl_sig_period(const struct ddl_collcall *v, size_t n, int strict)
{
	for (size_t P = 1; P <= n / 2 && P <= 8192; P++) {
		size_t pairs = n - P - 1, allowed = strict ? 0 : pairs / 20, differ = 0;
		for (size_t i = 1; i + P < n && differ <= allowed; i++)
			differ += v[i].sig != v[i + P].sig;
		if (differ <= allowed)
			return P;
	}
	return 0;
}

/* The same, past the set-up's calls (parameters broadcast, a rendezvous'
 * allgather): from the first call, else, in a short run (in a long one
 * they are within the 5%), from the 1st, 2nd, 4th ... 64th (a quarter of
 * the calls at most); else from any other of the first 64, where the
 * rest repeats exactly, four times at least (a program that exchanges
 * data before a short loop, as MPI programs do point to point: a set-up
 * longer than the loop); where the loop is taken to start in *FROM. */
static size_t ddl_loop_period(const struct ddl_collcall *v, size_t n, size_t *from)
{
	for (size_t f = 0; f <= n / 4 && f <= 64 && (!f || n <= 4096); f = f ? 2 * f : 1) {
		size_t P = ddl_sig_period(v + f, n - f, 0);
		if (P) {
			*from = f;
			return P;
		}
	}
	for (size_t f = 3; f + 8 <= n && f <= 64 && n <= 4096; f++) {
		if (!(f & (f - 1)) && f <= n / 4)
			continue; /* tried above */
		size_t P = ddl_sig_period(v + f, n - f, 1);
		if (P && (n - f) / P >= 4) {
			*from = f;
			return P;
		}
	}
	*from = 0;
	return 0;
}

/*
 * Whether the pause marks (MARK, per call) tell the parts of a period of
 * MULT calls apart, each PERIOD long: some call of a later part is marked
 * in most periods where the same call of the first part is not, or the
 * other way round (a step's first micro-batch follows its compute, the
 * others do not). Marks that only jitter, at calls the parts share, do
 * not, nor marks on most calls.
 * Without MARK (no memory): no.
 */
static int ddl_marks_split(const unsigned char *mark, size_t n, size_t from, size_t mult, size_t period)
{
	if (!mark)
		return 0;
	/* marks are the exception, at a step's start: where most calls follow
	 * a long pause, the threshold tells nothing apart */
	size_t phases = 0;
	for (size_t j = 0; j < mult; j++) {
		size_t m = 0, k = 0;
		for (size_t i = from + j; i < n; i += mult, k++)
			m += mark[i];
		phases += 2 * m > k;
	}
	if (2 * phases > mult)
		return 0;
	for (size_t j = period; j < mult; j++) {
		size_t m = 0, m0 = 0, k = 0;
		for (size_t i = from + j; i < n; i += mult, k++) {
			m += mark[i];
			m0 += mark[i - j + j % period];
		}
		if (k && (2 * m > k) != (2 * m0 > k))
			return 1;
	}
	return 0;
}

/* Iterations from the repeating sequence of collectives; 1 when found. */
static int ddl_proc_coll_iterations(struct ddl_proc *p)
{
	/* the thread with most collectives (gloo's threads as one) */
	uint32_t best = 0;
	size_t best_n = 0;
	uint32_t tids[64];
	size_t cnt[64], nt = 0;
	for (size_t k = 0; k < p->ntr; k++)
		for (size_t i = 0; i < p->tr[k]->nev; i++) {
			const struct ddl_event *e = &p->tr[k]->ev[i];
			int cls = ddl_event_class(e->kind);
			if (cls != DDL_CLASS_COLL && cls != DDL_CLASS_HCOLL)
				continue;
			uint32_t tid = ddl_coll_thread(p->tr[k], e);
			size_t j = 0;
			while (j < nt && tids[j] != tid)
				j++;
			if (j == nt && nt < 64) {
				tids[nt] = tid;
				cnt[nt++] = 0;
			}
			if (j < nt && ++cnt[j] > best_n) {
				best_n = cnt[j];
				best = tid;
			}
		}
	if (best_n < 4)
		return 0;
	struct ddl_collcall *v = malloc(best_n * sizeof *v);
	if (!v) {
		p->incomplete = 1; /* not found from the collectives */
		return 0;
	}
	size_t n = 0;
	for (size_t k = 0; k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		for (size_t i = 0; i < t->nev && n < best_n; i++) {
			const struct ddl_event *e = &t->ev[i];
			int cls = ddl_event_class(e->kind);
			if ((cls != DDL_CLASS_COLL && cls != DDL_CLASS_HCOLL) || ddl_coll_thread(t, e) != best)
				continue;
			const struct ddl_args *a = ddl_event_args(t, i);
			const struct ddl_comm_info *ci = a ? ddl_trace_comm(t, a->comm) : NULL;
			uint64_t sig = e->kind * 0x9E3779B97F4A7C15ull;
			sig ^= (a ? a->bytes : 0) + 0x632BE59BD9B4E019ull + (sig << 6);
			sig ^= (ci ? ci->key : 0) + (sig >> 3);
			int64_t at = ddl_trace_real_ns(t, e->start);
			v[n++] = (struct ddl_collcall){at, at + ddl_trace_dur_ns(t, e), sig, ddl_kind_is_mpi(e->kind)};
		}
	}
	qsort(v, n, sizeof *v, ddl_collcall_cmp); /* gloo's threads' in turn */
	/* The period of the calls as they are: buckets of different sizes
	 * show it. A step's first call also follows a long pause (its
	 * compute): with calls after a pause of at least half the
	 * 95th-percentile pause marked, the period found is the step's when
	 * all calls look alike (equal buckets), or when it is a multiple of
	 * the first seen four times (a step of several micro-batches alike:
	 * pipeline stages, gradient accumulation). */
	size_t from, period = ddl_loop_period(v, n, &from);
	int64_t *gaps = malloc(n * sizeof *gaps);
	if (!gaps)
		p->incomplete = 1; /* the period of the calls as they are */
	if (gaps) {
		for (size_t i = 1; i < n; i++)
			gaps[i - 1] = v[i].a - v[i - 1].b;
		qsort(gaps, n - 1, sizeof *gaps, ddl_cmp_i64);
		int64_t p95 = gaps[(n - 1) * 95 / 100];
		free(gaps);
		unsigned char *mark = calloc(n, 1);
		if (!mark)
			p->incomplete = 1;
		for (size_t i = 1; i < n; i++)
			if (p95 > 0 && v[i].a - v[i - 1].b >= p95 / 2) {
				v[i].sig ^= 0x5bd1e9955bd1e995ull;
				if (mark)
					mark[i] = 1;
			}
		/* the first call has no pause before it: like its successors a period on */
		size_t from2, marked = ddl_loop_period(v, n, &from2);
		/* a multiple only where it repeats four times at least (in a short
		 * run, marks that jitter match at a long lag by chance) and where
		 * the marks tell its parts apart */
		if (marked && (!period || (marked > period && marked % period == 0 &&
		                           (n - from2) / marked >= 4 &&
		                           ddl_marks_split(mark, n, from2, marked, period)))) {
			period = marked;
			from = from2;
		}
		free(mark);
	}
	const struct ddl_collcall *w = v + from; /* the loop's calls */
	size_t nw = n - from;
	if (!period || nw / period < 2) {
		free(v);
		return 0;
	}
	/* the phase after the longest mean pause starts a step */
	size_t phase = 0;
	double best_gap = -1;
	for (size_t j = 0; j < period; j++) {
		double gap = 0;
		size_t m = 0;
		for (size_t i = j; i < nw; i += period)
			if (i > 0) {
				gap += (double)(w[i].a - w[i - 1].b);
				m++;
			}
		if (m && gap / (double)m > best_gap) {
			best_gap = gap / (double)m;
			phase = j;
		}
	}
	if (w[0].mpi) { /* from the end of a step's calls to the end of the next one's */
		/* past the set-up's last calls, which the 5% let in: those that
		 * do not repeat a period on */
		size_t skip = 0;
		while (skip + 1 + period < nw && w[skip + 1].sig != w[skip + 1 + period].sig)
			skip++;
		for (size_t i = phase ? phase : period; i + period <= nw; i += period)
			if (i > skip)
				ddl_push_iter(p, w[i - 1].b, w[i + period - 1].b, best);
	} else {
		for (size_t i = phase; i + period < nw; i += period) /* gloo's: the main thread's loop */
			ddl_push_iter(p, w[i].a, w[i + period].a, best == DDL_GLOO_THREADS ? 0 : best);
	}
	free(v);
	return p->niter > 0;
}

void ddl_report_iterations(struct ddl_report *r, const char *patterns, int warmup)
{
	size_t total = 0;
	r->iterations = -1;
	int by_socket = 0, by_coll = 0, ranked = 0, any_steps = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		ranked |= r->procs[i].rank >= 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		struct ddl_proc *p = &r->procs[i];
		if ((ranked && p->rank < 0) || p->role == DDL_ROLE_WORKER || p->role == DDL_ROLE_CHILD ||
		    p->role == DDL_ROLE_LAUNCHER) {
			/* a launcher among ranks (mpirun, a job's own parent), a loader's
			 * worker, a rank's child: not a rank's steps */
			p->iteration_method = "none";
			continue;
		}
		int by_steps = 0;
		if (!r->iteration_names_given && ddl_proc_step_iterations(p)) {
			p->iteration_method = "steps";
			by_steps = 1;
		} else {
			ddl_proc_iterations(p, patterns);
			ddl_keep_training_thread(p);
			p->iteration_method = "markers";
		}
		if (!p->niter && !by_steps && r->iteration_names_given && ddl_proc_step_iterations(p))
			p->iteration_method = "steps";
		any_steps |= p->niter && !strcmp(p->iteration_method, "steps");
		if (!p->niter && ddl_proc_coll_iterations(p)) {
			p->iteration_method = "collectives";
			by_coll = 1;
		}
		if (!p->niter && ddl_proc_socket_iterations(p)) {
			ddl_keep_training_thread(p); /* in time order */
			p->iteration_method = "socket";
			by_socket = 1;
		}
		if (!p->niter) {
			p->iteration_method = "none";
			continue;
		}
		size_t skip = (size_t)warmup < p->niter ? (size_t)warmup : p->niter - 1;
		memmove(p->iter_s, p->iter_s + skip, (p->niter - skip) * sizeof *p->iter_s);
		memmove(p->iter, p->iter + skip, (p->niter - skip) * sizeof *p->iter);
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
	r->iteration_method = by_socket ? "socket" : by_coll ? "collectives" : any_steps ? "steps"
	                                                                                 : "markers";
	double *all = malloc(total * sizeof *all);
	if (!all) {
		r->incomplete = 1; /* no job-wide mean or quantiles */
		return;
	}
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
