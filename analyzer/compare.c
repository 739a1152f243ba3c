/*
 * Differential mode (ddlprof-report --compare), the original work's method:
 * the same job profiled on one GPU (single), on one machine (node) and
 * across machines (multi). With the per-GPU work held equal, what the node
 * run adds to the single run's iteration is interconnect stall, and what
 * the multi run adds to the node run's is network stall:
 *
 *     interconnect = t(node) - t(single)      network = t(multi) - t(node)
 *
 * each t the mean iteration time over ranks divided by the samples a rank
 * processes per iteration (SAMPLES, default 1), so runs with different
 * per-rank batches compare per sample. Beside it, each run's own (direct)
 * breakdown, and the disagreement between the two methods: differential
 * minus direct, where the direct figure is the node run's interconnect
 * stall and the multi run's network stall.
 *
 * The premise of the differential method is that the work per iteration
 * is the same in the runs compared, so that only stall differs. Where it
 * is not (more ranks sharing the CPUs of a machine, other programs on it,
 * a different input pipeline), the difference holds time the training
 * thread spent running or waiting for a CPU, which no blocking call shows
 * and which is no stall. So each difference is also given part by part,
 * from the two runs' own breakdowns (they add up to it), and without its
 * compute part: the blocked differential, the change in the time the
 * training thread was blocked, which is what a stall can account for.
 *
 * Data stall the same way, as the original work measured it: the job run
 * on its real input (real) and under ddlprof --data synthetic (synthetic),
 * where each DataLoader serves its first batch again instead of loading:
 *
 *     data = t(real) - t(synthetic)
 *
 * beside the real run's direct data stall (its training thread's waits
 * for the next batch) and the disagreement.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

struct ddl_cmp_run {
	const char *label; /* single, node, multi */
	char path[4096];
	double samples;
	struct ddl_traceset set;
	struct ddl_report rep;
	int loaded;
	int unread;        /* files that could not be read at all (named on stderr) */
	double t;          /* mean iteration, per sample */
	struct ddl_parts parts; /* direct breakdown, per sample */
};

enum { DDL_CMP_SINGLE, DDL_CMP_NODE, DDL_CMP_MULTI, DDL_CMP_REAL, DDL_CMP_SYNTH };
static const char *const ddl_labels[DDL_CMP_RUNS] = {"single", "node", "multi", "real", "synthetic"};

/* LABEL=DIR[@SAMPLES]; 0, or -1 with ERR. */
static int ddl_cmp_parse(struct ddl_cmp_run *runs, const char *spec, char *err, size_t errlen)
{
	const char *eq = strchr(spec, '=');
	int k = -1;
	for (int i = 0; i < DDL_CMP_RUNS && eq; i++)
		if ((size_t)(eq - spec) == strlen(ddl_labels[i]) && !strncmp(spec, ddl_labels[i], strlen(ddl_labels[i])))
			k = i;
	if (k < 0 || !eq[1]) {
		snprintf(err, errlen, "--compare '%.200s': use single=DIR, node=DIR, multi=DIR, real=DIR "
		         "or synthetic=DIR (optionally DIR@SAMPLES)", spec);
		return -1;
	}
	if (runs[k].path[0]) {
		snprintf(err, errlen, "--compare: %s= given twice", ddl_labels[k]);
		return -1;
	}
	snprintf(runs[k].path, sizeof runs[k].path, "%s", eq + 1);
	runs[k].samples = 1;
	char *at = strrchr(runs[k].path, '@');
	if (at) {
		char *end;
		double s = strtod(at + 1, &end);
		if (*end || end == at + 1 || !(s > 0) || s > 1e9) {
			snprintf(err, errlen, "--compare '%.200s': SAMPLES after @ must be a positive number",
			         spec);
			return -1;
		}
		*at = 0;
		runs[k].samples = s;
	}
	return 0;
}

/* Loads and analyses one run as ddlprof-report would. */
static int ddl_cmp_load(struct ddl_cmp_run *c, const struct ddl_cmp_opts *o)
{
	char err[1024];
	char *paths[] = {c->path};
	if (ddl_traceset_load(&c->set, paths, 1, err, sizeof err) < 0) {
		fprintf(stderr, "ddlprof-report: --compare %s: %s\n", c->label, err);
		ddl_traceset_free(&c->set);
		return -1;
	}
	for (size_t i = 0; i < c->set.nerrors; i++)
		fprintf(stderr, "ddlprof-report: --compare %s: %s\n", c->label, c->set.errors[i]);
	c->unread = c->set.nerrors > 0;
	const struct ddl_run *run = ddl_traceset_run(&c->set, NULL);
	if (!run) {
		fprintf(stderr, "ddlprof-report: --compare %s: %s %s\n", c->label,
		        c->set.incomplete ? "out of memory reading the traces in" : "no readable traces in",
		        c->path);
		ddl_traceset_free(&c->set);
		return -1;
	}
	struct ddl_analysis an = {o->bw, o->iter_names, o->iter_names_given, o->data_names,
	                          o->warmup, 0, NULL, NULL};
	c->loaded = 1; /* the report is freed with the set, whatever happens next */
	if (ddl_report_analyze(&c->rep, &c->set, run, &an, err, sizeof err) < 0) {
		fprintf(stderr, "ddlprof-report: --compare %s: %s\n", c->label, err);
		return -1;
	}
	if (c->rep.iterations <= 0) {
		fprintf(stderr, "ddlprof-report: --compare %s: no iterations found in %s%s\n", c->label,
		        c->path, c->rep.incomplete ? " (out of memory: its report is incomplete)" : "");
		return -1;
	}
	/* means over ranks, per sample */
	double t = 0;
	struct ddl_parts sum = {0};
	int n = 0;
	for (size_t i = 0; i < c->rep.nprocs; i++) {
		const struct ddl_proc *p = &c->rep.procs[i];
		if (!p->niter)
			continue;
		t += p->iter_mean_s;
#define DDL_X_ADD(f) sum.f += p->per_iter.f;
		DDL_PARTS(DDL_X_ADD)
#undef DDL_X_ADD
		n++;
	}
	c->t = t / n / c->samples;
#define DDL_X_DIV(f) c->parts.f = sum.f / n / c->samples;
	DDL_PARTS(DDL_X_DIV)
#undef DDL_X_DIV
	return 0;
}

/* The difference of run HI's parts over run LO's: it adds up to t(hi) - t(lo). */
static struct ddl_parts ddl_cmp_change(const struct ddl_cmp_run *hi, const struct ddl_cmp_run *lo)
{
	struct ddl_parts d;
#define DDL_X_SUB(f) d.f = hi->parts.f - lo->parts.f;
	DDL_PARTS(DDL_X_SUB)
#undef DDL_X_SUB
	return d;
}

static json_t *ddl_cmp_part_json(double diff, double direct, const char *from, const char *direct_run,
                                 const struct ddl_parts *change)
{
	json_t *c = json_object();
#define DDL_X_JSON(x) json_object_set_new(c, #x, json_real(change->x));
	DDL_PARTS(DDL_X_JSON)
#undef DDL_X_JSON
	return json_pack("{s:f, s:f, s:f, s:f, s:s, s:s, s:o, s:f}", "differential_s", diff, "direct_s",
	                 direct, "disagreement_s", diff - direct, "disagreement_pct",
	                 direct > 0 ? 100 * (diff - direct) / direct : 0.0, "from", from, "direct_run",
	                 direct_run, "change_s", c, "blocked_differential_s", diff - change->compute);
}

/* The text lines under one difference: its parts, and what compute means. */
static void ddl_cmp_change_text(FILE *f, const struct ddl_parts *c, double diff)
{
	fprintf(f, "    part by part: compute %+.3f, data %+.3f, interconnect %+.3f, network %+.3f, idle "
	        "%+.3f ms\n", c->compute * 1e3, c->data_stall * 1e3, c->interconnect_stall * 1e3,
	        c->network_stall * 1e3, c->idle * 1e3);
	fprintf(f, "    blocked differential %.3f ms: compute %+.3f ms is the training thread running or "
	        "waiting for a CPU, not stall\n", (diff - c->compute) * 1e3, c->compute * 1e3);
}

static int ddl_cmp_write(struct ddl_cmp_run *r, int json, FILE *f)
{
	int have[DDL_CMP_RUNS];
	for (int k = 0; k < DDL_CMP_RUNS; k++)
		have[k] = r[k].loaded;
	double data = have[DDL_CMP_REAL] && have[DDL_CMP_SYNTH] ? r[DDL_CMP_REAL].t - r[DDL_CMP_SYNTH].t
	                                                         : 0;
	struct ddl_parts c_data = ddl_cmp_change(&r[DDL_CMP_REAL], &r[DDL_CMP_SYNTH]);
	double ic = have[0] && have[1] ? r[1].t - r[0].t : 0;
	double net = have[1] && have[2] ? r[2].t - r[1].t : 0;
	double comm = have[0] && have[2] ? r[2].t - r[0].t : 0;
	struct ddl_parts c_ic = ddl_cmp_change(&r[1], &r[0]), c_net = ddl_cmp_change(&r[2], &r[1]);
	struct ddl_parts c_comm = ddl_cmp_change(&r[2], &r[0]);
	int incomplete = 0;
	for (int k = 0; k < DDL_CMP_RUNS; k++)
		incomplete |= have[k] && r[k].rep.incomplete;
	if (json) {
		ddl_json_watch();
		json_t *root = json_object(), *runs = json_object(), *d = json_object();
		json_object_set_new(root, "schema", json_string("ddlprof-compare/1"));
		json_object_set_new(root, "incomplete", json_boolean(incomplete));
		for (int k = 0; k < DDL_CMP_RUNS; k++) {
			if (!have[k])
				continue;
			json_t *parts = json_object();
#define DDL_X_JSON(x) json_object_set_new(parts, #x, json_real(r[k].parts.x));
			DDL_PARTS(DDL_X_JSON)
#undef DDL_X_JSON
			json_object_set_new(runs, ddl_labels[k],
			                    json_pack("{s:s, s:s, s:i, s:i, s:I, s:f, s:f, s:o, s:b}", "path",
			                              r[k].path, "run_id", r[k].rep.run->id, "ranks", r[k].rep.nranks,
			                              "hosts", r[k].rep.nhosts, "iterations",
			                              (json_int_t)r[k].rep.iterations, "samples", r[k].samples,
			                              "iteration_s", r[k].t, "breakdown_s", parts, "incomplete",
			                              r[k].rep.incomplete));
		}
		json_object_set_new(root, "runs", runs);
		if (have[0] && have[1])
			json_object_set_new(d, "interconnect_stall",
			                    ddl_cmp_part_json(ic, r[1].parts.interconnect_stall, "node - single", "node",
			                                      &c_ic));
		if (have[1] && have[2])
			json_object_set_new(d, "network_stall",
			                    ddl_cmp_part_json(net, r[2].parts.network_stall, "multi - node", "multi",
			                                      &c_net));
		if (have[0] && have[2])
			json_object_set_new(d, "communication_stall",
			                    ddl_cmp_part_json(comm, r[2].parts.network_stall + r[2].parts.interconnect_stall,
			                                      "multi - single", "multi", &c_comm));
		if (have[DDL_CMP_REAL] && have[DDL_CMP_SYNTH])
			json_object_set_new(d, "data_stall",
			                    ddl_cmp_part_json(data, r[DDL_CMP_REAL].parts.data_stall,
			                                      "real - synthetic", "real", &c_data));
		json_object_set_new(root, "differential", d);
		json_object_set_new(root, "unit", json_string("seconds per sample (per iteration when samples = 1)"));
		int rc = ddl_json_failed() ? -1 : json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
		                                                      JSON_REAL_PRECISION(9));
		if (rc == 0)
			fputc('\n', f);
		json_decref(root);
		if (ddl_json_failed()) {
			errno = ENOMEM;
			return -1;
		}
		return rc < 0 || ferror(f) ? -1 : 0;
	}
	int per_iter = 1;
	for (int k = 0; k < DDL_CMP_RUNS; k++)
		per_iter &= !have[k] || r[k].samples == 1;
	fprintf(f, "ddlprof differential analysis (ms per %s)\n", per_iter ? "iteration" : "sample");
	fprintf(f, "  %-9s %5s %5s %10s %10s %8s %13s %9s %8s\n", "run", "ranks", "hosts", "iteration",
	        "compute", "data", "interconnect", "network", "idle");
	for (int k = 0; k < DDL_CMP_RUNS; k++) {
		if (!have[k])
			continue;
		const struct ddl_parts *p = &r[k].parts;
		fprintf(f, "  %-9s %5d %5d %10.3f %10.3f %8.3f %13.3f %9.3f %8.3f\n", ddl_labels[k],
		        r[k].rep.nranks, r[k].rep.nhosts, r[k].t * 1e3, p->compute * 1e3, p->data_stall * 1e3,
		        p->interconnect_stall * 1e3, p->network_stall * 1e3, p->idle * 1e3);
	}
	fprintf(f, "  (breakdowns: each run's own, direct from its traces)\n");
	for (int k = 0; k < DDL_CMP_RUNS; k++)
		if (have[k] && r[k].rep.incomplete)
			fprintf(f, "  INCOMPLETE: memory ran out; the %s run was not read or analysed in full, "
			        "and its figures miss what was not\n", ddl_labels[k]);
	fputc('\n', f);
	if (have[0] && have[1]) {
		fprintf(f, "  interconnect stall: differential %.3f ms (node - single), direct %.3f ms (node run): "
		        "disagreement %+.3f ms\n", ic * 1e3, r[1].parts.interconnect_stall * 1e3,
		        (ic - r[1].parts.interconnect_stall) * 1e3);
		ddl_cmp_change_text(f, &c_ic, ic);
	}
	if (have[1] && have[2]) {
		fprintf(f, "  network stall:      differential %.3f ms (multi - node), direct %.3f ms (multi run): "
		        "disagreement %+.3f ms\n", net * 1e3, r[2].parts.network_stall * 1e3,
		        (net - r[2].parts.network_stall) * 1e3);
		ddl_cmp_change_text(f, &c_net, net);
	}
	if (have[0] && have[2]) {
		fprintf(f, "  communication stall: differential %.3f ms (multi - single), direct %.3f ms "
		        "(multi run, interconnect + network): disagreement %+.3f ms\n", comm * 1e3,
		        (r[2].parts.network_stall + r[2].parts.interconnect_stall) * 1e3,
		        (comm - r[2].parts.network_stall - r[2].parts.interconnect_stall) * 1e3);
		ddl_cmp_change_text(f, &c_comm, comm);
	}
	if (have[DDL_CMP_REAL] && have[DDL_CMP_SYNTH]) {
		fprintf(f, "  data stall:         differential %.3f ms (real - synthetic), direct %.3f ms (real "
		        "run): disagreement %+.3f ms\n", data * 1e3, r[DDL_CMP_REAL].parts.data_stall * 1e3,
		        (data - r[DDL_CMP_REAL].parts.data_stall) * 1e3);
		ddl_cmp_change_text(f, &c_data, data);
	}
	return ferror(f) ? -1 : 0;
}

int ddl_compare(char *const *specs, int nspecs, const struct ddl_cmp_opts *o, FILE *f)
{
	struct ddl_cmp_run runs[DDL_CMP_RUNS];
	memset(runs, 0, sizeof runs);
	char err[512];
	for (int k = 0; k < DDL_CMP_RUNS; k++)
		runs[k].label = ddl_labels[k];
	for (int i = 0; i < nspecs; i++)
		if (ddl_cmp_parse(runs, specs[i], err, sizeof err) < 0) {
			fprintf(stderr, "ddlprof-report: %s\n", err);
			return 2;
		}
	int comm = 0, data = 0;
	for (int k = 0; k < DDL_CMP_RUNS; k++)
		*(k >= DDL_CMP_REAL ? &data : &comm) += runs[k].path[0] != 0;
	if (comm == 1 || data == 1 || comm + data < 2) {
		fprintf(stderr, "ddlprof-report: --compare needs two or three of single=DIR, node=DIR, "
		        "multi=DIR, or both real=DIR and synthetic=DIR\n");
		return 2;
	}
	int status = 0;
	for (int k = 0; k < DDL_CMP_RUNS && !status; k++)
		if (runs[k].path[0] && ddl_cmp_load(&runs[k], o) < 0)
			status = 1;
	if (!status && ddl_cmp_write(runs, o->json, f) < 0) {
		fprintf(stderr, "ddlprof-report: --compare: cannot write the comparison: %s\n", strerror(errno));
		status = 1;
	}
	/* as a report: files left unread are bad input (exit 1), and a
	 * comparison short of what the traces hold says so (exit 4) */
	for (int k = 0; k < DDL_CMP_RUNS && !status; k++)
		if (runs[k].loaded && runs[k].unread)
			status = 1;
	for (int k = 0; k < DDL_CMP_RUNS && status != 1; k++)
		if (runs[k].loaded && runs[k].rep.incomplete) {
			fprintf(stderr, "ddlprof-report: --compare %s: out of memory: the run's report is "
			        "incomplete (exit status 4)\n", runs[k].label);
			status = 4;
		}
	for (int k = 0; k < DDL_CMP_RUNS; k++) {
		if (runs[k].loaded)
			ddl_report_free(&runs[k].rep);
		if (runs[k].path[0] && (runs[k].loaded || status == 0))
			ddl_traceset_free(&runs[k].set);
	}
	return status;
}
