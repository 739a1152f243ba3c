/*
 * Our own job-trace CSV, and what the CSV loaders share: the trace array,
 * a plain CSV reader that knows its header, number and time parsing.
 * load_tiresias.c and load_helios.c read their formats with the reader
 * here; sim.c picks the loader by --format.
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
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

struct ddl_sim_job *ddl_sim_trace_add(struct ddl_sim_trace *t, const char *id, double arrival,
                                      int gpus, double work, const char *model)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct ddl_sim_job *jobs = realloc(t->jobs, cap * sizeof *jobs);
		if (!jobs)
			return NULL;
		t->jobs = jobs;
		t->cap = cap;
	}
	struct ddl_sim_job *j = &t->jobs[t->n++];
	memset(j, 0, sizeof *j);
	snprintf(j->id, sizeof j->id, "%s", id);
	snprintf(j->model, sizeof j->model, "%s", model && *model ? model : "default");
	j->arrival = arrival;
	j->gpus = gpus;
	j->work = work;
	ddl_sim_model_slowdown(j->model, j->slow);
	j->consolidate = j->slow[DDL_SIM_CLUSTER] >= 1.3;
	return j;
}

void ddl_sim_trace_free(struct ddl_sim_trace *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->jobs[i].gpu_ids);
	free(t->jobs);
	memset(t, 0, sizeof *t);
}

/*
 * One bad record, at WHERE ("file:line" or "file: record N id"): reported
 * and counted as skipped. Returns -1 when --strict rejects the whole file
 * (with one more line saying so), else 0.
 */
int ddl_sim_bad_record(struct ddl_sim_trace *t, const struct ddl_sim_load_opts *o,
                       const char *path, const char *where, const char *why)
{
	t->skipped++;
	if (!o->strict) {
		fprintf(stderr, "ddlprof-sim: %s: %s; record skipped\n", where, why);
		return 0;
	}
	(void)path; /* WHERE names it */
	fprintf(stderr, "ddlprof-sim: %s: %s; the trace is rejected (--strict)\n", where, why);
	return -1;
}

int ddl_sim_record_profile(struct ddl_sim_profiles *cache, const char *trace, const char *name,
                           const struct ddl_sim_profile **p, char *why, size_t n)
{
	*p = NULL;
	if (!name || !*name)
		return 0;
	char path[4200];
	ddl_sim_profile_path(trace, name, path, sizeof path);
	if (!(*p = ddl_sim_profile_get(cache, path)))
		return -1;
	if ((*p)->ok)
		return 0;
	snprintf(why, n, "profile %s: %s", path, (*p)->why);
	*p = NULL;
	return 1;
}

void ddl_sim_record_speed(struct ddl_sim_job *j, const struct ddl_sim_profile *p, double sr,
                          double sc)
{
	if (p)
		ddl_sim_profile_apply(j, p);
	if (sr > 0)
		j->slow[DDL_SIM_RACK] = sr;
	if (sc > 0)
		j->slow[DDL_SIM_CLUSTER] = sc;
	if (sr > 0 || sc > 0)
		j->slow_from = DDL_SIM_SLOW_TRACE;
	j->consolidate = j->slow[DDL_SIM_CLUSTER] >= 1.3;
}

int ddl_sim_parse_double(const char *s, double *v)
{
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(x))
		return -1;
	*v = x;
	return 0;
}

int ddl_sim_parse_int(const char *s, long *v)
{
	char *end;
	errno = 0;
	long x = strtol(s, &end, 10);
	if (end == s || *end || errno)
		return -1;
	*v = x;
	return 0;
}

int ddl_sim_time_ok(double v)
{
	return isfinite(v) && v >= 0 && v <= DDL_SIM_MAX_TIME;
}

static int ddl_sim_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Days from 1970-01-01 to Y-M-D (proleptic Gregorian; Hinnant's
 * days_from_civil), what timegm computes without its locale and time-zone
 * machinery: the Philly log has three dates a record. */
static long ddl_sim_days(int y, int m, int d)
{
	y -= m <= 2;
	long era = y / 400, yoe = y - era * 400;
	long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

/* "YYYY-MM-DD HH:MM:SS" exactly, digit by digit; 0 or -1. */
static int ddl_sim_fixed_date(const char *s, int f[6])
{
	static const char shape[] = "dddd-dd-dd dd:dd:dd";
	for (int i = 0; shape[i]; i++)
		if (shape[i] == 'd' ? (unsigned)(s[i] - '0') > 9 : s[i] != shape[i])
			return -1;
	if (s[sizeof shape - 1])
		return -1;
	static const int at[6] = {0, 5, 8, 11, 14, 17};
	for (int k = 0; k < 6; k++)
		f[k] = (s[at[k]] - '0') * 10 + (s[at[k] + 1] - '0');
	f[0] = f[0] * 100 + (s[2] - '0') * 10 + (s[3] - '0');
	return 0;
}

int ddl_sim_parse_time(const char *s, double *v)
{
	static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int f[6], y, mo, d, h, mi, sec;
	char extra;
	double x;
	if (ddl_sim_fixed_date(s, f) == 0 ||
	    sscanf(s, "%4d-%2d-%2d %2d:%2d:%2d%c", &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &extra) ==
	            6) {
		y = f[0], mo = f[1], d = f[2], h = f[3], mi = f[4], sec = f[5];
		if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 ||
		    d > mdays[mo - 1] + (mo == 2 && ddl_sim_leap(y)) || h < 0 || h > 23 || mi < 0 ||
		    mi > 59 || sec < 0 || sec > 60)
			return -1;
		x = (double)ddl_sim_days(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
	} else if (ddl_sim_parse_double(s, &x) < 0)
		return -1;
	if (!ddl_sim_time_ok(x))
		return -1;
	*v = x;
	return 0;
}

/* Splits line in place on commas; trims blanks and one pair of quotes. */
static int ddl_sim_csv_split(char *line, char **field, int max)
{
	int n = 0;
	char *p = line;
	for (;;) {
		char *comma = strchr(p, ',');
		if (comma)
			*comma = 0;
		while (isspace((unsigned char)*p))
			p++;
		size_t k = strlen(p);
		while (k && isspace((unsigned char)p[k - 1]))
			p[--k] = 0;
		if (k >= 2 && p[0] == '"' && p[k - 1] == '"') {
			p[k - 1] = 0;
			p++;
		}
		if (n < max)
			field[n++] = p;
		if (!comma)
			break;
		p = comma + 1;
	}
	return n;
}

static int ddl_sim_csv_read(struct ddl_sim_csv *c)
{
	for (;;) {
		ssize_t k = getline(&c->line, &c->cap, c->f);
		if (k < 0)
			return 0;
		c->lineno++;
		while (k > 0 && (c->line[k - 1] == '\n' || c->line[k - 1] == '\r'))
			c->line[--k] = 0;
		if (k == 0)
			continue;
		c->nfield = ddl_sim_csv_split(c->line, c->field, 64);
		return 1;
	}
}

int ddl_sim_csv_open(struct ddl_sim_csv *c, const char *path)
{
	memset(c, 0, sizeof *c);
	c->path = path;
	c->f = fopen(path, "r");
	if (!c->f) {
		fprintf(stderr, "ddlprof-sim: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!ddl_sim_csv_read(c)) {
		fprintf(stderr, "ddlprof-sim: %s: empty file, expected a CSV header\n", path);
		ddl_sim_csv_close(c);
		return -1;
	}
	for (int i = 0; i < c->nfield; i++) {
		c->head[i] = strdup(c->field[i]);
		if (!c->head[i]) {
			ddl_sim_csv_close(c);
			return -1;
		}
		c->nhead++;
	}
	return 0;
}

int ddl_sim_csv_next(struct ddl_sim_csv *c)
{
	return ddl_sim_csv_read(c);
}

int ddl_sim_csv_col(const struct ddl_sim_csv *c, const char *name)
{
	for (int i = 0; i < c->nhead; i++)
		if (!strcasecmp(c->head[i], name))
			return i;
	return -1;
}

const char *ddl_sim_csv_get(const struct ddl_sim_csv *c, int i)
{
	return i >= 0 && i < c->nfield ? c->field[i] : "";
}

void ddl_sim_csv_close(struct ddl_sim_csv *c)
{
	if (c->f)
		fclose(c->f);
	free(c->line);
	for (int i = 0; i < c->nhead; i++)
		free(c->head[i]);
	memset(c, 0, sizeof *c);
}

void ddl_sim_profile_path(const char *trace, const char *name, char *out, size_t n)
{
	const char *slash = strrchr(trace, '/');
	if (name[0] == '/' || !slash)
		snprintf(out, n, "%s", name);
	else
		snprintf(out, n, "%.*s/%s", (int)(slash - trace), trace, name);
}

const char *ddl_sim_record_run(const char *dur, const char *iters, const char *iter_s,
                               const char *dur_name, double *work, double *n, double *it)
{
	static char why[160];
	*work = *n = *it = 0;
	if (dur && *dur) {
		if (ddl_sim_parse_double(dur, work) < 0 || *work <= 0 || !ddl_sim_time_ok(*work)) {
			snprintf(why, sizeof why, "%s is not a time in (0, 1e10] s", dur_name);
			return why;
		}
		return NULL;
	}
	if (!iters || !*iters) {
		snprintf(why, sizeof why, "neither %s nor iterations is given", dur_name);
		return why;
	}
	if (ddl_sim_parse_double(iters, n) < 0 || *n <= 0 || *n > 1e15)
		return "iterations is not a count > 0";
	if (iter_s && *iter_s &&
	    (ddl_sim_parse_double(iter_s, it) < 0 || *it <= 0 || !ddl_sim_time_ok(*it)))
		return "iteration_s is not a time in (0, 1e10] s";
	return NULL;
}

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
	if (cid < 0 || carr < 0 || cg < 0 || (cdur < 0 && cit < 0)) {
		fprintf(stderr,
		        "ddlprof-sim: %s: not a ddlprof-sim CSV (the header needs id, arrival_s, gpus, "
		        "and duration_s or iterations)\n",
		        path);
		ddl_sim_csv_close(&c);
		return -1;
	}
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
			char where[4200];
			snprintf(where, sizeof where, "%s:%ld", path, c.lineno);
			if (ddl_sim_bad_record(t, o, path, where, why) < 0) {
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
