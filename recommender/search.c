/*
 * The search: every catalog instance type times 1..--max-instances
 * instances is a candidate configuration. Each gets an iteration time (the
 * measurement when a profile was taken on that configuration, the
 * projection of model.c from the nearest profile otherwise), a run time
 * and a cost; then the budgets pick the recommendation and the Pareto
 * front of time and cost is drawn over the candidates within them (over
 * all of them when none is).
 */
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rec.h"

static int ddl_same_gpu(const struct ddl_gpu_model *a, const struct ddl_gpu_model *b)
{
	return a && b && (a == b || !strcasecmp(a->model, b->model));
}

/*
 * Whether profile P was measured on COUNT instances of I. Without
 * --measured-instance, the GPU model and GPUs per instance must single out
 * one type of the catalog: two types with the same GPUs may differ in their
 * network (or interconnect), so a measurement on one is no measurement of
 * the other.
 */
static int ddl_is_measured(const struct ddl_catalog *cat, const struct ddl_profile *p,
                           const struct ddl_instance *i, int count, const struct ddl_settings *s)
{
	if (p->structural || !ddl_same_gpu(p->gpu, i->gpu))
		return 0;
	if (s->measured_instance && strcmp(s->measured_instance, i->name))
		return 0;
	if (!s->measured_instance) {
		int alike = 0;
		for (size_t k = 0; k < cat->ninst; k++)
			alike += cat->inst[k].gpus == i->gpus && ddl_same_gpu(cat->inst[k].gpu, i->gpu);
		if (alike > 1)
			return 0;
	}
	return p->hosts == count && p->gpus_per_host == i->gpus && p->ranks == i->gpus * count;
}

/* The profile to project from: same GPU model, then same spread, then nearest size. */
static int ddl_basis(const struct ddl_profile *prof, size_t nprof, const struct ddl_instance *i,
                     int count)
{
	int best = 0;
	double best_score = INFINITY;
	for (size_t k = 0; k < nprof; k++) {
		const struct ddl_profile *p = &prof[k];
		double score = fabs(log((double)p->ranks / (i->gpus * count)));
		if (!ddl_same_gpu(p->gpu, i->gpu))
			score += 1e6;
		if ((p->hosts > 1) != (count > 1))
			score += 1e3;
		if (score < best_score) {
			best_score = score;
			best = (int)k;
		}
	}
	return best;
}

static int ddl_cmp_cost(const void *a, const void *b)
{
	const struct ddl_candidate *x = a, *y = b;
	if (x->est_cost != y->est_cost)
		return x->est_cost < y->est_cost ? -1 : 1;
	if (x->est_hours != y->est_hours)
		return x->est_hours < y->est_hours ? -1 : 1;
	int c = strcmp(x->inst->name, y->inst->name);
	if (c)
		return c;
	c = strcmp(x->inst->cloud, y->inst->cloud);
	if (c)
		return c;
	return x->count - y->count;
}

static int ddl_cmp_time(const void *a, const void *b)
{
	const struct ddl_candidate *x = *(struct ddl_candidate *const *)a;
	const struct ddl_candidate *y = *(struct ddl_candidate *const *)b;
	if (x->est_hours != y->est_hours)
		return x->est_hours < y->est_hours ? -1 : 1;
	if (x->est_cost != y->est_cost)
		return x->est_cost < y->est_cost ? -1 : 1;
	return x < y ? -1 : x > y;
}

int ddl_dominates(const struct ddl_candidate *a, const struct ddl_candidate *b)
{
	return a->est_hours <= b->est_hours && a->est_cost <= b->est_cost &&
	       (a->est_hours < b->est_hours || a->est_cost < b->est_cost);
}

static int ddl_glob_ok(const char *globs, const char *name)
{
	if (!globs)
		return 1;
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", globs);
	char *save = NULL;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (!fnmatch(t, name, 0))
			return 1;
	return 0;
}

/* Iterations of the whole job on N GPUs, or 0 when it cannot run there. */
static double ddl_iterations(const struct ddl_settings *s, int n)
{
	if (s->iterations > 0)
		return s->iterations;
	double global = s->scaling == DDL_STRONG ? s->batch : s->batch * n;
	if (s->scaling == DDL_STRONG && s->batch < n)
		return 0; /* fewer samples a step than GPUs */
	return ceil(s->epochs * s->samples / global);
}

int ddl_search(const struct ddl_catalog *cat, struct ddl_profile *prof, size_t nprof,
               const struct ddl_settings *s, struct ddl_result *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	size_t cap = cat->ninst * (size_t)s->max_instances;
	r->c = calloc(cap ? cap : 1, sizeof *r->c);
	if (!r->c) {
		snprintf(err, errlen, "out of memory for %zu candidates", cap);
		return -1;
	}
	for (size_t ii = 0; ii < cat->ninst; ii++) {
		const struct ddl_instance *in = &cat->inst[ii];
		if (!ddl_glob_ok(s->instance_globs, in->name) || in->gpu_memory_gib < s->min_gpu_mem) {
			r->skipped_filter++;
			continue;
		}
		if (s->spot && in->spot <= 0) {
			r->skipped_spot++;
			continue;
		}
		for (int count = 1; count <= s->max_instances; count++) {
			struct ddl_candidate *c = &r->c[r->n];
			memset(c, 0, sizeof *c);
			c->inst = in;
			c->count = count;
			c->gpus = in->gpus * count;
			c->iterations = ddl_iterations(s, c->gpus);
			if (c->iterations <= 0) {
				r->skipped_batch++;
				continue;
			}
			c->basis = -1;
			for (size_t k = 0; k < nprof && c->basis < 0; k++)
				if (ddl_is_measured(cat, &prof[k], in, count, s))
					c->basis = (int)k;
			if (c->basis >= 0) {
				const struct ddl_profile *p = &prof[c->basis];
				c->measured = 1;
				c->proj.compute_s = p->compute_s;
				c->proj.data_s = p->data_s;
				c->proj.idle_s = p->idle_s;
				c->proj.ic_stall_s = c->proj.ic_comm_s = p->ic_stall_s;
				c->proj.net_stall_s = c->proj.net_comm_s = p->net_stall_s;
				c->proj.iteration_s = p->iteration_s;
			} else {
				c->basis = ddl_basis(prof, nprof, in, count);
				ddl_model_project(&prof[c->basis], in, count, s, &c->proj);
			}
			c->usd_per_hour = s->spot ? in->spot : in->on_demand;
			c->est_hours = c->iterations * c->proj.iteration_s / 3600;
			c->est_cost = c->est_hours * c->usd_per_hour * count;
			c->meets = (s->budget_hours <= 0 || c->est_hours <= s->budget_hours) &&
			           (s->budget_usd <= 0 || c->est_cost <= s->budget_usd);
			r->n++;
		}
	}
	if (!r->n) {
		snprintf(err, errlen, "no configuration to consider (%zu instance types in the catalog; "
		         "%zu left out by --instance or --min-gpu-memory, %zu without a spot price, "
		         "%zu configurations with fewer samples a step than GPUs)",
		         cat->ninst, r->skipped_filter, r->skipped_spot, r->skipped_batch);
		return -1;
	}
	qsort(r->c, r->n, sizeof *r->c, ddl_cmp_cost);
	int want_h = s->budget_hours > 0, want_c = s->budget_usd > 0;
	r->objective = want_h && want_c ? "min_cost_within_both"
	             : want_h           ? "min_cost_within_hours"
	             : want_c           ? "min_hours_within_cost"
	                                : "min_cost";
	for (size_t k = 0; k < r->n; k++) {
		const struct ddl_candidate *c = &r->c[k];
		if (!c->meets)
			continue;
		if (!r->rec || (!want_h && want_c && c->est_hours < r->rec->est_hours))
			r->rec = c;
	}
	if (!r->rec) {
		/* the nearest: the fastest for a time budget, the cheapest for a cost budget */
		double best = INFINITY;
		for (size_t k = 0; k < r->n; k++) {
			const struct ddl_candidate *c = &r->c[k];
			double h = want_h ? c->est_hours / s->budget_hours : 0;
			double d = want_c ? c->est_cost / s->budget_usd : 0;
			double v = h > d ? h : d;
			if (v < best) {
				best = v;
				r->nearest = c;
			}
		}
	}
	/* The front over the candidates within the budgets: sort by time, keep each cost record. */
	r->front = calloc(r->n, sizeof *r->front);
	if (!r->front) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* Nothing within the budgets: the front of them all, to choose a budget by. */
	size_t m = 0;
	for (size_t k = 0; k < r->n; k++)
		if (r->c[k].meets || !r->rec)
			r->front[m++] = &r->c[k];
	qsort(r->front, m, sizeof *r->front, ddl_cmp_time);
	double best_cost = INFINITY;
	const struct ddl_candidate *last = NULL;
	for (size_t k = 0; k < m; k++) {
		struct ddl_candidate *c = r->front[k];
		if (c->est_cost < best_cost ||
		    (last && c->est_cost == last->est_cost && c->est_hours == last->est_hours)) {
			best_cost = c->est_cost;
			last = c;
			c->pareto = 1;
			r->front[r->nfront++] = c;
		}
	}
	return 0;
}

void ddl_result_free(struct ddl_result *r)
{
	free(r->c);
	free(r->front);
	memset(r, 0, sizeof *r);
}
