/*
 * dally: delay scheduling with network-sensitive preemption, after the
 * Dally scheduler's design as our issue describes it (delay scheduling per
 * placement level, auto-tuned timers, network-sensitive preemption). A waiting job
 * first asks for its tightest level; it accepts the next looser level only
 * after waiting that level's timer, counted in leases (machine timer, then
 * rack timer).
 *
 * Timers are tuned per GPU demand (buckets of powers of two) from the waits
 * of recent jobs of that demand that did get the tighter level: mean plus
 * two standard deviations of the last DDL_SIM_TIMER_HISTORY such waits,
 * rounded up to whole leases and kept within DDL_SIM_TIMER_MIN..MAX. Until
 * a bucket has history its timers are DDL_SIM_TIMER_MIN.
 *
 * Network-sensitive preemption: priority is the job's network lag first,
 * then las' attained-service queue, then arrival. The lag is how far the
 * job's progress trails its ideal progress because of network slowdown,
 * as a share of the ideal: with I the seconds of work it would have done
 * had every second it ran been at the speed of its tightest level, and P
 * the seconds of work it did, lag = (I - P) / I, from 0 (never placed
 * looser than it could be, or not run yet) towards 1. Normalising by I
 * rather than counting seconds ranks a short job that ran at half speed
 * above a long one that lost more seconds at 0.9 of its speed. So at every
 * lease end the running and waiting jobs are walked most-lagging first and
 * those that fit keep or get GPUs; a job that has not lagged ranks as
 * under las, and is preempted, as there, by waiting jobs of a lower
 * attained-service queue. Loosely placed jobs, most lagging first, also
 * move to tighter GPUs when they free up and the move pays for the restart.
 */
#include <math.h>

#include "sim.h"

static int ddl_sim_dally_bucket(int gpus)
{
	int b = 0;
	while ((1 << (b + 1)) <= gpus && b < DDL_SIM_TIMER_BUCKETS - 1)
		b++;
	return b;
}

double ddl_sim_dally_lag(const struct ddl_sim_job *j, double now)
{
	double lost = ddl_sim_comm_lost(j, now);
	double ideal = j->work - ddl_sim_remaining(j, now) + lost; /* s it ran */
	return ideal > 0 && lost > 0 ? lost / ideal : 0;
}

/* Lag first (most first), then the las queue; the engine breaks the last
 * tie by arrival. */
static void ddl_sim_dally_key(const struct ddl_sim *s, const struct ddl_sim_job *j, double now,
                              double key[2])
{
	(void)s;
	key[0] = -ddl_sim_dally_lag(j, now);
	key[1] = ddl_sim_las_queue(ddl_sim_attained(j, now));
}

static double ddl_sim_dally_migrate_key(const struct ddl_sim *s, const struct ddl_sim_job *j,
                                        double now)
{
	(void)s;
	return -ddl_sim_dally_lag(j, now);
}

/* Timer of a level (0: wait for a machine, 1: wait for a rack), seconds. */
static double ddl_sim_dally_timer(const struct ddl_sim *s, int gpus, int level)
{
	int leases = s->timers[ddl_sim_dally_bucket(gpus)][level].leases;
	if (leases < DDL_SIM_TIMER_MIN)
		leases = DDL_SIM_TIMER_MIN;
	return leases * s->cfg.lease;
}

static int ddl_sim_dally_max_level(struct ddl_sim *s, const struct ddl_sim_job *j, double now)
{
	double waited = now - j->wait_since, deadline = 0;
	int level = j->min_level;
	while (level < DDL_SIM_CLUSTER) {
		deadline += ddl_sim_dally_timer(s, j->gpus, level);
		if (waited < deadline)
			break;
		level++;
	}
	return level;
}

static void ddl_sim_dally_placed(struct ddl_sim *s, const struct ddl_sim_job *j, int level,
                                 double waited)
{
	/* Only waits that ended in the tightest level say how long that level
	 * takes to come free; a job that gave up says nothing about it. */
	if (level != j->min_level || level == DDL_SIM_CLUSTER)
		return;
	struct ddl_sim_timer *t = &s->timers[ddl_sim_dally_bucket(j->gpus)][level];
	t->wait[t->next] = waited;
	t->next = (t->next + 1) % DDL_SIM_TIMER_HISTORY;
	if (t->n < DDL_SIM_TIMER_HISTORY)
		t->n++;
	double sum = 0, sq = 0;
	for (int i = 0; i < t->n; i++)
		sum += t->wait[i];
	double mean = sum / t->n;
	for (int i = 0; i < t->n; i++)
		sq += (t->wait[i] - mean) * (t->wait[i] - mean);
	t->mean_s = mean;
	t->sd_s = sqrt(sq / t->n);
	double x = mean + 2 * t->sd_s;
	/* Clamped as a double: long waits over short leases overflow an int. */
	double leases = ceil(x / s->cfg.lease - 1e-9);
	if (!(leases >= DDL_SIM_TIMER_MIN))
		leases = DDL_SIM_TIMER_MIN;
	if (leases > DDL_SIM_TIMER_MAX)
		leases = DDL_SIM_TIMER_MAX;
	t->leases = (int)leases;
}

const struct ddl_sim_policy ddl_sim_policy_dally = {
	.name = "dally",
	.summary = "delay scheduling with auto-tuned timers, network-sensitive preemption",
	.preemptive = 1,
	.migrate = 1,
	.leases = 1,
	.key = ddl_sim_dally_key,
	.max_level = ddl_sim_dally_max_level,
	.placed = ddl_sim_dally_placed,
	.migrate_key = ddl_sim_dally_migrate_key,
};
