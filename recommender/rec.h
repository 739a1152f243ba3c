/*
 * ddlprof-recommend's model of the world: the instance catalog (catalog.c),
 * the measured inputs taken from ddlprof-report/1 profiles or from a job's
 * structure (profile.c; a trace directory's report run by spawn.c), the
 * projection of one iteration onto a configuration (model.c), the search
 * over configurations and the decisions (search.c), and the outputs
 * (output.c). recommend.c is the command; slurm.c adds --slurm. See
 * ddlprof-recommend(1) for the equations and the formats.
 */
#ifndef DDL_REC_H
#define DDL_REC_H

#include <stddef.h>
#include <stdio.h>

/*
 * The catalog schema. Fields are added, never renamed, within one version;
 * a change that an older reader would misread (a renamed field, a changed
 * unit) bumps the number, and readers refuse numbers newer than theirs.
 */
#define DDL_CATALOG_SCHEMA "ddlprof-catalog/"
#define DDL_CATALOG_VERSION 1
#define DDL_RECOMMEND_SCHEMA "ddlprof-recommend/1"

enum ddl_link { DDL_LINK_NONE, DDL_LINK_PCIE, DDL_LINK_NVLINK, DDL_LINK_NVSWITCH };

struct ddl_gpu_model {
	char *model;          /* the catalog's key, e.g. "V100" */
	char **device_names;  /* CUDA device names it stands for */
	size_t ndevice_names;
	double fp32_rel;      /* throughput relative to the reference GPU */
	double fp16_rel;
	const char *file;     /* the catalog that defined it */
};

struct ddl_instance {
	char *cloud;
	char *name;
	int gpus;
	char *gpu_model;
	double gpu_memory_gib;
	enum ddl_link link;
	int link_gen;         /* NVLink generation, 0 when not given */
	double intra_gbs;     /* GB/s per GPU, one direction (1e9 bytes/s) */
	double network_gbps;  /* Gbit/s per instance (1e9 bits/s), or per link */
	int network_per_link; /* every ring across instances gets network_gbps (the emulation) */
	char *region;
	double on_demand;     /* USD per instance-hour */
	double spot;          /* USD per instance-hour; 0 when unknown */
	const char *file;
	const struct ddl_gpu_model *gpu; /* resolved after every catalog is loaded */
};

/* Coefficients of the communication model (model.c). */
struct ddl_comm_coef {
	double alpha_s;       /* latency per collective per ring step, seconds */
	double beta;          /* bandwidth term multiplier: 1 / achieved fraction of the link */
	double norm_p;        /* how the terms combine: (lat^p + bw^p)^(1/p); 1 adds them */
	char source[512];     /* "default", "catalog FILE" or "command line" */
};

struct ddl_catalog {
	struct ddl_gpu_model *gpus;
	size_t ngpus;
	struct ddl_instance *inst;
	size_t ninst;
	char **files;
	size_t nfiles;
	int have_coef;
	struct ddl_comm_coef coef; /* from the last catalog that gave a "model" */
};

/*
 * Parses one catalog held in memory (NAME names it in messages) and merges
 * it into CAT: a GPU model or an instance (same cloud and name) that is
 * already there is replaced. Returns 0, or -1 with one message in ERR that
 * names the file, the entry and the field. CAT stays consistent either way.
 */
int ddl_catalog_parse(struct ddl_catalog *cat, const char *name, const char *buf, size_t len,
                      char *err, size_t errlen);
/* The same from a file. */
int ddl_catalog_load(struct ddl_catalog *cat, const char *path, char *err, size_t errlen);
/*
 * After every file is merged: resolves each instance's GPU model. Returns
 * 0, or -1 with a message naming the instance whose model no catalog
 * defines.
 */
int ddl_catalog_finish(struct ddl_catalog *cat, char *err, size_t errlen);
/* The GPU model a measured device name stands for, or NULL. */
const struct ddl_gpu_model *ddl_catalog_gpu(const struct ddl_catalog *cat, const char *device);
void ddl_catalog_free(struct ddl_catalog *cat);
const char *ddl_link_name(enum ddl_link l);

/* Where a profile's bytes per iteration came from. */
enum ddl_bytes_src {
	DDL_BYTES_NONE,        /* not measured */
	DDL_BYTES_PER_ITER,    /* job.per_iteration */
	DDL_BYTES_COLLECTIVES, /* ranks[].collectives over the whole run */
	DDL_BYTES_SOCKETS,     /* processes[].network, wire bytes of a ring */
	DDL_BYTES_GIVEN,       /* --grad-bytes or --params */
};

/* The inputs of the projection, per rank and per iteration. */
struct ddl_profile {
	char *file;
	int ranks, hosts, gpus_per_host;
	char *gpu_device;     /* job.gpu.model as measured, or NULL */
	const struct ddl_gpu_model *gpu; /* NULL: the reference GPU (relative 1) */
	double iteration_s;   /* measured mean; 0 for a structural job */
	double compute_s, data_s, idle_s, ic_stall_s, net_stall_s, overlap_s;
	double overlap_frac;  /* of communication time hidden under compute */
	double grad_bytes;    /* all-reduce payload per iteration */
	double collectives;   /* collective calls per iteration (latency term) */
	int hierarchical;     /* measured with both intra and inter collectives */
	enum ddl_bytes_src bytes_src;
	int overlap_measured;
	int structural;       /* from --layers/--params, not measured */
	int layers;
};

/*
 * Reads a ddlprof-report/1 profile from PATH: a JSON file, a directory
 * holding report.json, or a trace directory, which is reported with
 * REPORT_BIN (ddlprof-report) first. Returns 0, or -1 with one message in
 * ERR naming the file and the field.
 */
int ddl_profile_load(struct ddl_profile *p, const char *path, const char *report_bin, char *err,
                     size_t errlen);
/* The same from JSON text already read; NAME names it in messages. */
int ddl_profile_parse(struct ddl_profile *p, const char *name, const char *buf, size_t len,
                      char *err, size_t errlen);
void ddl_profile_free(struct ddl_profile *p);

/*
 * Reading the report of a trace directory (spawn.c), for profile.c and
 * slurm.c. ddl_slurp_fd reads FD to its end into a buffer the caller
 * frees, *LEN bytes; NULL with errno when reading or memory failed, or
 * EFBIG once it holds MAX bytes.
 */
char *ddl_slurp_fd(int fd, size_t *len, size_t max);
/* Which step of running the report failed. */
enum ddl_spawn_step { DDL_SPAWN_OK, DDL_SPAWN_PIPE, DDL_SPAWN_START, DDL_SPAWN_READ };
/* Nonzero (ddlprof-recommend -q): the report runs with -q, no progress line. */
extern int ddl_spawn_quiet;
/*
 * Runs BIN --json -- DIR (BIN looked up in PATH unless it holds a '/'),
 * reads its standard output with ddl_slurp_fd (MAX) and waits for it.
 * Returns DDL_SPAWN_OK with *OUT (*LEN bytes, the caller frees it) and
 * *STATUS (waitpid's), or the step that failed with *ERRNUM (an errno):
 * DDL_SPAWN_PIPE or DDL_SPAWN_START, no child ran; DDL_SPAWN_READ, the
 * child was waited for (*STATUS set). *OUT is NULL unless DDL_SPAWN_OK.
 * The caller words the message and judges the status.
 */
int ddl_spawn_report(const char *bin, const char *dir, size_t max, char **out, size_t *len,
                     int *status, int *errnum);

enum ddl_scaling { DDL_STRONG, DDL_WEAK };
enum ddl_algo { DDL_RING, DDL_TREE };
enum ddl_allreduce { DDL_AR_AUTO, DDL_AR_FLAT, DDL_AR_HIER };

struct ddl_settings {
	int fp16;
	enum ddl_scaling scaling;
	enum ddl_algo algo;
	enum ddl_allreduce allreduce;
	struct ddl_comm_coef coef;
	int spot;
	int max_instances;
	double iterations;     /* fixed count, or 0 when epochs are given */
	double epochs, samples, batch;
	double budget_hours, budget_usd; /* 0: none */
	double min_gpu_mem;
	const char *instance_globs;
	const char *measured_instance;
};

/* One iteration projected onto one configuration. */
struct ddl_projection {
	double compute_s, data_s, idle_s;
	double ic_comm_s, net_comm_s; /* communication time, before overlap */
	double ic_stall_s, net_stall_s;
	double hidden_s;              /* communication run under compute */
	double iteration_s;
};

/* The projection of profile P onto COUNT instances of I (model.c). */
void ddl_model_project(const struct ddl_profile *p, const struct ddl_instance *i, int count,
                       const struct ddl_settings *s, struct ddl_projection *out);
/* The communication model's cost of one level: N participants, BYTES over BW bytes/s. */
double ddl_model_level(int n, double bytes, double bw, double collectives,
                       const struct ddl_settings *s);
/*
 * Of COMM seconds of communication projected for P's job with COMPUTE
 * seconds of compute, the seconds hidden under compute (model.c).
 */
double ddl_model_hidden(const struct ddl_profile *p, double comm, double compute);
/* The reference GPU's relative throughput is 1. */
double ddl_model_rel(const struct ddl_gpu_model *g, int fp16);

struct ddl_candidate {
	const struct ddl_instance *inst;
	int count, gpus;
	double iterations;
	struct ddl_projection proj;
	double usd_per_hour;   /* per instance */
	double est_hours, est_cost;
	int measured;          /* the iteration time is a measurement */
	int basis;             /* index of the profile it came from */
	int meets;             /* within every budget given */
	int pareto;
};

struct ddl_result {
	struct ddl_candidate *c; /* by cost, then time, then name, then count */
	size_t n;
	size_t skipped_spot, skipped_filter, skipped_batch;
	const struct ddl_candidate *rec;     /* NULL when nothing meets the budgets */
	const struct ddl_candidate *nearest; /* when rec is NULL */
	const char *objective;
	struct ddl_candidate **front; /* by time */
	size_t nfront;
};

/*
 * Builds every candidate (each instance type times 1..max_instances) from
 * the profiles, applies the budgets and finds the recommendation and the
 * Pareto front. Returns 0, or -1 when no configuration could be projected
 * (message in ERR).
 */
int ddl_search(const struct ddl_catalog *cat, struct ddl_profile *prof, size_t nprof,
               const struct ddl_settings *s, struct ddl_result *r, char *err, size_t errlen);
void ddl_result_free(struct ddl_result *r);
/* Whether a dominates b: no worse in time and cost, better in one. */
int ddl_dominates(const struct ddl_candidate *a, const struct ddl_candidate *b);

struct ddl_out_ctx {
	const struct ddl_catalog *cat;
	const struct ddl_profile *prof;
	size_t nprof;
	const struct ddl_settings *s;
	const struct ddl_result *r;
	const char *const *notes;
	size_t nnotes;
};

int ddl_out_text(const struct ddl_out_ctx *o, FILE *f);
int ddl_out_json(const struct ddl_out_ctx *o, FILE *f);

/*
 * --slurm (slurm.c): the sbatch options of network-locality delay
 * scheduling, Slurm's --switches=COUNT@MAX_WAIT, for a profiled job; the
 * rule is in ddlprof-recommend(1), SLURM.
 */
#define DDL_SLURM_WAIT_MIN 60   /* s, the shortest MAX_WAIT */
#define DDL_SLURM_WAIT_MAX 2400 /* s, the longest: 8 of ddlprof-sim's default 300 s leases */

struct ddl_slurm_opts {
	double threshold;     /* switch loss from which one leaf switch is asked for */
	int nodes_per_switch; /* 0: not given (the job is taken to fit under one) */
	const char *history;  /* --wait-history FILE, or NULL: the default table */
	double iterations;    /* the run's length, 0 when not given */
};

struct ddl_slurm {
	int nodes, tasks_per_node, demand;
	int switches;         /* COUNT; 0: no --switches */
	double wait_s;        /* MAX_WAIT when switches */
	double score, slow_rack, slow_cluster, iter_rack, iter_cluster; /* job.sensitivity */
	double loss, threshold; /* 1 - slow_rack / slow_cluster */
	int bucket_lo, bucket_hi; /* GPU demand bucket; hi 0: and up */
	char source[4200];    /* of the waits: "history FILE" or "default table" */
	int samples;
	double mean_s, sd_s, tuned_s; /* tuned = mean + 2 sd */
	double saved_s;       /* iterations x (T(cluster) - T(rack)); < 0 when not known */
	char reason[512];
};

/*
 * The options for profile P, whose report PATH names (as --profile gave
 * it; REPORT_BIN reports a trace directory). Returns 0, or -1 with ERR
 * naming the file and the field (a report without job.sensitivity) or the
 * line of the --wait-history file.
 */
int ddl_slurm_plan(const struct ddl_profile *p, const char *path, const char *report_bin,
                   const struct ddl_slurm_opts *o, struct ddl_slurm *s, char *err, size_t errlen);
/* The #SBATCH lines and, as comments, why. 0 or -1 on a write error. */
int ddl_slurm_text(const struct ddl_slurm *s, const char *file, FILE *f);
/* BASE (LEN bytes of ddlprof-recommend/1 JSON, or NULL for a document of
 * its own) with a "slurm" object added, to F. 0 or -1. */
int ddl_slurm_json(const struct ddl_slurm *s, const char *base, size_t len, FILE *f);

#endif
