/*
 * The input pipeline and the training loop's phases, from the Python
 * hook's records (after the breakdown, which gave each rank its data
 * stall: the training thread's time waiting for its next batch).
 *
 * Each batch a loader makes (in one of the rank's worker processes, or on
 * the rank itself when the loader has no workers) is split into fetch,
 * the time its thread spent reading (files: read, pread, open; sockets,
 * for remote storage) and prep, the rest (decoding, transforms,
 * collation: CPU). The rank's data stall is then split in the same
 * proportion, as DS-Analyzer splits it into fetch and prep stall: a
 * fetch-bound loader wants faster storage, a prep-bound one more workers
 * or cheaper transforms (more so when its workers are busy all the time).
 * The phases give each iteration's forward (DDP's), backward and optimizer
 * time.
 */
#include <string.h>

#include "ivset.h"
#include "report.h"

#define DDL_IN_THREADS 8 /* batch-making threads of one process that are looked at */

struct ddl_in_sum {
	double batch_ns, fetch_ns;
	uint64_t batches;
	int nomem; /* reads left out: fetch counted short */
};

/* Whether event E (of class CLS) is the loader reading its data. */
static int ddl_is_read(const struct ddl_event *e, int cls)
{
	return cls == DDL_CLASS_FILE || cls == DDL_CLASS_RX || cls == DDL_CLASS_TX ||
	       cls == DDL_CLASS_CONN || (cls == DDL_CLASS_WAIT && (e->flags & DDL_EVF_SOCKWAIT));
}

static uint32_t ddl_os_tid(const struct ddl_trace *t, const struct ddl_event *e)
{
	return e->tid < t->nthreads ? t->threads[e->tid].tid : 0;
}

/* Adds the batches process Q made in [A, B) to S, each split into fetch and prep. */
static void ddl_in_batches(const struct ddl_proc *q, int64_t a, int64_t b, struct ddl_in_sum *s)
{
	uint32_t tids[DDL_IN_THREADS];
	struct ddl_ivset io[DDL_IN_THREADS];
	size_t nt = 0;
	memset(io, 0, sizeof io);
	for (int pass = 0; pass < 2; pass++)
		for (size_t k = 0; k < q->ntr; k++) {
			const struct ddl_trace *t = q->tr[k];
			for (size_t i = 0; i < t->nev; i++) {
				const struct ddl_event *e = &t->ev[i];
				uint32_t tid = ddl_os_tid(t, e);
				size_t j = 0;
				while (j < nt && tids[j] != tid)
					j++;
				int64_t ea = ddl_trace_real_ns(t, e->start), eb = ea + ddl_trace_dur_ns(t, e);
				if (pass == 0) { /* the threads that make batches */
					if (e->kind == DDL_EV_PY_PHASE && e->fd == DDL_PHASE_BATCH && j == nt &&
					    nt < DDL_IN_THREADS)
						tids[nt++] = tid;
				} else if (j < nt && ddl_is_read(e, ddl_event_class(e->kind))) {
					ddl_ivset_add(&io[j], ea, eb, 0);
				}
			}
		}
	for (size_t j = 0; j < nt; j++) {
		ddl_ivset_merge(&io[j], 0);
		s->nomem |= io[j].nomem;
	}
	for (size_t k = 0; k < q->ntr; k++) {
		const struct ddl_trace *t = q->tr[k];
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			if (e->kind != DDL_EV_PY_PHASE || e->fd != DDL_PHASE_BATCH)
				continue;
			int64_t ea = ddl_trace_real_ns(t, e->start), eb = ea + ddl_trace_dur_ns(t, e);
			if (eb <= a || ea >= b)
				continue;
			uint32_t tid = ddl_os_tid(t, e);
			size_t j = 0;
			while (j < nt && tids[j] != tid)
				j++;
			s->batches++;
			s->batch_ns += (double)(eb - ea);
			if (j < nt)
				s->fetch_ns += (double)ddl_ivset_overlap(&io[j], NULL, ea, eb, NULL, 0);
		}
	}
	for (size_t j = 0; j < nt; j++)
		ddl_ivset_free(&io[j]);
}

/* The phases of P's training thread, mean per iteration. */
static void ddl_proc_phases(struct ddl_proc *p)
{
	uint32_t tid = p->iter[0].tid ? p->iter[0].tid : p->pid;
	int64_t a = p->iter[0].start_ns, b = p->iter[p->niter - 1].end_ns;
	double fwd = 0, bwd = 0, opt = 0;
	struct ddl_ivset wait = {0}; /* a wait inside another counts once */
	int seen = 0;
	for (size_t k = 0; k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			int cls = ddl_event_class(e->kind);
			if ((cls != DDL_CLASS_PHASE && cls != DDL_CLASS_STEP) || ddl_os_tid(t, e) != tid)
				continue;
			seen = 1;
			int64_t ea = ddl_trace_real_ns(t, e->start), eb = ea + ddl_trace_dur_ns(t, e);
			if (ea < a || eb > b)
				continue;
			double d = (double)(eb - ea) / 1e9;
			if (cls == DDL_CLASS_PHASE && e->fd == DDL_PHASE_DATA_WAIT)
				ddl_ivset_add(&wait, ea, eb, 0);
			else if (cls == DDL_CLASS_STEP)
				opt += d;
			else if (e->fd == DDL_PHASE_FORWARD)
				fwd += d;
			else if (e->fd == DDL_PHASE_BACKWARD)
				bwd += d;
		}
	}
	double n = (double)p->niter;
	ddl_ivset_merge(&wait, 0);
	if (wait.nomem)
		p->incomplete = 1; /* waits left out */
	p->phases.data_wait_s = (double)ddl_ivset_length(&wait) / 1e9 / n;
	ddl_ivset_free(&wait);
	p->phases.have = seen;
	p->phases.forward_s = fwd / n;
	p->phases.backward_s = bwd / n;
	p->phases.optimizer_s = opt / n;
}

/* Whether P's training thread waited for batches (the Python hook's DATA_WAIT). */
static int ddl_proc_waited(const struct ddl_proc *p)
{
	for (size_t k = 0; k < p->ntr; k++)
		for (size_t i = 0; i < p->tr[k]->nev; i++)
			if (p->tr[k]->ev[i].kind == DDL_EV_PY_PHASE &&
			    p->tr[k]->ev[i].fd == DDL_PHASE_DATA_WAIT)
				return 1;
	return 0;
}

void ddl_report_inputs(struct ddl_report *r)
{
	for (size_t i = 0; i < r->nprocs; i++) {
		struct ddl_proc *p = &r->procs[i];
		memset(&p->in, 0, sizeof p->in);
		if (!p->niter || p->role == DDL_ROLE_WORKER || p->role == DDL_ROLE_CHILD)
			continue; /* the job's own: ranks, or a job without ranks */
		if (!ddl_proc_has_class(p, DDL_CLASS_PHASE) && !ddl_proc_has_class(p, DDL_CLASS_STEP))
			continue; /* no phase, no step: none to sum (p->phases stays zero), no wait */
		ddl_proc_hold(p);
		ddl_proc_phases(p);
		int waited = ddl_proc_waited(p);
		if (!waited)
			ddl_proc_release(p);
		if (!waited)
			continue;
		p->in.have = 1;
		int64_t a = p->iter[0].start_ns, b = p->iter[p->niter - 1].end_ns;
		struct ddl_in_sum s = {0};
		for (size_t k = 0; k < r->nprocs; k++) {
			const struct ddl_proc *q = &r->procs[k];
			if (q->role == DDL_ROLE_WORKER && q->serves_pid == p->pid && !strcmp(q->host, p->host)) {
				p->in.workers++;
				ddl_proc_hold(q);
				ddl_in_batches(q, a, b, &s);
				ddl_proc_release(q);
			}
		}
		if (!p->in.workers)
			ddl_in_batches(p, a, b, &s); /* the loader works on the training thread */
		ddl_proc_release(p);
		if (s.nomem)
			p->incomplete = 1;
		p->in.batches = s.batches;
		if (!s.batches || s.batch_ns <= 0)
			continue;
		double share = s.fetch_ns / s.batch_ns;
		p->in.batch_s = s.batch_ns / 1e9 / (double)s.batches;
		p->in.batch_fetch_s = s.fetch_ns / 1e9 / (double)s.batches;
		p->in.fetch_s = p->per_iter.data_stall * share;
		p->in.prep_s = p->per_iter.data_stall - p->in.fetch_s;
		double span = (double)(b - a) * (p->in.workers ? p->in.workers : 1);
		p->in.busy = span > 0 ? s.batch_ns / span : 0;
		if (p->in.busy > 1) /* batches begun before the first iteration, or ended after */
			p->in.busy = 1;
		p->in.bound = share >= 0.5 ? "fetch" : "prep";
	}
}
