/*
 * Clock alignment across hosts (DESIGN.md section 6). Each trace maps its
 * ticks to the host's real-time clock through paired readings; hosts whose
 * real-time clocks disagree would misplace their ranks against each other.
 * The same collective ends at nearly the same moment on every member (a
 * ring all-reduce cannot finish on one rank long before the others), so for
 * every host the median difference between the ends of the collectives it
 * shares with the reference host (the lowest rank's) is that host's clock
 * offset (of MPI's calls, barriers only: a rank returns from an MPI
 * all-reduce or broadcast once its own part is done, its last bytes perhaps
 * still in the kernel's buffers on their way to a slow link's other end;
 * their starts still tell the stragglers). Hosts reached only through
 * others are aligned transitively. The residual error is the median
 * distance, after correction, between the ends of the same collective on
 * two hosts. An offset is applied only when
 * it stands out of that error (more than twice the residual and 200 us):
 * hosts whose clocks already agree are left as read.
 */
#include <stdlib.h>
#include <string.h>

#include "cends.h"
#include "report.h"

int ddl_cend_cmp(const void *a, const void *b)
{
	const struct ddl_cend *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->host - y->host;
}

/* By numbering (call order first), communicator, start. */
static int ddl_cend_start_cmp(const void *a, const void *b)
{
	const struct ddl_cend *x = a, *y = b;
	if (x->by_start != y->by_start)
		return x->by_start - y->by_start;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static int ddl_i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

struct ddl_dend {
	uint64_t id;    /* tid << 32 | corr */
	int64_t start_ns, end_ns;
};

static int ddl_dend_cmp(const void *a, const void *b)
{
	const struct ddl_dend *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * Ends of one process's collectives, by communicator and sequence: an NCCL
 * call's number is its place in the calling thread's order; a gloo
 * collective's, its place by start time among the process's on that
 * communicator (ProcessGroupGloo runs them from several threads, and the
 * trace holds each thread's in turn).
 */
int ddl_proc_ends(const struct ddl_proc *p, int host, int proc, struct ddl_cend **v,
                         size_t *n, size_t *cap)
{
	size_t n0 = *n;
	int rc = 0;
	struct {
		uint64_t key, seq;
	} seqs[64];
	int nseq = 0;
	for (size_t k = 0; k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		/* the device intervals of collectives, by (thread, call number) */
		size_t nd = 0;
		if (!(ddl_trace_classes(t) & (1u << DDL_CLASS_COLL | 1u << DDL_CLASS_HCOLL)))
			continue; /* none to number */
		for (size_t x = 0, i; ddl_trace_has_class(t, DDL_CLASS_DEVICE) && ddl_trace_next_rare(t, &x, &i);)
			nd += t->ev[i].kind == DDL_EV_DEV_COLL && (t->ev[i].flags & DDL_EVF_EVPAIR);
		struct ddl_dend *dv = nd ? malloc(nd * sizeof *dv) : NULL;
		if (nd && !dv) {
			rc = -1;
			continue;
		}
		nd = 0;
		for (size_t x = 0, i; dv && ddl_trace_next_rare(t, &x, &i);) {
			const struct ddl_event *d = &t->ev[i];
			if (d->kind == DDL_EV_DEV_COLL && (d->flags & DDL_EVF_EVPAIR))
				dv[nd++] = (struct ddl_dend){(uint64_t)d->tid << 32 | (uint32_t)d->result,
				                             ddl_trace_real_ns(t, d->start),
				                             ddl_trace_real_ns(t, d->start) + ddl_trace_dur_ns(t, d)};
		}
		if (nd)
			qsort(dv, nd, sizeof *dv, ddl_dend_cmp);
		for (size_t x = 0, i; ddl_trace_next_rare(t, &x, &i);) {
			const struct ddl_event *e = &t->ev[i];
			int cls = ddl_event_class(e->kind);
			if ((cls != DDL_CLASS_COLL && cls != DDL_CLASS_HCOLL) ||
			    (cls == DDL_CLASS_HCOLL && !ddl_coll_matched(e->kind)))
				continue; /* MPI's point-to-point calls and starts end when they end */
			const struct ddl_args *a = ddl_event_args(t, i);
			const struct ddl_comm_info *ci = a ? ddl_trace_comm(t, a->comm) : NULL;
			if (!ci || (cls == DDL_CLASS_COLL &&
			            ((a->flags & DDL_ARGF_GROUPED) || !(a->flags & DDL_ARGF_TIMED))))
				continue;
			int s = 0;
			while (s < nseq && seqs[s].key != ci->key)
				s++;
			if (s == nseq) {
				if (nseq == 64)
					continue;
				seqs[nseq].key = ci->key;
				seqs[nseq++].seq = 0;
			}
			/* a gloo collective's own span is its time on the wire; an NCCL
			 * call's, its device interval */
			struct ddl_dend own = {0, ddl_trace_real_ns(t, e->start),
			                       ddl_trace_real_ns(t, e->start) + ddl_trace_dur_ns(t, e)};
			struct ddl_dend want = {(uint64_t)e->tid << 32 | a->corr, 0, 0};
			const struct ddl_dend *hit = cls == DDL_CLASS_HCOLL ? &own
			                             : nd ? bsearch(&want, dv, nd, sizeof *dv, ddl_dend_cmp)
			                                  : NULL;
			if (hit) {
				if (*n == *cap) {
					size_t c = *cap ? *cap * 2 : 1024;
					struct ddl_cend *q = realloc(*v, c * sizeof *q);
					if (!q) {
						rc = -1;
						break;
					}
					*v = q;
					*cap = c;
				}
				struct ddl_cend c = {ci->key, seqs[s].seq, hit->start_ns, hit->end_ns, host, proc,
				                     cls == DDL_CLASS_HCOLL};
				c.end_sync = ddl_coll_ends_together(e->kind);
				(*v)[(*n)++] = c;
			}
			seqs[s].seq++;
		}
		free(dv);
	}
	if (*n - n0 < 2)
		return rc;
	qsort(*v + n0, *n - n0, sizeof **v, ddl_cend_start_cmp);
	uint64_t seq = 0;
	for (size_t i = n0; i < *n; i++) {
		struct ddl_cend *c = &(*v)[i];
		if (!c->by_start)
			continue;
		if (i > n0 && (!c[-1].by_start || c[-1].key != c->key))
			seq = 0;
		c->seq = seq++;
	}
	return rc;
}

static int ddl_host_index(const char **hosts, int *n, const char *h)
{
	for (int i = 0; i < *n; i++)
		if (!strcmp(hosts[i], h))
			return i;
	hosts[*n] = h;
	return (*n)++;
}

void ddl_report_align(struct ddl_report *r)
{
	r->clock_method = "realtime";
	r->clock_residual_s = -1;
	if (r->nprocs < 2)
		return;
	enum { MAXH = 256 };
	const char *hosts[MAXH];
	int nh = 0, ref = -1, ref_rank = 1 << 30;
	int *phost = calloc(r->nprocs, sizeof *phost);
	if (!phost) {
		r->incomplete = 1; /* the clocks as read */
		return;
	}
	for (size_t i = 0; i < r->nprocs && nh < MAXH; i++) {
		phost[i] = ddl_host_index(hosts, &nh, r->procs[i].host);
		if (r->procs[i].rank >= 0 && r->procs[i].rank < ref_rank) {
			ref_rank = r->procs[i].rank;
			ref = phost[i];
		}
	}
	if (nh < 2 || nh >= MAXH || ref < 0) {
		free(phost);
		return;
	}
	struct ddl_cend *v = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		if (!ddl_proc_has_class(&r->procs[i], DDL_CLASS_COLL) &&
		    !ddl_proc_has_class(&r->procs[i], DDL_CLASS_HCOLL))
			continue; /* no collective: no ends */
		ddl_proc_hold(&r->procs[i]);
		if (ddl_proc_ends(&r->procs[i], phost[i], (int)i, &v, &n, &cap) < 0)
			r->incomplete = 1; /* aligned on fewer collectives */
		ddl_proc_release(&r->procs[i]);
	}
	free(phost);
	size_t kept = 0; /* the clocks by the ends that are one instant */
	for (size_t k = 0; k < n; k++)
		if (v[k].end_sync)
			v[kept++] = v[k];
	n = kept;
	if (n)
		qsort(v, n, sizeof *v, ddl_cend_cmp);
	/* offsets by breadth-first search from the reference host */
	int64_t off[MAXH] = {0};
	int known[MAXH] = {0}, ends[MAXH] = {0};
	known[ref] = 1;
	/* a host with no collective (a launcher's, a helper's) has nothing to
	 * align by, or to be aligned: it is read as it is */
	int nends = 0;
	for (size_t k = 0; k < n; k++)
		if (!ends[v[k].host]++)
			nends++;
	if (nends < 2) {
		free(v);
		return;
	}
	int64_t *d = malloc((n + 1) * sizeof *d);
	if (!d)
		r->incomplete = 1;
	for (int round = 0; d && round < nh; round++) {
		int progress = 0;
		for (int h = 0; h < nh; h++) {
			if (known[h])
				continue;
			/* differences to any aligned host sharing a collective instance */
			size_t nd = 0;
			for (size_t a = 0; a < n;) {
				size_t b = a;
				while (b < n && v[b].key == v[a].key && v[b].seq == v[a].seq)
					b++;
				int64_t mine = 0, theirs = 0;
				int have_mine = 0, have_theirs = 0;
				for (size_t k = a; k < b; k++) {
					if (v[k].host == h && !have_mine) {
						mine = v[k].end_ns;
						have_mine = 1;
					} else if (known[v[k].host] && !have_theirs) {
						/* clamped: hostile ends and offsets add up past int64 */
						theirs = ddl_ns_clamp((double)v[k].end_ns + (double)off[v[k].host]);
						have_theirs = 1;
					}
				}
				if (have_mine && have_theirs)
					d[nd++] = ddl_ns_clamp((double)theirs - (double)mine);
				a = b;
			}
			if (nd >= 3) {
				qsort(d, nd, sizeof *d, ddl_i64_cmp);
				off[h] = d[nd / 2];
				known[h] = 1;
				progress = 1;
			}
		}
		if (!progress)
			break;
	}
	int all = 1;
	for (int h = 0; h < nh; h++)
		all &= known[h] || !ends[h];
	if (!all || !d) {
		free(v);
		free(d);
		return;
	}
	/* residual: corrected ends of one instance on two hosts, median distance */
	size_t nd = 0;
	for (size_t a = 0; a < n;) {
		size_t b = a;
		while (b < n && v[b].key == v[a].key && v[b].seq == v[a].seq)
			b++;
		for (size_t k = a + 1; k < b; k++)
			if (v[k].host != v[a].host) {
				double x = ((double)v[k].end_ns + (double)off[v[k].host]) -
				           ((double)v[a].end_ns + (double)off[v[a].host]);
				d[nd++] = ddl_ns_clamp(x < 0 ? -x : x);
			}
		a = b;
	}
	if (nd) {
		qsort(d, nd, sizeof *d, ddl_i64_cmp);
		r->clock_residual_s = (double)d[nd / 2] / 1e9;
	}
	free(d);
	free(v);
	int64_t floor_ns = (int64_t)(2 * r->clock_residual_s * 1e9);
	if (floor_ns < 200000)
		floor_ns = 200000;
	int applied = 0;
	r->nclock = 0;
	for (int h = 0; h < nh; h++) {
		if (!ends[h]) {
			off[h] = 0;
			continue;
		}
		struct ddl_clock_host *c = &r->clock[r->nclock++];
		snprintf(c->host, sizeof c->host, "%s", hosts[h]);
		c->offset_s = (double)off[h] / 1e9;
		c->applied = off[h] > floor_ns || off[h] < -floor_ns;
		if (!c->applied)
			off[h] = 0;
		applied |= c->applied;
	}
	r->clock_method = applied ? "collectives" : "realtime";
	/* apply: every trace of a host reads its clock corrected */
	for (size_t i = 0; i < r->nprocs; i++) {
		struct ddl_proc *p = &r->procs[i];
		int h = 0;
		while (h < nh && strcmp(hosts[h], p->host))
			h++;
		if (h == nh)
			continue;
		for (size_t k = 0; k < p->ntr; k++)
			p->tr[k]->align_ns = off[h];
		p->start_real_ns = ddl_ns_clamp((double)p->start_real_ns + (double)off[h]);
		p->end_real_ns = ddl_ns_clamp((double)p->end_real_ns + (double)off[h]);
	}
	r->start_real_ns = INT64_MAX;
	r->end_real_ns = INT64_MIN;
	for (size_t i = 0; i < r->nprocs; i++) {
		if (r->procs[i].start_real_ns < r->start_real_ns)
			r->start_real_ns = r->procs[i].start_real_ns;
		if (r->procs[i].end_real_ns > r->end_real_ns)
			r->end_real_ns = r->procs[i].end_real_ns;
	}
}
