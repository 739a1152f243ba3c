/*
 * The simulation engine: advances time from event to event (arrivals in
 * trace order, job finishes and lease ends from the heap in events.c),
 * keeps the waiting queue in the policy's order, starts jobs on the
 * placements cluster.c finds, and at every lease end lets the policy
 * preempt and migrate. It does the accounting the output reports: per job
 * progress, attained GPU time, time lost to loose placement, queueing and
 * restarts.
 *
 * Speed model. A job's work is its run time at the tightest level it can
 * ever have (one machine when it fits in one). Placed at level L it runs at
 * rate slow[min_level] / slow[L] of that; the difference is its
 * communication overhead. Each time it starts again after a preemption or a
 * migration it first spends the restart cost holding its GPUs without
 * progress (checkpoint and restart).
 *
 * With cfg.check the engine verifies as it goes that no GPU is given to a
 * job while another holds it, that the free counts match the owners at
 * every lease end, and at the end that every job finished with exactly its
 * work done and every GPU-second is accounted for.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

double ddl_sim_attained(const struct ddl_sim_job *j, double now)
{
	double a = j->attained;
	if (j->state == DDL_SIM_RUNNING)
		a += (now - j->seg_start) * j->gpus;
	return a;
}

static double ddl_sim_ran(const struct ddl_sim_job *j, double now)
{
	return j->state == DDL_SIM_RUNNING && now > j->seg_work_start ? now - j->seg_work_start : 0;
}

double ddl_sim_comm_lost(const struct ddl_sim_job *j, double now)
{
	return j->comm_lost + ddl_sim_ran(j, now) * (1 - j->rate);
}

double ddl_sim_remaining(const struct ddl_sim_job *j, double now)
{
	double left = j->work - j->progress - ddl_sim_ran(j, now) * j->rate;
	return left > 0 ? left : 0;
}

/* Policy order: key, then arrival order. */
static int ddl_sim_cmp(const struct ddl_sim_job *a, const struct ddl_sim_job *b)
{
	if (a->key[0] != b->key[0])
		return a->key[0] < b->key[0] ? -1 : 1;
	if (a->key[1] != b->key[1])
		return a->key[1] < b->key[1] ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int ddl_sim_cmp_idx(const void *x, const void *y, void *jobs)
{
	const struct ddl_sim_job *js = jobs;
	return ddl_sim_cmp(&js[*(const int *)x], &js[*(const int *)y]);
}

/* Inserts a job into the waiting queue at its key's place. */
static void ddl_sim_enqueue(struct ddl_sim *s, struct ddl_sim_job *j)
{
	j->state = DDL_SIM_WAITING;
	j->wait_since = s->now;
	s->policy->key(s, j, s->now, j->key);
	size_t lo = 0, hi = s->nwait;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ddl_sim_cmp(&s->jobs[s->wait[mid]], j) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	memmove(s->wait + lo + 1, s->wait + lo, (s->nwait - lo) * sizeof *s->wait);
	s->wait[lo] = j->idx;
	s->nwait++;
}

/* Starts (or restarts) J on ids[] at LEVEL. 0 or -1 (check failed). */
static int ddl_sim_start(struct ddl_sim *s, struct ddl_sim_job *j, int level, const int *ids)
{
	if (ddl_sim_cluster_take(&s->cl, j->idx, j->gpus, ids) < 0)
		return -1;
	memcpy(j->gpu_ids, ids, sizeof *ids * (size_t)j->gpus);
	double waited = s->now - j->wait_since;
	double restart = j->started ? s->cfg.restart_cost : 0;
	j->queued += waited;
	if (!j->started) {
		j->first_start = s->now;
		j->first_level = level;
	}
	j->started = 1;
	j->state = DDL_SIM_RUNNING;
	j->level = level;
	j->rate = j->slow[j->min_level] / j->slow[level];
	j->seg_start = s->now;
	j->seg_work_start = s->now + restart;
	j->version++;
	j->slot = (int)s->nrun;
	s->run[s->nrun++] = j->idx;
	double end = j->seg_work_start + (j->work - j->progress) / j->rate;
	if (ddl_sim_heap_push(&s->heap, end, DDL_SIM_EV_FINISH, j->idx, j->version) < 0)
		return -1;
	if (s->policy->placed)
		s->policy->placed(s, j, level, waited);
	return 0;
}

/* Ends J's current run segment: accounting, GPUs back, off the running list. */
static void ddl_sim_stop(struct ddl_sim *s, struct ddl_sim_job *j)
{
	double elapsed = s->now - j->seg_start;
	double ran = ddl_sim_ran(j, s->now);
	j->progress += ran * j->rate;
	j->comm_lost += ran * (1 - j->rate);
	j->restart_s += elapsed - ran;
	j->attained += elapsed * j->gpus;
	s->busy_gpu_s += elapsed * j->gpus;
	ddl_sim_cluster_give(&s->cl, j->gpus, j->gpu_ids);
	int last = s->run[--s->nrun];
	s->run[j->slot] = last;
	s->jobs[last].slot = j->slot;
	j->version++;
}

static int ddl_sim_finish(struct ddl_sim *s, struct ddl_sim_job *j)
{
	ddl_sim_stop(s, j);
	/* Each run segment's end and start are rounded to the resolution of
	 * doubles at the current time; allow for that too. */
	double tol = 1e-6 * (j->work + 1) +
	             4 * DBL_EPSILON * s->now * (1 + j->preemptions + j->migrations);
	if (s->cfg.check && fabs(j->progress - j->work) > tol) {
		fprintf(stderr, "ddlprof-sim: check failed: job %s finished with %.9g of %.9g s done\n",
		        j->id, j->progress, j->work);
		return -1;
	}
	j->progress = j->work;
	j->state = DDL_SIM_DONE;
	j->finish = s->now;
	free(j->gpu_ids);
	j->gpu_ids = NULL;
	s->done++;
	return 0;
}

/* Starts waiting jobs in policy order while GPUs are free. 0 or -1. */
static int ddl_sim_dispatch(struct ddl_sim *s, size_t *started)
{
	size_t r = 0, w = 0;
	for (; r < s->nwait; r++) {
		struct ddl_sim_job *j = &s->jobs[s->wait[r]];
		if (s->cl.free == 0)
			break;
		int level = -1;
		if (j->gpus <= s->cl.free) {
			int maxl = s->policy->max_level(s, j, s->now);
			if (maxl < j->min_level)
				maxl = j->min_level;
			level = ddl_sim_cluster_find(&s->cl, j->gpus, j->min_level, maxl, s->ids);
		}
		if (level < 0) {
			if (s->policy->strict)
				break;
			s->wait[w++] = s->wait[r];
			continue;
		}
		if (ddl_sim_start(s, j, level, s->ids) < 0)
			return -1;
		(*started)++;
	}
	memmove(s->wait + w, s->wait + r, (s->nwait - r) * sizeof *s->wait);
	s->nwait = w + (s->nwait - r);
	return 0;
}

/*
 * Lease-end preemption: walk running and waiting jobs together in policy
 * order, admitting each whose GPUs still fit in the cluster; running jobs
 * not admitted go back to the queue (Tiresias' discipline).
 */
static void ddl_sim_preempt(struct ddl_sim *s)
{
	for (size_t i = 0; i < s->nrun; i++) {
		struct ddl_sim_job *j = &s->jobs[s->run[i]];
		s->policy->key(s, j, s->now, j->key);
	}
	size_t nrun = s->nrun;
	int *run = s->tmp;
	memcpy(run, s->run, nrun * sizeof *run);
	qsort_r(run, nrun, sizeof *run, ddl_sim_cmp_idx, s->jobs);
	size_t i = 0, k = 0, nvictim = 0;
	long cum = 0, cap = s->cl.gpus;
	while (i < nrun) {
		const struct ddl_sim_job *a = &s->jobs[run[i]];
		int take_waiting = k < s->nwait && ddl_sim_cmp(&s->jobs[s->wait[k]], a) < 0;
		const struct ddl_sim_job *j = take_waiting ? &s->jobs[s->wait[k++]] : &s->jobs[run[i++]];
		if (cum + j->gpus <= cap)
			cum += j->gpus;
		else if (!take_waiting)
			run[nvictim++] = j->idx; /* reuses the walked part of run[] */
	}
	for (size_t v = 0; v < nvictim; v++) {
		struct ddl_sim_job *j = &s->jobs[run[v]];
		ddl_sim_stop(s, j);
		j->preemptions++;
		s->preemptions++;
		ddl_sim_enqueue(s, j);
	}
}

static int ddl_sim_cmp_mig(const void *x, const void *y)
{
	const double *a = x, *b = y;
	if (a[0] != b[0])
		return a[0] < b[0] ? -1 : 1;
	return a[1] < b[1] ? -1 : a[1] > b[1];
}

/*
 * Lease-end migration: a job running looser than it could moves to a
 * tighter placement when one is free (counting its own GPUs) and the time
 * it saves exceeds the restart cost.
 */
static int ddl_sim_migrate(struct ddl_sim *s)
{
	size_t n = 0;
	double *cand = malloc(sizeof *cand * 2 * (s->nrun + 1));
	if (!cand)
		return -1;
	for (size_t i = 0; i < s->nrun; i++) {
		const struct ddl_sim_job *j = &s->jobs[s->run[i]];
		if (j->level <= j->min_level)
			continue;
		cand[2 * n] = s->policy->migrate_key ? s->policy->migrate_key(s, j, s->now) : 0;
		cand[2 * n + 1] = j->idx;
		n++;
	}
	qsort(cand, n, 2 * sizeof *cand, ddl_sim_cmp_mig);
	int rc = 0;
	for (size_t c = 0; c < n && rc == 0; c++) {
		struct ddl_sim_job *j = &s->jobs[(int)cand[2 * c + 1]];
		ddl_sim_cluster_give(&s->cl, j->gpus, j->gpu_ids);
		int level = ddl_sim_cluster_find(&s->cl, j->gpus, j->min_level, j->level - 1, s->ids);
		if (ddl_sim_cluster_take(&s->cl, j->idx, j->gpus, j->gpu_ids) < 0) {
			rc = -1;
			break;
		}
		if (level < 0)
			continue;
		double left = ddl_sim_remaining(j, s->now);
		double gain = left * (j->slow[j->level] - j->slow[level]) / j->slow[j->min_level];
		if (gain <= s->cfg.restart_cost)
			continue;
		ddl_sim_stop(s, j);
		j->migrations++;
		s->migrations++;
		j->wait_since = s->now;
		rc = ddl_sim_start(s, j, level, s->ids);
	}
	free(cand);
	return rc;
}

/* End-of-run checks: everything finished, every GPU back, GPU time adds up. */
static int ddl_sim_final_check(struct ddl_sim *s)
{
	double held = 0;
	for (size_t i = 0; i < s->njobs; i++) {
		const struct ddl_sim_job *j = &s->jobs[i];
		if (j->state != DDL_SIM_DONE) {
			fprintf(stderr, "ddlprof-sim: check failed: job %s did not finish\n", j->id);
			return -1;
		}
		held += j->attained;
	}
	if (s->cl.free != s->cl.gpus || s->nrun || s->nwait) {
		fprintf(stderr, "ddlprof-sim: check failed: %d of %d GPUs free at the end\n", s->cl.free,
		        s->cl.gpus);
		return -1;
	}
	if (fabs(held - s->busy_gpu_s) > 1e-6 * (held + 1)) {
		fprintf(stderr, "ddlprof-sim: check failed: jobs held %.9g GPU-s, cluster busy %.9g\n",
		        held, s->busy_gpu_s);
		return -1;
	}
	return ddl_sim_cluster_check(&s->cl);
}

int ddl_sim_run(struct ddl_sim *s)
{
	size_t n = s->njobs, next = 0, idle_rounds = 0;
	int round_pending = 0;
	s->wait = malloc(sizeof *s->wait * (n + 1));
	s->run = malloc(sizeof *s->run * (n + 1));
	s->tmp = malloc(sizeof *s->tmp * (n + 1));
	s->ids = malloc(sizeof *s->ids * (size_t)s->cl.gpus);
	if (!s->wait || !s->run || !s->tmp || !s->ids)
		goto nomem;
	for (size_t i = 0; i < n; i++) {
		struct ddl_sim_job *j = &s->jobs[i];
		j->idx = (int)i;
		j->state = DDL_SIM_PENDING;
		j->min_level = ddl_sim_cluster_min_level(&s->cl, j->gpus);
	}
	size_t steps = 0;
	while (s->done < n) {
		if ((++steps & 8191) == 0)
			ddl_progress_update(&s->progress, (double)s->done, (double)n, "jobs done");
		const struct ddl_sim_event *top = ddl_sim_heap_top(&s->heap);
		double t = INFINITY;
		if (top)
			t = top->t;
		if (next < n && s->jobs[next].arrival < t)
			t = s->jobs[next].arrival;
		if (t == INFINITY) {
			fprintf(stderr, "ddlprof-sim: internal error: %zu jobs left and nothing to do\n",
			        n - s->done);
			return -1;
		}
		s->now = t;
		int round = 0;
		struct ddl_sim_event e;
		while ((top = ddl_sim_heap_top(&s->heap)) && top->t <= t) {
			ddl_sim_heap_pop(&s->heap, &e);
			if (e.kind == DDL_SIM_EV_ROUND) {
				round = 1;
				continue;
			}
			struct ddl_sim_job *j = &s->jobs[e.job];
			if (j->state != DDL_SIM_RUNNING || j->version != e.version)
				continue;
			if (ddl_sim_finish(s, j) < 0)
				return -1;
		}
		for (; next < n && s->jobs[next].arrival <= t; next++) {
			struct ddl_sim_job *j = &s->jobs[next];
			j->gpu_ids = malloc(sizeof *j->gpu_ids * (size_t)j->gpus);
			if (!j->gpu_ids)
				goto nomem;
			ddl_sim_enqueue(s, j);
		}
		size_t started = 0;
		if (round) {
			round_pending = 0;
			s->rounds++;
			if (s->cfg.check && ddl_sim_cluster_check(&s->cl) < 0)
				return -1;
			if (s->policy->preemptive && s->nwait)
				ddl_sim_preempt(s);
			if (s->policy->migrate && ddl_sim_migrate(s) < 0)
				return -1;
		}
		if (s->nwait && ddl_sim_dispatch(s, &started) < 0)
			return -1;
		/* Waiting jobs with nothing running and nothing placed, lease
		 * after lease: a policy that would wait forever. */
		idle_rounds = round && !s->nrun && !started ? idle_rounds + 1 : 0;
		if (idle_rounds > 100000) {
			fprintf(stderr, "ddlprof-sim: internal error: %zu jobs wait on an idle cluster\n",
			        s->nwait);
			return -1;
		}
		if (s->policy->leases && !round_pending && (s->nwait || s->nrun)) {
			/* The next multiple of the lease after t. Where doubles are
			 * coarser than the lease it would round back to t and time
			 * would stand still: take the next representable instant. */
			double at = (floor(t / s->cfg.lease) + 1) * s->cfg.lease;
			if (!(at > t))
				at = nextafter(t, INFINITY);
			if (!isfinite(at)) {
				fprintf(stderr, "ddlprof-sim: internal error: simulated time %g s overflows\n", t);
				return -1;
			}
			if (ddl_sim_heap_push(&s->heap, at, DDL_SIM_EV_ROUND, -1, 0) < 0)
				goto nomem;
			round_pending = 1;
		}
	}
	if (s->cfg.check)
		return ddl_sim_final_check(s);
	return 0;
nomem:
	fprintf(stderr, "ddlprof-sim: out of memory\n");
	return -1;
}
