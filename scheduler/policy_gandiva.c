/*
 * gandiva: greedy consolidation after Gandiva (Xiao et al., OSDI 2018).
 * Jobs start in arrival order, backfilling past jobs that do not fit, each
 * on the tightest placement free now; at every lease end a job running
 * looser than it could migrates to a tighter placement when one has freed
 * up and the time saved exceeds the restart cost (Gandiva's migration for
 * locality). Gandiva's time-slicing and packing of several jobs on one GPU
 * are not modelled.
 */
#include "sim.h"

static void ddl_sim_gandiva_key(const struct ddl_sim *s, const struct ddl_sim_job *j, double now,
                                double key[2])
{
	(void)s;
	(void)now;
	key[0] = 0;
	key[1] = j->arrival;
}

static int ddl_sim_gandiva_max_level(struct ddl_sim *s, const struct ddl_sim_job *j, double now)
{
	(void)s;
	(void)j;
	(void)now;
	return DDL_SIM_CLUSTER;
}

const struct ddl_sim_policy ddl_sim_policy_gandiva = {
	.name = "gandiva",
	.summary = "tightest placement free now, backfilling, migration to tighter placements",
	.migrate = 1,
	.leases = 1,
	.key = ddl_sim_gandiva_key,
	.max_level = ddl_sim_gandiva_max_level,
};
