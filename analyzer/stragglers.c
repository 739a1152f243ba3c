/*
 * Stragglers: the rank that keeps the others waiting at collectives, and
 * whether it is slow by its own doing (the culprit) or late because it
 * waits on another (a victim). One definition, which every output and
 * --fail-if read from the model:
 *
 * For every collective instance (a communicator's n-th call, cends.h) the
 * member that starts it last makes the others wait, from the next latest
 * start to its own, on the aligned clocks; and each other member waited
 * on it, from its own start to the last one's. Where every member came
 * straight from one instance shared before, each start counts less how
 * much later than the earliest member that one ended for it (a collective
 * that returns later on one rank, its last bytes still arriving over a
 * slow link, delays that rank's next start through no doing of its own);
 * else a start queued behind the process's own previous collective passes
 * the blame to whoever made that one end late. The analysed iterations of
 * the job's reference rank (the lowest with iterations) are the slots the
 * job's time is cut into, and a wait counts when it is at least 0.5 ms and
 * 5% of the mean iteration (the floor: on a busy machine an even job's ranks
 * take turns at a few per cent). In each slot every rank's imposed
 * wait is traced along the rank it spent at least half that time waiting
 * on, and on from there, to a root; the root with the most wait traced to
 * it is the slot's cause when that is above the floor and twice any other
 * root's. The cause and the ranks traced to it, each imposing a wait above
 * the floor, are late in that slot; those other than the cause are its
 * victims there.
 *
 * A rank is a straggler (the culprit) when it is the cause in at least half
 * the slots and the wait it imposes per iteration exceeds the floor and
 * twice the ranks' lower median (of two ranks, the other's); a victim when
 * it is late in half the slots, more often as a victim than as the cause,
 * with the same bounds on its wait: it is late because it waits on the
 * rank it waited on most often in those slots. A culprit's cause is the
 * part of its own iteration (compute, data stall) that exceeds the other
 * ranks' median by the most, when that excess is at least a quarter of the
 * wait it imposes; "other" when neither does. late_fraction is the share of
 * the slots a rank was late in.
 */
#include <stdlib.h>
#include <string.h>

#include "cends.h"
#include "ivset.h"
#include "report.h"

#define DDL_QUEUED_NS  50000 /* back to back: a start this soon after an end */
#define DDL_CHAIN_MAX  8 /* hops from a late rank to the one it waited on */

/* One member's wait, [a, b), on the process to blame for it, in a slot. */
struct ddl_waitrec {
	uint32_t who, on, slot;
	int64_t a, b;
};

static int ddl_waitrec_cmp(const void *a, const void *b)
{
	const struct ddl_waitrec *x = a, *y = b;
	if (x->who != y->who)
		return x->who < y->who ? -1 : 1;
	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	if (x->on != y->on)
		return x->on < y->on ? -1 : 1;
	return x->a < y->a ? -1 : x->a > y->a;
}

/* Seconds covered by the waits W[0..N), sorted by start: collectives in
 * flight together (gloo's buckets) are one wait, not one each. */
static double ddl_waits_length(const struct ddl_waitrec *w, size_t n)
{
	/* in double: starts moved back by a shared collective's late end may
	 * lie anywhere a crafted trace puts them */
	double total = 0;
	int64_t a = 0, b = INT64_MIN;
	for (size_t i = 0; i < n; i++) {
		if (w[i].a > b) {
			if (b != INT64_MIN)
				total += (double)b - (double)a;
			a = w[i].a;
			b = w[i].b;
		} else if (w[i].b > b) {
			b = w[i].b;
		}
	}
	if (b != INT64_MIN)
		total += (double)b - (double)a;
	return total / 1e9;
}

/* By process, then start. */
static int ddl_cend_proc_cmp(const void *a, const void *b)
{
	const struct ddl_cend *x = a, *y = b;
	if (x->proc != y->proc)
		return x->proc - y->proc;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* Marks the instances that started within DDL_QUEUED_NS of the end of an
 * earlier one of the same process, naming that one; numbers them all. */
static void ddl_mark_queued(struct ddl_cend *v, size_t n)
{
	qsort(v, n, sizeof *v, ddl_cend_proc_cmp);
	size_t end_at = SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		if (i && v[i].proc != v[i - 1].proc)
			end_at = SIZE_MAX;
		v[i].id = i;
		v[i].queued = end_at != SIZE_MAX && v[i].start_ns <= v[end_at].end_ns + DDL_QUEUED_NS;
		v[i].behind = v[i].queued ? end_at : SIZE_MAX;
		v[i].prev = end_at != SIZE_MAX && v[end_at].end_ns <= v[i].start_ns + DDL_QUEUED_NS ? end_at : SIZE_MAX;
		if (end_at == SIZE_MAX || v[i].end_ns > v[end_at].end_ns)
			end_at = i;
	}
}

/*
 * The process to blame for the wait at instance G (GLAST[G] its last member
 * to start, GRP[i] the instance of V[i], POS[id] where the member numbered
 * id is): that last one, or when it was queued behind an earlier
 * collective, whoever is to blame for that one's end.
 */
static int ddl_blame(const struct ddl_cend *v, const size_t *glast, const size_t *pos,
                     const size_t *grp, size_t g)
{
	size_t last = glast[g];
	for (int hop = 0; v[last].queued && hop < 64; hop++) {
		size_t e = pos[v[last].behind];
		last = glast[grp[e]];
	}
	return v[last].proc;
}

/* The slot (an analysed iteration of REF) that holds instant T, or -1. */
static long ddl_slot_of(const struct ddl_proc *ref, int64_t t)
{
	size_t lo = 0, hi = ref->niter;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ref->iter[mid].end_ns <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ref->niter && ref->iter[lo].start_ns <= t ? (long)lo : -1;
}

/* The lower median of X[0..N) other than X[SKIP]; 0 with none. X is reordered. */
static double ddl_median_but(double *x, size_t n, size_t skip)
{
	if (skip < n) {
		x[skip] = x[n - 1];
		n--;
	}
	if (!n)
		return 0;
	qsort(x, n, sizeof *x, ddl_cmp_double);
	return x[(n - 1) / 2];
}

/* Which part of P's own iteration makes it slow, against the other ranks'. */
static void ddl_straggler_cause(struct ddl_report *r, size_t who, double *tmp)
{
	struct ddl_proc *p = &r->procs[who];
	p->straggler_cause = "other";
	if (!p->niter)
		return;
	const double *mine[2] = {&p->per_iter.compute, &p->per_iter.data_stall};
	static const char *const names[2] = {"compute", "data"};
	double best = 0.25 * p->imposed_wait_s;
	for (int k = 0; k < 2; k++) {
		size_t n = 0, self = (size_t)-1;
		for (size_t i = 0; i < r->nprocs; i++) {
			const struct ddl_proc *q = &r->procs[i];
			if (q->rank < 0 || !q->niter)
				continue;
			if (i == who)
				self = n;
			tmp[n++] = k ? q->per_iter.data_stall : q->per_iter.compute;
		}
		double med = ddl_median_but(tmp, n, self);
		if (*mine[k] - med >= best) {
			best = *mine[k] - med;
			p->straggler_cause = names[k];
			p->cause_s = *mine[k];
			p->cause_others_s = med;
		}
	}
}

void ddl_report_stragglers(struct ddl_report *r)
{
	for (size_t i = 0; i < r->nprocs; i++)
		r->procs[i].victim_of = r->procs[i].waits_on = -1;
	/* the slots: the reference rank's analysed iterations */
	const struct ddl_proc *ref = NULL;
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (p->rank >= 0 && p->niter && p->iter && (!ref || p->rank < ref->rank))
			ref = p;
	}
	if (!ref)
		return;
	size_t ns = ref->niter, np = r->nprocs;
	/* a wait shorter than this is no one's lateness, in an iteration or on
	 * average */
	double floor_s = 0.0005;
	if (r->iter_mean_s * 0.05 > floor_s)
		floor_s = r->iter_mean_s * 0.05;
	struct ddl_cend *v = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < np; i++) {
		if (!ddl_proc_has_class(&r->procs[i], DDL_CLASS_COLL) &&
		    !ddl_proc_has_class(&r->procs[i], DDL_CLASS_HCOLL))
			continue; /* no collective: no ends */
		ddl_proc_hold(&r->procs[i]);
		if (ddl_proc_ends(&r->procs[i], 0, (int)i, &v, &n, &cap) < 0)
			r->incomplete = 1; /* fewer collectives compared */
		ddl_proc_release(&r->procs[i]);
	}
	if (!n) {
		free(v);
		return;
	}
	ddl_mark_queued(v, n);
	qsort(v, n, sizeof *v, ddl_cend_cmp);
	/* the others' waits for each rank, as time: collectives in flight
	 * together (gloo's buckets, started as DDP's backward makes them) make
	 * the others wait once, not once each */
	struct ddl_ivset *waits = calloc(np, sizeof *waits);
	size_t *seen = calloc(np, sizeof *seen);
	double *imp = ns <= SIZE_MAX / sizeof(double) / np ? calloc(np * ns, sizeof *imp) : NULL;
	struct ddl_waitrec *wr = malloc(n * sizeof *wr);
	size_t nwr = 0;
	int ok = waits && seen && imp && wr;
	if (!ok)
		r->incomplete = 1; /* no stragglers found */
	/* the instances as groups of V, and where each numbered member is */
	int64_t *at = ok ? malloc(n * sizeof *at) : NULL; /* each member's start, as counted */
	size_t ng = 0, *ga = ok ? malloc((n + 1) * sizeof *ga) : NULL,
	       *glast = ok ? malloc(n * sizeof *glast) : NULL, *pos = ok ? malloc(n * sizeof *pos) : NULL,
	       *grp = ok ? malloc(n * sizeof *grp) : NULL;
	if (ok && (!at || !ga || !glast || !pos || !grp)) {
		r->incomplete = 1;
		ok = 0;
	}
	for (size_t a = 0; ok && a < n;) {
		size_t b = a, last = a;
		while (b < n && v[b].key == v[a].key && v[b].seq == v[a].seq) {
			if (v[b].start_ns > v[last].start_ns)
				last = b;
			pos[v[b].id] = b;
			grp[b++] = ng;
		}
		glast[ng] = last;
		ga[ng++] = a;
		a = b;
	}
	if (ok)
		ga[ng] = n;
	for (size_t g = 0; ok && g < ng; g++) {
		size_t a = ga[g], b = ga[g + 1];
		/*
		 * Where every member came to this collective straight from one
		 * shared before (the same instance), each start is taken less how
		 * much later than the earliest member that one ended for it: a
		 * collective that returns later on one rank (its last bytes still
		 * arriving on a slow link) makes that rank start the next one
		 * later by as much, through no doing of its own.
		 */
		long pg = -1;
		int64_t first_end = INT64_MAX;
		for (size_t k = a; k < b; k++) {
			long q = v[k].prev == SIZE_MAX ? -2 : (long)grp[pos[v[k].prev]];
			pg = k == a ? q : pg == q ? pg : -2;
			if (v[k].prev != SIZE_MAX && v[pos[v[k].prev]].end_ns < first_end)
				first_end = v[pos[v[k].prev]].end_ns;
		}
		for (size_t k = a; k < b; k++)
			at[k] = pg >= 0 ? ddl_ns_clamp((double)v[k].start_ns -
			                               ((double)v[pos[v[k].prev]].end_ns - (double)first_end))
			                : v[k].start_ns;
		size_t last = a;
		for (size_t k = a; k < b; k++)
			if (at[k] > at[last])
				last = k;
		long slot = b - a >= 2 ? ddl_slot_of(ref, v[last].start_ns) : -1;
		if (slot < 0)
			continue;
		for (size_t k = a; k < b; k++)
			seen[v[k].proc]++;
		int who = pg >= 0 ? v[last].proc : ddl_blame(v, glast, pos, grp, g);
		int64_t next = INT64_MIN;
		for (size_t k = a; k < b; k++)
			if (k != last && at[k] > next)
				next = at[k];
		ddl_ivset_push(&waits[who], next, at[last], 0);
		for (size_t k = a; k < b; k++)
			if (k != last && v[k].proc != who && at[k] < at[last])
				wr[nwr++] = (struct ddl_waitrec){(uint32_t)v[k].proc, (uint32_t)who, (uint32_t)slot, at[k],
				                                 at[last]};
	}
	free(at);
	free(ga);
	free(glast);
	free(pos);
	free(grp);
	free(v);
	/* per rank and slot, the wait it imposed */
	for (size_t i = 0; ok && i < np; i++) {
		ddl_ivset_merge(&waits[i], 0);
		if (waits[i].nomem)
			r->incomplete = 1; /* less wait imposed than there was */
		size_t from = 0;
		double total = 0;
		for (size_t j = 0; j < ns; j++) {
			imp[i * ns + j] = (double)ddl_ivset_overlap(&waits[i], &from, ref->iter[j].start_ns,
			                                            ref->iter[j].end_ns, NULL, 0) / 1e9;
			total += imp[i * ns + j];
		}
		if (seen[i]) {
			r->procs[i].coll_instances = seen[i];
			r->procs[i].imposed_wait_s = total / (double)ns;
			r->stragglers_measured = 1;
		}
	}
	for (size_t i = 0; waits && i < np; i++)
		ddl_ivset_free(&waits[i]);
	free(waits);
	/* per rank and slot, the rank it waited on most; per rank, over all */
	int32_t *on = ok ? malloc(np * ns * sizeof *on) : NULL;
	double *on_s = ok ? calloc(np * ns, sizeof *on_s) : NULL;
	double *tot = ok ? calloc(np, sizeof *tot) : NULL;
	if (ok && (!on || !on_s || !tot)) {
		r->incomplete = 1;
		ok = 0;
	}
	if (ok) {
		for (size_t i = 0; i < np * ns; i++)
			on[i] = -1;
		qsort(wr, nwr, sizeof *wr, ddl_waitrec_cmp);
		for (size_t a = 0; a < nwr;) {
			size_t b = a;
			while (b < nwr && wr[b].who == wr[a].who && wr[b].slot == wr[a].slot && wr[b].on == wr[a].on)
				b++;
			double s = ddl_waits_length(wr + a, b - a);
			size_t at = wr[a].who * ns + wr[a].slot;
			if (s > on_s[at]) {
				on_s[at] = s;
				on[at] = (int32_t)wr[a].on;
			}
			a = b;
		}
		/* over the whole run, by (who, on): sorted again by those two */
		for (size_t i = 0; i < nwr; i++)
			wr[i].slot = 0;
		qsort(wr, nwr, sizeof *wr, ddl_waitrec_cmp);
		for (size_t a = 0; a < nwr;) {
			size_t b = a;
			while (b < nwr && wr[b].who == wr[a].who && wr[b].on == wr[a].on)
				b++;
			double s = ddl_waits_length(wr + a, b - a);
			struct ddl_proc *p = &r->procs[wr[a].who];
			if (s > tot[wr[a].who]) {
				tot[wr[a].who] = s;
				p->waits_on = (int)wr[a].on;
				p->waits_on_s = s / (double)ns;
			}
			a = b;
		}
	}
	free(wr);
	free(tot);
	/* each slot: every rank's wait traced along whom it waited on to a
	 * root; the root with the most wait traced to it, standing out, is
	 * the slot's cause; the ranks traced to it are late */
	size_t *late = ok ? calloc(np, sizeof *late) : NULL, *cause = ok ? calloc(np, sizeof *cause) : NULL,
	       *vict = ok ? calloc(np, sizeof *vict) : NULL, *root = ok ? malloc(np * sizeof *root) : NULL;
	int *of = ok ? malloc(np * sizeof *of) : NULL, *ofn = ok ? calloc(np, sizeof *ofn) : NULL;
	double *blame = ok ? malloc(np * sizeof *blame) : NULL;
	if (ok && (!late || !cause || !vict || !root || !of || !ofn || !blame)) {
		r->incomplete = 1;
		ok = 0;
	}
	for (size_t j = 0; ok && j < ns; j++) {
		for (size_t i = 0; i < np; i++)
			blame[i] = 0;
		for (size_t i = 0; i < np; i++) {
			size_t at = i;
			for (int hop = 0; hop < DDL_CHAIN_MAX; hop++) {
				int32_t nx = on[at * ns + j];
				if (nx < 0 || (size_t)nx == i || on_s[at * ns + j] < 0.5 * imp[at * ns + j] ||
				    imp[at * ns + j] < floor_s)
					break;
				at = (size_t)nx;
			}
			root[i] = at;
			blame[at] += imp[i * ns + j];
		}
		size_t top = 0;
		for (size_t i = 1; i < np; i++)
			if (blame[i] > blame[top])
				top = i;
		double rest = 0;
		for (size_t i = 0; i < np; i++)
			if (i != top && blame[i] > rest)
				rest = blame[i];
		if (blame[top] < floor_s || blame[top] < 2 * rest)
			continue; /* no one stands out in this iteration */
		cause[top]++;
		for (size_t i = 0; i < np; i++) {
			if (root[i] != top || (i != top && imp[i * ns + j] < floor_s))
				continue;
			late[i]++;
			if (i == top)
				continue;
			vict[i]++;
			/* the one it waits on most often (a majority vote) */
			int nx = on[i * ns + j];
			if (!ofn[i] || of[i] == nx) {
				of[i] = nx;
				ofn[i]++;
			} else {
				ofn[i]--;
			}
		}
	}
	free(imp);
	free(on);
	free(on_s);
	/* the verdicts */
	double *w = ok ? malloc((np + 1) * sizeof *w) : NULL;
	if (ok && !w) {
		r->incomplete = 1;
		ok = 0;
	}
	size_t nw = 0;
	for (size_t i = 0; ok && i < np; i++)
		if (r->procs[i].coll_instances)
			w[nw++] = r->procs[i].imposed_wait_s;
	double med = ok ? ddl_median_but(w, nw, (size_t)-1) : 0;
	for (size_t i = 0; ok && i < np; i++) {
		struct ddl_proc *p = &r->procs[i];
		if (!p->coll_instances)
			continue;
		p->late_fraction = (double)late[i] / (double)ns;
		int big = p->imposed_wait_s > floor_s && p->imposed_wait_s > 2 * med;
		if (big && 2 * cause[i] >= ns) {
			p->straggler = 1;
			r->nstragglers++;
			ddl_straggler_cause(r, i, w);
		} else if (big && 2 * late[i] >= ns && vict[i] > cause[i] && ofn[i]) {
			p->victim = 1;
			p->victim_of = of[i];
			r->nvictims++;
		}
	}
	r->straggler_count = r->nstragglers;
	free(w);
	free(late);
	free(cause);
	free(vict);
	free(of);
	free(ofn);
	free(root);
	free(blame);
	free(seen);
}
