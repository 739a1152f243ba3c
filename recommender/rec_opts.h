/*
 * ddlprof-recommend's options, one table (ddlprof/cli.h): recommend.c's
 * parser and --help, the tests and the check of ddlprof-recommend(1)'s
 * SYNOPSIS read it alike.
 */
#ifndef DDL_REC_OPTS_H
#define DDL_REC_OPTS_H

#include "ddlprof/cli.h"

#define DDL_REC_OPTIONS(X) \
	X(DDL_REC_O_PROFILE, "profile", 0, "P", \
	  "a ddlprof-report/1 JSON, a directory with report.json, or a trace directory; " \
	  "repeatable") \
	X(DDL_REC_O_LAYERS, "layers", 0, "L", \
	  "layers of a job with no profile (one all-reduce each)") \
	X(DDL_REC_O_PARAMS, "params", 0, "P", "its parameters (gradients of 4 bytes each)") \
	X(DDL_REC_O_COMPUTE, "compute-ms", 0, "C", \
	  "its compute per step on one GPU (--measured-gpu, else the reference GPU)") \
	X(DDL_REC_O_ITER, "iterations", 0, "N", "steps of the whole job") \
	X(DDL_REC_O_EPOCHS, "epochs", 0, "E", \
	  "the job's length as epochs, with --samples-per-epoch and --batch") \
	X(DDL_REC_O_SAMPLES, "samples-per-epoch", 0, "S", "samples in one epoch") \
	X(DDL_REC_O_BATCH, "batch", 0, "B", "the global batch (per GPU with --scaling weak)") \
	X(DDL_REC_O_HOURS, "budget-hours", 0, "H", \
	  "the cheapest configuration that finishes within H hours") \
	X(DDL_REC_O_USD, "budget-usd", 0, "D", \
	  "the fastest configuration that costs at most D dollars (both budgets: the Pareto " \
	  "front within both, the cheapest recommended)") \
	X(DDL_REC_O_SPOT, "spot", 0, NULL, "spot prices (types without one are left out)") \
	X(DDL_REC_O_JSON, "json", 0, NULL, \
	  "the recommendation as ddlprof-recommend/1 JSON, on standard output or to -o FILE") \
	X(DDL_REC_O_OUTPUT, "output", 'o', "FILE", \
	  "write the recommendation to FILE (through a temporary file, renamed when complete) " \
	  "instead of standard output") \
	X(DDL_REC_O_FORCE, "force", 0, NULL, "overwrite an existing -o FILE") \
	X(DDL_REC_O_CATALOG, "catalog", 0, "FILE", \
	  "instance catalog, repeatable (default: the installed aws.json)") \
	X(DDL_REC_O_MAXI, "max-instances", 0, "N", \
	  "instances per configuration, 1..N (default 8)") \
	X(DDL_REC_O_INST, "instance", 0, "GLOBS", \
	  "only instance types matching these comma-separated patterns") \
	X(DDL_REC_O_PREC, "precision", 0, "P", \
	  "fp32 (default) or fp16: which relative GPU throughput scales compute") \
	X(DDL_REC_O_SCALING, "scaling", 0, "S", \
	  "strong: fixed global batch; weak: fixed batch per GPU (default: inferred from two " \
	  "profiles at different GPU counts, else strong)") \
	X(DDL_REC_O_ALGO, "algorithm", 0, "A", "all-reduce algorithm, ring (default) or tree") \
	X(DDL_REC_O_AR, "allreduce", 0, "A", \
	  "flat (one ring) or hierarchical (default: as measured)") \
	X(DDL_REC_O_MGPU, "measured-gpu", 0, "MODEL", \
	  "the GPU the profiles ran on (overrides job.gpu.model)") \
	X(DDL_REC_O_MINST, "measured-instance", 0, "TYPE", \
	  "the instance type they ran on (narrows the measured match)") \
	X(DDL_REC_O_GRAD, "grad-bytes", 0, "B", \
	  "gradient bytes all-reduced per step (overrides the measured)") \
	X(DDL_REC_O_DATA, "data-ms", 0, "D", \
	  "data stall per step of a job with no profile (default 0)") \
	X(DDL_REC_O_OVERLAP, "overlap", 0, "F", \
	  "fraction of communication hidden under compute, of a job with no profile (default 0)") \
	X(DDL_REC_O_MINMEM, "min-gpu-memory", 0, "GIB", \
	  "only instance types whose GPUs have at least GIB GiB") \
	X(DDL_REC_O_ALPHA, "alpha", 0, "S", \
	  "latency per ring step and collective, s (communication model; see MODEL in the man " \
	  "page)") \
	X(DDL_REC_O_BETA, "beta", 0, "X", \
	  "bandwidth term multiplier, 1 / the achieved fraction of the link (see MODEL)") \
	X(DDL_REC_O_SLURM, "slurm", 0, NULL, \
	  "sbatch options for the (first) profiled job: --nodes, --gres and " \
	  "--switches=COUNT@MAX_WAIT (without a run length: only these)") \
	X(DDL_REC_O_WAITS, "wait-history", 0, "FILE", \
	  "recent waits, demand,wait_s lines, for MAX_WAIT (default: a table)") \
	X(DDL_REC_O_SWTHR, "switch-threshold", 0, "F", \
	  "share of time lost across switches that asks for one (default 0.10)") \
	X(DDL_REC_O_NPS, "nodes-per-switch", 0, "K", \
	  "nodes under one leaf switch (default: the job fits under one)") \
	X(DDL_REC_O_QUIET, "quiet", 'q', NULL, \
	  "no notes on standard error (the assumptions; in the JSON all the same), and no " \
	  "progress line from the ddlprof-report run for a trace directory") \
	DDL_CLI_HELP_VERSION(X, DDL_REC)

enum ddl_rec_opt {
	DDL_REC_O_FIRST = DDL_CLI_FIRST_ID - 1,
	DDL_REC_OPTIONS(DDL_CLI_ENUM)
};

#endif
