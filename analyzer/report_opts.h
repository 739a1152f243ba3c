/*
 * ddlprof-report's options, one table (ddlprof/cli.h): report.c's parser
 * and --help, the tests and the check of ddlprof-report(1)'s SYNOPSIS
 * read it alike.
 */
#ifndef DDL_REPORT_OPTS_H
#define DDL_REPORT_OPTS_H

#include "ddlprof/cli.h"

#define DDL_REPORT_OPTIONS(X) \
	X(DDL_REPORT_O_FORMAT, "format", 0, "FORMAT", \
	  "text (the default), json, dump (every event), chrome (a timeline for Perfetto), html " \
	  "(one page) or csv (one line per iteration); the last of --format and its aliases counts") \
	X(DDL_REPORT_O_JSON, "json", 0, NULL, "the report as ddlprof-report/1 JSON (--format json)") \
	X(DDL_REPORT_O_DUMP, "dump", 0, NULL, "every event of every trace (--format dump)") \
	X(DDL_REPORT_O_CHROME, "chrome", 0, NULL, "a Chrome trace for Perfetto (--format chrome)") \
	X(DDL_REPORT_O_HTML, "html", 0, NULL, "one HTML page (--format html)") \
	X(DDL_REPORT_O_CSV, "csv", 0, NULL, "one CSV line per iteration of each process (--format csv)") \
	X(DDL_REPORT_O_RUN, "run", 0, "ID", "report the run ID instead of the newest") \
	X(DDL_REPORT_O_WARMUP, "warmup", 0, "N", \
	  "leave out the first N iterations of each process (default 5), never all of them") \
	X(DDL_REPORT_O_ITERATION_NAME, "iteration-name", 0, "GLOBS", \
	  "comma-separated patterns of the marker ranges that are iterations (default " \
	  "*step*,*iter*)") \
	X(DDL_REPORT_O_DATA_NAMES, "data-names", 0, "GLOBS", \
	  "patterns of the marker ranges that are data loading, data stall on GPU jobs (default " \
	  "data*,*dataload*,*data_load*,input*)") \
	X(DDL_REPORT_O_RANKS, "ranks", 0, "LIST", \
	  "the ranks (0,2,4-7, or all) whose lines the text shows (by default every rank's up to 16, " \
	  "else a summary and the slowest and fastest), or --chrome exports, with the processes " \
	  "that serve them") \
	X(DDL_REPORT_O_ITERATIONS, "iterations", 0, "A:B", \
	  "with --chrome, only the events that overlap iterations A to B (numbered as the report " \
	  "numbers them, the warm-up's included)") \
	X(DDL_REPORT_O_BW, "bw", 0, "LEVELS", \
	  "link rates of the network-sensitivity prediction, machine=RATE,rack=RATE,cluster=RATE " \
	  "(any of them) in bits a second: 100gbit, 400mbit, 10G; a bare number is Gbit/s " \
	  "(defaults 100, 25 and 10 Gbit/s)") \
	X(DDL_REPORT_O_BASELINE, "baseline", 0, "DIR", \
	  "the same job's traces without --perturb-net, set against this perturbed run") \
	X(DDL_REPORT_O_FAIL_IF, "fail-if", 0, "COND", \
	  "after writing the report, exit 3 when COND (metric op number, such as " \
	  "'network_stall_pct>30') holds; up to 16") \
	X(DDL_REPORT_O_COMPARE, "compare", 0, "RUN", \
	  "differential mode: single=DIR node=DIR multi=DIR, or real=DIR synthetic=DIR (the runs " \
	  "after the first as operands); text or --json") \
	X(DDL_REPORT_O_SQLITE, "sqlite", 0, "FILE", \
	  "also write the report as a SQLite database (schema in ddlprof-report(1)); alone, only " \
	  "the database is written") \
	X(DDL_REPORT_O_OUTPUT, "output", 'o', "FILE", \
	  "write to FILE (through a temporary file, renamed when complete) instead of standard " \
	  "output") \
	X(DDL_REPORT_O_FORCE, "force", 0, NULL, "overwrite an existing -o FILE") \
	X(DDL_REPORT_O_THREADS, "threads", 0, "N", \
	  "analyse the processes on N threads (default: the CPUs it may run on); the report is " \
	  "the same byte for byte with any N") \
	X(DDL_REPORT_O_MEMORY, "memory", 0, "SIZE", \
	  "keep at most SIZE bytes (k, M, G, either case: 1024s) of events and socket records in memory, " \
	  "reading the rest again from the traces as needed (default 256M; 0: nothing kept); the " \
	  "report is the same") \
	X(DDL_REPORT_O_QUIET, "quiet", 'q', NULL, \
	  "no progress line (shown on a terminal while reading takes over a second)") \
	DDL_CLI_HELP_VERSION(X, DDL_REPORT)

enum ddl_report_opt {
	DDL_REPORT_O_FIRST = DDL_CLI_FIRST_ID - 1,
	DDL_REPORT_OPTIONS(DDL_CLI_ENUM)
};

#endif
