/*
 * sensitivity: waits for a tight placement in proportion to the job's own
 * predicted slowdown. A job whose tightest placement is not free accepts
 * level L once it has waited as long as level L would cost it:
 * (slow[L] / slow[min] - 1) x its remaining work (the break-even rule of
 * ski rental), capped at DDL_SIM_SENS_CAP leases. A job that does not slow
 * down never waits. Priority and preemption as las.
 */
#include "sim.h"

#define DDL_SIM_SENS_CAP 8

static void ddl_sim_sens_key(const struct ddl_sim *s, const struct ddl_sim_job *j, double now,
                             double key[2])
{
	(void)s;
	key[0] = ddl_sim_las_queue(ddl_sim_attained(j, now));
	key[1] = j->arrival;
}

static int ddl_sim_sens_max_level(struct ddl_sim *s, const struct ddl_sim_job *j, double now)
{
	double waited = now - j->wait_since, left = ddl_sim_remaining(j, now);
	int level = j->min_level;
	for (int l = j->min_level + 1; l < DDL_SIM_LEVELS; l++) {
		double budget = (j->slow[l] / j->slow[j->min_level] - 1) * left;
		if (budget > DDL_SIM_SENS_CAP * s->cfg.lease)
			budget = DDL_SIM_SENS_CAP * s->cfg.lease;
		if (waited >= budget)
			level = l;
	}
	return level;
}

const struct ddl_sim_policy ddl_sim_policy_sensitivity = {
	.name = "sensitivity",
	.summary = "waits for tight placement as long as the loose one would cost the job",
	.preemptive = 1,
	.leases = 1,
	.key = ddl_sim_sens_key,
	.max_level = ddl_sim_sens_max_level,
};
