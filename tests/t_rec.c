/*
 * ddlprof-recommend through its command line: projections on a tiny
 * catalog of round figures (tests/rec/tiny.json) checked against numbers
 * worked out by hand below; the budget decisions, exit status 4 and the
 * nearest option; the Pareto front; measured iteration times taking
 * precedence over projections; malformed catalogs (one message naming the
 * file, the entry and the field, status 2) and bad profiles (status 1);
 * older reports without per-iteration fields; the shipped catalog; the
 * search against brute force on random catalogs; a real tcpring run
 * profiled and projected; and, where ddlsynth runs on the emulation, a
 * projection checked against a run at another bandwidth.
 *
 * The hand-worked profile, tests/rec/p4.json: 4 ranks on one host of the
 * REF GPU, per iteration compute 0.4 s, data stall 0.05, idle 0.05,
 * interconnect stall 0.1, 1e9 gradient bytes, measured 0.6 s. With
 * --alpha 0 --beta 1 and 36000 iterations (hours = 10 x iteration_s):
 *
 *   a.1 x1  compute 0.4*4 = 1.6                          t = 1.7   17 h   $17
 *   a.1 x2  compute 0.8, ring of 2 on 1e9 B/s: 1.0       t = 1.9   19 h   $38
 *   a.1 x3  compute 0.5333, 4/3 * 1e9/1e9 = 1.3333       t = 1.9667       $59
 *   a.4 x1  measured                                     t = 0.6    6 h   $21.6
 *           (projected: 0.4 + 1.5*1e9/1e10 + 0.1 = 0.65)
 *   a.4 x2  compute 0.2, flat ring of 8 on min(1e10, 2e9): 1.75*0.5 = 0.875
 *                                                        t = 1.175 11.75 h $84.6
 *   a.4 x3  compute 0.1333, 22/12 * 0.5 = 0.91667        t = 1.15  11.5 h $124.2
 *   b.2 x1  compute 0.4 * 1/2 (FAST) * 4/2 = 0.4, 1e9/1e11 = 0.01
 *                                                        t = 0.51   5.1 h $40.8
 *   b.2 x2  compute 0.2, ring of 4 on min(1e11, 1e10): 0.15  t = 0.45  4.5 h $72
 *   b.2 x3  compute 0.1333, 10/6 * 0.1 = 0.16667         t = 0.4    4 h   $96
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

/* tests/rec/NAME in the source tree (build/.. is the source root). */
static const char *ddl_rec_data(const char *name)
{
	static char buf[8][PATH_MAX];
	static int k;
	char rel[PATH_MAX];
	k = (k + 1) % 8;
	snprintf(rel, sizeof rel, "../tests/rec/%s", name);
	snprintf(buf[k], sizeof buf[k], "%s", tbuild(rel));
	return buf[k];
}

/* Runs ddlprof-recommend with ARGS (NULL-terminated); 0 or -1. */
static int ddl_rec_exec(char *const args[], struct ddl_run_result *r)
{
	char *argv[64] = {(char *)tbuild("bin/ddlprof-recommend")};
	int n = 1;
	for (int i = 0; args[i] && n < 63; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return trun(argv, NULL, 120, r);
}

/*
 * Runs on the tiny catalog and p4.json (unless ARGS name others) with
 * --json; returns the output, or NULL. *status gets the exit status.
 */
static json_t *ddl_rec_json(char *const args[], int *status)
{
	struct ddl_run_result r;
	if (ddl_rec_exec(args, &r) < 0) {
		fprintf(stderr, "    could not run ddlprof-recommend\n");
		return NULL;
	}
	*status = tstatus(&r);
	json_error_t je;
	json_t *j = json_loads(r.out, 0, &je);
	if (!j)
		fprintf(stderr, "    status %d, not JSON (%s): %s\n", *status, je.text, r.err);
	trun_free(&r);
	return j;
}

static double ddl_num(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static int ddl_near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (fabs(b) + 1);
}

/* The candidate COUNT x NAME of a result. */
static json_t *ddl_cand(json_t *res, const char *name, int count)
{
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(res, "candidates"), i, c) {
		if (!strcmp(json_string_value(json_object_get(c, "instance")), name) &&
		    json_integer_value(json_object_get(c, "count")) == count)
			return c;
	}
	return NULL;
}

static int ddl_is(json_t *c, const char *name, int count)
{
	return c && json_is_object(c) && !strcmp(json_string_value(json_object_get(c, "instance")), name) &&
	       json_integer_value(json_object_get(c, "count")) == count;
}

/* Writes CAT to DIR/NAME; returns the path (static) or NULL. */
static const char *ddl_write_cat(const char *dir, const char *name, json_t *cat)
{
	static char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return json_dump_file(cat, path, JSON_INDENT(1)) == 0 ? path : NULL;
}

#define TINY "--catalog", (char *)ddl_rec_data("tiny.json")
#define P4 "--profile", (char *)ddl_rec_data("p4.json")
#define EXACT "--alpha", "0", "--beta", "1", "--iterations", "36000", "--max-instances", "3", "--json"

int test_rec_usage(void)
{
	struct {
		char *args[12];
		int status;
		const char *says;
	} c[] = {
		{{"--help", NULL}, 0, ""},
		{{"--version", NULL}, 0, ""},
		{{NULL}, 2, "--profile"},
		{{"--bogus", NULL}, 2, "--bogus"},
		{{"--profile", NULL}, 2, "--profile"},
		{{"--profile", "x.json", NULL}, 2, "--iterations"},
		{{"--profile", "x.json", "--iterations", "0", NULL}, 2, "--iterations"},
		{{"--profile", "x.json", "--iterations", "1e3x", NULL}, 2, "--iterations"},
		{{"--profile", "x.json", "--iterations", "10", "--epochs", "2", NULL}, 2, "not both"},
		{{"--profile", "x.json", "--epochs", "2", "--batch", "8", NULL}, 2, "--samples-per-epoch"},
		{{"--profile", "x.json", "--epochs", "2", "--samples-per-epoch", "1000", NULL}, 2,
		 "missing: --batch B (the global batch, or one GPU's with --scaling weak: profiles do not record it)"},
		{{"--profile", "x.json", "--iterations", "10", "--budget-hours", "-1", NULL}, 2, "--budget-hours"},
		{{"--profile", "x.json", "--iterations", "10", "--budget-usd", "nan", NULL}, 2, "--budget-usd"},
		{{"--profile", "x.json", "--iterations", "10", "--precision", "fp8", NULL}, 2, "--precision"},
		{{"--profile", "x.json", "--iterations", "10", "--scaling", "linear", NULL}, 2, "--scaling"},
		{{"--profile", "x.json", "--iterations", "10", "--algorithm", "butterfly", NULL}, 2, "--algorithm"},
		{{"--profile", "x.json", "--iterations", "10", "--max-instances", "0", NULL}, 2, "--max-instances"},
		{{"--profile", "x.json", "--iterations", "10", "--compute-ms", "5", NULL}, 2, "--compute-ms"},
		{{"--layers", "10", "--iterations", "10", NULL}, 2, "--params"},
		{{"--layers", "10", "--params", "1e6", "--compute-ms", "5", "--iterations", "10", "--overlap",
		  "1.5", NULL}, 2, "--overlap"},
		{{"--profile", "x.json", "stray", "--iterations", "10", NULL}, 2, "stray"},
		{{"--profile", "/no/such/report.json", "--iterations", "10", TINY, NULL}, 1, "/no/such/report.json"},
		{{"--profile", "x.json", "--iterations", "10", "--catalog", "/no/such/catalog.json", NULL}, 2,
		 "/no/such/catalog.json"},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		struct ddl_run_result r;
		CHECK(ddl_rec_exec(c[i].args, &r) == 0, "case %zu", i);
		CHECK(tstatus(&r) == c[i].status && strstr(r.err, c[i].says),
		      "case %zu: status %d, stderr '%s'", i, tstatus(&r), r.err);
		if (c[i].status) {
			/* one message, one line, and nothing on standard output but a result */
			char *nl = strchr(r.err, '\n');
			CHECK(nl && !nl[1], "case %zu: one line on stderr: '%s'", i, r.err);
			CHECK(r.nout == 0, "case %zu: stdout '%s'", i, r.out);
		} else {
			CHECK(strstr(r.out, i ? "ddlprof-recommend 0." : "usage: ddlprof-recommend"),
			      "case %zu: stdout '%s'", i, r.out);
		}
		trun_free(&r);
	}
	return DDL_PASS;
}

int test_rec_hand_projection(void)
{
	static const struct {
		const char *name;
		int count;
		double iter, hours, cost;
		int measured;
	} want[] = {
		{"a.1", 1, 1.7, 17, 17, 0},          {"a.1", 2, 1.9, 19, 38, 0},
		{"a.1", 3, 0.1 + 1.6 / 3 + 4.0 / 3, 10 * (0.1 + 1.6 / 3 + 4.0 / 3), 10 * (0.1 + 1.6 / 3 + 4.0 / 3) * 3, 0},
		{"a.4", 1, 0.6, 6, 21.6, 1},         {"a.4", 2, 1.175, 11.75, 84.6, 0},
		{"a.4", 3, 1.15, 11.5, 124.2, 0},    {"b.2", 1, 0.51, 5.1, 40.8, 0},
		{"b.2", 2, 0.45, 4.5, 72, 0},        {"b.2", 3, 0.4, 4, 96, 0},
	};
	char *args[] = {TINY, P4, EXACT, NULL};
	int st;
	json_t *res = ddl_rec_json(args, &st);
	CHECK(res && st == 0, "status %d", st);
	CHECK(!strcmp(json_string_value(json_object_get(res, "schema")), "ddlprof-recommend/1"), "schema");
	CHECK(json_array_size(json_object_get(res, "candidates")) == 9, "3 types x 3 counts: %zu",
	      json_array_size(json_object_get(res, "candidates")));
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		json_t *c = ddl_cand(res, want[i].name, want[i].count);
		CHECK(c, "%d x %s missing", want[i].count, want[i].name);
		CHECK(ddl_near(ddl_num(c, "iteration_s"), want[i].iter) &&
		      ddl_near(ddl_num(c, "est_hours"), want[i].hours) &&
		      ddl_near(ddl_num(c, "est_cost_usd"), want[i].cost),
		      "%d x %s: iteration %.12g hours %.12g cost %.12g, want %.12g %.12g %.12g", want[i].count,
		      want[i].name, ddl_num(c, "iteration_s"), ddl_num(c, "est_hours"), ddl_num(c, "est_cost_usd"),
		      want[i].iter, want[i].hours, want[i].cost);
		CHECK(json_is_true(json_object_get(c, "measured")) == want[i].measured, "%d x %s measured",
		      want[i].count, want[i].name);
		CHECK(json_integer_value(json_object_get(c, "gpus")) ==
		      want[i].count * (want[i].name[0] == 'a' ? (want[i].name[2] - '0') : 2), "gpus");
	}
	/* the parts of one projection: b.2 x1 */
	json_t *b = ddl_cand(res, "b.2", 1);
	CHECK(ddl_near(ddl_num(b, "compute_s"), 0.4) && ddl_near(ddl_num(b, "interconnect_stall_s"), 0.01) &&
	      ddl_near(ddl_num(b, "network_stall_s"), 0) && ddl_near(ddl_num(b, "data_stall_s"), 0.05) &&
	      ddl_near(ddl_num(b, "idle_s"), 0.05), "b.2 x1 parts");
	json_t *p = json_array_get(json_object_get(res, "profiles"), 0);
	CHECK(!strcmp(json_string_value(json_object_get(p, "gpu_model")), "REF") &&
	      ddl_near(ddl_num(p, "grad_bytes"), 1e9) &&
	      !strcmp(json_string_value(json_object_get(p, "bytes_source")), "per_iteration"),
	      "profile read: gpu_model, grad_bytes, bytes_source");
	json_decref(res);

	/* Variations, each one figure worked by hand. */
	struct {
		char *extra[8];
		const char *name;
		int count;
		double iter;
		const char *why;
	} v[] = {
		{{"--precision", "fp16", NULL}, "b.2", 1, 0.2 + 0.1 + 0.01, "fp16: FAST is 4x REF: compute 0.4*4/2/4"},
		{{"--scaling", "weak", NULL}, "a.1", 2, 0.4 + 0.1 + 1.0, "weak: per-GPU compute stays 0.4"},
		{{"--algorithm", "tree", NULL}, "a.1", 2, 0.8 + 0.1 + 2.0, "tree: 2 S/B"},
		{{"--algorithm", "tree", NULL}, "a.4", 3, 0.4 / 3 + 0.1 + 2 * 1e9 / 2e9, "tree: 2 S/B over 12"},
		{{"--allreduce", "hierarchical", NULL}, "a.4", 2,
		 0.2 + 0.1 + 1.5 * 1e9 / 1e10 + 1.0 * 0.25e9 / 0.5e9, "hierarchical: 4 inside, 2 across"},
		{{"--alpha", "0.001", "--beta", "2", NULL}, "a.1", 2, 0.8 + 0.1 + 0.001 * 2 + 2 * 1.0,
		 "alpha per ring step, beta on the bandwidth term"},
		{{"--measured-instance", "b.2", NULL}, "a.4", 1, 0.4 + 0.1 + 0.15, "not measured: projected"},
		{{"--measured-gpu", "FAST", NULL}, "a.4", 1, 0.8 + 0.1 + 0.15, "measured on FAST: REF is half as fast"},
		{{"--grad-bytes", "2e9", NULL}, "a.1", 2, 0.8 + 0.1 + 2.0, "--grad-bytes replaces the measured"},
		{{"--params", "5e8", NULL}, "a.1", 2, 0.8 + 0.1 + 2.0, "--params: 4 bytes each"},
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		char *a[24] = {TINY, P4, EXACT};
		int n = 0;
		while (a[n])
			n++;
		for (int k = 0; v[i].extra[k]; k++)
			a[n++] = v[i].extra[k];
		a[n] = NULL;
		res = ddl_rec_json(a, &st);
		CHECK(res && st == 0, "%s: status %d", v[i].why, st);
		json_t *c = ddl_cand(res, v[i].name, v[i].count);
		CHECK(c && ddl_near(ddl_num(c, "iteration_s"), v[i].iter), "%s: %d x %s: %.12g, want %.12g",
		      v[i].why, v[i].count, v[i].name, ddl_num(c, "iteration_s"), v[i].iter);
		CHECK(!json_is_true(json_object_get(c, "measured")), "%s: not measured", v[i].why);
		json_decref(res);
	}

	/*
	 * Overlap: 0.1 s of the 0.2 s of communication ran under the 0.4 s of
	 * compute. That is a window of compute, not a fraction of the
	 * communication: b.2 x1 (compute 0.4, 0.01 s of communication) hides
	 * all 0.01; a.1 x3 (compute 1.6/3, 4/3 s) hides the window scaled
	 * with the compute, 0.1 x (1.6/3) / 0.4, not half the 4/3 s.
	 */
	char *ao[] = {TINY, "--profile", (char *)ddl_rec_data("p4_overlap.json"), EXACT, NULL};
	res = ddl_rec_json(ao, &st);
	CHECK(res && st == 0, "overlap: status %d", st);
	CHECK(ddl_near(ddl_num(ddl_cand(res, "b.2", 1), "iteration_s"), 0.4 + 0.1),
	      "overlap: b.2 x1 %.12g", ddl_num(ddl_cand(res, "b.2", 1), "iteration_s"));
	CHECK(ddl_near(ddl_num(ddl_cand(res, "a.1", 3), "iteration_s"),
	               1.6 / 3 + 0.1 + 4.0 / 3 - 0.1 * (1.6 / 3) / 0.4) &&
	      ddl_near(ddl_num(ddl_cand(res, "a.1", 3), "hidden_s"), 0.1 * (1.6 / 3) / 0.4),
	      "overlap window: a.1 x3 %.12g", ddl_num(ddl_cand(res, "a.1", 3), "iteration_s"));
	json_decref(res);
	/*
	 * The same with 4 collectives a step (job.per_iteration.collectives):
	 * the last starts when the backward pass is done, so a quarter of the
	 * communication always shows. b.2 x1: 0.01 s, 0.0025 shows.
	 */
	json_t *ov = json_load_file(ddl_rec_data("p4_overlap.json"), 0, NULL);
	json_object_set_new(json_object_get(json_object_get(ov, "job"), "per_iteration"), "collectives", json_real(4));
	char *ovdir = tmpdir(), ovpath[PATH_MAX];
	snprintf(ovpath, sizeof ovpath, "%s/ov4.json", ovdir);
	CHECK(json_dump_file(ov, ovpath, 0) == 0, "write %s", ovpath);
	json_decref(ov);
	char *ao4[] = {TINY, "--profile", ovpath, EXACT, NULL};
	res = ddl_rec_json(ao4, &st);
	CHECK(res && st == 0, "overlap, 4 collectives: status %d", st);
	CHECK(ddl_near(ddl_num(ddl_cand(res, "b.2", 1), "iteration_s"), 0.4 + 0.1 + 0.01 / 4) &&
	      ddl_near(ddl_num(json_array_get(json_object_get(res, "profiles"), 0), "collectives_per_iteration"), 4),
	      "overlap, last collective shows: b.2 x1 %.12g", ddl_num(ddl_cand(res, "b.2", 1), "iteration_s"));
	json_decref(res);
	trm(ovdir);
	free(ovdir);

	/* From the structure alone: 10 layers, 2.5e8 parameters (1e9 bytes), 1.6 s on one REF GPU. */
	char *al[] = {TINY, "--layers", "10", "--params", "2.5e8", "--compute-ms", "1600", "--data-ms", "100",
	              "--alpha", "0.001", "--beta", "1", "--iterations", "36000", "--max-instances", "3",
	              "--json", NULL};
	res = ddl_rec_json(al, &st);
	CHECK(res && st == 0, "layers: status %d", st);
	json_t *c = ddl_cand(res, "a.1", 2);
	CHECK(ddl_near(ddl_num(c, "iteration_s"), 0.8 + 0.1 + 0.001 * 10 * 2 + 1.0),
	      "layers: a.1 x2 %.12g", ddl_num(c, "iteration_s"));
	c = ddl_cand(res, "a.4", 1);
	CHECK(ddl_near(ddl_num(c, "iteration_s"), 0.4 + 0.1 + 0.001 * 10 * 6 + 1.5 * 0.1) &&
	      !json_is_true(json_object_get(c, "measured")),
	      "layers: a.4 x1 %.12g", ddl_num(c, "iteration_s"));
	p = json_array_get(json_object_get(res, "profiles"), 0);
	CHECK(json_is_true(json_object_get(p, "structural")) && json_integer_value(json_object_get(p, "layers")) == 10,
	      "layers: the structural profile");
	json_decref(res);

	/* Epochs: 1e6 samples, global batch 100: 10000 iterations; per-GPU batch when weak. */
	char *ae[] = {TINY, P4, "--alpha", "0", "--beta", "1", "--max-instances", "3", "--json", "--epochs", "3",
	              "--samples-per-epoch", "1000000", "--batch", "100", NULL};
	res = ddl_rec_json(ae, &st);
	CHECK(res && st == 0, "epochs: status %d", st);
	c = ddl_cand(res, "a.1", 2);
	CHECK(ddl_num(c, "iterations") == 30000 && ddl_near(ddl_num(c, "est_hours"), 1.9 * 30000 / 3600),
	      "epochs: 30000 iterations, %.12g h", ddl_num(c, "est_hours"));
	json_decref(res);
	char *aw[] = {TINY, P4, "--alpha", "0", "--beta", "1", "--max-instances", "3", "--json", "--epochs", "3",
	              "--samples-per-epoch", "1000000", "--batch", "100", "--scaling", "weak", NULL};
	res = ddl_rec_json(aw, &st);
	CHECK(res && st == 0, "weak epochs: status %d", st);
	c = ddl_cand(res, "a.4", 3); /* 12 GPUs x 100 a step: ceil(3e6 / 1200) */
	CHECK(ddl_num(c, "iterations") == 2500, "weak epochs: %g iterations", ddl_num(c, "iterations"));
	json_decref(res);
	/* A global batch smaller than the GPUs cannot run there. */
	char *ab[] = {TINY, P4, "--json", "--epochs", "1", "--samples-per-epoch", "1000", "--batch", "4",
	              "--max-instances", "3", NULL};
	res = ddl_rec_json(ab, &st);
	CHECK(res && st == 0 && !ddl_cand(res, "a.4", 2) && ddl_cand(res, "a.4", 1) &&
	      json_integer_value(json_object_get(json_object_get(res, "skipped"), "batch_too_small")) == 3,
	      "batch 4: 6, 8 and 12 GPUs (b.2 x3, a.4 x2, a.4 x3) left out");
	json_decref(res);
	return DDL_PASS;
}

int test_rec_budgets(void)
{
	int st;
	struct {
		char *budget[6];
		const char *name;
		int count;
		const char *objective;
	} c[] = {
		{{"--budget-hours", "6.5", NULL}, "a.4", 1, "min_cost_within_hours"},
		{{"--budget-hours", "5.5", NULL}, "b.2", 1, "min_cost_within_hours"},
		{{"--budget-hours", "18", NULL}, "a.1", 1, "min_cost_within_hours"},
		{{"--budget-usd", "50", NULL}, "b.2", 1, "min_hours_within_cost"},
		{{"--budget-usd", "30", NULL}, "a.4", 1, "min_hours_within_cost"},
		{{"--budget-usd", "100", NULL}, "b.2", 3, "min_hours_within_cost"},
		{{"--budget-hours", "18", "--budget-usd", "45", NULL}, "a.1", 1, "min_cost_within_both"},
		{{"--budget-hours", "5.5", "--budget-usd", "80", NULL}, "b.2", 1, "min_cost_within_both"},
		{{NULL}, "a.1", 1, "min_cost"},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		char *a[24] = {TINY, P4, EXACT};
		int n = 0;
		while (a[n])
			n++;
		for (int k = 0; c[i].budget[k]; k++)
			a[n++] = c[i].budget[k];
		a[n] = NULL;
		json_t *res = ddl_rec_json(a, &st);
		CHECK(res && st == 0, "case %zu: status %d", i, st);
		json_t *rec = json_object_get(res, "recommendation");
		CHECK(ddl_is(rec, c[i].name, c[i].count), "case %zu: recommended %s x%lld, want %s x%d", i,
		      json_string_value(json_object_get(rec, "instance")),
		      (long long)json_integer_value(json_object_get(rec, "count")), c[i].name, c[i].count);
		CHECK(!strcmp(json_string_value(json_object_get(res, "objective")), c[i].objective),
		      "case %zu: objective", i);
		static const char *const fields[] = {"instance", "count", "gpus", "est_hours", "est_cost_usd", "measured"};
		for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
			CHECK(json_object_get(rec, fields[f]), "case %zu: recommendation.%s", i, fields[f]);
		CHECK(json_is_null(json_object_get(res, "nearest")), "case %zu: no nearest", i);
		json_decref(res);
	}
	/* Nothing fits: status 4, one line naming the nearest, and the JSON still written. */
	struct {
		char *budget[6];
		const char *line;
		const char *name;
		int count;
	} none[] = {
		{{"--budget-hours", "3", NULL}, "the nearest is 3 x b.2: 4.00 h, $96.00", "b.2", 3},
		{{"--budget-usd", "10", NULL}, "the nearest is 1 x a.1: 17.00 h, $17.00", "a.1", 1},
		{{"--budget-hours", "4.2", "--budget-usd", "50", NULL}, "the nearest is 1 x b.2: 5.10 h, $40.80", "b.2", 1},
	};
	for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
		char *a[24] = {TINY, P4, EXACT};
		int n = 0;
		while (a[n])
			n++;
		for (int k = 0; none[i].budget[k]; k++)
			a[n++] = none[i].budget[k];
		a[n] = NULL;
		struct ddl_run_result r;
		CHECK(ddl_rec_exec(a, &r) == 0, "none %zu", i);
		CHECK(tstatus(&r) == 4, "none %zu: status %d", i, tstatus(&r));
		char *nl = strchr(r.err, '\n');
		CHECK(strstr(r.err, none[i].line) && nl && !nl[1], "none %zu: stderr '%s'", i, r.err);
		json_t *res = json_loads(r.out, 0, NULL);
		CHECK(res && json_is_null(json_object_get(res, "recommendation")) &&
		      ddl_is(json_object_get(res, "nearest"), none[i].name, none[i].count) &&
		      json_array_size(json_object_get(res, "pareto")) == 5 &&
		      ddl_is(json_array_get(json_object_get(res, "pareto"), 0), "b.2", 3) &&
		      ddl_is(json_array_get(json_object_get(res, "pareto"), 4), "a.1", 1),
		      "none %zu: JSON recommendation null, nearest, the front of all 9 (b.2 x3, x2, x1, a.4 x1, a.1 x1)", i);
		json_decref(res);
		trun_free(&r);
	}
	/* Text output says the same. */
	char *at[] = {TINY, P4, "--alpha", "0", "--beta", "1", "--iterations", "36000", "--max-instances", "3",
	              "--budget-hours", "6.5", NULL};
	struct ddl_run_result r;
	CHECK(ddl_rec_exec(at, &r) == 0 && tstatus(&r) == 0, "text: status %d", tstatus(&r));
	CHECK(strstr(r.out, "recommended: 1 x a.4 (4 x REF): 6.00 h, $21.60, measured"), "text: '%s'", r.out);
	trun_free(&r);
	/* --spot: spot prices, types without one left out and counted. */
	char *as[] = {TINY, P4, EXACT, "--spot", "--budget-hours", "18", NULL};
	json_t *res = ddl_rec_json(as, &st);
	CHECK(res && st == 0, "spot: status %d", st);
	CHECK(!ddl_cand(res, "a.4", 1) && ddl_near(ddl_num(ddl_cand(res, "b.2", 2), "est_cost_usd"), 4.5 * 2 * 2) &&
	      json_integer_value(json_object_get(json_object_get(res, "skipped"), "no_spot_price")) == 1,
	      "spot: a.4 left out, b.2 x2 at $2/h");
	CHECK(ddl_is(json_object_get(res, "recommendation"), "a.1", 1), "spot: a.1 x1 at $4.25");
	json_decref(res);
	/* --instance narrows the types. */
	char *ai[] = {TINY, P4, EXACT, "--instance", "b.*", "--budget-hours", "18", NULL};
	res = ddl_rec_json(ai, &st);
	CHECK(res && st == 0 && json_array_size(json_object_get(res, "candidates")) == 3 &&
	      ddl_is(json_object_get(res, "recommendation"), "b.2", 1), "--instance b.*");
	json_decref(res);
	return DDL_PASS;
}

int test_rec_pareto(void)
{
	char *a[] = {TINY, P4, EXACT, NULL};
	int st;
	json_t *res = ddl_rec_json(a, &st);
	CHECK(res && st == 0, "status %d", st);
	static const struct {
		const char *name;
		int count;
	} front[] = {{"b.2", 3}, {"b.2", 2}, {"b.2", 1}, {"a.4", 1}, {"a.1", 1}};
	json_t *pf = json_object_get(res, "pareto");
	CHECK(json_array_size(pf) == 5, "front of 5, got %zu", json_array_size(pf));
	for (size_t i = 0; i < 5; i++)
		CHECK(ddl_is(json_array_get(pf, i), front[i].name, front[i].count), "front[%zu]", i);
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(res, "candidates"), i, c) {
		int on = 0;
		for (size_t k = 0; k < 5; k++)
			on |= ddl_is(c, front[k].name, front[k].count);
		CHECK(json_is_true(json_object_get(c, "pareto")) == on, "candidates[%zu].pareto", i);
	}
	json_decref(res);
	/* Within both budgets the front is cut to them. */
	char *b[] = {TINY, P4, EXACT, "--budget-hours", "18", "--budget-usd", "45", NULL};
	res = ddl_rec_json(b, &st);
	CHECK(res && st == 0, "both: status %d", st);
	pf = json_object_get(res, "pareto");
	CHECK(json_array_size(pf) == 3 && ddl_is(json_array_get(pf, 0), "b.2", 1) &&
	      ddl_is(json_array_get(pf, 1), "a.4", 1) && ddl_is(json_array_get(pf, 2), "a.1", 1),
	      "both: front b.2x1, a.4x1, a.1x1");
	json_decref(res);

	/*
	 * Ties, in exact binary arithmetic: a one-rank job of 0.5 s steps, no
	 * traffic, 7200 steps. u (REF, $2/h) takes 1 h on one instance and
	 * 0.5 h on two; w (a GPU half as fast, $1/h) 2 h and 1 h: every
	 * configuration costs $2, so only the fastest, 2 x u, is on the front.
	 */
	char *dir = tmpdir(), prof[PATH_MAX];
	json_t *cat = json_load_file(ddl_rec_data("tiny.json"), 0, NULL);
	json_array_append_new(json_object_get(cat, "gpus"),
	                      json_pack("{s:s, s:f, s:f, s:s, s:s}", "model", "SLOW", "fp32_rel", 0.5, "fp16_rel", 0.5,
	                                "source", "t", "date", "2026-01-01"));
	json_object_set_new(cat, "instances",
	                    json_pack("[{s:s, s:i, s:s, s:f, s:{s:s}, s:f, s:s, s:f, s:s, s:s},"
	                              " {s:s, s:i, s:s, s:f, s:{s:s}, s:f, s:s, s:f, s:s, s:s}]",
	                              "name", "u", "gpus", 1, "gpu_model", "REF", "gpu_memory_gib", 1.0,
	                              "interconnect", "kind", "none", "network_gbps", 8.0, "region", "r",
	                              "on_demand_usd_per_hour", 2.0, "source", "t", "date", "2026-01-01",
	                              "name", "w", "gpus", 1, "gpu_model", "SLOW", "gpu_memory_gib", 1.0,
	                              "interconnect", "kind", "none", "network_gbps", 8.0, "region", "r",
	                              "on_demand_usd_per_hour", 1.0, "source", "t", "date", "2026-01-01"));
	const char *cp = ddl_write_cat(dir, "ties.json", cat);
	char cpath[PATH_MAX];
	snprintf(cpath, sizeof cpath, "%s", cp);
	json_decref(cat);
	json_t *p = json_load_file(ddl_rec_data("p4.json"), 0, NULL);
	json_t *job = json_object_get(p, "job");
	json_object_set_new(job, "ranks", json_integer(1));
	json_object_set_new(job, "iteration_mean_s", json_real(0.5));
	json_object_set_new(job, "gpu", json_pack("{s:s, s:i}", "model", "REF", "count_per_host", 1));
	json_object_set_new(job, "per_iteration",
	                    json_pack("{s:f, s:f, s:f, s:f, s:f}", "compute_s", 0.5, "data_stall_s", 0.0,
	                              "interconnect_stall_s", 0.0, "network_stall_s", 0.0, "idle_s", 0.0));
	snprintf(prof, sizeof prof, "%s/one.json", dir);
	CHECK(json_dump_file(p, prof, 0) == 0, "write");
	json_decref(p);
	char *t[] = {"--catalog", cpath, "--profile", prof, "--grad-bytes", "0", "--alpha", "0", "--iterations",
	             "7200", "--max-instances", "2", "--json", NULL};
	res = ddl_rec_json(t, &st);
	CHECK(res && st == 0, "ties: status %d", st);
	pf = json_object_get(res, "pareto");
	CHECK(json_array_size(pf) == 1 && ddl_is(json_array_get(pf, 0), "u", 2),
	      "ties: the front is 2 x u alone, not %zu entries", json_array_size(pf));
	json_array_foreach(json_object_get(res, "candidates"), i, c)
		CHECK(ddl_num(c, "est_cost_usd") == 2.0, "ties: every configuration costs $2");
	CHECK(ddl_is(json_object_get(res, "recommendation"), "u", 2), "ties: the cheapest, then the fastest");
	json_decref(res);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

int test_rec_measured_precedence(void)
{
	/* A second profile, measured on 2 x b.2 (FAST, 2 per host): 0.3 s, where 0.45 is projected. */
	char *dir = tmpdir(), prof[PATH_MAX];
	snprintf(prof, sizeof prof, "%s/b2x2.json", dir);
	json_t *p = json_load_file(ddl_rec_data("p4.json"), 0, NULL);
	CHECK(p, "p4.json");
	json_t *job = json_object_get(p, "job");
	json_object_set_new(job, "ranks", json_integer(4));
	json_object_set_new(job, "hosts", json_integer(2));
	json_object_set_new(job, "iteration_mean_s", json_real(0.3));
	json_object_set_new(job, "gpu", json_pack("{s:s, s:i}", "model", "Tiny Fast GPU", "count_per_host", 2));
	json_t *per = json_object_get(job, "per_iteration");
	json_object_set_new(per, "compute_s", json_real(0.1));
	json_object_set_new(per, "interconnect_stall_s", json_real(0));
	json_object_set_new(per, "network_stall_s", json_real(0.1));
	json_object_set_new(per, "intra_bytes", json_real(0));
	json_object_set_new(per, "inter_bytes", json_real(1e9));
	CHECK(json_dump_file(p, prof, 0) == 0, "write %s", prof);
	json_decref(p);
	char *a[] = {TINY, P4, "--profile", prof, EXACT, NULL};
	int st;
	json_t *res = ddl_rec_json(a, &st);
	CHECK(res && st == 0, "status %d", st);
	json_t *c = ddl_cand(res, "b.2", 2);
	CHECK(ddl_near(ddl_num(c, "iteration_s"), 0.3) && json_is_true(json_object_get(c, "measured")) &&
	      json_integer_value(json_object_get(c, "basis")) == 1, "b.2 x2 measured by the second profile");
	c = ddl_cand(res, "a.4", 1);
	CHECK(ddl_near(ddl_num(c, "iteration_s"), 0.6) && json_is_true(json_object_get(c, "measured")) &&
	      json_integer_value(json_object_get(c, "basis")) == 0, "a.4 x1 measured by the first");
	/*
	 * b.2 x3 is projected from the FAST profile (same GPU, spread over
	 * machines): compute 0.1 * 4/6, flat ring of 6 on 1e10 B/s, data and
	 * idle 0.05 each.
	 */
	c = ddl_cand(res, "b.2", 3);
	CHECK(!json_is_true(json_object_get(c, "measured")) && json_integer_value(json_object_get(c, "basis")) == 1 &&
	      ddl_near(ddl_num(c, "iteration_s"), 0.1 * 4 / 6 + 0.1 + 10.0 / 6 * 0.1),
	      "b.2 x3 from the FAST profile: %.12g", ddl_num(c, "iteration_s"));
	/* a.1 x2 (REF): from the REF profile */
	c = ddl_cand(res, "a.1", 2);
	CHECK(json_integer_value(json_object_get(c, "basis")) == 0 && ddl_near(ddl_num(c, "iteration_s"), 1.9),
	      "a.1 x2 from the REF profile");
	json_decref(res);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

int test_rec_bad_catalogs(void)
{
	char *dir = tmpdir();
	struct {
		const char *path;  /* JSON path to change: "instances.1.network_gbps" */
		const char *value; /* JSON text of the new value, or NULL to delete */
		const char *says[3];
	} c[] = {
		{"instances.1.network_gbps", "\"fast\"", {"instances[1] (a.4)", "network_gbps", "number"}},
		{"instances.1.network_gbps", "-5", {"instances[1] (a.4)", "network_gbps", "above 0"}},
		{"instances.2.on_demand_usd_per_hour", NULL, {"instances[2] (b.2)", "on_demand_usd_per_hour", "missing"}},
		{"instances.0.gpus", "0", {"instances[0] (a.1)", "gpus", "above 0"}},
		{"instances.1.gpus", "2.5", {"instances[1] (a.4)", "gpus", "whole number"}},
		{"instances.1.interconnect", "{\"kind\": \"infiniband\", \"bandwidth_gbs\": 5}",
		 {"instances[1] (a.4)", "interconnect.kind", "pcie"}},
		{"instances.1.interconnect", "{\"kind\": \"pcie\"}", {"instances[1] (a.4)", "interconnect.bandwidth_gbs", ""}},
		{"instances.1.interconnect", "{\"kind\": \"none\"}", {"instances[1] (a.4)", "interconnect.kind", "4 GPUs"}},
		{"instances.2.gpu_model", "\"H100\"", {"(b.2)", "gpu_model", "H100"}},
		{"instances.0.source", "\"nowhere\"", {"instances[0] (a.1)", "source", "nowhere"}},
		{"instances.0.source", NULL, {"instances[0] (a.1)", "gpus", "no source"}},
		{"instances.2.sources", "{\"spot_usd_per_hour\": \"q\"}", {"instances[2] (b.2)", "sources", "spot_usd_per_hour"}},
		{"instances.2.estimates", "[\"speed\"]", {"instances[2] (b.2)", "estimates", "item 0"}},
		{"instances.0.name", NULL, {"instances[0]:", "name", "missing"}},
		{"instances.2.name", "\"a.1\"", {"instances[2] (a.1)", "name", "instances[0]"}},
		{"instances.0.spot_usd_per_hour", "true", {"instances[0] (a.1)", "spot_usd_per_hour", "number"}},
		{"instances.0.network_scope", "\"rack\"", {"instances[0] (a.1)", "network_scope", "link"}},
		{"gpus.1.fp32_rel", "-2", {"gpus[1] (FAST)", "fp32_rel", "above 0"}},
		{"gpus.0.device_names", "[1]", {"gpus[0] (REF)", "device_names", "item 0"}},
		{"sources.p.date", "\"2026-02-30\"", {"sources[1] (p)", "date", "YYYY-MM-DD"}},
		{"sources.t.url", "\"ftp://example.org\"", {"sources[0] (t)", "url", "https://"}},
		{"sources", NULL, {"sources", "missing", ""}},
		{"schema", "\"ddlprof-catalog/2\"", {"schema", "newer", ""}},
		{"schema", "\"ddlprof-report/1\"", {"schema", "not a ddlprof catalog", ""}},
		{"instances", "{}", {"instances", "array", ""}},
		{"model", "{\"alpha_s\": 5, \"beta\": 1}", {"model.alpha_s", "at most 1 s", ""}},
		{"model", "{\"alpha_s\": 0, \"beta\": 1, \"norm_p\": 0.5}", {"model.norm_p", "from 1 to 100", ""}},
		/* every entry carries its date; a misspelled field is refused, not ignored */
		{"instances.1.date", NULL, {"instances[1] (a.4)", "date", "missing"}},
		{"instances.0.date", "\"2026-13-01\"", {"instances[0] (a.1)", "date", "YYYY-MM-DD"}},
		{"gpus.1.date", NULL, {"gpus[1] (FAST)", "date", "missing"}},
		{"gpus.0.date", "20260101", {"gpus[0] (REF)", "date", "string"}},
		{"instances.2.spot_usd_per_hr", "1.5", {"instances[2] (b.2)", "spot_usd_per_hr", "unknown field"}},
		{"instances.1.interconnect.bandwith_gbs", "5", {"instances[1] (a.4)", "interconnect.bandwith_gbs", "unknown field"}},
		{"gpus.0.fp23_rel", "1", {"gpus[0] (REF)", "fp23_rel", "unknown field"}},
		{"sources.t.dat", "\"2026-01-01\"", {"sources[0] (t)", "dat", "unknown field"}},
		{"model", "{\"alpha_s\": 0, \"beta\": 1, \"gamma\": 2}", {"model.gamma", "unknown field", ""}},
		{"instancess", "[]", {"instancess", "unknown field", ""}},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		json_t *cat = json_load_file(ddl_rec_data("tiny.json"), 0, NULL);
		CHECK(cat, "tiny.json");
		char buf[256];
		snprintf(buf, sizeof buf, "%s", c[i].path);
		json_t *o = cat;
		char *save = NULL, *tok = strtok_r(buf, ".", &save), *next;
		for (; (next = strtok_r(NULL, ".", &save)); tok = next)
			o = json_is_array(o) ? json_array_get(o, (size_t)atoi(tok)) : json_object_get(o, tok);
		CHECK(o, "case %zu: path %s", i, c[i].path);
		if (c[i].value)
			json_object_set_new(o, tok, json_loads(c[i].value, JSON_DECODE_ANY, NULL));
		else
			json_object_del(o, tok);
		char name[64];
		snprintf(name, sizeof name, "bad%zu.json", i);
		const char *path = ddl_write_cat(dir, name, cat);
		json_decref(cat);
		CHECK(path, "write");
		char *a[] = {"--catalog", (char *)path, P4, "--iterations", "10", NULL};
		struct ddl_run_result r;
		CHECK(ddl_rec_exec(a, &r) == 0, "case %zu", i);
		char *nl = strchr(r.err, '\n');
		CHECK(tstatus(&r) == 2 && strstr(r.err, path) && nl && !nl[1], "case %zu: status %d, '%s'",
		      i, tstatus(&r), r.err);
		for (int k = 0; k < 3; k++)
			CHECK(strstr(r.err, c[i].says[k]), "case %zu (%s): '%s' not in '%s'", i, c[i].path,
			      c[i].says[k], r.err);
		CHECK(r.nout == 0, "case %zu: nothing on stdout", i);
		trun_free(&r);
	}
	/* Not JSON at all, and a duplicate key: the line is named. */
	const char *texts[][2] = {{"{\"schema\": \"ddlprof-catalog/1\",\n  oops", "line 2"},
	                          {"{\"schema\": \"ddlprof-catalog/1\",\n\"schema\": \"x\"}", "duplicate"},
	                          {"[]", "(top level)"}};
	for (size_t i = 0; i < 3; i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/text%zu.json", dir, i);
		FILE *f = fopen(path, "w");
		CHECK(f && fputs(texts[i][0], f) >= 0 && fclose(f) == 0, "write %s", path);
		char *a[] = {"--catalog", path, P4, "--iterations", "10", NULL};
		struct ddl_run_result r;
		CHECK(ddl_rec_exec(a, &r) == 0, "text %zu", i);
		CHECK(tstatus(&r) == 2 && strstr(r.err, path) && strstr(r.err, texts[i][1]),
		      "text %zu: status %d, '%s'", i, tstatus(&r), r.err);
		trun_free(&r);
	}
	/* A later catalog replaces an entry of an earlier one (same cloud and name). */
	json_t *cat = json_load_file(ddl_rec_data("tiny.json"), 0, NULL);
	json_t *insts = json_array();
	json_t *b2 = json_deep_copy(json_array_get(json_object_get(cat, "instances"), 2));
	json_object_set_new(b2, "on_demand_usd_per_hour", json_real(4.0));
	json_array_append_new(insts, b2);
	json_object_set_new(cat, "instances", insts);
	json_object_del(cat, "gpus");
	const char *patch = ddl_write_cat(dir, "patch.json", cat);
	json_decref(cat);
	char *a[] = {TINY, "--catalog", (char *)patch, P4, EXACT, NULL};
	int st;
	json_t *res = ddl_rec_json(a, &st);
	CHECK(res && st == 0 && json_array_size(json_object_get(res, "candidates")) == 9 &&
	      ddl_near(ddl_num(ddl_cand(res, "b.2", 1), "est_cost_usd"), 5.1 * 4.0) &&
	      json_array_size(json_object_get(res, "catalogs")) == 2,
	      "patched price of b.2 (%g)", ddl_num(ddl_cand(res, "b.2", 1), "est_cost_usd"));
	json_decref(res);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

int test_rec_bad_profiles(void)
{
	char *dir = tmpdir();
	struct {
		const char *path;  /* JSON path in p4.json */
		const char *value; /* NULL deletes */
		const char *says[2];
	} c[] = {
		{"schema", "\"ddlprof-sim/1\"", {"schema", "ddlprof-report/1"}},
		{"schema", "\"ddlprof-report/2\"", {"schema", "newer"}},
		{"job.iteration_mean_s", "null", {"job.iteration_mean_s", "no iterations"}},
		{"job.iteration_mean_s", "\"slow\"", {"job.iteration_mean_s", "number"}},
		{"job.ranks", NULL, {"job.ranks", "whole number"}},
		{"job.hosts", "9", {"job.hosts", "job.ranks"}},
		{"job.per_iteration.compute_s", "-1", {"job.per_iteration.compute_s", "from 0"}},
		{"job.per_iteration.intra_bytes", "\"many\"", {"job.per_iteration.intra_bytes", "number"}},
		{"job.gpu", "{\"model\": \"Voodoo 2\"}", {"job.gpu.model", "Voodoo 2"}},
		{"job.gpu", "[1]", {"job.gpu", "object"}},
		{"job.per_iteration", NULL, {"job.breakdown_pct", "missing compute"}},
		{"job", NULL, {"job", "missing"}},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		json_t *p = json_load_file(ddl_rec_data("p4.json"), 0, NULL);
		CHECK(p, "p4.json");
		if (!strcmp(c[i].path, "job.per_iteration")) {
			/* no per_iteration, no breakdowns: nothing to project from */
			json_object_del(json_object_get(p, "job"), "breakdown_pct");
			json_object_set_new(p, "ranks", json_array());
		}
		char buf[256];
		snprintf(buf, sizeof buf, "%s", c[i].path);
		json_t *o = p;
		char *save = NULL, *tok = strtok_r(buf, ".", &save), *next;
		for (; (next = strtok_r(NULL, ".", &save)); tok = next)
			o = json_object_get(o, tok);
		CHECK(o, "case %zu", i);
		if (c[i].value)
			json_object_set_new(o, tok, json_loads(c[i].value, JSON_DECODE_ANY, NULL));
		else
			json_object_del(o, tok);
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/bad%zu.json", dir, i);
		CHECK(json_dump_file(p, path, 0) == 0, "write");
		json_decref(p);
		char *a[] = {TINY, "--profile", path, "--iterations", "10", NULL};
		struct ddl_run_result r;
		CHECK(ddl_rec_exec(a, &r) == 0, "case %zu", i);
		char *nl = strchr(r.err, '\n');
		CHECK(tstatus(&r) == 1 && strstr(r.err, path) && nl && !nl[1], "case %zu: status %d '%s'", i,
		      tstatus(&r), r.err);
		for (int k = 0; k < 2; k++)
			CHECK(strstr(r.err, c[i].says[k]), "case %zu: '%s' not in '%s'", i, c[i].says[k], r.err);
		trun_free(&r);
	}
	/* Not JSON; an empty file; a directory with neither report.json nor traces. */
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/text.json", dir);
	FILE *f = fopen(path, "w");
	CHECK(f && fputs("{\"schema\": \"ddlprof-report/1\", \"job\": {\n", f) >= 0 && fclose(f) == 0, "write");
	char empty[PATH_MAX];
	snprintf(empty, sizeof empty, "%s/empty", dir);
	CHECK(mkdir(empty, 0700) == 0, "mkdir");
	const char *cases[][2] = {{path, "not valid JSON"}, {empty, "neither report.json nor traces"}};
	for (int i = 0; i < 2; i++) {
		char *a[] = {TINY, "--profile", (char *)cases[i][0], "--iterations", "10", NULL};
		struct ddl_run_result r;
		CHECK(ddl_rec_exec(a, &r) == 0, "case %d", i);
		CHECK(tstatus(&r) == 1 && strstr(r.err, cases[i][0]) && strstr(r.err, cases[i][1]),
		      "case %d: status %d '%s'", i, tstatus(&r), r.err);
		trun_free(&r);
	}
	/* One rank measures no traffic: the gradient size must be given. */
	json_t *p = json_load_file(ddl_rec_data("legacy_sockets.json"), 0, NULL);
	json_object_set_new(json_object_get(p, "job"), "ranks", json_integer(1));
	json_object_set_new(p, "processes", json_array());
	snprintf(path, sizeof path, "%s/one.json", dir);
	CHECK(json_dump_file(p, path, 0) == 0, "write");
	json_decref(p);
	char *a1[] = {TINY, "--profile", path, "--iterations", "10", NULL};
	struct ddl_run_result r;
	CHECK(ddl_rec_exec(a1, &r) == 0 && tstatus(&r) == 1 && strstr(r.err, "--params"),
	      "one rank: status %d '%s'", tstatus(&r), r.err);
	trun_free(&r);
	char *a2[] = {TINY, "--profile", path, "--iterations", "10", "--grad-bytes", "4e6", "--json", NULL};
	int st;
	json_t *res = ddl_rec_json(a2, &st);
	CHECK(res && st == 0, "one rank with --grad-bytes: status %d", st);
	json_decref(res);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

int test_rec_older_reports(void)
{
	int st;
	/* Socket bytes of a ring: 37748736 sent by each rank in 12 steps (7 + 5 warm-up) of 4 ranks. */
	char *a[] = {TINY, "--profile", (char *)ddl_rec_data("legacy_sockets.json"), EXACT, NULL};
	json_t *res = ddl_rec_json(a, &st);
	CHECK(res && st == 0, "sockets: status %d", st);
	json_t *p = json_array_get(json_object_get(res, "profiles"), 0);
	CHECK(ddl_near(ddl_num(p, "grad_bytes"), 37748736.0 / 12 * 4 / 6) &&
	      !strcmp(json_string_value(json_object_get(p, "bytes_source")), "sockets") &&
	      ddl_near(ddl_num(p, "compute_s"), 0.01) && ddl_near(ddl_num(p, "interconnect_stall_s"), 0.005) &&
	      json_is_null(json_object_get(p, "gpu_model")) && json_is_null(json_object_get(p, "overlap_s")),
	      "sockets: grad_bytes %.12g compute %.12g", ddl_num(p, "grad_bytes"), ddl_num(p, "compute_s"));
	/* no GPU model: the reference GPU, said in a note; never a measured match */
	json_t *notes = json_object_get(res, "notes");
	int said = 0;
	size_t i;
	json_t *n;
	json_array_foreach(notes, i, n) said |= strstr(json_string_value(n), "reference GPU") != NULL;
	CHECK(said, "a note about the reference GPU");
	CHECK(!json_is_true(json_object_get(ddl_cand(res, "a.4", 1), "measured")), "CPU job: never measured");
	json_decref(res);
	/* Only breakdown_pct: the parts from percentages of the mean. */
	json_t *j = json_load_file(ddl_rec_data("legacy_sockets.json"), 0, NULL);
	json_object_set_new(j, "ranks", json_array());
	char *dir = tmpdir(), path[PATH_MAX];
	snprintf(path, sizeof path, "%s/pct.json", dir);
	CHECK(json_dump_file(j, path, 0) == 0, "write");
	json_decref(j);
	char *b[] = {TINY, "--profile", path, EXACT, NULL};
	res = ddl_rec_json(b, &st);
	CHECK(res && st == 0, "pct: status %d", st);
	p = json_array_get(json_object_get(res, "profiles"), 0);
	CHECK(ddl_near(ddl_num(p, "compute_s"), 0.01) && ddl_near(ddl_num(p, "idle_s"), 0.005),
	      "pct: compute %.12g", ddl_num(p, "compute_s"));
	json_decref(res);
	/* Whole-run collectives of a hierarchical all-reduce: 2 per host, 3 calls a step. */
	char *c[] = {TINY, "--profile", (char *)ddl_rec_data("hier_collectives.json"), EXACT, NULL};
	res = ddl_rec_json(c, &st);
	CHECK(res && st == 0, "collectives: status %d", st);
	p = json_array_get(json_object_get(res, "profiles"), 0);
	CHECK(ddl_near(ddl_num(p, "grad_bytes"), 1000) && ddl_near(ddl_num(p, "collectives_per_iteration"), 3) &&
	      !strcmp(json_string_value(json_object_get(p, "allreduce")), "hierarchical") &&
	      !strcmp(json_string_value(json_object_get(p, "bytes_source")), "collectives") &&
	      ddl_near(ddl_num(p, "network_stall_s"), 0.1),
	      "collectives: grad_bytes %.12g, %.12g a step", ddl_num(p, "grad_bytes"),
	      ddl_num(p, "collectives_per_iteration"));
	json_decref(res);
	/* A directory holding report.json. */
	char *d[] = {TINY, "--profile", (char *)ddl_rec_data("dir_profile"), EXACT, NULL};
	res = ddl_rec_json(d, &st);
	CHECK(res && st == 0 && ddl_near(ddl_num(ddl_cand(res, "a.4", 1), "iteration_s"), 0.6),
	      "directory with report.json");
	json_decref(res);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

static int ddl_has_source(json_t *e, json_t *table, const char *field)
{
	json_t *per = json_object_get(json_object_get(e, "sources"), field);
	const char *id = per ? json_string_value(per) : json_string_value(json_object_get(e, "source"));
	json_t *s = id ? json_object_get(table, id) : NULL;
	const char *url = json_string_value(json_object_get(s, "url"));
	const char *date = json_string_value(json_object_get(s, "date"));
	return url && !strncmp(url, "https://", 8) && date && strlen(date) == 10;
}

int test_rec_shipped_catalog(void)
{
	const char *aws = tbuild("../recommender/catalog/aws.json");
	json_t *cat = json_load_file(aws, 0, NULL);
	CHECK(cat, "%s", aws);
	json_t *table = json_object_get(cat, "sources");
	static const char *const need[] = {
		"p2.xlarge", "p2.8xlarge", "p2.16xlarge", "p3.2xlarge", "p3.8xlarge", "p3.16xlarge",
		"p3dn.24xlarge", "p4d.24xlarge", "p5.48xlarge", "g4dn.xlarge", "g4dn.12xlarge", "g4dn.metal",
		"g5.xlarge", "g5.12xlarge", "g5.48xlarge", "g6.xlarge", "g6.12xlarge", "g6.48xlarge",
		"g6e.xlarge", "g6e.12xlarge", "g6e.48xlarge", "p4de.24xlarge", "p5e.48xlarge", "p5en.48xlarge"};
	for (size_t k = 0; k < sizeof need / sizeof need[0]; k++) {
		int found = 0;
		size_t i;
		json_t *e;
		json_array_foreach(json_object_get(cat, "instances"), i, e) found |=
		        !strcmp(json_string_value(json_object_get(e, "name")), need[k]);
		CHECK(found, "%s is in the catalog", need[k]);
	}
	static const char *const figs[] = {"gpus", "gpu_model", "gpu_memory_gib", "interconnect", "network_gbps",
	                                   "on_demand_usd_per_hour", "region"};
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(cat, "instances"), i, e) {
		for (size_t f = 0; f < sizeof figs / sizeof figs[0]; f++)
			CHECK(ddl_has_source(e, table, figs[f]), "instances[%zu].%s has a source with a URL and a date", i,
			      figs[f]);
		CHECK(!json_is_number(json_object_get(e, "spot_usd_per_hour")) ||
		      ddl_has_source(e, table, "spot_usd_per_hour"), "instances[%zu] spot source", i);
	}
	json_array_foreach(json_object_get(cat, "gpus"), i, e) {
		CHECK(ddl_has_source(e, table, "fp32_rel") && ddl_has_source(e, table, "fp16_rel"), "gpus[%zu]", i);
	}
	/* every entry, GPU or instance, carries its own date and a source with a URL */
	static const char *const lists[] = {"gpus", "instances"};
	for (size_t l = 0; l < 2; l++)
		json_array_foreach(json_object_get(cat, lists[l]), i, e) {
			const char *date = json_string_value(json_object_get(e, "date"));
			CHECK(date && strlen(date) == 10 && date[4] == '-' && date[7] == '-' && ddl_has_source(e, table, "source"),
			      "%s[%zu] has a date and a source", lists[l], i);
		}
	size_t ninst = json_array_size(json_object_get(cat, "instances"));
	json_decref(cat);
	/* The default catalog, found from build/bin, with the hand profile measured on a V100. */
	char *a[] = {P4, "--measured-gpu", "V100", "--iterations", "100000", "--budget-hours", "20", "--json", NULL};
	int st;
	json_t *res = ddl_rec_json(a, &st);
	CHECK(res && st == 0, "status %d", st);
	json_t *cands = json_object_get(res, "candidates");
	CHECK(json_array_size(cands) == ninst * 8, "%zu candidates, want %zu", json_array_size(cands), ninst * 8);
	json_t *rec = json_object_get(res, "recommendation");
	/* the recommendation is the cheapest that meets the budget */
	double best = INFINITY;
	json_t *c;
	json_array_foreach(cands, i, c) {
		int meets = ddl_num(c, "est_hours") <= 20;
		CHECK(meets == json_is_true(json_object_get(c, "meets_budget")), "candidates[%zu].meets_budget", i);
		if (meets && ddl_num(c, "est_cost_usd") < best)
			best = ddl_num(c, "est_cost_usd");
		static const char *const fields[] = {"instance", "count", "gpus", "est_hours", "est_cost_usd", "measured"};
		for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
			CHECK(json_object_get(c, fields[f]), "candidates[%zu].%s", i, fields[f]);
	}
	CHECK(ddl_num(rec, "est_cost_usd") == best && ddl_num(rec, "est_hours") <= 20, "cheapest within 20 h");
	json_t *pf = json_object_get(res, "pareto"), *x, *y;
	size_t k;
	CHECK(json_array_size(pf) > 0, "a front");
	json_array_foreach(pf, i, x) json_array_foreach(cands, k, y) {
		if (ddl_num(y, "est_hours") > 20)
			continue;
		CHECK(!(ddl_num(y, "est_hours") <= ddl_num(x, "est_hours") &&
		        ddl_num(y, "est_cost_usd") <= ddl_num(x, "est_cost_usd") &&
		        (ddl_num(y, "est_hours") < ddl_num(x, "est_hours") ||
		         ddl_num(y, "est_cost_usd") < ddl_num(x, "est_cost_usd"))),
		      "pareto[%zu] dominated by candidates[%zu]", i, k);
	}
	json_decref(res);
	/* --spot with a catalog that has no spot prices: a clear message, status 2 */
	char *b[] = {P4, "--measured-gpu", "V100", "--iterations", "10", "--spot", NULL};
	struct ddl_run_result r;
	CHECK(ddl_rec_exec(b, &r) == 0 && tstatus(&r) == 2 && strstr(r.err, "without a spot price"),
	      "--spot: status %d '%s'", tstatus(&r), r.err);
	trun_free(&r);
	return DDL_PASS;
}

/* A small deterministic generator for the random catalogs. */
static unsigned long long ddl_rng = 88172645463325252ull;
static double ddl_rand(void)
{
	ddl_rng ^= ddl_rng << 13;
	ddl_rng ^= ddl_rng >> 7;
	ddl_rng ^= ddl_rng << 17;
	return (double)(ddl_rng >> 11) / 9007199254740992.0;
}

/* The projection written out again, independently, for the flat ring of p4.json. */
static double ddl_expect_iter(json_t *inst, double rel, int count, double alpha, double beta)
{
	int g = (int)json_integer_value(json_object_get(inst, "gpus")), n = g * count;
	double intra = ddl_num(json_object_get(inst, "interconnect"), "bandwidth_gbs") * 1e9;
	double net = ddl_num(inst, "network_gbps") * 1e9 / 8, s = 1e9, comm = 0;
	if (count == 1 && g > 1)
		comm = alpha * 2 * (g - 1) + beta * 2.0 * (g - 1) / g * s / intra;
	else if (count > 1)
		comm = alpha * 2 * (n - 1) + beta * 2.0 * (n - 1) / n * s / (g > 1 && intra < net ? intra : net);
	return 0.4 / rel * 4 / n + 0.1 + comm;
}

int test_rec_random_catalogs(void)
{
	char *dir = tmpdir();
	for (int round = 0; round < 40; round++) {
		json_t *cat = json_load_file(ddl_rec_data("tiny.json"), 0, NULL);
		json_t *insts = json_array();
		int ntypes = 2 + (int)(ddl_rand() * 6);
		for (int t = 0; t < ntypes; t++) {
			static const int gpus[] = {1, 2, 4, 8};
			int g = gpus[(int)(ddl_rand() * 4)];
			char name[32];
			snprintf(name, sizeof name, "r%d.%d", t, g);
			json_t *e = json_pack("{s:s, s:s, s:i, s:s, s:f, s:f, s:s, s:f, s:s}", "date", "2026-01-01", "name", name, "gpus", g,
			                      "gpu_model", ddl_rand() < 0.5 ? "REF" : "FAST", "gpu_memory_gib", 16.0,
			                      "network_gbps", 1 + ddl_rand() * 200, "region", "r", "on_demand_usd_per_hour",
			                      0.1 + ddl_rand() * 30, "source", "t");
			if (g > 1)
				json_object_set_new(e, "interconnect", json_pack("{s:s, s:f}", "kind", "pcie", "bandwidth_gbs",
				                                                 1 + ddl_rand() * 300));
			else
				json_object_set_new(e, "interconnect", json_pack("{s:s}", "kind", "none"));
			json_array_append_new(insts, e);
		}
		json_object_set_new(cat, "instances", insts);
		char name[32];
		snprintf(name, sizeof name, "r%d.json", round);
		const char *path = ddl_write_cat(dir, name, cat);
		CHECK(path, "write");
		char cpath[PATH_MAX];
		snprintf(cpath, sizeof cpath, "%s", path);
		/* budgets: none, hours, dollars or both, drawn around the candidates' spread */
		char hb[32], db[32], mi[16];
		snprintf(hb, sizeof hb, "%.6g", 0.5 + ddl_rand() * 20);
		snprintf(db, sizeof db, "%.6g", 5 + ddl_rand() * 400);
		snprintf(mi, sizeof mi, "%d", 1 + (int)(ddl_rand() * 6));
		int kind = round % 4;
		char *a[32] = {"--catalog", cpath, P4, "--alpha", "0.0001", "--beta", "1.2", "--iterations", "36000",
		               "--max-instances", mi, "--json"};
		int n = 0;
		while (a[n])
			n++;
		if (kind & 1) {
			a[n++] = "--budget-hours";
			a[n++] = hb;
		}
		if (kind & 2) {
			a[n++] = "--budget-usd";
			a[n++] = db;
		}
		a[n] = NULL;
		int st;
		json_t *res = ddl_rec_json(a, &st);
		CHECK(res && (st == 0 || st == 4), "round %d: status %d", round, st);
		json_t *cands = json_object_get(res, "candidates"), *c;
		CHECK(json_array_size(cands) == (size_t)ntypes * (size_t)atoi(mi), "round %d: every configuration", round);
		size_t i, k;
		json_t *best = NULL;
		json_array_foreach(cands, i, c) {
			/* the numbers: the projection again, by this test's own arithmetic */
			json_t *inst = NULL, *e;
			json_array_foreach(json_object_get(cat, "instances"), k, e) if (!strcmp(
			        json_string_value(json_object_get(e, "name")), json_string_value(json_object_get(c, "instance"))))
			        inst = e;
			CHECK(inst, "round %d: candidate of an unknown type", round);
			int count = (int)json_integer_value(json_object_get(c, "count"));
			double rel = strcmp(json_string_value(json_object_get(inst, "gpu_model")), "FAST") ? 1 : 2;
			/* measured: the profile's GPU (REF), 4 to a host, one host, and no
			 * other type of the catalog alike (which would make it ambiguous) */
			int measured = rel == 1 && count == 1 && json_integer_value(json_object_get(inst, "gpus")) == 4;
			int alike = 0;
			json_array_foreach(json_object_get(cat, "instances"), k, e)
				alike += json_integer_value(json_object_get(e, "gpus")) == 4 &&
				         !strcmp(json_string_value(json_object_get(e, "gpu_model")), "REF");
			measured = measured && alike == 1;
			double it = measured ? 0.6 : ddl_expect_iter(inst, rel, count, 0.0001, 1.2);
			double hours = 36000 * it / 3600, cost = hours * ddl_num(inst, "on_demand_usd_per_hour") * count;
			CHECK(fabs(ddl_num(c, "iteration_s") - it) <= 1e-9 * it && fabs(ddl_num(c, "est_hours") - hours) <= 1e-9 * hours &&
			      fabs(ddl_num(c, "est_cost_usd") - cost) <= 1e-9 * cost &&
			      json_is_true(json_object_get(c, "measured")) == measured,
			      "round %d: %s x%d: %.12g h $%.12g, want %.12g h $%.12g", round,
			      json_string_value(json_object_get(c, "instance")), count, ddl_num(c, "est_hours"),
			      ddl_num(c, "est_cost_usd"), hours, cost);
			int meets = (!(kind & 1) || ddl_num(c, "est_hours") <= atof(hb)) &&
			            (!(kind & 2) || ddl_num(c, "est_cost_usd") <= atof(db));
			CHECK(meets == json_is_true(json_object_get(c, "meets_budget")), "round %d: meets_budget", round);
			/* brute force: the best by the objective */
			if (meets) {
				int better = !best;
				if (best && kind == 2) /* fastest within cost */
					better = ddl_num(c, "est_hours") < ddl_num(best, "est_hours");
				else if (best)
					better = ddl_num(c, "est_cost_usd") < ddl_num(best, "est_cost_usd");
				if (better)
					best = c;
			}
		}
		/* brute force: on the front iff within the budgets (or nothing is) and no such candidate dominates it */
		int none = 1;
		json_array_foreach(cands, i, c) none &= !json_is_true(json_object_get(c, "meets_budget"));
		size_t on_front = 0;
		json_array_foreach(cands, i, c) {
			int dominated = 0, in = none || json_is_true(json_object_get(c, "meets_budget"));
			json_t *d;
			json_array_foreach(cands, k, d) dominated |=
			        (none || json_is_true(json_object_get(d, "meets_budget"))) && ddl_num(d, "est_hours") <= ddl_num(c, "est_hours") &&
			        ddl_num(d, "est_cost_usd") <= ddl_num(c, "est_cost_usd") &&
			        (ddl_num(d, "est_hours") < ddl_num(c, "est_hours") || ddl_num(d, "est_cost_usd") < ddl_num(c, "est_cost_usd"));
			CHECK(json_is_true(json_object_get(c, "pareto")) == (in && !dominated), "round %d: %s x%lld pareto", round,
			      json_string_value(json_object_get(c, "instance")), (long long)json_integer_value(json_object_get(c, "count")));
			on_front += in && !dominated;
		}
		CHECK(json_array_size(json_object_get(res, "pareto")) == on_front && on_front > 0,
		      "round %d: %zu on the front, %zu flagged", round, json_array_size(json_object_get(res, "pareto")), on_front);
		json_t *rec = json_object_get(res, "recommendation");
		if (!best) {
			CHECK(st == 4 && json_is_null(rec), "round %d: nothing meets: status 4", round);
		} else {
			CHECK(st == 0 && (kind == 2 ? ddl_num(rec, "est_hours") == ddl_num(best, "est_hours")
			                            : ddl_num(rec, "est_cost_usd") == ddl_num(best, "est_cost_usd")),
			      "round %d: recommended %s x%lld", round, json_string_value(json_object_get(rec, "instance")),
			      (long long)json_integer_value(json_object_get(rec, "count")));
		}
		/* the front is sorted by time and its costs fall */
		json_t *pf = json_object_get(res, "pareto");
		for (i = 1; i < json_array_size(pf); i++)
			CHECK(ddl_num(json_array_get(pf, i), "est_hours") >= ddl_num(json_array_get(pf, i - 1), "est_hours") &&
			      ddl_num(json_array_get(pf, i), "est_cost_usd") <= ddl_num(json_array_get(pf, i - 1), "est_cost_usd"),
			      "round %d: front order", round);
		json_decref(res);
		json_decref(cat);
	}
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* A real job: tcpring under ddlprof, its trace directory given as the profile. */
int test_rec_tcpring(void)
{
	if (access(tbuild("bin/ddlprof"), X_OK) || access(tbuild("bin/ddlprof-report"), X_OK) ||
	    access(tbuild("examples/tcpring"), X_OK) || access(tbuild("lib/libddlprof.so"), R_OK)) {
		fprintf(stderr, "    ddlprof, ddlprof-report or tcpring not built here\n");
		return DDL_SKIP;
	}
	char *dir = tmpdir(), t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	char *argv[] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", t, "--", (char *)tbuild("examples/tcpring"),
	                "-k", "-n", "16", "-m", "2", "-c", "10", NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 60, &r) == 0 && r.status == 0, "tcpring: %s", r.err);
	trun_free(&r);
	char *a[] = {TINY, "--profile", t, "--iterations", "1000", "--json", NULL};
	int st;
	json_t *res = ddl_rec_json(a, &st);
	CHECK(res && st == 0, "status %d", st);
	json_t *p = json_array_get(json_object_get(res, "profiles"), 0);
	double g = ddl_num(p, "grad_bytes");
	/* 2 MiB of gradients a step, give or take the set-up traffic */
	CHECK(fabs(g - 2097152) <= 0.02 * 2097152 && json_integer_value(json_object_get(p, "ranks")) == 4,
	      "tcpring: %.0f gradient bytes a step, want 2 MiB", g);
	/* the parts are the report's own: its per-iteration figures, else its ranks' mean */
	double c = ddl_num(p, "compute_s"), want = 0;
	json_t *rep = treport(t, NULL), *per = json_object_get(json_object_get(rep, "job"), "per_iteration");
	CHECK(rep, "ddlprof-report on %s", t);
	if (json_is_number(json_object_get(per, "compute_s"))) {
		want = ddl_num(per, "compute_s");
	} else {
		size_t i, n = 0;
		json_t *rk;
		json_array_foreach(json_object_get(rep, "ranks"), i, rk) {
			json_t *b = json_object_get(rk, "breakdown_s");
			if (json_is_object(b)) {
				want += ddl_num(b, "compute");
				n++;
			}
		}
		want /= n ? (double)n : 1;
	}
	CHECK(ddl_near(c, want) && ddl_near(ddl_num(p, "iteration_s"),
	                                     ddl_num(json_object_get(rep, "job"), "iteration_mean_s")),
	      "tcpring: compute %.9g a step, the report says %.9g", c, want);
	CHECK(c > 0.005 && c < 0.05, "tcpring: %.4f s compute a step, planned 0.010", c);
	json_decref(rep);
	fprintf(stderr, "    tcpring: %.0f gradient bytes, %.4f s compute, %.4f s a step\n", g, c,
	        ddl_num(p, "iteration_s"));
	json_decref(res);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * The projection against the emulation: ddlsynth (4 ranks, 2 emulated
 * hosts, no overlap) profiled with its network at 1 Gbit/s and projected to
 * 0.5 Gbit/s with a catalog describing the emulated hosts; then run there:
 * the projected iteration time must be within 10% of the measured one.
 */
static int ddl_synth_profile(const char *dir, const char *net, char *out, size_t n)
{
	snprintf(out, n, "%s/net%s", dir, net);
	char *argv[] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", out, "--", (char *)tbuild("examples/ddlsynth"),
	                "-q", "--ranks", "4", "--ranks-per-host", "2", "--layers", "4", "--params-per-layer", "1M",
	                "--compute-ms", "5", "--bucket-mb", "1", "--overlap", "off", "--iterations", "12",
	                "--warmup", "3", "--markers", "--intra-gbps", "4", "--net-gbps", (char *)net, NULL};
	struct ddl_run_result r;
	int ok = trun(argv, NULL, 120, &r) == 0 && r.status == 0;
	if (!ok)
		fprintf(stderr, "    ddlsynth --net-gbps %s: status %d: %s\n", net, r.status, r.err);
	trun_free(&r);
	return ok ? 0 : -1;
}

int test_rec_emulation(void)
{
	if (access(tbuild("examples/ddlsynth"), X_OK) || access(tbuild("bin/ddlprof"), X_OK)) {
		fprintf(stderr, "    ddlsynth on the emulation not built here\n");
		return DDL_SKIP;
	}
	char *dir = tmpdir(), a[PATH_MAX], b[PATH_MAX];
	if (ddl_synth_profile(dir, "1", a, sizeof a) < 0) {
		trm(dir);
		free(dir);
		return DDL_SKIP; /* the emulation cannot run here (yet) */
	}
	CHECK(ddl_synth_profile(dir, "0.5", b, sizeof b) == 0, "ddlsynth at 0.5 Gbit/s");
	char *args[] = {"--catalog", (char *)ddl_rec_data("emu.json"), "--profile", a, "--iterations", "100",
	                "--max-instances", "2", "--json", NULL};
	int st;
	json_t *res = ddl_rec_json(args, &st);
	CHECK(res && st == 0, "status %d", st);
	json_t *c = ddl_cand(res, "emu.net05", 2);
	double pred = ddl_num(c, "iteration_s");
	json_decref(res);
	json_t *rep = treport(b, NULL);
	double meas = ddl_num(json_object_get(rep, "job"), "iteration_mean_s");
	json_decref(rep);
	fprintf(stderr, "    ddlsynth at 0.5 Gbit/s: projected %.4f s a step from the 1 Gbit/s run, measured %.4f s\n",
	        pred, meas);
	CHECK(meas > 0 && fabs(pred - meas) <= 0.10 * meas, "projected %.4f, measured %.4f", pred, meas);
	/* Named as measured on emu.net1, that configuration takes the measurement; emu.net05 does not. */
	char *args2[] = {"--catalog", (char *)ddl_rec_data("emu.json"), "--profile", a, "--iterations", "100",
	                 "--max-instances", "2", "--measured-gpu", "ddlemu", "--measured-instance", "emu.net1",
	                 "--json", NULL};
	res = ddl_rec_json(args2, &st);
	CHECK(res && st == 0, "status %d", st);
	json_t *m = ddl_cand(res, "emu.net1", 2);
	rep = treport(a, NULL);
	CHECK(json_is_true(json_object_get(m, "measured")) &&
	      ddl_num(m, "iteration_s") == ddl_num(json_object_get(rep, "job"), "iteration_mean_s") &&
	      !json_is_true(json_object_get(ddl_cand(res, "emu.net05", 2), "measured")) &&
	      ddl_near(ddl_num(ddl_cand(res, "emu.net05", 2), "iteration_s"), pred),
	      "measured emu.net1 x2, projected emu.net05 x2");
	json_decref(rep);
	json_decref(res);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * One ddlsynth job on the emulation under ddlprof into DIR/NAME: RANKS
 * ranks, RPH to a host, 4 layers of 1M gradients, 5 ms a layer pass,
 * overlap OVERLAP, the network at NET Gbit/s. Returns 0, -1 when it did not
 * run, 1 when the emulation itself fell behind (its step more than 10% off
 * ddlsynth's own plan: a loaded machine, no fault of the projection).
 * *iter gets the measured step.
 */
static int ddl_synth_run_job(const char *dir, const char *name, const char *net, const char *ranks,
                             const char *rph, const char *overlap, char *out, size_t n, double *iter)
{
	char plan[PATH_MAX];
	snprintf(out, n, "%s/%s", dir, name);
	snprintf(plan, sizeof plan, "%s/%s.plan.json", dir, name);
	trm(out);
	unlink(plan);
	char *argv[] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", out, "--", (char *)tbuild("examples/ddlsynth"),
	                "-q", "--ranks", (char *)ranks, "--ranks-per-host", (char *)rph, "--layers", "4",
	                "--params-per-layer", "1M", "--compute-ms", "5", "--bucket-mb", "1", "--overlap",
	                (char *)overlap, "--iterations", "8", "--warmup", "2", "--markers", "--intra-gbps", "4",
	                "--net-gbps", (char *)net, "--plan-json", plan, "--timeout", "60", NULL};
	struct ddl_run_result r;
	int ok = trun(argv, NULL, 90, &r) == 0 && r.status == 0;
	if (!ok)
		fprintf(stderr, "    ddlsynth %s: status %d: %s\n", name, r.status, r.err);
	trun_free(&r);
	if (!ok)
		return -1;
	json_t *rep = treport(out, NULL), *pl = json_load_file(plan, 0, NULL);
	*iter = ddl_num(json_object_get(rep, "job"), "iteration_mean_s");
	double want = ddl_num(json_object_get(pl, "per_iteration"), "expected_iteration_s");
	json_decref(rep);
	json_decref(pl);
	if (!(*iter > 0) || !(want > 0))
		return -1;
	if (fabs(*iter - want) > 0.10 * want) {
		fprintf(stderr, "    ddlsynth %s: step %.4f s against %.4f planned: the emulation fell behind\n", name,
		        *iter, want);
		return 1;
	}
	return 0;
}

/* The projection of PROFILE onto COUNT x INST of emu.json (EXTRA: one more option and its value, or NULL). */
static double ddl_emu_project(const char *profile, const char *inst, int count, char *extra, char *value)
{
	char *args[] = {"--catalog", (char *)ddl_rec_data("emu.json"), "--profile", (char *)profile, "--iterations",
	                "100", "--max-instances", "2", "--json", extra, value, NULL};
	int st;
	json_t *res = ddl_rec_json(args, &st);
	double v = st == 0 ? ddl_num(ddl_cand(res, inst, count), "iteration_s") : NAN;
	json_decref(res);
	return v;
}

/*
 * Overlap on (ddlsynth's default), where the audit found the projection
 * 11-22% short: profiled at 2 Gbit/s and projected to 0.5, at 0.5 and
 * projected to 2, and on one host (2 ranks) projected to two (4 ranks,
 * each with its batch: --scaling weak), each checked against a run there,
 * within 10%. On a machine too loaded to hold the emulation to its plan a
 * pair is run again, up to three times, then the test skips.
 */
int test_rec_emulation_overlap(void)
{
	if (access(tbuild("examples/ddlsynth"), X_OK) || access(tbuild("bin/ddlprof"), X_OK)) {
		fprintf(stderr, "    ddlsynth on the emulation not built here\n");
		return DDL_SKIP;
	}
	struct {
		const char *from_net, *from_ranks, *from_rph, *to_net, *inst;
		char *extra, *value;
	} c[] = {
		{"2", "4", "2", "0.5", "emu.net05", NULL, NULL},
		{"0.5", "4", "2", "2", "emu.net2", NULL, NULL},
		{"1", "2", "2", "1", "emu.net1", "--scaling", "weak"},
	};
	char *dir = tmpdir(), a[PATH_MAX], b[PATH_MAX];
	int stalled = 0;
	for (size_t i = 0; i < sizeof c / sizeof c[0] && !stalled; i++) {
		double pred = NAN, meas = NAN, it;
		for (int attempt = 0;; attempt++) {
			int ra = ddl_synth_run_job(dir, "from", c[i].from_net, c[i].from_ranks, c[i].from_rph, "on", a, sizeof a, &it);
			int rb = ra < 0 ? -1 : ddl_synth_run_job(dir, "to", c[i].to_net, "4", "2", "on", b, sizeof b, &meas);
			if (ra < 0 || rb < 0) {
				trm(dir);
				free(dir);
				return attempt == 0 && i == 0 ? DDL_SKIP : DDL_FAIL; /* the emulation cannot run here */
			}
			pred = ddl_emu_project(a, c[i].inst, 2, c[i].extra, c[i].value);
			int agree = fabs(pred - meas) <= 0.10 * meas;
			if (!ra && !rb && agree)
				break;
			if (attempt == 2) {
				stalled = ra || rb;
				break;
			}
			fprintf(stderr, "    case %zu, run %d: projected %.4f, measured %.4f: again\n", i, attempt + 1, pred, meas);
		}
		if (stalled)
			break;
		fprintf(stderr, "    overlap on, %s ranks at %s Gbit/s -> 2 x %s: projected %.4f s a step, measured %.4f (%+.1f%%)\n",
		        c[i].from_ranks, c[i].from_net, c[i].inst, pred, meas, 100 * (pred / meas - 1));
		CHECK(meas > 0 && fabs(pred - meas) <= 0.10 * meas, "case %zu: projected %.4f, measured %.4f", i, pred, meas);
	}
	trm(dir);
	free(dir);
	if (stalled) {
		fprintf(stderr, "    the emulation fell behind its plan three times: too loaded to compare\n");
		return DDL_SKIP;
	}
	return DDL_PASS;
}

/* Writes a copy of tests/rec/p4.json with RANKS on HOSTS and COMPUTE a step to DIR/NAME. */
static const char *ddl_p4_variant(const char *dir, const char *name, int ranks, int hosts, double compute)
{
	static char path[4][PATH_MAX];
	static int k;
	k = (k + 1) % 4;
	json_t *p = json_load_file(ddl_rec_data("p4.json"), 0, NULL);
	json_t *job = json_object_get(p, "job");
	json_object_set_new(job, "ranks", json_integer(ranks));
	json_object_set_new(job, "hosts", json_integer(hosts));
	json_object_set_new(json_object_get(job, "gpu"), "count_per_host", json_integer(ranks / hosts));
	json_object_set_new(json_object_get(job, "per_iteration"), "compute_s", json_real(compute));
	json_object_del(p, "ranks");
	snprintf(path[k], sizeof path[k], "%s/%s", dir, name);
	int rc = json_dump_file(p, path[k], 0);
	json_decref(p);
	return rc ? NULL : path[k];
}

/*
 * Without --scaling, two profiles at different GPU counts tell strong from
 * weak: compute per step halving with twice the GPUs is strong scaling,
 * staying put is weak; one profile leaves strong, the default, with a note.
 */
int test_rec_scaling_inferred(void)
{
	char *dir = tmpdir(), p4[PATH_MAX];
	snprintf(p4, sizeof p4, "%s", ddl_rec_data("p4.json"));
	struct {
		double compute8;
		const char *want;
	} c[] = {{0.2, "strong"}, {0.4, "weak"}, {0.39, "weak"}, {0.21, "strong"}};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		const char *p8 = ddl_p4_variant(dir, "p8.json", 8, 2, c[i].compute8);
		CHECK(p8, "write");
		char *a[] = {TINY, "--profile", p4, "--profile", (char *)p8, EXACT, NULL};
		int st;
		json_t *res = ddl_rec_json(a, &st);
		CHECK(res && st == 0, "case %zu: status %d", i, st);
		const char *got = json_string_value(json_object_get(json_object_get(res, "settings"), "scaling"));
		int noted = 0;
		size_t k;
		json_t *n;
		json_array_foreach(json_object_get(res, "notes"), k, n) noted |= strstr(json_string_value(n), "inferred") != NULL;
		CHECK(got && !strcmp(got, c[i].want) && noted, "case %zu: compute 0.4 on 4, %g on 8: %s, want %s", i,
		      c[i].compute8, got ? got : "(none)", c[i].want);
		/* the scaling chosen is the one projected: a.1 x1 from the 4-rank profile */
		double want1 = 0.4 * (strcmp(c[i].want, "weak") ? 4 : 1) + 0.1;
		CHECK(ddl_near(ddl_num(ddl_cand(res, "a.1", 1), "iteration_s"), want1), "case %zu: a.1 x1 %.12g, want %.12g",
		      i, ddl_num(ddl_cand(res, "a.1", 1), "iteration_s"), want1);
		json_decref(res);
		/* --scaling given wins */
		char *b[] = {TINY, "--profile", p4, "--profile", (char *)p8, EXACT, "--scaling", "strong", NULL};
		res = ddl_rec_json(b, &st);
		CHECK(res && st == 0 && !strcmp(json_string_value(json_object_get(json_object_get(res, "settings"), "scaling")),
		                                "strong"), "case %zu: --scaling strong given", i);
		json_decref(res);
	}
	char *one[] = {TINY, P4, EXACT, NULL};
	int st;
	json_t *res = ddl_rec_json(one, &st);
	int noted = 0;
	size_t k;
	json_t *n;
	json_array_foreach(json_object_get(res, "notes"), k, n) noted |= strstr(json_string_value(n), "--scaling strong assumed") != NULL;
	CHECK(res && st == 0 && noted, "one profile: strong assumed, with a note");
	json_decref(res);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * GPU names: the device machine's "NVIDIA H200" is in the shipped
 * catalog; a variant the catalog does not describe ("NVIDIA H100 PCIe",
 * "NVIDIA H200 NVL", "Tesla V100-PCIE-16GB") is refused, not given the
 * SXM figures; a listed device name or the model's word with only words
 * the entry knows is matched.
 */
int test_rec_gpu_names(void)
{
	char *dir = tmpdir();
	struct {
		const char *device;
		int status;
		const char *model; /* or what stderr says */
	} c[] = {
		{"NVIDIA H200", 0, "H200"},
		{"NVIDIA H100 80GB HBM3", 0, "H100"},
		{"NVIDIA A100-SXM4-80GB", 0, "A100-80GB"},
		{"NVIDIA A100-SXM4-40GB", 0, "A100"},
		{"Tesla V100-SXM2-16GB", 0, "V100"},
		{"Tesla V100-SXM2-16GB-XYZ", 1, "--measured-gpu"},
		{"NVIDIA H100 PCIe", 1, "--measured-gpu"},
		{"NVIDIA H100 NVL", 1, "--measured-gpu"},
		{"NVIDIA H200 NVL", 1, "--measured-gpu"},
		{"Tesla V100-PCIE-16GB", 1, "--measured-gpu"},
		{"NVIDIA A10", 1, "--measured-gpu"},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		json_t *p = json_load_file(ddl_rec_data("p4.json"), 0, NULL);
		json_object_set_new(json_object_get(json_object_get(p, "job"), "gpu"), "model", json_string(c[i].device));
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/g%zu.json", dir, i);
		CHECK(json_dump_file(p, path, 0) == 0, "write");
		json_decref(p);
		char *a[] = {"--profile", path, "--iterations", "1000", "--json", NULL};
		struct ddl_run_result r;
		CHECK(ddl_rec_exec(a, &r) == 0, "case %zu", i);
		int st = tstatus(&r);
		if (c[i].status == 0) {
			json_t *res = json_loads(r.out, 0, NULL);
			const char *m = json_string_value(json_object_get(json_array_get(json_object_get(res, "profiles"), 0), "gpu_model"));
			CHECK(st == 0 && m && !strcmp(m, c[i].model), "\"%s\": status %d, model %s, want %s", c[i].device, st,
			      m ? m : "(none)", c[i].model);
			json_decref(res);
		} else {
			CHECK(st == c[i].status && strstr(r.err, c[i].model) && strstr(r.err, c[i].device),
			      "\"%s\": status %d, '%s'", c[i].device, st, r.err);
		}
		trun_free(&r);
	}
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* scripts/fit-layers-model.sh --self-test: the fit recovers known coefficients (a second, without ddlsynth). */
int test_rec_fit_selftest(void)
{
	if (access("/usr/bin/python3", X_OK) && system("command -v python3 >/dev/null 2>&1")) {
		fprintf(stderr, "    no python3\n");
		return DDL_SKIP;
	}
	char *argv[] = {"/bin/sh", (char *)tbuild("../scripts/fit-layers-model.sh"), "--self-test", NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 60, &r) == 0, "could not run the script");
	CHECK(r.status == 0 && strstr(r.out, "self-test: coefficients recovered"), "status %d: %s %s", r.status, r.out,
	      r.err);
	trun_free(&r);
	return DDL_PASS;
}

/* Runs ARGS (NULL-terminated) and keeps stdout, stderr and the status. */
static int ddl_slurm_run(char *const args[], struct ddl_run_result *r)
{
	if (ddl_rec_exec(args, r) < 0) {
		fprintf(stderr, "    could not run ddlprof-recommend\n");
		return -1;
	}
	return tstatus(r);
}

/*
 * --slurm. tests/rec/slurm_sensitive.json: 16 ranks on 4 hosts, slowdown
 * 1.4 in a rack and 2.0 across racks, iterations of 0.49 and 0.7 s there:
 * spread over leaf switches it loses 1 - 1.4/2 = 30% (>= 10%), so one
 * switch; the default table's waits for 16-31 GPUs are 240 +- 120 s:
 * 240 + 2 x 120 = 480 s = 0:08:00. A history of 16-31 GPU waits 600, 700,
 * 800, 900 (and others' ignored): mean 750 + 2 x 111.8 = 973.6 -> 1020 s.
 * Only the last 32 waits count. 1000 iterations save 1000 x 0.21 = 210 s:
 * the wait is 240 s; 100 iterations save 21 s, under the 60 s bound: no
 * --switches. --nodes-per-switch 2: COUNT 2. Waits of 1e6 s are held to
 * 2400 s. The insensitive profile (1.03, 1.06: 2.8%) and a one-node job
 * get no --switches.
 */
int test_rec_slurm(void)
{
	char *dir = tmpdir(), hist[PATH_MAX], last[PATH_MAX], huge[PATH_MAX], one[PATH_MAX];
	const char *sens = ddl_rec_data("slurm_sensitive.json"), *insens = ddl_rec_data("slurm_insensitive.json");
	snprintf(hist, sizeof hist, "%s/waits.csv", dir);
	snprintf(last, sizeof last, "%s/last32.csv", dir);
	snprintf(huge, sizeof huge, "%s/huge.csv", dir);
	FILE *f = fopen(hist, "w");
	CHECK(f, "write %s", hist);
	fprintf(f, "demand,wait_s\n# oldest first\n16,600\n8,5000\n16,700\n 31 , 800 \n32,9000\n24,900\n");
	fclose(f);
	CHECK((f = fopen(last, "w")), "write %s", last);
	for (int i = 0; i < 40; i++)
		fprintf(f, "16,%d\n", i < 8 ? 100000 : 120);
	fclose(f);
	CHECK((f = fopen(huge, "w")), "write %s", huge);
	fprintf(f, "16,1000000\n16,1000000\n");
	fclose(f);
	/* one node: the same job on a single host of 16 GPUs */
	json_t *j = json_load_file(sens, 0, NULL);
	CHECK(j, "read %s", sens);
	json_t *job = json_object_get(j, "job");
	json_object_set_new(job, "hosts", json_integer(1));
	json_object_set_new(json_object_get(job, "gpu"), "count_per_host", json_integer(16));
	snprintf(one, sizeof one, "%s/one.json", dir);
	CHECK(json_dump_file(j, one, 0) == 0, "write %s", one);
	json_decref(j);

	struct {
		char *args[16];
		const char *want[4];
		const char *not;
	} c[] = {
		{{"--slurm", "--profile", (char *)sens, NULL},
		 {"#SBATCH --nodes=4\n", "#SBATCH --ntasks-per-node=4\n", "#SBATCH --gres=gpu:4\n",
		  "#SBATCH --switches=1@0:08:00\n"}, "recommended"},
		{{"--slurm", "--profile", (char *)sens, "--wait-history", hist, NULL},
		 {"#SBATCH --switches=1@0:17:00\n", "4 waits"}, NULL},
		{{"--slurm", "--profile", (char *)sens, "--wait-history", last, NULL},
		 {"#SBATCH --switches=1@0:02:00\n", "32 waits"}, NULL},
		{{"--slurm", "--profile", (char *)sens, "--wait-history", huge, NULL},
		 {"#SBATCH --switches=1@0:40:00\n"}, NULL},
		{{"--slurm", "--profile", (char *)sens, "--nodes-per-switch", "2", "--iterations", "1000",
		  "--catalog", (char *)ddl_rec_data("tiny.json"), "--max-instances", "2", NULL},
		 {"#SBATCH --switches=2@0:04:00\n", "recommended", "saves 210 s"}, NULL},
		{{"--slurm", "--profile", (char *)sens, "--iterations", "100", "--catalog",
		  (char *)ddl_rec_data("tiny.json"), NULL},
		 {"no --switches", "only 21 s"}, "--switches="},
		{{"--slurm", "--profile", (char *)sens, "--switch-threshold", "0.5", NULL},
		 {"no --switches", "30.0%", "50% threshold"}, "--switches="},
		{{"--slurm", "--profile", (char *)insens, NULL},
		 {"#SBATCH --nodes=4\n", "no --switches", "2.8%"}, "--switches="},
		{{"--slurm", "--profile", one, NULL},
		 {"#SBATCH --nodes=1\n", "#SBATCH --gres=gpu:16\n", "one node"}, "--switches="},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		struct ddl_run_result r;
		int st = ddl_slurm_run(c[i].args, &r);
		CHECK(st == 0, "case %zu: status %d: %s", i, st, r.err);
		for (int k = 0; k < 4 && c[i].want[k]; k++)
			CHECK(strstr(r.out, c[i].want[k]), "case %zu: no '%s' in:\n%s", i, c[i].want[k], r.out);
		CHECK(!c[i].not || !strstr(r.out, c[i].not), "case %zu: '%s' in:\n%s", i, c[i].not, r.out);
		trun_free(&r);
	}

	/* JSON: the recommendation with "slurm" added; alone without a run length */
	char *full[] = {"--slurm", "--profile", (char *)sens, "--nodes-per-switch", "2", "--iterations", "1000",
	                "--catalog", (char *)ddl_rec_data("tiny.json"), "--max-instances", "2", "--json", NULL};
	int st;
	json_t *res = ddl_rec_json(full, &st);
	CHECK(res && st == 0, "--json: status %d", st);
	json_t *sl = json_object_get(res, "slurm");
	CHECK(json_is_object(json_object_get(res, "recommendation")) &&
	      !strcmp(json_string_value(json_object_get(res, "schema")), "ddlprof-recommend/1") &&
	      json_integer_value(json_object_get(sl, "switches")) == 2 && ddl_near(ddl_num(sl, "max_wait_s"), 240) &&
	      !strcmp(json_string_value(json_object_get(sl, "max_wait")), "0:04:00") &&
	      ddl_near(ddl_num(sl, "saved_s"), 210) && json_integer_value(json_object_get(sl, "nodes")) == 4 &&
	      json_integer_value(json_object_get(sl, "gpus_per_node")) == 4 &&
	      ddl_near(ddl_num(json_object_get(sl, "sensitivity"), "switch_loss"), 0.3) &&
	      ddl_near(ddl_num(json_object_get(sl, "tuner"), "wait_s"), 480) &&
	      json_array_size(json_object_get(sl, "sbatch")) == 4,
	      "slurm object: %s", json_dumps(sl, 0));
	json_decref(res);
	char *alone[] = {"--slurm", "--profile", (char *)insens, "--json", NULL};
	res = ddl_rec_json(alone, &st);
	sl = json_object_get(res, "slurm");
	CHECK(res && st == 0 && !json_object_get(res, "recommendation") &&
	      !strcmp(json_string_value(json_object_get(res, "schema")), "ddlprof-recommend/1") &&
	      json_is_null(json_object_get(sl, "switches")) && json_is_null(json_object_get(sl, "max_wait_s")) &&
	      json_array_size(json_object_get(sl, "sbatch")) == 3,
	      "--json alone: status %d", st);
	json_decref(res);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * --slurm's errors: a report without job.sensitivity (status 1, naming the
 * file and the field), a bad --wait-history line (status 1, its line),
 * the Slurm options without --slurm and --slurm without a profile (usage,
 * status 2).
 */
int test_rec_slurm_errors(void)
{
	char *dir = tmpdir(), bad[PATH_MAX];
	snprintf(bad, sizeof bad, "%s/waits.csv", dir);
	FILE *f = fopen(bad, "w");
	CHECK(f, "write %s", bad);
	fprintf(f, "demand,wait_s\n16,100\n16,soon\n");
	fclose(f);
	const char *sens = ddl_rec_data("slurm_sensitive.json");
	struct {
		char *args[12];
		int status;
		const char *says[2];
	} c[] = {
		{{"--slurm", "--profile", (char *)ddl_rec_data("p4.json"), NULL}, 1,
		 {"p4.json: job.sensitivity: missing"}},
		{{"--slurm", "--profile", (char *)sens, "--wait-history", bad, NULL}, 1, {"waits.csv:3: want demand,wait_s"}},
		{{"--slurm", "--profile", (char *)sens, "--wait-history", "/no/such/file", NULL}, 1,
		 {"--wait-history /no/such/file"}},
		{{"--profile", (char *)sens, "--wait-history", bad, "--iterations", "10", NULL}, 2, {"go with --slurm"}},
		{{"--slurm", "--layers", "4", "--params", "1e6", "--compute-ms", "10", "--iterations", "10", NULL}, 2,
		 {"--slurm needs a --profile"}},
		{{"--slurm", "--profile", (char *)sens, "--switch-threshold", "2", NULL}, 2, {"--switch-threshold"}},
		{{"--slurm", "--profile", (char *)sens, "--nodes-per-switch", "0", NULL}, 2, {"--nodes-per-switch"}},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		struct ddl_run_result r;
		int st = ddl_slurm_run(c[i].args, &r);
		CHECK(st == c[i].status, "case %zu: status %d, expected %d: %s", i, st, c[i].status, r.err);
		for (int k = 0; k < 2 && c[i].says[k]; k++)
			CHECK(strstr(r.err, c[i].says[k]), "case %zu: no '%s' in: %s", i, c[i].says[k], r.err);
		trun_free(&r);
	}
	trm(dir);
	free(dir);
	return DDL_PASS;
}
