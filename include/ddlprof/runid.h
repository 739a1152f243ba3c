/*
 * The run id every process of a job writes in its trace header, so that
 * ddlprof-report gathers them into one run: one rule, used by the launcher
 * (launcher/ddlprof.c) and by the preload library (libddlprof/core.c), for
 * a process the launcher did not start. Internal to ddlprof; not an API.
 *
 * In order: DDLPROF_RUN_ID (ddlprof --run-id); the scheduler's job id
 * (Slurm, torchrun's TORCHELASTIC_RUN_ID, Open MPI, PMIx); the rendezvous
 * that ranks started by hand share (MASTER_ADDR, MASTER_PORT and
 * WORLD_SIZE, as torch.distributed reads them); else one of this process
 * alone. The same rendezvous used again by a later job gives the same id:
 * the report tells such runs apart by their times (trace_set.c).
 */
#ifndef DDLPROF_RUNID_H
#define DDLPROF_RUNID_H

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Run ids and host names become file names: keep them to a safe alphabet. */
static inline void ddl_runid_sanitize(char *s)
{
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("-_.:", *s))
			*s = '_';
}

/*
 * Writes the run id into OUT (CAP bytes). ENV returns a variable's value,
 * NULL when unset or empty; HOST, PID and START (seconds, 0 to leave out)
 * name a process's own run.
 */
static inline void ddl_runid_make(char *out, size_t cap, const char *(*env)(const char *),
                                  const char *host, long pid, long start)
{
	const char *v, *port, *world;
	if ((v = env("DDLPROF_RUN_ID")))
		snprintf(out, cap, "%s", v);
	else if ((v = env("SLURM_JOB_ID")))
		snprintf(out, cap, "slurm-%s", v);
	else if ((v = env("TORCHELASTIC_RUN_ID")))
		snprintf(out, cap, "torch-%s", v);
	else if ((v = env("OMPI_MCA_ess_base_jobid")))
		snprintf(out, cap, "ompi-%s", v);
	else if ((v = env("PMIX_NAMESPACE")))
		snprintf(out, cap, "pmix-%s", v);
	else if ((v = env("MASTER_ADDR")) && (port = env("MASTER_PORT")) && (world = env("WORLD_SIZE")))
		snprintf(out, cap, "torch-%.32s-%.8s-w%.8s", v, port, world);
	else if (start)
		snprintf(out, cap, "local-%.30s-%ld-%ld", host, pid, start);
	else
		snprintf(out, cap, "local-%.30s-%ld", host, pid);
	ddl_runid_sanitize(out);
}

#endif
