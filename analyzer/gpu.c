/*
 * The GPU and collective side of the report: per process, what CUDA did
 * (calls, bytes, device time from event pairs or CUPTI) and its collectives
 * (NCCL's, gloo's, or else the torch.distributed calls the Python hook
 * saw); across processes, every communicator with its members gathered
 * from all traces, and whether it stays inside one machine (interconnect)
 * or spans machines (network).
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"

const char *ddl_coll_op_name(unsigned op)
{
	static const char *const names[DDL_COLL_OPS] = {
	    "allreduce", "broadcast", "bcast", "reduce", "allgather", "reducescatter",
	    "alltoall", "gather", "scatter", "send", "recv", "barrier"};
	return op < DDL_COLL_OPS ? names[op] : NULL;
}

const char *ddl_nccl_op_name(unsigned kind)
{
	if (kind < DDL_EV_NCCL_ALLREDUCE || kind > DDL_EV_NCCL_RECV)
		return NULL;
	return ddl_coll_op_name(kind - DDL_EV_NCCL_ALLREDUCE);
}

int ddl_kind_is_mpi(unsigned kind)
{
	return kind >= DDL_EV_MPI_INIT && kind <= DDL_EV_MPI_COMM_FREE;
}

int ddl_coll_matched(unsigned kind)
{
	int cls = ddl_event_class(kind);
	if (cls == DDL_CLASS_COLL)
		return kind != DDL_EV_NCCL_SEND && kind != DDL_EV_NCCL_RECV;
	return cls == DDL_CLASS_HCOLL && kind != DDL_EV_MPI_SEND && kind != DDL_EV_MPI_RECV &&
	       kind != DDL_EV_MPI_ISEND && kind != DDL_EV_MPI_IRECV && kind != DDL_EV_MPI_IALLREDUCE;
}

int ddl_coll_ends_together(unsigned kind)
{
	if (ddl_event_class(kind) == DDL_CLASS_COLL)
		return 1; /* NCCL's: their device intervals, as align.c has always taken them */
	return ddl_coll_matched(kind) && (!ddl_kind_is_mpi(kind) || kind == DDL_EV_MPI_BARRIER);
}

unsigned ddl_coll_op_kind(unsigned kind)
{
	switch (kind) {
	case DDL_EV_GLOO_ALLREDUCE: case DDL_EV_MPI_ALLREDUCE: case DDL_EV_MPI_IALLREDUCE:
		return DDL_OP_ALLREDUCE;
	case DDL_EV_GLOO_BROADCAST: case DDL_EV_MPI_BCAST: return DDL_OP_BROADCAST;
	case DDL_EV_GLOO_REDUCE: case DDL_EV_MPI_REDUCE: return DDL_OP_REDUCE;
	case DDL_EV_GLOO_ALLGATHER: case DDL_EV_GLOO_ALLGATHERV: case DDL_EV_MPI_ALLGATHER:
	case DDL_EV_MPI_ALLGATHERV:
		return DDL_OP_ALLGATHER;
	case DDL_EV_MPI_REDUCE_SCATTER: case DDL_EV_MPI_REDUCE_SCATTER_BLOCK: return DDL_OP_REDUCESCATTER;
	case DDL_EV_GLOO_GATHER: return DDL_OP_GATHER;
	case DDL_EV_GLOO_SCATTER: return DDL_OP_SCATTER;
	case DDL_EV_GLOO_ALLTOALL: case DDL_EV_GLOO_ALLTOALLV: case DDL_EV_MPI_ALLTOALL:
	case DDL_EV_MPI_ALLTOALLV:
		return DDL_OP_ALLTOALL;
	case DDL_EV_GLOO_BARRIER: case DDL_EV_MPI_BARRIER: return DDL_OP_BARRIER;
	case DDL_EV_MPI_SEND: case DDL_EV_MPI_ISEND: return DDL_OP_SEND;
	case DDL_EV_MPI_RECV: case DDL_EV_MPI_IRECV: return DDL_OP_RECV;
	default:
		if (kind >= DDL_EV_NCCL_ALLREDUCE && kind <= DDL_EV_NCCL_RECV)
			return kind - DDL_EV_NCCL_ALLREDUCE;
		return DDL_COLL_OPS;
	}
}

unsigned ddl_coll_op_of(const struct ddl_trace *t, size_t i)
{
	const struct ddl_event *e = &t->ev[i];
	int cls = ddl_event_class(e->kind);
	if (cls == DDL_CLASS_HWAIT) { /* an MPI wait: its start's operation */
		const struct ddl_args *a = ddl_event_args(t, i);
		return a && a->op ? ddl_coll_op_kind(a->op) : DDL_COLL_OPS;
	}
	if (e->kind == DDL_EV_PY_PHASE) {
		/* enum ddl_pyop, 1 .. 11 */
		static const unsigned py[] = {DDL_COLL_OPS, DDL_OP_ALLREDUCE, DDL_OP_BROADCAST,
		                              DDL_OP_REDUCE, DDL_OP_ALLGATHER, DDL_OP_GATHER,
		                              DDL_OP_SCATTER, DDL_OP_REDUCESCATTER, DDL_OP_ALLTOALL,
		                              DDL_OP_BARRIER, DDL_OP_SEND, DDL_OP_RECV};
		const struct ddl_args *a = e->fd == DDL_PHASE_COLLECTIVE ? ddl_event_args(t, i) : NULL;
		return a && a->op < sizeof py / sizeof py[0] ? py[a->op] : DDL_COLL_OPS;
	}
	return ddl_coll_op_kind(e->kind);
}

/* The name of a phase of the Python hook's (enum ddl_phase). */
const char *ddl_phase_name(int phase)
{
	static const char *const names[] = {"a phase", "data wait", "forward", "backward", "batch",
	                                    "torch.distributed call"};
	return phase > 0 && phase < (int)(sizeof names / sizeof names[0]) ? names[phase] : names[0];
}

/*
 * Whether event I of T is a collective this process's summary counts:
 * NCCL's, gloo's and MPI's always (MPI's waits are not: a nonblocking
 * operation counts at its start, with its bytes); torch.distributed calls
 * where PY says so: all of them (DDL_PY_ALL: the process had none of the
 * libraries' records), or only the point-to-point ones (DDL_PY_P2P: gloo's
 * sends and receives are not calls of gloo's API, so only the Python calls
 * show them; MPI's are MPI's).
 */
enum { DDL_PY_NONE, DDL_PY_P2P, DDL_PY_ALL };

static int ddl_counted_coll(const struct ddl_trace *t, size_t i, int py)
{
	const struct ddl_event *e = &t->ev[i];
	int cls = ddl_event_class(e->kind);
	if (cls == DDL_CLASS_COLL || cls == DDL_CLASS_HCOLL)
		return 1;
	if (py == DDL_PY_NONE || e->kind != DDL_EV_PY_PHASE || e->fd != DDL_PHASE_COLLECTIVE)
		return 0;
	unsigned op = ddl_coll_op_of(t, i);
	return py == DDL_PY_ALL || op == DDL_OP_SEND || op == DDL_OP_RECV;
}

/* What ddl_counted_coll counts of a process's torch.distributed calls. */
static int ddl_py_counted(const struct ddl_collsum *c)
{
	return !c->py_calls ? DDL_PY_NONE : !c->nccl && !c->hcoll ? DDL_PY_ALL
	       : !c->nccl && !c->mpi ? DDL_PY_P2P : DDL_PY_NONE;
}

int ddl_proc_coll_counted(const struct ddl_proc *p, const struct ddl_trace *t, size_t i)
{
	return ddl_counted_coll(t, i, ddl_py_counted(&p->coll));
}

size_t ddl_coll_elem_size(const struct ddl_trace *t, size_t i)
{
	/* ncclDataType_t, int8 .. float8e5m2, as nccl.h numbers them */
	static const unsigned char nccl[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
	const struct ddl_args *a = ddl_event_args(t, i);
	if (!a)
		return 0;
	if (ddl_event_class(t->ev[i].kind) == DDL_CLASS_COLL)
		return a->dtype < sizeof nccl ? nccl[a->dtype] : 0;
	return a->dtype; /* gloo's and torch's: the bytes per element */
}

const char *ddl_nccl_redop_name(unsigned kind, unsigned op)
{
	static const char *const ops[] = {"sum", "prod", "max", "min", "avg"};
	if (kind != DDL_EV_NCCL_ALLREDUCE && kind != DDL_EV_NCCL_REDUCE &&
	    kind != DDL_EV_NCCL_REDUCESCATTER)
		return NULL; /* the others take no reduction: their op is 0 */
	return op < 5 ? ops[op] : NULL;
}

/* Adds collective I of T to C. */
static void ddl_coll_add(const struct ddl_report *r, struct ddl_collsum *c,
                         const struct ddl_trace *t, size_t i)
{
	const struct ddl_args *a = ddl_event_args(t, i);
	unsigned op = ddl_coll_op_of(t, i);
	uint64_t b = a ? a->bytes : 0;
	c->count++;
	c->bytes += b;
	c->host_s += (double)ddl_trace_dur_ns(t, &t->ev[i]) / 1e9;
	if (op < DDL_COLL_OPS) {
		c->op_count[op]++;
		c->op_bytes[op] += b;
	}
	int span = a ? ddl_comm_span(r, t, a->comm) : DDL_SPAN_UNKNOWN;
	if (span == DDL_SPAN_INTRA)
		c->intra_bytes += b;
	else if (span == DDL_SPAN_INTER)
		c->inter_bytes += b;
	else
		c->unknown_bytes += b;
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

/* Adds HOST to J's hosts. */
static void ddl_comm_host_add(struct ddl_commjob *j, const char *host)
{
	if (ddl_host_listed(j->hosts, host))
		return;
	size_t len = strlen(j->hosts);
	if (len + strlen(host) + 2 < sizeof j->hosts) {
		snprintf(j->hosts + len, sizeof j->hosts - len, "%s%s", len ? "," : "", host);
		j->nhosts++;
	}
}

/* A rank process's rank and host. */
struct ddl_rankhost {
	int rank;
	const char *host;
};

static int ddl_rankhost_cmp(const void *a, const void *b)
{
	const struct ddl_rankhost *x = a, *y = b;
	return (x->rank > y->rank) - (x->rank < y->rank);
}

/*
 * The hosts of J's members from the global ranks its record lists (RANKS,
 * as ddlprof-trace(5) writes them) and the ranks' processes (RH, N of
 * them, by rank): added to J's; 1 when the list is whole, names J's
 * nranks members, and every one of them has a trace. *BUDGET members are
 * looked up at most, over all communicators (a trace may claim any
 * number): past it, 0.
 */
static int ddl_comm_hosts_of(struct ddl_commjob *j, const char *ranks, const struct ddl_rankhost *rh,
                             size_t n, long *budget)
{
	long members = 0, cap = j->nranks > 0 && j->nranks < (1 << 20) ? j->nranks : 1 << 20;
	int all = 1;
	for (const char *p = ranks; *p;) {
		char *end;
		long a = strtol(p, &end, 10), b = a, step = 1;
		if (end == p || a < 0)
			return 0; /* "+": cut short */
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		if (*end == ':')
			step = strtol(end + 1, &end, 10);
		if (b < a || step < 1 || (*end && *end != ','))
			return 0;
		for (long k = a; k <= b; k += step) {
			if (++members > cap || --*budget < 0)
				return 0;
			struct ddl_rankhost want = {(int)k, NULL};
			const struct ddl_rankhost *hit = n ? bsearch(&want, rh, n, sizeof *rh, ddl_rankhost_cmp) : NULL;
			if (hit)
				ddl_comm_host_add(j, hit->host);
			else
				all = 0;
		}
		p = *end ? end + 1 : end;
	}
	return all && members == j->nranks;
}

/* Gathers every communicator record of the run by key. */
static void ddl_comms_gather(struct ddl_report *r)
{
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (p->role == DDL_ROLE_WORKER || p->role == DDL_ROLE_CHILD)
			continue; /* a forked copy of its rank's records, not a member */
		for (size_t k = 0; k < p->ntr; k++) {
			const struct ddl_trace *t = p->tr[k];
			for (size_t c = 1; c < t->ncomms; c++) {
				const struct ddl_comm_info *ci = &t->comms[c];
				if (!ci->id)
					continue;
				struct ddl_commjob *j = ddl_comm_find(r, ci->key);
				if (!j) {
					struct ddl_commjob *q = realloc(r->comms, (r->ncomms + 1) * sizeof *q);
					if (!q) {
						r->incomplete = 1; /* communicators of unknown span */
						return;
					}
					r->comms = q;
					j = &r->comms[r->ncomms++];
					memset(j, 0, sizeof *j);
					j->key = ci->key;
					j->how = ci->how;
				}
				if (ci->nranks > j->nranks)
					j->nranks = ci->nranks;
				j->members++;
				if (!j->ranks && ci->ranks && !strcmp(ci->how, "mpi"))
					j->ranks = ci->ranks;
				ddl_comm_host_add(j, ci->host);
			}
		}
	}
	/* MPI's communicators list their members' MPI_COMM_WORLD ranks: each
	 * one's host is that of the rank's trace (its header's rank and host),
	 * the members whose traces hold no record of it (they never used it
	 * under ddlprof) included */
	struct ddl_rankhost *rh = malloc((r->nprocs ? r->nprocs : 1) * sizeof *rh);
	size_t nrh = 0;
	if (!rh)
		r->incomplete = 1; /* hosts from the members' own records only */
	for (size_t i = 0; rh && i < r->nprocs; i++)
		if (r->procs[i].role == DDL_ROLE_RANK && r->procs[i].rank >= 0)
			rh[nrh++] = (struct ddl_rankhost){r->procs[i].rank, r->procs[i].host};
	if (nrh)
		qsort(rh, nrh, sizeof *rh, ddl_rankhost_cmp);
	long budget = 1l << 22;
	/* Two hosts among the members: it spans machines, whatever is missing.
	 * One host: inside one machine, once every member is accounted for. */
	for (size_t i = 0; i < r->ncomms; i++) {
		struct ddl_commjob *j = &r->comms[i];
		int known = rh && j->ranks && ddl_comm_hosts_of(j, j->ranks, rh, nrh, &budget);
		if (j->nhosts >= 2)
			j->span = DDL_SPAN_INTER;
		else if (j->nhosts == 1 && (j->members >= j->nranks || !strcmp(j->how, "all") || known))
			j->span = DDL_SPAN_INTRA;
		else
			j->span = DDL_SPAN_UNKNOWN;
	}
	free(rh);
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
		for (size_t x = 0, i; ddl_trace_next_rare(t, &x, &i);) {
			const struct ddl_event *e = &t->ev[i];
			int cls = ddl_event_class(e->kind);
			if (cls == DDL_CLASS_HCOLL) {
				ddl_coll_add(r, c, t, i);
				c->hcoll++;
				c->mpi += ddl_kind_is_mpi(e->kind);
				continue;
			}
			if (e->kind == DDL_EV_PY_PHASE && e->fd == DDL_PHASE_COLLECTIVE) {
				const struct ddl_args *a = ddl_event_args(t, i);
				c->py_calls++;
				c->py_bytes += a ? a->bytes : 0;
				continue;
			}
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
			case DDL_CLASS_COLL:
				ddl_coll_add(r, c, t, i);
				c->nccl++;
				break;
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
	/* which libraries' calls: NCCL's, gloo's, MPI's (bits 0, 1, 2) */
	static const char *const libs[] = {NULL, "nccl", "gloo", "nccl+gloo", "mpi", "nccl+mpi",
	                                   "gloo+mpi", "nccl+gloo+mpi"};
	c->source = libs[(c->nccl != 0) | (c->hcoll > c->mpi) << 1 | (c->mpi != 0) << 2];
	if (!c->source && c->py_calls)
		c->source = "torch";
	int py = ddl_py_counted(c); /* what neither library shows: the calls themselves */
	for (size_t k = 0; py && k < p->ntr; k++)
		for (size_t x = 0, i; ddl_trace_next_rare(p->tr[k], &x, &i);)
			if (p->tr[k]->ev[i].kind == DDL_EV_PY_PHASE && ddl_counted_coll(p->tr[k], i, py))
				ddl_coll_add(r, c, p->tr[k], i);
}

void ddl_proc_coll_per_iter(const struct ddl_report *r, struct ddl_proc *p)
{
	double calls = 0, bytes = 0, intra = 0, inter = 0, op_calls[DDL_COLL_OPS] = {0},
	       op_bytes[DDL_COLL_OPS] = {0};
	int py = ddl_py_counted(&p->coll);
	/* none of the classes counted: nothing to look for */
	int any = (ddl_proc_classes(p) & (1u << DDL_CLASS_COLL | 1u << DDL_CLASS_HCOLL | 1u << DDL_CLASS_PHASE)) != 0;
	for (size_t k = 0; any && k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		for (size_t x = 0, i; ddl_trace_next_rare(t, &x, &i);) {
			const struct ddl_event *e = &t->ev[i];
			if (!ddl_counted_coll(t, i, py))
				continue;
			if (ddl_proc_iter_at(p, ddl_trace_real_ns(t, e->start)) == SIZE_MAX)
				continue;
			const struct ddl_args *a = ddl_event_args(t, i);
			double b = a ? (double)a->bytes : 0;
			int span = a ? ddl_comm_span(r, t, a->comm) : DDL_SPAN_UNKNOWN;
			calls++;
			bytes += b;
			if (span == DDL_SPAN_INTRA)
				intra += b;
			else if (span == DDL_SPAN_INTER)
				inter += b;
			unsigned op = ddl_coll_op_of(t, i);
			if (op < DDL_COLL_OPS) {
				op_calls[op]++;
				op_bytes[op] += b;
			}
		}
	}
	double n = p->niter ? (double)p->niter : 1;
	for (unsigned op = 0; op < DDL_COLL_OPS; op++) {
		p->coll_op_calls[op] = op_calls[op] / n;
		p->coll_op_bytes[op] = op_bytes[op] / n;
	}
	p->coll_calls = calls / n;
	p->coll_bytes = bytes / n;
	p->coll_intra_bytes = intra / n;
	p->coll_inter_bytes = inter / n;
}

void ddl_report_gpu(struct ddl_report *r)
{
	ddl_comms_gather(r);
	/* the classes ddl_proc_gpu looks at: without any, it finds nothing (and
	 * leaves the summaries zero, as they are) */
	uint32_t look = 1u << DDL_CLASS_HCOLL | 1u << DDL_CLASS_PHASE;
	for (int c = DDL_CLASS_LAUNCH; c <= DDL_CLASS_DEVICE; c++)
		look |= 1u << c;
	for (size_t i = 0; i < r->nprocs; i++) {
		if (!(ddl_proc_classes(&r->procs[i]) & look))
			continue;
		ddl_proc_hold(&r->procs[i]);
		ddl_proc_gpu(r, &r->procs[i]);
		ddl_proc_release(&r->procs[i]);
		r->has_gpu |= r->procs[i].has_gpu;
	}
}
