/*
 * ddlprof-sim's options, one table (ddlprof/cli.h): sim.c's parser and
 * --help, the tests and the check of ddlprof-sim(1)'s SYNOPSIS read it
 * alike.
 */
#ifndef DDL_SIM_OPTS_H
#define DDL_SIM_OPTS_H

#include "ddlprof/cli.h"

#define DDL_SIM_OPTIONS(X) \
	X(DDL_SIM_O_TRACE, "trace", 0, "FILE", "job trace to replay") \
	X(DDL_SIM_O_FORMAT, "format", 0, "F", \
	  "the job trace's format: csv, tiresias, helios or philly (default: told from the " \
	  "file's start)") \
	X(DDL_SIM_O_CLUSTER, "cluster", 0, "RxMxG", \
	  "racks x machines per rack x GPUs per machine (default 4x32x8)") \
	X(DDL_SIM_O_BW, "bw", 0, "LEVELS", \
	  "link rates machine=RATE,rack=RATE,cluster=RATE (any of them) in bits a second: " \
	  "25gbit, 400mbit, 10G; a bare number is Gbit/s; rack and cluster scale the slowdowns") \
	X(DDL_SIM_O_POLICY, "policy", 0, "P", \
	  "scheduling policy: fifo (default), las, gandiva, dally or sensitivity") \
	X(DDL_SIM_O_LEASE, "lease", 0, "S", "GPU lease, s, 0.001..1e10 (default 300)") \
	X(DDL_SIM_O_RESTART_COST, "restart-cost", 0, "S", \
	  "checkpoint-and-restart cost, s, 0..1e10 (default 30)") \
	X(DDL_SIM_O_JSON, "json", 0, NULL, \
	  "the summary as ddlprof-sim/1 JSON, on standard output or to -o FILE") \
	X(DDL_SIM_O_OUTPUT, "output", 'o', "FILE", \
	  "write the summary (or --generate's trace) to FILE instead of standard output") \
	X(DDL_SIM_O_JOBS_OUT, "jobs-out", 0, "FILE", \
	  "per-job records: CSV when FILE ends in .csv, JSON lines else") \
	X(DDL_SIM_O_FORCE, "force", 0, NULL, "overwrite an existing -o or --jobs-out FILE") \
	X(DDL_SIM_O_SEED, "seed", 0, "N", \
	  "seed of --generate (the simulation draws no random numbers)") \
	X(DDL_SIM_O_STRICT, "strict", 0, NULL, "reject the trace on its first bad record") \
	X(DDL_SIM_O_CHECK, "check", 0, NULL, "verify the simulator's invariants while it runs") \
	X(DDL_SIM_O_PROFILES, "profiles", 0, "DIR", \
	  "slowdowns of a job's model from DIR/<model>.json, a ddlprof report") \
	X(DDL_SIM_O_GENERATE, "generate", 0, "N", \
	  "write a synthetic trace of N jobs, our CSV or --format philly") \
	X(DDL_SIM_O_LOAD, "load", 0, "F", \
	  "offered load of --generate, a fraction of the cluster above 0 and at most 1 (default " \
	  "0.85)") \
	X(DDL_SIM_O_VERBOSE, "verbose", 0, NULL, \
	  "one line for each job skipped (else one line per reason, with the count)") \
	X(DDL_SIM_O_QUIET, "quiet", 'q', NULL, \
	  "no progress line (shown on a terminal for runs over a second)") \
	DDL_CLI_HELP_VERSION(X, DDL_SIM)

enum ddl_sim_opt {
	DDL_SIM_O_FIRST = DDL_CLI_FIRST_ID - 1,
	DDL_SIM_OPTIONS(DDL_CLI_ENUM)
};

#endif
