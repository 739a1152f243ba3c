/*
 * --fail-if: a CI gate on the report. Each condition is METRIC OP NUMBER
 * (for example network_stall_pct>30 or iteration_p99_ms>500), or a count
 * alone (hang, stragglers), meaning COUNT>0; metrics come from a static
 * table over the report model. A condition that holds, or a metric this
 * run could not measure, is a failure, told on one line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

static int ddl_have_iter(const struct ddl_report *r)
{
	return r->iterations > 0;
}

static int ddl_have_sens(const struct ddl_report *r)
{
	return r->have_sensitivity;
}

static int ddl_have_strag(const struct ddl_report *r)
{
	return r->stragglers_measured;
}

static int ddl_have_always(const struct ddl_report *r)
{
	(void)r;
	return 1;
}

static const struct {
	const char *name;
	size_t off;  /* offset of a double in struct ddl_report */
	double scale;
	int (*have)(const struct ddl_report *);
} ddl_metrics[] = {
	{"compute_pct", offsetof(struct ddl_report, pct.compute), 1, ddl_have_iter},
	{"data_stall_pct", offsetof(struct ddl_report, pct.data_stall), 1, ddl_have_iter},
	{"interconnect_stall_pct", offsetof(struct ddl_report, pct.interconnect_stall), 1,
	 ddl_have_iter},
	{"network_stall_pct", offsetof(struct ddl_report, pct.network_stall), 1, ddl_have_iter},
	{"idle_pct", offsetof(struct ddl_report, pct.idle), 1, ddl_have_iter},
	{"iteration_mean_ms", offsetof(struct ddl_report, iter_mean_s), 1e3, ddl_have_iter},
	{"iteration_p50_ms", offsetof(struct ddl_report, iter_p50_s), 1e3, ddl_have_iter},
	{"iteration_p99_ms", offsetof(struct ddl_report, iter_p99_s), 1e3, ddl_have_iter},
	{"stragglers", offsetof(struct ddl_report, straggler_count), 1, ddl_have_strag},
	{"hang", offsetof(struct ddl_report, hang_count), 1, ddl_have_always},
	{"sensitivity", offsetof(struct ddl_report, sensitivity), 1, ddl_have_sens},
	{"slowdown_rack", offsetof(struct ddl_report, slowdown[DDL_LEVEL_RACK]), 1, ddl_have_sens},
	{"slowdown_cluster", offsetof(struct ddl_report, slowdown[DDL_LEVEL_CLUSTER]), 1,
	 ddl_have_sens},
};

/* The counts that stand alone for COUNT>0. */
static const char *ddl_failif_bare(const char *cond)
{
	return !strcmp(cond, "hang") ? "hang>0" : !strcmp(cond, "stragglers") ? "stragglers>0" : cond;
}

int ddl_failif_check(const char *cond, char *err, size_t errlen)
{
	const char *given = cond;
	cond = ddl_failif_bare(cond);
	size_t n = strcspn(cond, "<>=!");
	for (size_t i = 0; i < sizeof ddl_metrics / sizeof ddl_metrics[0]; i++)
		if (strlen(ddl_metrics[i].name) == n && !strncmp(cond, ddl_metrics[i].name, n)) {
			const char *op = cond + n;
			size_t ol = strspn(op, "<>=!");
			char *end;
			strtod(op + ol, &end);
			int okop = (ol == 1 && (*op == '<' || *op == '>')) ||
			           (ol == 2 && (!strncmp(op, "<=", 2) || !strncmp(op, ">=", 2) ||
			                        !strncmp(op, "==", 2) || !strncmp(op, "!=", 2)));
			if (okop && end != op + ol && !*end)
				return 0;
			break;
		}
	snprintf(err, errlen, "--fail-if '%s': METRIC OP NUMBER, OP one of < <= > >= == !=, METRIC one of "
	         "compute_pct, data_stall_pct, interconnect_stall_pct, network_stall_pct, idle_pct, "
	         "iteration_mean_ms, iteration_p50_ms, iteration_p99_ms, stragglers, hang, sensitivity, "
	         "slowdown_rack, slowdown_cluster; or hang or stragglers alone", given);
	return -1;
}

int ddl_failif_eval(const struct ddl_report *r, const char *cond, FILE *f)
{
	cond = ddl_failif_bare(cond);
	size_t n = strcspn(cond, "<>=!");
	for (size_t i = 0; i < sizeof ddl_metrics / sizeof ddl_metrics[0]; i++) {
		if (strlen(ddl_metrics[i].name) != n || strncmp(cond, ddl_metrics[i].name, n))
			continue;
		if (!ddl_metrics[i].have(r)) {
			fprintf(f, "ddlprof-report: fail-if %s: %s was not measured in this run\n", cond,
			        ddl_metrics[i].name);
			return 1;
		}
		double v = *(const double *)((const char *)r + ddl_metrics[i].off) * ddl_metrics[i].scale;
		const char *op = cond + n;
		size_t ol = strspn(op, "<>=!");
		double lim = strtod(op + ol, NULL);
		int hit = !strncmp(op, "<=", 2) ? v <= lim : !strncmp(op, ">=", 2) ? v >= lim
		        : !strncmp(op, "==", 2) ? v == lim : !strncmp(op, "!=", 2) ? v != lim
		        : *op == '<' ? v < lim : v > lim;
		if (hit)
			fprintf(f, "ddlprof-report: fail-if %s: %s is %.6g\n", cond, ddl_metrics[i].name, v);
		return hit;
	}
	return 1;
}
