/*
 * ddlprof-sim: the trace-driven GPU-cluster scheduling simulator's command.
 * Parses the options (sim_opts.h's table, read as every ddlprof command
 * reads its own: ddlprof/cli.h), loads the job trace with the loader
 * --format names (load_*.c, from a static table), checks it against the
 * cluster, runs the policy --policy names (policy_*.c, from a static
 * table) through the engine (engine.c) and prints the result (output.c,
 * to stdout or -o's file). --generate writes a
 * synthetic trace instead (generate.c). --profiles DIR gives jobs the
 * slowdowns of DIR/<model>.json, ddlprof reports (load_profile.c); jobs
 * whose trace names no model are "default" and take DIR/default.json.
 * Jobs given as iterations get their run time here, once their iteration
 * time and slowdowns are known.
 *
 * Exit status: 0 done; 1 bad input (unreadable or malformed trace, a bad
 * record under --strict, an existing -o or --jobs-out file without
 * --force, a failed --check); 2 usage error.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "ddlprof/rate.h"
#include "sim.h"
#include "sim_opts.h"

#ifndef DDLPROF_VERSION
#define DDLPROF_VERSION "unknown"
#endif

static const struct ddl_sim_policy *const ddl_sim_policies[] = {
	&ddl_sim_policy_fifo,  &ddl_sim_policy_las,         &ddl_sim_policy_gandiva,
	&ddl_sim_policy_dally, &ddl_sim_policy_sensitivity,
};

static const struct {
	const char *name;
	int (*load)(const char *path, struct ddl_sim_trace *t, const struct ddl_sim_load_opts *o);
} ddl_sim_formats[] = {
	{"csv", ddl_sim_load_csv},
	{"tiresias", ddl_sim_load_tiresias},
	{"helios", ddl_sim_load_helios},
	{"philly", ddl_sim_load_philly},
};

static const struct ddl_cli_opt ddl_sim_opts[] = {DDL_SIM_OPTIONS(DDL_CLI_OPT)};

static void ddl_sim_usage(void)
{
	printf("usage: ddlprof-sim --trace FILE [--format csv|tiresias|helios|philly]\n"
	       "                   [--cluster RxMxG] [--bw machine=RATE,rack=RATE,cluster=RATE]\n"
	       "                   [--policy fifo|las|gandiva|dally|sensitivity]\n"
	       "                   [--lease S] [--restart-cost S] [--json] [-o FILE]\n"
	       "                   [--jobs-out FILE] [--force] [--seed N] [--strict] [--check]\n"
	       "                   [--profiles DIR] [-q] [--verbose]\n"
	       "       ddlprof-sim --generate N [--format csv|philly] [--seed N] [--cluster RxMxG]\n"
	       "                   [--load F] [-o FILE [--force]]\n"
	       "Replay a job trace on a simulated GPU cluster under a scheduling policy.\n");
	ddl_cli_help(stdout, ddl_sim_opts, sizeof ddl_sim_opts / sizeof ddl_sim_opts[0]);
	printf("See ddlprof-sim(1).\n");
}

/* GPUs a --cluster may have in all: each GPU has a slot in the tables. */
#define DDL_SIM_MAX_GPUS 10000000L

/*
 * --cluster RxMxG: three whole numbers of 1 or more, at most
 * DDL_SIM_MAX_GPUS GPUs in all. Returns 0, or -1 with WHY (N bytes) saying
 * which number is wrong and its bounds.
 */
static int ddl_sim_parse_cluster(const char *s, int *r, int *m, int *g, char *why, size_t n)
{
	static const char *const name[3] = {"R (racks)", "M (machines per rack)", "G (GPUs per machine)"};
	long v[3];
	const char *p = s;
	for (int i = 0; i < 3; i++) {
		char *end = (char *)p;
		errno = 0;
		v[i] = isdigit((unsigned char)*p) ? strtol(p, &end, 10) : -1;
		if (v[i] < 0 || *end != (i < 2 ? 'x' : 0)) {
			snprintf(why, n, "expected RxMxG, three whole numbers such as 4x32x8");
			return -1;
		}
		if (errno == ERANGE || v[i] < 1 || v[i] > DDL_SIM_MAX_GPUS) {
			snprintf(why, n, "%s is %.*s; expected 1..%ld", name[i], (int)(end - p), p,
			         DDL_SIM_MAX_GPUS);
			return -1;
		}
		p = end + 1;
	}
	if (v[0] * v[1] > DDL_SIM_MAX_GPUS / v[2]) {
		snprintf(why, n, "%ld x %ld x %ld is %.4g GPUs; expected at most %ld in all", v[0], v[1],
		         v[2], (double)v[0] * (double)v[1] * (double)v[2], DDL_SIM_MAX_GPUS);
		return -1;
	}
	*r = (int)v[0];
	*m = (int)v[1];
	*g = (int)v[2];
	return 0;
}

/* --bw S into BW (Gbit/s per level, the levels S names): 0, or -1 with why in WHY. */
static int ddl_sim_parse_bw(const char *s, double bw[DDL_SIM_LEVELS], char *why, size_t n)
{
	static const char *const names[DDL_SIM_LEVELS] = {"machine", "rack", "cluster"};
	char buf[256];
	if (strlen(s) >= sizeof buf) {
		snprintf(why, n, "longer than %zu bytes", sizeof buf - 1);
		return -1;
	}
	snprintf(buf, sizeof buf, "%s", s);
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		int l = 0;
		if (eq)
			*eq = 0;
		while (l < DDL_SIM_LEVELS && strcmp(tok, names[l]))
			l++;
		if (!eq || l == DDL_SIM_LEVELS) {
			snprintf(why, n, "'%s': use machine=, rack= or cluster= with a rate such as 25gbit",
			         tok);
			return -1;
		}
		double bps;
		if (ddl_rate_parse(eq + 1, strlen(eq + 1), &bps, why, n) < 0)
			return -1;
		bw[l] = bps / 1e9;
	}
	return 0;
}

static int ddl_sim_parse_seconds(const char *s, double *v, int positive)
{
	return ddl_sim_parse_double(s, v) < 0 || *v < 0 || (positive && *v <= 0) ? -1 : 0;
}

/*
 * Jobs skipped for one reason, said after the trace is read
 * (ddl_sim_skips_say): one job in its own line, more in one line with
 * their count and the first few named, a detail each. --verbose and
 * --strict say each job at once instead.
 */
struct ddl_sim_skips {
	size_t n;
	char line[400];  /* the first job's own line */
	char first[200]; /* "ID (DETAIL), ..." of the first three */
};

static void ddl_sim_skips_add(struct ddl_sim_skips *k, const char *line, const char *id,
                              const char *detail)
{
	size_t len = strlen(k->first);
	if (!k->n)
		snprintf(k->line, sizeof k->line, "%s", line);
	if (k->n++ < 3 && len < sizeof k->first)
		snprintf(k->first + len, sizeof k->first - len, "%s%.40s (%s)", len ? ", " : "", id,
		         detail);
}

static void ddl_sim_skips_say(const struct ddl_sim_skips *k, const char *trace, const char *why)
{
	if (k->n == 1)
		fprintf(stderr, "%s\n", k->line);
	else if (k->n)
		fprintf(stderr, "ddlprof-sim: %s: %zu jobs skipped, %s: %s%s (--verbose lists each)\n",
		        trace, k->n, why, k->first, k->n > 3 ? ", ..." : "");
}

/* Tells the format from the first bytes; NULL (with a message) if it cannot. */
static const char *ddl_sim_detect(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "ddlprof-sim: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	char line[4096] = "";
	int c;
	while ((c = fgetc(f)) != EOF && (c == ' ' || c == '\n' || c == '\r' || c == '\t'))
		;
	if (c != EOF)
		ungetc(c, f);
	if (!fgets(line, sizeof line, f))
		line[0] = 0;
	fclose(f);
	if (line[0] == '[')
		return "philly";
	if (strstr(line, "num_gpu"))
		return "tiresias";
	if (strstr(line, "gpu_num"))
		return "helios";
	if (strstr(line, "arrival_s"))
		return "csv";
	fprintf(stderr, "ddlprof-sim: %s: cannot tell the trace format; pass --format\n", path);
	return NULL;
}

/* Why a job given as iterations cannot be run: said after its count. */
#define DDL_SIM_NO_ITER_TIME                                                                    \
	"and no iteration time (give iteration_s, a profile, or --profiles DIR with <model>.json)"

static int ddl_sim_cmp_arrival(const void *x, const void *y)
{
	const struct ddl_sim_job *a = x, *b = y;
	if (a->arrival != b->arrival)
		return a->arrival < b->arrival ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Scales a slowdown's communication part to a bandwidth, from the
 * bandwidth it holds at: the profile's, else the table's reference. */
static double ddl_sim_scale(double slow, double ref, double bw)
{
	return bw > 0 ? 1 + (slow - 1) * ref / bw : slow;
}

/*
 * --profiles DIR: a job whose slowdowns are still the table's takes those
 * of DIR/<model>.json when that file exists. An unusable profile is
 * reported once, naming the file and the field, and its model's jobs are
 * skipped (counted), or the run is rejected under --strict. A model with
 * no file keeps the table (counted in *MISSING, the first named in
 * FIRST). Returns 1 to keep the job, 0 to skip it, -1 to stop.
 */
static int ddl_sim_model_profile(struct ddl_sim_profiles *c, const char *dir, struct ddl_sim_job *j,
                                 int strict, size_t *missing, char *first, size_t nfirst)
{
	char path[4200];
	if (!j->model[0] || j->model[0] == '.' || strchr(j->model, '/'))
		return 1; /* not a file name: the table */
	snprintf(path, sizeof path, "%s/%s.json", dir, j->model);
	size_t before = c->n;
	const struct ddl_sim_profile *p = ddl_sim_profile_get(c, path);
	if (!p) {
		fprintf(stderr, "ddlprof-sim: out of memory\n");
		return -1;
	}
	if (p->ok) {
		ddl_sim_profile_apply(j, p);
		return 1;
	}
	if (c->n == before)
		return p->missing ? 1 : strict ? -1 : 0; /* said already */
	if (p->missing) {
		if (!(*missing)++)
			snprintf(first, nfirst, "%s", j->model);
		return 1;
	}
	fprintf(stderr, "ddlprof-sim: %s: %s; %s%s%s\n", path, p->why,
	        strict ? "rejected (--strict)" : "the jobs of model ", strict ? "" : j->model,
	        strict ? "" : " skipped");
	return strict ? -1 : 0;
}

/*
 * Writes to PATH (NULL: standard output; an existing file only with
 * FORCE, ddlprof/cli.h) the summary M (SKIPPED records left out) as text
 * (WHAT 1) or JSON (2), or with WHAT 0 the per-job records, CSV when PATH
 * ends in .csv. 0, or -1 after a message.
 */
static int ddl_sim_output(const char *path, int force, const struct ddl_sim *s,
                          const struct ddl_sim_summary *m, size_t skipped, int what)
{
	char tmp[4200];
	FILE *f = path ? ddl_cli_out_open("ddlprof-sim", path, force, 0644, tmp, sizeof tmp) : stdout;
	if (!f)
		return -1;
	size_t n = path ? strlen(path) : 0;
	int rc = what == 2   ? ddl_sim_print_json(f, s, m, skipped)
	         : what == 1 ? ddl_sim_print_text(f, s, m, skipped)
	                     : ddl_sim_write_jobs(f, n >= 4 && !strcasecmp(path + n - 4, ".csv"), s);
	if (path)
		rc = ddl_cli_out_close(f, path, tmp, rc == 0);
	else if (fflush(stdout) != 0)
		rc = -1;
	if (rc < 0)
		fprintf(stderr, "ddlprof-sim: writing %s: %s\n", path ? path : "the output",
		        strerror(errno));
	return rc;
}

int main(int argc, char **argv)
{
	const char *P = "ddlprof-sim";
	const char *trace = NULL, *format = NULL, *jobs_out = NULL, *out = NULL, *policy_name = "fifo";
	int racks = 4, mpr = 32, gpm = 8, json = 0, force = 0, quiet = 0, verbose = 0;
	long generate = -1;
	double load = 0.85, bw[DDL_SIM_LEVELS] = {0, 0, 0};
	struct ddl_sim_config cfg = {.lease = 300, .restart_cost = 30, .seed = 1};
	struct ddl_sim_profiles profs = {0};
	struct ddl_sim_load_opts lo = {.profiles = &profs};
	const char *profiles_dir = NULL;
	struct stat pst;
	char why[512];
	int c;
	struct ddl_cli cli;
	ddl_cli_init(&cli, P, ddl_sim_opts, sizeof ddl_sim_opts / sizeof ddl_sim_opts[0], 0);
	while ((c = ddl_cli_next(&cli, argc, argv)) != -1) {
		switch (c) {
		case DDL_SIM_O_QUIET: quiet = 1; break;
		case DDL_SIM_O_VERBOSE: verbose = 1; break;
		case DDL_SIM_O_OUTPUT: out = optarg; break;
		case DDL_SIM_O_TRACE: trace = optarg; break;
		case DDL_SIM_O_FORMAT: format = optarg; break;
		case DDL_SIM_O_CLUSTER:
			if (ddl_sim_parse_cluster(optarg, &racks, &mpr, &gpm, why, sizeof why) < 0)
				return ddl_cli_usage(P, "--cluster '%s': %s", optarg, why);
			break;
		case DDL_SIM_O_BW:
			if (ddl_sim_parse_bw(optarg, bw, why, sizeof why) < 0)
				return ddl_cli_usage(P, "--bw '%s': %s", optarg, why);
			break;
		case DDL_SIM_O_POLICY: policy_name = optarg; break;
		case DDL_SIM_O_LEASE:
			if (ddl_sim_parse_seconds(optarg, &cfg.lease, 1) < 0 || cfg.lease < DDL_SIM_MIN_LEASE ||
			    cfg.lease > DDL_SIM_MAX_TIME)
				return ddl_cli_usage(P, "--lease '%s': expected seconds in 0.001..1e10",
				                     optarg);
			break;
		case DDL_SIM_O_RESTART_COST:
			if (ddl_sim_parse_seconds(optarg, &cfg.restart_cost, 0) < 0 ||
			    cfg.restart_cost > DDL_SIM_MAX_TIME)
				return ddl_cli_usage(P, "--restart-cost '%s': expected seconds in 0..1e10",
				                     optarg);
			break;
		case DDL_SIM_O_JSON: json = 1; break;
		case DDL_SIM_O_JOBS_OUT: jobs_out = optarg; break;
		case DDL_SIM_O_FORCE: force = 1; break;
		case DDL_SIM_O_SEED: {
			char *end;
			errno = 0;
			cfg.seed = strtoull(optarg, &end, 10);
			if (end == optarg || *end || errno || optarg[0] == '-')
				return ddl_cli_usage(P, "--seed '%s': expected a number >= 0", optarg);
			break;
		}
		case DDL_SIM_O_STRICT: lo.strict = 1; break;
		case DDL_SIM_O_PROFILES:
			if (stat(optarg, &pst) < 0 || !S_ISDIR(pst.st_mode))
				return ddl_cli_usage(P, "--profiles '%s': expected a directory of "
				                     "<model>.json reports", optarg);
			profiles_dir = optarg;
			break;
		case DDL_SIM_O_CHECK: cfg.check = 1; break;
		case DDL_SIM_O_GENERATE:
			if (ddl_sim_parse_int(optarg, &generate) < 0 || generate < 0 || generate > 100000000)
				return ddl_cli_usage(P, "--generate '%s': expected a job count", optarg);
			break;
		case DDL_SIM_O_LOAD:
			if (ddl_sim_parse_double(optarg, &load) < 0 || load <= 0 || load > 1)
				return ddl_cli_usage(P, "--load '%s': expected the offered load, a fraction of "
				                     "the cluster above 0 and at most 1", optarg);
			break;
		case DDL_SIM_O_HELP: ddl_sim_usage(); return 0;
		case DDL_SIM_O_VERSION: printf("ddlprof-sim %s\n", DDLPROF_VERSION); return 0;
		default: return DDL_CLI_USAGE; /* said by ddl_cli_next */
		}
	}
	if (optind < argc)
		return ddl_cli_usage(P, "unexpected argument '%s'", argv[optind]);
	if (generate >= 0) {
		if (trace)
			return ddl_cli_usage(P, "--generate and --trace exclude each other");
		int philly = format && !strcmp(format, "philly");
		if (format && !philly && strcmp(format, "csv"))
			return ddl_cli_usage(P, "--generate --format '%s': expected csv or philly", format);
		char tmp[4200];
		FILE *f = out ? ddl_cli_out_open(P, out, force, 0644, tmp, sizeof tmp) : stdout;
		if (!f)
			return 1;
		int bad = ddl_sim_generate(f, generate, cfg.seed, racks * mpr * gpm, gpm, load, philly) < 0;
		if (out ? ddl_cli_out_close(f, out, tmp, !bad) < 0 : fflush(stdout) != 0)
			bad = 1;
		if (bad)
			fprintf(stderr, "ddlprof-sim: writing the trace%s%s: %s\n", out ? " to " : "",
			        out ? out : "", strerror(errno));
		return bad;
	}
	if (!trace)
		return ddl_cli_usage(P, "--trace FILE is required");
	const struct ddl_sim_policy *policy = NULL;
	for (size_t i = 0; i < sizeof ddl_sim_policies / sizeof ddl_sim_policies[0]; i++)
		if (!strcmp(policy_name, ddl_sim_policies[i]->name))
			policy = ddl_sim_policies[i];
	if (!policy)
		return ddl_cli_usage(P, "--policy '%s': expected fifo, las, gandiva, dally or sensitivity",
		                     policy_name);
	struct stat tst;
	if (stat(trace, &tst) == 0 && S_ISDIR(tst.st_mode)) {
		fprintf(stderr, "ddlprof-sim: %s: is a directory; --trace names a job trace file\n", trace);
		return 1;
	}
	if (!format && !(format = ddl_sim_detect(trace)))
		return 1;
	size_t fi = 0;
	while (fi < sizeof ddl_sim_formats / sizeof ddl_sim_formats[0] &&
	       strcmp(format, ddl_sim_formats[fi].name))
		fi++;
	if (fi == sizeof ddl_sim_formats / sizeof ddl_sim_formats[0])
		return ddl_cli_usage(P, "--format '%s': expected csv, tiresias, helios or philly",
		                     format);

	struct ddl_sim s = {.policy = policy, .cfg = cfg};
	struct ddl_sim_trace t = {0};
	if (ddl_sim_cluster_init(&s.cl, racks, mpr, gpm) < 0) {
		fprintf(stderr, "ddlprof-sim: out of memory\n");
		return 1;
	}
	memcpy(s.cl.bw, bw, sizeof bw);
	int rc = 1;
	if (ddl_sim_formats[fi].load(trace, &t, &lo) < 0)
		goto out;
	/* Jobs the cluster can never hold are bad records of this run. */
	size_t keep = 0, missing = 0;
	char first_missing[sizeof t.jobs[0].model] = "";
	struct ddl_sim_skips too_big = {0}, too_long = {0}, no_iter = {0};
	int say_each = verbose || lo.strict;
	for (size_t i = 0; i < t.n; i++) {
		struct ddl_sim_job *j = &t.jobs[i];
		if (j->gpus > s.cl.gpus) {
			char line[400], need[32];
			snprintf(line, sizeof line, "ddlprof-sim: %s: job %s needs %d GPUs, the cluster has %d; %s",
			         trace, j->id, j->gpus, s.cl.gpus,
			         lo.strict ? "the trace is rejected (--strict)" : "job skipped");
			snprintf(need, sizeof need, "%d GPUs", j->gpus);
			if (say_each)
				fprintf(stderr, "%s\n", line);
			else
				ddl_sim_skips_add(&too_big, line, j->id, need);
			t.skipped++;
			if (lo.strict)
				goto out;
			continue;
		}
		if (profiles_dir &&
		    (j->slow_from == DDL_SIM_SLOW_TABLE || (j->work == 0 && j->iter_s == 0))) {
			int k = ddl_sim_model_profile(&profs, profiles_dir, j, lo.strict, &missing,
			                              first_missing, sizeof first_missing);
			if (k < 0)
				goto out;
			if (k == 0) {
				t.skipped++;
				continue;
			}
		}
		j->idx = (int)keep;
		j->slow[DDL_SIM_RACK] = ddl_sim_scale(
		        j->slow[DDL_SIM_RACK],
		        j->ref_bw[DDL_SIM_RACK] > 0 ? j->ref_bw[DDL_SIM_RACK] : DDL_SIM_REF_BW_RACK, bw[1]);
		j->slow[DDL_SIM_CLUSTER] = ddl_sim_scale(j->slow[DDL_SIM_CLUSTER],
		                                         j->ref_bw[DDL_SIM_CLUSTER] > 0
		                                                 ? j->ref_bw[DDL_SIM_CLUSTER]
		                                                 : DDL_SIM_REF_BW_CLUSTER,
		                                         bw[2]);
		if (j->work == 0) {
			/* Given as iterations: the run at the tightest level it can have. */
			double w = j->iterations * j->iter_s *
			           j->slow[ddl_sim_cluster_min_level(&s.cl, j->gpus)];
			if (!(w > 0 && ddl_sim_time_ok(w))) {
				char line[400], iters[48];
				snprintf(iters, sizeof iters, "%.15g iterations", j->iterations);
				snprintf(line, sizeof line, "ddlprof-sim: %s: job %s: %s %s; %s", trace, j->id,
				         iters, j->iter_s > 0 ? "run longer than 1e10 s" : DDL_SIM_NO_ITER_TIME,
				         lo.strict ? "the trace is rejected (--strict)" : "job skipped");
				if (say_each)
					fprintf(stderr, "%s\n", line);
				else
					ddl_sim_skips_add(j->iter_s > 0 ? &too_long : &no_iter, line, j->id, iters);
				t.skipped++;
				if (lo.strict)
					goto out;
				continue;
			}
			j->work = w;
		}
		t.jobs[keep++] = *j;
	}
	t.n = keep;
	snprintf(why, sizeof why, "needing more GPUs than the cluster's %d", s.cl.gpus);
	ddl_sim_skips_say(&too_big, trace, why);
	ddl_sim_skips_say(&too_long, trace, "given as iterations that run longer than 1e10 s");
	ddl_sim_skips_say(&no_iter, trace, "given as iterations " DDL_SIM_NO_ITER_TIME);
	if (missing)
		fprintf(stderr, "ddlprof-sim: --profiles %s: no <model>.json for %zu model%s (%s%s); "
		        "their jobs keep the built-in slowdowns\n", profiles_dir, missing,
		        missing == 1 ? "" : "s", first_missing, missing > 1 ? ", ..." : "");
	if (!t.n) {
		fprintf(stderr, "ddlprof-sim: %s: no jobs to simulate\n", trace);
		goto out;
	}
	qsort(t.jobs, t.n, sizeof *t.jobs, ddl_sim_cmp_arrival);
	s.jobs = t.jobs;
	s.njobs = t.n;
	ddl_progress_init(&s.progress, "ddlprof-sim", quiet);
	int ran = ddl_sim_run(&s);
	ddl_progress_done(&s.progress);
	if (ran < 0)
		goto out;
	if (cfg.check)
		fprintf(stderr, "ddlprof-sim: check: invariants held (%zu jobs, %zu lease ends)\n",
		        s.njobs, s.rounds);
	struct ddl_sim_summary m;
	ddl_sim_summarize(&s, &m);
	if (jobs_out && ddl_sim_output(jobs_out, force, &s, NULL, 0, 0) < 0)
		goto out;
	if (ddl_sim_output(out, force, &s, &m, t.skipped, json ? 2 : 1) < 0)
		goto out;
	rc = 0;
out:
	ddl_sim_profiles_free(&profs);
	ddl_sim_trace_free(&t);
	ddl_sim_cluster_free(&s.cl);
	ddl_sim_heap_free(&s.heap);
	free(s.wait);
	free(s.run);
	free(s.tmp);
	free(s.ids);
	return rc;
}
