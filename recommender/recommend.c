/*
 * ddlprof-recommend: from ddlprof-report/1 profiles of a training job (or
 * from its structure: layers, parameters, compute per step), projects the
 * job's run time and cost on every configuration of the instance catalog
 * and picks the cheapest within a time budget, the fastest within a cost
 * budget, or the Pareto front of both. Options (rec_opts.h's table, read
 * as every ddlprof command reads its own: ddlprof/cli.h) and inputs are
 * read here, the result written to stdout or -o's file; catalog.c,
 * profile.c, model.c, search.c and output.c do the rest;
 * --slurm adds the sbatch options for network locality (slurm.c).
 *
 * Exit status: 0 a recommendation; 1 bad input (a profile that cannot be
 * read or is not a usable ddlprof-report/1, an existing -o file without
 * --force, output that could not be written); 2 usage error or a malformed
 * catalog; 4 nothing meets the budget (the nearest option is named).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "rec.h"
#include "rec_opts.h"

#ifndef DDLPROF_VERSION
#define DDLPROF_VERSION "unknown"
#endif

/*
 * Defaults of the communication model until a fit replaces them (a
 * catalog's "model", or --alpha/--beta): 10 us per ring step and per
 * collective, and links used at 1/1.15 = 87% of their rate, NCCL's usual
 * ring efficiency. scripts/fit-layers-model.sh fits both on the emulation.
 */
#define DDL_DEFAULT_ALPHA 10e-6
#define DDL_DEFAULT_BETA 1.15

#define DDL_MAX_PROFILES 64
#define DDL_MAX_CATALOGS 16
#define DDL_MAX_NOTES 256

static const struct ddl_cli_opt ddl_opts[] = {DDL_REC_OPTIONS(DDL_CLI_OPT)};

static void ddl_usage(void)
{
	printf("usage: ddlprof-recommend (--profile REPORT.json|DIR)... | --layers L --params P --compute-ms C\n"
	       "                         (--iterations N | --epochs E --samples-per-epoch S --batch B)\n"
	       "                         [--budget-hours H] [--budget-usd D] [--spot] [--json]\n"
	       "                         [-o FILE [--force]] [-q] [--catalog FILE]...\n"
	       "                         [--max-instances N] [--instance GLOBS]\n"
	       "                         [--precision fp32|fp16] [--scaling strong|weak]\n"
	       "                         [--algorithm ring|tree] [--allreduce flat|hierarchical]\n"
	       "                         [--measured-gpu MODEL] [--measured-instance TYPE]\n"
	       "                         [--grad-bytes B] [--data-ms D] [--overlap F]\n"
	       "                         [--min-gpu-memory GIB] [--alpha S] [--beta X]\n"
	       "                         [--slurm [--wait-history FILE] [--switch-threshold F]\n"
	       "                                  [--nodes-per-switch K]]\n"
	       "Project a training job's run time and cost on the instances of a catalog and\n"
	       "pick the cheapest within a time budget, or the fastest within a cost budget.\n");
	ddl_cli_help(stdout, ddl_opts, sizeof ddl_opts / sizeof ddl_opts[0]);
	printf("See ddlprof-recommend(1).\n");
}

/* One line, "ddlprof-recommend: ...; try --help". Returns 2. */
static int ddl_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int ddl_usage_error(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return ddl_cli_usage("ddlprof-recommend", "%s", msg);
}

/* A finite number in [lo, hi]; whole when asked. Returns 0 or -1. */
static int ddl_num(const char *s, double lo, double hi, int whole, double *v)
{
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(x) || x < lo || x > hi || (whole && x != floor(x)))
		return -1;
	*v = x;
	return 0;
}

struct ddl_notes {
	char *text[DDL_MAX_NOTES];
	size_t n;
};

static void ddl_note(struct ddl_notes *n, const char *fmt, ...)
{
	if (n->n >= DDL_MAX_NOTES)
		return;
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	char *s = strdup(buf);
	if (s)
		n->text[n->n++] = s;
}

/* The directory of this executable, or "" when it cannot be told. */
static void ddl_exe_dir(char *dir, size_t n)
{
	ssize_t k = readlink("/proc/self/exe", dir, n - 1);
	dir[k > 0 ? k : 0] = 0;
	char *s = strrchr(dir, '/');
	if (s)
		*s = 0;
	else
		dir[0] = 0;
}

/* The shipped catalog: installed beside bin/, or in the source tree beside build/bin/. */
static int ddl_default_catalog(char *path, size_t n)
{
	char dir[PATH_MAX];
	ddl_exe_dir(dir, sizeof dir);
	const char *rel[] = {"../share/ddlprof/catalog/aws.json", "../../recommender/catalog/aws.json"};
	for (size_t i = 0; i < 2 && dir[0]; i++) {
		snprintf(path, n, "%s/%s", dir, rel[i]);
		if (access(path, R_OK) == 0)
			return 0;
	}
	snprintf(path, n, "%s/%s", dir, rel[0]);
	return -1;
}

struct ddl_opts {
	const char *profiles[DDL_MAX_PROFILES];
	size_t nprof;
	const char *catalogs[DDL_MAX_CATALOGS];
	size_t ncat;
	int json, quiet, force;
	const char *out; /* -o */
	double layers, params, compute_ms, data_ms, overlap, grad_bytes, alpha, beta;
	int have_layers, have_params, have_compute, have_data, have_overlap, have_grad, have_alpha,
	        have_beta;
	const char *measured_gpu;
	int have_scaling;
	int slurm, have_slurm_opts;
	struct ddl_slurm_opts so;
};

/* Parses the command line into O and S; 0, or the exit status of a usage error. */
static int ddl_parse(int argc, char **argv, struct ddl_opts *o, struct ddl_settings *s)
{
	int c;
	double v;
	struct ddl_cli cli;
	ddl_cli_init(&cli, "ddlprof-recommend", ddl_opts, sizeof ddl_opts / sizeof ddl_opts[0], 0);
	while ((c = ddl_cli_next(&cli, argc, argv)) != -1) {
		switch (c) {
		case DDL_REC_O_PROFILE:
			if (o->nprof == DDL_MAX_PROFILES)
				return ddl_usage_error("at most %d --profile", DDL_MAX_PROFILES);
			o->profiles[o->nprof++] = optarg;
			break;
		case DDL_REC_O_CATALOG:
			if (o->ncat == DDL_MAX_CATALOGS)
				return ddl_usage_error("at most %d --catalog", DDL_MAX_CATALOGS);
			o->catalogs[o->ncat++] = optarg;
			break;
		case DDL_REC_O_JSON: o->json = 1; break;
		case DDL_REC_O_SPOT: s->spot = 1; break;
		case DDL_REC_O_ITER:
			if (ddl_num(optarg, 1, 1e15, 1, &s->iterations) < 0)
				return ddl_usage_error("--iterations: want a whole number from 1 to 1e15, not '%s'", optarg);
			break;
		case DDL_REC_O_EPOCHS:
			if (ddl_num(optarg, 0, 1e9, 0, &s->epochs) < 0 || s->epochs <= 0)
				return ddl_usage_error("--epochs: want a number above 0, not '%s'", optarg);
			break;
		case DDL_REC_O_SAMPLES:
			if (ddl_num(optarg, 1, 1e15, 1, &s->samples) < 0)
				return ddl_usage_error("--samples-per-epoch: want a whole number from 1 to 1e15, not '%s'", optarg);
			break;
		case DDL_REC_O_BATCH:
			if (ddl_num(optarg, 1, 1e12, 1, &s->batch) < 0)
				return ddl_usage_error("--batch: want a whole number from 1 to 1e12, not '%s'", optarg);
			break;
		case DDL_REC_O_HOURS:
			if (ddl_num(optarg, 0, 1e9, 0, &s->budget_hours) < 0 || s->budget_hours <= 0)
				return ddl_usage_error("--budget-hours: want a number of hours above 0, not '%s'", optarg);
			break;
		case DDL_REC_O_USD:
			if (ddl_num(optarg, 0, 1e15, 0, &s->budget_usd) < 0 || s->budget_usd <= 0)
				return ddl_usage_error("--budget-usd: want a number of dollars above 0, not '%s'", optarg);
			break;
		case DDL_REC_O_MAXI:
			if (ddl_num(optarg, 1, 1024, 1, &v) < 0)
				return ddl_usage_error("--max-instances: want a whole number from 1 to 1024, not '%s'", optarg);
			s->max_instances = (int)v;
			break;
		case DDL_REC_O_INST:
			if (strlen(optarg) >= 1000)
				return ddl_usage_error("--instance: patterns longer than 1000 characters");
			s->instance_globs = optarg;
			break;
		case DDL_REC_O_PREC:
			if (strcmp(optarg, "fp32") && strcmp(optarg, "fp16"))
				return ddl_usage_error("--precision: want fp32 or fp16, not '%s'", optarg);
			s->fp16 = !strcmp(optarg, "fp16");
			break;
		case DDL_REC_O_SCALING:
			if (strcmp(optarg, "strong") && strcmp(optarg, "weak"))
				return ddl_usage_error("--scaling: want strong or weak, not '%s'", optarg);
			s->scaling = strcmp(optarg, "weak") ? DDL_STRONG : DDL_WEAK;
			o->have_scaling = 1;
			break;
		case DDL_REC_O_ALGO:
			if (strcmp(optarg, "ring") && strcmp(optarg, "tree"))
				return ddl_usage_error("--algorithm: want ring or tree, not '%s'", optarg);
			s->algo = strcmp(optarg, "tree") ? DDL_RING : DDL_TREE;
			break;
		case DDL_REC_O_AR:
			if (strcmp(optarg, "flat") && strcmp(optarg, "hierarchical"))
				return ddl_usage_error("--allreduce: want flat or hierarchical, not '%s'", optarg);
			s->allreduce = strcmp(optarg, "flat") ? DDL_AR_HIER : DDL_AR_FLAT;
			break;
		case DDL_REC_O_MGPU: o->measured_gpu = optarg; break;
		case DDL_REC_O_MINST: s->measured_instance = optarg; break;
		case DDL_REC_O_LAYERS:
			if (ddl_num(optarg, 1, 1e6, 1, &o->layers) < 0)
				return ddl_usage_error("--layers: want a whole number from 1 to 1e6, not '%s'", optarg);
			o->have_layers = 1;
			break;
		case DDL_REC_O_PARAMS:
			if (ddl_num(optarg, 1, 1e15, 0, &o->params) < 0)
				return ddl_usage_error("--params: want a number from 1 to 1e15, not '%s'", optarg);
			o->have_params = 1;
			break;
		case DDL_REC_O_GRAD:
			if (ddl_num(optarg, 0, 1e16, 0, &o->grad_bytes) < 0)
				return ddl_usage_error("--grad-bytes: want a number from 0 to 1e16, not '%s'", optarg);
			o->have_grad = 1;
			break;
		case DDL_REC_O_COMPUTE:
			if (ddl_num(optarg, 0, 1e9, 0, &o->compute_ms) < 0 || o->compute_ms <= 0)
				return ddl_usage_error("--compute-ms: want a number of milliseconds above 0, not '%s'", optarg);
			o->have_compute = 1;
			break;
		case DDL_REC_O_DATA:
			if (ddl_num(optarg, 0, 1e9, 0, &o->data_ms) < 0)
				return ddl_usage_error("--data-ms: want a number of milliseconds from 0, not '%s'", optarg);
			o->have_data = 1;
			break;
		case DDL_REC_O_OVERLAP:
			if (ddl_num(optarg, 0, 1, 0, &o->overlap) < 0)
				return ddl_usage_error("--overlap: want a fraction from 0 to 1, not '%s'", optarg);
			o->have_overlap = 1;
			break;
		case DDL_REC_O_MINMEM:
			if (ddl_num(optarg, 0, 1e6, 0, &s->min_gpu_mem) < 0)
				return ddl_usage_error("--min-gpu-memory: want GiB from 0, not '%s'", optarg);
			break;
		case DDL_REC_O_ALPHA:
			if (ddl_num(optarg, 0, 1, 0, &o->alpha) < 0)
				return ddl_usage_error("--alpha: want seconds from 0 to 1, not '%s'", optarg);
			o->have_alpha = 1;
			break;
		case DDL_REC_O_BETA:
			if (ddl_num(optarg, 0, 1000, 0, &o->beta) < 0 || o->beta <= 0)
				return ddl_usage_error("--beta: want a number above 0 and at most 1000, not '%s'", optarg);
			o->have_beta = 1;
			break;
		case DDL_REC_O_SLURM: o->slurm = 1; break;
		case DDL_REC_O_WAITS: o->so.history = optarg; o->have_slurm_opts = 1; break;
		case DDL_REC_O_SWTHR:
			if (ddl_num(optarg, 0, 1, 0, &o->so.threshold) < 0)
				return ddl_usage_error("--switch-threshold: want a fraction from 0 to 1, not '%s'", optarg);
			o->have_slurm_opts = 1;
			break;
		case DDL_REC_O_NPS:
			if (ddl_num(optarg, 1, 1e6, 1, &v) < 0)
				return ddl_usage_error("--nodes-per-switch: want a whole number from 1 to 1e6, not '%s'", optarg);
			o->so.nodes_per_switch = (int)v;
			o->have_slurm_opts = 1;
			break;
		case DDL_REC_O_OUTPUT: o->out = optarg; break;
		case DDL_REC_O_FORCE: o->force = 1; break;
		case DDL_REC_O_QUIET: o->quiet = 1; break;
		case DDL_REC_O_HELP: ddl_usage(); return -1;
		case DDL_REC_O_VERSION: printf("ddlprof-recommend %s\n", DDLPROF_VERSION); return -1;
		default: return DDL_CLI_USAGE; /* said by ddl_cli_next */
		}
	}
	if (optind < argc)
		return ddl_usage_error("unexpected argument '%s' (profiles go after --profile)", argv[optind]);
	int structural = o->nprof == 0;
	if (structural && !o->have_layers && !o->have_params && !o->have_compute)
		return ddl_usage_error("give --profile, or describe the job with --layers, --params and --compute-ms");
	if (structural && (!o->have_layers || (!o->have_params && !o->have_grad) || !o->have_compute))
		return ddl_usage_error("a job with no profile needs --layers, --params (or --grad-bytes) and --compute-ms");
	if (!structural && (o->have_compute || o->have_data || o->have_overlap))
		return ddl_usage_error("--compute-ms, --data-ms and --overlap describe a job with no profile; "
		                       "a profile measures them");
	int epochs = s->epochs > 0 || s->samples > 0 || s->batch > 0;
	if (s->iterations > 0 && epochs)
		return ddl_usage_error("give --iterations or --epochs/--samples-per-epoch/--batch, not both");
	if (o->have_slurm_opts && !o->slurm)
		return ddl_usage_error("--wait-history, --switch-threshold and --nodes-per-switch go with --slurm");
	if (o->slurm && structural)
		return ddl_usage_error("--slurm needs a --profile with the job's network sensitivity");
	if (!(s->iterations > 0) && (!o->slurm || epochs)) {
		/* name what is missing: a report does not record the batch size, so it cannot stand in */
		char miss[128] = "";
		if (!(s->epochs > 0))
			strcat(miss, " --epochs E");
		if (!(s->samples > 0))
			strcat(miss, " --samples-per-epoch S");
		if (!(s->batch > 0))
			strcat(miss, " --batch B");
		if (!epochs)
			return ddl_usage_error("give --iterations N, or --epochs, --samples-per-epoch and --batch");
		if (miss[0])
			return ddl_usage_error("--epochs needs --epochs, --samples-per-epoch and --batch; missing:%s%s",
			                       miss, s->batch > 0 ? "" : " (the global batch, or one GPU's with "
			                       "--scaling weak: profiles do not record it)");
	}
	if (o->have_params && o->have_grad)
		return ddl_usage_error("give --params or --grad-bytes, not both");
	return 0;
}

/* Which catalog GPU model a measured device is; 0, or the exit status of a failure. */
static int ddl_resolve_gpu(struct ddl_profile *p, const struct ddl_catalog *cat, const char *override,
                           struct ddl_notes *notes)
{
	const char *dev = override ? override : p->gpu_device;
	if (!dev) {
		ddl_note(notes, "%s: no GPU model was measured (a CPU job): its compute is taken as on the "
		         "reference GPU (relative throughput 1); name the GPU with --measured-gpu", p->file);
		return 0;
	}
	p->gpu = ddl_catalog_gpu(cat, dev);
	if (p->gpu)
		return 0;
	if (!strcasecmp(dev, "ddlemu")) {
		ddl_note(notes, "%s: measured on the CPU emulation (ddlemu), which no catalog describes: its "
		         "compute is taken as on the reference GPU (relative throughput 1)", p->file);
		return 0;
	}
	if (override) {
		fprintf(stderr, "ddlprof-recommend: --measured-gpu: \"%s\" is not a GPU model of the catalog\n", dev);
		return 2;
	}
	fprintf(stderr, "ddlprof-recommend: %s: job.gpu.model: \"%s\" is not a GPU model of the catalog; "
	        "name the closest with --measured-gpu\n", p->file, dev);
	return 1;
}

/*
 * Without --scaling: from two profiles of the job on the same GPU at
 * different rank counts (the pair furthest apart), whichever scaling
 * predicts the larger one's compute per step better: strong, c1 = c0 n0/n1;
 * weak, c1 = c0. With fewer, strong, the default. Either way a note says so.
 */
static void ddl_infer_scaling(const struct ddl_profile *prof, size_t nprof, struct ddl_settings *s,
                              struct ddl_notes *notes)
{
	const struct ddl_profile *a = NULL, *b = NULL;
	for (size_t i = 0; i < nprof; i++)
		for (size_t k = 0; k < nprof; k++) {
			const struct ddl_profile *x = &prof[i], *y = &prof[k];
			if (x->structural || y->structural || x->ranks >= y->ranks || x->compute_s <= 0 ||
			    y->compute_s <= 0 || !(x->gpu == y->gpu || (x->gpu && y->gpu && !strcmp(x->gpu->model, y->gpu->model))))
				continue;
			if (!a || (double)y->ranks / x->ranks > (double)b->ranks / a->ranks) {
				a = x;
				b = y;
			}
		}
	if (!a) {
		if (nprof && !prof[0].structural)
			ddl_note(notes, "--scaling strong assumed: the global batch is fixed and each of n GPUs computes "
			         "1/n of it; give --scaling weak if each GPU keeps its batch (as ddlsynth's ranks do), "
			         "or a second profile at another GPU count to tell");
		return;
	}
	double strong = fabs(log(b->compute_s / (a->compute_s * a->ranks / b->ranks)));
	double weak = fabs(log(b->compute_s / a->compute_s));
	s->scaling = weak < strong ? DDL_WEAK : DDL_STRONG;
	ddl_note(notes, "--scaling %s inferred: compute per step %.4g s on %d ranks (%s) and %.4g s on %d (%s); "
	         "give --scaling to override", weak < strong ? "weak" : "strong", a->compute_s, a->ranks, a->file,
	         b->compute_s, b->ranks, b->file);
}

/* Where the output goes: stdout, or -o's file (ddlprof/cli.h); NULL after a message. */
static FILE *ddl_out_open(const struct ddl_opts *o, char *tmp, size_t n)
{
	return o->out ? ddl_cli_out_open("ddlprof-recommend", o->out, o->force, 0644, tmp, n) : stdout;
}

/* Ends the output F of ddl_out_open, OK when written whole: 0, or -1 after a message. */
static int ddl_out_close(const struct ddl_opts *o, FILE *f, const char *tmp, int ok)
{
	int rc = o->out ? ddl_cli_out_close(f, o->out, tmp, ok) : fflush(stdout) == 0 && ok ? 0 : -1;
	if (rc < 0)
		fprintf(stderr, "ddlprof-recommend: writing %s: %s\n", o->out ? o->out : "the output",
		        strerror(errno));
	return rc;
}

int main(int argc, char **argv)
{
	struct ddl_opts o = {0};
	struct ddl_settings s = {0};
	o.so.threshold = 0.10;
	s.max_instances = 8;
	s.scaling = DDL_STRONG;
	s.algo = DDL_RING;
	s.allreduce = DDL_AR_AUTO;
	int rc = ddl_parse(argc, argv, &o, &s);
	if (rc)
		return rc < 0 ? 0 : rc;
	ddl_spawn_quiet = o.quiet;
	int slurm_only = o.slurm && !(s.iterations > 0) && !(s.epochs > 0); /* no run length: no search */

	char err[2048], path[PATH_MAX], tmp[PATH_MAX + 32];
	struct ddl_catalog cat = {0};
	struct ddl_profile prof[DDL_MAX_PROFILES];
	struct ddl_notes notes = {0};
	struct ddl_result res = {0};
	size_t nprof = 0;
	memset(prof, 0, sizeof prof);
	if (!o.ncat) {
		if (ddl_default_catalog(path, sizeof path) < 0) {
			fprintf(stderr, "ddlprof-recommend: %s: no installed catalog; give one with --catalog FILE\n", path);
			return 2;
		}
		o.catalogs[o.ncat++] = path;
	}
	rc = 2;
	for (size_t i = 0; i < o.ncat; i++)
		if (ddl_catalog_load(&cat, o.catalogs[i], err, sizeof err) < 0) {
			fprintf(stderr, "ddlprof-recommend: %s\n", err);
			goto out;
		}
	if (ddl_catalog_finish(&cat, err, sizeof err) < 0) {
		fprintf(stderr, "ddlprof-recommend: %s\n", err);
		goto out;
	}
	s.coef.alpha_s = DDL_DEFAULT_ALPHA;
	s.coef.beta = DDL_DEFAULT_BETA;
	s.coef.norm_p = 1;
	snprintf(s.coef.source, sizeof s.coef.source, "default");
	if (cat.have_coef)
		s.coef = cat.coef;
	if (o.have_alpha)
		s.coef.alpha_s = o.alpha;
	if (o.have_beta)
		s.coef.beta = o.beta;
	if (o.have_alpha || o.have_beta)
		snprintf(s.coef.source, sizeof s.coef.source, "command line");
	if (!strcmp(s.coef.source, "default"))
		ddl_note(&notes, "communication model: default coefficients (alpha %g s, beta %g), not fitted; "
		         "see scripts/fit-layers-model.sh", s.coef.alpha_s, s.coef.beta);

	char report_bin[PATH_MAX], dir[PATH_MAX];
	ddl_exe_dir(dir, sizeof dir);
	snprintf(report_bin, sizeof report_bin, "%s/ddlprof-report", dir);
	if (!dir[0] || access(report_bin, X_OK) < 0)
		snprintf(report_bin, sizeof report_bin, "ddlprof-report");
	double given = o.have_params ? 4 * o.params : o.grad_bytes;
	for (size_t i = 0; i < o.nprof; i++) {
		struct ddl_profile *p = &prof[i];
		nprof = i + 1; /* freed at the end whatever happens */
		if (ddl_profile_load(p, o.profiles[i], report_bin, err, sizeof err) < 0) {
			fprintf(stderr, "ddlprof-recommend: %s\n", err);
			rc = 1;
			goto out;
		}
		if (!slurm_only && (rc = ddl_resolve_gpu(p, &cat, o.measured_gpu, &notes)))
			goto out;
		rc = 2;
		if (o.have_params || o.have_grad) {
			p->grad_bytes = given;
			p->bytes_src = DDL_BYTES_GIVEN;
		}
		if (o.have_layers) {
			p->layers = (int)o.layers;
			p->collectives = o.layers;
		}
		if (p->ranks == 1 && p->bytes_src == DDL_BYTES_NONE) {
			fprintf(stderr, "ddlprof-recommend: %s: a one-rank profile measures no gradient traffic "
			        "to project onto several GPUs; give --params P or --grad-bytes B\n", p->file);
			rc = 1;
			goto out;
		}
		if (p->bytes_src == DDL_BYTES_COLLECTIVES || p->bytes_src == DDL_BYTES_SOCKETS)
			ddl_note(&notes, "%s: bytes per iteration estimated from whole-run %s (%.4g bytes of "
			         "gradients a step)", p->file,
			         p->bytes_src == DDL_BYTES_SOCKETS ? "socket traffic, as a ring all-reduce" : "collective totals",
			         p->grad_bytes);
		if (p->bytes_src == DDL_BYTES_NONE)
			ddl_note(&notes, "%s: no communication was measured; none is projected (give --grad-bytes "
			         "or --params if the job all-reduces gradients)", p->file);
		if (!p->overlap_measured && p->grad_bytes > 0)
			ddl_note(&notes, "%s: overlap of communication with compute not measured; none assumed", p->file);
	}
	if (!o.nprof) {
		struct ddl_profile *p = &prof[0];
		nprof = 1;
		p->file = strdup("(structure)");
		p->structural = 1;
		p->ranks = p->hosts = p->gpus_per_host = 1;
		p->layers = (int)o.layers;
		p->compute_s = o.compute_ms / 1e3;
		p->data_s = o.data_ms / 1e3;
		p->grad_bytes = given;
		p->collectives = o.layers;
		p->overlap_frac = o.overlap;
		p->bytes_src = DDL_BYTES_GIVEN;
		if (o.measured_gpu) {
			p->gpu_device = strdup(o.measured_gpu);
			if ((rc = ddl_resolve_gpu(p, &cat, o.measured_gpu, &notes)))
				goto out;
		} else {
			ddl_note(&notes, "--compute-ms is taken as on the reference GPU (relative throughput 1); "
			         "name the GPU it was timed on with --measured-gpu");
		}
		rc = 2;
	}
	if (!o.have_scaling)
		ddl_infer_scaling(prof, nprof, &s, &notes);
	struct ddl_slurm sl;
	if (o.slurm) {
		/* the run's length weighs the wait against what one switch saves */
		if (s.iterations > 0)
			o.so.iterations = s.iterations;
		else if (s.epochs > 0)
			o.so.iterations = s.epochs * s.samples / (s.batch * (s.scaling == DDL_WEAK ? prof[0].ranks : 1));
		if (ddl_slurm_plan(&prof[0], o.profiles[0], report_bin, &o.so, &sl, err, sizeof err) < 0) {
			fprintf(stderr, "ddlprof-recommend: %s\n", err);
			rc = 1;
			goto out;
		}
		if (slurm_only) {
			FILE *f = ddl_out_open(&o, tmp, sizeof tmp);
			int ok = f && (o.json ? ddl_slurm_json(&sl, NULL, 0, f)
			                      : ddl_slurm_text(&sl, prof[0].file, f)) == 0;
			rc = f && ddl_out_close(&o, f, tmp, ok) == 0 ? 0 : 1;
			goto out;
		}
	}
	if (ddl_search(&cat, prof, nprof, &s, &res, err, sizeof err) < 0) {
		fprintf(stderr, "ddlprof-recommend: %s\n", err);
		goto out;
	}
	if (res.skipped_spot)
		ddl_note(&notes, "%zu instance types have no spot price in the catalog and were left out",
		         res.skipped_spot);
	struct ddl_out_ctx ctx = {&cat, prof, nprof, &s, &res, (const char *const *)notes.text, notes.n};
	/* the assumptions: in the JSON, or beside the text */
	for (size_t i = 0; i < notes.n && !o.json && !o.quiet; i++)
		fprintf(stderr, "ddlprof-recommend: note: %s\n", notes.text[i]);
	FILE *f = ddl_out_open(&o, tmp, sizeof tmp);
	if (!f) {
		rc = 1;
		goto out;
	}
	int wrc;
	if (o.slurm && o.json) {
		/* the recommendation's JSON with "slurm" added */
		char *buf = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&buf, &len);
		wrc = mem ? ddl_out_json(&ctx, mem) : -1;
		if (mem && fclose(mem))
			wrc = -1;
		if (wrc == 0)
			wrc = ddl_slurm_json(&sl, buf, len, f);
		free(buf);
	} else {
		wrc = o.json ? ddl_out_json(&ctx, f) : ddl_out_text(&ctx, f);
		if (o.slurm && wrc == 0)
			wrc = fputc('\n', f) == EOF ? -1 : ddl_slurm_text(&sl, prof[0].file, f);
	}
	if (ddl_out_close(&o, f, tmp, wrc == 0) < 0) {
		rc = 1;
		goto out;
	}
	rc = 0;
	if (!res.rec) {
		const struct ddl_candidate *c = res.nearest;
		char budget[128] = "";
		if (s.budget_hours > 0)
			snprintf(budget, sizeof budget, "%g h", s.budget_hours);
		if (s.budget_usd > 0)
			snprintf(budget + strlen(budget), sizeof budget - strlen(budget), "%s$%.2f",
			         s.budget_hours > 0 ? " and " : "", s.budget_usd);
		fprintf(stderr, "ddlprof-recommend: no configuration meets the budget (%s); the nearest is "
		        "%d x %s: %.2f h, $%.2f\n", budget, c->count, c->inst->name, c->est_hours, c->est_cost);
		rc = 4;
	}
out:
	ddl_result_free(&res);
	for (size_t i = 0; i < nprof; i++)
		ddl_profile_free(&prof[i]);
	for (size_t i = 0; i < notes.n; i++)
		free(notes.text[i]);
	ddl_catalog_free(&cat);
	return rc;
}
