/*
 * The GPU side of the report: per process, what CUDA and NCCL did (calls,
 * bytes, device time from event pairs or CUPTI); across processes, every
 * communicator with its members gathered from all traces, and whether it
 * stays inside one machine (interconnect) or spans machines (network).
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"

const char *ddl_nccl_op_name(unsigned kind)
{
	static const char *const names[DDL_NCCL_OPS] = {
	    "allreduce", "broadcast", "bcast", "reduce", "allgather", "reducescatter",
	    "alltoall", "gather", "scatter", "send", "recv"};
	if (kind < DDL_EV_NCCL_ALLREDUCE || kind > DDL_EV_NCCL_RECV)
		return NULL;
	return names[kind - DDL_EV_NCCL_ALLREDUCE];
}

static struct ddl_commjob *ddl_comm_find(struct ddl_report *r, uint64_t key)
{
	for (size_t i = 0; i < r->ncomms; i++)
		if (r->comms[i].key == key)
			return &r->comms[i];
	return NULL;
}

static int ddl_host_listed(const char *list, const char *host)
{
	size_t n = strlen(host);
	for (const char *p = list; *p;) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		if (len == n && !strncmp(p, host, n))
			return 1;
		p += len + (c != NULL);
	}
	return 0;
}

/* Gathers every communicator record of the run by key. */
static void ddl_comms_gather(struct ddl_report *r)
{
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		for (size_t k = 0; k < p->ntr; k++) {
			const struct ddl_trace *t = p->tr[k];
			for (size_t c = 1; c < t->ncomms; c++) {
				const struct ddl_comm_info *ci = &t->comms[c];
				if (!ci->id)
					continue;
				struct ddl_commjob *j = ddl_comm_find(r, ci->key);
				if (!j) {
					struct ddl_commjob *q = realloc(r->comms, (r->ncomms + 1) * sizeof *q);
					if (!q)
						return;
					r->comms = q;
					j = &r->comms[r->ncomms++];
					memset(j, 0, sizeof *j);
					j->key = ci->key;
					j->how = ci->how;
				}
				if (ci->nranks > j->nranks)
					j->nranks = ci->nranks;
				j->members++;
				if (!ddl_host_listed(j->hosts, ci->host)) {
					size_t len = strlen(j->hosts);
					if (len + strlen(ci->host) + 2 < sizeof j->hosts) {
						snprintf(j->hosts + len, sizeof j->hosts - len, "%s%s", len ? "," : "",
						         ci->host);
						j->nhosts++;
					}
				}
			}
		}
	}
	/* Two hosts among the members: it spans machines, whatever is missing.
	 * One host: inside one machine, once every member is accounted for. */
	for (size_t i = 0; i < r->ncomms; i++) {
		struct ddl_commjob *j = &r->comms[i];
		if (j->nhosts >= 2)
			j->span = DDL_SPAN_INTER;
		else if (j->nhosts == 1 && (j->members >= j->nranks || !strcmp(j->how, "all")))
			j->span = DDL_SPAN_INTRA;
		else
			j->span = DDL_SPAN_UNKNOWN;
	}
}

int ddl_comm_span(const struct ddl_report *r, const struct ddl_trace *t, uint32_t id)
{
	const struct ddl_comm_info *ci = ddl_trace_comm(t, id);
	if (!ci)
		return DDL_SPAN_UNKNOWN;
	for (size_t i = 0; i < r->ncomms; i++)
		if (r->comms[i].key == ci->key)
			return r->comms[i].span;
	return DDL_SPAN_UNKNOWN;
}

static void ddl_proc_gpu(struct ddl_report *r, struct ddl_proc *p)
{
	struct ddl_collsum *c = &p->coll;
	struct ddl_gpusum *g = &p->gpu;
	uint64_t devmask = 0;
	int cupti = 0, pairs = 0;
	for (size_t k = 0; k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			int cls = ddl_event_class(e->kind);
			if (cls < DDL_CLASS_LAUNCH || cls > DDL_CLASS_DEVICE)
				continue;
			p->has_gpu = 1;
			const struct ddl_args *a = ddl_event_args(t, i);
			double s = (double)ddl_trace_dur_ns(t, e) / 1e9;
			if (cls != DDL_CLASS_DEVICE && e->fd >= 0 && e->fd < 64)
				devmask |= 1ull << e->fd;
			switch (cls) {
			case DDL_CLASS_LAUNCH:
				g->launches++;
				g->launch_host_s += s;
				break;
			case DDL_CLASS_COPY:
				if (e->kind == DDL_EV_CUDA_MEMSET || e->kind == DDL_EV_CUDA_MEMSET_ASYNC) {
					g->memsets++;
				} else {
					g->memcpys++;
					g->memcpy_bytes += a ? a->bytes : 0;
				}
				break;
			case DDL_CLASS_GPUSYNC:
				g->syncs++;
				g->sync_host_s += s;
				break;
			case DDL_CLASS_COLL: {
				unsigned op = e->kind - DDL_EV_NCCL_ALLREDUCE;
				uint64_t b = a ? a->bytes : 0;
				c->count++;
				c->bytes += b;
				c->host_s += s;
				c->op_count[op]++;
				c->op_bytes[op] += b;
				int span = a ? ddl_comm_span(r, t, a->comm) : DDL_SPAN_UNKNOWN;
				if (span == DDL_SPAN_INTRA)
					c->intra_bytes += b;
				else if (span == DDL_SPAN_INTER)
					c->inter_bytes += b;
				else
					c->unknown_bytes += b;
				break;
			}
			case DDL_CLASS_DEVICE:
				g->device_intervals++;
				cupti |= (e->flags & DDL_EVF_CUPTI) != 0;
				pairs |= (e->flags & DDL_EVF_EVPAIR) != 0;
				if (e->kind == DDL_EV_DEV_KERNEL) {
					g->kernels_timed++;
					g->kernel_s += s;
				} else if (e->kind == DDL_EV_DEV_MEMCPY) {
					g->memcpy_s += s;
				} else if (e->kind == DDL_EV_DEV_COLL) {
					c->timed++;
					c->device_s += s;
				}
				break;
			default:
				break;
			}
		}
	}
	g->devices = __builtin_popcountll(devmask);
	g->backend = cupti && pairs ? "cupti+events" : cupti ? "cupti" : pairs ? "events" : NULL;
}

void ddl_report_gpu(struct ddl_report *r)
{
	ddl_comms_gather(r);
	for (size_t i = 0; i < r->nprocs; i++) {
		ddl_proc_gpu(r, &r->procs[i]);
		r->has_gpu |= r->procs[i].has_gpu;
	}
}
