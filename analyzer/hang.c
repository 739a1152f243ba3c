/*
 * Hangs (ddlprof-report's "Hang" section, job.hang): a job whose ranks'
 * traces end without a clean exit (killed, timed out, crashed), looked at
 * as it stood at the end.
 *
 * Every collective record carries its number in its communicator's
 * sequence (args.aux, trace format 5), counted alike on every member; a
 * thread blocked in a call for a second or more is in the trace's last
 * open-calls chunk (DDL_CHUNK_OPEN), with the collective it is in or, for
 * a wait on the device, the last one it issued. So for every communicator
 * and member, the last collective entered (issued, for NCCL; started, for
 * host collectives) and left (host collectives returned) is known; the
 * collective a communicator is stuck in is the first one some member
 * never entered while others did, or one every member entered and none
 * left. A stuck point counts when its first member has waited in it
 * DDL_HANG_MIN_S (and five mean iterations) or more by the job's end, so
 * that a job killed mid-collective is no hang.
 *
 * The first cause is a stuck point with a missing member that is not
 * itself waiting in a stuck point (it stopped, computes, or waits outside
 * any collective: the start of the chain of waits), the one entered first
 * of those; that member is the rank most likely to blame. Without one, a
 * rank whose trace ended before the others' (it died); else, when every
 * member is inside, none: the collective itself does not complete. NCCL
 * collectives are entered when issued and never known to be left (they
 * run on the device): every one in flight at the end is a stuck point.
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"

#define DDL_HANG_MIN_S 1.0

static int ddl_hmember_cmp(const void *a, const void *b)
{
	const struct ddl_hmember *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->proc - y->proc;
}

/* The member record of (KEY, PROC) in *V, added when new; NULL without memory. */
static struct ddl_hmember *ddl_hmember_get(struct ddl_hmember **v, size_t *n, size_t *cap, uint64_t key,
                                           int proc, const struct ddl_comm_info *ci)
{
	for (size_t i = *n; i-- > 0;)
		if ((*v)[i].key == key && (*v)[i].proc == proc)
			return &(*v)[i];
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct ddl_hmember *q = realloc(*v, c * sizeof *q);
		if (!q)
			return NULL;
		*v = q;
		*cap = c;
	}
	struct ddl_hmember *m = &(*v)[(*n)++];
	*m = (struct ddl_hmember){key, proc, ci->rank, ci->nranks, 0, 0, 0};
	return m;
}

static int ddl_is_p2p(unsigned kind, unsigned op)
{
	return op == DDL_OP_SEND || op == DDL_OP_RECV || kind == DDL_EV_NCCL_SEND || kind == DDL_EV_NCCL_RECV;
}

/* The classes ddl_seq_record takes: the traces without any, and the
 * events of others, are passed over at a glance. */
#define DDL_SEQ_CLASSES \
	(1u << DDL_CLASS_HWAIT | 1u << DDL_CLASS_HCOMM | 1u << DDL_CLASS_COLL | 1u << DDL_CLASS_HCOLL)

static inline int ddl_seq_class(unsigned kind)
{
	return DDL_SEQ_CLASSES >> ddl_event_class(kind) & 1;
}

/*
 * Whether event I of T is a numbered step of a communicator's collective
 * sequence (not point to point): NCCL's and host collectives, MPI's
 * communicator calls (numbered with them), and the waits that complete
 * MPI's nonblocking all-reduce. *LEFT: the record says its process left
 * that collective (a host collective returned; a nonblocking one only when
 * its wait completes).
 */
static int ddl_seq_record(const struct ddl_trace *t, size_t i, int *left)
{
	const struct ddl_event *e = &t->ev[i];
	int cls = ddl_event_class(e->kind);
	*left = 0;
	if (cls == DDL_CLASS_HWAIT) {
		const struct ddl_args *a = ddl_event_args(t, i);
		*left = 1;
		return a && a->op == DDL_EV_MPI_IALLREDUCE;
	}
	if (cls == DDL_CLASS_HCOMM) {
		*left = 1;
		return 1;
	}
	if ((cls != DDL_CLASS_COLL && cls != DDL_CLASS_HCOLL) || ddl_is_p2p(e->kind, ddl_coll_op_of(t, i)))
		return 0;
	*left = cls == DDL_CLASS_HCOLL && e->kind != DDL_EV_MPI_IALLREDUCE;
	return 1;
}

/* How telling an open call is of what its process waits for: a host
 * collective (gloo's run on a worker thread while the training thread
 * waits for it) most; then any on the training thread (the iterations',
 * else the main one); then a wait on the device on any thread; then any
 * other. */
static int ddl_open_rank(const struct ddl_proc *p, const struct ddl_trace *t, const struct ddl_event *e)
{
	uint32_t train = p->train_tid ? p->train_tid : p->pid;
	uint32_t tid = e->tid < t->nthreads ? t->threads[e->tid].tid : 0;
	int cls = ddl_event_class(e->kind);
	if (cls == DDL_CLASS_PHASE || cls == DDL_CLASS_STEP)
		return 0; /* the Python hook's open phase: no call (ddl_open_phase) */
	if (cls == DDL_CLASS_HCOLL)
		return 4; /* the collective itself, on whichever thread runs it */
	if (tid == train)
		return 3;
	return cls == DDL_CLASS_HCOLL || cls == DDL_CLASS_GPUSYNC || cls == DDL_CLASS_COPY ? 2 : 1;
}

/* The open call (of its last image) that best says what P was doing at
 * the end: the most telling (ddl_open_rank), the longest of those; NULL
 * when its training thread is in none and no thread waits in a collective
 * or on the device (other threads' waits, a pool's idle workers, say
 * nothing of it). */
static const struct ddl_event *ddl_open_best(const struct ddl_proc *p, const struct ddl_trace **tt)
{
	if (!p->ntr)
		return NULL;
	const struct ddl_trace *t = p->tr[p->ntr - 1];
	const struct ddl_event *best = NULL;
	int best_rank = 0;
	for (size_t k = 0; k < t->nopen; k++) {
		const struct ddl_event *e = &t->open[2 * k];
		int rk = ddl_open_rank(p, t, e);
		if (rk < 2)
			continue;
		if (!best || rk > best_rank || (rk == best_rank && ddl_trace_dur_ns(t, e) > ddl_trace_dur_ns(t, best))) {
			best = e;
			best_rank = rk;
		}
	}
	*tt = t;
	return best;
}

/* The Python hook's phase open at P's end (of its last image): the
 * training thread's, else the main thread's, else any; NULL none. */
static const struct ddl_event *ddl_open_phase(const struct ddl_proc *p, const struct ddl_trace **tt)
{
	if (!p->ntr)
		return NULL;
	const struct ddl_trace *t = p->tr[p->ntr - 1];
	uint32_t train = p->train_tid ? p->train_tid : p->pid;
	const struct ddl_event *best = NULL;
	int best_rank = 0;
	for (size_t k = 0; k < t->nopen; k++) {
		const struct ddl_event *e = &t->open[2 * k];
		int cls = ddl_event_class(e->kind);
		if (cls != DDL_CLASS_PHASE && cls != DDL_CLASS_STEP)
			continue;
		uint32_t tid = e->tid < t->nthreads ? t->threads[e->tid].tid : 0;
		int rk = tid == train ? 3 : tid == p->pid ? 2 : 1;
		if (rk > best_rank) {
			best = e;
			best_rank = rk;
		}
	}
	*tt = t;
	return best;
}

/* Whether process PROC's last image ends blocked in collective SEQ of
 * communicator KEY, or waiting on the device after issuing it. */
static int ddl_waits_in(const struct ddl_report *r, int proc, uint64_t key, uint32_t seq)
{
	const struct ddl_proc *p = &r->procs[proc];
	if (!p->ntr)
		return 0;
	const struct ddl_trace *t = p->tr[p->ntr - 1];
	for (size_t k = 0; k < t->nopen; k++) {
		const struct ddl_args *a = (const struct ddl_args *)&t->open[2 * k + 1];
		const struct ddl_comm_info *ci = ddl_trace_comm(t, a->comm);
		if (ci && ci->key == key && a->aux == seq)
			return 1;
	}
	return 0;
}

/* Whether P's last image ended cleanly (exit or _exit). */
static int ddl_clean_end(const struct ddl_proc *p)
{
	if (!p->ntr)
		return 1;
	const struct ddl_trace *t = p->tr[p->ntr - 1];
	return t->ended && (t->end.reason == DDL_END_EXIT || t->end.reason == DDL_END_UEXIT);
}

/* The real-time end of P's last image: its last clock sample, or its last event's end. */
static int64_t ddl_proc_end_ns(const struct ddl_proc *p)
{
	if (!p->ntr)
		return INT64_MIN;
	const struct ddl_trace *t = p->tr[p->ntr - 1];
	int64_t end = t->nclk ? ddl_trace_real_ns(t, t->clk[t->nclk - 1].ticks) : INT64_MIN;
	ddl_trace_hold(t);
	for (size_t i = t->nev; i-- > 0 && i + 64 > t->nev;) {
		const struct ddl_event *e = &t->ev[i];
		if (e->kind == DDL_EV_ARGS || e->kind == DDL_EV_STACK || e->kind >= DDL_EV_COUNT)
			continue;
		int64_t b = ddl_trace_real_ns(t, e->start) + ddl_trace_dur_ns(t, e);
		if (b > end)
			end = b;
	}
	ddl_trace_release(t);
	return end;
}

/* Notes the collective record E (args A) of trace T of process PROC. */
static int ddl_hang_note(struct ddl_hmember **v, size_t *n, size_t *cap, const struct ddl_trace *t,
                         const struct ddl_event *e, const struct ddl_args *a, int proc, int left)
{
	const struct ddl_comm_info *ci = a ? ddl_trace_comm(t, a->comm) : NULL;
	if (!ci || !a->aux)
		return 0;
	struct ddl_hmember *m = ddl_hmember_get(v, n, cap, ci->key, proc, ci);
	if (!m)
		return -1;
	if (a->aux > m->entered) {
		m->entered = a->aux;
		m->entered_ns = ddl_trace_real_ns(t, e->start);
	}
	if (left && a->aux > m->left)
		m->left = a->aux;
	return 0;
}

/* The first record of collective SEQ on communicator KEY among the ranks: its
 * name, bytes and earliest start into PT. Only its members M[0..N) (in
 * process order) can have one: the others' events are not read. */
static void ddl_hang_find(const struct ddl_report *r, struct ddl_hangpt *pt, const struct ddl_hmember *m,
                          size_t n)
{
	pt->since_ns = INT64_MAX;
	for (size_t x = 0; x < n; x++) {
		const struct ddl_proc *p = &r->procs[m[x].proc];
		if (p->rank < 0)
			continue;
		for (size_t k = 0; k < p->ntr; k++) {
			const struct ddl_trace *t = p->tr[k];
			int seq = (ddl_trace_classes(t) & DDL_SEQ_CLASSES) != 0;
			if (seq)
				ddl_trace_hold(t);
			for (size_t y = 0, j; seq && ddl_trace_next_rare(t, &y, &j);) {
				int left;
				if (!ddl_seq_class(t->ev[j].kind) || !ddl_seq_record(t, j, &left) ||
				    ddl_event_class(t->ev[j].kind) == DDL_CLASS_HWAIT)
					continue;
				const struct ddl_args *a = ddl_event_args(t, j);
				const struct ddl_comm_info *ci = a ? ddl_trace_comm(t, a->comm) : NULL;
				if (!ci || ci->key != pt->key || a->aux != pt->seq)
					continue;
				int64_t at = ddl_trace_real_ns(t, t->ev[j].start);
				if (at < pt->since_ns) {
					pt->since_ns = at;
					const char *op = ddl_coll_op_name(ddl_coll_op_of(t, j));
					pt->op = op ? op : ddl_event_name(t->ev[j].kind);
					pt->bytes = a->bytes;
				}
			}
			if (seq)
				ddl_trace_release(t);
			for (size_t j = 0; j < t->nopen; j++) {
				const struct ddl_event *e = &t->open[2 * j];
				const struct ddl_args *a = (const struct ddl_args *)&t->open[2 * j + 1];
				const struct ddl_comm_info *ci = ddl_trace_comm(t, a->comm);
				if (!ci || ci->key != pt->key || a->aux != pt->seq || (a->flags & DDL_ARGF_LASTCOLL))
					continue;
				int64_t at = ddl_trace_real_ns(t, e->start);
				if (at < pt->since_ns) {
					pt->since_ns = at;
					const char *op = ddl_coll_op_name(ddl_coll_op_kind(e->kind));
					pt->op = op ? op : ddl_event_name(e->kind);
					pt->bytes = a->bytes;
				}
			}
		}
	}
}

void ddl_hang_free(struct ddl_hang *h)
{
	for (size_t i = 0; i < h->npts; i++) {
		free(h->pts[i].inside);
		free(h->pts[i].missing);
	}
	free(h->pts);
	free(h->members);
	for (size_t i = 0; i < h->nranks; i++) {
		for (size_t k = 0; k < h->ranks[i].nframes; k++)
			free((char *)h->ranks[i].frames[k].module);
		free(h->ranks[i].frames);
	}
	free(h->ranks);
	memset(h, 0, sizeof *h);
}

static int ddl_in_list(const int *v, size_t n, int x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

/* The processes a hang is about: the ranks, or every process of a job without. */
static int ddl_subject(const struct ddl_report *r, const struct ddl_proc *p)
{
	return p->rank >= 0 || r->nranks == 0;
}

void ddl_report_hang(struct ddl_report *r)
{
	struct ddl_hang *h = &r->hang;
	memset(h, 0, sizeof *h);
	h->blame = -1;
	int unclean = 0;
	for (size_t i = 0; i < r->nprocs && !unclean; i++) {
		const struct ddl_proc *p = &r->procs[i];
		unclean = ddl_subject(r, p) && p->ntr && !ddl_clean_end(p);
	}
	if (!unclean)
		return;
	int64_t end = INT64_MIN; /* the job's end: reads each one's last events */
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!ddl_subject(r, p) || !p->ntr)
			continue;
		int64_t e = ddl_proc_end_ns(p);
		end = e > end ? e : end;
	}
	h->end_ns = end;
	/* every member's place in every communicator's sequence */
	struct ddl_hmember *v = NULL;
	size_t n = 0, cap = 0;
	int nomem = 0;
	for (size_t i = 0; i < r->nprocs && !nomem; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (p->rank < 0)
			continue;
		for (size_t k = 0; k < p->ntr && !nomem; k++) {
			const struct ddl_trace *t = p->tr[k];
			/* every communicator it was a member of, from its first (a member
			 * that never entered one is missing from it) */
			for (size_t c = 0; c < t->ncomms && !nomem; c++)
				if (t->comms[c].id && !ddl_hmember_get(&v, &n, &cap, t->comms[c].key, (int)i, &t->comms[c]))
					nomem = 1;
			int seq = (ddl_trace_classes(t) & DDL_SEQ_CLASSES) != 0;
			if (seq)
				ddl_trace_hold(t);
			for (size_t x = 0, j; seq && !nomem && ddl_trace_next_rare(t, &x, &j);) {
				int left;
				if (ddl_seq_class(t->ev[j].kind) && ddl_seq_record(t, j, &left))
					nomem = ddl_hang_note(&v, &n, &cap, t, &t->ev[j], ddl_event_args(t, j), (int)i, left) < 0;
			}
			if (seq)
				ddl_trace_release(t);
			for (size_t j = 0; j < t->nopen && !nomem && k + 1 == p->ntr; j++) {
				const struct ddl_args *a = (const struct ddl_args *)&t->open[2 * j + 1];
				if (a->comm && !(a->flags & DDL_ARGF_LASTCOLL))
					nomem = ddl_hang_note(&v, &n, &cap, t, &t->open[2 * j], a, (int)i, 0) < 0;
			}
		}
	}
	if (nomem) {
		free(v);
		r->incomplete = 1; /* no hang analysis */
		return;
	}
	if (n)
		qsort(v, n, sizeof *v, ddl_hmember_cmp);
	h->members = v;
	h->nmembers = n;
	double min_s = DDL_HANG_MIN_S;
	if (5 * r->iter_mean_s > min_s)
		min_s = 5 * r->iter_mean_s;
	/* each communicator's stuck collective */
	for (size_t a = 0; a < n;) {
		size_t b = a;
		uint32_t top = 0, low = UINT32_MAX;
		while (b < n && v[b].key == v[a].key) {
			top = v[b].entered > top ? v[b].entered : top;
			low = v[b].entered < low ? v[b].entered : low;
			b++;
		}
		struct ddl_hangpt pt = {0};
		pt.key = v[a].key;
		pt.nranks = v[a].nranks;
		pt.members = (int)(b - a);
		/* the first one a member never entered; else the last, if none left it */
		int any_left = 0;
		for (size_t k = a; k < b; k++)
			any_left |= v[k].left >= top;
		/* every member in it and none out: a stuck collective only when some
		 * member still waits in it (an NCCL one is never known to be left:
		 * its last collective, every member's, is not stuck for that) */
		int waiting = 0;
		for (size_t k = a; k < b && low == top && !any_left; k++)
			waiting |= ddl_waits_in(r, v[k].proc, v[k].key, top);
		if (low < top)
			pt.seq = low + 1;
		else if (!any_left && waiting)
			pt.seq = top;
		if (pt.seq) {
			ddl_hang_find(r, &pt, v + a, b - a);
			pt.waiting_s = pt.since_ns == INT64_MAX ? 0 : (double)(end - pt.since_ns) / 1e9;
		}
		if (pt.seq && pt.since_ns != INT64_MAX && pt.waiting_s >= min_s) {
			pt.inside = malloc((b - a) * sizeof *pt.inside);
			pt.missing = malloc((b - a) * sizeof *pt.missing);
			struct ddl_hangpt *q = realloc(h->pts, (h->npts + 1) * sizeof *q);
			if (q)
				h->pts = q;
			if (!pt.inside || !pt.missing || !q) {
				free(pt.inside);
				free(pt.missing);
				r->incomplete = 1; /* fewer stuck points */
				break;
			}
			for (size_t k = a; k < b; k++) {
				if (v[k].entered >= pt.seq)
					pt.inside[pt.ninside++] = v[k].proc;
				else
					pt.missing[pt.nmissing++] = v[k].proc;
			}
			h->pts[h->npts++] = pt;
		}
		a = b;
	}
	/* every rank at the end */
	h->ranks = calloc(r->nprocs, sizeof *h->ranks);
	if (!h->ranks) {
		r->incomplete = 1;
		return;
	}
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!ddl_subject(r, p) || !p->ntr)
			continue;
		struct ddl_hangrank *hr = &h->ranks[h->nranks++];
		hr->proc = (int)i;
		hr->clean = ddl_clean_end(p);
		hr->end_ns = ddl_proc_end_ns(p);
		/* the training thread's last recorded call */
		const struct ddl_trace *lt = p->tr[p->ntr - 1];
		uint32_t train = p->train_tid ? p->train_tid : p->pid;
		ddl_trace_hold(lt);
		for (size_t j = lt->nev; j-- > 0;) {
			const struct ddl_event *e = &lt->ev[j];
			int cls = ddl_event_class(e->kind);
			if (cls == DDL_CLASS_ARGS || cls == DDL_CLASS_DEVICE || cls == DDL_CLASS_API ||
			    e->tid >= lt->nthreads || lt->threads[e->tid].tid != train)
				continue;
			hr->last_event = e->kind == DDL_EV_PY_PHASE ? ddl_phase_name((int)e->fd) : ddl_event_name(e->kind);
			hr->last_ago_s = (double)(end - ddl_trace_real_ns(lt, e->start) - ddl_trace_dur_ns(lt, e)) / 1e9;
			break;
		}
		ddl_trace_release(lt);
		const struct ddl_trace *t = NULL;
		const struct ddl_event *e = ddl_open_phase(p, &t);
		if (e) {
			hr->phase = e->kind == DDL_EV_PY_PHASE ? ddl_phase_name((int)e->fd) : "optimizer step";
			hr->phase_s = (double)(end - ddl_trace_real_ns(t, e->start)) / 1e9;
		}
		e = ddl_open_best(p, &t);
		if (e) {
			const struct ddl_args *a = (const struct ddl_args *)(e + 1);
			const struct ddl_comm_info *ci = ddl_trace_comm(t, a->comm);
			hr->call = ddl_event_name(e->kind);
			hr->in_s = (double)(end - ddl_trace_real_ns(t, e->start)) / 1e9;
			int cls = ddl_event_class(e->kind); /* waits keep counts in fd, CUDA's calls the device */
			hr->fd = cls == DDL_CLASS_TX || cls == DDL_CLASS_RX || cls == DDL_CLASS_CONN || cls == DDL_CLASS_FILE
			         ? e->fd : -1;
			hr->comm_key = ci ? ci->key : 0;
			hr->seq = a->aux;
			hr->last = (a->flags & DDL_ARGF_LASTCOLL) != 0;
			hr->last_call = hr->last && a->corr < DDL_EV_COUNT ? ddl_event_name(a->corr) : NULL;
			if ((a->flags & DDL_ARGF_STACK) && ddl_report_stack(r, t, a->name, &hr->frames, &hr->nframes) < 0)
				r->incomplete = 1; /* the call's stack left out */
		}
	}
	if (!h->npts) {
		/* no collective stuck: still a hang when processes were blocked
		 * in one call that long at the end (a socket job's receive from a
		 * peer that stopped); the one to blame is one that was not */
		int blocked = 0;
		for (size_t k = 0; k < h->nranks; k++)
			blocked += h->ranks[k].call && h->ranks[k].in_s >= min_s;
		if (!blocked)
			return;
		h->found = 1;
		h->calls_only = 1;
		r->hang_count = 1;
		for (size_t k = 0; k < h->nranks && h->blame < 0; k++)
			if (!h->ranks[k].call && !h->ranks[k].clean && h->nranks > 1) {
				h->blame = h->ranks[k].proc;
				h->blame_why = "not blocked";
			}
		return;
	}
	h->found = 1;
	r->hang_count = 1;
	/* the first cause: of the stuck points some member of which never
	 * entered, one of whose missing members waits in no stuck point (it is
	 * the start of the chain); else any with missing members; else any;
	 * the one entered first of those */
	size_t first = 0;
	int best = -1;
	for (size_t k = 0; k < h->npts; k++) {
		const struct ddl_hangpt *q = &h->pts[k];
		int grade = 0;
		for (size_t m = 0; m < q->nmissing; m++) {
			int waits = 0;
			for (size_t j = 0; j < h->npts; j++)
				waits |= ddl_in_list(h->pts[j].inside, h->pts[j].ninside, q->missing[m]);
			grade = grade > (waits ? 1 : 2) ? grade : (waits ? 1 : 2);
		}
		if (grade > best || (grade == best && q->since_ns < h->pts[first].since_ns)) {
			best = grade;
			first = k;
		}
	}
	h->first = (int)first;
	const struct ddl_hangpt *f = &h->pts[first];
	/* its missing rank that waits in no stuck point itself */
	for (size_t m = 0; m < f->nmissing && h->blame < 0; m++) {
		int waits = 0;
		for (size_t k = 0; k < h->npts; k++)
			waits |= ddl_in_list(h->pts[k].inside, h->pts[k].ninside, f->missing[m]);
		if (!waits) {
			h->blame = f->missing[m];
			h->blame_why = "missing";
		}
	}
	for (size_t m = 0; m < f->nmissing && h->blame < 0; m++) {
		h->blame = f->missing[m];
		h->blame_why = "missing";
	}
	if (h->blame < 0) {
		/* everyone is inside: a rank that died first, if one did */
		int64_t soonest = INT64_MAX;
		for (size_t k = 0; k < h->nranks; k++) {
			const struct ddl_hangrank *hr = &h->ranks[k];
			if (!hr->clean && hr->end_ns < soonest && (double)(end - hr->end_ns) / 1e9 >= min_s) {
				soonest = hr->end_ns;
				h->blame = hr->proc;
				h->blame_why = "ended";
			}
		}
	}
}
