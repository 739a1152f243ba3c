/*
 * ddlsynth: a synthetic data-parallel training job whose structure is set on
 * the command line: layers, parameters, compute per layer, DDP-style gradient
 * buckets, overlap of communication with the backward pass, input copies, a
 * host-side input pipeline delay, and flat or hierarchical all-reduce.
 *
 * It is written against the CUDA runtime API and NCCL and builds two ways
 * from this one source: on the CPU emulation (kernels/emu, libddlemu.so),
 * where kernels take their planned time and collectives move real bytes over
 * sockets at emulated link speeds, and with -DDDL_REAL_CUDA on libcudart and
 * libnccl. Either way ddlprof sees what it would see from a real job.
 *
 * Because every time in the job is planned, the program can say what an
 * ideal profiler should report: --plan-json writes that ground truth (see
 * ddl_plan_write), and the tests hold ddlprof-report to it.
 *
 * Process model: started by mpirun, srun or a torchrun-style launcher it runs
 * as one rank; started bare it is its own launcher (ddl_launch) and re-executes
 * itself once per rank. Rank 0 runs a tiny TCP store (ddl_store_*) through
 * which the ranks swap host names and NCCL unique ids.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "ddlprof/ddlprof.h"
#include "kernels.h"

#ifndef DDLPROF_VERSION
#define DDLPROF_VERSION "unknown"
#endif

#ifdef DDL_REAL_CUDA
#define DDL_BUILD "cuda"
#else
#define DDL_BUILD "emulation"
#endif

/*
 * The emulation's link speeds when neither an option nor its environment
 * variable sets them (kernels/README.md); in Gbit/s.
 */
#define DDL_EMU_INTRA_GBPS 4.0
#define DDL_EMU_NET_GBPS 1.0
#define DDL_EMU_PCIE_GBPS 64.0

#define DDL_MAX_RANKS 1024
#define DDL_HOST_LEN 128
#define DDL_EMU_HOST_MAX 63 /* the emulation and the trace format keep 63 bytes of a host name */
#define DDL_MIB (1024.0 * 1024.0) /* --bucket-mb and --input-mb are MiB, as DDP's bucket_cap_mb */
#define DDL_EXIT_USAGE 2
#define DDL_EXIT_INJECTED 3 /* --fail-rank */
#define DDL_EXIT_TIMEOUT 124

/* ------------------------------------------------------------------ options */

enum ddl_algo { DDL_ALGO_FLAT, DDL_ALGO_HIER };

struct ddl_opts {
	int ranks, ranks_per_host, layers;
	long long params;         /* float32 gradients per layer */
	double compute_ms;        /* per layer forward, and again per layer backward */
	double flops, gpu_tflops; /* the other way to say compute_ms */
	double bucket_mb, input_mb, data_ms;
	int overlap;
	enum ddl_algo algo;
	int iterations, warmup;
	double intra_gbps, net_gbps, pcie_gbps; /* < 0: the environment's or the emulation's default; 0: unpaced */
	int markers, force, quiet;
	const char *plan_json;
	int timeout_s;
	int fail_rank; /* -1, or the rank that exits on purpose in its second iteration */
	int slow_rank; /* -1, or a straggler: its kernels take slow_factor times as long */
	int hang_rank, hang_at; /* -1, or the rank that stops for good before its hang_at-th collective */
	int slow_from, slow_to; /* steps (from 0) whose kernels take slow_factor times as long, every
	                         * rank's; -1 none */
	double slow_factor;
	int p2p_test;
	double p2p_mb;
	int ranks_set, rph_set, compute_set, flops_set;
};

enum {
	DDL_OPT_RANKS = 256,
	DDL_OPT_RPH,
	DDL_OPT_LAYERS,
	DDL_OPT_PARAMS,
	DDL_OPT_COMPUTE,
	DDL_OPT_FLOPS,
	DDL_OPT_TFLOPS,
	DDL_OPT_BUCKET,
	DDL_OPT_OVERLAP,
	DDL_OPT_INPUT,
	DDL_OPT_DATA,
	DDL_OPT_ALLREDUCE,
	DDL_OPT_ITER,
	DDL_OPT_WARMUP,
	DDL_OPT_INTRA,
	DDL_OPT_NET,
	DDL_OPT_PCIE,
	DDL_OPT_MARKERS,
	DDL_OPT_PLAN,
	DDL_OPT_FORCE,
	DDL_OPT_TIMEOUT,
	DDL_OPT_FAIL,
	DDL_OPT_SLOW_RANK,
	DDL_OPT_SLOW_FACTOR,
	DDL_OPT_HANG_RANK,
	DDL_OPT_SLOW_STEPS,
	DDL_OPT_HANG_AT,
	DDL_OPT_P2P,
	DDL_OPT_P2P_MB,
};

static const struct option ddl_longopts[] = {
	{"ranks", required_argument, NULL, DDL_OPT_RANKS},
	{"ranks-per-host", required_argument, NULL, DDL_OPT_RPH},
	{"layers", required_argument, NULL, DDL_OPT_LAYERS},
	{"params-per-layer", required_argument, NULL, DDL_OPT_PARAMS},
	{"compute-ms", required_argument, NULL, DDL_OPT_COMPUTE},
	{"flops", required_argument, NULL, DDL_OPT_FLOPS},
	{"gpu-tflops", required_argument, NULL, DDL_OPT_TFLOPS},
	{"bucket-mb", required_argument, NULL, DDL_OPT_BUCKET},
	{"overlap", required_argument, NULL, DDL_OPT_OVERLAP},
	{"input-mb", required_argument, NULL, DDL_OPT_INPUT},
	{"data-ms", required_argument, NULL, DDL_OPT_DATA},
	{"allreduce", required_argument, NULL, DDL_OPT_ALLREDUCE},
	{"iterations", required_argument, NULL, DDL_OPT_ITER},
	{"warmup", required_argument, NULL, DDL_OPT_WARMUP},
	{"intra-gbps", required_argument, NULL, DDL_OPT_INTRA},
	{"net-gbps", required_argument, NULL, DDL_OPT_NET},
	{"pcie-gbps", required_argument, NULL, DDL_OPT_PCIE},
	{"markers", no_argument, NULL, DDL_OPT_MARKERS},
	{"plan-json", required_argument, NULL, DDL_OPT_PLAN},
	{"force", no_argument, NULL, DDL_OPT_FORCE},
	{"timeout", required_argument, NULL, DDL_OPT_TIMEOUT},
	{"fail-rank", required_argument, NULL, DDL_OPT_FAIL},
	{"slow-rank", required_argument, NULL, DDL_OPT_SLOW_RANK},
	{"hang-rank", required_argument, NULL, DDL_OPT_HANG_RANK},
	{"slow-steps", required_argument, NULL, DDL_OPT_SLOW_STEPS},
	{"hang-at", required_argument, NULL, DDL_OPT_HANG_AT},
	{"slow-factor", required_argument, NULL, DDL_OPT_SLOW_FACTOR},
	{"p2p-test", no_argument, NULL, DDL_OPT_P2P},
	{"p2p-mb", required_argument, NULL, DDL_OPT_P2P_MB},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static const char ddl_help[] =
	"usage: ddlsynth [OPTION]...\n"
	"A synthetic data-parallel training job on the CUDA runtime and NCCL.\n"
	"Started bare it launches its own ranks; under mpirun, srun or a torchrun-style\n"
	"environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) it is one rank.\n"
	"\n"
	"  --ranks N               ranks to launch (4)\n"
	"  --ranks-per-host M      ranks per emulated host (all on one)\n"
	"  --layers L              layers (8)\n"
	"  --params-per-layer P    float32 gradients per layer, k/M/G suffixes (1M)\n"
	"  --compute-ms X          kernel time per layer forward, and again backward (10)\n"
	"  --flops F               or: work per layer pass, converted with --gpu-tflops\n"
	"  --gpu-tflops T          device speed for --flops (100)\n"
	"  --bucket-mb B           gradient bucket size, MiB, layers in reverse order (25)\n"
	"  --overlap on|off        all-reduce buckets during the backward pass (on)\n"
	"  --input-mb X            host-to-device input copy per step, MiB (0)\n"
	"  --data-ms X             input pipeline delay on the host per step (0)\n"
	"  --allreduce flat|hierarchical\n"
	"                          one ring, or reduce-scatter / all-reduce across hosts /\n"
	"                          all-gather (flat)\n"
	"  --iterations N          measured steps (20)\n"
	"  --warmup N              extra steps before them (0)\n"
	"  --intra-gbps X          emulated link inside a host, Gbit/s (DDLEMU_INTRA_GBPS)\n"
	"  --net-gbps X            emulated network between hosts, Gbit/s (DDLEMU_NET_GBPS)\n"
	"  --pcie-gbps X           emulated host-to-device copies, Gbit/s (DDLEMU_PCIE_GBPS)\n"
	"  --markers               name each step \"iteration\", and its data delay \"data\",\n"
	"                          with the ddlprof marker API\n"
	"  --plan-json FILE        write the planned times and traffic (ground truth)\n"
	"  --force                 let --plan-json replace an existing file\n"
	"  --timeout S             give up on a job that runs longer (300; 0: never)\n"
	"  --fail-rank R           rank R exits with status 3 in its second step (tests)\n"
	"  --slow-rank R           rank R is a straggler: its kernels take --slow-factor\n"
	"                          (default 1.5) times their planned time (tests)\n"
	"  --slow-steps A:B        steps A to B (from 0, warm-up included) run slow on every\n"
	"                          rank: kernels take --slow-factor times as long (tests)\n"
	"  --hang-rank R           rank R stops for good before its collective number\n"
	"  --hang-at N             N (from 1; default 1): the others wait in theirs, the\n"
	"                          job hangs until --timeout or a signal (tests, demos)\n"
	"  --p2p-test              only measure the device-to-device ring bandwidth of\n"
	"                          this machine's GPUs (--p2p-mb per copy, 64) and exit\n"
	"  -q, --quiet             no summary lines\n"
	"  -h, --help              this text\n"
	"  -V, --version           version and build\n";

/* Prints one line about a bad command line and exits 2. */
static void __attribute__((noreturn, format(printf, 1, 2))) ddl_usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs("ddlsynth: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see --help)\n", stderr);
	exit(DDL_EXIT_USAGE);
}

/* A finite number in [lo, hi], with an optional k/M/G (decimal) suffix when scaled. */
static double ddl_opt_num(const char *opt, const char *s, double lo, double hi, int scaled)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (scaled && end != s && *end && !end[1]) {
		const char *sfx = strchr("kMG", *end);
		if (sfx && *sfx) {
			v *= *sfx == 'k' ? 1e3 : *sfx == 'M' ? 1e6 : 1e9;
			end++;
		}
	}
	if (end == s || *end || errno || !isfinite(v) || v < lo || v > hi)
		ddl_usage_error("--%s: '%s' is not a number from %g to %g", opt, s, lo, hi);
	return v;
}

static int ddl_opt_int(const char *opt, const char *s, int lo, int hi)
{
	double v = ddl_opt_num(opt, s, lo, hi, 0);
	if (v != floor(v))
		ddl_usage_error("--%s: '%s' is not a whole number", opt, s);
	return (int)v;
}

static int ddl_opt_word(const char *opt, const char *s, const char *a, const char *b)
{
	if (!strcmp(s, a))
		return 0;
	if (!strcmp(s, b))
		return 1;
	ddl_usage_error("--%s: '%s' is neither %s nor %s", opt, s, a, b);
}

static void ddl_opts_default(struct ddl_opts *o)
{
	memset(o, 0, sizeof *o);
	o->ranks = 4;
	o->layers = 8;
	o->params = 1000000;
	o->compute_ms = 10;
	o->gpu_tflops = 100;
	o->bucket_mb = 25;
	o->overlap = 1;
	o->iterations = 20;
	o->timeout_s = 300;
	o->fail_rank = -1;
	o->hang_rank = -1;
	o->slow_from = o->slow_to = -1;
	o->hang_at = 1;
	o->slow_rank = -1;
	o->slow_factor = 1.5;
	o->intra_gbps = o->net_gbps = o->pcie_gbps = -1;
	o->p2p_mb = 64;
}

/* One option into o; exits 2 on a bad value. */
static void ddl_opt_set(struct ddl_opts *o, int c, const char *name, const char *v)
{
	switch (c) {
	case DDL_OPT_RANKS: o->ranks = ddl_opt_int(name, v, 1, DDL_MAX_RANKS); o->ranks_set = 1; break;
	case DDL_OPT_RPH: o->ranks_per_host = ddl_opt_int(name, v, 1, DDL_MAX_RANKS); o->rph_set = 1; break;
	case DDL_OPT_LAYERS: o->layers = ddl_opt_int(name, v, 1, 100000); break;
	case DDL_OPT_PARAMS: o->params = (long long)ddl_opt_num(name, v, 1, 1e9, 1); break;
	case DDL_OPT_COMPUTE: o->compute_ms = ddl_opt_num(name, v, 0, 1e6, 0); o->compute_set = 1; break;
	case DDL_OPT_FLOPS: o->flops = ddl_opt_num(name, v, 0, 1e18, 1); o->flops_set = 1; break;
	case DDL_OPT_TFLOPS: o->gpu_tflops = ddl_opt_num(name, v, 1e-6, 1e6, 0); break;
	case DDL_OPT_BUCKET: o->bucket_mb = ddl_opt_num(name, v, 1e-6, 1e6, 0); break;
	case DDL_OPT_OVERLAP: o->overlap = !ddl_opt_word(name, v, "on", "off"); break;
	case DDL_OPT_INPUT: o->input_mb = ddl_opt_num(name, v, 0, 1e5, 0); break;
	case DDL_OPT_DATA: o->data_ms = ddl_opt_num(name, v, 0, 1e6, 0); break;
	case DDL_OPT_ALLREDUCE: o->algo = ddl_opt_word(name, v, "flat", "hierarchical") ? DDL_ALGO_HIER : DDL_ALGO_FLAT; break;
	case DDL_OPT_ITER: o->iterations = ddl_opt_int(name, v, 1, 10000000); break;
	case DDL_OPT_WARMUP: o->warmup = ddl_opt_int(name, v, 0, 10000000); break;
	case DDL_OPT_INTRA: o->intra_gbps = ddl_opt_num(name, v, 0, 1e6, 0); break;
	case DDL_OPT_NET: o->net_gbps = ddl_opt_num(name, v, 0, 1e6, 0); break;
	case DDL_OPT_PCIE: o->pcie_gbps = ddl_opt_num(name, v, 0, 1e6, 0); break;
	case DDL_OPT_MARKERS: o->markers = 1; break;
	case DDL_OPT_PLAN: o->plan_json = v; break;
	case DDL_OPT_FORCE: o->force = 1; break;
	case DDL_OPT_TIMEOUT: o->timeout_s = ddl_opt_int(name, v, 0, 1000000); break;
	case DDL_OPT_FAIL: o->fail_rank = ddl_opt_int(name, v, 0, DDL_MAX_RANKS - 1); break;
	case DDL_OPT_SLOW_RANK: o->slow_rank = ddl_opt_int(name, v, 0, DDL_MAX_RANKS - 1); break;
	case DDL_OPT_HANG_RANK: o->hang_rank = ddl_opt_int(name, v, 0, DDL_MAX_RANKS - 1); break;
	case DDL_OPT_HANG_AT: o->hang_at = ddl_opt_int(name, v, 1, 1 << 30); break;
	case DDL_OPT_SLOW_STEPS: {
		char *end;
		long a = strtol(v, &end, 10), b = *end == ':' ? strtol(end + 1, &end, 10) : -1;
		if (*end || a < 0 || b < a || b > 1 << 30)
			ddl_usage_error("--slow-steps '%s': FROM:TO, steps from 0, FROM <= TO", v);
		o->slow_from = (int)a;
		o->slow_to = (int)b;
		break;
	}
	case DDL_OPT_SLOW_FACTOR: o->slow_factor = ddl_opt_num(name, v, 1, 100, 0); break;
	case DDL_OPT_P2P: o->p2p_test = 1; break;
	case DDL_OPT_P2P_MB: o->p2p_mb = ddl_opt_num(name, v, 1e-3, 1e5, 0); break;
	case 'q': o->quiet = 1; break;
	}
}

/* The cross-option rules; exits 2 when they are broken. */
static void ddl_opts_check(struct ddl_opts *o)
{
	if (o->compute_set && o->flops_set)
		ddl_usage_error("--compute-ms and --flops both say how long a layer takes; give one");
	if (o->flops_set)
		o->compute_ms = o->flops / (o->gpu_tflops * 1e12) * 1e3;
	if (!o->rph_set)
		o->ranks_per_host = o->ranks;
	if (o->ranks_per_host > o->ranks)
		ddl_usage_error("--ranks-per-host %d is more than --ranks %d", o->ranks_per_host, o->ranks);
	if (o->algo == DDL_ALGO_HIER && o->ranks % o->ranks_per_host)
		ddl_usage_error("--allreduce hierarchical needs the same ranks on every host: "
		                "--ranks %d is not a multiple of --ranks-per-host %d",
		                o->ranks, o->ranks_per_host);
	if (o->slow_rank >= o->ranks)
		ddl_usage_error("--slow-rank %d: there are only %d ranks", o->slow_rank, o->ranks);
	if (o->fail_rank >= o->ranks)
		ddl_usage_error("--fail-rank %d: there are only %d ranks", o->fail_rank, o->ranks);
	if (o->hang_rank >= o->ranks)
		ddl_usage_error("--hang-rank %d: there are only %d ranks", o->hang_rank, o->ranks);
	if (o->plan_json && !*o->plan_json)
		ddl_usage_error("--plan-json: empty file name");
}

/* Parses argv into o; handles --help and --version; exits 2 on a bad command line. */
static void ddl_opts_parse(struct ddl_opts *o, int argc, char **argv)
{
	ddl_opts_default(o);
	opterr = 0;
	int c, idx;
	while ((c = getopt_long(argc, argv, ":qhV", ddl_longopts, &idx)) != -1) {
		const char *bad = argv[optind - 1];
		switch (c) {
		case 'h': fputs(ddl_help, stdout); exit(0);
		case 'V': printf("ddlsynth %s (%s)\n", DDLPROF_VERSION, DDL_BUILD); exit(0);
		case ':': ddl_usage_error("option '%s' needs a value", bad);
		case '?':
			if (optopt)
				ddl_usage_error("unknown option '-%c'", optopt);
			ddl_usage_error("unknown option '%s'", bad);
		default: {
			const char *name = "";
			for (const struct option *l = ddl_longopts; l->name; l++)
				if (l->val == c)
					name = l->name;
			ddl_opt_set(o, c, name, optarg);
		}
		}
	}
	if (optind < argc)
		ddl_usage_error("unexpected argument '%s'", argv[optind]);
	ddl_opts_check(o);
}

/* A link speed of the emulation: the option, else its variable, else the default; 0 is unpaced. */
static double ddl_gbps(double opt, const char *var, double dflt)
{
	if (opt >= 0)
		return opt;
	const char *v = getenv(var);
	char *end;
	double x = v && *v ? strtod(v, &end) : -1;
	return v && *v && !*end && isfinite(x) && x >= 0 && x <= 1e6 ? x : dflt;
}

/* The options that change what ranks do to each other, hashed so ranks started with different ones refuse to run. */
static uint64_t ddl_opts_hash(const struct ddl_opts *o)
{
	char s[512];
	int n = snprintf(s, sizeof s, "%d %d %lld %.9g %.9g %d %d %d %d %.9g", o->ranks, o->layers,
	                 o->params, o->bucket_mb, o->input_mb, o->overlap, (int)o->algo,
	                 o->iterations, o->warmup, o->compute_ms);
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (int i = 0; i < n && i < (int)sizeof s; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

/* ------------------------------------------------------------------- layout */

/* First store round: who runs where, and whether all ranks run the same job. */
struct ddl_hello {
	char host[DDL_HOST_LEN];
	uint64_t config;
	int32_t pid, local_rank;
};

/* Which host each rank is on, from the host names the ranks report. */
struct ddl_layout {
	int world, nhosts;
	int per_host;   /* ranks on every host, or 0 when hosts differ */
	int max_per_host;
	int host_of[DDL_MAX_RANKS], local_of[DDL_MAX_RANKS], host_size[DDL_MAX_RANKS];
	char names[DDL_MAX_RANKS][DDL_HOST_LEN];
};

/* Hosts in order of their first rank; a rank's local index counts its host's lower ranks. */
static void ddl_layout_build(struct ddl_layout *L, int world, const struct ddl_hello *hello)
{
	memset(L, 0, sizeof *L);
	L->world = world;
	for (int r = 0; r < world; r++) {
		const char *n = hello[r].host;
		int h = 0;
		while (h < L->nhosts && strcmp(L->names[h], n))
			h++;
		if (h == L->nhosts)
			snprintf(L->names[L->nhosts++], DDL_HOST_LEN, "%s", n);
		L->host_of[r] = h;
		L->local_of[r] = L->host_size[h]++;
	}
	L->per_host = L->host_size[0];
	for (int h = 0; h < L->nhosts; h++) {
		if (L->host_size[h] != L->per_host)
			L->per_host = 0;
		if (L->host_size[h] > L->max_per_host)
			L->max_per_host = L->host_size[h];
	}
}

/* ---------------------------------------------------------------------- plan */

enum ddl_op { DDL_OP_ALL_REDUCE, DDL_OP_REDUCE_SCATTER, DDL_OP_ALL_GATHER };
static const char *const ddl_op_names[] = {"all_reduce", "reduce_scatter", "all_gather"};

enum ddl_comm_kind { DDL_COMM_WORLD, DDL_COMM_INTRA, DDL_COMM_INTER, DDL_COMM_KINDS };
static const char *const ddl_comm_names[] = {"world", "intra", "inter"};

/* One kind of communicator: every instance has the same shape. */
struct ddl_comm_plan {
	int used, size, hosts, instances;
	double bw; /* bytes/s of the slowest link of its ring */
};

/* Layers hi down to lo, in the order the backward pass finishes them. */
struct ddl_bucket {
	int hi, lo;
	size_t params, count; /* count: params padded to a multiple of the ranks per host (hierarchical) */
	int first_coll, ncoll;
};

struct ddl_coll {
	int bucket;
	enum ddl_op op;
	enum ddl_comm_kind comm;
	size_t count; /* NCCL's count: per-rank send count (all-gather), receive count (reduce-scatter) */
	double seconds;
	double start_s, end_s; /* in the planned schedule of a step (ddl_plan_schedule) */
};

/* The parts of a step as ddlprof-report attributes them on the device timeline. */
enum { DDL_PART_COMPUTE, DDL_PART_NET, DDL_PART_IC, DDL_PART_DATA, DDL_PART_IDLE, DDL_PARTS };

struct ddl_plan {
	struct ddl_bucket *b;
	struct ddl_coll *c;
	int nb, nc;
	struct ddl_comm_plan comm[DDL_COMM_KINDS];
	double intra_gbps, net_gbps, pcie_gbps;
	double layer_s, compute_s, copy_s, delay_s, intra_s, inter_s;
	size_t input_bytes;
	double step_s;            /* the planned step, with or without overlap */
	double parts[DDL_PARTS]; /* and its parts */
};

/* Transfer time at the planned bandwidth; bytes is count * 4 as NCCL counts it. */
static double ddl_coll_seconds(enum ddl_op op, double bytes, int n, double bw)
{
	if (n <= 1 || bw <= 0) /* bw 0: an unpaced link */
		return 0;
	if (op == DDL_OP_ALL_REDUCE)
		return 2.0 * (n - 1) / n * bytes / bw;
	return (double)(n - 1) / n * (bytes * n) / bw; /* the full buffer is bytes * n */
}

/* Buckets as DDP builds them: layers in reverse order, at most bucket_mb each, an oversize layer alone. */
static int ddl_plan_buckets(struct ddl_plan *p, const struct ddl_opts *o, int pad)
{
	double cap = o->bucket_mb * DDL_MIB, layer = (double)o->params * 4;
	p->b = calloc((size_t)o->layers, sizeof *p->b);
	if (!p->b)
		return -ENOMEM;
	for (int l = o->layers - 1; l >= 0; l--) {
		struct ddl_bucket *b = &p->b[p->nb - 1];
		if (p->nb == 0 || (double)b->params * 4 + layer > cap) {
			b = &p->b[p->nb++];
			b->hi = l;
		}
		b->lo = l;
		b->params += (size_t)o->params;
	}
	for (int i = 0; i < p->nb; i++)
		p->b[i].count = (p->b[i].params + (size_t)pad - 1) / (size_t)pad * (size_t)pad;
	return 0;
}

static void ddl_plan_add(struct ddl_plan *p, int bucket, enum ddl_op op, enum ddl_comm_kind k, size_t count)
{
	const struct ddl_comm_plan *cp = &p->comm[k];
	struct ddl_coll *c = &p->c[p->nc++];
	c->bucket = bucket;
	c->op = op;
	c->comm = k;
	c->count = count;
	c->seconds = ddl_coll_seconds(op, (double)count * 4, cp->size, cp->bw);
	if (cp->hosts > 1)
		p->inter_s += c->seconds;
	else
		p->intra_s += c->seconds;
}

/* The slower of two links in bytes/s, where 0 is an unpaced (endless) one. */
static double ddl_slowest(double a, double b)
{
	return a <= 0 ? b : b <= 0 ? a : a < b ? a : b;
}

/* The communicator kinds the algorithm uses; a step on a one-rank communicator is skipped. */
static void ddl_plan_comms(struct ddl_plan *p, const struct ddl_opts *o, const struct ddl_layout *L)
{
	double intra = p->intra_gbps * 1e9 / 8, net = p->net_gbps * 1e9 / 8;
	struct ddl_comm_plan *w = &p->comm[DDL_COMM_WORLD], *a = &p->comm[DDL_COMM_INTRA],
	                     *e = &p->comm[DDL_COMM_INTER];
	*w = (struct ddl_comm_plan){o->algo == DDL_ALGO_FLAT, L->world, L->nhosts, 1, intra};
	if (L->nhosts > 1) /* the ring crosses hosts; inside them it also has intra links */
		w->bw = L->max_per_host > 1 ? ddl_slowest(intra, net) : net;
	*a = (struct ddl_comm_plan){o->algo == DDL_ALGO_HIER && L->per_host > 1, L->per_host, 1,
	                            L->nhosts, intra};
	*e = (struct ddl_comm_plan){o->algo == DDL_ALGO_HIER && L->nhosts > 1, L->nhosts, L->nhosts,
	                            L->per_host, net};
}

/* The collectives of one step, bucket by bucket, in the order each rank issues them. */
static int ddl_plan_colls(struct ddl_plan *p, const struct ddl_opts *o, const struct ddl_layout *L)
{
	p->c = calloc((size_t)p->nb * 3, sizeof *p->c);
	if (!p->c)
		return -ENOMEM;
	for (int i = 0; i < p->nb; i++) {
		struct ddl_bucket *b = &p->b[i];
		size_t chunk = b->count / (size_t)(L->per_host ? L->per_host : 1);
		b->first_coll = p->nc;
		if (o->algo == DDL_ALGO_FLAT) {
			ddl_plan_add(p, i, DDL_OP_ALL_REDUCE, DDL_COMM_WORLD, b->count);
		} else {
			if (p->comm[DDL_COMM_INTRA].used)
				ddl_plan_add(p, i, DDL_OP_REDUCE_SCATTER, DDL_COMM_INTRA, chunk);
			if (p->comm[DDL_COMM_INTER].used)
				ddl_plan_add(p, i, DDL_OP_ALL_REDUCE, DDL_COMM_INTER, chunk);
			if (p->comm[DDL_COMM_INTRA].used)
				ddl_plan_add(p, i, DDL_OP_ALL_GATHER, DDL_COMM_INTRA, chunk);
		}
		b->ncoll = p->nc - b->first_coll;
	}
	return 0;
}

/*
 * The planned schedule of one step, from the start of the iteration, as
 * the device runs it: the host's data delay, the input copy, the forward
 * pass, the backward pass layer by layer in reverse. Bucket i's collectives
 * start on the communication stream when its last layer's backward kernel
 * is done (with overlap; after the whole backward pass without) and the
 * collectives before them are done, and each takes its planned seconds.
 * The step ends when compute and communication are both done.
 *
 * Its parts as ddlprof-report attributes them (DESIGN.md section 7): each
 * instant goes to the first of compute (kernels), network stall
 * (collectives on communicators across hosts), interconnect stall (inside
 * one host), data stall (the delay and the copy), idle, that covers it.
 * Returns 0 or -ENOMEM.
 */
static int ddl_plan_schedule(struct ddl_plan *p, const struct ddl_opts *o)
{
	int n = p->nc + 2;
	double(*iv)[2] = calloc((size_t)n, sizeof *iv);
	int *kind = calloc((size_t)n, sizeof *kind);
	if (!iv || !kind) {
		free(iv);
		free(kind);
		return -ENOMEM;
	}
	double c0 = p->delay_s + p->copy_s, fwd = c0 + o->layers * p->layer_s, c1 = c0 + p->compute_s;
	double comm = 0;
	for (int i = 0; i < p->nb; i++) {
		/* backward finishes layer l at fwd + (layers - l) * layer_s; bucket i ends with layer b->lo */
		double ready = o->overlap ? fwd + (o->layers - p->b[i].lo) * p->layer_s : c1;
		double t = ready > comm ? ready : comm;
		for (int k = 0; k < p->b[i].ncoll; k++) {
			struct ddl_coll *c = &p->c[p->b[i].first_coll + k];
			c->start_s = t;
			c->end_s = t += c->seconds;
		}
		comm = t;
	}
	p->step_s = c1 > comm ? c1 : comm;
	iv[0][0] = c0, iv[0][1] = c1, kind[0] = DDL_PART_COMPUTE;
	iv[1][0] = 0, iv[1][1] = c0, kind[1] = DDL_PART_DATA;
	for (int i = 0; i < p->nc; i++) {
		iv[i + 2][0] = p->c[i].start_s;
		iv[i + 2][1] = p->c[i].end_s;
		kind[i + 2] = p->comm[p->c[i].comm].hosts > 1 ? DDL_PART_NET : DDL_PART_IC;
	}
	/* cut the step at every interval end; each piece goes to the first part covering it */
	double *pts = calloc((size_t)(2 * n + 2), sizeof *pts);
	if (!pts) {
		free(iv);
		free(kind);
		return -ENOMEM;
	}
	int np = 0;
	pts[np++] = 0;
	pts[np++] = p->step_s;
	for (int i = 0; i < n; i++) {
		pts[np++] = iv[i][0];
		pts[np++] = iv[i][1];
	}
	for (int i = 1; i < np; i++) /* insertion sort: a few dozen points */
		for (int j = i; j > 0 && pts[j - 1] > pts[j]; j--) {
			double x = pts[j];
			pts[j] = pts[j - 1];
			pts[j - 1] = x;
		}
	memset(p->parts, 0, sizeof p->parts);
	for (int j = 0; j + 1 < np; j++) {
		double a = pts[j], b = pts[j + 1] < p->step_s ? pts[j + 1] : p->step_s;
		if (a < 0 || b <= a)
			continue;
		double mid = a + (b - a) / 2;
		int part = DDL_PART_IDLE;
		for (int i = 0; i < n; i++)
			if (iv[i][0] <= mid && mid < iv[i][1] && kind[i] < part)
				part = kind[i];
		p->parts[part] += b - a;
	}
	free(pts);
	free(iv);
	free(kind);
	return 0;
}

/* Everything a step is planned to cost. Returns 0 or -ENOMEM; hierarchical needs L->per_host. */
static int ddl_plan_build(struct ddl_plan *p, const struct ddl_opts *o, const struct ddl_layout *L)
{
	memset(p, 0, sizeof *p);
	p->intra_gbps = ddl_gbps(o->intra_gbps, "DDLEMU_INTRA_GBPS", DDL_EMU_INTRA_GBPS);
	p->net_gbps = ddl_gbps(o->net_gbps, "DDLEMU_NET_GBPS", DDL_EMU_NET_GBPS);
	p->pcie_gbps = ddl_gbps(o->pcie_gbps, "DDLEMU_PCIE_GBPS", DDL_EMU_PCIE_GBPS);
	p->layer_s = o->compute_ms / 1e3;
	p->compute_s = 2.0 * o->layers * p->layer_s;
	p->input_bytes = (size_t)llround(o->input_mb * DDL_MIB);
	p->copy_s = p->pcie_gbps > 0 ? (double)p->input_bytes * 8 / (p->pcie_gbps * 1e9) : 0;
	p->delay_s = o->data_ms / 1e3;
	ddl_plan_comms(p, o, L);
	int pad = o->algo == DDL_ALGO_HIER && L->per_host > 1 ? L->per_host : 1;
	int rc = ddl_plan_buckets(p, o, pad);
	if (!rc)
		rc = ddl_plan_colls(p, o, L);
	return rc ? rc : ddl_plan_schedule(p, o);
}

static void ddl_plan_free(struct ddl_plan *p)
{
	free(p->b);
	free(p->c);
}

/* Bytes of one step by the span of their communicator. */
static void ddl_plan_bytes(const struct ddl_plan *p, double *intra, double *inter)
{
	*intra = *inter = 0;
	for (int i = 0; i < p->nc; i++)
		*(p->comm[p->c[i].comm].hosts > 1 ? inter : intra) += (double)p->c[i].count * 4;
}

/* ----------------------------------------------------------------- plan JSON */

static void ddl_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void ddl_json_config(FILE *f, const struct ddl_opts *o, const struct ddl_plan *p)
{
	fprintf(f, "  \"config\": {\"ranks\": %d, \"ranks_per_host\": %d, \"layers\": %d, "
	           "\"params_per_layer\": %lld, \"compute_ms\": %.9g, ",
	        o->ranks, o->ranks_per_host, o->layers, o->params, o->compute_ms);
	if (o->flops_set)
		fprintf(f, "\"flops\": %.9g, \"gpu_tflops\": %.9g, ", o->flops, o->gpu_tflops);
	else
		fputs("\"flops\": null, \"gpu_tflops\": null, ", f);
	fprintf(f, "\"bucket_mb\": %.9g, \"overlap\": %s, \"input_mb\": %.9g, \"data_ms\": %.9g, "
	           "\"allreduce\": \"%s\", \"iterations\": %d, \"warmup\": %d, \"markers\": %s, "
	           "\"intra_gbps\": %.9g, \"net_gbps\": %.9g, \"pcie_gbps\": %.9g},\n",
	        o->bucket_mb, o->overlap ? "true" : "false", o->input_mb, o->data_ms,
	        o->algo == DDL_ALGO_HIER ? "hierarchical" : "flat", o->iterations, o->warmup,
	        o->markers ? "true" : "false", p->intra_gbps, p->net_gbps, p->pcie_gbps);
}

static void ddl_json_hosts(FILE *f, const struct ddl_layout *L)
{
	fprintf(f, "  \"nhosts\": %d,\n  \"ranks_per_host\": ", L->nhosts);
	if (L->per_host) /* null: the hosts hold different numbers of ranks */
		fprintf(f, "%d,\n  \"hosts\": [", L->per_host);
	else
		fputs("null,\n  \"hosts\": [", f);
	for (int h = 0; h < L->nhosts; h++) {
		fputs(h ? ",\n    {\"name\": " : "\n    {\"name\": ", f);
		ddl_json_str(f, L->names[h]);
		fputs(", \"ranks\": [", f);
		for (int r = 0, k = 0; r < L->world; r++)
			if (L->host_of[r] == h)
				fprintf(f, "%s%d", k++ ? ", " : "", r);
		fputs("]}", f);
	}
	fputs("\n  ],\n", f);
}

static void ddl_json_buckets(FILE *f, const struct ddl_plan *p)
{
	fputs("  \"buckets\": [", f);
	for (int i = 0; i < p->nb; i++) {
		const struct ddl_bucket *b = &p->b[i];
		fprintf(f, "%s\n    {\"index\": %d, \"layers\": [", i ? "," : "", i);
		for (int l = b->hi; l >= b->lo; l--)
			fprintf(f, "%s%d", l == b->hi ? "" : ", ", l);
		fprintf(f, "], \"params\": %zu, \"count\": %zu, \"bytes\": %zu}", b->params, b->count,
		        b->count * 4);
	}
	fputs("\n  ],\n", f);
}

/* The ranks of each instance of a communicator kind, as NCCL numbers them. */
static void ddl_json_groups(FILE *f, enum ddl_comm_kind k, const struct ddl_layout *L)
{
	int ngroups = k == DDL_COMM_WORLD ? 1 : k == DDL_COMM_INTRA ? L->nhosts : L->per_host;
	fputs("\"groups\": [", f);
	for (int g = 0; g < ngroups; g++) {
		fputs(g ? ", [" : "[", f);
		for (int r = 0, n = 0; r < L->world; r++) {
			int in = k == DDL_COMM_WORLD || (k == DDL_COMM_INTRA ? L->host_of[r] : L->local_of[r]) == g;
			if (in)
				fprintf(f, "%s%d", n++ ? ", " : "", r);
		}
		fputc(']', f);
	}
	fputc(']', f);
}

static void ddl_json_comms(FILE *f, const struct ddl_plan *p, const struct ddl_layout *L)
{
	fputs("  \"communicators\": [", f);
	for (int k = 0, n = 0; k < DDL_COMM_KINDS; k++) {
		const struct ddl_comm_plan *c = &p->comm[k];
		if (!c->used)
			continue;
		fprintf(f, "%s\n    {\"name\": \"%s\", \"size\": %d, \"hosts\": %d, \"span\": \"%s\", "
		           "\"instances\": %d, \"link_gbps\": %.9g, ",
		        n++ ? "," : "", ddl_comm_names[k], c->size, c->hosts, c->hosts > 1 ? "inter" : "intra",
		        c->instances, c->bw * 8 / 1e9);
		ddl_json_groups(f, (enum ddl_comm_kind)k, L);
		fputc('}', f);
	}
	fputs("\n  ],\n", f);
}

static void ddl_json_iteration(FILE *f, const struct ddl_plan *p)
{
	double data = p->copy_s + p->delay_s;
	fprintf(f, "  \"per_iteration\": {\n    \"compute_s\": %.9g, \"forward_s\": %.9g, \"backward_s\": %.9g,\n"
	           "    \"data_s\": %.9g, \"input_copy_s\": %.9g, \"data_delay_s\": %.9g, \"input_bytes\": %zu,\n"
	           "    \"intra_s\": %.9g, \"inter_s\": %.9g, \"transfer_s\": %.9g,\n"
	           "    \"serial_step_s\": %.9g,\n",
	        p->compute_s, p->compute_s / 2, p->compute_s / 2, data, p->copy_s, p->delay_s,
	        p->input_bytes, p->intra_s, p->inter_s, p->intra_s + p->inter_s,
	        p->compute_s + data + p->intra_s + p->inter_s);
	fprintf(f, "    \"expected_iteration_s\": %.9g,\n    \"expected_parts\": {\"compute_s\": %.9g, "
	           "\"data_stall_s\": %.9g, \"interconnect_stall_s\": %.9g, \"network_stall_s\": %.9g, "
	           "\"idle_s\": %.9g},\n    \"collectives\": [",
	        p->step_s, p->parts[DDL_PART_COMPUTE], p->parts[DDL_PART_DATA], p->parts[DDL_PART_IC],
	        p->parts[DDL_PART_NET], p->parts[DDL_PART_IDLE]);
	for (int i = 0; i < p->nc; i++) {
		const struct ddl_coll *c = &p->c[i];
		const struct ddl_comm_plan *cp = &p->comm[c->comm];
		fprintf(f, "%s\n      {\"index\": %d, \"bucket\": %d, \"op\": \"%s\", \"count\": %zu, "
		           "\"bytes\": %zu, \"comm\": \"%s\", \"comm_size\": %d, \"hosts\": %d, "
		           "\"span\": \"%s\", \"seconds\": %.9g, \"start_s\": %.9g, \"end_s\": %.9g}",
		        i ? "," : "", i, c->bucket, ddl_op_names[c->op], c->count, c->count * 4,
		        ddl_comm_names[c->comm], cp->size, cp->hosts, cp->hosts > 1 ? "inter" : "intra",
		        c->seconds, c->start_s, c->end_s);
	}
	fputs("\n    ]\n  },\n", f);
}

static void ddl_json_ranks(FILE *f, const struct ddl_opts *o, const struct ddl_plan *p,
                           const struct ddl_layout *L)
{
	double intra, inter, steps = o->iterations + o->warmup;
	ddl_plan_bytes(p, &intra, &inter);
	fputs("  \"ranks\": [", f);
	for (int r = 0; r < L->world; r++) {
		fprintf(f, "%s\n    {\"rank\": %d, \"host\": ", r ? "," : "", r);
		ddl_json_str(f, L->names[L->host_of[r]]);
		fprintf(f, ", \"local_index\": %d,\n     \"per_iteration\": {\"collectives\": %d, "
		           "\"bytes\": %.0f, \"intra_bytes\": %.0f, \"inter_bytes\": %.0f},\n"
		           "     \"run\": {\"iterations\": %.0f, \"collectives\": %.0f, \"bytes\": %.0f, "
		           "\"intra_bytes\": %.0f, \"inter_bytes\": %.0f}}",
		        L->local_of[r], p->nc, intra + inter, intra, inter, steps, p->nc * steps,
		        (intra + inter) * steps, intra * steps, inter * steps);
	}
	fputs("\n  ]\n", f);
}

/*
 * The ground truth for tests, written once by rank 0 into fd (which it
 * closes). Every rank issues the same collectives, so one list serves all.
 * Schema ddlsynth-plan/1 (fields are added, never renamed): config, hosts,
 * buckets, communicators, ranks, and per_iteration with
 *
 *   compute_s, forward_s, backward_s   kernel time of a step
 *   data_s = input_copy_s + data_delay_s, input_bytes
 *   intra_s, inter_s, transfer_s       collective time inside / across hosts
 *   serial_step_s                      all of these one after the other
 *   expected_iteration_s               the step of ddl_plan_schedule, with
 *                                      or without overlap
 *   expected_parts {compute_s, data_stall_s, interconnect_stall_s,
 *                   network_stall_s, idle_s}
 *                                      that step split as ddlprof-report
 *                                      splits it (without overlap: compute_s,
 *                                      data_s, intra_s, inter_s and 0)
 *   collectives[]                      each with its seconds, and start_s
 *                                      and end_s in the planned step
 *
 * Returns 0 or a negative errno.
 */
static int ddl_plan_write(int fd, const struct ddl_opts *o, const struct ddl_plan *p,
                          const struct ddl_layout *L)
{
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int e = errno;
		close(fd);
		return -e;
	}
	fprintf(f, "{\n  \"schema\": \"ddlsynth-plan/1\",\n  \"generator\": \"ddlsynth %s\",\n"
	           "  \"build\": \"%s\",\n",
	        DDLPROF_VERSION, DDL_BUILD);
	ddl_json_config(f, o, p);
	ddl_json_hosts(f, L);
	ddl_json_buckets(f, p);
	ddl_json_comms(f, p, L);
	ddl_json_iteration(f, p);
	ddl_json_ranks(f, o, p, L);
	fputs("}\n", f);
	int bad = ferror(f);
	if (fclose(f) || bad)
		return -(errno ? errno : EIO);
	return 0;
}

/* ---------------------------------------------------------------- TCP store */

static double ddl_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void ddl_sleep(double s)
{
	struct timespec t = {(time_t)s, (long)((s - floor(s)) * 1e9)};
	while (nanosleep(&t, &t) && errno == EINTR)
		;
}

/* Sleeps until ddl_now() reaches t (an absolute deadline: interruptions add nothing). */
static void ddl_sleep_until(double t)
{
	struct timespec ts = {(time_t)t, (long)((t - floor(t)) * 1e9)};
	if (ts.tv_nsec >= 1000000000L)
		ts.tv_nsec = 999999999L;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Waits for fd to be ready for ev until deadline. Returns 0 or -ETIMEDOUT / -errno. */
static int ddl_wait_fd(int fd, short ev, double deadline)
{
	for (;;) {
		double left = deadline - ddl_now();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = {fd, ev, 0};
		int n = poll(&p, 1, (int)(left * 1000) + 1);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

static int ddl_io_all(int fd, void *buf, size_t n, int out, double deadline)
{
	char *p = buf;
	while (n > 0) {
		int rc = ddl_wait_fd(fd, out ? POLLOUT : POLLIN, deadline);
		if (rc)
			return rc;
		ssize_t k = out ? send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT) : recv(fd, p, n, MSG_DONTWAIT);
		if (k == 0)
			return -ECONNRESET; /* the peer went away */
		if (k < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (k > 0) {
			p += k;
			n -= (size_t)k;
		}
	}
	return 0;
}

/* Rank 0 holds one connection per other rank; the others one to rank 0. */
struct ddl_store {
	int rank, world;
	int fd[DDL_MAX_RANKS];
	double deadline;
};

/* What a rank says first: who it is, so rank 0 can file the connection. */
struct ddl_intro {
	char magic[8];
	int32_t rank, world;
};
#define DDL_STORE_MAGIC "ddlsyn1"

/* Listens on every address, or on loopback only when the job is all on this machine. */
static int ddl_store_listen(const char *addr, int port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_ANY);
	if (!strcmp(addr, "localhost") || !strncmp(addr, "127.", 4))
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0)
		return -errno;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, DDL_MAX_RANKS)) {
		int e = errno;
		close(s);
		return -e;
	}
	return s;
}

/* Accepts every other rank and files it by the rank it names. Returns 0 or a negative errno. */
static int ddl_store_accept(struct ddl_store *st, int ls)
{
	for (int got = 1; got < st->world; got++) {
		int rc = ddl_wait_fd(ls, POLLIN, st->deadline);
		if (rc)
			return rc;
		int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			return -errno;
		struct ddl_intro in;
		rc = ddl_io_all(fd, &in, sizeof in, 0, st->deadline);
		if (rc || memcmp(in.magic, DDL_STORE_MAGIC, 8) || in.world != st->world || in.rank < 1 ||
		    in.rank >= st->world || st->fd[in.rank] >= 0) {
			close(fd);
			return rc ? rc : -EPROTO;
		}
		st->fd[in.rank] = fd;
	}
	return 0;
}

/* Connects to rank 0, retrying while it is not listening yet. Returns an fd or a negative errno. */
static int ddl_store_connect(const char *addr, int port, double deadline)
{
	struct addrinfo hint = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai = NULL;
	char ps[16];
	snprintf(ps, sizeof ps, "%d", port);
	int rc = getaddrinfo(addr, ps, &hint, &ai);
	if (rc)
		return -EHOSTUNREACH;
	int fd = -ETIMEDOUT;
	while (ddl_now() < deadline) {
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s >= 0 && connect(s, ai->ai_addr, ai->ai_addrlen) == 0) {
			fd = s;
			break;
		}
		if (s >= 0)
			close(s);
		ddl_sleep(0.02);
	}
	freeaddrinfo(ai);
	return fd;
}

/* Joins the store at addr:port. Returns 0 or a negative errno. */
static int ddl_store_open(struct ddl_store *st, int rank, int world, const char *addr, int port,
                          int timeout_s)
{
	st->rank = rank;
	st->world = world;
	st->deadline = ddl_now() + (timeout_s > 0 ? timeout_s : 1e9);
	for (int i = 0; i < DDL_MAX_RANKS; i++)
		st->fd[i] = -1;
	if (world == 1)
		return 0;
	if (rank == 0) {
		int ls = ddl_store_listen(addr, port);
		if (ls < 0)
			return ls;
		int rc = ddl_store_accept(st, ls);
		close(ls);
		return rc;
	}
	st->fd[0] = ddl_store_connect(addr, port, st->deadline);
	if (st->fd[0] < 0)
		return st->fd[0];
	struct ddl_intro in = {DDL_STORE_MAGIC, rank, world};
	return ddl_io_all(st->fd[0], &in, sizeof in, 1, st->deadline);
}

/* Every rank's n bytes into all[world * n], in rank order. Returns 0 or a negative errno. */
static int ddl_store_allgather(struct ddl_store *st, const void *mine, size_t n, void *all)
{
	char *a = all;
	memcpy(a + (size_t)st->rank * n, mine, n);
	if (st->world == 1)
		return 0;
	if (st->rank != 0) {
		int rc = ddl_io_all(st->fd[0], (void *)mine, n, 1, st->deadline);
		return rc ? rc : ddl_io_all(st->fd[0], all, n * (size_t)st->world, 0, st->deadline);
	}
	for (int r = 1; r < st->world; r++) {
		int rc = ddl_io_all(st->fd[r], a + (size_t)r * n, n, 0, st->deadline);
		if (rc)
			return rc;
	}
	for (int r = 1; r < st->world; r++) {
		int rc = ddl_io_all(st->fd[r], all, n * (size_t)st->world, 1, st->deadline);
		if (rc)
			return rc;
	}
	return 0;
}

static void ddl_store_close(struct ddl_store *st)
{
	for (int i = 0; i < DDL_MAX_RANKS; i++)
		if (st->fd[i] >= 0)
			close(st->fd[i]);
}

/* ---------------------------------------------------------------------- rank */

/* Where this process sits in a job started by someone else. */
struct ddl_env {
	int rank, world, local_rank, port;
	const char *addr, *source;
};

static int ddl_env_int(const char *name, int dflt)
{
	const char *v = getenv(name);
	char *end;
	long x = v && *v ? strtol(v, &end, 10) : -1;
	return v && *v && !*end && x >= 0 && x < INT_MAX ? (int)x : dflt;
}

/* A store port for launchers that give none: one per job id, so two jobs on a node differ. */
static int ddl_env_job_port(void)
{
	const char *ids[] = {"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "SLURM_JOB_ID", "SLURM_STEP_ID"};
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
		for (const char *v = getenv(ids[i]); v && *v; v++)
			h = (h ^ (unsigned char)*v) * 1099511628211ull;
	return 20000 + (int)(h % 20000);
}

/* Returns 1 when this process is one rank of a job (e filled), 0 when it should launch the job. */
static int ddl_env_detect(struct ddl_env *e)
{
	static const struct {
		const char *rank, *size, *local, *source;
	} kinds[] = {
		{"RANK", "WORLD_SIZE", "LOCAL_RANK", "torchrun-style environment"},
		{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "mpirun"},
		{"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "srun"},
	};
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		e->rank = ddl_env_int(kinds[i].rank, -1);
		e->world = ddl_env_int(kinds[i].size, -1);
		if (e->rank < 0 || e->world < 1)
			continue;
		e->local_rank = ddl_env_int(kinds[i].local, e->rank);
		e->source = kinds[i].source;
		e->addr = getenv("MASTER_ADDR") && *getenv("MASTER_ADDR") ? getenv("MASTER_ADDR") : "127.0.0.1";
		e->port = ddl_env_int("MASTER_PORT", i == 0 ? -1 : ddl_env_job_port());
		return 1;
	}
	return 0;
}

/* This rank's numbers, for the messages that end it. */
static int ddl_me = -1;

static void __attribute__((noreturn, format(printf, 1, 2))) ddl_die(const char *fmt, ...)
{
	va_list ap;
	if (ddl_me >= 0)
		fprintf(stderr, "ddlsynth: rank %d: ", ddl_me);
	else
		fputs("ddlsynth: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void ddl_cuda(cudaError_t e, const char *what)
{
	if (e != cudaSuccess)
		ddl_die("%s: %s", what, cudaGetErrorString(e));
}

static void ddl_nccl(ncclResult_t r, const char *what)
{
	if (r != ncclSuccess)
		ddl_die("%s: %s", what, ncclGetErrorString(r));
}

/* Second round: the unique ids of the communicators this rank leads (zero where it leads none). */
struct ddl_ids {
	ncclUniqueId id[DDL_COMM_KINDS];
};

/* The host name the profiler and the emulation use for this process. */
static void ddl_host_name(char *out, size_t cap)
{
	const char *v = getenv("DDLPROF_HOST");
	if (v && *v) {
		snprintf(out, cap, "%s", v);
		return;
	}
	if (gethostname(out, cap) != 0)
		snprintf(out, cap, "localhost");
	out[cap - 1] = 0;
}

/* Everything one rank holds on the device and in NCCL. */
struct ddl_rank {
	int rank, world;
	struct ddl_layout L;
	struct ddl_plan p;
	cudaStream_t compute, comm;
	cudaEvent_t *ev; /* one per bucket: its last backward kernel is done */
	cudaEvent_t bwd_done;
	float **grad;    /* one buffer per bucket, the layers' gradients as views (DDP's gradient_as_bucket_view) */
	float *scratch, *input_d;
	void *input_h;   /* pinned */
	ncclComm_t nc[DDL_COMM_KINDS];
	int nc_rank[DDL_COMM_KINDS];
	long colls;      /* collectives issued so far */
	int slow_now;    /* this step is one of --slow-steps */
	long hang_at;    /* --hang-at on the --hang-rank, else 0 */
};

/* Is rank r the one that creates the unique id of its instance of kind k? */
static int ddl_leads(const struct ddl_layout *L, int r, enum ddl_comm_kind k)
{
	if (k == DDL_COMM_WORLD)
		return r == 0;
	if (k == DDL_COMM_INTRA)
		return L->local_of[r] == 0;
	return L->host_of[r] == 0;
}

/* Is rank r in the same instance of kind k as rank me? */
static int ddl_same_group(const struct ddl_layout *L, int r, int me, enum ddl_comm_kind k)
{
	if (k == DDL_COMM_WORLD)
		return 1;
	if (k == DDL_COMM_INTRA)
		return L->host_of[r] == L->host_of[me];
	return L->local_of[r] == L->local_of[me];
}

/* Second round and ncclCommInitRank for every kind in use, in one order on every rank. */
static void ddl_rank_comms(struct ddl_rank *R, struct ddl_store *st)
{
	struct ddl_ids mine, *all = calloc((size_t)R->world, sizeof *all);
	if (!all)
		ddl_die("out of memory");
	memset(&mine, 0, sizeof mine);
	for (int k = 0; k < DDL_COMM_KINDS; k++)
		if (R->p.comm[k].used && ddl_leads(&R->L, R->rank, (enum ddl_comm_kind)k))
			ddl_nccl(ncclGetUniqueId(&mine.id[k]), "ncclGetUniqueId");
	int rc = ddl_store_allgather(st, &mine, sizeof mine, all);
	if (rc)
		ddl_die("exchanging NCCL ids through the store: %s", strerror(-rc));
	for (int k = 0; k < DDL_COMM_KINDS; k++) {
		if (!R->p.comm[k].used)
			continue;
		int lead = 0;
		while (!(ddl_same_group(&R->L, lead, R->rank, (enum ddl_comm_kind)k) &&
		         ddl_leads(&R->L, lead, (enum ddl_comm_kind)k)))
			lead++;
		R->nc_rank[k] = k == DDL_COMM_WORLD ? R->rank : k == DDL_COMM_INTRA ? R->L.local_of[R->rank]
		                                                                    : R->L.host_of[R->rank];
		ddl_nccl(ncclCommInitRank(&R->nc[k], R->p.comm[k].size, all[lead].id[k], R->nc_rank[k]),
		         "ncclCommInitRank");
	}
	free(all);
}

/*
 * First round: host names and configurations, then the layout and the plan.
 * Every rank reaches the same verdict from the same data; rank 0 says why.
 */
static void ddl_rank_meet(struct ddl_rank *R, struct ddl_store *st, const struct ddl_opts *o,
                          const struct ddl_env *e)
{
	struct ddl_hello mine, *all = calloc((size_t)R->world, sizeof *all);
	if (!all)
		ddl_die("out of memory");
	memset(&mine, 0, sizeof mine);
	ddl_host_name(mine.host, DDL_EMU_HOST_MAX + 1); /* as the emulation and the traces keep it */
	mine.config = ddl_opts_hash(o);
	mine.pid = (int32_t)getpid();
	mine.local_rank = e->local_rank;
	int rc = ddl_store_allgather(st, &mine, sizeof mine, all);
	if (rc)
		ddl_die("exchanging host names through the store: %s", strerror(-rc));
	for (int r = 1; r < R->world; r++)
		if (all[r].config != all[0].config) {
			if (R->rank == 0)
				fprintf(stderr, "ddlsynth: rank %d was started with other options than rank 0\n", r);
			exit(1);
		}
	ddl_layout_build(&R->L, R->world, all);
	free(all);
	if (o->algo == DDL_ALGO_HIER && !R->L.per_host) {
		if (R->rank == 0)
			fprintf(stderr, "ddlsynth: --allreduce hierarchical needs the same number of ranks on "
			                "every host; these %d hosts differ\n", R->L.nhosts);
		exit(1);
	}
	if (ddl_plan_build(&R->p, o, &R->L))
		ddl_die("out of memory");
}

static void *ddl_dev_alloc(size_t bytes)
{
	void *p = NULL;
	ddl_cuda(cudaMalloc(&p, bytes ? bytes : 4), "cudaMalloc");
	return p;
}

/* Streams, events, gradient buckets filled with rank + 1 (so a reduction can be checked), input buffers. */
static void ddl_rank_alloc(struct ddl_rank *R)
{
	ddl_cuda(cudaStreamCreate(&R->compute), "cudaStreamCreate");
	ddl_cuda(cudaStreamCreate(&R->comm), "cudaStreamCreate");
	ddl_cuda(cudaEventCreateWithFlags(&R->bwd_done, cudaEventDisableTiming), "cudaEventCreate");
	R->ev = calloc((size_t)R->p.nb, sizeof *R->ev);
	R->grad = calloc((size_t)R->p.nb, sizeof *R->grad);
	if (!R->ev || !R->grad)
		ddl_die("out of memory");
	for (int i = 0; i < R->p.nb; i++) {
		size_t n = R->p.b[i].count;
		float *h = malloc(n * sizeof *h);
		if (!h)
			ddl_die("out of memory");
		for (size_t k = 0; k < n; k++)
			h[k] = (float)(R->rank + 1);
		ddl_cuda(cudaEventCreateWithFlags(&R->ev[i], cudaEventDisableTiming), "cudaEventCreate");
		R->grad[i] = ddl_dev_alloc(n * sizeof(float));
		ddl_cuda(cudaMemcpy(R->grad[i], h, n * sizeof *h, cudaMemcpyHostToDevice), "cudaMemcpy");
		free(h);
	}
	R->scratch = ddl_dev_alloc(ddk_scratch_floats() * sizeof(float));
	if (R->p.input_bytes) {
		R->input_d = ddl_dev_alloc(R->p.input_bytes);
		ddl_cuda(cudaMallocHost(&R->input_h, R->p.input_bytes), "cudaMallocHost");
		memset(R->input_h, 1, R->p.input_bytes);
	}
}

/* One planned collective, in place on its bucket, on the communication
 * stream; or, for --hang-rank before its --hang-at-th, a stop for good. */
static void ddl_rank_coll(struct ddl_rank *R, const struct ddl_coll *c)
{
	if (++R->colls == R->hang_at) {
		fprintf(stderr, "ddlsynth: rank %d: stopping before its collective %ld for good (--hang-rank)\n",
		        R->rank, R->colls);
		for (;;)
			pause();
	}
	float *buf = R->grad[c->bucket];
	ncclComm_t comm = R->nc[c->comm];
	/* hierarchical: this rank's slice of the bucket after the reduce-scatter */
	float *mine = buf + (R->p.comm[DDL_COMM_INTRA].used ? c->count * (size_t)R->nc_rank[DDL_COMM_INTRA] : 0);
	switch (c->op) {
	case DDL_OP_ALL_REDUCE:
		if (c->comm == DDL_COMM_WORLD)
			mine = buf;
		ddl_nccl(ncclAllReduce(mine, mine, c->count, ncclFloat, ncclSum, comm, R->comm), "ncclAllReduce");
		break;
	case DDL_OP_REDUCE_SCATTER:
		ddl_nccl(ncclReduceScatter(buf, mine, c->count, ncclFloat, ncclSum, comm, R->comm),
		         "ncclReduceScatter");
		break;
	case DDL_OP_ALL_GATHER:
		ddl_nccl(ncclAllGather(mine, buf, c->count, ncclFloat, comm, R->comm), "ncclAllGather");
		break;
	}
}

/* Bucket b's collectives once its layers' gradients exist (after the event on the compute stream). */
static void ddl_rank_bucket(struct ddl_rank *R, int b, cudaEvent_t ready)
{
	if (ready)
		ddl_cuda(cudaStreamWaitEvent(R->comm, ready, 0), "cudaStreamWaitEvent");
	for (int i = 0; i < R->p.b[b].ncoll; i++)
		ddl_rank_coll(R, &R->p.c[R->p.b[b].first_coll + i]);
}

/* Forward, then backward in reverse with each bucket's all-reduce as DDP launches it. */
static void ddl_rank_passes(struct ddl_rank *R, const struct ddl_opts *o)
{
	uint64_t ns = (uint64_t)llround(R->p.layer_s * 1e9 * (R->rank == o->slow_rank || R->slow_now ? o->slow_factor : 1));
	for (int l = 0; l < o->layers; l++)
		ddl_cuda(ddk_compute(R->compute, ns, R->scratch), "ddk_compute (forward)");
	int b = 0;
	for (int l = o->layers - 1; l >= 0; l--) {
		ddl_cuda(ddk_compute(R->compute, ns, R->scratch), "ddk_compute (backward)");
		if (l != R->p.b[b].lo)
			continue;
		if (o->overlap) {
			ddl_cuda(cudaEventRecord(R->ev[b], R->compute), "cudaEventRecord");
			ddl_rank_bucket(R, b, R->ev[b]);
		}
		b++;
	}
	if (!o->overlap) {
		ddl_cuda(cudaEventRecord(R->bwd_done, R->compute), "cudaEventRecord");
		for (int i = 0; i < R->p.nb; i++)
			ddl_rank_bucket(R, i, i == 0 ? R->bwd_done : NULL);
	}
}

/* One training step, host delay to the end of the last all-reduce; returns its seconds. */
static double ddl_rank_step(struct ddl_rank *R, const struct ddl_opts *o)
{
	double t0 = ddl_now();
	if (o->data_ms > 0) {
		/* the input pipeline: the device waits for the host; with --markers
		 * a "data" range, which ddlprof-report counts as data stall */
		if (o->markers && ddlprof_range_push)
			ddlprof_range_push("data");
		ddl_sleep_until(ddl_now() + o->data_ms / 1e3);
		if (o->markers && ddlprof_range_pop)
			ddlprof_range_pop();
	}
	if (R->p.input_bytes)
		ddl_cuda(cudaMemcpyAsync(R->input_d, R->input_h, R->p.input_bytes, cudaMemcpyHostToDevice,
		                         R->compute),
		         "cudaMemcpyAsync");
	ddl_rank_passes(R, o);
	ddl_cuda(cudaStreamSynchronize(R->comm), "cudaStreamSynchronize");
	ddl_cuda(cudaStreamSynchronize(R->compute), "cudaStreamSynchronize");
	return ddl_now() - t0;
}

/* After the first step every gradient is the sum of 1..world over the ranks; a few samples per bucket. */
static void ddl_rank_verify(struct ddl_rank *R)
{
	float want = (float)R->world * (float)(R->world + 1) / 2;
	for (int b = 0; b < R->p.nb; b++) {
		size_t n = R->p.b[b].count, at[3] = {0, n / 2, n - 1};
		for (int k = 0; k < 3; k++) {
			float got;
			ddl_cuda(cudaMemcpy(&got, R->grad[b] + at[k], sizeof got, cudaMemcpyDeviceToHost),
			         "cudaMemcpy");
			if (got != want)
				ddl_die("bucket %d element %zu is %g after the first all-reduce, not %g", b, at[k],
				        (double)got, (double)want);
		}
	}
}

static void ddl_rank_free(struct ddl_rank *R)
{
	for (int k = 0; k < DDL_COMM_KINDS; k++)
		if (R->nc[k])
			ncclCommDestroy(R->nc[k]);
	for (int i = 0; i < R->p.nb; i++) {
		cudaFree(R->grad[i]);
		cudaEventDestroy(R->ev[i]);
	}
	cudaFree(R->scratch);
	if (R->input_d) {
		cudaFree(R->input_d);
		cudaFreeHost(R->input_h);
	}
	cudaEventDestroy(R->bwd_done);
	cudaStreamDestroy(R->compute);
	cudaStreamDestroy(R->comm);
	free(R->ev);
	free(R->grad);
	ddl_plan_free(&R->p);
}

/* Rank 0 claims the plan file before anything starts, so a refusal costs nothing. Returns an fd, or -1. */
static int ddl_plan_open(const struct ddl_opts *o)
{
	int fd = open(o->plan_json, O_WRONLY | O_CREAT | O_CLOEXEC | (o->force ? O_TRUNC : O_EXCL), 0644);
	if (fd < 0 && errno == EEXIST)
		fprintf(stderr, "ddlsynth: %s exists; not overwriting it without --force\n", o->plan_json);
	else if (fd < 0)
		fprintf(stderr, "ddlsynth: %s: %s\n", o->plan_json, strerror(errno));
	return fd;
}

/* The measured steps, with markers around each; returns mean, min and max step seconds. */
static void ddl_rank_loop(struct ddl_rank *R, const struct ddl_opts *o, double *mean, double *lo, double *hi)
{
	double sum = 0;
	int steps = o->warmup + o->iterations;
	*lo = 1e300;
	*hi = 0;
	for (int it = 0; it < steps; it++) {
		if (it == (steps > 1) && R->rank == o->fail_rank) { /* the second step, once all is set up */
			fprintf(stderr, "ddlsynth: rank %d: failing on purpose (--fail-rank)\n", R->rank);
			exit(DDL_EXIT_INJECTED);
		}
		if (o->markers && ddlprof_range_push)
			ddlprof_range_push("iteration");
		R->slow_now = it >= o->slow_from && it <= o->slow_to;
		double s = ddl_rank_step(R, o);
		if (o->markers && ddlprof_range_pop)
			ddlprof_range_pop();
		if (it == 0)
			ddl_rank_verify(R);
		if (it < o->warmup)
			continue;
		sum += s;
		*lo = s < *lo ? s : *lo;
		*hi = s > *hi ? s : *hi;
	}
	*mean = sum / o->iterations;
}

/* One rank of the job from start to summary line. Returns the exit status. */
static int ddl_rank_run(const struct ddl_opts *o, const struct ddl_env *e)
{
	static struct ddl_rank R; /* the layout is large; keep it off the stack */
	R.rank = ddl_me = e->rank;
	R.world = e->world;
	if (e->rank >= e->world)
		ddl_die("RANK %d is not below WORLD_SIZE %d", e->rank, e->world);
	if (e->world > 1 && (e->port <= 0 || e->port > 65535))
		ddl_die("%s gives RANK and WORLD_SIZE but MASTER_PORT is missing or not a port", e->source);
	/* wake from the data delay and from waits on the device on time, as a dedicated trainer does */
	prctl(PR_SET_TIMERSLACK, 1000UL);
	int plan_fd = e->rank == 0 && o->plan_json ? ddl_plan_open(o) : -1;
	if (e->rank == 0 && o->plan_json && plan_fd < 0)
		return 1;
	int ndev = 0;
	ddl_cuda(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount");
	if (ndev < 1)
		ddl_die("no CUDA device");
#ifdef DDL_REAL_CUDA
	if (e->local_rank >= ndev) /* NCCL refuses two ranks of one communicator on one GPU */
		ddl_die("local rank %d, but this machine has %d GPUs", e->local_rank, ndev);
#endif
	ddl_cuda(cudaSetDevice(e->local_rank % ndev), "cudaSetDevice");

	struct ddl_store st;
	int rc = ddl_store_open(&st, e->rank, e->world, e->addr, e->port, o->timeout_s);
	if (rc)
		ddl_die("store at %s:%d: %s (--timeout %d s)", e->addr, e->port, strerror(-rc), o->timeout_s);
	ddl_rank_meet(&R, &st, o, e);
	if (plan_fd >= 0 && (rc = ddl_plan_write(plan_fd, o, &R.p, &R.L)))
		ddl_die("writing %s: %s", o->plan_json, strerror(-rc));
	ddl_rank_comms(&R, &st);
	ddl_rank_alloc(&R);
	R.hang_at = R.rank == o->hang_rank ? o->hang_at : 0;

	double mean, lo, hi;
	ddl_rank_loop(&R, o, &mean, &lo, &hi);
	/*
	 * Every rank has finished its steps before any tears down: on a shared
	 * machine one rank's exit work (freeing, closing, a profiler writing its
	 * trace) would otherwise slow another's last step. Through the store, so
	 * that the job's collectives stay the planned ones; a failure here only
	 * means a rank has gone, which its own exit status reports.
	 */
	char done = 1, *all = calloc((size_t)R.world, 1);
	st.deadline = ddl_now() + 30;
	if (all)
		ddl_store_allgather(&st, &done, 1, all);
	free(all);
	ddl_store_close(&st);
	if (!o->quiet)
		printf("ddlsynth: rank %d/%d on %s: mean step %.3f ms over %d iterations (min %.3f, max %.3f; "
		       "planned %.3f ms)\n",
		       R.rank, R.world, R.L.names[R.L.host_of[R.rank]], mean * 1e3, o->iterations, lo * 1e3,
		       hi * 1e3, R.p.step_s * 1e3);
	ddl_rank_free(&R);
	return 0;
}

/* ------------------------------------------------------------------ launcher */

static volatile sig_atomic_t ddl_got_signal;

static void ddl_on_signal(int sig)
{
	ddl_got_signal = sig;
}

/* A port nobody listens on now, for rank 0's store. Returns it or a negative errno. */
static int ddl_free_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t n = sizeof a;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0)
		return -errno;
	if (bind(s, (struct sockaddr *)&a, sizeof a) || getsockname(s, (struct sockaddr *)&a, &n)) {
		int e = errno;
		close(s);
		return -e;
	}
	close(s);
	return ntohs(a.sin_port);
}

static void ddl_setenv_int(const char *name, long v)
{
	char s[32];
	snprintf(s, sizeof s, "%ld", v);
	setenv(name, s, 1);
}

/* The child side of a launch: rank r's environment, then this program again. */
static void __attribute__((noreturn)) ddl_launch_child(const struct ddl_opts *o, char **argv, int r, int port,
                                                       const char *host_base)
{
	ddl_setenv_int("RANK", r);
	ddl_setenv_int("WORLD_SIZE", o->ranks);
	ddl_setenv_int("MASTER_PORT", port);
	setenv("MASTER_ADDR", "127.0.0.1", 1);
#ifdef DDL_REAL_CUDA
	(void)host_base;
	ddl_setenv_int("LOCAL_RANK", r); /* every rank is on this machine */
	ddl_setenv_int("LOCAL_WORLD_SIZE", o->ranks);
#else
	ddl_setenv_int("LOCAL_RANK", r % o->ranks_per_host);
	ddl_setenv_int("LOCAL_WORLD_SIZE", o->ranks_per_host);
	if (host_base) {
		char h[DDL_HOST_LEN + 16];
		snprintf(h, sizeof h, "%s-h%d", host_base, r / o->ranks_per_host);
		setenv("DDLPROF_HOST", h, 1);
	}
#endif
	execv("/proc/self/exe", argv);
	fprintf(stderr, "ddlsynth: cannot run myself again: %s\n", strerror(errno));
	_exit(127);
}

/* An exit status for a wait status: the code, or 128 + the signal. */
static int ddl_status_code(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
}

/* Stops every rank still running: SIGTERM, a grace second, then SIGKILL. */
static void ddl_stop_all(pid_t *pid, int n)
{
	for (int r = 0; r < n; r++)
		if (pid[r] > 0)
			kill(pid[r], SIGTERM);
	double end = ddl_now() + 1.0;
	for (int left = n; left > 0;) {
		left = 0;
		for (int r = 0; r < n; r++) {
			if (pid[r] <= 0)
				continue;
			if (waitpid(pid[r], NULL, WNOHANG) == pid[r])
				pid[r] = 0;
			else if (ddl_now() > end)
				kill(pid[r], SIGKILL);
			else
				left++;
		}
		if (left)
			ddl_sleep(0.01);
	}
	for (int r = 0; r < n; r++)
		if (pid[r] > 0)
			waitpid(pid[r], NULL, 0);
}

/* Reaps ranks until all are done, one fails, time runs out or a signal comes. Returns the job's status. */
static int ddl_launch_wait(const struct ddl_opts *o, pid_t *pid)
{
	double deadline = o->timeout_s > 0 ? ddl_now() + o->timeout_s : 1e300;
	for (int running = o->ranks; running > 0;) {
		int st;
		pid_t w = waitpid(-1, &st, WNOHANG);
		int r = 0;
		while (w > 0 && r < o->ranks && pid[r] != w)
			r++;
		if (w > 0 && r < o->ranks) {
			pid[r] = 0;
			running--;
			if (ddl_status_code(st) != 0) {
				fprintf(stderr, "ddlsynth: rank %d %s %d; stopping the others\n", r,
				        WIFEXITED(st) ? "exited with status" : "was killed by signal",
				        WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
				ddl_stop_all(pid, o->ranks);
				return ddl_status_code(st);
			}
			continue;
		}
		if (ddl_got_signal) {
			ddl_stop_all(pid, o->ranks);
			return 128 + ddl_got_signal;
		}
		if (ddl_now() > deadline) {
			fprintf(stderr, "ddlsynth: the job ran past --timeout %d s; stopping it\n", o->timeout_s);
			ddl_stop_all(pid, o->ranks);
			return DDL_EXIT_TIMEOUT;
		}
		ddl_sleep(0.01);
	}
	return 0;
}

/* Starts o->ranks copies of this program as the ranks of one job and waits for them. Returns the exit status. */
static int ddl_launch(const struct ddl_opts *o, char **argv)
{
	struct stat sb;
	if (o->plan_json && !o->force && stat(o->plan_json, &sb) == 0) {
		fprintf(stderr, "ddlsynth: %s exists; not overwriting it without --force\n", o->plan_json);
		return 1;
	}
	int port = ddl_free_port();
	if (port < 0) {
		fprintf(stderr, "ddlsynth: no free port for the store: %s\n", strerror(-port));
		return 1;
	}
	/* Each emulated host gets a name of its own unless the user chose one. */
	char base[DDL_HOST_LEN] = "";
	const char *set = getenv("DDLPROF_HOST");
	if (!set || !*set)
		ddl_host_name(base, sizeof base);
	base[DDL_EMU_HOST_MAX - 6] = 0; /* room for "-h1023" within what the emulation keeps */
	struct sigaction sa = {.sa_handler = ddl_on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	fflush(NULL);
	pid_t pid[DDL_MAX_RANKS] = {0};
	for (int r = 0; r < o->ranks; r++) {
		pid[r] = fork();
		if (pid[r] == 0)
			ddl_launch_child(o, argv, r, port, *base ? base : NULL);
		if (pid[r] < 0) {
			fprintf(stderr, "ddlsynth: fork: %s\n", strerror(errno));
			pid[r] = 0;
			ddl_stop_all(pid, r);
			return 1;
		}
	}
	return ddl_launch_wait(o, pid);
}

/* The emulation reads its link speeds from the environment; options win over inherited values. */
static void ddl_export_speeds(const struct ddl_opts *o)
{
	const struct {
		double v;
		const char *name;
	} s[] = {{o->intra_gbps, "DDLEMU_INTRA_GBPS"}, {o->net_gbps, "DDLEMU_NET_GBPS"},
	         {o->pcie_gbps, "DDLEMU_PCIE_GBPS"}};
	for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
		char v[64];
		if (s[i].v < 0)
			continue;
		snprintf(v, sizeof v, "%.17g", s[i].v);
		setenv(s[i].name, v, 1);
	}
}

/* --p2p-test: copies around a ring of this machine's GPUs (at most 8), in this one process. */
static int ddl_p2p_test(const struct ddl_opts *o)
{
	int ndev = 0;
	double gbps = 0;
	size_t bytes = (size_t)llround(o->p2p_mb * DDL_MIB);
	ddl_cuda(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount");
	ndev = ndev > 8 ? 8 : ndev;
	if (ndev < 1)
		ddl_die("no CUDA device");
	ddl_cuda(ddk_p2p_ring(ndev, bytes, 10, &gbps), "ddk_p2p_ring");
	printf("ddlsynth: p2p ring over %d GPU%s, %.0f MiB copies x 10: %.1f GB/s per link\n", ndev,
	       ndev > 1 ? "s" : "", o->p2p_mb, gbps);
	return 0;
}

int main(int argc, char **argv)
{
	struct ddl_opts o;
	struct ddl_env e;
	/* a rank runs as /proc/self/exe (ddl_launch_child), which Linux names
	 * "exe", and so would every thread it starts: its own name instead */
	prctl(PR_SET_NAME, program_invocation_short_name);
	ddl_opts_parse(&o, argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	ddl_export_speeds(&o);
	if (o.p2p_test)
		return ddl_p2p_test(&o);
	if (!ddl_env_detect(&e))
		return ddl_launch(&o, argv);
	if (o.ranks_set && o.ranks != e.world)
		ddl_usage_error("--ranks %d, but %s started %d ranks", o.ranks, e.source, e.world);
	o.ranks = e.world;
	if (!o.rph_set)
		o.ranks_per_host = e.world;
	return ddl_rank_run(&o, &e);
}
