/*
 * What the job-trace loaders share, and what sim.c takes of it: the trace
 * array the loaders fill, a bad record reported (skipped, or the file
 * rejected under --strict), a record's run, profile and own slowdowns,
 * number and time parsing, and a plain CSV reader that knows its header.
 * The loaders (load_csv.c, load_tiresias.c, load_helios.c, load_philly.c)
 * read their formats with these; sim.c picks a loader by --format and
 * frees the trace. Nothing here calls a loader.
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

int ddl_sim_csv_refuse(struct ddl_sim_csv *c, const char *what)
{
	fprintf(stderr, "ddlprof-sim: %s: not a %s\n", c->path, what);
	ddl_sim_csv_close(c);
	return -1;
}

int ddl_sim_csv_bad(struct ddl_sim_trace *t, const struct ddl_sim_load_opts *o,
                    const struct ddl_sim_csv *c, const char *why)
{
	char where[4200];
	snprintf(where, sizeof where, "%s:%ld", c->path, c->lineno);
	return ddl_sim_bad_record(t, o, c->path, where, why);
}

void ddl_sim_csv_id(const struct ddl_sim_csv *c, int col, char *id, size_t n)
{
	snprintf(id, n, "%s", col >= 0 ? ddl_sim_csv_get(c, col) : "");
	if (!id[0])
		snprintf(id, n, "line%ld", c->lineno);
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
