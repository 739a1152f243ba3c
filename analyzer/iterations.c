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
 *  2. collectives: the sequence of NCCL calls of the thread that issues
 *     most of them (or of gloo's collectives, all threads in turn), each
 *     known by its operation, bytes and communicator, repeats with the
 *     training step; the shortest period that repeats (95% of calls equal
 *     one period later) is the step, and each step starts at the call of
 *     the period that follows the longest pause (the compute before a
 *     step's first collective); of MPI's calls, which block the thread
 *     that makes them until the collective is done on every member, at
 *     the end of the step before, the end of its last call (the same
 *     instant on every rank, where the program's own step timer reads);
 *  3. socket: the sequence of socket calls of the thread that moves the
 *     most bytes, laid out on its bytes (TCP splits a message as it likes,
 *     so the calls themselves do not repeat; the bytes do): the period of
 *     the thread's time off the network over its bytes is the step, and
 *     each step starts at the same place of the period (below).
 *  4. waits: the last resort, the sequence of a thread's long waits
 *     (condition variables, poll, select, epoll), read as the collectives'.
 * The first and last partial iterations are never counted (a step needs
 * both ends). Then the first warm-up iterations of each process are
 * skipped, but never all; how many were found before is kept. The ranks
 * of one job share their period: one whose iterations disagree with the
 * others' (or that found none) is named, and the job then has no count.
 */
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autocorr.h"
#include "keep.h"
#include "report.h"

/* The class of event kind KIND (ddl_event_class), from a table made once:
 * these passes look at every event of every process. */
static int ddl_cls(unsigned kind)
{
	static unsigned char cls[256];
	static int made;
	if (!made) {
		for (unsigned k = 0; k < 256; k++)
			cls[k] = (unsigned char)ddl_event_class(k);
		made = 1;
	}
	return cls[kind & 255];
}

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
		for (size_t x = 0, i; ddl_trace_next_rare(t, &x, &i);) {
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

static int ddl_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

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
		for (size_t x = 0, i; ddl_trace_next_rare(t, &x, &i);) {
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
		for (size_t x = 0, i; n < steps[best] && ddl_trace_next_rare(t, &x, &i);) {
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
	p->steps_run = (long)n;
	/* where the first iteration began: its last batch wait, else its first
	 * forward or backward, before the first end */
	int64_t wait = INT64_MIN, other = INT64_MAX;
	for (size_t k = 0; n && k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		for (size_t x = 0, i; ddl_trace_next_rare(t, &x, &i);) {
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

/*
 * Iterations from the sequence of socket calls (method "socket").
 *
 * The calls themselves do not repeat: TCP hands one logical message to
 * the program in as many pieces as it likes (partial reads, the socket
 * buffers' sizes), so a step's calls differ in number and size from one
 * step to the next, and so does their order when a program sends and
 * receives at once. What repeats exactly is the bytes: a step moves the
 * same bytes, to and from the same peers, every time. So the calls are
 * laid out on the thread's own traffic, by the bytes its calls moved
 * before each (both ways), and what is read at each call is the thread's
 * time outside the network since its previous data call: outside sends,
 * receives, connects and waits on sockets, which is where a step's
 * compute falls, while the waits for a peer (which jitter) do not count.
 * That series, over the bytes, has the period of the step, in bytes; the
 * first lag whose autocorrelation is high gives it (the first peak within
 * a tenth of the highest, itself 0.5 at least; FALCON's 0.95 needs calls
 * that repeat exactly), and the distance from one step's long pause to
 * the next's makes it exact. Each step then starts at the same place of
 * the period: its call after the longest pause, each found one period of
 * bytes after the last one found (so an estimate a little off never
 * drifts), and its time is that call's own: where the pause began (the
 * first step's, whose pause runs back into the set-up, as long before its
 * call as the steps' usual pause).
 */

/*
 * A data call (a send or receive family call that moved bytes) of the
 * thread whose traffic gives the rhythm: where in that thread's traffic
 * it starts (OFF: the bytes its calls moved before it, both ways), its
 * BYTES, the thread's time outside the network since its previous data
 * call (IDLE), when the longest stretch of that time began (FROM), and
 * when the call ended.
 */
struct ddl_sockcall {
	uint64_t off, bytes;
	int64_t idle, from, at, end; /* AT: when the call began */
	double w; /* the idle time's weight: log(1 + idle / 10 us) */
};

#define DDL_IDLE_UNIT 1e4 /* ns: an idle time's weight is log(1 + idle / 10 us) */

/* log(1 + IDLE / DDL_IDLE_UNIT), IDLE >= 0; the gaps of a few us between
 * calls, most of them, by its series (to 1e-4) without the cost of log. */
static double ddl_idle_weight(int64_t idle)
{
	double x = (double)idle / DDL_IDLE_UNIT;
	return x < 0.125 ? x * (1 - x * (0.5 - x / 3)) : log1p(x);
}

/* Whether E, of class CLS, is on the network: a data call, a connect or
 * accept, or a wait that included a socket. */
static int ddl_on_network(const struct ddl_event *e, int cls)
{
	return cls == DDL_CLASS_TX || cls == DDL_CLASS_RX || cls == DDL_CLASS_CONN ||
	       (cls == DDL_CLASS_WAIT && (e->flags & DDL_EVF_SOCKWAIT));
}

/* The data calls of thread TID of P, in order, with how many and the bytes
 * they moved in *N and *TOTAL; NULL when there are none, or without memory
 * (*NOMEM set). CALLS, the thread's network calls, sizes the array at
 * first: half of them, as a wait before each data call makes (it grows
 * when there are more); with them, its room, charged against the
 * events' budget, into *NCAP. */
static struct ddl_sockcall *ddl_sock_calls(const struct ddl_proc *p, uint32_t tid, uint64_t calls,
                                           size_t *n, size_t *ncap, uint64_t *total, int *nomem)
{
	size_t m = 0, cap = 0;
	struct ddl_sockcall *c = NULL;
	/* charged against the events' budget (trace_events.c) */
	if (ddl_grow_charged((void **)&c, &cap, calls / 2 > 16 ? (size_t)(calls / 2) + 1 : 16, sizeof *c) < 0) {
		*nomem = 1;
		return NULL;
	}
	uint64_t off = 0;
	/* in ticks within a trace (the real time is linear in them), in ns
	 * across the exec of one image into the next */
	int64_t idle = 0, longest = -1, from = 0, last_ns = INT64_MIN;
	for (size_t k = 0; k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		uint64_t last = 0;
		int have = 0; /* LAST is this trace's */
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			int cls = ddl_cls(e->kind);
			if (!ddl_on_network(e, cls) || (e->tid < t->nthreads ? t->threads[e->tid].tid : 0) != tid)
				continue;
			uint64_t a = e->start, d = e->flags & DDL_EVF_LONG ? (uint64_t)e->dur << DDL_DUR_LONG_SHIFT
			                                                   : e->dur;
			int64_t gap = 0, gap_from = 0;
			if (have && a > last) {
				gap = ddl_ns_clamp((double)(a - last) * t->ns_per_tick);
				gap_from = gap > longest ? ddl_trace_real_ns(t, last) : 0;
			} else if (!have && last_ns != INT64_MIN) {
				gap = ddl_ns_clamp((double)ddl_trace_real_ns(t, a) - (double)last_ns);
				gap_from = last_ns;
			}
			if (gap > 0) {
				idle = ddl_ns_sat_add(idle, gap);
				if (gap > longest) {
					longest = gap;
					from = gap_from;
				}
			}
			last = !have || a + d > last ? a + d : last;
			have = 1;
			if (e->result <= 0 || cls == DDL_CLASS_CONN || cls == DDL_CLASS_WAIT ||
			    (e->flags & DDL_EVF_PEEK))
				continue;
			if (m == cap && ddl_grow_charged((void **)&c, &cap, m + 1, sizeof *c) < 0) {
				ddl_events_give(c, cap * sizeof *c);
				*nomem = 1;
				return NULL;
			}
			c[m++] = (struct ddl_sockcall){off, (uint64_t)e->result, idle,
			                               longest >= 0 ? from : ddl_trace_real_ns(t, a), ddl_trace_real_ns(t, a),
			                               ddl_trace_real_ns(t, a + d), ddl_idle_weight(idle)};
			off += (uint64_t)e->result;
			idle = 0;
			longest = -1;
		}
		if (have)
			last_ns = ddl_trace_real_ns(t, last);
	}
	*n = m;
	*total = off;
	if (!m) {
		ddl_events_give(c, cap * sizeof *c);
		return NULL;
	}
	*ncap = cap;
	return c;
}

#define DDL_QUANTA 2048u          /* the traffic's bytes in so many quanta ... */
#define DDL_QUANTA_MAX (1u << 18) /* ... or more, up to this, for a period of 32 at least */

/*
 * The period of the idle time of calls C[0..N) over their bytes (TOTAL),
 * in bytes, roughly (to a fraction of a quantum); 0 when it has none, or
 * without memory (*NOMEM set). Each call's idle time weighs log(1 + idle /
 * 10 us) at its place: a step's compute stands out of the microseconds
 * between calls, and one long pause (an evaluation, a checkpoint) does
 * not drown the rest. The series is smoothed over two quanta so that a
 * period that is no whole number of quanta still meets itself.
 */
static double ddl_sock_period_at(const struct ddl_sockcall *c, size_t n, uint64_t total, size_t nq0,
                                 int *nomem)
{
	double w[7];
	for (int k = 0; k < 7; k++)
		w[k] = exp(-(double)(k * k) / 8);
	for (size_t nq = nq0;;) {
		double q = (double)total / (double)nq;
		double *x = calloc(3 * nq, sizeof *x), *s = x ? x + nq : NULL, *r = x ? x + 2 * nq : NULL;
		if (!x) {
			*nomem = 1;
			return 0;
		}
		for (size_t i = 0; i < n; i++) {
			size_t j = (size_t)((double)c[i].off / q);
			x[j < nq ? j : nq - 1] += c[i].w;
		}
		for (size_t j = 0; j < nq; j++) { /* spread each quantum over its neighbours */
			if (x[j] == 0)
				continue;
			if (j >= 6 && j + 6 < nq) { /* (the same sums in the same order, unchecked) */
				for (int k = -6; k <= 6; k++)
					s[j + (size_t)(ptrdiff_t)k] += w[k < 0 ? -k : k] * x[j];
				continue;
			}
			for (int k = -6; k <= 6; k++)
				if ((k >= 0 || j >= (size_t)-k) && j + (size_t)(k > 0 ? k : 0) < nq)
					s[(size_t)((ptrdiff_t)j + k)] += w[k < 0 ? -k : k] * x[j];
		}
		if (ddl_autocorr(s, nq, r) < 0) {
			free(x);
			*nomem = 1;
			return 0;
		}
		/* past the first lobe (a pause is high next to itself), the first
		 * peak near the highest; four periods at least */
		size_t lmax = nq / 4, l0 = 1, per = 0;
		while (l0 < lmax && r[l0] > 0)
			l0++;
		double best = 0, d = 0;
		for (size_t l = l0; l < lmax; l++)
			best = r[l] > best ? r[l] : best;
		for (size_t l = l0 + 1; best >= 0.5 && l < lmax && !per; l++)
			if (r[l] >= 0.9 * best && r[l] >= r[l - 1] && r[l] >= r[l + 1])
				per = l;
		if (per) { /* the peak between quanta */
			double den = r[per - 1] - 2 * r[per] + r[per + 1];
			d = den < 0 ? 0.5 * (r[per - 1] - r[per + 1]) / den : 0;
			d = d < -0.5 ? -0.5 : d > 0.5 ? 0.5 : d;
		}
		free(x);
		if (!per)
			return 0;
		if (per >= 32 || nq >= DDL_QUANTA_MAX)
			return ((double)per + d) * q;
		size_t want = nq * 64 / per; /* finer, for a short period */
		while (nq < want && nq < DDL_QUANTA_MAX)
			nq *= 2;
	}
}


/* The K-th largest (from 0) of V[0..N), which it reorders (three ways
 * about each pivot: many equal values cost no more than distinct ones). */
static double ddl_select(double *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n; /* the K-th is in [lo, hi) */
	while (hi - lo > 1) {
		double pv = v[lo + (hi - lo) / 2], t;
		size_t lt = lo, i = lo, gt = hi; /* [lo, lt) > pv, [lt, i) == pv, [gt, hi) < pv */
		while (i < gt) {
			if (v[i] > pv) {
				t = v[lt];
				v[lt++] = v[i];
				v[i++] = t;
			} else if (v[i] < pv) {
				t = v[--gt];
				v[gt] = v[i];
				v[i] = t;
			} else {
				i++;
			}
		}
		if (k < lt)
			hi = lt;
		else if (k >= gt)
			lo = gt;
		else
			return pv;
	}
	return v[lo];
}

/*
 * The period EST made exact: among the calls after the longest pauses (as
 * many as there are periods, and a quarter as long as their median at
 * least), the median distance from one to the one nearest a period after
 * it, of those within a quarter period. Bytes that repeat exactly give the
 * exact period. EST when too few pair up, or without memory (*NOMEM set).
 */
static double ddl_sock_exact(const struct ddl_sockcall *c, size_t n, uint64_t total, double est,
                             double *v, int *nomem)
{
	size_t k = (size_t)((double)total / est) + 2;
	k = k < n ? k : n;
	uint64_t *o = malloc(2 * k * sizeof *o), *d = o + k; /* the pauses' offsets; distances */
	if (!o) {
		*nomem = 1;
		return est;
	}
	for (size_t i = 0; i < n; i++)
		v[i] = (double)c[i].idle;
	double thr = ddl_select(v, n, k - 1), med = ddl_select(v, k, k / 2);
	thr = thr > med / 4 ? thr : med / 4;
	size_t no = 0;
	for (size_t i = 0; i < n && no < k; i++)
		if ((double)c[i].idle >= thr && c[i].idle > 0)
			o[no++] = c[i].off;
	size_t nd = 0;
	for (size_t i = 0, j = 0; i < no; i++) {
		double lo = (double)o[i] + 0.75 * est, hi = (double)o[i] + 1.25 * est;
		while (j < no && (double)o[j] < lo)
			j++;
		size_t at = SIZE_MAX;
		for (size_t q = j; q < no && (double)o[q] <= hi; q++)
			if (at == SIZE_MAX ||
			    fabs((double)(o[q] - o[i]) - est) < fabs((double)(o[at] - o[i]) - est))
				at = q;
		if (at != SIZE_MAX)
			d[nd++] = o[at] - o[i];
	}
	double per = est;
	if (nd >= 2) {
		qsort(d, nd, sizeof *d, ddl_cmp_u64);
		per = (double)d[nd / 2];
	}
	free(o);
	return per;
}

/* The first call of C[0..N) (sorted by OFF) at or past offset AT. */
static size_t ddl_sock_at(const struct ddl_sockcall *c, size_t n, double at)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if ((double)c[mid].off < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}


#define DDL_WINDOW_STEPS 2048u /* steps the period is looked for in: a window of longer runs */

/*
 * The period of calls C[0..N) (above), at a resolution fit for the number
 * of steps: that many, roughly, is the count of calls after a pause eight
 * times the median pause at least (a step's compute stands out of the
 * waits within it; a ring's steps count once or a few times each). The
 * quanta start at 32 a step (2048 at least), so that a period is never
 * below a quantum (2048 quanta saw nothing past some 500 steps: a
 * 3000-step run had no iterations); past DDL_WINDOW_STEPS steps, the
 * period is looked for in that many of them in the middle of the run.
 */
static double ddl_sock_period(const struct ddl_sockcall *c, size_t n, uint64_t total, double *v,
                              int *nomem)
{
	for (size_t i = 0; i < n; i++)
		v[i] = (double)c[i].idle;
	double med = ddl_select(v, n, n / 2), thr = 8 * med > 1000 ? 8 * med : 1000;
	size_t steps = 0;
	for (size_t i = 0; i < n; i++)
		steps += (double)c[i].idle >= thr;
	if (steps <= DDL_QUANTA / 32)
		return ddl_sock_period_at(c, n, total, DDL_QUANTA, nomem);
	size_t seen = steps < DDL_WINDOW_STEPS ? steps : DDL_WINDOW_STEPS, nq = DDL_QUANTA;
	while (nq < 32 * seen && nq < DDL_QUANTA_MAX)
		nq *= 2;
	if (steps <= DDL_WINDOW_STEPS)
		return ddl_sock_period_at(c, n, total, nq, nomem);
	/* the window: its calls, their offsets from its start */
	uint64_t len = (uint64_t)((double)total * DDL_WINDOW_STEPS / (double)steps);
	uint64_t from = (total - len) / 2;
	size_t i0 = ddl_sock_at(c, n, (double)from), i1 = ddl_sock_at(c, n, (double)(from + len));
	struct ddl_sockcall *w = i1 > i0 ? malloc((i1 - i0) * sizeof *w) : NULL;
	if (!w) {
		*nomem = i1 > i0;
		return 0;
	}
	for (size_t i = i0; i < i1; i++) {
		w[i - i0] = c[i];
		w[i - i0].off -= from;
	}
	double per = i1 - i0 >= 8 ? ddl_sock_period_at(w, i1 - i0, len, nq, nomem) : 0;
	free(w);
	return per;
}

/* Of the calls within TOL bytes of offset AT, the one after the longest
 * pause, if that pause is MIN at least; SIZE_MAX when none. */
static size_t ddl_sock_pick(const struct ddl_sockcall *c, size_t n, double at, double tol,
                            int64_t min)
{
	size_t best = SIZE_MAX;
	for (size_t i = ddl_sock_at(c, n, at - tol); i < n && (double)c[i].off <= at + tol; i++)
		if (c[i].idle >= min && (best == SIZE_MAX || c[i].idle > c[best].idle))
			best = i;
	return best;
}

/*
 * The step's starts: one call a period, each found a period of bytes
 * after the last one found (before it, going back), within TOL bytes of
 * where it is due, from SEED, among the calls after a pause of MIN at
 * least, into B (one entry a period, from the period of the traffic's
 * first bytes; SIZE_MAX where none is), of NB entries at most. Returns
 * the entries used.
 */
static size_t ddl_sock_track(const struct ddl_sockcall *c, size_t n, uint64_t total, double per,
                             double tol, size_t seed, int64_t min, size_t *b, size_t nb)
{
	double first = fmod((double)c[seed].off + per / 8, per) - per / 8; /* the first period's place */
	size_t k0 = (size_t)llround(((double)c[seed].off - first) / per);
	if (k0 >= nb)
		return 0;
	for (size_t k = 0; k < nb; k++)
		b[k] = SIZE_MAX;
	b[k0] = seed;
	size_t used = k0 + 1;
	double at = (double)c[seed].off;
	for (size_t k = k0 + 1; k < nb && at + per - per / 8 <= (double)total; k++) {
		at += per;
		size_t i = ddl_sock_pick(c, n, at, tol, min);
		if (i != SIZE_MAX) {
			b[k] = i;
			at = (double)c[i].off;
		}
		used = k + 1;
	}
	at = (double)c[seed].off;
	for (size_t k = k0; k-- > 0;) {
		at -= per;
		size_t i = ddl_sock_pick(c, n, at, tol, min);
		if (i != SIZE_MAX) {
			b[k] = i;
			at = (double)c[i].off;
		}
	}
	return used;
}

/* Iterations from the sequence of socket calls (above); 1 when found. */
static int ddl_proc_socket_iterations(struct ddl_proc *p)
{
	/* the thread with the most traffic */
	uint32_t tid = 0;
	uint64_t most = 0, calls = 0;
	for (size_t i = 0; i < p->nthreads; i++) {
		uint64_t b = p->threads[i].net.bytes_sent + p->threads[i].net.bytes_received;
		if (b > most) {
			most = b;
			tid = p->threads[i].tid;
			calls = p->threads[i].net.calls;
		}
	}
	size_t n = 0;
	uint64_t total = 0;
	int nomem = 0;
	size_t ncap = 0;
	struct ddl_sockcall *c = most ? ddl_sock_calls(p, tid, calls, &n, &ncap, &total, &nomem) : NULL;
	/* the calls' pauses to pick medians from (reordered by each pick), and
	 * which calls start a step: room kept from the thread's last process */
	size_t vbytes = 0;
	double *v = NULL;
	if (c && n >= 8 && !(v = ddl_keep_take(DDL_KEEP_PAUSES, n * (sizeof *v + 1), &vbytes)) &&
	    (v = malloc(n * (sizeof *v + 1))))
		vbytes = n * (sizeof *v + 1);
	if (c && n >= 8 && !v)
		nomem = 1;
	double per = v ? ddl_sock_period(c, n, total, v, &nomem) : 0;
	if (per > 0)
		per = ddl_sock_exact(c, n, total, per, v, &nomem);
	size_t nb = per > 0 ? (size_t)((double)total / per) + 2 : 0;
	size_t *b = nb ? malloc(nb * sizeof *b) : NULL;
	if (nb && !b)
		nomem = 1;
	int found = 0;
	if (b) {
		/* where in the period a step starts: the place, of 64, where the
		 * pauses folded over every period weigh most; the seed is the call
		 * there after the longest pause in the period halfway through the
		 * traffic, else the nearest period that has one (a loop fills the
		 * middle of a run; set-up and its long pauses come first) */
		double fold[64] = {0};
		uint64_t iper = per >= 1 ? (uint64_t)llround(per) : 1;
		/* each call's place in its period, (off % iper) * 64 / iper, with
		 * the remainder carried from call to call (offsets only grow) and
		 * the quotient (below 64) found from a float's and checked */
		uint64_t rem = 0, at = 0;
		double inv = 1 / (double)iper;
		for (size_t i = 0; i < n; i++) {
			uint64_t d = c[i].off - at, x;
			rem += d < iper ? d : d % iper;
			rem -= rem >= iper ? iper : 0;
			at = c[i].off;
			x = rem * 64;
			uint64_t q;
			if (iper < UINT64_C(1) << 57) { /* no product below overflows */
				q = (uint64_t)((double)x * inv);
				q -= q && q * iper > x;
				q += (q + 1) * iper <= x;
			} else {
				q = x / iper;
			}
			fold[q & 63] += c[i].w;
		}
		int ph = 0;
		for (int j = 1; j < 64; j++)
			if (fold[(j + 63) % 64] + fold[j] + fold[(j + 1) % 64] >
			    fold[(ph + 63) % 64] + fold[ph] + fold[(ph + 1) % 64])
				ph = j;
		size_t seed = SIZE_MAX, mid = (size_t)((double)total / 2 / per);
		for (size_t d = 0; seed == SIZE_MAX && d <= mid + nb; d++)
			for (int side = 0; side < 2 && seed == SIZE_MAX; side++) {
				if ((side && !d) || (!side && d > mid))
					continue;
				double lo = (double)(side ? mid + d : mid - d) * per + (ph - 1) * per / 64;
				for (size_t i = ddl_sock_at(c, n, lo); i < n && (double)c[i].off < lo + 3 * per / 64; i++)
					if (c[i].idle > 0 && (seed == SIZE_MAX || c[i].idle > c[seed].idle))
						seed = i;
			}
		/* Once within an eighth of a period of where each is due, for the
		 * pauses steps start after and how far from due they fall; then
		 * again keeping only those a quarter as long as their median at
		 * least, within four times the median distance from due (a 64th
		 * of a period at least, where the bytes repeat exactly): where the
		 * rhythm breaks off (set-up, an evaluation, the end) a pause a
		 * period on is seldom where it is due. */
		size_t used = seed == SIZE_MAX ? 0 : ddl_sock_track(c, n, total, per, per / 8, seed,
		                                                    c[seed].idle / 4, b, nb);
		size_t m = 0, md = 0;
		int64_t *pause = malloc(2 * (used + 1) * sizeof *pause), *dev = pause ? pause + used + 1 : NULL;
		for (size_t k = 0; pause && k < used; k++)
			if (b[k] != SIZE_MAX) {
				pause[m++] = c[b[k]].idle;
				if (k + 1 < used && b[k + 1] != SIZE_MAX)
					dev[md++] = (int64_t)(c[b[k + 1]].off - c[b[k]].off);
			}
		if (pause && m >= 2) {
			qsort(pause, m, sizeof *pause, ddl_cmp_i64);
			int64_t min = pause[m / 2] / 4;
			min = min > 0 ? min : 1;
			double tol = per / 64;
			if (md) { /* the period as the steps found have it, and how far off they fall */
				qsort(dev, md, sizeof *dev, ddl_cmp_i64);
				per = md >= 2 ? (double)dev[md / 2] : per;
				for (size_t k = 0; k < md; k++)
					dev[k] = ddl_ns_clamp(fabs((double)dev[k] - per));
				qsort(dev, md, sizeof *dev, ddl_cmp_i64);
				tol = 4 * (double)dev[md / 2] > tol ? 4 * (double)dev[md / 2] : tol;
				tol = tol < per / 8 ? tol : per / 8;
			}
			if (c[seed].idle >= min)
				used = ddl_sock_track(c, n, total, per, tol, seed, min, b, nb);
			else
				used = 0;
			/* a step's pause is the program's own work between its
			 * exchanges: it stands out of the other calls' usual gaps
			 * (three times their median, 50 us at least), where a
			 * transfer with no loop has only gaps alike; the others are
			 * the calls no step starts at (a step of a send and a receive
			 * has as many of those as steps: all calls, the median would
			 * be a pause), or all calls when every call starts one */
			m = 0;
			for (size_t k = 0; k < used; k++)
				if (b[k] != SIZE_MAX)
					pause[m++] = c[b[k]].idle;
			double *all = m ? v : NULL;
			unsigned char *start = all ? (unsigned char *)(v + n) : NULL;
			if (start) {
				memset(start, 0, n);
				for (size_t k = 0; k < used; k++)
					if (b[k] != SIZE_MAX)
						start[b[k]] = 1;
				size_t no = 0;
				for (size_t i = 0; i < n; i++)
					if (!start[i])
						all[no++] = (double)c[i].idle;
				for (size_t i = 0; !no && i < n; i++)
					all[i] = (double)c[i].idle;
				no = no ? no : n;
				double usual = ddl_select(all, no, no / 2);
				qsort(pause, m, sizeof *pause, ddl_cmp_i64);
				if ((double)pause[m / 2] < 3 * usual || pause[m / 2] < 50000)
					used = 0;
			} else {
				used = 0;
			}
			/* the first step's pause runs back into the set-up (the wait
			 * for the other ranks, the program's own start before its
			 * loop): it starts as long before its first call as the
			 * steps' usual pause */
			int64_t med = used && m ? pause[m / 2] : 0;
			int first = 1;
			for (size_t k = 0; k + 1 < used; k++)
				if (b[k] != SIZE_MAX && b[k + 1] != SIZE_MAX && c[b[k + 1]].from > c[b[k]].from) {
					int64_t a = c[b[k]].from;
					if (first && c[b[k]].idle > 2 * med && c[b[k]].at - med > a && c[b[k]].at - med < c[b[k + 1]].from)
						a = c[b[k]].at - med;
					first = 0;
					found += ddl_push_iter(p, a, c[b[k + 1]].from, tid) == 0;
				}
			/* the last step, when its bytes are all there: to the end of
			 * the call that moved its last byte */
			while (used && b[used - 1] == SIZE_MAX)
				used--;
			if (used) {
				size_t l = b[used - 1], i = ddl_sock_at(c, n, (double)c[l].off + per);
				i = i ? i - 1 : 0;
				if (i >= l && (double)(c[i].off + c[i].bytes) >= (double)c[l].off + per)
					found += ddl_push_iter(p, c[l].from, c[i].end, tid) == 0;
			}
		}
		if (!pause)
			nomem = 1;
		free(pause);
	}
	free(b);
	if (v && ddl_keep_give(DDL_KEEP_PAUSES, v, vbytes) < 0)
		free(v);
	ddl_events_give(c, ncap * sizeof *c);
	p->incomplete |= nomem;
	if (found < 4) {
		p->niter = 0; /* three steps are no rhythm (nor the ring steps of one all-reduce) */
		return 0;
	}
	return 1;
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
	int cls = ddl_cls(e->kind);
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

static int ddl_seq_iterations(struct ddl_proc *p, struct ddl_collcall *v, size_t n, uint32_t tid);

/* Iterations from the repeating sequence of collectives; 1 when found. */
static int ddl_proc_coll_iterations(struct ddl_proc *p)
{
	/* the thread with most collectives (gloo's threads as one) */
	uint32_t best = 0;
	size_t best_n = 0;
	uint32_t tids[64];
	size_t cnt[64], nt = 0;
	for (size_t k = 0; k < p->ntr; k++)
		for (size_t x = 0, i; ddl_trace_next_rare(p->tr[k], &x, &i);) {
			const struct ddl_event *e = &p->tr[k]->ev[i];
			int cls = ddl_cls(e->kind);
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
		for (size_t x = 0, i; n < best_n && ddl_trace_next_rare(t, &x, &i);) {
			const struct ddl_event *e = &t->ev[i];
			int cls = ddl_cls(e->kind);
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
	int found = ddl_seq_iterations(p, v, n, best == DDL_GLOO_THREADS ? 0 : best);
	free(v);
	return found;
}

/*
 * Iterations from the repeating sequence of calls V[0..N) (in order of
 * start, each known by its signature) of thread TID of P; 1 when found.
 */
static int ddl_seq_iterations(struct ddl_proc *p, struct ddl_collcall *v, size_t n, uint32_t tid)
{
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
	if (!period || nw / period < 2)
		return 0;
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
				ddl_push_iter(p, w[i - 1].b, w[i + period - 1].b, tid);
	} else {
		for (size_t i = phase; i + period < nw; i += period) /* gloo's: the main thread's loop */
			ddl_push_iter(p, w[i].a, w[i + period].a, tid);
	}
	return p->niter > 0;
}

/* The steps of the waits V[0..N) of thread TID, sorted by start, if they
 * hold the thread a twentieth of the time they span and repeat; 1 when
 * found (P's iterations), else 0 with none. */
static int ddl_wait_seq(struct ddl_proc *p, struct ddl_collcall *v, size_t n, uint32_t tid)
{
	double held = 0;
	for (size_t i = 0; i < n; i++)
		held += (double)v[i].b - (double)v[i].a;
	if (n >= 4 && held >= ((double)v[n - 1].b - (double)v[0].a) / 20 && ddl_seq_iterations(p, v, n, tid) &&
	    p->niter >= 4)
		return 1;
	p->niter = 0; /* three steps are no rhythm either */
	return 0;
}

struct ddl_sigtime {
	uint64_t sig;
	double t;
};

static int ddl_sigtime_cmp(const void *a, const void *b)
{
	const struct ddl_sigtime *x = a, *y = b;
	return x->sig < y->sig ? -1 : x->sig > y->sig;
}

/* Of the waits V[0..N), the signature whose waits last longest in all
 * (sorted by signature, each run summed); *NOMEM set without memory. */
static uint64_t ddl_wait_sig_most(const struct ddl_collcall *v, size_t n, int *nomem)
{
	struct ddl_sigtime *s = malloc(n * sizeof *s);
	if (!s) {
		*nomem = 1;
		return v[0].sig;
	}
	for (size_t i = 0; i < n; i++)
		s[i] = (struct ddl_sigtime){v[i].sig, (double)v[i].b - (double)v[i].a};
	qsort(s, n, sizeof *s, ddl_sigtime_cmp);
	uint64_t best = s[0].sig;
	double most = -1;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		double sum = 0;
		for (; j < n && s[j].sig == s[i].sig; j++)
			sum += s[j].t;
		if (sum > most) {
			most = sum;
			best = s[i].sig;
		}
		i = j;
	}
	free(s);
	return best;
}

/*
 * Iterations from a thread's long waits (method "waits"), the last
 * resort, for a program whose only rhythm is where it blocks: condition
 * variables, and poll, select and epoll on other descriptors than sockets
 * (a wait for a peer is the socket calls' rhythm, or none). The thread is
 * the main one when it waits (often enough), else the one that waits
 * longest; its waits of a tenth of the 95th percentile of their length at
 * least (20 us at least) are the calls of a sequence, each known by its
 * kind and descriptor (for poll, how many), which is then read as the
 * collectives' is, where they hold the thread a twentieth of the time
 * they span at least (waits that cost nothing are no rhythm of a step);
 * when that sequence has no period, the waits of the one kind and
 * descriptor that holds the thread longest, alone.
 */
static int ddl_proc_wait_iterations(struct ddl_proc *p)
{
	uint32_t tids[64];
	size_t cnt[64], nt = 0;
	int64_t sum[64];
	for (size_t k = 0; k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			int cls = ddl_cls(e->kind);
			if ((cls != DDL_CLASS_WAIT && cls != DDL_CLASS_SYNC) || (e->flags & DDL_EVF_SOCKWAIT))
				continue;
			uint32_t tid = e->tid < t->nthreads ? t->threads[e->tid].tid : 0;
			size_t j = 0;
			while (j < nt && tids[j] != tid)
				j++;
			if (j == nt && nt < 64) {
				tids[nt] = tid;
				cnt[nt] = 0;
				sum[nt++] = 0;
			}
			if (j < nt) {
				cnt[j]++;
				sum[j] = ddl_ns_sat_add(sum[j], ddl_trace_dur_ns(t, e));
			}
		}
	}
	for (int tries = 0; tries < 4 && nt; tries++) {
		size_t j = 0; /* the main thread, else the one that waits longest */
		for (size_t q = 1; q < nt; q++)
			if ((tids[q] == p->pid) > (tids[j] == p->pid) ||
			    ((tids[q] == p->pid) == (tids[j] == p->pid) && sum[q] > sum[j]))
				j = q;
		uint32_t tid = tids[j];
		size_t n = cnt[j];
		tids[j] = tids[--nt];
		cnt[j] = cnt[nt];
		sum[j] = sum[nt];
		if (n < 4)
			continue;
		int64_t *len = malloc(n * sizeof *len);
		struct ddl_collcall *v = malloc(n * sizeof *v);
		if (!len || !v) {
			free(len);
			free(v);
			p->incomplete = 1; /* not found from the waits */
			return 0;
		}
		size_t m = 0;
		for (size_t k = 0; k < p->ntr; k++) {
			const struct ddl_trace *t = p->tr[k];
			for (size_t i = 0; i < t->nev && m < n; i++) {
				const struct ddl_event *e = &t->ev[i];
				int cls = ddl_cls(e->kind);
				if ((cls == DDL_CLASS_WAIT || cls == DDL_CLASS_SYNC) && !(e->flags & DDL_EVF_SOCKWAIT) &&
				    (e->tid < t->nthreads ? t->threads[e->tid].tid : 0) == tid)
					len[m++] = ddl_trace_dur_ns(t, e);
			}
		}
		qsort(len, m, sizeof *len, ddl_cmp_i64);
		int64_t min = m ? len[(m - 1) * 95 / 100] / 10 : 0;
		min = min > 20000 ? min : 20000;
		free(len);
		size_t nv = 0;
		for (size_t k = 0; k < p->ntr; k++) {
			const struct ddl_trace *t = p->tr[k];
			for (size_t i = 0; i < t->nev && nv < n; i++) {
				const struct ddl_event *e = &t->ev[i];
				int cls = ddl_cls(e->kind);
				if ((cls != DDL_CLASS_WAIT && cls != DDL_CLASS_SYNC) || (e->flags & DDL_EVF_SOCKWAIT) ||
				    (e->tid < t->nthreads ? t->threads[e->tid].tid : 0) != tid)
					continue;
				int64_t a = ddl_trace_real_ns(t, e->start), d = ddl_trace_dur_ns(t, e);
				if (d < min)
					continue;
				uint64_t sig = e->kind * 0x9E3779B97F4A7C15ull;
				sig ^= (uint64_t)(uint32_t)e->fd + 0x632BE59BD9B4E019ull + (sig << 6);
				v[nv++] = (struct ddl_collcall){a, a + d, sig};
			}
		}
		qsort(v, nv, sizeof *v, ddl_collcall_cmp);
		/* the signatures as made (the sequence's reading marks those
		 * after a pause in them) */
		uint64_t *sig0 = nv ? malloc(nv * sizeof *sig0) : NULL;
		int nomem = nv && !sig0;
		for (size_t i = 0; sig0 && i < nv; i++)
			sig0[i] = v[i].sig;
		int found = ddl_wait_seq(p, v, nv, tid);
		if (!found && nv >= 4 && sig0) {
			/* a wait of another kind now and then past the threshold (a
			 * Python thread's waits for the GIL among those on its queue)
			 * breaks the sequence: the waits of the kind that holds the
			 * thread longest, alone */
			for (size_t i = 0; i < nv; i++)
				v[i].sig = sig0[i];
			uint64_t best = ddl_wait_sig_most(v, nv, &nomem);
			size_t k = 0;
			for (size_t i = 0; i < nv; i++)
				if (v[i].sig == best)
					v[k++] = v[i];
			found = k < nv && ddl_wait_seq(p, v, k, tid);
		}
		free(sig0);
		free(v);
		p->incomplete |= nomem; /* the waits of one kind not looked at alone */
		if (found)
			return 1;
	}
	return 0;
}

/* The period of P's iterations found (before the warm-up is skipped): their
 * mean less the longest and the shortest tenth (a first step that waited
 * for the set-up, a last one cut short; steps of two speeds on a loaded
 * machine still average alike on every rank, where their medians do not);
 * without memory, the plain mean (P then incomplete). */
static double ddl_proc_period(struct ddl_proc *p)
{
	double *v = malloc(p->niter * sizeof *v), sum = 0;
	if (!v) {
		p->incomplete = 1;
		for (size_t i = 0; i < p->niter; i++)
			sum += p->iter_s[i];
		return p->niter ? sum / (double)p->niter : 0;
	}
	memcpy(v, p->iter_s, p->niter * sizeof *v);
	qsort(v, p->niter, sizeof *v, ddl_cmp_double);
	size_t cut = p->niter / 10;
	for (size_t i = cut; i < p->niter - cut; i++)
		sum += v[i];
	free(v);
	return sum / (double)(p->niter - 2 * cut);
}

/* Processes by rank, then the one that found most iterations (of equals,
 * the one with most events) first. */
static int ddl_cmp_rankproc(const void *a, const void *b)
{
	const struct ddl_proc *x = *(const struct ddl_proc *const *)a;
	const struct ddl_proc *y = *(const struct ddl_proc *const *)b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->niter_found != y->niter_found)
		return x->niter_found > y->niter_found ? -1 : 1;
	return x->events > y->events ? -1 : x->events < y->events;
}

/*
 * The ranks of one job share their period: each rank's period (its
 * iterations' trimmed mean) is held against the median of the ranks', and
 * its count against theirs. A rank disagrees when its period is a tenth off, or its count is off by
 * more than two and a tenth, or when it found none where others did; the
 * job's status says so (r->iteration_status). Processes that are not
 * ranks are not compared: nothing says they do one job's steps; of several
 * that say they are one rank (helpers that inherited its environment),
 * the one that found most iterations is.
 */
static void ddl_iterations_crosscheck(struct ddl_report *r)
{
	struct ddl_proc **rk = malloc(r->nprocs * sizeof *rk);
	double *per = malloc(2 * r->nprocs * sizeof *per), *cnt = per ? per + r->nprocs : NULL;
	if (!rk || !per) {
		free(rk);
		free(per);
		r->incomplete = 1; /* the ranks not compared */
		return;
	}
	size_t nr = 0, n = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].rank >= 0 && r->procs[i].role == DDL_ROLE_RANK)
			rk[nr++] = &r->procs[i];
	qsort(rk, nr, sizeof *rk, ddl_cmp_rankproc);
	size_t m = 0;
	for (size_t i = 0; i < nr; i++)
		if (!m || rk[i]->rank != rk[m - 1]->rank)
			rk[m++] = rk[i];
	for (size_t i = 0; i < m; i++)
		if (rk[i]->niter_found) {
			per[n] = rk[i]->iter_period_s;
			cnt[n++] = (double)rk[i]->niter_found;
		}
	if (n && m > 1) {
		double mp = ddl_select(per, n, n / 2), mc = ddl_select(cnt, n, n / 2);
		r->iter_period_s = mp;
		r->iter_found_median = (long)mc;
		for (size_t i = 0; i < m; i++) {
			struct ddl_proc *p = rk[i];
			double dc = fabs((double)p->niter_found - mc);
			p->iter_disagrees = !p->niter_found || fabs(p->iter_period_s - mp) > 0.1 * mp ||
			                    (dc > 2 && dc > 0.1 * mc);
			r->iter_disagree += p->iter_disagrees;
		}
	}
	free(rk);
	free(per);
}

/* How a process's iterations were found (ddl_it_proc), for the job's. */
enum { DDL_IT_STEPS = 1, DDL_IT_COLL = 2, DDL_IT_SOCKET = 4, DDL_IT_WAITS = 8 };

struct ddl_itjob {
	struct ddl_report *r;
	const char *patterns;
	int warmup, ranked;
	unsigned char *how; /* per process: DDL_IT_* */
};

/* Process I's iterations, by the first method that finds any
 * (ddl_parallel_procs_some: it writes only its process). */
static void ddl_it_found(struct ddl_itjob *j, struct ddl_proc *p, size_t i);

/* Whether P may have a rank's steps: not a launcher among ranks (mpirun,
 * a job's own parent), a loader's worker, a rank's child. */
static int ddl_it_wanted(const struct ddl_itjob *j, const struct ddl_proc *p)
{
	return !((j->ranked && p->rank < 0) || p->role == DDL_ROLE_WORKER || p->role == DDL_ROLE_CHILD ||
	         p->role == DDL_ROLE_LAUNCHER);
}

/* (ddl_parallel_procs_some: P's events held) */
static void ddl_it_proc(void *arg, size_t i)
{
	struct ddl_itjob *j = arg;
	struct ddl_proc *p = &j->r->procs[i];
	if (!ddl_it_wanted(j, p))
		return; /* passed to it without memory for the order */
	ddl_it_found(j, p, i);
}

/* The rest of ddl_it_proc, with P's events held. */
static void ddl_it_found(struct ddl_itjob *j, struct ddl_proc *p, size_t i)
{
	int by_steps = 0;
	if (!j->r->iteration_names_given && ddl_proc_step_iterations(p)) {
		p->iteration_method = "steps";
		by_steps = 1;
	} else {
		ddl_proc_iterations(p, j->patterns);
		ddl_keep_training_thread(p);
		p->iteration_method = "markers";
		if (p->niter)
			p->steps_run = (long)p->niter; /* the ranges are the steps */
	}
	if (!p->niter && !by_steps && j->r->iteration_names_given && ddl_proc_step_iterations(p))
		p->iteration_method = "steps";
	if (p->niter && !strcmp(p->iteration_method, "steps"))
		j->how[i] |= DDL_IT_STEPS;
	if (!p->niter && ddl_proc_coll_iterations(p)) {
		p->iteration_method = "collectives";
		j->how[i] |= DDL_IT_COLL;
	}
	if (!p->niter && ddl_proc_socket_iterations(p)) {
		ddl_keep_training_thread(p); /* in time order */
		p->iteration_method = "socket";
		j->how[i] |= DDL_IT_SOCKET;
	}
	if (!p->niter && ddl_proc_wait_iterations(p)) {
		p->iteration_method = "waits";
		j->how[i] |= DDL_IT_WAITS;
	}
	if (!p->niter) {
		p->iteration_method = "none";
		return;
	}
	p->niter_found = p->niter;
	p->iter_period_s = ddl_proc_period(p);
	size_t skip = (size_t)j->warmup < p->niter ? (size_t)j->warmup : p->niter - 1;
	memmove(p->iter_s, p->iter_s + skip, (p->niter - skip) * sizeof *p->iter_s);
	memmove(p->iter, p->iter + skip, (p->niter - skip) * sizeof *p->iter);
	p->niter -= skip;
	p->warmup_skipped = (int)skip;
	double sum = 0;
	for (size_t k = 0; k < p->niter; k++)
		sum += p->iter_s[k];
	p->iter_mean_s = sum / (double)p->niter;
}

void ddl_report_iterations(struct ddl_report *r, const char *patterns, int warmup)
{
	size_t total = 0;
	r->iterations = -1;
	r->iterations_found = -1;
	r->steps_run = -1;
	int by_socket = 0, by_coll = 0, by_waits = 0, ranked = 0, any_steps = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		ranked |= r->procs[i].rank >= 0;
	struct ddl_itjob j = {r, patterns, warmup, ranked, calloc(r->nprocs ? r->nprocs : 1, 1)};
	if (!j.how) {
		r->incomplete = 1; /* no iterations looked for */
		r->iterations = 0;
		r->iterations_found = 0;
		r->iteration_method = "none";
		r->iteration_status = "none";
		return;
	}
	ddl_cls(0); /* its table made here, before the threads read it */
	unsigned char *want = malloc(r->nprocs ? r->nprocs : 1);
	for (size_t i = 0; i < r->nprocs; i++) {
		struct ddl_proc *p = &r->procs[i];
		p->steps_run = -1;
		if (!ddl_it_wanted(&j, p))
			p->iteration_method = "none";
		if (want)
			want[i] = ddl_it_wanted(&j, p) != 0;
	}
	/* those in memory first, held (ddl_parallel_procs) */
	ddl_parallel_procs_some(r, want, ddl_it_proc, &j);
	free(want);
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		any_steps |= (j.how[i] & DDL_IT_STEPS) != 0;
		by_coll |= (j.how[i] & DDL_IT_COLL) != 0;
		by_socket |= (j.how[i] & DDL_IT_SOCKET) != 0;
		by_waits |= (j.how[i] & DDL_IT_WAITS) != 0;
		if (!p->niter || !strcmp(p->iteration_method, "none"))
			continue;
		total += p->niter;
		if (r->iterations < 0 || (long)p->niter < r->iterations)
			r->iterations = (long)p->niter;
		if (r->iterations_found < 0 || (long)p->niter_found < r->iterations_found)
			r->iterations_found = (long)p->niter_found;
		if (p->steps_run > r->steps_run)
			r->steps_run = p->steps_run;
	}
	free(j.how);
	ddl_iterations_crosscheck(r);
	if (!total) {
		r->iterations = 0;
		r->iterations_found = 0;
		r->iteration_method = "none";
		r->iteration_status = "none";
		return;
	}
	r->iteration_status = r->iter_disagree ? "disagree" : "found";
	r->iteration_method = by_waits ? "waits" : by_socket ? "socket" : by_coll ? "collectives"
	                    : any_steps ? "steps" : "markers";
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
