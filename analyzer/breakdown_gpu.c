/*
 * Stall attribution on a rank's device timeline (DESIGN.md section 7), for
 * processes whose traces hold device intervals (event pairs or CUPTI):
 *
 *   compute            union of kernel intervals
 *   network stall      collectives on communicators that span machines,
 *                      where no kernel runs
 *   interconnect stall collectives on communicators inside one machine,
 *                      where no kernel or network collective runs
 *   data stall         host-to-device copies, and host time in the
 *                      program's data-loading marker ranges, where none of
 *                      the above runs
 *   idle               the rest (launch gaps, CPU-bound work)
 *
 * Each instant of an iteration is given to the first part in that order
 * that covers it, so the five parts add up to the iteration exactly. A
 * collective's span comes from its communicator (gpu.c); a group of
 * collectives timed as one interval takes the widest span of its members.
 */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "ivset.h"
#include "report.h"

/* (thread, call number) -> what the analyzer needs of the call. */
struct ddl_corr {
	uint64_t key;
	int span;  /* collectives: DDL_SPAN_* */
	int op;    /* copies: cudaMemcpyKind */
};

static int ddl_corr_cmp(const void *x, const void *y)
{
	const struct ddl_corr *p = x, *q = y;
	return p->key < q->key ? -1 : p->key > q->key;
}

static uint64_t ddl_corr_key(unsigned tid, uint32_t corr)
{
	return (uint64_t)tid << 32 | corr;
}

/* The host calls that device intervals refer to, from one trace; without
 * memory, some left out and *NOMEM set. */
static struct ddl_corr *ddl_corr_table(const struct ddl_report *r, const struct ddl_trace *t,
                                       size_t *count, int *nomem)
{
	struct ddl_corr *v = NULL;
	size_t n = 0, cap = 0;
	int group_span[65536 / 64] = {0}; /* per thread index, low indices only */
	for (size_t i = 0; i < t->nev; i++) {
		const struct ddl_event *e = &t->ev[i];
		int cls = ddl_event_class(e->kind);
		if (cls != DDL_CLASS_COLL && cls != DDL_CLASS_COPY && e->kind != DDL_EV_NCCL_GROUP_END &&
		    e->kind != DDL_EV_NCCL_GROUP_START)
			continue;
		const struct ddl_args *a = ddl_event_args(t, i);
		if (!a)
			continue;
		unsigned g = e->tid < sizeof group_span / sizeof group_span[0] ? e->tid : 0;
		struct ddl_corr c = {ddl_corr_key(e->tid, a->corr), DDL_SPAN_UNKNOWN, a->op};
		if (e->kind == DDL_EV_NCCL_GROUP_START) {
			if (a->aux == 1)
				group_span[g] = DDL_SPAN_UNKNOWN;
			continue;
		}
		if (e->kind == DDL_EV_NCCL_GROUP_END) {
			if (a->aux != 0)
				continue;
			c.span = group_span[g];
		} else if (cls == DDL_CLASS_COLL) {
			c.span = ddl_comm_span(r, t, a->comm);
			if (a->flags & DDL_ARGF_GROUPED) {
				if (c.span > group_span[g])
					group_span[g] = c.span;
				continue;
			}
		}
		if (!(a->flags & DDL_ARGF_TIMED))
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 256;
			struct ddl_corr *q = realloc(v, nc * sizeof *q);
			if (!q) {
				*nomem = 1;
				break;
			}
			v = q;
			cap = nc;
		}
		v[n++] = c;
	}
	if (n)
		qsort(v, n, sizeof *v, ddl_corr_cmp);
	*count = n;
	return v;
}

static const struct ddl_corr *ddl_corr_find(const struct ddl_corr *v, size_t n, uint64_t key)
{
	struct ddl_corr k = {key, 0, 0};
	return n ? bsearch(&k, v, n, sizeof *v, ddl_corr_cmp) : NULL;
}

/* Marker ranges the program names as data loading (the report's --data-names). */
static int ddl_is_data_range(const char *name, const char *patterns)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", patterns ? patterns : "");
	for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (!fnmatch(tok, name, 0))
			return 1;
	return 0;
}

enum { DDL_P_COMPUTE, DDL_P_NET, DDL_P_IC, DDL_P_DATA, DDL_NP };

int ddl_proc_breakdown_gpu(const struct ddl_report *r, struct ddl_proc *p)
{
	struct ddl_ivset set[DDL_NP];
	memset(set, 0, sizeof set);
	size_t ndev = 0;
	uint32_t train = p->niter ? p->iter[0].tid : 0; /* 0: not known, any thread's */
	int nomem = 0; /* without memory: the parts are not all there */
	for (size_t k = 0; k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		size_t nc = 0;
		struct ddl_corr *corr = ddl_corr_table(r, t, &nc, &nomem);
		/* open data ranges per thread index (ranges nest; we keep the outermost) */
		int64_t open_at[64];
		int depth[64] = {0};
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			int cls = ddl_event_class(e->kind);
			int64_t a = ddl_trace_real_ns(t, e->start);
			if (cls == DDL_CLASS_MARK && e->tid < 64) {
				const char *name = ddl_trace_name(t, (uint64_t)e->result);
				int *d = &depth[e->tid];
				if (e->kind == DDL_EV_RANGE_PUSH && (*d > 0 || (name && ddl_is_data_range(name, r->data_names)))) {
					if ((*d)++ == 0)
						open_at[e->tid] = a;
				} else if (e->kind == DDL_EV_RANGE_POP && *d > 0 && --(*d) == 0) {
					ddl_ivset_add(&set[DDL_P_DATA], open_at[e->tid], a, 0);
				}
				continue;
			}
			if (e->kind == DDL_EV_PY_PHASE && e->fd == DDL_PHASE_DATA_WAIT) {
				/* the training loop waiting for its next batch (the Python hook);
				 * the pin-memory thread's waits are not the loop's */
				uint32_t os = e->tid < t->nthreads ? t->threads[e->tid].tid : 0;
				if (!train || os == train)
					ddl_ivset_add(&set[DDL_P_DATA], a, a + ddl_trace_dur_ns(t, e), 0);
				continue;
			}
			if (cls != DDL_CLASS_DEVICE)
				continue;
			ndev++;
			int64_t b = a + ddl_trace_dur_ns(t, e);
			const struct ddl_corr *c =
			    e->flags & DDL_EVF_EVPAIR ? ddl_corr_find(corr, nc, ddl_corr_key(e->tid, (uint32_t)e->result))
			                              : NULL;
			switch (e->kind) {
			case DDL_EV_DEV_KERNEL:
			case DDL_EV_DEV_GRAPH:
			case DDL_EV_DEV_MEMSET:
				ddl_ivset_add(&set[DDL_P_COMPUTE], a, b, 0);
				break;
			case DDL_EV_DEV_MEMCPY: {
				const struct ddl_args *ar = e->flags & DDL_EVF_ARGS ? ddl_event_args(t, i) : NULL;
				int op = c ? c->op : ar ? ar->op : 1;
				ddl_ivset_add(&set[op == 1 /* cudaMemcpyHostToDevice */ ? DDL_P_DATA : DDL_P_COMPUTE], a, b, 0);
				break;
			}
			case DDL_EV_DEV_COLL:
				ddl_ivset_add(&set[c && c->span == DDL_SPAN_INTRA ? DDL_P_IC : DDL_P_NET], a, b, 0);
				break;
			default:
				break;
			}
		}
		free(corr);
	}
	if (!ndev) {
		for (int k = 0; k < DDL_NP; k++)
			ddl_ivset_free(&set[k]);
		return -1;
	}
	for (int k = 0; k < DDL_NP; k++) {
		nomem |= set[k].nomem; /* intervals left out */
		ddl_ivset_merge(&set[k], 0);
	}
	struct ddl_parts sum = {0};
	double comm = 0;
	int64_t *pts = NULL;
	size_t cap = 0;
	const struct ddl_ivset *sets[DDL_NP] = {&set[0], &set[1], &set[2], &set[3]};
	/* the parts of DDL_PARTS each of ours is, and idle */
	static const int part_of[DDL_NP + 1] = {0, 3, 2, 1, 4};
	int pieces = r->timelines; /* until a piece finds no memory */
	for (size_t it = 0; it < p->niter; it++) {
		int64_t a = p->iter[it].start_ns, b = p->iter[it].end_ns;
		long n = ddl_ivset_cuts(sets, DDL_NP, a, b, &pts, &cap);
		if (n < 0) {
			p->incomplete = 1; /* out of memory: the rest of the iterations not split */
			break;
		}
		int64_t part[DDL_NP] = {0};
		for (long j = 0; j + 1 < n; j++) {
			int64_t lo = pts[j], hi = pts[j + 1];
			if (hi <= lo)
				continue;
			int64_t mid = lo + (hi - lo) / 2;
			if (ddl_ivset_covers(&set[DDL_P_NET], mid) || ddl_ivset_covers(&set[DDL_P_IC], mid))
				comm += (double)(hi - lo) / 1e9;
			int k = 0;
			while (k < DDL_NP && !ddl_ivset_covers(&set[k], mid))
				k++;
			if (k < DDL_NP)
				part[k] += hi - lo;
			if (it == p->shown && pieces && ddl_proc_piece(p, lo, hi, part_of[k]) < 0)
				pieces = 0;
		}
		double len = (double)(b - a) / 1e9;
		double c = (double)part[DDL_P_COMPUTE] / 1e9, nt = (double)part[DDL_P_NET] / 1e9;
		double ic = (double)part[DDL_P_IC] / 1e9, d = (double)part[DDL_P_DATA] / 1e9;
		sum.compute += c;
		sum.network_stall += nt;
		sum.interconnect_stall += ic;
		sum.data_stall += d;
		sum.idle += len - c - nt - ic - d;
		if (p->iter_parts)
			p->iter_parts[it] = (struct ddl_parts){.compute = c, .data_stall = d,
			                                       .interconnect_stall = ic, .network_stall = nt,
			                                       .idle = len - c - nt - ic - d};
	}
	free(pts);
	for (int k = 0; k < DDL_NP; k++)
		ddl_ivset_free(&set[k]);
	if (nomem)
		p->incomplete = 1;
	double n = (double)p->niter;
#define DDL_X_MEAN(f) p->per_iter.f = n > 0 ? sum.f / n : 0;
	DDL_PARTS(DDL_X_MEAN)
#undef DDL_X_MEAN
	p->comm_s = n > 0 ? comm / n : 0;
	p->overlap_s = p->comm_s - p->per_iter.network_stall - p->per_iter.interconnect_stall;
	if (p->overlap_s < 0)
		p->overlap_s = 0;
	p->gpu_breakdown = 1;
	ddl_proc_coll_per_iter(r, p);
	return 0;
}
