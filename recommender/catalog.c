/*
 * The instance catalog: reads "ddlprof-catalog/1" JSON files (the shipped
 * recommender/catalog/aws.json and any given with --catalog), checks every
 * field and merges them into one list of GPU models and instance types for
 * the search. A malformed file is refused with one message that names the
 * file, the entry (its index and name) and the field; nothing in it is
 * used. The format is documented in ddlprof-recommend(1), CATALOG.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rec.h"

/* Figures above this are refused: they are typing mistakes, and they keep products finite. */
#define DDL_CAT_MAX 1e6

static const char *const ddl_link_names[] = {"none", "pcie", "nvlink", "nvswitch"};

const char *ddl_link_name(enum ddl_link l)
{
	return ddl_link_names[l];
}

/* Where a message points: the file, then the entry, then the field. */
struct ddl_cat_where {
	const char *file;
	const char *list;   /* "gpus", "instances", "sources" or NULL for the top level */
	size_t index;
	const char *name;   /* the entry's name when it has one */
	char *err;
	size_t errlen;
};

static int ddl_cat_fail(const struct ddl_cat_where *w, const char *field, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	if (!w->list)
		snprintf(w->err, w->errlen, "%s: %s: %s", w->file, field, what);
	else if (w->name)
		snprintf(w->err, w->errlen, "%s: %s[%zu] (%s): %s: %s", w->file, w->list, w->index,
		         w->name, field, what);
	else
		snprintf(w->err, w->errlen, "%s: %s[%zu]: %s: %s", w->file, w->list, w->index, field,
		         what);
	return -1;
}

/* A number in (lo, DDL_CAT_MAX], or [0, ...] when zero_ok. */
static int ddl_cat_num(const struct ddl_cat_where *w, json_t *o, const char *field, int required,
                       int zero_ok, double *v)
{
	json_t *j = json_object_get(o, field);
	if (!j || json_is_null(j)) {
		if (required)
			return ddl_cat_fail(w, field, "missing");
		*v = 0;
		return 0;
	}
	if (!json_is_number(j))
		return ddl_cat_fail(w, field, "must be a number");
	double x = json_number_value(j);
	if (!isfinite(x) || x < 0 || (!zero_ok && x == 0) || x > DDL_CAT_MAX)
		return ddl_cat_fail(w, field, "must be a number %s 0 and at most 1e6 (got %g)",
		                    zero_ok ? "from" : "above", x);
	*v = x;
	return 0;
}

static int ddl_cat_str(const struct ddl_cat_where *w, json_t *o, const char *field, int required,
                       const char **v)
{
	json_t *j = json_object_get(o, field);
	*v = NULL;
	if (!j || json_is_null(j))
		return required ? ddl_cat_fail(w, field, "missing") : 0;
	if (!json_is_string(j) || !json_string_value(j)[0])
		return ddl_cat_fail(w, field, "must be a non-empty string");
	if (strlen(json_string_value(j)) != json_string_length(j))
		return ddl_cat_fail(w, field, "must not hold a NUL character");
	*v = json_string_value(j);
	return 0;
}

/* YYYY-MM-DD with a month and day that exist. */
static int ddl_cat_date_ok(const char *s)
{
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int y, m, d;
	char extra;
	if (strlen(s) != 10 || s[4] != '-' || s[7] != '-')
		return 0;
	if (sscanf(s, "%4d-%2d-%2d%c", &y, &m, &d, &extra) != 3)
		return 0;
	if (y < 1990 || y > 2100 || m < 1 || m > 12 || d < 1 || d > mdays[m - 1])
		return 0;
	if (m == 2 && d == 29 && (y % 4 || (y % 100 == 0 && y % 400)))
		return 0;
	return 1;
}

/*
 * An entry's sources: "source" names the source of all its figures, and
 * "sources" {FIELD: ID} the source of one; every ID must be in the file's
 * "sources" table. "estimates" lists the fields that are estimates. FIGURES
 * is the list of figure names the entry may cite (NULL-terminated).
 */
static int ddl_cat_cites(const struct ddl_cat_where *w, json_t *e, json_t *table,
                         const char *const *figures)
{
	const char *src;
	if (ddl_cat_str(w, e, "source", 0, &src) < 0)
		return -1;
	if (src && !json_object_get(table, src))
		return ddl_cat_fail(w, "source", "\"%s\" is not in the file's sources", src);
	json_t *per = json_object_get(e, "sources");
	if (per && !json_is_object(per))
		return ddl_cat_fail(w, "sources", "must be an object {FIELD: SOURCE_ID}");
	const char *k;
	json_t *v;
	json_object_foreach(per, k, v) {
		int known = 0;
		for (size_t i = 0; figures[i]; i++)
			known |= !strcmp(figures[i], k);
		if (!known)
			return ddl_cat_fail(w, "sources", "\"%s\" is not a figure of this entry", k);
		if (!json_is_string(v) || !json_object_get(table, json_string_value(v)))
			return ddl_cat_fail(w, "sources", "%s: not a source id of the file's sources", k);
	}
	/* Every figure must have a source, its own or the entry's. */
	for (size_t i = 0; figures[i] && !src; i++)
		if (json_object_get(e, figures[i]) && !json_is_null(json_object_get(e, figures[i])) &&
		    !json_object_get(per, figures[i]))
			return ddl_cat_fail(w, figures[i], "has no source (give \"source\" or \"sources\")");
	json_t *est = json_object_get(e, "estimates");
	if (est && !json_is_array(est))
		return ddl_cat_fail(w, "estimates", "must be an array of field names");
	size_t i;
	json_array_foreach(est, i, v) {
		int known = 0;
		for (size_t f = 0; figures[f] && json_is_string(v); f++)
			known |= !strcmp(figures[f], json_string_value(v));
		if (!known)
			return ddl_cat_fail(w, "estimates", "item %zu is not a figure of this entry", i);
	}
	return 0;
}

/*
 * The fields each object may have. Anything else is refused: a misspelled
 * field ("spot_usd_per_hr") would otherwise be silently ignored and the
 * figure it meant to give taken as absent.
 */
static const char *const ddl_top_fields[] = {"schema", "cloud", "currency", "compiled", "reference_gpu",
	"notes", "note", "sources", "model", "gpus", "instances", NULL};
static const char *const ddl_source_fields[] = {"url", "date", "note", NULL};
static const char *const ddl_model_fields[] = {"alpha_s", "beta", "norm_p", "note", "form", "runs",
	"rmse_s", "r2", "mean_abs_rel_error", "max_abs_rel_error", "fitted_from", "date", NULL};
static const char *const ddl_gpu_fields[] = {"model", "device_names", "fp32_rel", "fp16_rel",
	"fp32_tflops", "fp16_tflops", "memory_bw_gbs", "memory_gib", "source", "sources", "estimates",
	"date", "note", NULL};
static const char *const ddl_inst_fields[] = {"name", "cloud", "gpus", "gpu_model", "gpu_memory_gib",
	"interconnect", "network_gbps", "network_up_to", "network_scope", "region",
	"on_demand_usd_per_hour", "spot_usd_per_hour", "source", "sources", "estimates", "date", "note",
	NULL};
static const char *const ddl_link_fields[] = {"kind", "generation", "bandwidth_gbs", "note", NULL};

/* Refuses a field of O not in KNOWN; PREFIX names the object in the message. */
static int ddl_cat_known(const struct ddl_cat_where *w, json_t *o, const char *prefix,
                         const char *const *known)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		size_t i = 0;
		while (known[i] && strcmp(known[i], k))
			i++;
		if (!known[i]) {
			char field[160];
			snprintf(field, sizeof field, "%s%s", prefix, k);
			return ddl_cat_fail(w, field, "unknown field (misspelled? the fields are listed in "
			                    "ddlprof-recommend(1), CATALOG)");
		}
	}
	return 0;
}

/* The entry's "date": when its figures were taken or last checked, YYYY-MM-DD. */
static int ddl_cat_entry_date(const struct ddl_cat_where *w, json_t *e)
{
	const char *date;
	if (ddl_cat_str(w, e, "date", 0, &date) < 0)
		return -1;
	if (!date)
		return ddl_cat_fail(w, "date", "missing: every entry needs the date its figures were "
		                    "taken or last checked (YYYY-MM-DD)");
	if (!ddl_cat_date_ok(date))
		return ddl_cat_fail(w, "date", "must be a date YYYY-MM-DD (got \"%s\")", date);
	return 0;
}

static const char *const ddl_gpu_figures[] = {
	"fp32_rel", "fp16_rel", "fp32_tflops", "fp16_tflops", "memory_bw_gbs", "device_names", NULL};
static const char *const ddl_inst_figures[] = {
	"gpus", "gpu_model", "gpu_memory_gib", "interconnect", "network_gbps",
	"on_demand_usd_per_hour", "spot_usd_per_hour", "region", NULL};

static void ddl_gpu_clear(struct ddl_gpu_model *g)
{
	free(g->model);
	for (size_t i = 0; i < g->ndevice_names; i++)
		free(g->device_names[i]);
	free(g->device_names);
	memset(g, 0, sizeof *g);
}

static void ddl_inst_clear(struct ddl_instance *i)
{
	free(i->cloud);
	free(i->name);
	free(i->gpu_model);
	free(i->region);
	memset(i, 0, sizeof *i);
}

static int ddl_cat_gpu(struct ddl_cat_where *w, json_t *e, json_t *table, struct ddl_gpu_model *g)
{
	const char *model;
	memset(g, 0, sizeof *g);
	if (!json_is_object(e))
		return ddl_cat_fail(w, "(entry)", "must be an object");
	if (ddl_cat_str(w, e, "model", 1, &model) < 0)
		return -1;
	w->name = model;
	double unused;
	if (ddl_cat_known(w, e, "", ddl_gpu_fields) < 0 || ddl_cat_entry_date(w, e) < 0 ||
	    ddl_cat_num(w, e, "memory_gib", 0, 0, &unused) < 0 ||
	    ddl_cat_num(w, e, "fp32_rel", 1, 0, &g->fp32_rel) < 0 ||
	    ddl_cat_num(w, e, "fp16_rel", 1, 0, &g->fp16_rel) < 0 ||
	    ddl_cat_num(w, e, "fp32_tflops", 0, 0, &unused) < 0 ||
	    ddl_cat_num(w, e, "fp16_tflops", 0, 0, &unused) < 0 ||
	    ddl_cat_num(w, e, "memory_bw_gbs", 0, 0, &unused) < 0 ||
	    ddl_cat_cites(w, e, table, ddl_gpu_figures) < 0)
		return -1;
	json_t *names = json_object_get(e, "device_names");
	if (names && !json_is_array(names))
		return ddl_cat_fail(w, "device_names", "must be an array of strings");
	g->model = strdup(model);
	g->device_names = calloc(json_array_size(names) + 1, sizeof *g->device_names);
	if (!g->model || !g->device_names) {
		ddl_gpu_clear(g);
		return ddl_cat_fail(w, "(entry)", "out of memory");
	}
	size_t i;
	json_t *v;
	json_array_foreach(names, i, v) {
		if (!json_is_string(v) || !json_string_value(v)[0] ||
		    strlen(json_string_value(v)) != json_string_length(v)) {
			ddl_gpu_clear(g);
			return ddl_cat_fail(w, "device_names", "item %zu must be a non-empty string", i);
		}
		if (!(g->device_names[g->ndevice_names++] = strdup(json_string_value(v)))) {
			ddl_gpu_clear(g);
			return ddl_cat_fail(w, "(entry)", "out of memory");
		}
	}
	return 0;
}

static int ddl_cat_link(struct ddl_cat_where *w, json_t *e, struct ddl_instance *in)
{
	json_t *ic = json_object_get(e, "interconnect");
	if (!ic)
		return ddl_cat_fail(w, "interconnect", "missing");
	if (!json_is_object(ic))
		return ddl_cat_fail(w, "interconnect", "must be an object {kind, generation, bandwidth_gbs}");
	if (ddl_cat_known(w, ic, "interconnect.", ddl_link_fields) < 0)
		return -1;
	json_t *k = json_object_get(ic, "kind");
	const char *kind = json_is_string(k) ? json_string_value(k) : "";
	size_t l = 0;
	while (l < sizeof ddl_link_names / sizeof ddl_link_names[0] && strcmp(kind, ddl_link_names[l]))
		l++;
	if (l == sizeof ddl_link_names / sizeof ddl_link_names[0])
		return ddl_cat_fail(w, "interconnect.kind", "must be none, pcie, nvlink or nvswitch");
	in->link = (enum ddl_link)l;
	double gen = 0;
	if (ddl_cat_num(w, ic, "generation", 0, 1, &gen) < 0)
		return -1;
	if (gen != floor(gen) || gen > 100)
		return ddl_cat_fail(w, "interconnect.generation", "must be a whole number up to 100");
	in->link_gen = (int)gen;
	json_t *bw = json_object_get(ic, "bandwidth_gbs");
	if (in->link == DDL_LINK_NONE) {
		if (in->gpus > 1)
			return ddl_cat_fail(w, "interconnect.kind", "none, but the instance has %d GPUs",
			                    in->gpus);
		return 0;
	}
	if (!bw || !json_is_number(bw) || !isfinite(json_number_value(bw)) ||
	    json_number_value(bw) <= 0 || json_number_value(bw) > DDL_CAT_MAX)
		return ddl_cat_fail(w, "interconnect.bandwidth_gbs",
		                    "must be a number above 0 and at most 1e6 (GB/s per GPU)");
	in->intra_gbs = json_number_value(bw);
	return 0;
}

static int ddl_cat_instance(struct ddl_cat_where *w, json_t *e, json_t *table, const char *cloud,
                            struct ddl_instance *in)
{
	const char *name, *model, *region, *ecloud;
	memset(in, 0, sizeof *in);
	if (!json_is_object(e))
		return ddl_cat_fail(w, "(entry)", "must be an object");
	if (ddl_cat_str(w, e, "name", 1, &name) < 0)
		return -1;
	w->name = name;
	double gpus, spot;
	if (ddl_cat_known(w, e, "", ddl_inst_fields) < 0 || ddl_cat_entry_date(w, e) < 0 ||
	    ddl_cat_num(w, e, "gpus", 1, 0, &gpus) < 0)
		return -1;
	if (gpus != floor(gpus) || gpus > 1024)
		return ddl_cat_fail(w, "gpus", "must be a whole number from 1 to 1024");
	in->gpus = (int)gpus;
	if (ddl_cat_str(w, e, "gpu_model", 1, &model) < 0 ||
	    ddl_cat_num(w, e, "gpu_memory_gib", 1, 0, &in->gpu_memory_gib) < 0 ||
	    ddl_cat_link(w, e, in) < 0 ||
	    ddl_cat_num(w, e, "network_gbps", 1, 0, &in->network_gbps) < 0 ||
	    ddl_cat_str(w, e, "region", 1, &region) < 0 ||
	    ddl_cat_num(w, e, "on_demand_usd_per_hour", 1, 0, &in->on_demand) < 0 ||
	    ddl_cat_num(w, e, "spot_usd_per_hour", 0, 0, &spot) < 0 ||
	    ddl_cat_str(w, e, "cloud", 0, &ecloud) < 0 || ddl_cat_cites(w, e, table, ddl_inst_figures) < 0)
		return -1;
	in->spot = spot;
	json_t *upto = json_object_get(e, "network_up_to");
	if (upto && !json_is_boolean(upto))
		return ddl_cat_fail(w, "network_up_to", "must be true or false");
	json_t *scope = json_object_get(e, "network_scope");
	if (scope && (!json_is_string(scope) || (strcmp(json_string_value(scope), "instance") &&
	                                         strcmp(json_string_value(scope), "link"))))
		return ddl_cat_fail(w, "network_scope", "must be \"instance\" or \"link\"");
	in->network_per_link = scope && !strcmp(json_string_value(scope), "link");
	in->cloud = strdup(ecloud ? ecloud : cloud);
	in->name = strdup(name);
	in->gpu_model = strdup(model);
	in->region = strdup(region);
	if (!in->cloud || !in->name || !in->gpu_model || !in->region) {
		ddl_inst_clear(in);
		return ddl_cat_fail(w, "(entry)", "out of memory");
	}
	return 0;
}

static int ddl_cat_sources(struct ddl_cat_where *w, json_t *table)
{
	if (!table)
		return ddl_cat_fail(w, "sources", "missing: every figure needs a source and a date");
	if (!json_is_object(table))
		return ddl_cat_fail(w, "sources", "must be an object {ID: {url, date}}");
	const char *id;
	json_t *s;
	size_t i = 0;
	w->list = "sources";
	json_object_foreach(table, id, s) {
		const char *url, *date;
		w->index = i++;
		w->name = id;
		if (!json_is_object(s))
			return ddl_cat_fail(w, "(entry)", "must be an object {url, date}");
		if (ddl_cat_known(w, s, "", ddl_source_fields) < 0)
			return -1;
		if (ddl_cat_str(w, s, "url", 1, &url) < 0 || ddl_cat_str(w, s, "date", 1, &date) < 0)
			return -1;
		if (strncmp(url, "https://", 8) && strncmp(url, "http://", 7))
			return ddl_cat_fail(w, "url", "must start with https:// or http://");
		if (!ddl_cat_date_ok(date))
			return ddl_cat_fail(w, "date", "must be a date YYYY-MM-DD (got \"%s\")", date);
	}
	w->list = NULL;
	w->name = NULL;
	return 0;
}

/* The "model" object: coefficients of the communication model for this platform. */
static int ddl_cat_coef(struct ddl_cat_where *w, json_t *root, struct ddl_comm_coef *c, int *have)
{
	json_t *m = json_object_get(root, "model");
	*have = 0;
	if (!m || json_is_null(m))
		return 0;
	if (!json_is_object(m))
		return ddl_cat_fail(w, "model", "must be an object {alpha_s, beta, norm_p}");
	if (ddl_cat_known(w, m, "model.", ddl_model_fields) < 0 ||
	    ddl_cat_num(w, m, "alpha_s", 1, 1, &c->alpha_s) < 0 ||
	    ddl_cat_num(w, m, "beta", 1, 0, &c->beta) < 0 ||
	    ddl_cat_num(w, m, "norm_p", 0, 0, &c->norm_p) < 0)
		return -1;
	if (c->alpha_s > 1)
		return ddl_cat_fail(w, "model.alpha_s", "must be at most 1 s");
	if (c->norm_p == 0)
		c->norm_p = 1;
	if (c->norm_p < 1 || c->norm_p > 100)
		return ddl_cat_fail(w, "model.norm_p", "must be a number from 1 to 100 (got %g)", c->norm_p);
	*have = 1;
	return 0;
}

static int ddl_cat_grow(void **p, size_t n, size_t size)
{
	void *q = realloc(*p, (n + 1) * size);
	if (!q)
		return -1;
	*p = q;
	return 0;
}

int ddl_catalog_parse(struct ddl_catalog *cat, const char *name, const char *buf, size_t len,
                      char *err, size_t errlen)
{
	struct ddl_cat_where w = {name, NULL, 0, NULL, err, errlen};
	json_error_t je;
	json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		snprintf(err, errlen, "%s: line %d: not valid JSON: %s", name, je.line, je.text);
		return -1;
	}
	struct ddl_gpu_model *gpus = NULL;
	struct ddl_instance *inst = NULL;
	size_t ngpus = 0, ninst = 0;
	int rc = -1, have_coef = 0;
	struct ddl_comm_coef coef = {0};
	const char *schema, *cloud;
	if (!json_is_object(root)) {
		ddl_cat_fail(&w, "(top level)", "must be an object");
		goto out;
	}
	if (ddl_cat_str(&w, root, "schema", 1, &schema) < 0)
		goto out;
	size_t pl = strlen(DDL_CATALOG_SCHEMA);
	const char *digits = schema + pl;
	long ver = 0;
	int numeric = !strncmp(schema, DDL_CATALOG_SCHEMA, pl) && *digits &&
	              strspn(digits, "0123456789") == strlen(digits) && strlen(digits) < 9;
	if (numeric)
		ver = strtol(digits, NULL, 10);
	if (!numeric && !strncmp(schema, DDL_CATALOG_SCHEMA, pl) && *digits &&
	    strspn(digits, "0123456789") == strlen(digits))
		ver = 1000000000L; /* a number too long to be one we know */
	if (ver < 1) {
		ddl_cat_fail(&w, "schema", "\"%s\" is not a ddlprof catalog (want \"%s%d\")", schema,
		             DDL_CATALOG_SCHEMA, DDL_CATALOG_VERSION);
		goto out;
	}
	if (ver > DDL_CATALOG_VERSION) {
		ddl_cat_fail(&w, "schema", "\"%s\" is newer than this ddlprof-recommend reads (%s%d)",
		             schema, DDL_CATALOG_SCHEMA, DDL_CATALOG_VERSION);
		goto out;
	}
	if (ddl_cat_known(&w, root, "", ddl_top_fields) < 0 || ddl_cat_str(&w, root, "cloud", 1, &cloud) < 0)
		goto out;
	json_t *table = json_object_get(root, "sources");
	if (ddl_cat_sources(&w, table) < 0 || ddl_cat_coef(&w, root, &coef, &have_coef) < 0)
		goto out;
	json_t *jg = json_object_get(root, "gpus"), *ji = json_object_get(root, "instances");
	if (jg && !json_is_array(jg)) {
		ddl_cat_fail(&w, "gpus", "must be an array");
		goto out;
	}
	if (!json_is_array(ji)) {
		ddl_cat_fail(&w, "instances", ji ? "must be an array" : "missing");
		goto out;
	}
	size_t i;
	json_t *e;
	w.list = "gpus";
	json_array_foreach(jg, i, e) {
		w.index = i;
		w.name = NULL;
		if (ddl_cat_grow((void **)&gpus, ngpus, sizeof *gpus) < 0) {
			ddl_cat_fail(&w, "(entry)", "out of memory");
			goto out;
		}
		if (ddl_cat_gpu(&w, e, table, &gpus[ngpus]) < 0)
			goto out;
		gpus[ngpus++].file = NULL;
		for (size_t k = 0; k + 1 < ngpus; k++)
			if (!strcasecmp(gpus[k].model, gpus[ngpus - 1].model)) {
				ddl_cat_fail(&w, "model", "\"%s\" is also gpus[%zu]", gpus[k].model, k);
				goto out;
			}
	}
	w.list = "instances";
	json_array_foreach(ji, i, e) {
		w.index = i;
		w.name = NULL;
		if (ddl_cat_grow((void **)&inst, ninst, sizeof *inst) < 0) {
			ddl_cat_fail(&w, "(entry)", "out of memory");
			goto out;
		}
		if (ddl_cat_instance(&w, e, table, cloud, &inst[ninst]) < 0)
			goto out;
		ninst++;
		for (size_t k = 0; k + 1 < ninst; k++)
			if (!strcmp(inst[k].name, inst[ninst - 1].name) &&
			    !strcmp(inst[k].cloud, inst[ninst - 1].cloud)) {
				ddl_cat_fail(&w, "name", "\"%s\" is also instances[%zu]", inst[k].name, k);
				goto out;
			}
	}
	/* Everything checked: merge, later definitions replacing earlier ones. */
	char *fname = strdup(name);
	if (!fname || ddl_cat_grow((void **)&cat->files, cat->nfiles, sizeof *cat->files) < 0) {
		free(fname);
		snprintf(err, errlen, "%s: out of memory", name);
		goto out;
	}
	cat->files[cat->nfiles++] = fname;
	for (size_t k = 0; k < ngpus; k++) {
		gpus[k].file = fname;
		size_t at = 0;
		while (at < cat->ngpus && strcasecmp(cat->gpus[at].model, gpus[k].model))
			at++;
		if (at == cat->ngpus && ddl_cat_grow((void **)&cat->gpus, cat->ngpus, sizeof *cat->gpus) < 0) {
			snprintf(err, errlen, "%s: out of memory", name);
			goto out;
		}
		if (at < cat->ngpus)
			ddl_gpu_clear(&cat->gpus[at]);
		else
			cat->ngpus++;
		cat->gpus[at] = gpus[k];
		memset(&gpus[k], 0, sizeof gpus[k]);
	}
	for (size_t k = 0; k < ninst; k++) {
		inst[k].file = fname;
		size_t at = 0;
		while (at < cat->ninst &&
		       (strcmp(cat->inst[at].name, inst[k].name) || strcmp(cat->inst[at].cloud, inst[k].cloud)))
			at++;
		if (at == cat->ninst && ddl_cat_grow((void **)&cat->inst, cat->ninst, sizeof *cat->inst) < 0) {
			snprintf(err, errlen, "%s: out of memory", name);
			goto out;
		}
		if (at < cat->ninst)
			ddl_inst_clear(&cat->inst[at]);
		else
			cat->ninst++;
		cat->inst[at] = inst[k];
		memset(&inst[k], 0, sizeof inst[k]);
	}
	if (have_coef) {
		cat->have_coef = 1;
		cat->coef = coef;
		snprintf(cat->coef.source, sizeof cat->coef.source, "catalog %s", name);
	}
	rc = 0;
out:
	for (size_t k = 0; k < ngpus; k++)
		ddl_gpu_clear(&gpus[k]);
	for (size_t k = 0; k < ninst; k++)
		ddl_inst_clear(&inst[k]);
	free(gpus);
	free(inst);
	json_decref(root);
	return rc;
}

int ddl_catalog_load(struct ddl_catalog *cat, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	char *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len == cap) {
			if (cap >= (64u << 20)) {
				snprintf(err, errlen, "%s: larger than 64 MiB; not a catalog", path);
				free(buf);
				fclose(f);
				return -1;
			}
			char *q = realloc(buf, cap = cap ? cap * 2 : 65536);
			if (!q) {
				snprintf(err, errlen, "%s: out of memory", path);
				free(buf);
				fclose(f);
				return -1;
			}
			buf = q;
		}
		size_t k = fread(buf + len, 1, cap - len, f);
		len += k;
		if (k == 0)
			break;
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		snprintf(err, errlen, "%s: read error", path);
		free(buf);
		return -1;
	}
	int rc = ddl_catalog_parse(cat, path, buf, len, err, errlen);
	free(buf);
	return rc;
}

int ddl_catalog_finish(struct ddl_catalog *cat, char *err, size_t errlen)
{
	for (size_t i = 0; i < cat->ninst; i++) {
		struct ddl_instance *in = &cat->inst[i];
		in->gpu = NULL;
		for (size_t k = 0; k < cat->ngpus && !in->gpu; k++)
			if (!strcasecmp(cat->gpus[k].model, in->gpu_model))
				in->gpu = &cat->gpus[k];
		if (!in->gpu) {
			snprintf(err, errlen, "%s: instances (%s): gpu_model: \"%s\" is not in any catalog's gpus",
			         in->file, in->name, in->gpu_model);
			return -1;
		}
	}
	return 0;
}

static int ddl_is_alnum(char c)
{
	return (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z');
}

/* The next alphanumeric token of *P (advanced past it): its start and length, or 0 at the end. */
static size_t ddl_next_token(const char **p, const char **tok)
{
	const char *s = *p;
	while (*s && !ddl_is_alnum(*s))
		s++;
	const char *q = s;
	while (*q && ddl_is_alnum(*q))
		q++;
	*tok = s;
	*p = q;
	return (size_t)(q - s);
}

/* Whether the N bytes at WORD are one of the alphanumeric tokens of S, ignoring case. */
static int ddl_has_token(const char *s, const char *word, size_t n)
{
	const char *t;
	size_t k;
	while ((k = ddl_next_token(&s, &t)))
		if (k == n && !strncasecmp(t, word, n))
			return 1;
	return 0;
}

/* Tokens that say nothing of the variant: the vendor, the brand, a memory size or kind. */
static int ddl_token_neutral(const char *t, size_t n)
{
	if ((n == 6 && !strncasecmp(t, "NVIDIA", 6)) || (n == 5 && !strncasecmp(t, "Tesla", 5)) ||
	    (n >= 3 && !strncasecmp(t, "HBM", 3)))
		return 1;
	size_t d = 0;
	while (d < n && t[d] >= '0' && t[d] <= '9')
		d++;
	return d > 0 && d + 2 == n && !strncasecmp(t + d, "GB", 2);
}

/*
 * Whether DEVICE is G by its model's name as a word ("Tesla V100-SXM2-16GB"
 * is V100), with no other word that none of G's device names has: "NVIDIA
 * H100 PCIe" is not the H100 (SXM) a catalog describes, whose figures
 * differ, and an error asking for --measured-gpu beats a wrong projection.
 */
static int ddl_gpu_word_match(const struct ddl_gpu_model *g, const char *device)
{
	size_t mn = strlen(g->model);
	if (!ddl_has_token(device, g->model, mn))
		return 0;
	const char *p = device, *t;
	size_t n;
	while ((n = ddl_next_token(&p, &t))) {
		if ((n == mn && !strncasecmp(t, g->model, n)) || ddl_token_neutral(t, n))
			continue;
		int known = 0;
		for (size_t d = 0; d < g->ndevice_names && !known; d++)
			known = ddl_has_token(g->device_names[d], t, n);
		if (!known)
			return 0;
	}
	return 1;
}

const struct ddl_gpu_model *ddl_catalog_gpu(const struct ddl_catalog *cat, const char *device)
{
	if (!device)
		return NULL;
	for (size_t k = 0; k < cat->ngpus; k++) {
		if (!strcasecmp(cat->gpus[k].model, device))
			return &cat->gpus[k];
		for (size_t d = 0; d < cat->gpus[k].ndevice_names; d++)
			if (!strcasecmp(cat->gpus[k].device_names[d], device))
				return &cat->gpus[k];
	}
	for (size_t k = 0; k < cat->ngpus; k++)
		if (ddl_gpu_word_match(&cat->gpus[k], device))
			return &cat->gpus[k];
	return NULL;
}

void ddl_catalog_free(struct ddl_catalog *cat)
{
	for (size_t k = 0; k < cat->ngpus; k++)
		ddl_gpu_clear(&cat->gpus[k]);
	for (size_t k = 0; k < cat->ninst; k++)
		ddl_inst_clear(&cat->inst[k]);
	for (size_t k = 0; k < cat->nfiles; k++)
		free(cat->files[k]);
	free(cat->gpus);
	free(cat->inst);
	free(cat->files);
	memset(cat, 0, sizeof *cat);
}
