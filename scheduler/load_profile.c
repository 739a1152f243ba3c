/*
 * Job speeds from ddlprof profiles: a ddlprof-report/1 JSON report gives a
 * job's slowdown at each placement level in job.sensitivity.slowdown
 * {machine, rack, cluster}, predicted from what the profiled run measured
 * at the link bandwidths in job.sensitivity.bandwidth_bps. Our CSV names a
 * report per job (its profile column, load_csv.c); ddlprof-sim --profiles
 * DIR maps model names to DIR/<model>.json (sim.c). Either way a report is
 * read once, kept in a cache by path, and its slowdowns replace the
 * built-in table's (models.c) for the jobs that name it. Its
 * job.sensitivity.iteration_s.machine, when present, is the iteration time
 * of jobs the trace gives as iterations without a time of their own.
 *
 * A report that cannot be used says why in one phrase naming the field
 * ("job.sensitivity.slowdown.rack: must be a number >= 1"), for the caller
 * to report with the record or the model. Only regular files up to
 * DDL_SIM_PROFILE_MAX bytes are read, so a path naming a device or a pipe
 * cannot stall the loader.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim.h"

#define DDL_SIM_PROFILE_MAX (256u << 20) /* bytes: reports are kilobytes to megabytes */

static const char *const ddl_sim_prof_levels[DDL_SIM_LEVELS] = {"machine", "rack", "cluster"};

static uint64_t ddl_sim_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* Reads the whole regular file at PATH (NUL-terminated); NULL with WHY. */
static char *ddl_sim_prof_slurp(const char *path, size_t *len, char *why, size_t n, int *missing)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	*missing = fd < 0 && errno == ENOENT;
	if (fd < 0) {
		snprintf(why, n, "%s", strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)DDL_SIM_PROFILE_MAX) {
		snprintf(why, n, "%s", fstat(fd, &st) < 0 ? strerror(errno)
		                       : S_ISREG(st.st_mode) ? "larger than 256 MiB" : "not a regular file");
		close(fd);
		return NULL;
	}
	size_t cap = (size_t)st.st_size + 1, k = 0;
	char *buf = malloc(cap);
	while (buf) {
		ssize_t r = read(fd, buf + k, cap - 1 - k);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r < 0) {
				snprintf(why, n, "%s", strerror(errno));
				free(buf);
				buf = NULL;
			}
			break;
		}
		k += (size_t)r;
		if (k == cap - 1)
			break; /* the size it had when opened */
	}
	if (!buf && !why[0])
		snprintf(why, n, "out of memory");
	close(fd);
	if (buf)
		buf[k] = 0;
	*len = k;
	return buf;
}

/* Fills P from the report text; 0, or -1 with P->why naming the field. */
static int ddl_sim_prof_parse(struct ddl_sim_profile *p, const char *buf, size_t len)
{
	json_error_t je;
	json_t *root = json_loadb(buf, len, 0, &je), *job, *sens, *slow, *bw;
	const char *schema;
	int rc = -1;
	if (!root) {
		snprintf(p->why, sizeof p->why, "line %d: not JSON: %s", je.line, ddl_sim_one_line(je.text));
		return -1;
	}
	schema = json_string_value(json_object_get(root, "schema"));
	if (!schema || strncmp(schema, "ddlprof-report/", 15)) {
		snprintf(p->why, sizeof p->why, "schema: not a ddlprof-report profile (want \"ddlprof-report/1\")");
		goto out;
	}
	if (strcmp(schema, "ddlprof-report/1")) {
		snprintf(p->why, sizeof p->why, "schema: \"%.40s\" is newer than this ddlprof-sim reads", schema);
		goto out;
	}
	job = json_object_get(root, "job");
	sens = json_object_get(job, "sensitivity");
	if (!json_is_object(job)) {
		snprintf(p->why, sizeof p->why, "job: missing");
		goto out;
	}
	if (!json_is_object(sens)) {
		snprintf(p->why, sizeof p->why, "job.sensitivity: %s", sens && json_is_null(sens)
		         ? "null (the profiled run had no iterations or no traffic to predict from)"
		         : "missing (a report older than ddlprof-report's sensitivity)");
		goto out;
	}
	slow = json_object_get(sens, "slowdown");
	if (!json_is_object(slow)) {
		snprintf(p->why, sizeof p->why, "job.sensitivity.slowdown: missing");
		goto out;
	}
	p->slow[DDL_SIM_MACHINE] = 1;
	for (int l = DDL_SIM_RACK; l < DDL_SIM_LEVELS; l++) {
		json_t *v = json_object_get(slow, ddl_sim_prof_levels[l]);
		double x = json_is_number(v) ? json_number_value(v) : NAN;
		/* the same bounds as our CSV's slowdown columns, and a sane ceiling */
		if (!isfinite(x) || x < 1 || x > 1e6) {
			snprintf(p->why, sizeof p->why, "job.sensitivity.slowdown.%s: must be a number from 1 "
			         "to 1e6", ddl_sim_prof_levels[l]);
			goto out;
		}
		p->slow[l] = x;
	}
	if (p->slow[DDL_SIM_CLUSTER] < p->slow[DDL_SIM_RACK]) {
		snprintf(p->why, sizeof p->why, "job.sensitivity.slowdown.cluster: below .rack (%g < %g)",
		         p->slow[DDL_SIM_CLUSTER], p->slow[DDL_SIM_RACK]);
		goto out;
	}
	/* The bandwidths the slowdowns hold at; optional, for --bw. */
	bw = json_object_get(sens, "bandwidth_bps");
	for (int l = 0; l < DDL_SIM_LEVELS && json_is_object(bw); l++) {
		json_t *v = json_object_get(bw, ddl_sim_prof_levels[l]);
		double x = json_is_number(v) ? json_number_value(v) : NAN;
		if (!v || json_is_null(v))
			continue;
		if (!isfinite(x) || x <= 0 || x > 1e15) {
			snprintf(p->why, sizeof p->why, "job.sensitivity.bandwidth_bps.%s: must be bits/s "
			         "above 0", ddl_sim_prof_levels[l]);
			goto out;
		}
		p->bw[l] = x / 1e9;
	}
	/* The iteration time on one machine; optional, for traces that give
	 * iterations rather than run times. */
	json_t *it = json_object_get(json_object_get(sens, "iteration_s"), "machine");
	double x = json_is_number(it) ? json_number_value(it) : 0;
	p->iter_s = isfinite(x) && x > 0 && x <= DDL_SIM_MAX_TIME ? x : 0;
	rc = 0;
out:
	json_decref(root);
	return rc;
}

/* Reads the report at P->path into P. */
static void ddl_sim_prof_read(struct ddl_sim_profile *p)
{
	size_t len = 0;
	char *buf = ddl_sim_prof_slurp(p->path, &len, p->why, sizeof p->why, &p->missing);
	if (!buf)
		return;
	p->ok = ddl_sim_prof_parse(p, buf, len) == 0;
	free(buf);
}

/* Doubles the hash table; 0 or -1. */
static int ddl_sim_prof_grow(struct ddl_sim_profiles *c)
{
	size_t n = c->nslot ? c->nslot * 2 : 64;
	size_t *slot = malloc(n * sizeof *slot);
	if (!slot)
		return -1;
	for (size_t i = 0; i < n; i++)
		slot[i] = SIZE_MAX;
	for (size_t k = 0; k < c->n; k++) {
		size_t i = ddl_sim_hash(c->v[k]->path) & (n - 1);
		while (slot[i] != SIZE_MAX)
			i = (i + 1) & (n - 1);
		slot[i] = k;
	}
	free(c->slot);
	c->slot = slot;
	c->nslot = n;
	return 0;
}

const struct ddl_sim_profile *ddl_sim_profile_get(struct ddl_sim_profiles *c, const char *path)
{
	if (2 * (c->n + 1) > c->nslot && ddl_sim_prof_grow(c) < 0)
		return NULL;
	size_t i = ddl_sim_hash(path) & (c->nslot - 1);
	for (; c->slot[i] != SIZE_MAX; i = (i + 1) & (c->nslot - 1))
		if (!strcmp(c->v[c->slot[i]]->path, path))
			return c->v[c->slot[i]];
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct ddl_sim_profile **v = realloc(c->v, cap * sizeof *v);
		if (!v)
			return NULL;
		c->v = v;
		c->cap = cap;
	}
	struct ddl_sim_profile *p = calloc(1, sizeof *p);
	if (!p || !(p->path = strdup(path))) {
		free(p);
		return NULL;
	}
	ddl_sim_prof_read(p);
	c->v[c->n] = p;
	c->slot[i] = c->n++;
	return p;
}

void ddl_sim_profiles_free(struct ddl_sim_profiles *c)
{
	for (size_t k = 0; k < c->n; k++) {
		free(c->v[k]->path);
		free(c->v[k]);
	}
	free(c->v);
	free(c->slot);
	memset(c, 0, sizeof *c);
}

void ddl_sim_profile_apply(struct ddl_sim_job *j, const struct ddl_sim_profile *p)
{
	if (j->slow_from == DDL_SIM_SLOW_TABLE) {
		memcpy(j->slow, p->slow, sizeof j->slow);
		memcpy(j->ref_bw, p->bw, sizeof j->ref_bw);
		j->slow_from = DDL_SIM_SLOW_PROFILE;
		j->consolidate = j->slow[DDL_SIM_CLUSTER] >= 1.3;
	}
	if (j->work == 0 && j->iter_s == 0)
		j->iter_s = p->iter_s;
}
