/*
 * ddlprof-recommend --slurm: the sbatch options that ask Slurm for network
 * locality by delay scheduling, for a profiled job. Slurm's
 * --switches=COUNT@MAX_WAIT keeps a job pending until its nodes sit under
 * at most COUNT leaf switches, or MAX_WAIT has passed: the delay
 * scheduling of ddlprof-sim's dally policy, with the leaf switch as the
 * rack. recommend.c parses the options and calls this file after the
 * profiles are loaded (profile.c), and the report is read here again (a
 * trace directory's through spawn.c); the rule is in ddlprof-recommend(1),
 * SLURM:
 *
 *   loss     = 1 - slowdown.rack / slowdown.cluster, from the report's
 *              job.sensitivity: the share of an iteration lost when the
 *              job's nodes span leaf switches instead of sharing one
 *   COUNT    = ceil(nodes / --nodes-per-switch) (1 without it) when the
 *              job has several nodes and loss >= --switch-threshold;
 *              otherwise no --switches
 *   MAX_WAIT = mean + 2 standard deviations of the last 32 waits of jobs
 *              of the same GPU demand (powers of two, as dally's timers),
 *              from --wait-history or the default table below; no more
 *              than the time one switch saves over the whole run when its
 *              length is given, iterations x (T(cluster) - T(rack)); then
 *              within 60 .. 2400 s, rounded up to whole minutes. A job
 *              that would save less than the lower bound is not delayed.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rec.h"

#ifndef DDLPROF_VERSION
#define DDLPROF_VERSION "unknown"
#endif

#define DDL_SLURM_HISTORY 32          /* waits per demand, as ddlprof-sim's DDL_SIM_TIMER_HISTORY */
#define DDL_SLURM_BUCKETS 12          /* demand buckets: 1, 2-3, 4-7, ... 2048+ */
/* Bytes: a report this long or longer is refused (1 GiB less the byte the
 * former reader here kept free). */
#define DDL_SLURM_REPORT_MAX ((1u << 30) - 1)

/*
 * Waits for a tight placement when no history is given, per GPU demand:
 * mean and standard deviation, seconds. ASSUMPTIONS, not measurements:
 * the shape follows the Philly analysis (Jeon et al., USENIX ATC 2019,
 * section 3.1), where jobs asking for more GPUs wait longer for locality;
 * the figures are ours. Measure your cluster's with --wait-history (sacct
 * gives each job's Eligible and Start times).
 */
static const struct {
	int lo;                       /* GPUs, this bucket and up to the next */
	double mean_s, sd_s;
} ddl_slurm_default_waits[] = {
	{1, 60, 30}, {8, 120, 60}, {16, 240, 120}, {32, 480, 240}, {64, 900, 450}, {128, 1200, 600},
};

/* Demand bucket of N GPUs: floor(log2 N), as dally's timers. */
static int ddl_slurm_bucket(int n)
{
	int b = 0;
	while (b < DDL_SLURM_BUCKETS - 1 && (1L << (b + 1)) <= n)
		b++;
	return b;
}

/* ddlprof-report --json DIR's output, or NULL with ERR. */
static char *ddl_slurm_run_report(const char *bin, const char *dir, size_t *len, char *err,
                                  size_t errlen)
{
	char *out;
	int st, e;
	int k = ddl_spawn_report(bin, dir, DDL_SLURM_REPORT_MAX, &out, len, &st, &e);
	if (k == DDL_SPAWN_PIPE)
		snprintf(err, errlen, "%s: pipe: %s", dir, strerror(e));
	else if (k == DDL_SPAWN_START)
		snprintf(err, errlen, "%s: cannot run %s: %s", dir, bin, strerror(e));
	else if (k == DDL_SPAWN_READ || !WIFEXITED(st) || WEXITSTATUS(st) > 1 || !*len)
		snprintf(err, errlen, "%s: %s --json failed%s%s", dir, bin, out ? "" : ": ",
		         out ? "" : strerror(e));
	else
		return out;
	free(out);
	return NULL;
}

/* The report PATH names, as profile.c reads it: a JSON file, DIR/report.json, or a trace DIR. */
static json_t *ddl_slurm_load(const char *path, const char *report_bin, char *err, size_t errlen)
{
	char file[4200];
	struct stat st;
	size_t len = 0;
	char *buf = NULL;
	snprintf(file, sizeof file, "%s", path);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(file, sizeof file, "%s/report.json", path);
		if (access(file, F_OK) < 0) {
			if (!(buf = ddl_slurm_run_report(report_bin, path, &len, err, errlen)))
				return NULL;
			snprintf(file, sizeof file, "%s", path);
		}
	}
	if (!buf) {
		int fd = open(file, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || !(buf = ddl_slurp_fd(fd, &len, DDL_SLURM_REPORT_MAX))) {
			snprintf(err, errlen, "%s: %s", file, strerror(errno));
			if (fd >= 0)
				close(fd);
			return NULL;
		}
		close(fd);
	}
	json_error_t je;
	json_t *root = json_loadb(buf, len, 0, &je);
	free(buf);
	if (!root)
		snprintf(err, errlen, "%s: line %d: not valid JSON: %s", file, je.line, je.text);
	return root;
}

/* A finite number >= LO at KEY of O; 0, or -1 with ERR naming FIELD. */
static int ddl_slurm_num(json_t *o, const char *key, double lo, double *v, const char *file,
                         const char *field, char *err, size_t errlen)
{
	json_t *j = json_object_get(o, key);
	double x = json_is_number(j) ? json_number_value(j) : NAN;
	if (!isfinite(x) || x < lo || x > 1e12) {
		snprintf(err, errlen, "%s: job.sensitivity.%s%s: must be a number from %g (--slurm needs "
		         "the report's network sensitivity)", file, field, key, lo);
		return -1;
	}
	*v = x;
	return 0;
}

/* job.sensitivity of the report: the slowdowns and iteration times per level. */
static int ddl_slurm_sensitivity(json_t *root, const char *file, struct ddl_slurm *s, char *err,
                                 size_t errlen)
{
	json_t *sens = json_object_get(json_object_get(root, "job"), "sensitivity");
	if (!json_is_object(sens)) {
		snprintf(err, errlen, "%s: job.sensitivity: %s; --slurm needs the report's network "
		         "sensitivity (a run with iterations and traffic)", file,
		         sens ? "null" : "missing (a report older than the sensitivity)");
		return -1;
	}
	json_t *sd = json_object_get(sens, "slowdown"), *it = json_object_get(sens, "iteration_s");
	if (ddl_slurm_num(sens, "score", 0, &s->score, file, "", err, errlen) < 0 ||
	    ddl_slurm_num(sd, "rack", 1, &s->slow_rack, file, "slowdown.", err, errlen) < 0 ||
	    ddl_slurm_num(sd, "cluster", 1, &s->slow_cluster, file, "slowdown.", err, errlen) < 0)
		return -1;
	/* iteration times are needed only to weigh the wait against the run */
	s->iter_rack = s->iter_cluster = -1;
	if (json_is_object(it) &&
	    (ddl_slurm_num(it, "rack", 0, &s->iter_rack, file, "iteration_s.", err, errlen) < 0 ||
	     ddl_slurm_num(it, "cluster", 0, &s->iter_cluster, file, "iteration_s.", err, errlen) < 0))
		return -1;
	return 0;
}

/*
 * --wait-history FILE: "demand,wait_s" lines (a header line is allowed, #
 * starts a comment), oldest first. Collects the last DDL_SLURM_HISTORY
 * waits of DEMAND's bucket into W. Returns their count, or -1 with ERR
 * naming the line.
 */
static int ddl_slurm_history(const char *path, int demand, double *w, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "--wait-history %s: %s", path, strerror(errno));
		return -1;
	}
	char line[512];
	long lineno = 0;
	int n = 0, next = 0, rc = 0, want = ddl_slurm_bucket(demand);
	while (fgets(line, sizeof line, f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, errlen, "%s:%ld: line longer than %zu bytes", path, lineno, sizeof line - 2);
			rc = -1;
			break;
		}
		line[strcspn(line, "#\r\n")] = 0;
		char *p = line + strspn(line, " \t");
		if (!*p || (lineno == 1 && !strncmp(p, "demand", 6)))
			continue;
		char *end, *end2 = NULL;
		errno = 0;
		long d = strtol(p, &end, 10);
		end += strspn(end, " \t");
		double x = *end == ',' ? strtod(end + 1, &end2) : NAN;
		if (*end == ',')
			end2 += strspn(end2, " \t");
		if (errno || end == p || *end != ',' || end2 == end + 1 || *end2 || d < 1 || d > 1000000 ||
		    !isfinite(x) || x < 0 || x > 1e9) {
			snprintf(err, errlen, "%s:%ld: want demand,wait_s (GPUs 1..1000000, seconds 0..1e9)",
			         path, lineno);
			rc = -1;
			break;
		}
		if (ddl_slurm_bucket((int)d) != want)
			continue;
		w[next] = x;
		next = (next + 1) % DDL_SLURM_HISTORY;
		if (n < DDL_SLURM_HISTORY)
			n++;
	}
	if (rc == 0 && ferror(f)) {
		snprintf(err, errlen, "--wait-history %s: %s", path, strerror(errno));
		rc = -1;
	}
	fclose(f);
	return rc < 0 ? -1 : n;
}

/* H:MM:SS, one of sbatch's time formats. */
static void ddl_slurm_hms(double s, char *buf, size_t n)
{
	long t = (long)ceil(s);
	snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

int ddl_slurm_plan(const struct ddl_profile *p, const char *path, const char *report_bin,
                   const struct ddl_slurm_opts *o, struct ddl_slurm *s, char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	json_t *root = ddl_slurm_load(path, report_bin, err, errlen);
	if (!root)
		return -1;
	int rc = ddl_slurm_sensitivity(root, p->file, s, err, errlen);
	json_decref(root);
	if (rc < 0)
		return -1;
	s->nodes = p->hosts;
	s->tasks_per_node = p->gpus_per_host;
	s->demand = p->ranks;
	s->threshold = o->threshold;
	s->loss = 1 - s->slow_rack / s->slow_cluster;
	if (s->loss < 0)
		s->loss = 0;

	/* The tuner: dally's rule on the history, else the default table. */
	double w[DDL_SLURM_HISTORY];
	int b = ddl_slurm_bucket(s->demand);
	s->bucket_lo = 1 << b;
	s->bucket_hi = b == DDL_SLURM_BUCKETS - 1 ? 0 : (1 << (b + 1)) - 1;
	int n = o->history ? ddl_slurm_history(o->history, s->demand, w, err, errlen) : 0;
	if (n < 0)
		return -1;
	if (n > 0) {
		double sum = 0, sq = 0;
		for (int i = 0; i < n; i++)
			sum += w[i];
		s->mean_s = sum / n;
		for (int i = 0; i < n; i++)
			sq += (w[i] - s->mean_s) * (w[i] - s->mean_s);
		s->sd_s = sqrt(sq / n);
		snprintf(s->source, sizeof s->source, "history %s", o->history);
	} else {
		size_t k = 0;
		while (k + 1 < sizeof ddl_slurm_default_waits / sizeof ddl_slurm_default_waits[0] &&
		       ddl_slurm_default_waits[k + 1].lo <= s->demand)
			k++;
		s->mean_s = ddl_slurm_default_waits[k].mean_s;
		s->sd_s = ddl_slurm_default_waits[k].sd_s;
		snprintf(s->source, sizeof s->source, "%s", o->history ? "default table (no history for this demand)"
		                                                         : "default table");
	}
	s->samples = n;
	s->tuned_s = s->mean_s + 2 * s->sd_s;
	s->saved_s = -1;
	if (o->iterations > 0 && s->iter_rack >= 0 && s->iter_cluster >= s->iter_rack)
		s->saved_s = o->iterations * (s->iter_cluster - s->iter_rack);

	if (s->nodes <= 1) {
		snprintf(s->reason, sizeof s->reason, "one node sits under one leaf switch: nothing to wait for");
		return 0;
	}
	if (s->loss < o->threshold) {
		snprintf(s->reason, sizeof s->reason, "spread over leaf switches the job loses %.1f%% of its "
		         "time, under the %.0f%% threshold: no wait is worth it", 100 * s->loss,
		         100 * o->threshold);
		return 0;
	}
	double wait = s->tuned_s;
	if (s->saved_s >= 0 && s->saved_s < wait)
		wait = s->saved_s;
	if (s->saved_s >= 0 && s->saved_s < DDL_SLURM_WAIT_MIN) {
		snprintf(s->reason, sizeof s->reason, "one switch would save the whole run only %.0f s, "
		         "under the %d s shortest wait", s->saved_s, DDL_SLURM_WAIT_MIN);
		return 0;
	}
	if (wait < DDL_SLURM_WAIT_MIN)
		wait = DDL_SLURM_WAIT_MIN;
	if (wait > DDL_SLURM_WAIT_MAX)
		wait = DDL_SLURM_WAIT_MAX;
	s->wait_s = 60 * ceil(wait / 60 - 1e-9);
	s->switches = o->nodes_per_switch > 0 ? (s->nodes + o->nodes_per_switch - 1) / o->nodes_per_switch
	                                      : 1;
	snprintf(s->reason, sizeof s->reason, "spread over leaf switches the job loses %.1f%% of its "
	         "time (at least the %.0f%% threshold)", 100 * s->loss, 100 * o->threshold);
	return 0;
}

/* The sbatch option lines, without "#SBATCH ", into V (at most 4). */
static int ddl_slurm_options(const struct ddl_slurm *s, char v[4][64])
{
	int n = 0;
	snprintf(v[n++], 64, "--nodes=%d", s->nodes);
	snprintf(v[n++], 64, "--ntasks-per-node=%d", s->tasks_per_node);
	snprintf(v[n++], 64, "--gres=gpu:%d", s->tasks_per_node);
	if (s->switches) {
		char hms[32];
		ddl_slurm_hms(s->wait_s, hms, sizeof hms);
		snprintf(v[n++], 64, "--switches=%d@%s", s->switches, hms);
	}
	return n;
}

static void ddl_slurm_bucket_name(const struct ddl_slurm *s, char *buf, size_t n)
{
	if (!s->bucket_hi)
		snprintf(buf, n, "%d+", s->bucket_lo);
	else if (s->bucket_hi == s->bucket_lo)
		snprintf(buf, n, "%d", s->bucket_lo);
	else
		snprintf(buf, n, "%d-%d", s->bucket_lo, s->bucket_hi);
}

int ddl_slurm_text(const struct ddl_slurm *s, const char *file, FILE *f)
{
	char v[4][64], bucket[32];
	int n = ddl_slurm_options(s, v);
	ddl_slurm_bucket_name(s, bucket, sizeof bucket);
	fprintf(f, "# sbatch options for %s: %d ranks on %d nodes\n", file, s->demand, s->nodes);
	for (int i = 0; i < n; i++)
		fprintf(f, "#SBATCH %s\n", v[i]);
	fprintf(f, "# %s%s\n", s->switches ? "" : "no --switches: ", s->reason);
	fprintf(f, "#   slowdown x%.3f in one leaf switch, x%.3f across switches (score %.2f)\n",
	        s->slow_rack, s->slow_cluster, s->score);
	fprintf(f, "# tuner: mean %.0f s + 2 x sd %.0f s = %.0f s for %s GPUs (%s, %d waits)",
	        s->mean_s, s->sd_s, s->tuned_s, bucket, s->source, s->samples);
	if (s->saved_s >= 0)
		fprintf(f, "; one switch saves %.0f s over the run", s->saved_s);
	if (s->switches)
		fprintf(f, "; wait %.0f s (%d..%d s, whole minutes)", s->wait_s, DDL_SLURM_WAIT_MIN,
		        DDL_SLURM_WAIT_MAX);
	fprintf(f, "\n");
	return ferror(f) ? -1 : 0;
}

static json_t *ddl_slurm_jnum(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

int ddl_slurm_json(const struct ddl_slurm *s, const char *base, size_t len, FILE *f)
{
	json_t *root = base ? json_loadb(base, len, 0, NULL) : json_object();
	if (!root)
		return -1;
	if (!base) {
		json_object_set_new(root, "schema", json_string(DDL_RECOMMEND_SCHEMA));
		json_object_set_new(root, "version", json_string(DDLPROF_VERSION));
	}
	char v[4][64], bucket[32], hms[32];
	int n = ddl_slurm_options(s, v);
	ddl_slurm_bucket_name(s, bucket, sizeof bucket);
	ddl_slurm_hms(s->wait_s, hms, sizeof hms);
	json_t *opts = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(opts, json_string(v[i]));
	json_t *j = json_object();
	json_object_set_new(j, "sbatch", opts);
	json_object_set_new(j, "nodes", json_integer(s->nodes));
	json_object_set_new(j, "ntasks_per_node", json_integer(s->tasks_per_node));
	json_object_set_new(j, "gpus_per_node", json_integer(s->tasks_per_node));
	json_object_set_new(j, "switches", s->switches ? json_integer(s->switches) : json_null());
	json_object_set_new(j, "max_wait_s", s->switches ? json_real(s->wait_s) : json_null());
	json_object_set_new(j, "max_wait", s->switches ? json_string(hms) : json_null());
	json_object_set_new(j, "reason", json_string(s->reason));
	json_object_set_new(j, "sensitivity",
	                    json_pack("{s:o, s:o, s:o, s:o, s:o}", "score", ddl_slurm_jnum(s->score),
	                              "slowdown_rack", ddl_slurm_jnum(s->slow_rack), "slowdown_cluster",
	                              ddl_slurm_jnum(s->slow_cluster), "switch_loss",
	                              ddl_slurm_jnum(s->loss), "threshold", ddl_slurm_jnum(s->threshold)));
	json_object_set_new(j, "tuner",
	                    json_pack("{s:i, s:s, s:s, s:i, s:o, s:o, s:o}", "demand", s->demand,
	                              "bucket", bucket, "source", s->source, "samples", s->samples,
	                              "mean_s", ddl_slurm_jnum(s->mean_s), "sd_s",
	                              ddl_slurm_jnum(s->sd_s), "wait_s", ddl_slurm_jnum(s->tuned_s)));
	json_object_set_new(j, "saved_s", s->saved_s >= 0 ? ddl_slurm_jnum(s->saved_s) : json_null());
	json_object_set_new(j, "wait_bounds_s", json_pack("[i, i]", DDL_SLURM_WAIT_MIN, DDL_SLURM_WAIT_MAX));
	json_object_set_new(root, "slurm", j);
	int rc = json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
	fputc('\n', f);
	json_decref(root);
	return rc < 0 || ferror(f) ? -1 : 0;
}
