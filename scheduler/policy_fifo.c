/*
 * fifo: jobs start strictly in arrival order; the first job that cannot
 * start blocks those behind it (no backfilling), and a running job keeps
 * its GPUs until it finishes (no leases, no preemption, no migration). It
 * takes the tightest placement free at the moment it starts. The baseline
 * the others are measured against.
 */
#include "sim.h"

static void ddl_sim_fifo_key(const struct ddl_sim *s, const struct ddl_sim_job *j, double now,
                             double key[2])
{
	(void)s;
	(void)now;
	key[0] = 0;
	key[1] = j->arrival;
}

static int ddl_sim_fifo_max_level(struct ddl_sim *s, const struct ddl_sim_job *j, double now)
{
	(void)s;
	(void)j;
	(void)now;
	return DDL_SIM_CLUSTER;
}

const struct ddl_sim_policy ddl_sim_policy_fifo = {
	.name = "fifo",
	.summary = "arrival order, no backfilling, no preemption",
	.strict = 1,
	.key = ddl_sim_fifo_key,
	.max_level = ddl_sim_fifo_max_level,
};
