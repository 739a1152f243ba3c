/*
 * ddlprof's options, one table (ddlprof/cli.h): the launcher's parser and
 * --help, the tests and the check of ddlprof(1)'s SYNOPSIS read it alike.
 */
#ifndef DDL_LAUNCHER_OPTS_H
#define DDL_LAUNCHER_OPTS_H

#include "ddlprof/cli.h"

#define DDL_LAUNCH_OPTIONS(X) \
	X(DDL_LAUNCH_O_OUTPUT, "output", 'o', "DIR", \
	  "trace directory (default ddlprof-trace), created 0700") \
	X(DDL_LAUNCH_O_TRACE, "trace", 0, "LIST", \
	  "families to trace: all, socket, cuda, nccl, nvtx, gloo, mpi, file, python (default all)") \
	X(DDL_LAUNCH_O_RUN_ID, "run-id", 0, "ID", \
	  "run id shared by every rank (default: the scheduler's job id)") \
	X(DDL_LAUNCH_O_FLUSH_MS, "flush-ms", 0, "N", \
	  "writer period in milliseconds, 1..60000 (default 100)") \
	X(DDL_LAUNCH_O_COMPRESS, "compress", 0, "MODE", \
	  "trace chunk codec: lz4 (default), zstd (smaller, slower to read) or none") \
	X(DDL_LAUNCH_O_PERTURB_NET, "perturb-net", 0, "SPEC", \
	  "slow the job's own sends, to measure its network sensitivity: delay=USEC each, or " \
	  "rate=RATE in bits a second (rate=100mbit, rate=1G; a bare number is Gbit/s)") \
	X(DDL_LAUNCH_O_KERNEL_SAMPLE, "kernel-sample", 0, "N", \
	  "time 1 kernel launch in N on the device with CUDA events (0 never; default 16; every " \
	  "launch when CUPTI runs)") \
	X(DDL_LAUNCH_O_CUPTI, "cupti", 0, "MODE", "auto (when a GPU driver is present), on or off") \
	X(DDL_LAUNCH_O_BACKTRACE, "backtrace", 0, "DEPTH", \
	  "record the call stack (DEPTH frames, 1..32; 0 off) of each communication and " \
	  "synchronisation call (needs libunwind)") \
	X(DDL_LAUNCH_O_PAPI, "papi", 0, "EVENTS", \
	  "read these PAPI counters per thread at each marker event, e.g. " \
	  "perf::TASK-CLOCK,perf::CONTEXT-SWITCHES (needs libpapi)") \
	X(DDL_LAUNCH_O_PYTHON, "python", 0, "MODE", \
	  "on (default): Python programs that import torch have their steps, data loader and " \
	  "torch.distributed calls recorded, with no change to the program; off: not (as " \
	  "DDLPROF_PYTHON=0)") \
	X(DDL_LAUNCH_O_DATA, "data", 0, "MODE", \
	  "real (default), or synthetic: each DataLoader serves its first batch again in place " \
	  "of loading, to measure the step without data stall (compare with ddlprof-report " \
	  "--compare)") \
	X(DDL_LAUNCH_O_HANG_TIMEOUT, "hang-timeout", 0, "SECONDS", \
	  "watchdog: a process blocked in one collective or blocking call this long says so on " \
	  "stderr, once, with the call and its communicator, and records it; the job goes on " \
	  "(1..1000000; default off)") \
	X(DDL_LAUNCH_O_QUIET, "quiet", 'q', NULL, \
	  "no messages from the launcher (the library still reports failures, one line each)") \
	DDL_CLI_HELP_VERSION(X, DDL_LAUNCH)

enum ddl_launch_opt {
	DDL_LAUNCH_O_FIRST = DDL_CLI_FIRST_ID - 1,
	DDL_LAUNCH_OPTIONS(DDL_CLI_ENUM)
};

#endif
