/*
 * Measured inputs of the projection, read from a ddlprof-report/1 profile:
 * per rank and per iteration, the compute, data stall, idle, interconnect
 * and network stall, the overlap of communication with compute, and the
 * gradient bytes all-reduced. A profile is a report.json, a directory that
 * holds one, or a trace directory, which ddlprof-report turns into one
 * first (run as a child by spawn.c). Newer report fields are preferred
 * and older ones stand in for them when absent:
 *
 *   parts     job.per_iteration, else the mean of ranks[].breakdown_s,
 *             else job.breakdown_pct of job.iteration_mean_s
 *   bytes     job.per_iteration.{intra,inter}_bytes, else
 *             ranks[].collectives over the run's iterations, else the
 *             ranked processes' socket bytes, as the wire bytes of a ring
 *   calls     job.per_iteration.collectives, else ranks[].collectives
 *             over the run's iterations
 *   overlap   job.per_iteration.overlap_s, else none
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>

#include "rec.h"

#define DDL_PROF_MAX_S 1e9   /* seconds per iteration beyond this are not a profile */
#define DDL_PROF_MAX_B 1e18  /* bytes per iteration */

static int ddl_prof_fail(char *err, size_t errlen, const char *file, const char *field,
                         const char *fmt, ...)
{
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "%s: %s: %s", file, field, what);
	return -1;
}

/*
 * A number field that may be absent: 1 and *v when it is a finite number
 * in [0, max], 0 when absent or null, -1 (with a message) otherwise.
 */
static int ddl_prof_opt(json_t *o, const char *key, double max, double *v, const char *file,
                        const char *path, char *err, size_t errlen)
{
	json_t *j = json_object_get(o, key);
	if (!j || json_is_null(j))
		return 0;
	char field[160];
	snprintf(field, sizeof field, "%s%s", path, key);
	if (!json_is_number(j))
		return ddl_prof_fail(err, errlen, file, field, "must be a number");
	double x = json_number_value(j);
	if (!isfinite(x) || x < 0 || x > max)
		return ddl_prof_fail(err, errlen, file, field, "must be a number from 0 to %g (got %g)", max, x);
	*v = x;
	return 1;
}

static const char *const ddl_part_keys[] = {"compute", "data_stall", "interconnect_stall",
                                            "network_stall", "idle"};
#define DDL_NPARTS 5

/* The five parts per iteration from the best source there is. Returns 0 or -1. */
static int ddl_prof_parts(json_t *root, json_t *job, double iter_s, double part[DDL_NPARTS],
                          const char *file, char *err, size_t errlen)
{
	json_t *per = json_object_get(job, "per_iteration");
	json_t *ranks = json_object_get(root, "ranks");
	json_t *pct = json_object_get(job, "breakdown_pct");
	for (int k = 0; k < DDL_NPARTS; k++) {
		char key[64];
		snprintf(key, sizeof key, "%s_s", ddl_part_keys[k]);
		int got = json_is_object(per) ? ddl_prof_opt(per, key, DDL_PROF_MAX_S, &part[k], file,
		                                             "job.per_iteration.", err, errlen) : 0;
		if (got < 0)
			return -1;
		if (got)
			continue;
		double sum = 0;
		int n = 0;
		size_t i;
		json_t *r;
		json_array_foreach(ranks, i, r) {
			json_t *b = json_object_get(r, "breakdown_s");
			if (!json_is_object(b))
				continue;
			char path[64];
			snprintf(path, sizeof path, "ranks[%zu].breakdown_s.", i);
			double v = 0;
			int g = ddl_prof_opt(b, ddl_part_keys[k], DDL_PROF_MAX_S, &v, file, path, err, errlen);
			if (g < 0)
				return -1;
			if (g) {
				sum += v;
				n++;
			}
		}
		if (n) {
			part[k] = sum / n;
			continue;
		}
		double p = 0;
		got = json_is_object(pct) ? ddl_prof_opt(pct, ddl_part_keys[k], 100, &p, file,
		                                         "job.breakdown_pct.", err, errlen) : 0;
		if (got < 0)
			return -1;
		if (!got)
			return ddl_prof_fail(err, errlen, file, "job.breakdown_pct",
			                     "missing %s (and no job.per_iteration or ranks[].breakdown_s)",
			                     ddl_part_keys[k]);
		part[k] = p / 100 * iter_s;
	}
	return 0;
}

/* Iterations each rank ran in all, warm-up included: the mean over ranks[]. */
static double ddl_prof_run_iters(json_t *root, json_t *job)
{
	json_t *ranks = json_object_get(root, "ranks"), *r;
	double sum = 0;
	int n = 0;
	size_t i;
	json_array_foreach(ranks, i, r) {
		json_t *it = json_object_get(r, "iterations");
		if (json_is_number(it) && json_number_value(it) > 0) {
			sum += json_number_value(it);
			n++;
		}
	}
	double iters = n ? sum / n : json_number_value(json_object_get(job, "iterations"));
	json_t *w = json_object_get(job, "warmup");
	if (json_is_integer(w) && json_integer_value(w) > 0 && json_integer_value(w) < 1000000)
		iters += (double)json_integer_value(w);
	return iters;
}

/* Bytes and collectives per iteration. Returns 0 or -1. */
static int ddl_prof_bytes(json_t *root, json_t *job, struct ddl_profile *p, char *err, size_t errlen)
{
	json_t *per = json_object_get(job, "per_iteration");
	double intra = 0, inter = 0;
	int gi = 0, ge = 0;
	if (json_is_object(per)) {
		gi = ddl_prof_opt(per, "intra_bytes", DDL_PROF_MAX_B, &intra, p->file, "job.per_iteration.",
		                  err, errlen);
		ge = ddl_prof_opt(per, "inter_bytes", DDL_PROF_MAX_B, &inter, p->file, "job.per_iteration.",
		                  err, errlen);
		if (gi < 0 || ge < 0)
			return -1;
	}
	double run_iters = ddl_prof_run_iters(root, job);
	/* ranks[].collectives: bytes and calls over the whole run */
	json_t *ranks = json_object_get(root, "ranks"), *r;
	double cb_intra = 0, cb_inter = 0, cb_unknown = 0, calls = 0, unknown = 0;
	int nc = 0;
	size_t i;
	json_array_foreach(ranks, i, r) {
		json_t *c = json_object_get(r, "collectives");
		if (!json_is_object(c))
			continue;
		char path[64];
		snprintf(path, sizeof path, "ranks[%zu].collectives.", i);
		double a = 0, b = 0, u = 0, n = 0;
		if (ddl_prof_opt(c, "intra_bytes", DDL_PROF_MAX_B, &a, p->file, path, err, errlen) < 0 ||
		    ddl_prof_opt(c, "inter_bytes", DDL_PROF_MAX_B, &b, p->file, path, err, errlen) < 0 ||
		    ddl_prof_opt(c, "unknown_span_bytes", DDL_PROF_MAX_B, &u, p->file, path, err, errlen) < 0 ||
		    ddl_prof_opt(c, "count", DDL_PROF_MAX_B, &n, p->file, path, err, errlen) < 0)
			return -1;
		cb_intra += a;
		cb_inter += b;
		cb_unknown += u;
		calls += n;
		nc++;
	}
	if (nc && run_iters > 0) {
		p->collectives = calls / nc / run_iters;
		if (!gi && !ge) {
			intra = cb_intra / nc / run_iters;
			inter = cb_inter / nc / run_iters;
			unknown = cb_unknown / nc / run_iters;
			if (intra > 0 || inter > 0 || unknown > 0)
				p->bytes_src = DDL_BYTES_COLLECTIVES;
		}
	}
	if (gi || ge)
		p->bytes_src = DDL_BYTES_PER_ITER;
	double per_calls = 0;
	int gc = json_is_object(per) ? ddl_prof_opt(per, "collectives", DDL_PROF_MAX_B, &per_calls, p->file,
	                                            "job.per_iteration.", err, errlen) : 0;
	if (gc < 0)
		return -1;
	if (gc && per_calls > 0)
		p->collectives = per_calls; /* the report's own count per step beats the run's mean */
	if (p->bytes_src != DDL_BYTES_NONE) {
		/*
		 * Collective bytes are payloads (count x element size). Both kinds
		 * at once is the hierarchical all-reduce: the inter-machine
		 * all-reduce carries 1/gpus_per_host of the gradients.
		 */
		p->hierarchical = intra > 0 && inter > 0;
		p->grad_bytes = p->hierarchical ? inter * p->gpus_per_host : intra + inter + unknown;
		return 0;
	}
	/* Sockets: each rank of a ring sends 2(n-1)/n of the gradients a step. */
	json_t *procs = json_object_get(root, "processes");
	double sent = 0;
	int np = 0;
	json_array_foreach(procs, i, r) {
		json_t *rk = json_object_get(r, "rank");
		json_t *net = json_object_get(r, "network");
		if (!json_is_integer(rk) || json_integer_value(rk) < 0 || !json_is_object(net))
			continue;
		char path[64];
		snprintf(path, sizeof path, "processes[%zu].network.", i);
		double s = 0;
		if (ddl_prof_opt(net, "bytes_sent", DDL_PROF_MAX_B, &s, p->file, path, err, errlen) < 0)
			return -1;
		sent += s;
		np++;
	}
	if (np && sent > 0 && run_iters > 0 && p->ranks > 1) {
		double wire = sent / np / run_iters;
		p->grad_bytes = wire * p->ranks / (2.0 * (p->ranks - 1));
		p->bytes_src = DDL_BYTES_SOCKETS;
	}
	return 0;
}

int ddl_profile_parse(struct ddl_profile *p, const char *name, const char *buf, size_t len,
                      char *err, size_t errlen)
{
	memset(p, 0, sizeof *p);
	json_error_t je;
	json_t *root = json_loadb(buf, len, 0, &je);
	int rc = -1;
	if (!(p->file = strdup(name))) {
		snprintf(err, errlen, "%s: out of memory", name);
		json_decref(root);
		return -1;
	}
	if (!root) {
		snprintf(err, errlen, "%s: line %d: not valid JSON: %s", name, je.line, je.text);
		return -1;
	}
	json_t *schema = json_object_get(root, "schema");
	json_t *job = json_object_get(root, "job");
	const char *sv = json_is_string(schema) ? json_string_value(schema) : NULL;
	if (!json_is_object(root) || !sv || strncmp(sv, "ddlprof-report/", 15)) {
		ddl_prof_fail(err, errlen, name, "schema", "not a ddlprof-report profile (want \"ddlprof-report/1\")");
		goto out;
	}
	if (strcmp(sv, "ddlprof-report/1")) {
		ddl_prof_fail(err, errlen, name, "schema", "\"%s\" is newer than this ddlprof-recommend reads", sv);
		goto out;
	}
	if (!json_is_object(job)) {
		ddl_prof_fail(err, errlen, name, "job", "missing");
		goto out;
	}
	json_t *jr = json_object_get(job, "ranks"), *jh = json_object_get(job, "hosts");
	if (!json_is_integer(jr) || json_integer_value(jr) < 1 || json_integer_value(jr) > 1000000) {
		ddl_prof_fail(err, errlen, name, "job.ranks", "must be a whole number from 1 to 1000000");
		goto out;
	}
	if (!json_is_integer(jh) || json_integer_value(jh) < 1 || json_integer_value(jh) > json_integer_value(jr)) {
		ddl_prof_fail(err, errlen, name, "job.hosts", "must be a whole number from 1 to job.ranks");
		goto out;
	}
	p->ranks = (int)json_integer_value(jr);
	p->hosts = (int)json_integer_value(jh);
	p->gpus_per_host = (p->ranks + p->hosts - 1) / p->hosts;
	json_t *it = json_object_get(job, "iteration_mean_s");
	if (!it || json_is_null(it)) {
		ddl_prof_fail(err, errlen, name, "job.iteration_mean_s",
		              "null: the run has no iterations to project (profile more steps, or see --iteration-name in ddlprof-report(1))");
		goto out;
	}
	if (ddl_prof_opt(job, "iteration_mean_s", DDL_PROF_MAX_S, &p->iteration_s, name, "job.", err, errlen) < 0)
		goto out;
	if (p->iteration_s <= 0) {
		ddl_prof_fail(err, errlen, name, "job.iteration_mean_s", "must be above 0");
		goto out;
	}
	/* job.gpu: {model, count_per_host}, or just whether the job used a GPU */
	json_t *gpu = json_object_get(job, "gpu");
	if (gpu && !json_is_null(gpu) && !json_is_boolean(gpu)) {
		if (!json_is_object(gpu)) {
			ddl_prof_fail(err, errlen, name, "job.gpu", "must be an object {model, count_per_host}");
			goto out;
		}
		json_t *m = json_object_get(gpu, "model"), *c = json_object_get(gpu, "count_per_host");
		if (m && !json_is_null(m) && !json_is_string(m)) {
			ddl_prof_fail(err, errlen, name, "job.gpu.model", "must be a string");
			goto out;
		}
		if (json_is_string(m) && json_string_value(m)[0] && !(p->gpu_device = strdup(json_string_value(m)))) {
			snprintf(err, errlen, "%s: out of memory", name);
			goto out;
		}
		if (c && !json_is_null(c)) {
			if (!json_is_integer(c) || json_integer_value(c) < 1 ||
			    json_integer_value(c) > json_integer_value(jr)) {
				ddl_prof_fail(err, errlen, name, "job.gpu.count_per_host",
				              "must be a whole number from 1 to job.ranks");
				goto out;
			}
			p->gpus_per_host = (int)json_integer_value(c);
		}
	}
	double part[DDL_NPARTS];
	if (ddl_prof_parts(root, job, p->iteration_s, part, name, err, errlen) < 0)
		goto out;
	p->compute_s = part[0];
	p->data_s = part[1];
	p->ic_stall_s = part[2];
	p->net_stall_s = part[3];
	p->idle_s = part[4];
	json_t *per = json_object_get(job, "per_iteration");
	if (json_is_object(per)) {
		int g = ddl_prof_opt(per, "overlap_s", DDL_PROF_MAX_S, &p->overlap_s, name, "job.per_iteration.",
		                     err, errlen);
		if (g < 0)
			goto out;
		p->overlap_measured = g;
	}
	if (ddl_prof_bytes(root, job, p, err, errlen) < 0)
		goto out;
	if (p->grad_bytes > 0 && p->collectives < 1)
		p->collectives = 1; /* traffic means at least one collective a step */
	double comm = p->overlap_s + p->ic_stall_s + p->net_stall_s;
	p->overlap_frac = comm > 0 ? p->overlap_s / comm : 0;
	rc = 0;
out:
	json_decref(root);
	return rc;
}

static int ddl_has_traces(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *e;
	int found = 0;
	while (!found && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		found = n > 5 && !strcmp(e->d_name + n - 5, ".ddlt");
	}
	closedir(d);
	return found;
}

/* ddlprof-report --json DIR; its output, or NULL with a message. */
static char *ddl_run_report(const char *bin, const char *dir, size_t *len, char *err, size_t errlen)
{
	char *out;
	int st, e;
	int k = ddl_spawn_report(bin, dir, 1u << 30, &out, len, &st, &e);
	if (k == DDL_SPAWN_PIPE)
		snprintf(err, errlen, "%s: pipe: %s", dir, strerror(e));
	else if (k == DDL_SPAWN_START)
		snprintf(err, errlen, "%s: cannot run %s to report the traces: %s", dir, bin, strerror(e));
	else if (k == DDL_SPAWN_READ)
		snprintf(err, errlen, "%s: reading %s's report: %s", dir, bin, strerror(e));
	/* Status 1 with a report is damage the report names; a report without one is nothing. */
	else if (!WIFEXITED(st) || (WEXITSTATUS(st) != 0 && (WEXITSTATUS(st) != 1 || *len == 0)))
		snprintf(err, errlen, "%s: %s --json failed (status %d); see its message above", dir, bin,
		         WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	else
		return out;
	free(out);
	return NULL;
}

int ddl_profile_load(struct ddl_profile *p, const char *path, const char *report_bin, char *err,
                     size_t errlen)
{
	struct stat st;
	memset(p, 0, sizeof *p);
	if (stat(path, &st) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	char file[4096];
	snprintf(file, sizeof file, "%s", path);
	char *buf = NULL;
	size_t len = 0;
	if (S_ISDIR(st.st_mode)) {
		snprintf(file, sizeof file, "%s/report.json", path);
		if (access(file, F_OK) < 0) {
			if (!ddl_has_traces(path)) {
				snprintf(err, errlen, "%s: holds neither report.json nor traces (*.ddlt)", path);
				return -1;
			}
			buf = ddl_run_report(report_bin, path, &len, err, errlen);
			if (!buf)
				return -1;
			snprintf(file, sizeof file, "%s", path);
		}
	}
	if (!buf) {
		int fd = open(file, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			snprintf(err, errlen, "%s: %s", file, strerror(errno));
			return -1;
		}
		buf = ddl_slurp_fd(fd, &len, 1u << 30);
		int e = errno;
		close(fd);
		if (!buf) {
			snprintf(err, errlen, "%s: %s", file, strerror(e));
			return -1;
		}
	}
	int rc = ddl_profile_parse(p, file, buf, len, err, errlen);
	free(buf);
	return rc;
}

void ddl_profile_free(struct ddl_profile *p)
{
	free(p->file);
	free(p->gpu_device);
	memset(p, 0, sizeof *p);
}
