/*
 * What the simulator reports once the engine has run: the summary
 * (makespan, JCT mean and percentiles, queueing, communication overhead,
 * utilization) as text or as "ddlprof-sim/1" JSON, and the per-job records
 * of --jobs-out, each to the stream sim.c opened (stdout, or -o's and
 * --jobs-out's files by ddlprof/cli.h's rule). Everything is printed in
 * job arrival order with fixed precision, so the same run prints the same
 * bytes.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static const char *const ddl_sim_level_names[DDL_SIM_LEVELS] = {"machine", "rack", "cluster"};
static const char *const ddl_sim_slow_names[] = {"table", "trace", "profile"}; /* DDL_SIM_SLOW_* */

/* A JSON number, or null for a non-finite one (json_real(NaN) is NULL,
 * which json_object_set_new would silently drop). */
static json_t *ddl_sim_json_num(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

/* A number for the text output, or "n/a" when it is not finite. */
static const char *ddl_sim_text_num(char *buf, size_t n, const char *fmt, double x)
{
	if (!isfinite(x))
		return "n/a";
	snprintf(buf, n, fmt, x);
	return buf;
}

static int ddl_sim_cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

/* Nearest-rank percentile of sorted v[0..n). */
static double ddl_sim_pct(const double *v, size_t n, double p)
{
	if (!n)
		return 0;
	size_t k = (size_t)ceil(p / 100 * (double)n);
	return v[k ? k - 1 : 0];
}

void ddl_sim_summarize(const struct ddl_sim *s, struct ddl_sim_summary *m)
{
	memset(m, 0, sizeof *m);
	m->jobs = s->njobs;
	double *jct = malloc(sizeof *jct * (s->njobs + 1));
	double first = INFINITY, last = 0, sum = 0, queued = 0;
	for (size_t i = 0; i < s->njobs; i++) {
		const struct ddl_sim_job *j = &s->jobs[i];
		if (j->arrival < first)
			first = j->arrival;
		m->profiled += j->slow_from == DDL_SIM_SLOW_PROFILE;
		if (j->state != DDL_SIM_DONE)
			continue;
		if (j->finish > last)
			last = j->finish;
		if (jct)
			jct[m->completed] = j->finish - j->arrival;
		m->completed++;
		sum += j->finish - j->arrival;
		queued += j->queued;
		m->comm_overhead += j->comm_lost;
		m->placed[j->first_level]++;
	}
	if (m->completed) {
		m->makespan = last - first;
		m->jct_mean = sum / (double)m->completed;
		m->queue_mean = queued / (double)m->completed;
		if (jct) {
			qsort(jct, m->completed, sizeof *jct, ddl_sim_cmp_double);
			m->jct_p50 = ddl_sim_pct(jct, m->completed, 50);
			m->jct_p90 = ddl_sim_pct(jct, m->completed, 90);
			m->jct_p99 = ddl_sim_pct(jct, m->completed, 99);
		}
	}
	if (m->makespan > 0)
		m->utilization = s->busy_gpu_s / ((double)s->cl.gpus * m->makespan);
	free(jct);
}

int ddl_sim_print_text(FILE *f, const struct ddl_sim *s, const struct ddl_sim_summary *m,
                       size_t skipped)
{
	const struct ddl_sim_cluster *c = &s->cl;
	fprintf(f, "policy          %s (%s)\n", s->policy->name, s->policy->summary);
	fprintf(f, "cluster         %dx%dx%d, %d GPUs; lease %g s, restart cost %g s\n", c->racks,
	        c->mpr, c->gpm, c->gpus, s->cfg.lease, s->cfg.restart_cost);
	fprintf(f, "jobs            %zu simulated, %zu completed, %zu skipped\n", m->jobs, m->completed,
	        skipped);
	char b[5][64];
	fprintf(f, "makespan        %s s\n", ddl_sim_text_num(b[0], sizeof b[0], "%.1f", m->makespan));
	fprintf(f, "JCT             mean %s s, p50 %s s, p90 %s s, p99 %s s\n",
	        ddl_sim_text_num(b[0], sizeof b[0], "%.1f", m->jct_mean),
	        ddl_sim_text_num(b[1], sizeof b[1], "%.1f", m->jct_p50),
	        ddl_sim_text_num(b[2], sizeof b[2], "%.1f", m->jct_p90),
	        ddl_sim_text_num(b[3], sizeof b[3], "%.1f", m->jct_p99));
	fprintf(f, "queueing        mean %s s\n",
	        ddl_sim_text_num(b[0], sizeof b[0], "%.1f", m->queue_mean));
	fprintf(f, "comm overhead   %s s in all (time lost to loose placement)\n",
	        ddl_sim_text_num(b[0], sizeof b[0], "%.1f", m->comm_overhead));
	fprintf(f, "GPU utilization %s%%\n",
	        ddl_sim_text_num(b[0], sizeof b[0], "%.1f", 100 * m->utilization));
	fprintf(f, "first placed    machine %zu, rack %zu, cluster %zu\n", m->placed[0], m->placed[1],
	        m->placed[2]);
	fprintf(f, "preemptions     %zu; migrations %zu\n", s->preemptions, s->migrations);
	if (m->profiled)
		fprintf(f, "profiles        %zu job%s with slowdowns from ddlprof profiles\n", m->profiled,
		        m->profiled == 1 ? "" : "s");
	return ferror(f) ? -1 : 0;
}

/*
 * dally's auto-tuned timers as they stand at the end: per GPU-demand bucket
 * that has any history and per level waited for (machine, rack), the waits
 * remembered, their mean and standard deviation, and the timer in leases
 * (DDL_SIM_TIMER_MIN..MAX). So the tuning can be checked from outside.
 */
static json_t *ddl_sim_json_timers(const struct ddl_sim *s)
{
	json_t *a = json_array();
	for (int b = 0; a && b < DDL_SIM_TIMER_BUCKETS; b++)
		for (int l = 0; l < 2; l++) {
			const struct ddl_sim_timer *t = &s->timers[b][l];
			if (!t->n)
				continue;
			json_t *e = json_object();
			json_object_set_new(e, "gpus_min", json_integer((json_int_t)1 << b));
			json_object_set_new(e, "gpus_max", b == DDL_SIM_TIMER_BUCKETS - 1
			                                           ? json_null()
			                                           : json_integer(((json_int_t)2 << b) - 1));
			json_object_set_new(e, "level", json_string(ddl_sim_level_names[l]));
			json_object_set_new(e, "waits", json_integer(t->n));
			json_object_set_new(e, "wait_mean_s", ddl_sim_json_num(t->mean_s));
			json_object_set_new(e, "wait_sd_s", ddl_sim_json_num(t->sd_s));
			json_object_set_new(e, "leases", json_integer(t->leases));
			json_array_append_new(a, e);
		}
	return a;
}

int ddl_sim_print_json(FILE *f, const struct ddl_sim *s, const struct ddl_sim_summary *m,
                       size_t skipped)
{
	const struct ddl_sim_cluster *c = &s->cl;
	json_t *o = json_object(), *cl = json_object(), *bw = json_object(), *pl = json_object();
	if (!o || !cl || !bw || !pl)
		return -1;
	json_object_set_new(o, "schema", json_string(DDL_SIM_SCHEMA));
	json_object_set_new(o, "policy", json_string(s->policy->name));
	json_object_set_new(cl, "racks", json_integer(c->racks));
	json_object_set_new(cl, "machines_per_rack", json_integer(c->mpr));
	json_object_set_new(cl, "gpus_per_machine", json_integer(c->gpm));
	json_object_set_new(cl, "gpus", json_integer(c->gpus));
	for (int l = 0; l < DDL_SIM_LEVELS; l++)
		json_object_set_new(bw, ddl_sim_level_names[l],
		                    c->bw[l] > 0 ? ddl_sim_json_num(c->bw[l]) : json_null());
	json_object_set_new(cl, "bw_gbps", bw);
	json_object_set_new(o, "cluster", cl);
	json_object_set_new(o, "lease_s", ddl_sim_json_num(s->cfg.lease));
	json_object_set_new(o, "restart_cost_s", ddl_sim_json_num(s->cfg.restart_cost));
	json_object_set_new(o, "seed", json_integer((json_int_t)s->cfg.seed));
	json_object_set_new(o, "jobs", json_integer((json_int_t)m->jobs));
	json_object_set_new(o, "jobs_completed", json_integer((json_int_t)m->completed));
	json_object_set_new(o, "jobs_skipped", json_integer((json_int_t)skipped));
	json_object_set_new(o, "makespan_s", ddl_sim_json_num(m->makespan));
	json_object_set_new(o, "jct_mean_s", ddl_sim_json_num(m->jct_mean));
	json_object_set_new(o, "jct_p50_s", ddl_sim_json_num(m->jct_p50));
	json_object_set_new(o, "jct_p90_s", ddl_sim_json_num(m->jct_p90));
	json_object_set_new(o, "jct_p99_s", ddl_sim_json_num(m->jct_p99));
	json_object_set_new(o, "queue_mean_s", ddl_sim_json_num(m->queue_mean));
	json_object_set_new(o, "comm_overhead_s", ddl_sim_json_num(m->comm_overhead));
	json_object_set_new(o, "gpu_utilization", ddl_sim_json_num(m->utilization));
	for (int l = 0; l < DDL_SIM_LEVELS; l++)
		json_object_set_new(pl, ddl_sim_level_names[l], json_integer((json_int_t)m->placed[l]));
	json_object_set_new(o, "first_placement", pl);
	json_object_set_new(o, "preemptions", json_integer((json_int_t)s->preemptions));
	json_object_set_new(o, "migrations", json_integer((json_int_t)s->migrations));
	json_object_set_new(o, "jobs_profiled", json_integer((json_int_t)m->profiled));
	if (s->policy == &ddl_sim_policy_dally) {
		json_t *tm = ddl_sim_json_timers(s);
		if (!tm) {
			json_decref(o);
			return -1;
		}
		json_object_set_new(o, "dally_timers", tm);
	}
	int rc = json_dumpf(o, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
	fputc('\n', f);
	json_decref(o);
	return rc < 0 || ferror(f) ? -1 : 0;
}

int ddl_sim_write_jobs(FILE *f, int csv, const struct ddl_sim *s)
{
	if (csv)
		fprintf(f, "id,model,gpus,arrival_s,start_s,finish_s,jct_s,queue_s,duration_s,"
		           "comm_overhead_s,restart_s,first_level,preemptions,migrations,"
		           "slowdown_rack,slowdown_cluster,slowdown_from\n");
	for (size_t i = 0; i < s->njobs; i++) {
		const struct ddl_sim_job *j = &s->jobs[i];
		const char *lvl = ddl_sim_level_names[j->first_level];
		if (csv) {
			fprintf(f, "%s,%s,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%s,%d,%d,%.6g,%.6g,%s\n",
			        j->id, j->model, j->gpus, j->arrival, j->first_start, j->finish,
			        j->finish - j->arrival, j->queued, j->work, j->comm_lost, j->restart_s, lvl,
			        j->preemptions, j->migrations, j->slow[DDL_SIM_RACK],
			        j->slow[DDL_SIM_CLUSTER], ddl_sim_slow_names[j->slow_from]);
			continue;
		}
		json_t *o = json_object();
		json_object_set_new(o, "id", json_string(j->id));
		json_object_set_new(o, "model", json_string(j->model));
		json_object_set_new(o, "gpus", json_integer(j->gpus));
		json_object_set_new(o, "arrival_s", ddl_sim_json_num(j->arrival));
		json_object_set_new(o, "start_s", ddl_sim_json_num(j->first_start));
		json_object_set_new(o, "finish_s", ddl_sim_json_num(j->finish));
		json_object_set_new(o, "jct_s", ddl_sim_json_num(j->finish - j->arrival));
		json_object_set_new(o, "queue_s", ddl_sim_json_num(j->queued));
		json_object_set_new(o, "duration_s", ddl_sim_json_num(j->work));
		json_object_set_new(o, "comm_overhead_s", ddl_sim_json_num(j->comm_lost));
		json_object_set_new(o, "restart_s", ddl_sim_json_num(j->restart_s));
		json_object_set_new(o, "first_level", json_string(lvl));
		json_object_set_new(o, "preemptions", json_integer(j->preemptions));
		json_object_set_new(o, "migrations", json_integer(j->migrations));
		json_object_set_new(o, "slowdown_rack", ddl_sim_json_num(j->slow[DDL_SIM_RACK]));
		json_object_set_new(o, "slowdown_cluster", ddl_sim_json_num(j->slow[DDL_SIM_CLUSTER]));
		json_object_set_new(o, "slowdown_from", json_string(ddl_sim_slow_names[j->slow_from]));
		json_dumpf(o, f, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
		fputc('\n', f);
		json_decref(o);
	}
	return ferror(f) ? -1 : 0;
}
