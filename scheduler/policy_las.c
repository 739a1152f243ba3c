/*
 * las: two-dimensional least attained service after Tiresias (Gu et al.,
 * NSDI 2019). A job's priority is the GPU time it has attained (GPUs x
 * time held), discretized into queues; within a queue, arrival order. At
 * every lease end running jobs outranked by waiting ones are preempted
 * (checkpoint, restart cost when they start again).
 *
 * Consolidation is decided by model, as Tiresias does for models with
 * skewed tensors: a job whose model slows down by 1.3x or more across racks
 * (the table in models.c, or the trace's own figures) only takes its
 * tightest feasible placement; others take whatever is free, tightest
 * first. So that no job waits forever on a fragmented cluster (our
 * addition) a consolidating job accepts any placement after waiting
 * DDL_SIM_LAS_PATIENCE leases.
 *
 * Queue thresholds (our assumption; Tiresias tunes them per cluster): one
 * GPU-hour and ten GPU-hours.
 */
#include "sim.h"

#define DDL_SIM_LAS_PATIENCE 8

static const double ddl_sim_las_limits[] = {3600, 36000};

int ddl_sim_las_queue(double attained)
{
	int q = 0;
	while (q < (int)(sizeof ddl_sim_las_limits / sizeof ddl_sim_las_limits[0]) &&
	       attained >= ddl_sim_las_limits[q])
		q++;
	return q;
}

static void ddl_sim_las_key(const struct ddl_sim *s, const struct ddl_sim_job *j, double now,
                            double key[2])
{
	(void)s;
	key[0] = ddl_sim_las_queue(ddl_sim_attained(j, now));
	key[1] = j->arrival;
}

static int ddl_sim_las_max_level(struct ddl_sim *s, const struct ddl_sim_job *j, double now)
{
	if (j->consolidate && now - j->wait_since < DDL_SIM_LAS_PATIENCE * s->cfg.lease)
		return j->min_level;
	return DDL_SIM_CLUSTER;
}

const struct ddl_sim_policy ddl_sim_policy_las = {
	.name = "las",
	.summary = "Tiresias-style least attained GPU time, preemptive, consolidation by model",
	.preemptive = 1,
	.leases = 1,
	.key = ddl_sim_las_key,
	.max_level = ddl_sim_las_max_level,
};
