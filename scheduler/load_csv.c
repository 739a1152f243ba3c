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
 *                 (> 0, at most DDL_SIM_MAX_TIME)
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
#include <time.h>

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
	fprintf(stderr, "ddlprof-sim: %s: %s; record skipped\n", where, why);
	t->skipped++;
	if (!o->strict)
		return 0;
	fprintf(stderr, "ddlprof-sim: %s: rejected (--strict)\n", path);
	return -1;
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

int ddl_sim_parse_time(const char *s, double *v)
{
	static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	struct tm tm = {0};
	int y, mo, d, h, mi, sec;
	char extra;
	double x;
	if (sscanf(s, "%4d-%2d-%2d %2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &sec, &extra) == 6) {
		if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 ||
		    d > mdays[mo - 1] + (mo == 2 && ddl_sim_leap(y)) || h < 0 || h > 23 || mi < 0 ||
		    mi > 59 || sec < 0 || sec > 60)
			return -1;
		tm.tm_year = y - 1900;
		tm.tm_mon = mo - 1;
		tm.tm_mday = d;
		tm.tm_hour = h;
		tm.tm_min = mi;
		tm.tm_sec = sec;
		x = (double)timegm(&tm);
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
	struct ddl_sim_profiles own = {0}, *cache = o->profiles ? o->profiles : &own;
	if (cid < 0 || carr < 0 || cg < 0 || cdur < 0) {
		fprintf(stderr,
		        "ddlprof-sim: %s: not a ddlprof-sim CSV (the header needs id, arrival_s, gpus, "
		        "duration_s)\n",
		        path);
		ddl_sim_csv_close(&c);
		return -1;
	}
	int rc = 0;
	while (ddl_sim_csv_next(&c)) {
		double arr, dur, sr = 0, sc = 0;
		long g;
		const char *why = NULL;
		if (c.nfield < c.nhead)
			why = "too few fields";
		else if (ddl_sim_parse_double(ddl_sim_csv_get(&c, carr), &arr) < 0 ||
		         !ddl_sim_time_ok(arr))
			why = "arrival_s is not a time in 0..1e10 s";
		else if (ddl_sim_parse_int(ddl_sim_csv_get(&c, cg), &g) < 0 || g < 1 || g > 1000000)
			why = "gpus is not a count >= 1";
		else if (ddl_sim_parse_double(ddl_sim_csv_get(&c, cdur), &dur) < 0 || dur <= 0 ||
		         !ddl_sim_time_ok(dur))
			why = "duration_s is not a time in (0, 1e10] s";
		else if (csr >= 0 && *ddl_sim_csv_get(&c, csr) &&
		         (ddl_sim_parse_double(ddl_sim_csv_get(&c, csr), &sr) < 0 || sr < 1))
			why = "slowdown_rack is not a factor >= 1";
		else if (csc >= 0 && *ddl_sim_csv_get(&c, csc) &&
		         (ddl_sim_parse_double(ddl_sim_csv_get(&c, csc), &sc) < 0 || sc < 1))
			why = "slowdown_cluster is not a factor >= 1";
		const struct ddl_sim_profile *prof = NULL;
		char pwhy[4600];
		if (!why && cprof >= 0 && *ddl_sim_csv_get(&c, cprof)) {
			char ppath[4200];
			ddl_sim_profile_path(path, ddl_sim_csv_get(&c, cprof), ppath, sizeof ppath);
			if (!(prof = ddl_sim_profile_get(cache, ppath))) {
				fprintf(stderr, "ddlprof-sim: %s: out of memory\n", path);
				rc = -1;
				break;
			}
			if (!prof->ok) {
				snprintf(pwhy, sizeof pwhy, "profile %s: %s", ppath, prof->why);
				why = pwhy;
			}
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
		if (prof)
			ddl_sim_profile_apply(j, prof);
		if (sr > 0)
			j->slow[DDL_SIM_RACK] = sr;
		if (sc > 0)
			j->slow[DDL_SIM_CLUSTER] = sc;
		if (sr > 0 || sc > 0)
			j->slow_from = DDL_SIM_SLOW_TRACE;
		j->consolidate = j->slow[DDL_SIM_CLUSTER] >= 1.3;
	}
	ddl_sim_profiles_free(&own);
	ddl_sim_csv_close(&c);
	return rc;
}
