/*
 * Our own job-trace CSV, read with the CSV reader and the record checks
 * the loaders share (trace.c); sim.c picks this loader for --format csv.
 *
 * Our format, one job per line after a header naming the columns, in any
 * order (ddlprof-sim --generate writes it):
 *   id            job name (any text without commas)
 *   arrival_s     submission time, seconds (0 .. DDL_SIM_MAX_TIME, 1e10)
 *   gpus          GPUs the job needs (>= 1)
 *   duration_s    run time on its tightest feasible placement, seconds
 *                 (> 0, at most DDL_SIM_MAX_TIME); may be left empty, or the
 *                 column left out, when iterations gives the run instead
 *   iterations    optional; iterations the job runs (> 0), used when
 *                 duration_s is empty: the run time is iterations x the
 *                 iteration time, times the slowdown of the job's tightest
 *                 level when it cannot fit on one machine
 *   iteration_s   optional; seconds an iteration with all the job's GPUs on
 *                 one machine; without it the time comes from the job's
 *                 profile or --profiles DIR/<model>.json
 *                 (job.sensitivity.iteration_s.machine)
 *   model         optional; picks the slowdown row of models.c
 *   slowdown_rack, slowdown_cluster
 *                 optional; the job's own slowdowns (>= 1) when spread over
 *                 machines of one rack / over racks, overriding the model's
 *                 (for instance from a ddlprof profile's job.sensitivity)
 *   profile       optional; a ddlprof-report/1 JSON report, relative to the
 *                 trace file's directory unless absolute, whose
 *                 job.sensitivity.slowdown gives the job's slowdowns
 *                 (load_profile.c); slowdown_* columns still override it
 */
#include <stdio.h>

#include "sim.h"

int ddl_sim_load_csv(const char *path, struct ddl_sim_trace *t, const struct ddl_sim_load_opts *o)
{
	struct ddl_sim_csv c;
	if (ddl_sim_csv_open(&c, path) < 0)
		return -1;
	int cid = ddl_sim_csv_col(&c, "id"), carr = ddl_sim_csv_col(&c, "arrival_s");
	int cg = ddl_sim_csv_col(&c, "gpus"), cdur = ddl_sim_csv_col(&c, "duration_s");
	int cmod = ddl_sim_csv_col(&c, "model");
	int csr = ddl_sim_csv_col(&c, "slowdown_rack"), csc = ddl_sim_csv_col(&c, "slowdown_cluster");
	int cprof = ddl_sim_csv_col(&c, "profile");
	int cit = ddl_sim_csv_col(&c, "iterations"), cits = ddl_sim_csv_col(&c, "iteration_s");
	struct ddl_sim_profiles own = {0}, *cache = o->profiles ? o->profiles : &own;
	if (cid < 0 || carr < 0 || cg < 0 || (cdur < 0 && cit < 0))
		return ddl_sim_csv_refuse(&c, "ddlprof-sim CSV (the header needs id, arrival_s, gpus, "
		                              "and duration_s or iterations)");
	int rc = 0;
	while (ddl_sim_csv_next(&c)) {
		double arr, dur = 0, iters = 0, iter_s = 0, sr = 0, sc = 0;
		long g;
		const char *why = NULL;
		if (c.nfield < c.nhead)
			why = "too few fields";
		else if (ddl_sim_parse_double(ddl_sim_csv_get(&c, carr), &arr) < 0 ||
		         !ddl_sim_time_ok(arr))
			why = "arrival_s is not a time in 0..1e10 s";
		else if (ddl_sim_parse_int(ddl_sim_csv_get(&c, cg), &g) < 0 || g < 1 || g > 1000000)
			why = "gpus is not a count >= 1";
		else if ((why = ddl_sim_record_run(cdur >= 0 ? ddl_sim_csv_get(&c, cdur) : NULL,
		                                   cit >= 0 ? ddl_sim_csv_get(&c, cit) : NULL,
		                                   cits >= 0 ? ddl_sim_csv_get(&c, cits) : NULL,
		                                   "duration_s", &dur, &iters, &iter_s)))
			;
		else if (csr >= 0 && *ddl_sim_csv_get(&c, csr) &&
		         (ddl_sim_parse_double(ddl_sim_csv_get(&c, csr), &sr) < 0 || sr < 1))
			why = "slowdown_rack is not a factor >= 1";
		else if (csc >= 0 && *ddl_sim_csv_get(&c, csc) &&
		         (ddl_sim_parse_double(ddl_sim_csv_get(&c, csc), &sc) < 0 || sc < 1))
			why = "slowdown_cluster is not a factor >= 1";
		const struct ddl_sim_profile *prof = NULL;
		char pwhy[4600];
		if (!why) {
			int k = ddl_sim_record_profile(cache, path, cprof >= 0 ? ddl_sim_csv_get(&c, cprof) : "",
			                               &prof, pwhy, sizeof pwhy);
			if (k < 0) {
				fprintf(stderr, "ddlprof-sim: %s: out of memory\n", path);
				rc = -1;
				break;
			}
			if (k > 0)
				why = pwhy;
		}
		if (why) {
			if (ddl_sim_csv_bad(t, o, &c, why) < 0) {
				rc = -1;
				break;
			}
			continue;
		}
		struct ddl_sim_job *j = ddl_sim_trace_add(t, ddl_sim_csv_get(&c, cid), arr, (int)g, dur,
		                                          ddl_sim_csv_get(&c, cmod));
		if (!j) {
			fprintf(stderr, "ddlprof-sim: %s: out of memory\n", path);
			rc = -1;
			break;
		}
		j->iterations = iters;
		j->iter_s = iter_s;
		ddl_sim_record_speed(j, prof, sr, sc);
	}
	ddl_sim_profiles_free(&own);
	ddl_sim_csv_close(&c);
	return rc;
}
