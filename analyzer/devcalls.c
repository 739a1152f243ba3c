/*
 * The device-call model: what a device interval was (its kernel name, and
 * the part of the breakdown it feeds), found through the host call that
 * issued it (its correlation number on its thread). The call sites
 * (callsites.c), the kernel table (kernels.c) and the timelines
 * (out_chrome.c, out_html.c) read it alike.
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"

static int ddl_devcall_cmp(const void *x, const void *y)
{
	const struct ddl_devcall *p = x, *q = y;
	return p->key < q->key ? -1 : p->key > q->key;
}

static uint64_t ddl_devcall_key(unsigned tid, uint32_t corr)
{
	return (uint64_t)tid << 32 | corr;
}

/*
 * The calls that event-pair intervals refer to. A group's interval names
 * the ncclGroupEnd call; its span is the widest of the collectives grouped
 * since the outermost ncclGroupStart, as breakdown_gpu.c counts it.
 */
int ddl_devcalls_build(const struct ddl_report *r, const struct ddl_trace *t, struct ddl_devcalls *c)
{
	memset(c, 0, sizeof *c);
	size_t cap = 0;
	int group_span[1024] = {0}; /* per thread index; later indices share the last */
	for (size_t i = 0; i < t->nev; i++) {
		const struct ddl_event *e = &t->ev[i];
		int cls = ddl_event_class(e->kind);
		if (cls < DDL_CLASS_LAUNCH || cls > DDL_CLASS_NCCL)
			continue;
		const struct ddl_args *a = ddl_event_args(t, i);
		if (!a)
			continue;
		int *gs = &group_span[e->tid < 1024 ? e->tid : 1023];
		int span = DDL_SPAN_UNKNOWN;
		if (e->kind == DDL_EV_NCCL_GROUP_START && a->aux == 1)
			*gs = DDL_SPAN_UNKNOWN;
		if (cls == DDL_CLASS_COLL) {
			span = ddl_comm_span(r, t, a->comm);
			if ((a->flags & DDL_ARGF_GROUPED) && span > *gs)
				*gs = span;
		} else if (e->kind == DDL_EV_NCCL_GROUP_END) {
			span = *gs;
		}
		if (!(a->flags & DDL_ARGF_TIMED) && e->kind != DDL_EV_NCCL_GROUP_END)
			continue;
		if (c->n == cap) {
			size_t nc = cap ? cap * 2 : 256;
			struct ddl_devcall *q = realloc(c->v, nc * sizeof *q);
			if (!q) {
				ddl_devcalls_free(c);
				return -1;
			}
			c->v = q;
			cap = nc;
		}
		c->v[c->n++] = (struct ddl_devcall){ddl_devcall_key(e->tid, a->corr), i, span};
	}
	if (c->n)
		qsort(c->v, c->n, sizeof *c->v, ddl_devcall_cmp);
	/* CUPTI's records of the calls, which CUPTI's intervals name by correlation id */
	size_t napi = 0;
	for (size_t i = 0; i < t->nev; i++)
		napi += ddl_event_class(t->ev[i].kind) == DDL_CLASS_API;
	if (napi) {
		c->api = malloc(napi * sizeof *c->api);
		if (!c->api) {
			ddl_devcalls_free(c);
			return -1;
		}
		for (size_t i = 0; i < t->nev; i++)
			if (ddl_event_class(t->ev[i].kind) == DDL_CLASS_API)
				c->api[c->napi++] = (struct ddl_devcall){(uint32_t)t->ev[i].result, i, 0};
		qsort(c->api, c->napi, sizeof *c->api, ddl_devcall_cmp);
		if (ddl_hostcalls_build(t, &c->host) < 0) {
			ddl_devcalls_free(c);
			return -1;
		}
	}
	/* kernel names as kernels.c demangled them, by this trace's name ids */
	if (r->nkernels_by_name && t->nnames) {
		c->names = calloc(t->nnames, sizeof *c->names);
		if (!c->names) {
			ddl_devcalls_free(c);
			return -1;
		}
		c->nnames = t->nnames;
		for (size_t id = 0; id < t->nnames; id++) {
			const struct ddl_kernel *k = ddl_kernel_find(r, t->names[id]);
			if (k && k->demangled)
				c->names[id] = k->name;
		}
	}
	return 0;
}

void ddl_devcalls_free(struct ddl_devcalls *c)
{
	free(c->v);
	free(c->api);
	ddl_hostcalls_free(&c->host);
	free(c->names);
	memset(c, 0, sizeof *c);
}

const char *ddl_devcalls_name(const struct ddl_devcalls *c, const struct ddl_trace *t, uint32_t id)
{
	return id < c->nnames && c->names[id] ? c->names[id] : ddl_trace_name(t, id);
}

const struct ddl_devcall *ddl_devcalls_find(const struct ddl_devcalls *c, unsigned tid, uint32_t corr)
{
	struct ddl_devcall k = {ddl_devcall_key(tid, corr), 0, 0};
	return c->n ? bsearch(&k, c->v, c->n, sizeof *c->v, ddl_devcall_cmp) : NULL;
}

/* A cudaMemcpyKind, as the CUDA calls record it. */
const char *ddl_copy_kind(unsigned op)
{
	static const char *const kinds[] = {"HtoH", "HtoD", "DtoH", "DtoD", "default"};
	return op < 5 ? kinds[op] : "unknown";
}

/* A CUpti_ActivityMemcpyKind, as CUPTI's records give it. */
static const char *ddl_cupti_copy_kind(unsigned op)
{
	static const char *const kinds[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
	                                    "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
	return op < 11 ? kinds[op] : "unknown";
}

void ddl_device_info(const struct ddl_trace *t, size_t i, const struct ddl_devcalls *c,
                     struct ddl_devinfo *d)
{
	const struct ddl_event *e = &t->ev[i];
	memset(d, 0, sizeof *d);
	d->call = SIZE_MAX;
	d->api = SIZE_MAX;
	d->span = DDL_SPAN_UNKNOWN;
	if ((e->flags & DDL_EVF_CUPTI) && c->napi) {
		struct ddl_devcall k = {(uint32_t)e->result, 0, 0};
		const struct ddl_devcall *x = bsearch(&k, c->api, c->napi, sizeof *c->api, ddl_devcall_cmp);
		if (x)
			d->api = x->ev;
	}
	/* CUPTI intervals carry their own args; event pairs point at the call */
	d->args = e->flags & DDL_EVF_CUPTI ? ddl_event_args(t, i) : NULL;
	if (e->flags & DDL_EVF_EVPAIR) {
		const struct ddl_devcall *dc = ddl_devcalls_find(c, e->tid, (uint32_t)e->result);
		if (dc) {
			d->call = dc->ev;
			d->span = dc->span;
			d->args = ddl_event_args(t, dc->ev);
		}
	}
	const char *kname = d->args ? ddl_devcalls_name(c, t, d->args->name) : NULL;
	if (d->args && kname != ddl_trace_name(t, d->args->name))
		d->mangled = ddl_trace_name(t, d->args->name);
	d->name = d->buf;
	switch (e->kind) {
	case DDL_EV_DEV_KERNEL:
		d->part = DDL_DEV_COMPUTE;
		if (e->flags & DDL_EVF_RUN) /* a run of kernels, timed as one */
			snprintf(d->buf, sizeof d->buf, "kernels from %.100s", kname ? kname : "a launch");
		else
			d->name = kname ? kname : "kernel";
		break;
	case DDL_EV_DEV_MEMCPY:
		d->part = DDL_DEV_COPY;
		if (d->args)
			snprintf(d->buf, sizeof d->buf, "memcpy %s", e->flags & DDL_EVF_CUPTI
			                                                  ? ddl_cupti_copy_kind(d->args->op)
			                                                  : ddl_copy_kind(d->args->op));
		else
			d->name = "memcpy";
		break;
	case DDL_EV_DEV_COLL: {
		/* as breakdown_gpu.c: a collective not known to stay inside one machine is network */
		d->part = d->span == DDL_SPAN_INTRA ? DDL_DEV_INTRA : DDL_DEV_INTER;
		unsigned kind = d->call != SIZE_MAX ? t->ev[d->call].kind : 0;
		const char *op = ddl_nccl_op_name(kind);
		d->name = op ? op : kind == DDL_EV_NCCL_GROUP_END ? "nccl group" : "collective";
		break;
	}
	default: /* graphs, memsets and kinds newer than us run like kernels */
		d->part = DDL_DEV_COMPUTE;
		d->name = ddl_event_name(e->kind);
		break;
	}
}
