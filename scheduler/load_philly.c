/*
 * The Microsoft Philly trace's cluster_job_log: one JSON array of jobs,
 * each {jobid, user, status, vc, submitted_time, attempts: [{start_time,
 * end_time, detail: [{ip, gpus: [...]}]}]}, times "YYYY-MM-DD HH:MM:SS".
 * What we take: the arrival is submitted_time, relative to the earliest
 * submission in the file; the GPU demand is the number of GPUs listed in
 * the last attempt's detail (across its machines); the duration is that
 * attempt's end_time - start_time (the run that finished the job, whatever
 * its status). Records without attempts, with an unfinished last attempt
 * (end_time null or "None") or with no GPUs are bad records, and so are
 * times outside 0..1e10 s (DDL_SIM_MAX_TIME: dates from 1970 to 2286,
 * fields in range) and runs longer than that. The trace
 * names no model: jobs get the default slowdowns. Called from sim.c for
 * --format philly.
 */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "sim.h"

static int ddl_sim_philly_time(json_t *v, double *t)
{
	return json_is_string(v) ? ddl_sim_parse_time(json_string_value(v), t) : -1;
}

/* Reads one record; returns NULL or why it is bad. */
static const char *ddl_sim_philly_job(json_t *rec, double *sub, int *gpus, double *dur,
                                      const char **id)
{
	if (!json_is_object(rec))
		return "not a JSON object";
	json_t *jid = json_object_get(rec, "jobid");
	*id = json_is_string(jid) ? json_string_value(jid) : "";
	if (ddl_sim_philly_time(json_object_get(rec, "submitted_time"), sub) < 0)
		return "submitted_time is missing or not a time (a date from 1970 or 0..1e10 s)";
	json_t *att = json_object_get(rec, "attempts");
	if (!json_is_array(att) || !json_array_size(att))
		return "no attempts";
	json_t *last = json_array_get(att, json_array_size(att) - 1);
	double st, en;
	if (ddl_sim_philly_time(json_object_get(last, "start_time"), &st) < 0)
		return "the last attempt's start_time is missing or not a time "
		       "(a date from 1970 or 0..1e10 s)";
	if (ddl_sim_philly_time(json_object_get(last, "end_time"), &en) < 0)
		return "the last attempt's end_time is missing or not a time "
		       "(a date from 1970 or 0..1e10 s)";
	if (en <= st)
		return "the last attempt ends before it starts";
	if (!ddl_sim_time_ok(en - st))
		return "the last attempt runs longer than 1e10 s";
	json_t *detail = json_object_get(last, "detail"), *d;
	size_t i;
	long n = 0;
	json_array_foreach(detail, i, d) n += (long)json_array_size(json_object_get(d, "gpus"));
	if (n < 1)
		return "the last attempt lists no GPUs";
	*gpus = (int)n;
	*dur = en - st;
	return NULL;
}

int ddl_sim_load_philly(const char *path, struct ddl_sim_trace *t,
                        const struct ddl_sim_load_opts *o)
{
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je);
	if (!root) {
		if (je.line < 0 || strstr(je.text, "unable to open"))
			fprintf(stderr, "ddlprof-sim: %s: %s\n", path, je.text);
		else
			fprintf(stderr, "ddlprof-sim: %s: not a Philly job log: line %d: %s\n", path,
			        je.line, je.text);
		return -1;
	}
	if (!json_is_array(root)) {
		fprintf(stderr, "ddlprof-sim: %s: not a Philly job log (expected a JSON array of jobs)\n",
		        path);
		json_decref(root);
		return -1;
	}
	size_t first = t->n, i;
	double t0 = INFINITY;
	int rc = 0;
	json_t *rec;
	json_array_foreach(root, i, rec) {
		double sub = 0, dur = 0;
		int gpus = 0;
		const char *id = "";
		const char *why = ddl_sim_philly_job(rec, &sub, &gpus, &dur, &id);
		if (why) {
			char where[4200];
			snprintf(where, sizeof where, "%s: record %zu%s%s", path, i + 1, *id ? " " : "", id);
			if (ddl_sim_bad_record(t, o, path, where, why) < 0) {
				rc = -1;
				break;
			}
			continue;
		}
		char name[48];
		if (*id)
			snprintf(name, sizeof name, "%s", id);
		else
			snprintf(name, sizeof name, "record%zu", i + 1);
		if (!ddl_sim_trace_add(t, name, sub, gpus, dur, NULL)) {
			fprintf(stderr, "ddlprof-sim: %s: out of memory\n", path);
			rc = -1;
			break;
		}
		if (sub < t0)
			t0 = sub;
	}
	json_decref(root);
	for (size_t k = first; k < t->n; k++) {
		t->jobs[k].arrival -= t0;
		if (!ddl_sim_time_ok(t->jobs[k].arrival)) {
			/* Cannot happen with every submitted_time in 0..1e10 s. */
			fprintf(stderr, "ddlprof-sim: %s: job %s arrives at %g s, not a time\n", path,
			        t->jobs[k].id, t->jobs[k].arrival);
			rc = -1;
		}
	}
	return rc;
}
