/*
 * Stall attribution for jobs without a GPU (DESIGN.md section 7, from the
 * training thread's side). In each iteration the training thread (the one
 * whose steps or marker ranges make the iterations, or the main thread)
 * is either waiting for its next batch, or running, or blocked: in a
 * socket call, a poll/select/epoll wait, a condition variable (a gloo or
 * MPI thread moving its bytes), a file read, a collective or an MPI call
 * of its own (MPI's progress loop spins between its socket calls, so the
 * whole call is blocked time, not only the socket calls inside it). Time in the DataLoader's
 * next() (the Python hook's batch waits) is data stall, whatever the thread
 * did meanwhile. Blocked time while the process's traffic is in flight is
 * network stall when that traffic goes to other hosts, interconnect stall
 * when it stays on this one, and is put down to the collectives (gloo's,
 * MPI's, or torch.distributed calls; an MPI wait's to its start's
 * operation) running then; blocked time with no traffic
 * in flight is idle (among it, waiting for a peer that is still
 * computing); the rest is compute. When traffic is in flight is flight.c's
 * answer: seen from both ends of each connection, so the time bytes spend
 * crossing a slow link counts though no call of this process is running
 * then. The parts add up to the iteration exactly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddlprof/rate.h"
#include "ivset.h"
#include "report.h"

/* E, of T, is a send that moved bytes inside one of P's iterations; LAST
 * as ddl_proc_iter_near keeps it. */
static int ddl_sent_in_iteration(const struct ddl_proc *p, const struct ddl_trace *t,
                                 const struct ddl_event *e, size_t *last)
{
	return ddl_event_class(e->kind) == DDL_CLASS_TX && e->result > 0 &&
	       ddl_proc_iter_near(p, ddl_trace_real_ns(t, e->start), last) != SIZE_MAX;
}

int ddl_class_blocks(int cls)
{
	return cls == DDL_CLASS_TX || cls == DDL_CLASS_RX || cls == DDL_CLASS_WAIT ||
	       cls == DDL_CLASS_CONN || cls == DDL_CLASS_SYNC || cls == DDL_CLASS_FILE ||
	       cls == DDL_CLASS_HCOLL || cls == DDL_CLASS_HWAIT || cls == DDL_CLASS_HCOMM;
}

/*
 * Stall in [LO, HI) of the training thread's blocked time: what the flight
 * windows W cover of it, into *NET (remote) or *IC, and of that what each
 * collective operation's intervals OPS cover, into BY_OP (never more than
 * the stall itself: collectives running together share it).
 */
static void ddl_stall_piece(const struct ddl_ivset *w, size_t *wi, const struct ddl_ivset *ops,
                            const int *act, int nact, int64_t lo, int64_t hi, int64_t *net,
                            int64_t *ic, int64_t *by_op)
{
	size_t i = *wi;
	while (i < w->n && w->v[i].b <= lo)
		i++;
	*wi = i;
	for (; i < w->n && w->v[i].a < hi; i++) {
		int64_t x = w->v[i].a > lo ? w->v[i].a : lo, y = w->v[i].b < hi ? w->v[i].b : hi;
		if (y <= x)
			continue;
		*(w->v[i].tag ? net : ic) += y - x;
		int64_t part[DDL_COLL_OPS], sum = 0;
		for (int k = 0; k < nact; k++)
			sum += part[k] = ddl_ivset_overlap(&ops[act[k]], NULL, x, y, NULL, 0);
		for (int k = 0; k < nact; k++)
			by_op[act[k]] += sum > y - x
			                     ? (int64_t)((double)part[k] * (double)(y - x) / (double)sum)
			                     : part[k];
	}
}

int ddl_proc_piece(struct ddl_proc *p, int64_t a, int64_t b, int part)
{
	if (b <= a)
		return 0;
	struct ddl_piece *last = p->npieces ? &p->pieces[p->npieces - 1] : NULL;
	if (last && last->part == part && last->b == a) {
		last->b = b;
		return 0;
	}
	/* room for 8, then doubled each time it is full */
	if (!p->npieces || (p->npieces >= 8 && !(p->npieces & (p->npieces - 1)))) {
		struct ddl_piece *q = realloc(p->pieces, (p->npieces ? 2 * p->npieces : 8) * sizeof *q);
		if (!q) {
			free(p->pieces);
			p->pieces = NULL;
			p->npieces = 0;
			p->incomplete = 1; /* the timelines draw no pieces of it */
			return -1;
		}
		p->pieces = q;
	}
	p->pieces[p->npieces++] = (struct ddl_piece){a, b, part};
	return 0;
}

/* The window of W holding instant X, or NULL. */
static const struct ddl_iv *ddl_window_at(const struct ddl_ivset *w, int64_t x)
{
	size_t i = ddl_ivset_find(w, x);
	return i < w->n && w->v[i].a <= x ? &w->v[i] : NULL;
}

/* The pieces of iteration [A, B) on the training thread: its data waits
 * DATA, its blocked time BLK (less the waits) by what the windows W say
 * of it, and the rest compute, as ddl_proc_breakdown counts them. */
static void ddl_cpu_pieces(struct ddl_proc *p, const struct ddl_ivset *data,
                           const struct ddl_ivset *blk, const struct ddl_ivset *w, int64_t a,
                           int64_t b)
{
	int64_t *pts = NULL;
	size_t cap = 0;
	const struct ddl_ivset *sets[] = {data, blk, w};
	long n = ddl_ivset_cuts(sets, 3, a, b, &pts, &cap);
	if (n < 0)
		p->incomplete = 1; /* without memory: no pieces, the timelines draw none */
	for (long j = 0; j + 1 < n; j++) {
		int64_t lo = pts[j], hi = pts[j + 1], mid = lo + (hi - lo) / 2;
		if (hi <= lo)
			continue;
		const struct ddl_iv *in = ddl_window_at(w, mid);
		int part = ddl_ivset_covers(data, mid) ? 1
		           : !ddl_ivset_covers(blk, mid) ? 0
		           : in ? (in->tag ? 3 : 2) : 4;
		if (ddl_proc_piece(p, lo, hi, part) < 0)
			break;
	}
	free(pts);
}

/* P's parts, with FL the windows when its traffic is in flight (flight.c). */
static void ddl_proc_breakdown(const struct ddl_report *r, struct ddl_proc *p,
                               const struct ddl_ivset *fl)
{
	struct ddl_ivset blk, data, ops[DDL_COLL_OPS];
	const struct ddl_ivset none = {0}, *win = fl ? fl : &none; /* without memory: blocked time is idle */
	_Static_assert(2 + DDL_COLL_OPS <= DDL_IVSET_SLOTS, "a slot for each set");
	/* the room the thread's last process had (ivset.h): slots 0, 1, 2 on */
	ddl_ivset_reuse(&blk, 0);
	ddl_ivset_reuse(&data, 1);
	for (int op = 0; op < DDL_COLL_OPS; op++)
		ddl_ivset_reuse(&ops[op], 2 + op);
	uint32_t tid = p->train_tid;
	double bytes = 0; /* sent inside the iterations */
	int host_colls = p->coll.hcoll > 0; /* gloo's own records, and the Python calls of the rest */
	/* the sets are asked only inside the iterations: what lies wholly
	 * before the first one's start or after the last one's end (the
	 * warm-up, a hang's last call spinning in poll) is not kept */
	int64_t lo = p->iter[0].start_ns, hi = p->iter[0].end_ns;
	for (size_t k = 1; k < p->niter; k++) {
		lo = p->iter[k].start_ns < lo ? p->iter[k].start_ns : lo;
		hi = p->iter[k].end_ns > hi ? p->iter[k].end_ns : hi;
	}
	size_t near = SIZE_MAX; /* the iteration of the last send (ddl_proc_iter_near) */
	for (size_t k = 0; k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			int c = ddl_event_class(e->kind);
			int64_t a = ddl_trace_real_ns(t, e->start), b = a + ddl_trace_dur_ns(t, e);
			if (ddl_sent_in_iteration(p, t, e, &near))
				bytes += (double)e->result;
			if (b <= lo || a >= hi)
				continue;
			uint32_t etid = e->tid < t->nthreads ? t->threads[e->tid].tid : 0;
			unsigned op = c == DDL_CLASS_HCOLL || c == DDL_CLASS_HWAIT ||
			              (e->kind == DDL_EV_PY_PHASE && e->fd == DDL_PHASE_COLLECTIVE)
			              ? ddl_coll_op_of(t, i) : DDL_COLL_OPS;
			/* a Python call that gloo or MPI ran is in their record already */
			if (op < DDL_COLL_OPS && (c == DDL_CLASS_HCOLL || c == DDL_CLASS_HWAIT || !host_colls ||
			                          op == DDL_OP_SEND || op == DDL_OP_RECV))
				ddl_ivset_add(&ops[op], a, b, 0);
			if (etid != tid)
				continue;
			if (e->kind == DDL_EV_PY_PHASE && e->fd == DDL_PHASE_DATA_WAIT)
				ddl_ivset_add(&data, a, b, 0);
			else if (ddl_class_blocks(c))
				ddl_ivset_add(&blk, a, b, 0);
		}
	}
	ddl_ivset_merge(&blk, 0);
	ddl_ivset_merge(&data, 0);
	for (int op = 0; op < DDL_COLL_OPS; op++)
		ddl_ivset_merge(&ops[op], 0);
	int nomem = blk.nomem || data.nomem; /* intervals left out: the parts are not all there */
	for (int op = 0; op < DDL_COLL_OPS; op++)
		nomem |= ops[op].nomem;
	if (ddl_ivset_subtract(&blk, &data) < 0) {
		nomem = 1;
		ddl_ivset_free(&data); /* without memory: no data stall, rather than counted twice */
	}
	if (nomem)
		p->incomplete = 1;
	struct ddl_parts sum = {0};
	double traffic = 0, hidden = 0;
	int64_t by_op[DDL_COLL_OPS] = {0}, stall_all = 0;
	int act[DDL_COLL_OPS], nact = 0; /* the operations run: most jobs run one or two */
	for (int op = 0; op < DDL_COLL_OPS; op++)
		if (ops[op].n)
			act[nact++] = op;
	size_t bi = 0, wi = 0, di = 0;
	for (size_t k = 0; k < p->niter; k++) {
		int64_t a = p->iter[k].start_ns, b = p->iter[k].end_ns;
		int64_t blocked = 0, net = 0, ic = 0;
		int64_t d = ddl_ivset_overlap(&data, &di, a, b, NULL, 0);
		while (bi < blk.n && blk.v[bi].b <= a)
			bi++;
		/* the blocked intervals are disjoint and in order: each one's first
		 * window is at or past the one before's */
		size_t from = wi;
		for (size_t j = bi; j < blk.n && blk.v[j].a < b; j++) {
			int64_t lo = blk.v[j].a > a ? blk.v[j].a : a, hi = blk.v[j].b < b ? blk.v[j].b : b;
			if (hi <= lo)
				continue;
			blocked += hi - lo;
			ddl_stall_piece(win, &from, ops, act, nact, lo, hi, &net, &ic, by_op);
		}
		stall_all += net + ic;
		while (wi < win->n && win->v[wi].b <= a)
			wi++;
		from = wi;
		int64_t flying = ddl_ivset_overlap(win, &from, a, b, NULL, 0), waiting = 0;
		/* traffic while the thread waits for its data is hidden under nothing */
		for (size_t j = ddl_ivset_find(&data, a); j < data.n && data.v[j].a < b; j++)
			waiting += ddl_ivset_overlap(win, NULL, data.v[j].a > a ? data.v[j].a : a,
			                             data.v[j].b < b ? data.v[j].b : b, NULL, 0);
		traffic += (double)flying / 1e9;
		hidden += (double)(flying - net - ic - waiting) / 1e9;
		if (k == p->shown && r->timelines)
			ddl_cpu_pieces(p, &data, &blk, win, a, b);
		double len = (double)(b - a) / 1e9;
		struct ddl_parts it = {.compute = len - (double)(blocked + d) / 1e9,
		                       .data_stall = (double)d / 1e9,
		                       .interconnect_stall = (double)ic / 1e9,
		                       .network_stall = (double)net / 1e9,
		                       .idle = (double)(blocked - net - ic) / 1e9};
#define DDL_X_ADD(f) sum.f += it.f;
		DDL_PARTS(DDL_X_ADD)
#undef DDL_X_ADD
		if (p->iter_parts)
			p->iter_parts[k] = it;
	}
	ddl_ivset_keep(&blk, 0);
	ddl_ivset_keep(&data, 1);
	for (int op = 0; op < DDL_COLL_OPS; op++)
		ddl_ivset_keep(&ops[op], 2 + op);
	double n = (double)p->niter;
	p->traffic_s = traffic / n;
	p->comm_s = p->traffic_s;
	p->overlap_s = hidden > 0 ? hidden / n : 0;
	p->bytes_sent = bytes / n;
	int64_t put = 0;
	for (int op = 0; op < DDL_COLL_OPS; op++) {
		p->coll_stall_s[op] = (double)by_op[op] / 1e9 / n;
		put += by_op[op];
	}
	p->coll_stall_other_s = (double)(stall_all - put) / 1e9 / n;
#define DDL_X_MEAN(f) p->per_iter.f = sum.f / n;
	DDL_PARTS(DDL_X_MEAN)
#undef DDL_X_MEAN
	ddl_proc_coll_per_iter(r, p);
}

/*
 * Network sensitivity: the iteration time predicted at each placement
 * level from what this run measured. A rank sends B bytes an iteration;
 * over a link of bandwidth bw that takes B/bw. Of the traffic time W this
 * run measured, the part not stalled (W - S, S the interconnect and network
 * stall) was hidden under compute, and would hide as much again:
 *     T(level) = T - S + max(0, B / bw(level) - (W - S))
 * slowdown(level) = T(level) / T(machine); score = 1 - T(machine)/T(cluster),
 * the share of time lost when the job spreads over several racks.
 */
struct ddl_sens_in {
	double t, s, w, b; /* means over the ranks with iterations */
};

/* The inputs of the prediction; 0 when the run has no iterations or sent nothing. */
static int ddl_sens_inputs(const struct ddl_report *r, struct ddl_sens_in *in)
{
	double t = 0, s = 0, w = 0, b = 0;
	size_t np = 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!p->niter)
			continue;
		t += p->iter_mean_s;
		s += p->per_iter.network_stall + p->per_iter.interconnect_stall;
		if (p->gpu_breakdown) {
			/* a ring moves 2(n-1)/n of each all-reduced buffer over every link */
			double n = r->nranks > 1 ? r->nranks : 2;
			w += p->comm_s;
			b += p->coll_bytes * 2 * (n - 1) / n;
		} else {
			w += p->traffic_s;
			b += p->bytes_sent;
		}
		np++;
	}
	if (!np || b <= 0)
		return 0;
	*in = (struct ddl_sens_in){t / (double)np, s / (double)np, w / (double)np, b / (double)np};
	return 1;
}

/* T(bw), the equation above, for a link of BW bytes/s. */
static double ddl_sens_predict(const struct ddl_sens_in *in, double bw)
{
	double hidden = in->w > in->s ? in->w - in->s : 0, comm = in->b / bw;
	return in->t - in->s + (comm > hidden ? comm - hidden : 0);
}

static void ddl_report_sensitivity(struct ddl_report *r)
{
	struct ddl_sens_in in;
	if (!ddl_sens_inputs(r, &in))
		return;
	for (int l = 0; l < 3; l++)
		r->predicted_s[l] = ddl_sens_predict(&in, r->bw[l]);
	for (int l = 0; l < 3; l++)
		r->slowdown[l] = r->predicted_s[l] / r->predicted_s[DDL_LEVEL_MACHINE];
	r->sensitivity = 1 - r->predicted_s[DDL_LEVEL_MACHINE] / r->predicted_s[DDL_LEVEL_CLUSTER];
	r->have_sensitivity = 1;
}

/*
 * The rate of ddlprof --perturb-net rate=R as a trace recorded it, in
 * bytes/s; < 0 if bad. By ddlprof/rate.h's rule, the library's; but for the
 * KB, MB and GB (bytes a second) that an older library took, which the
 * rule refuses, so their traces keep their meaning.
 */
static double ddl_recorded_rate(const char *s)
{
	double bps;
	char why[256], *end;
	if (ddl_rate_parse(s, strlen(s), &bps, why, sizeof why) == 0)
		return bps / 8;
	double v = strtod(s, &end);
	static const char *const units[] = {"KB", "MB", "GB"};
	for (int i = 0; i < 3 && end != s && v > 0; i++)
		if (!strcmp(end, units[i]))
			return v * (i == 0 ? 1e3 : i == 1 ? 1e6 : 1e9);
	return -1;
}

int ddl_report_bw(double bw[3], const char *spec, char *err, size_t errlen)
{
	static const char *const names[] = {"machine", "rack", "cluster"};
	bw[DDL_LEVEL_MACHINE] = 100e9 / 8; /* shared memory or NVLink inside a machine */
	bw[DDL_LEVEL_RACK] = 25e9 / 8;     /* one top-of-rack switch */
	bw[DDL_LEVEL_CLUSTER] = 10e9 / 8;  /* across racks, oversubscribed */
	for (const char *p = spec; p && *p;) {
		const char *eq = strchr(p, '='), *comma = strchr(p, ',');
		const char *end = comma ? comma : p + strlen(p);
		int l = -1;
		for (int k = 0; k < 3 && eq && eq < end; k++)
			if ((size_t)(eq - p) == strlen(names[k]) && !strncmp(p, names[k], strlen(names[k])))
				l = k;
		if (l < 0) {
			snprintf(err, errlen, "--bw '%s': '%.*s': use machine=, rack= or cluster= with a "
			         "rate such as 25gbit", spec, (int)(end - p), p);
			return -1;
		}
		char why[256];
		double bps;
		if (ddl_rate_parse(eq + 1, (size_t)(end - eq - 1), &bps, why, sizeof why) < 0) {
			snprintf(err, errlen, "--bw '%s': %s", spec, why);
			return -1;
		}
		bw[l] = bps / 8;
		p = comma ? comma + 1 : end;
	}
	return 0;
}

/* The first iteration of P whose length is the median of its iterations
 * (the lower one of an even count); the first one without memory, and P
 * is then incomplete. */
static size_t ddl_median_iter(struct ddl_proc *p)
{
	double *v = malloc(p->niter * sizeof *v);
	if (!v) {
		p->incomplete = 1;
		return 0;
	}
	memcpy(v, p->iter_s, p->niter * sizeof *v);
	qsort(v, p->niter, sizeof *v, ddl_cmp_double);
	double m = v[(p->niter - 1) / 2];
	free(v);
	size_t k = 0;
	while (k + 1 < p->niter && p->iter_s[k] != m)
		k++;
	return k;
}

/* The breakdown's per-process stages (ddl_parallel): each writes only its
 * own process. */
struct ddl_bd {
	struct ddl_report *r;
	const struct ddl_ivset *fl; /* traffic in flight per process, or NULL */
	unsigned char *cpu;         /* per process: not a GPU job's, its turn in stage two */
};

/* One: a process's device timeline, where it has one (breakdown_gpu.c). */
static void ddl_bd_gpu(void *arg, size_t i)
{
	struct ddl_bd *j = arg;
	struct ddl_proc *p = &j->r->procs[i];
	if (!p->niter)
		return;
	free(p->iter_parts);
	p->iter_parts = calloc(p->niter, sizeof *p->iter_parts);
	if (!p->iter_parts)
		p->incomplete = 1; /* the outputs give each iteration the means */
	free(p->pieces);
	p->pieces = NULL;
	p->npieces = 0;
	p->shown = ddl_median_iter(p);
	p->train_tid = p->iter[0].tid ? p->iter[0].tid : p->pid;
	/* without device intervals the device timeline has nothing to say: its
	 * events are not even read */
	if (!ddl_proc_has_class(p, DDL_CLASS_DEVICE)) {
		j->cpu[i] = 1;
		return;
	}
	ddl_proc_hold(p);
	j->cpu[i] = ddl_proc_breakdown_gpu(j->r, p) < 0;
	ddl_proc_release(p);
}

/* Two: the training thread of the others, against their traffic in
 * flight; its events held. */
static void ddl_bd_cpu(void *arg, size_t i)
{
	struct ddl_bd *j = arg;
	struct ddl_proc *p = &j->r->procs[i];
	if (!j->cpu[i])
		return; /* passed to it without memory for ddl_parallel_procs_some's order */
	ddl_proc_breakdown(j->r, p, j->fl ? &j->fl[i] : NULL);
	if (!j->fl)
		p->incomplete = 1; /* its traffic's windows not known: blocked time is idle */
}

void ddl_report_breakdown(struct ddl_report *r)
{
	struct ddl_parts total = {0};
	struct ddl_ivset *fl = NULL;
	double all = 0;
	struct ddl_bd j = {r, NULL, calloc(r->nprocs ? r->nprocs : 1, 1)};
	if (!j.cpu) {
		r->incomplete = 1; /* no breakdown at all */
		return;
	}
	ddl_parallel(r->nprocs, ddl_bd_gpu, &j);
	int need_fl = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		need_fl |= j.cpu[i];
	if (need_fl && ddl_report_flights(r, &fl) == 0)
		j.fl = fl;
	if (need_fl) /* those in memory first (ddl_parallel_procs), held */
		ddl_parallel_procs_some(r, j.cpu, ddl_bd_cpu, &j);
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!p->niter)
			continue;
		double n = (double)p->niter;
#define DDL_X_ADD(f) total.f += p->per_iter.f * n;
		DDL_PARTS(DDL_X_ADD)
#undef DDL_X_ADD
		all += p->iter_mean_s * n;
	}
	ddl_flights_free(fl, r->nprocs);
	free(j.cpu);
	if (all <= 0)
		return;
#define DDL_X_PCT(f) r->pct.f = 100.0 * total.f / all;
	DDL_PARTS(DDL_X_PCT)
#undef DDL_X_PCT
	ddl_report_sensitivity(r);
}

/*
 * Measured against predicted. A run made under ddlprof --perturb-net
 * rate=R had every send of every process held to R bits a second: a link
 * of bandwidth R. Its measured iteration is set beside T(R), the equation
 * above at bw = R, from the baseline's inputs when there is a baseline
 * (the same job unperturbed: the prediction is then a real forecast) and
 * from this run's own otherwise (a consistency check of the model). With
 * a baseline of iteration T0 the slowdowns are T(perturbed) / T0 measured
 * and T(R) / T0 predicted; error = T(R) / T(perturbed) - 1 either way.
 *
 * delay=D held every send call D longer (libddlprof/perturb.c's
 * ddl_perturb: a sleep inside the call, whatever its size). A thread's
 * sends are serial, and in a synchronous job each one is on the iteration's
 * critical path: the rank cannot go on until its send is done, nor its
 * peers until they have its bytes. Threads send side by side, so the
 * iteration grows by D times the sends of its busiest sending thread:
 *     T(D) = T0 + n D,  n = that thread's sends an iteration (mean over ranks)
 * counted in the baseline, T0 its iteration. It needs the baseline: the
 * perturbed run alone cannot tell its own D-free iteration from what it
 * measured, so without one delay= is measured only. The model ignores
 * sends that overlap compute on a thread of their own (it then predicts
 * too much) and a rank's peers' delays adding up when they are not in
 * step (too little).
 */

/* The run's DDLPROF_PERTURB_NET, or NULL. */
static const char *ddl_run_perturb(const struct ddl_traceset *s, const struct ddl_run *run)
{
	for (size_t i = 0; i < s->n; i++)
		if (ddl_run_has(s, run, &s->t[i]))
			return ddl_trace_meta(&s->t[i], "DDLPROF_PERTURB_NET");
	return NULL;
}

/* The newest run of S that is (WANT 1) or is not (WANT 0) perturbed, other than NOT. */
static const struct ddl_run *ddl_run_newest(const struct ddl_traceset *s, int want,
                                            const struct ddl_run *not)
{
	const struct ddl_run *best = NULL;
	for (size_t k = 0; k < s->nruns; k++) {
		const struct ddl_run *run = &s->runs[k];
		if (run != not && (ddl_run_perturb(s, run) != NULL) == (want != 0) &&
		    (!best || run->newest_real_ns > best->newest_real_ns))
			best = run;
	}
	return best;
}

const struct ddl_run *ddl_report_run(const struct ddl_traceset *s, const char *id)
{
	const struct ddl_run *pert = id ? NULL : ddl_run_newest(s, 1, NULL);
	if (pert && ddl_run_newest(s, 0, NULL))
		return pert;
	return ddl_traceset_run(s, id);
}

/* Builds BASE, run RUN of S, with R's settings, as ddlprof-report does
 * (but for measuring it against a baseline of its own). 0 or -1. */
static int ddl_report_like(struct ddl_report *base, const struct ddl_report *r,
                           const struct ddl_traceset *s, const struct ddl_run *run)
{
	struct ddl_analysis o = {NULL, r->iteration_names, r->iteration_names_given, r->data_names,
	                         r->warmup, 0, NULL, NULL};
	char err[256];
	if (ddl_report_analyze(base, s, run, &o, err, sizeof err) < 0)
		return -1;
	memcpy(base->bw, r->bw, sizeof base->bw);
	return 0;
}

/* n above: the mean over ranks with iterations of the sends (calls that
 * sent bytes) an iteration of their busiest sending thread; 0 when none. */
static double ddl_sens_sends(struct ddl_report *r)
{
	double sum = 0;
	size_t np = 0;
	uint32_t *per_tid = calloc(UINT16_MAX + 1, sizeof *per_tid);
	if (!per_tid) {
		r->incomplete = 1; /* nothing predicted */
		return 0;
	}
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!p->niter)
			continue;
		memset(per_tid, 0, (UINT16_MAX + 1) * sizeof *per_tid);
		uint32_t most = 0;
		ddl_proc_hold(p);
		size_t near = SIZE_MAX;
		for (size_t k = 0; k < p->ntr; k++) {
			const struct ddl_trace *t = p->tr[k];
			for (size_t e = 0; e < t->nev; e++) {
				const struct ddl_event *ev = &t->ev[e];
				if (ddl_sent_in_iteration(p, t, ev, &near) && ++per_tid[ev->tid] > most)
					most = per_tid[ev->tid];
			}
		}
		ddl_proc_release(p);
		sum += (double)most / (double)p->niter;
		np++;
	}
	free(per_tid);
	return np ? sum / (double)np : 0;
}

int ddl_report_measure(struct ddl_report *r, const char *baseline, char *err, size_t errlen)
{
	const char *pert = ddl_run_perturb(r->set, r->run);
	if (!pert) {
		if (!baseline)
			return 0;
		int nomem = r->incomplete; /* the setting may be what was not read */
		for (size_t i = 0; i < r->nprocs; i++)
			nomem |= r->procs[i].incomplete;
		snprintf(err, errlen, "--baseline: run %s was not made under ddlprof --perturb-net; name "
		         "the perturbed run's traces after --baseline DIR%s", r->run->id,
		         nomem ? " (out of memory: its traces were not read in full)" : "");
		return -1;
	}
	if (r->iterations <= 0)
		return 0; /* nothing measured to compare */
	struct ddl_traceset own;
	const struct ddl_traceset *bs = r->set;
	if (baseline) {
		char *paths[] = {(char *)baseline}, why[512];
		if (ddl_traceset_load(&own, paths, 1, why, sizeof why) < 0) {
			snprintf(err, errlen, "--baseline: %s", why);
			ddl_traceset_free(&own);
			return -1;
		}
		bs = &own;
	}
	const struct ddl_run *brun = ddl_run_newest(bs, 0, r->run);
	struct ddl_report base;
	int rc = 0, have_base = 0;
	memset(&base, 0, sizeof base);
	if (!brun && baseline) {
		snprintf(err, errlen, "--baseline %s: no run without --perturb-net there%s", baseline,
		         bs->incomplete ? " (out of memory: its traces were not all read)"
		         : bs->nruns    ? ""
		                        : " (no readable traces)");
		rc = -1;
	} else if (brun && ddl_report_like(&base, r, bs, brun) < 0) {
		snprintf(err, errlen, "baseline run %s: out of memory", brun->id);
		rc = -1;
	} else if (brun && base.iterations <= 0 && baseline) {
		snprintf(err, errlen, "--baseline %s: run %s: no iterations found (%s)", baseline, brun->id,
		         base.incomplete ? "out of memory: its report is incomplete" : "see --iteration-name");
		rc = -1;
	} else if (brun && base.iterations <= 0) {
		brun = NULL; /* a run among the paths that is no baseline: predict from this one */
	} else {
		have_base = brun != NULL;
	}
	if (rc == 0) {
		struct ddl_sens_in in;
		double bw = !strncmp(pert, "rate=", 5) ? ddl_recorded_rate(pert + 5) : -1;
		memset(&r->measured, 0, sizeof r->measured);
		r->measured.perturb = pert;
		r->measured.iteration_s = r->iter_mean_s;
		double delay_s = !strncmp(pert, "delay=", 6) ? strtod(pert + 6, NULL) * 1e-6 : 0;
		if (bw > 0) {
			r->measured.bandwidth = bw;
			r->measured.from_baseline = have_base;
			if (ddl_sens_inputs(have_base ? &base : r, &in))
				r->measured.predicted_s = ddl_sens_predict(&in, bw);
		} else if (delay_s > 0 && have_base) {
			double n = ddl_sens_sends(&base);
			r->measured.from_baseline = 1;
			if (n > 0)
				r->measured.predicted_s = base.iter_mean_s + n * delay_s;
		}
		if (have_base) {
			snprintf(r->measured.baseline_run, sizeof r->measured.baseline_run, "%s", brun->id);
			r->measured.baseline_s = base.iter_mean_s;
		}
		r->have_measured = 1;
	}
	r->incomplete |= base.incomplete; /* measured against a baseline short of its figures */
	ddl_report_free(&base);
	if (baseline)
		ddl_traceset_free(&own);
	return rc;
}
