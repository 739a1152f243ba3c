/*
 * The Tiresias simulator's job CSV (SymbioticLab/Tiresias, simulator/
 * *_job.csv): job_id, num_gpu, submit_time (s), iterations, model_name,
 * duration (s), interval. We take job_id, num_gpu, submit_time, duration
 * and model_name; where a row's duration is empty (or the file has no
 * duration column) its iterations give the run instead, at the iteration
 * time of the model's ddlprof profile, --profiles DIR/<model_name>.json
 * (sim.c), since the format carries no time per iteration. interval is not
 * needed. Columns are found by header name. Times outside 0..1e10 s
 * (DDL_SIM_MAX_TIME) are bad records. Read with the CSV reader and the
 * record checks of trace.c; called from sim.c for --format tiresias.
 */
#include <stdlib.h>

#include "sim.h"

int ddl_sim_load_tiresias(const char *path, struct ddl_sim_trace *t,
                          const struct ddl_sim_load_opts *o)
{
	struct ddl_sim_csv c;
	if (ddl_sim_csv_open(&c, path) < 0)
		return -1;
	int cid = ddl_sim_csv_col(&c, "job_id"), cg = ddl_sim_csv_col(&c, "num_gpu");
	int csub = ddl_sim_csv_col(&c, "submit_time"), cdur = ddl_sim_csv_col(&c, "duration");
	int cmod = ddl_sim_csv_col(&c, "model_name"), cit = ddl_sim_csv_col(&c, "iterations");
	if (cg < 0 || csub < 0 || (cdur < 0 && cit < 0))
		return ddl_sim_csv_refuse(&c, "Tiresias job CSV (the header needs num_gpu, submit_time, "
		                              "and duration or iterations)");
	int rc = 0;
	while (ddl_sim_csv_next(&c)) {
		double sub, dur, iters, iter_s;
		long g;
		const char *why = NULL;
		if (c.nfield < c.nhead)
			why = "too few fields";
		else if (ddl_sim_parse_int(ddl_sim_csv_get(&c, cg), &g) < 0 || g < 1 || g > 1000000)
			why = "num_gpu is not a count >= 1";
		else if (ddl_sim_parse_double(ddl_sim_csv_get(&c, csub), &sub) < 0 ||
		         !ddl_sim_time_ok(sub))
			why = "submit_time is not a time in 0..1e10 s";
		else
			why = ddl_sim_record_run(cdur >= 0 ? ddl_sim_csv_get(&c, cdur) : NULL,
			                         cit >= 0 ? ddl_sim_csv_get(&c, cit) : NULL, NULL, "duration",
			                         &dur, &iters, &iter_s);
		if (why) {
			if (ddl_sim_csv_bad(t, o, &c, why) < 0) {
				rc = -1;
				break;
			}
			continue;
		}
		char id[48];
		ddl_sim_csv_id(&c, cid, id, sizeof id);
		struct ddl_sim_job *j = ddl_sim_trace_add(t, id, sub, (int)g, dur, ddl_sim_csv_get(&c, cmod));
		if (!j) {
			fprintf(stderr, "ddlprof-sim: %s: out of memory\n", path);
			rc = -1;
			break;
		}
		j->iterations = iters;
	}
	ddl_sim_csv_close(&c);
	return rc;
}
