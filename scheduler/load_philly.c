/*
 * The Microsoft Philly trace's cluster_job_log: one JSON array of jobs,
 * each {jobid, user, status, vc, submitted_time, attempts: [{start_time,
 * end_time, detail: [{ip, gpus: [...]}]}]}, times "YYYY-MM-DD HH:MM:SS"
 * (UTC) or numbers of seconds (epochs). What we take: the arrival is
 * submitted_time, relative to the earliest submission in the file; the GPU
 * demand is the number of GPUs listed in the last attempt's detail (across
 * its machines); the duration is that attempt's end_time - start_time (the
 * run that finished the job, whatever its status). Philly names no model;
 * a record may add our own optional fields: model (a row of models.c, or
 * DIR/<model>.json under --profiles), profile (a ddlprof report, relative
 * to the trace's directory), slowdown_rack and slowdown_cluster (numbers
 * >= 1), and iterations with iteration_s (seconds an iteration on one
 * machine) when the run time is to come from them rather than the
 * attempts. Without them a job gets the default slowdowns (models.c).
 *
 * Jobs that never ran (an empty attempts list and a status other than
 * Pass) are left out without a message each and counted in one line; the
 * real logs hold thousands. Other records without attempts, with an
 * unfinished last attempt (end_time null or "None") or with no GPUs are
 * bad records, and so are times outside 0..1e10 s (DDL_SIM_MAX_TIME) and
 * runs longer than that.
 *
 * Syntax errors cost one record, not the file: the loader splits the
 * top-level array into records itself (tracking strings, escapes and the
 * nesting of braces and brackets), parses each record alone with jansson,
 * and reports a bad one as "FILE: record N (byte OFFSET/line L): PROBLEM".
 * A stray closing brace or bracket makes the record it sits in bad and the
 * scan goes on past it; a record left open (an extra '{', a missing '}')
 * is cut where the next job record starts (a '{' whose first key is one of
 * a job's own: jobid, status, submitted_time, user, vc, attempts); one the
 * file ends inside is reported as truncated. Called from sim.c for
 * --format philly.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define DDL_SIM_PHILLY_DEPTH 64 /* nesting kept track of; deeper is a bad record */

static int ddl_sim_philly_time(json_t *v, double *t)
{
	if (json_is_number(v)) {
		double x = json_number_value(v);
		if (!ddl_sim_time_ok(x))
			return -1;
		*t = x;
		return 0;
	}
	return json_is_string(v) ? ddl_sim_parse_time(json_string_value(v), t) : -1;
}

/* What one record gives: the job, or that it never ran. */
struct ddl_sim_philly_rec {
	const char *id, *model, *profile;
	double sub, dur, iterations, iter_s, sr, sc;
	int gpus, never_ran;
};

/* An optional number >= MIN in REC's field NAME into *V (left alone when
 * absent or null); -1 when present and not such a number. */
static int ddl_sim_philly_num(json_t *rec, const char *name, double min, double *v)
{
	json_t *x = json_object_get(rec, name);
	if (!x || json_is_null(x))
		return 0;
	if (!json_is_number(x) || !isfinite(json_number_value(x)) || json_number_value(x) < min)
		return -1;
	*v = json_number_value(x);
	return 0;
}

/* An optional string field; "" when absent or null, NULL when not a string. */
static const char *ddl_sim_philly_str(json_t *rec, const char *name)
{
	json_t *x = json_object_get(rec, name);
	return !x || json_is_null(x) ? "" : json_is_string(x) ? json_string_value(x) : NULL;
}

/* Reads one record into R; returns NULL or why it is bad. */
static const char *ddl_sim_philly_job(json_t *rec, struct ddl_sim_philly_rec *r)
{
	if (!json_is_object(rec))
		return "not a JSON object";
	json_t *jid = json_object_get(rec, "jobid");
	r->id = json_is_string(jid) ? json_string_value(jid) : "";
	if (!(r->model = ddl_sim_philly_str(rec, "model")))
		return "model is not a string";
	if (!(r->profile = ddl_sim_philly_str(rec, "profile")))
		return "profile is not a string";
	if (ddl_sim_philly_num(rec, "slowdown_rack", 1, &r->sr) < 0)
		return "slowdown_rack is not a factor >= 1";
	if (ddl_sim_philly_num(rec, "slowdown_cluster", 1, &r->sc) < 0)
		return "slowdown_cluster is not a factor >= 1";
	if (ddl_sim_philly_num(rec, "iterations", 0, &r->iterations) < 0 ||
	    (json_is_number(json_object_get(rec, "iterations")) && r->iterations <= 0))
		return "iterations is not a count > 0";
	if (ddl_sim_philly_num(rec, "iteration_s", 0, &r->iter_s) < 0 ||
	    (json_is_number(json_object_get(rec, "iteration_s")) &&
	     !(r->iter_s > 0 && r->iter_s <= DDL_SIM_MAX_TIME)))
		return "iteration_s is not a time in (0, 1e10] s";
	if (ddl_sim_philly_time(json_object_get(rec, "submitted_time"), &r->sub) < 0)
		return "submitted_time is missing or not a time (a date from 1970 or 0..1e10 s)";
	json_t *att = json_object_get(rec, "attempts");
	if (json_is_array(att) && !json_array_size(att)) {
		const char *st = json_string_value(json_object_get(rec, "status"));
		if (st && strcmp(st, "Pass")) {
			r->never_ran = 1;
			return NULL;
		}
	}
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
	if (n > 1000000)
		return "the last attempt lists more than 1000000 GPUs";
	r->gpus = (int)n;
	r->dur = en - st;
	return NULL;
}

/*
 * The splitter. The whole file is in memory; records are found by scanning
 * it once with a stack of open braces and brackets, strings and escapes
 * skipped. Line numbers are counted on demand from the last place asked
 * about (errors are rare and come in file order).
 */
struct ddl_sim_philly {
	const char *path;
	const char *buf;
	size_t len;
	size_t line_at;        /* byte offset line_no was counted up to */
	long line_no;
};

static long ddl_sim_philly_line(struct ddl_sim_philly *p, size_t off)
{
	/* from the last position asked, either way: asked in order, or nearly,
	 * the whole file is counted about once */
	for (; p->line_at > off; p->line_at--)
		p->line_no -= p->buf[p->line_at - 1] == '\n';
	for (; p->line_at < off && p->line_at < p->len; p->line_at++)
		p->line_no += p->buf[p->line_at] == '\n';
	return p->line_no;
}

static size_t ddl_sim_philly_ws(const struct ddl_sim_philly *p, size_t i)
{
	while (i < p->len && (p->buf[i] == ' ' || p->buf[i] == '\t' || p->buf[i] == '\n' ||
	                      p->buf[i] == '\r'))
		i++;
	return i;
}

/* A '{' at I whose first key is one only a job record has: where a record
 * left open is cut. */
static int ddl_sim_philly_job_start(const struct ddl_sim_philly *p, size_t i)
{
	static const char *const keys[] = {"jobid", "status", "submitted_time", "user", "vc",
	                                   "attempts"};
	if (p->buf[i] != '{')
		return 0;
	size_t k = ddl_sim_philly_ws(p, i + 1);
	if (k >= p->len || p->buf[k] != '"')
		return 0;
	for (size_t n = 0; n < sizeof keys / sizeof keys[0]; n++) {
		size_t m = strlen(keys[n]);
		if (k + 1 + m < p->len && !memcmp(p->buf + k + 1, keys[n], m) && p->buf[k + 1 + m] == '"')
			return 1;
	}
	return 0;
}

/* Where a record's text ends and what was wrong with its shape. */
struct ddl_sim_philly_span {
	size_t start, end;     /* [start, end) */
	size_t bad_at;         /* offset of the first shape problem */
	const char *bad;       /* NULL: balanced */
};

/*
 * Scans the record starting at I (after blanks). Sets S and returns the
 * offset after it. A record ends when its outermost brace closes and what
 * follows is ',' then a '{', or the array's ']' (or the end of the file);
 * a close followed by anything else was a stray, and the record goes on.
 */
static size_t ddl_sim_philly_scan(struct ddl_sim_philly *p, size_t i,
                                  struct ddl_sim_philly_span *s)
{
	char stack[DDL_SIM_PHILLY_DEPTH];
	int depth = 0, in_str = 0, esc = 0;
	size_t cut = 0; /* the first nested job-record start: where to cut an open record */
	*s = (struct ddl_sim_philly_span){.start = i};
	for (; i < p->len; i++) {
		char c = p->buf[i];
		if (in_str) {
			if (esc)
				esc = 0;
			else if (c == '\\')
				esc = 1;
			else if (c == '"')
				in_str = 0;
			continue;
		}
		if (c == '"') {
			in_str = 1;
		} else if (c == '{' || c == '[') {
			if (depth > 0 && c == '{' && !cut && ddl_sim_philly_job_start(p, i))
				cut = i;
			if (depth == DDL_SIM_PHILLY_DEPTH) {
				if (!s->bad) {
					s->bad = "nested more than 64 deep";
					s->bad_at = i;
				}
				continue;
			}
			stack[depth++] = c;
		} else if (c == '}' || c == ']') {
			char open = c == '}' ? '{' : '[';
			if (depth == 0 || stack[depth - 1] != open) {
				/* closes what is not open: a stray */
				if (!s->bad) {
					s->bad = c == '}' ? "a stray '}'" : "a stray ']'";
					s->bad_at = i;
				}
				continue;
			}
			if (--depth)
				continue;
			size_t k = ddl_sim_philly_ws(p, i + 1);
			size_t n = k < p->len && p->buf[k] == ',' ? ddl_sim_philly_ws(p, k + 1) : k;
			if (k >= p->len || p->buf[k] == ']' ||
			    (p->buf[k] == ',' && (n >= p->len || p->buf[n] == '{' || p->buf[n] == ']'))) {
				s->end = i + 1;
				return k;
			}
			if (p->buf[k] == '{') {
				/* a missing comma between records: this one ends here */
				s->end = i + 1;
				if (!s->bad) {
					s->bad = "no ',' after the record";
					s->bad_at = k;
				}
				return k;
			}
			/* something else follows: that close was a stray, the record goes on */
			if (!s->bad) {
				s->bad = "a '}' closes the record early (neither ',' and the next record "
				         "nor ']' follows it)";
				s->bad_at = i;
			}
			stack[depth++] = open;
		} else if (depth == 0 && (c == ',' || (c != ' ' && c != '\t' && c != '\n' && c != '\r'))) {
			/* a value that is not an object: up to the next comma at this level */
			if (c == ',') {
				s->end = i;
				if (!s->bad) {
					s->bad = "an empty record";
					s->bad_at = i;
				}
				return i;
			}
			size_t k = i;
			while (k < p->len && p->buf[k] != ',' && p->buf[k] != ']')
				k++;
			s->end = k;
			s->bad = "not a JSON object";
			s->bad_at = i;
			return k;
		}
	}
	/* The file ended inside the record. */
	if (cut) {
		s->end = cut;
		if (!s->bad || s->bad_at >= cut) {
			s->bad = "not closed before the next record starts";
			s->bad_at = cut;
		}
		return cut;
	}
	s->end = p->len;
	s->bad = "truncated: the file ends inside the record";
	s->bad_at = p->len;
	return p->len;
}

/* Reads PATH whole; NULL with a message. */
static char *ddl_sim_philly_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "ddlprof-sim: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (n == cap) {
			char *b = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
			if (!b) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = b;
			cap *= 2;
		}
		size_t k = fread(buf + n, 1, cap - n, f);
		n += k;
		if (k == 0)
			break;
	}
	if (!buf || ferror(f)) {
		fprintf(stderr, "ddlprof-sim: %s: %s\n", path, buf ? strerror(errno) : "out of memory");
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*len = n;
	return buf;
}

/* Reports record N as bad; -1 when --strict rejects the file. */
static int ddl_sim_philly_bad(struct ddl_sim_philly *p, struct ddl_sim_trace *t,
                              const struct ddl_sim_load_opts *o, size_t n, size_t start,
                              const char *id, const char *why)
{
	char where[4400];
	if (!id) /* the record is not an object, or has no jobid */
		id = "";
	snprintf(where, sizeof where, "%s: record %zu (byte %zu/line %ld%s%.64s)", p->path, n, start,
	         ddl_sim_philly_line(p, start), *id ? ", jobid " : "", id);
	return ddl_sim_bad_record(t, o, p->path, where, why);
}

/* Parses the record in S and adds its job; 0, 1 when it was left out as
 * never run, or -1 to stop (out of memory, --strict). */
static int ddl_sim_philly_record(struct ddl_sim_philly *p, struct ddl_sim_trace *t,
                                 const struct ddl_sim_load_opts *o,
                                 struct ddl_sim_profiles *cache, size_t n,
                                 const struct ddl_sim_philly_span *s)
{
	char why[4700];
	if (s->bad) {
		snprintf(why, sizeof why, "%s at byte %zu (line %ld)", s->bad, s->bad_at,
		         ddl_sim_philly_line(p, s->bad_at));
		return ddl_sim_philly_bad(p, t, o, n, s->start, "", why) < 0 ? -1 : 0;
	}
	json_error_t je;
	json_t *rec = json_loadb(p->buf + s->start, s->end - s->start, 0, &je);
	if (!rec) {
		size_t at = s->start + (size_t)(je.position > 0 ? je.position : 0);
		snprintf(why, sizeof why, "not JSON at byte %zu (line %ld): %s", at,
		         ddl_sim_philly_line(p, at), ddl_sim_one_line(je.text));
		return ddl_sim_philly_bad(p, t, o, n, s->start, "", why) < 0 ? -1 : 0;
	}
	struct ddl_sim_philly_rec r = {0};
	const char *bad = ddl_sim_philly_job(rec, &r);
	const struct ddl_sim_profile *prof = NULL;
	if (!bad && !r.never_ran) {
		int k = ddl_sim_record_profile(cache, p->path, r.profile, &prof, why, sizeof why);
		if (k < 0) {
			fprintf(stderr, "ddlprof-sim: %s: out of memory\n", p->path);
			json_decref(rec);
			return -1;
		}
		if (k > 0)
			bad = why;
	}
	int rc = 0;
	if (bad) {
		rc = ddl_sim_philly_bad(p, t, o, n, s->start, r.id, bad) < 0 ? -1 : 0;
	} else if (r.never_ran) {
		rc = 1;
	} else {
		char name[48];
		if (*r.id)
			snprintf(name, sizeof name, "%s", r.id);
		else
			snprintf(name, sizeof name, "record%zu", n);
		/* iterations given with their time replace the attempt's run time */
		double work = r.iterations > 0 && r.iter_s > 0 ? 0 : r.dur;
		struct ddl_sim_job *j = ddl_sim_trace_add(t, name, r.sub, r.gpus, work, r.model);
		if (!j) {
			fprintf(stderr, "ddlprof-sim: %s: out of memory\n", p->path);
			rc = -1;
		} else {
			j->iterations = r.iterations;
			j->iter_s = r.iter_s;
			ddl_sim_record_speed(j, prof, r.sr, r.sc);
		}
	}
	json_decref(rec);
	return rc;
}

int ddl_sim_load_philly(const char *path, struct ddl_sim_trace *t,
                        const struct ddl_sim_load_opts *o)
{
	struct ddl_sim_philly p = {.path = path, .line_no = 1};
	char *buf = ddl_sim_philly_slurp(path, &p.len);
	if (!buf)
		return -1;
	p.buf = buf;
	size_t i = ddl_sim_philly_ws(&p, 0);
	if (i + 3 <= p.len && !memcmp(p.buf + i, "\xef\xbb\xbf", 3))
		i = ddl_sim_philly_ws(&p, i + 3); /* a UTF-8 byte-order mark */
	if (i >= p.len || p.buf[i] != '[') {
		fprintf(stderr, "ddlprof-sim: %s: not a Philly job log (expected a JSON array of jobs)\n",
		        path);
		free(buf);
		return -1;
	}
	struct ddl_sim_profiles own = {0}, *cache = o->profiles ? o->profiles : &own;
	size_t first = t->n, n = 0, never = 0;
	double t0 = INFINITY;
	int rc = 0, closed = 0, truncated = 0;
	i = ddl_sim_philly_ws(&p, i + 1);
	while (rc == 0 && i < p.len) {
		if (p.buf[i] == ']') {
			closed = 1;
			i = ddl_sim_philly_ws(&p, i + 1);
			break;
		}
		struct ddl_sim_philly_span s;
		size_t next = ddl_sim_philly_scan(&p, i, &s);
		n++;
		truncated = s.end == p.len && s.bad; /* said once, with the record */
		int k = ddl_sim_philly_record(&p, t, o, cache, n, &s);
		if (k < 0)
			rc = -1;
		never += k == 1;
		i = ddl_sim_philly_ws(&p, next);
		if (i < p.len && p.buf[i] == ',')
			i = ddl_sim_philly_ws(&p, i + 1);
	}
	if (rc == 0 && (closed ? i < p.len : !truncated)) {
		char why[200];
		size_t at = closed ? i : p.len;
		snprintf(why, sizeof why, "%s at byte %zu (line %ld)",
		         closed ? "text after the job array" : "the job array is not closed (truncated?)",
		         at, ddl_sim_philly_line(&p, at));
		if (o->strict) {
			fprintf(stderr, "ddlprof-sim: %s: %s; rejected (--strict)\n", path, why);
			rc = -1;
		} else {
			fprintf(stderr, "ddlprof-sim: %s: %s\n", path, why);
		}
	}
	ddl_sim_profiles_free(&own);
	free(buf);
	for (size_t k = first; k < t->n; k++) {
		if (t->jobs[k].arrival < t0)
			t0 = t->jobs[k].arrival;
	}
	for (size_t k = first; k < t->n; k++)
		t->jobs[k].arrival -= t0; /* every submitted_time is in 0..1e10 s: so is this */
	if (never)
		fprintf(stderr, "ddlprof-sim: %s: left out %zu job%s that never ran (no attempts)\n", path,
		        never, never == 1 ? "" : "s");
	return rc;
}
