/*
 * The outputs of ddlprof-recommend: a short text summary (the
 * recommendation, the Pareto front and the cheapest candidates) and the
 * "ddlprof-recommend/1" JSON, documented in ddlprof-recommend(1), OUTPUT:
 * fields are added, never renamed, within the schema version.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rec.h"

#ifndef DDLPROF_VERSION
#define DDLPROF_VERSION "unknown"
#endif

static const char *const ddl_bytes_src_names[] = {"none", "per_iteration", "collectives",
                                                  "sockets", "given"};

static json_t *ddl_jnum(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* A count: an integer when it is one (up to 2^53), else a number. */
static json_t *ddl_jcount(double v)
{
	return v == floor(v) && fabs(v) <= 9007199254740992.0 ? json_integer((json_int_t)v) : ddl_jnum(v);
}

static json_t *ddl_jstr_or_null(const char *s)
{
	json_t *j = s ? json_string(s) : NULL;
	return j ? j : json_null();
}

static json_t *ddl_json_cand(const struct ddl_candidate *c)
{
	if (!c)
		return json_null();
	json_t *j = json_object();
	json_object_set_new(j, "instance", ddl_jstr_or_null(c->inst->name));
	json_object_set_new(j, "cloud", ddl_jstr_or_null(c->inst->cloud));
	json_object_set_new(j, "region", ddl_jstr_or_null(c->inst->region));
	json_object_set_new(j, "count", json_integer(c->count));
	json_object_set_new(j, "gpus", json_integer(c->gpus));
	json_object_set_new(j, "gpu_model", ddl_jstr_or_null(c->inst->gpu_model));
	json_object_set_new(j, "usd_per_hour", ddl_jnum(c->usd_per_hour));
	json_object_set_new(j, "iterations", ddl_jcount(c->iterations));
	json_object_set_new(j, "iteration_s", ddl_jnum(c->proj.iteration_s));
	json_object_set_new(j, "compute_s", ddl_jnum(c->proj.compute_s));
	json_object_set_new(j, "data_stall_s", ddl_jnum(c->proj.data_s));
	json_object_set_new(j, "idle_s", ddl_jnum(c->proj.idle_s));
	json_object_set_new(j, "interconnect_stall_s", ddl_jnum(c->proj.ic_stall_s));
	json_object_set_new(j, "network_stall_s", ddl_jnum(c->proj.net_stall_s));
	json_object_set_new(j, "interconnect_comm_s", ddl_jnum(c->proj.ic_comm_s));
	json_object_set_new(j, "network_comm_s", ddl_jnum(c->proj.net_comm_s));
	json_object_set_new(j, "hidden_s", ddl_jnum(c->proj.hidden_s));
	json_object_set_new(j, "est_hours", ddl_jnum(c->est_hours));
	json_object_set_new(j, "est_cost_usd", ddl_jnum(c->est_cost));
	json_object_set_new(j, "measured", json_boolean(c->measured));
	json_object_set_new(j, "basis", json_integer(c->basis));
	json_object_set_new(j, "meets_budget", json_boolean(c->meets));
	json_object_set_new(j, "pareto", json_boolean(c->pareto));
	return j;
}

static json_t *ddl_json_profile(const struct ddl_profile *p)
{
	json_t *j = json_object();
	json_object_set_new(j, "file", ddl_jstr_or_null(p->file));
	json_object_set_new(j, "structural", json_boolean(p->structural));
	json_object_set_new(j, "ranks", json_integer(p->ranks));
	json_object_set_new(j, "hosts", json_integer(p->hosts));
	json_object_set_new(j, "gpus_per_host", json_integer(p->gpus_per_host));
	json_object_set_new(j, "gpu_device", ddl_jstr_or_null(p->gpu_device));
	json_object_set_new(j, "gpu_model", ddl_jstr_or_null(p->gpu ? p->gpu->model : NULL));
	json_object_set_new(j, "layers", p->layers ? json_integer(p->layers) : json_null());
	json_object_set_new(j, "iteration_s", p->structural ? json_null() : ddl_jnum(p->iteration_s));
	json_object_set_new(j, "compute_s", ddl_jnum(p->compute_s));
	json_object_set_new(j, "data_stall_s", ddl_jnum(p->data_s));
	json_object_set_new(j, "idle_s", ddl_jnum(p->idle_s));
	json_object_set_new(j, "interconnect_stall_s", ddl_jnum(p->ic_stall_s));
	json_object_set_new(j, "network_stall_s", ddl_jnum(p->net_stall_s));
	json_object_set_new(j, "overlap_s", p->overlap_measured ? ddl_jnum(p->overlap_s) : json_null());
	json_object_set_new(j, "overlap_fraction", ddl_jnum(p->overlap_frac));
	json_object_set_new(j, "grad_bytes", ddl_jnum(p->grad_bytes));
	json_object_set_new(j, "collectives_per_iteration", ddl_jnum(p->collectives));
	json_object_set_new(j, "bytes_source", json_string(ddl_bytes_src_names[p->bytes_src]));
	json_object_set_new(j, "allreduce", json_string(p->hierarchical ? "hierarchical" : "flat"));
	return j;
}

static const char *ddl_ar_name(enum ddl_allreduce a)
{
	return a == DDL_AR_FLAT ? "flat" : a == DDL_AR_HIER ? "hierarchical" : "auto";
}

int ddl_out_json(const struct ddl_out_ctx *o, FILE *f)
{
	const struct ddl_settings *s = o->s;
	const struct ddl_result *r = o->r;
	json_t *root = json_object();
	json_object_set_new(root, "schema", json_string(DDL_RECOMMEND_SCHEMA));
	json_object_set_new(root, "version", json_string(DDLPROF_VERSION));
	json_object_set_new(root, "objective", json_string(r->objective));
	json_object_set_new(root, "budget",
	                    json_pack("{s:o, s:o}", "hours",
	                              s->budget_hours > 0 ? json_real(s->budget_hours) : json_null(),
	                              "usd", s->budget_usd > 0 ? json_real(s->budget_usd) : json_null()));
	json_t *set = json_object();
	json_object_set_new(set, "precision", json_string(s->fp16 ? "fp16" : "fp32"));
	json_object_set_new(set, "scaling", json_string(s->scaling == DDL_STRONG ? "strong" : "weak"));
	json_object_set_new(set, "algorithm", json_string(s->algo == DDL_TREE ? "tree" : "ring"));
	json_object_set_new(set, "allreduce", json_string(ddl_ar_name(s->allreduce)));
	json_object_set_new(set, "spot", json_boolean(s->spot));
	json_object_set_new(set, "max_instances", json_integer(s->max_instances));
	json_object_set_new(set, "iterations", s->iterations > 0 ? ddl_jcount(s->iterations) : json_null());
	json_object_set_new(set, "epochs", s->epochs > 0 ? json_real(s->epochs) : json_null());
	json_object_set_new(set, "samples_per_epoch", s->samples > 0 ? ddl_jcount(s->samples) : json_null());
	json_object_set_new(set, "batch", s->batch > 0 ? ddl_jcount(s->batch) : json_null());
	json_object_set_new(set, "alpha_s", json_real(s->coef.alpha_s));
	json_object_set_new(set, "beta", json_real(s->coef.beta));
	json_object_set_new(set, "norm_p", json_real(s->coef.norm_p));
	json_object_set_new(set, "model_source", json_string(s->coef.source));
	json_object_set_new(set, "measured_instance", ddl_jstr_or_null(s->measured_instance));
	json_object_set_new(root, "settings", set);
	json_t *cats = json_array();
	for (size_t k = 0; k < o->cat->nfiles; k++)
		json_array_append_new(cats, ddl_jstr_or_null(o->cat->files[k]));
	json_object_set_new(root, "catalogs", cats);
	json_t *profs = json_array();
	for (size_t k = 0; k < o->nprof; k++)
		json_array_append_new(profs, ddl_json_profile(&o->prof[k]));
	json_object_set_new(root, "profiles", profs);
	json_object_set_new(root, "recommendation", ddl_json_cand(r->rec));
	json_object_set_new(root, "nearest", ddl_json_cand(r->nearest));
	json_t *cands = json_array();
	for (size_t k = 0; k < r->n; k++)
		json_array_append_new(cands, ddl_json_cand(&r->c[k]));
	json_object_set_new(root, "candidates", cands);
	json_t *front = json_array();
	for (size_t k = 0; k < r->nfront; k++)
		json_array_append_new(front, ddl_json_cand(r->front[k]));
	json_object_set_new(root, "pareto", front);
	json_object_set_new(root, "skipped",
	                    json_pack("{s:I, s:I, s:I}", "no_spot_price", (json_int_t)r->skipped_spot,
	                              "filtered", (json_int_t)r->skipped_filter, "batch_too_small",
	                              (json_int_t)r->skipped_batch));
	json_t *notes = json_array();
	for (size_t k = 0; k < o->nnotes; k++)
		json_array_append_new(notes, ddl_jstr_or_null(o->notes[k]));
	json_object_set_new(root, "notes", notes);
	int rc = json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
	fputc('\n', f);
	json_decref(root);
	return rc < 0 || ferror(f) ? -1 : 0;
}

static void ddl_text_row(FILE *f, const struct ddl_candidate *c)
{
	fprintf(f, "  %-16s %5d %5d %10.4f %10.2f %12.2f  %s%s\n", c->inst->name, c->count, c->gpus,
	        c->proj.iteration_s, c->est_hours, c->est_cost, c->measured ? "measured" : "predicted",
	        c->meets ? "" : "  over budget");
}

static void ddl_text_head(FILE *f)
{
	fprintf(f, "  %-16s %5s %5s %10s %10s %12s\n", "instance", "count", "gpus", "iter_s", "hours",
	        "cost_usd");
}

int ddl_out_text(const struct ddl_out_ctx *o, FILE *f)
{
	const struct ddl_settings *s = o->s;
	const struct ddl_result *r = o->r;
	size_t measured = 0;
	for (size_t k = 0; k < o->nprof; k++)
		measured += !o->prof[k].structural;
	if (measured)
		fprintf(f, "from %zu profile%s; ", measured, measured == 1 ? "" : "s");
	else
		fprintf(f, "from the job's structure; ");
	if (s->iterations > 0)
		fprintf(f, "%.0f iterations", s->iterations);
	else
		fprintf(f, "%g epochs of %.0f samples, batch %.0f", s->epochs, s->samples, s->batch);
	fprintf(f, "; %s, %s scaling, %s all-reduce (%s); %s prices\n", s->fp16 ? "fp16" : "fp32",
	        s->scaling == DDL_STRONG ? "strong" : "weak", s->algo == DDL_TREE ? "tree" : "ring",
	        ddl_ar_name(s->allreduce), s->spot ? "spot" : "on-demand");
	fprintf(f, "budget: ");
	if (s->budget_hours > 0)
		fprintf(f, "%g h%s", s->budget_hours, s->budget_usd > 0 ? ", " : "");
	if (s->budget_usd > 0)
		fprintf(f, "$%.2f", s->budget_usd);
	if (s->budget_hours <= 0 && s->budget_usd <= 0)
		fprintf(f, "none");
	fprintf(f, "; %zu configurations\n\n", r->n);
	const struct ddl_candidate *c = r->rec ? r->rec : r->nearest;
	fprintf(f, "%s %d x %s (%d x %s): %.2f h, $%.2f, %s\n",
	        r->rec ? "recommended:" : "nothing meets the budget; nearest:", c->count, c->inst->name,
	        c->gpus, c->inst->gpu_model, c->est_hours, c->est_cost,
	        c->measured ? "measured" : "predicted");
	fprintf(f, "  iteration %.4f s = compute %.4f + data %.4f + idle %.4f + interconnect %.4f + "
	           "network %.4f\n",
	        c->proj.iteration_s, c->proj.compute_s, c->proj.data_s, c->proj.idle_s,
	        c->proj.ic_stall_s, c->proj.net_stall_s);
	if (r->nfront) {
		fprintf(f, "\nPareto front of time and cost%s:\n",
		        !(s->budget_hours > 0 || s->budget_usd > 0) ? ""
		        : r->rec                                    ? " within the budget"
		                                                    : " (none within the budget)");
		ddl_text_head(f);
		for (size_t k = 0; k < r->nfront; k++)
			ddl_text_row(f, r->front[k]);
	}
	size_t shown = r->n < 10 ? r->n : 10;
	fprintf(f, "\nthe %zu cheapest of %zu configurations (all of them with --json):\n", shown, r->n);
	ddl_text_head(f);
	for (size_t k = 0; k < shown; k++)
		ddl_text_row(f, &r->c[k]);
	return ferror(f) ? -1 : 0;
}
