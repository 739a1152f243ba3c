/*
 * ddlprof-report: reads trace directories and files, picks one run (the
 * newest, or --run ID), builds the report model and prints it in the chosen
 * format. Formats dispatch from a static table; the options are
 * report_opts.h's table, read and written out (-o) as every ddlprof
 * command does (ddlprof/cli.h).
 *
 * Exit status: 0 done; 1 bad input (a path that does not exist, a file that
 * is not a readable trace, damaged chunks, no traces), or the report could
 * not be written (memory included); 2 usage error; 3 a --fail-if condition
 * held (or could not be measured); 4 memory ran out and the report says it
 * is incomplete.
 * Truncated traces are reported, not an error: a killed job is a normal
 * thing to profile.
 */
#include <errno.h>
#include <malloc.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "progress.h"
#include "report.h"
#include "report_opts.h"

static const struct {
	const char *name;
	int (*out)(const struct ddl_report *, FILE *);
} ddl_formats[] = {
	{"text", ddl_out_text},
	{"json", ddl_out_json},
	{"dump", ddl_out_dump},
	{"chrome", ddl_out_chrome},
	{"html", ddl_out_html},
	{"csv", ddl_out_csv},
};

static const struct ddl_cli_opt ddl_opts[] = {DDL_REPORT_OPTIONS(DDL_CLI_OPT)};

static void ddl_usage(void)
{
	printf("usage: ddlprof-report [--json | --dump | --chrome | --html | --csv |\n"
	       "                       --format text|json|dump|chrome|html|csv] [--run ID]\n"
	       "                      [--warmup N] [--iteration-name GLOBS] [--data-names GLOBS]\n"
	       "                      [--bw machine=RATE,rack=RATE,cluster=RATE] [--fail-if COND]...\n"
	       "                      [--ranks LIST] [--iterations A:B]\n"
	       "                      [--baseline DIR] [-q] [-o FILE] [--sqlite FILE] [--force] DIR|FILE...\n"
	       "       ddlprof-report --compare single=DIR node=DIR multi=DIR [--json] [-o FILE]\n"
	       "       ddlprof-report --compare real=DIR synthetic=DIR [--json] [-o FILE]\n"
	       "Summarise ddlprof traces: each rank's iteration split into compute, data stall,\n"
	       "interconnect and network stall and idle; iterations, stragglers, GPU kernels and\n"
	       "collectives, network traffic and sensitivity.\n");
	ddl_cli_help(stdout, ddl_opts, sizeof ddl_opts / sizeof ddl_opts[0]);
	printf("See ddlprof-report(1).\n");
}

/*
 * --sqlite PATH: the database is written as -o writes a file, through a
 * temporary name beside it renamed over it once complete, and an existing
 * file is replaced only with --force; a symlink to a file stays a link,
 * its target replaced. A database is a file written by name: a device,
 * FIFO or socket is refused rather than written, as are a link to nothing
 * and the process's own descriptors (/dev/stdout: what the shell opened
 * would not be what is renamed). 0, or -1 with the one message said.
 */
static int ddl_write_sqlite(const struct ddl_report *r, const char *path, int force)
{
	struct ddl_cli_target tg;
	if (ddl_cli_own_fd(path)) {
		fprintf(stderr, "ddlprof-report: %s: a descriptor of this process; --sqlite writes a "
		        "database to a regular file\n", path);
		return -1;
	}
	if (ddl_cli_target_check("ddlprof-report", path, force, "--sqlite", &tg) < 0)
		return -1;
	if (tg.special || (tg.link && !tg.target)) {
		fprintf(stderr, "ddlprof-report: %s: %s; --sqlite writes a database to a regular file\n",
		        path, tg.special ? "not a regular file" : "a symbolic link to nothing");
		return -1;
	}
	char real[PATH_MAX], tmp[PATH_MAX + 32], err[512];
	const char *at = tg.link ? realpath(path, real) : path;
	int fd = at ? ddl_cli_tmp_create(at, 0600, tmp, sizeof tmp) : -1;
	if (fd < 0) {
		fprintf(stderr, "ddlprof-report: --sqlite %s: %s\n", path, strerror(errno));
		return -1;
	}
	close(fd); /* SQLite opens it by name: an empty file is a new database */
	int rc = ddl_out_sqlite(r, tmp, err, sizeof err);
	if (rc == 0 && rename(tmp, at) != 0) {
		snprintf(err, sizeof err, "%s", strerror(errno));
		rc = -1;
	}
	if (rc != 0) {
		unlink(tmp);
		fprintf(stderr, "ddlprof-report: cannot write %s: %s\n", path, err);
	}
	return rc;
}

/*
 * Whether FORMAT, with no -o, would flood a terminal (a Chrome trace of a
 * real job runs to megabytes of JSON, a page to a whole HTML document):
 * then it is refused with a hint. Piped or redirected, it is written.
 */
static int ddl_floods_terminal(const char *format, const char *out)
{
	return !out && (!strcmp(format, "chrome") || !strcmp(format, "html")) && isatty(STDOUT_FILENO);
}

int main(int argc, char **argv)
{
	const char *format = "text", *run_id = NULL, *out = NULL, *iter_names = "*step*,*iter*";
	const char *sqlite = NULL; /* --sqlite: the database, beside (or instead of) the report */
	int format_given = 0;
	char *compare[DDL_CMP_RUNS];
	int ncompare = 0;
	const char *bw = NULL, *fail_if[16], *data_names = "data*,*dataload*,*data_load*,input*";
	int nfail = 0;
	const char *baseline = NULL; /* --baseline: the unperturbed run of a --perturb-net run */
	char err[1024];
	int quiet = 0, force = 0, c, warmup = 5, names_given = 0;
	const char *ranks = NULL; /* --ranks, --iterations: --chrome's window */
	/* every stage holds the events it reads: they are read again from the
	 * files as needed, and memory does not grow with them (trace_events.c) */
	ddl_traceset_lazy = 1;
	ddl_traceset_parallel = ddl_parallel; /* the files read on every core */
	/* big arrays (a process's events, its socket records) mapped and given
	 * back whole when freed: glibc would otherwise raise its threshold
	 * after the first and keep later ones in a heap that never shrinks */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	long it_a = -1, it_b = -1;
	char *end;
	const char *P = "ddlprof-report";
	const mode_t mode = 0600; /* -o's file, like the traces: a report holds command lines */
	struct ddl_cli cli;
	ddl_cli_init(&cli, P, ddl_opts, sizeof ddl_opts / sizeof ddl_opts[0], 0);
	while ((c = ddl_cli_next(&cli, argc, argv)) != -1) {
		switch (c) {
		case DDL_REPORT_O_QUIET: quiet = 1; break;
		case DDL_REPORT_O_FORMAT:
			format = optarg;
			format_given = 1;
			break;
		/* the aliases: the option's name is the format's */
		case DDL_REPORT_O_JSON:
		case DDL_REPORT_O_DUMP:
		case DDL_REPORT_O_CHROME:
		case DDL_REPORT_O_HTML:
		case DDL_REPORT_O_CSV:
			format = ddl_opts[cli.index].name;
			format_given = 1;
			break;
		case DDL_REPORT_O_SQLITE: sqlite = optarg; break;
		case DDL_REPORT_O_RUN: run_id = optarg; break;
		case DDL_REPORT_O_OUTPUT: out = optarg; break;
		case DDL_REPORT_O_FORCE: force = 1; break;
		case DDL_REPORT_O_HELP: ddl_usage(); return 0;
		case DDL_REPORT_O_VERSION: printf("ddlprof-report %s\n", DDLPROF_VERSION); return 0;
		case DDL_REPORT_O_WARMUP:
			warmup = (int)strtol(optarg, &end, 10);
			if (*end || end == optarg || warmup < 0 || warmup > 1000000)
				return ddl_cli_usage(P, "--warmup '%s': a whole number, 0 or more", optarg);
			break;
		case DDL_REPORT_O_THREADS: {
			long n = strtol(optarg, &end, 10);
			if (*end || end == optarg || n < 1 || n > DDL_THREADS_MAX)
				return ddl_cli_usage(P, "--threads '%s': a whole number from 1 to %d", optarg,
				                     DDL_THREADS_MAX);
			ddl_report_threads = (int)n;
			break;
		}
		case DDL_REPORT_O_MEMORY: {
			errno = 0;
			unsigned long long n = strtoull(optarg, &end, 10);
			int shift = *end == 'k' || *end == 'K' ? 10 : *end == 'm' || *end == 'M' ? 20
			          : *end == 'g' || *end == 'G' ? 30 : 0;
			if (shift)
				end++;
			if (*end || end == optarg || errno || *optarg == '-' || n > (1ull << 40) >> shift)
				return ddl_cli_usage(P, "--memory '%s': a size in bytes up to 1024G, with k, M or G "
				                     "(either case) for 1024s", optarg);
			ddl_events_budget = (size_t)(n << shift);
			break;
		}
		case DDL_REPORT_O_RANKS:
			if (ddl_rank_list_check(optarg, err, sizeof err) < 0)
				return ddl_cli_usage(P, "%s", err);
			ranks = optarg;
			break;
		case DDL_REPORT_O_ITERATIONS: {
			char *e2 = NULL;
			it_a = strtol(optarg, &end, 10);
			it_b = *end == ':' ? strtol(end + 1, &e2, 10) : -1;
			if (end == optarg || *end != ':' || e2 == end + 1 || *e2 || !(optarg[0] >= '0' && optarg[0] <= '9') ||
			    !(end[1] >= '0' && end[1] <= '9') || it_a < 0 || it_b < it_a || it_b > 1000000000)
				return ddl_cli_usage(P, "--iterations '%s': A:B, iteration numbers from 0, A <= B", optarg);
			break;
		}
		case DDL_REPORT_O_BW:
			/* checked here, where a mistake is a usage error */
			if (ddl_report_bw((double[3]){0}, optarg, err, sizeof err) < 0)
				return ddl_cli_usage(P, "%s", err);
			bw = optarg;
			break;
		case DDL_REPORT_O_FAIL_IF:
			if (nfail == 16)
				return ddl_cli_usage(P, "at most 16 --fail-if conditions");
			if (ddl_failif_check(optarg, err, sizeof err) < 0)
				return ddl_cli_usage(P, "%s", err);
			fail_if[nfail++] = optarg;
			break;
		case DDL_REPORT_O_ITERATION_NAME:
			if (!*optarg || strlen(optarg) > 400)
				return ddl_cli_usage(P, "--iteration-name: 1 to 400 characters of globs");
			iter_names = optarg;
			names_given = 1;
			break;
		case DDL_REPORT_O_COMPARE:
			if (ncompare == DDL_CMP_RUNS)
				return ddl_cli_usage(P, "at most five --compare runs (single, node, multi, "
				                     "real, synthetic)");
			compare[ncompare++] = optarg;
			break;
		case DDL_REPORT_O_BASELINE: baseline = optarg; break;
		case DDL_REPORT_O_DATA_NAMES:
			if (!*optarg || strlen(optarg) > 200)
				return ddl_cli_usage(P, "--data-names: 1 to 200 characters of globs");
			data_names = optarg;
			break;
		default: return DDL_CLI_USAGE; /* said by ddl_cli_next */
		}
	}
	int fi = -1;
	for (size_t i = 0; i < sizeof ddl_formats / sizeof ddl_formats[0]; i++)
		if (!strcmp(ddl_formats[i].name, format))
			fi = (int)i;
	if (fi < 0)
		return ddl_cli_usage(P, "unknown format '%s' (text, json, dump, chrome, html or csv)",
		                     format);
	if (it_a >= 0 && strcmp(format, "chrome"))
		return ddl_cli_usage(P, "--iterations chooses what --chrome exports");
	if (ranks && strcmp(format, "chrome") && strcmp(format, "text"))
		return ddl_cli_usage(P, "--ranks chooses the ranks the text shows and --chrome exports; %s keeps "
		                     "every rank", format);
	if (sqlite && ncompare)
		return ddl_cli_usage(P, "--sqlite writes one run's report, not --compare");
	if (sqlite && out && !strcmp(sqlite, out))
		return ddl_cli_usage(P, "-o and --sqlite both name %s", out);
	if (ncompare) {
		/* --compare single=A node=B multi=C: the runs after the first are operands */
		for (int i = optind; i < argc; i++) {
			if (ncompare == DDL_CMP_RUNS || !strchr(argv[i], '='))
				return ddl_cli_usage(P, "with --compare, name the runs as single=DIR node=DIR "
				                     "multi=DIR, or real=DIR synthetic=DIR, not '%s'", argv[i]);
			compare[ncompare++] = argv[i];
		}
		if (strcmp(format, "text") && strcmp(format, "json"))
			return ddl_cli_usage(P, "--compare writes text or --json");
		struct ddl_cmp_opts co = {bw, iter_names, data_names, names_given, warmup,
		                          !strcmp(format, "json")};
		char tmp[4200];
		FILE *f = out ? ddl_cli_out_open(P, out, force, mode, tmp, sizeof tmp) : stdout;
		if (!f)
			return 1;
		int st = ddl_compare(compare, ncompare, &co, f);
		if (out && ddl_cli_out_close(f, out, tmp, st == 0) != 0 && st == 0) {
			fprintf(stderr, "ddlprof-report: cannot write %s: %s\n", out, strerror(errno));
			st = 1;
		}
		return st;
	}
	if (ddl_floods_terminal(format, out))
		return ddl_cli_usage(P, "--%s does not write to a terminal: use -o FILE (or pipe it)",
		                     format);
	if (optind >= argc)
		return ddl_cli_usage(P, "name a trace directory or file");
	struct ddl_traceset set;
	struct ddl_progress prog;
	ddl_progress_init(&prog, "ddlprof-report", quiet);
	ddl_traceset_progress = &prog;
	int loaded = ddl_traceset_load(&set, argv + optind, argc - optind, err, sizeof err);
	ddl_traceset_progress = NULL;
	ddl_progress_done(&prog); /* phases below show it again, on a long report */
	if (loaded < 0) {
		fprintf(stderr, "ddlprof-report: %s\n", err);
		ddl_traceset_free(&set);
		return 1;
	}
	int status = 0;
	for (size_t i = 0; i < set.nerrors; i++) {
		fprintf(stderr, "ddlprof-report: %s\n", set.errors[i]);
		status = 1;
	}
	const struct ddl_run *run = ddl_report_run(&set, run_id);
	if (!run) {
		if (set.incomplete)
			fprintf(stderr, "ddlprof-report: out of memory: the traces were not all read\n");
		if (run_id)
			fprintf(stderr, "ddlprof-report: no run '%s' in these traces\n", run_id);
		else
			fprintf(stderr, "ddlprof-report: no readable traces in %s%s\n", argv[optind],
			            argc - optind > 1 ? " and the other paths" : "");
		ddl_traceset_free(&set);
		return 1;
	}
	struct ddl_report rep;
	struct ddl_analysis an = {bw, iter_names, names_given, data_names, warmup, 1, baseline, &prog,
	                          !strcmp(format, "html")};
	int arc = ddl_report_analyze(&rep, &set, run, &an, err, sizeof err);
	if (arc < 0) {
		fprintf(stderr, "ddlprof-report: %s\n", err);
		ddl_report_free(&rep);
		ddl_traceset_free(&set);
		return arc == DDL_ANALYZE_USAGE ? 2 : 1;
	}
	/* the problems said, per trace: an output that reads a trace again may
	 * find it changed, and that is said after it (below) */
	int *said = calloc(set.n ? set.n : 1, sizeof *said);
	for (size_t i = 0; i < rep.nprocs; i++)
		for (size_t k = 0; k < rep.procs[i].ntr; k++) {
			const struct ddl_trace *t = rep.procs[i].tr[k];
			if (said)
				said[t - set.t] = t->nproblems;
			for (int j = 0; j < t->nproblems; j++)
				fprintf(stderr, "ddlprof-report: %s%s\n", t->problems[j],
				        t->corrupt || t->incomplete ? ""
				                                    : " (truncated trace: reporting what was written)");
			if (t->corrupt)
				status = 1;
		}
	int text = !strcmp(format, "text");
	rep.chrome_ranks = text ? NULL : ranks;
	rep.text_ranks = text ? ranks : NULL;
	rep.chrome_it_a = it_a;
	rep.chrome_it_b = it_b;
	int64_t wa, wb;
	if ((text && ranks && ddl_rank_list_names(&rep, ranks, err, sizeof err) < 0) ||
	    ddl_chrome_window(&rep, &wa, &wb, err, sizeof err) < 0) {
		fprintf(stderr, "ddlprof-report: %s\n", err); /* before -o's file is made */
		ddl_report_free(&rep);
		ddl_traceset_free(&set);
		return 1;
	}
	/* --sqlite alone writes the database only; a format or -o asks for the report too */
	int report = !sqlite || format_given || out;
	char tmp[4200];
	FILE *f = !report ? NULL : out ? ddl_cli_out_open(P, out, force, mode, tmp, sizeof tmp) : stdout;
	if (report && !f) {
		status = 1;
	} else if (report) {
		int rc = ddl_formats[fi].out(&rep, f), why = errno;
		if (out) {
			if (ddl_cli_out_close(f, out, tmp, rc == 0) != 0) {
				if (rc == 0)
					why = errno;
				rc = -1;
			}
			if (rc != 0)
				fprintf(stderr, "ddlprof-report: cannot write %s: %s\n", out, strerror(why));
		} else if (fflush(stdout) != 0 || rc != 0) {
			if (rc == 0)
				why = errno;
			rc = -1;
			fprintf(stderr, "ddlprof-report: cannot write the report: %s\n", strerror(why));
		}
		if (rc != 0)
			status = 1;
	}
	if (sqlite && ddl_write_sqlite(&rep, sqlite, force) != 0)
		status = 1;
	int reread = 0; /* traces whose events could not be read again */
	for (size_t i = 0; i < rep.nprocs; i++)
		for (size_t k = 0; k < rep.procs[i].ntr; k++) {
			const struct ddl_trace *t = rep.procs[i].tr[k];
			reread |= t->ev_lost == 1;
			for (int j = said ? said[t - set.t] : t->nproblems; j < t->nproblems; j++)
				fprintf(stderr, "ddlprof-report: %s\n", t->problems[j]);
			rep.incomplete |= t->incomplete;
		}
	free(said);
	/* The CI gate, after the report is written: exit 3 when it trips; a
	 * report short of what the traces hold passes no gate (exit 4). */
	int tripped = 0;
	for (int k = 0; k < nfail && !rep.incomplete; k++)
		tripped |= ddl_failif_eval(&rep, fail_if[k], stderr);
	if (tripped && status == 0)
		status = 3;
	if (rep.incomplete) {
		fprintf(stderr, "ddlprof-report: %s: the report is incomplete (exit status %d%s)\n",
		        reread ? "traces changed while they were read" : "out of memory", status == 1 ? 1 : 4,
		        nfail ? "; --fail-if not judged" : "");
		if (status != 1)
			status = 4;
	}
	ddl_report_free(&rep);
	ddl_traceset_free(&set);
	return status;
}
