/*
 * CUPTI's correlation: the runtime and driver records of the calls that put
 * work on the device (cuda_api events, libddlprof/cupti.c) carry the
 * correlation id that CUPTI also gives the kernels, copies and memsets
 * those calls issued. Here each device interval CUPTI timed is tied to its
 * call: how long the work waited on the device after the call returned
 * (a deep queue: the host is ahead of the GPU; none: the GPU waits on the
 * host), and whether the call was one of ours (a wrapped launch, copy or
 * memset whose interval holds the call's) or one we never saw (a statically
 * linked runtime, or a library launching through its own copy).
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* Clocks of CUPTI and of the trace are fitted to each other: allow this much either way. */
#define DDL_CORR_SLACK_NS 2000

struct ddl_api {
	uint32_t corr;
	int64_t start, end;
	int wrapped;
};

static int ddl_cmp_api(const void *a, const void *b)
{
	const struct ddl_api *x = a, *y = b;
	return x->corr < y->corr ? -1 : x->corr > y->corr;
}

static int ddl_cmp_host(const void *a, const void *b)
{
	const struct ddl_hostcall *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static uint32_t ddl_os_tid(const struct ddl_trace *t, unsigned idx)
{
	return idx < t->nthreads ? t->threads[idx].tid : 0;
}

int ddl_hostcalls_build(const struct ddl_trace *t, struct ddl_hostcalls *h)
{
	memset(h, 0, sizeof *h);
	size_t n = 0;
	for (size_t i = 0; i < t->nev; i++) {
		int cls = ddl_event_class(t->ev[i].kind);
		n += cls == DDL_CLASS_LAUNCH || cls == DDL_CLASS_COPY;
	}
	if (n && !(h->v = malloc(n * sizeof *h->v)))
		return -1;
	for (size_t i = 0; i < t->nev; i++) {
		const struct ddl_event *e = &t->ev[i];
		int cls = ddl_event_class(e->kind);
		if (cls == DDL_CLASS_LAUNCH || cls == DDL_CLASS_COPY) {
			int64_t s = ddl_trace_mono_ns(t, e->start);
			h->v[h->n++] = (struct ddl_hostcall){s, s + ddl_trace_dur_ns(t, e), ddl_os_tid(t, e->tid), i};
		} else if (cls == DDL_CLASS_API) {
			/* CUPTI's thread ids are the OS's when they name threads of this trace */
			const struct ddl_args *a = ddl_event_args(t, i);
			h->tids_known |= a && a->bytes && (uint32_t)a->bytes == ddl_os_tid(t, e->tid);
		}
	}
	if (h->n) /* qsort takes no null array, even of nothing */
		qsort(h->v, h->n, sizeof *h->v, ddl_cmp_host);
	return 0;
}

void ddl_hostcalls_free(struct ddl_hostcalls *h)
{
	free(h->v);
	memset(h, 0, sizeof *h);
}

size_t ddl_hostcalls_find(const struct ddl_hostcalls *h, const struct ddl_trace *t, size_t api)
{
	const struct ddl_event *e = &t->ev[api];
	const struct ddl_args *a = ddl_event_args(t, api);
	int64_t start = ddl_trace_mono_ns(t, e->start), end = start + ddl_trace_dur_ns(t, e);
	uint32_t tid = a ? (uint32_t)a->bytes : 0;
	/* the last call that started by the API record's start (plus slack) */
	size_t lo = 0, hi = h->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (h->v[mid].start <= start + DDL_CORR_SLACK_NS)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* launches and copies are short and do not nest: a few back is enough */
	for (size_t k = lo, n = 0; k-- > 0 && n < 64; n++) {
		if (h->v[k].end + DDL_CORR_SLACK_NS < end)
			continue;
		if (!h->tids_known || h->v[k].os_tid == tid)
			return h->v[k].ev;
	}
	return SIZE_MAX;
}

static int ddl_push_wait(struct ddl_corrsum *c, double w)
{
	if (c->nwaits == c->capwaits) {
		size_t cap = c->capwaits ? 2 * c->capwaits : 64;
		double *p = realloc(c->waits, cap * sizeof *p);
		if (!p)
			return -1;
		c->waits = p;
		c->capwaits = cap;
	}
	c->waits[c->nwaits++] = w;
	return 0;
}

/* T's CUPTI records joined to their calls, added to C; 0, or -1 without
 * memory (some or all left out). */
static int ddl_trace_correlate(const struct ddl_trace *t, struct ddl_corrsum *c)
{
	size_t napi = 0;
	int rc = 0;
	for (size_t i = 0; i < t->nev; i++)
		napi += ddl_event_class(t->ev[i].kind) == DDL_CLASS_API;
	if (!napi)
		return 0;
	struct ddl_api *api = malloc(napi * sizeof *api);
	struct ddl_hostcalls host;
	if (!api || ddl_hostcalls_build(t, &host) < 0) {
		free(api);
		return -1;
	}
	size_t na = 0;
	for (size_t i = 0; i < t->nev; i++) {
		const struct ddl_event *e = &t->ev[i];
		if (ddl_event_class(e->kind) != DDL_CLASS_API)
			continue;
		const struct ddl_args *a = ddl_event_args(t, i);
		int64_t s = ddl_trace_mono_ns(t, e->start);
		api[na++] = (struct ddl_api){(uint32_t)e->result, s, s + ddl_trace_dur_ns(t, e),
		                             ddl_hostcalls_find(&host, t, i) != SIZE_MAX};
		c->api++;
		if (a && a->op == 1 /* CUPTI_CB_DOMAIN_DRIVER_API */)
			c->api_driver++;
		if (a && a->peer != 0)
			c->api_failed++;
	}
	qsort(api, na, sizeof *api, ddl_cmp_api);
	for (size_t i = 0; i < t->nev; i++) {
		const struct ddl_event *e = &t->ev[i];
		if (ddl_event_class(e->kind) != DDL_CLASS_DEVICE || !(e->flags & DDL_EVF_CUPTI))
			continue;
		c->device++;
		struct ddl_api key = {.corr = (uint32_t)e->result};
		const struct ddl_api *a = bsearch(&key, api, na, sizeof *api, ddl_cmp_api);
		if (!a)
			continue;
		c->joined++;
		if (a->wrapped)
			c->wrapped++;
		else
			c->unwrapped++;
		double w = (double)(ddl_trace_mono_ns(t, e->start) - a->end) / 1e9;
		rc |= ddl_push_wait(c, w > 0 ? w : 0);
	}
	free(api);
	ddl_hostcalls_free(&host);
	return rc;
}

static void ddl_corr_stats(struct ddl_corrsum *c)
{
	if (!c->nwaits)
		return;
	qsort(c->waits, c->nwaits, sizeof *c->waits, ddl_cmp_double);
	c->wait_p50_s = c->waits[(c->nwaits - 1) / 2];
	c->wait_p99_s = c->waits[(size_t)((double)(c->nwaits - 1) * 0.99)];
	c->wait_max_s = c->waits[c->nwaits - 1];
}

void ddl_report_correlate(struct ddl_report *r)
{
	struct ddl_corrsum *job = &r->corr;
	for (size_t i = 0; i < r->nprocs; i++) {
		struct ddl_corrsum *c = &r->procs[i].gpu.corr;
		for (size_t k = 0; k < r->procs[i].ntr; k++) {
			if (!ddl_trace_has_class(r->procs[i].tr[k], DDL_CLASS_API))
				continue; /* no CUPTI call record: nothing to tie */
			ddl_trace_hold(r->procs[i].tr[k]);
			if (ddl_trace_correlate(r->procs[i].tr[k], c) < 0)
				r->procs[i].incomplete = 1;
			ddl_trace_release(r->procs[i].tr[k]);
		}
		job->api += c->api;
		job->api_driver += c->api_driver;
		job->api_failed += c->api_failed;
		job->device += c->device;
		job->joined += c->joined;
		job->wrapped += c->wrapped;
		job->unwrapped += c->unwrapped;
		for (size_t k = 0; k < c->nwaits; k++)
			if (ddl_push_wait(job, c->waits[k]) < 0)
				r->incomplete = 1; /* the job's waits short of some */
		ddl_corr_stats(c);
	}
	ddl_corr_stats(job);
}

void ddl_report_correlate_free(struct ddl_report *r)
{
	for (size_t i = 0; i < r->nprocs; i++) {
		free(r->procs[i].gpu.corr.waits);
		r->procs[i].gpu.corr.waits = NULL;
	}
	free(r->corr.waits);
	r->corr.waits = NULL;
}
