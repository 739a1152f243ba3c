/*
 * The Helios / Venus cluster log (S-Lab HeliosData, cluster_log.csv):
 * job_id, user, gpu_num, cpu_num, node_num, state, submit_time,
 * start_time, end_time, duration, queue. We take job_id, gpu_num,
 * submit_time and duration (or end_time - start_time when there is no
 * duration column). Times may be "YYYY-MM-DD HH:MM:SS" (read as UTC) or
 * seconds, either way within 0..1e10 s (DDL_SIM_MAX_TIME; a date from
 * 1970 to 2286); arrivals are made relative to the earliest submission.
 * Durations above 1e10 s are bad records too. Jobs
 * that used no GPU, or never ran (duration 0), are left out without a
 * message each and counted in one line; the logs hold many of both. The
 * trace names no model: jobs get the default slowdowns (models.c).
 * Read with the CSV reader and the record checks of trace.c; called from
 * sim.c for --format helios.
 */
#include <math.h>
#include <stdlib.h>

#include "sim.h"

int ddl_sim_load_helios(const char *path, struct ddl_sim_trace *t,
                        const struct ddl_sim_load_opts *o)
{
	struct ddl_sim_csv c;
	if (ddl_sim_csv_open(&c, path) < 0)
		return -1;
	int cid = ddl_sim_csv_col(&c, "job_id"), cg = ddl_sim_csv_col(&c, "gpu_num");
	int csub = ddl_sim_csv_col(&c, "submit_time"), cdur = ddl_sim_csv_col(&c, "duration");
	int cst = ddl_sim_csv_col(&c, "start_time"), cend = ddl_sim_csv_col(&c, "end_time");
	if (cg < 0 || csub < 0 || (cdur < 0 && (cst < 0 || cend < 0)))
		return ddl_sim_csv_refuse(&c, "Helios cluster log (the header needs gpu_num, "
		                              "submit_time, and duration or start_time and end_time)");
	size_t first = t->n, idle = 0;
	int rc = 0;
	double t0 = INFINITY;
	while (ddl_sim_csv_next(&c)) {
		double sub, dur = 0, st, en;
		long g;
		const char *why = NULL;
		if (c.nfield < c.nhead)
			why = "too few fields";
		else if (ddl_sim_parse_int(ddl_sim_csv_get(&c, cg), &g) < 0 || g < 0 || g > 1000000)
			why = "gpu_num is not a count";
		else if (ddl_sim_parse_time(ddl_sim_csv_get(&c, csub), &sub) < 0)
			why = "submit_time is not a time (a date or 0..1e10 s)";
		else if (cdur >= 0 && (ddl_sim_parse_double(ddl_sim_csv_get(&c, cdur), &dur) < 0 ||
		                       !ddl_sim_time_ok(dur)))
			why = "duration is not a time in 0..1e10 s";
		else if (cdur < 0 && (ddl_sim_parse_time(ddl_sim_csv_get(&c, cst), &st) < 0 ||
		                      ddl_sim_parse_time(ddl_sim_csv_get(&c, cend), &en) < 0))
			why = "start_time or end_time is not a time (a date or 0..1e10 s)";
		if (!why && cdur < 0)
			dur = en - st;
		if (!why && dur < 0)
			why = "the job ends before it starts";
		if (why) {
			if (ddl_sim_csv_bad(t, o, &c, why) < 0) {
				rc = -1;
				break;
			}
			continue;
		}
		if (g == 0 || dur == 0) {
			idle++;
			continue;
		}
		char id[48];
		ddl_sim_csv_id(&c, cid, id, sizeof id);
		if (!ddl_sim_trace_add(t, id, sub, (int)g, dur, NULL)) {
			fprintf(stderr, "ddlprof-sim: %s: out of memory\n", path);
			rc = -1;
			break;
		}
		if (sub < t0)
			t0 = sub;
	}
	ddl_sim_csv_close(&c);
	for (size_t i = first; i < t->n; i++) {
		t->jobs[i].arrival -= t0;
		if (!ddl_sim_time_ok(t->jobs[i].arrival)) {
			/* Cannot happen with every submit_time in 0..1e10 s. */
			fprintf(stderr, "ddlprof-sim: %s: job %s arrives at %g s, not a time\n", path,
			        t->jobs[i].id, t->jobs[i].arrival);
			rc = -1;
		}
	}
	if (idle)
		fprintf(stderr, "ddlprof-sim: %s: left out %zu jobs that used no GPU or never ran\n", path,
		        idle);
	return rc;
}
