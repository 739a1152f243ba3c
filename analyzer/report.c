/*
 * ddlprof-report: reads trace directories and files, picks one run (the
 * newest, or --run ID), builds the report model and prints it in the chosen
 * format. Formats dispatch from a static table.
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
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "progress.h"
#include "report.h"

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

static void ddl_usage(FILE *f)
{
	fprintf(f, "usage: ddlprof-report [--json | --dump | --chrome | --html | --csv |\n"
	           "                       --format text|json|dump|chrome|html|csv] [--run ID]\n"
	           "                      [--warmup N] [--iteration-name GLOBS] [--data-names GLOBS]\n"
	           "                      [--bw machine=RATE,rack=RATE,cluster=RATE] [--fail-if COND]...\n"
	           "                      [--baseline DIR] [-q] [-o FILE [--force]] DIR|FILE...\n"
	           "       ddlprof-report --compare single=DIR node=DIR multi=DIR [--json] [-o FILE]\n"
	           "       ddlprof-report --compare real=DIR synthetic=DIR [--json] [-o FILE]\n"
	           "Summarise ddlprof traces. See ddlprof-report(1).\n");
}

/*
 * Where -o goes. A new or existing regular file is written through a
 * temporary name beside it and renamed over it once complete, so a failure
 * leaves nothing half-written (ddl_close_out); anything else that exists
 * (a character device such as /dev/null, a FIFO, a symlink such as
 * /dev/stdout) is written where it is and never replaced: TMP is left
 * empty. A directory or a block device is refused. What is there already
 * is overwritten only with --force, but for a device, FIFO or socket, whose
 * contents writing does not replace.
 */
static FILE *ddl_open_out(const char *path, int force, char *tmp, size_t n)
{
	struct stat ls, st;
	tmp[0] = 0;
	int exists = lstat(path, &ls) == 0, link = exists && S_ISLNK(ls.st_mode);
	int target = link ? stat(path, &st) == 0 : exists; /* a dangling link has none */
	if (!link)
		st = ls;
	if (target && (S_ISDIR(st.st_mode) || S_ISBLK(st.st_mode))) {
		fprintf(stderr, "ddlprof-report: %s: a %s; name a file for -o\n", path,
		        S_ISDIR(st.st_mode) ? "directory" : "block device");
		return NULL;
	}
	int special = target && !S_ISREG(st.st_mode);
	if (exists && !special && !force) {
		fprintf(stderr, "ddlprof-report: %s exists; pass --force to overwrite it\n", path);
		return NULL;
	}
	int fd;
	if (special || link) {
		/* in place, through the link if one: the target stays what it is;
		 * one of the process's own descriptors (/dev/stdout) appended to,
		 * as the shell that opened it decided */
		int own = !strncmp(path, "/dev/std", 8) || !strncmp(path, "/dev/fd/", 8) ||
		          !strncmp(path, "/proc/self/fd/", 14);
		fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | (special ? 0 : own ? O_APPEND : O_TRUNC));
	} else {
		snprintf(tmp, n, "%s.tmp.%d", path, (int)getpid());
		/* 0600 like the traces: a report holds command lines and addresses */
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		fprintf(stderr, "ddlprof-report: %s: %s\n", tmp[0] ? tmp : path, strerror(errno));
		if (fd >= 0)
			close(fd);
		if (tmp[0])
			unlink(tmp);
	}
	return f;
}

/* Ends -o's output F: in place, or renamed over PATH when OK (else removed). 0 or -1. */
static int ddl_close_out(FILE *f, const char *path, const char *tmp, int ok)
{
	int rc = fclose(f) == 0 && ok ? 0 : -1;
	if (rc == 0 && tmp[0] && rename(tmp, path) != 0)
		rc = -1;
	if (rc != 0 && tmp[0])
		unlink(tmp);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},   {"dump", no_argument, NULL, 'd'},
		{"format", required_argument, NULL, 'F'}, {"run", required_argument, NULL, 'r'},
		{"output", required_argument, NULL, 'o'}, {"force", no_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},   {"version", no_argument, NULL, 'V'},
		{"quiet", no_argument, NULL, 'q'},
		{"warmup", required_argument, NULL, 'w'}, {"iteration-name", required_argument, NULL, 'n'},
		{"bw", required_argument, NULL, 'b'}, {"fail-if", required_argument, NULL, 'x'},
		{"data-names", required_argument, NULL, 'D'},
		{"baseline", required_argument, NULL, 'B'},
		{"compare", required_argument, NULL, 'C'},
		/* format aliases: the option's name is the format's */
		{"chrome", no_argument, NULL, 'A'}, {"html", no_argument, NULL, 'A'},
		{"csv", no_argument, NULL, 'A'},
		{NULL, 0, NULL, 0}};
	const char *format = "text", *run_id = NULL, *out = NULL, *iter_names = "*step*,*iter*";
	char *compare[DDL_CMP_RUNS];
	int ncompare = 0;
	const char *bw = NULL, *fail_if[16], *data_names = "data*,*dataload*,*data_load*,input*";
	int nfail = 0;
	const char *baseline = NULL; /* --baseline: the unperturbed run of a --perturb-net run */
	char err[1024];
	int quiet = 0, force = 0, c, warmup = 5, idx = 0, names_given = 0;
	char *end;
	while ((c = getopt_long(argc, argv, "o:hq", opts, &idx)) != -1) {
		switch (c) {
		case 'q': quiet = 1; break;
		case 'j': format = "json"; break;
		case 'd': format = "dump"; break;
		case 'F': format = optarg; break;
		case 'A': format = opts[idx].name; break;
		case 'r': run_id = optarg; break;
		case 'o': out = optarg; break;
		case 'f': force = 1; break;
		case 'h': ddl_usage(stdout); return 0;
		case 'V': printf("ddlprof-report %s\n", DDLPROF_VERSION); return 0;
		case 'w':
			warmup = (int)strtol(optarg, &end, 10);
			if (*end || end == optarg || warmup < 0 || warmup > 1000000) {
				fprintf(stderr, "ddlprof-report: --warmup '%s': a whole number, 0 or more\n", optarg);
				return 2;
			}
			break;
		case 'b': bw = optarg; break;
		case 'x':
			if (nfail == 16 || ddl_failif_check(optarg, err, sizeof err) < 0) {
				fprintf(stderr, "ddlprof-report: %s\n",
				        nfail == 16 ? "at most 16 --fail-if conditions" : err);
				return 2;
			}
			fail_if[nfail++] = optarg;
			break;
		case 'n':
			if (!*optarg || strlen(optarg) > 400) {
				fprintf(stderr, "ddlprof-report: --iteration-name: 1 to 400 characters of globs\n");
				return 2;
			}
			iter_names = optarg;
			names_given = 1;
			break;
		case 'C':
			if (ncompare == DDL_CMP_RUNS) {
				fprintf(stderr, "ddlprof-report: at most five --compare runs (single, node, multi, "
				        "real, synthetic)\n");
				return 2;
			}
			compare[ncompare++] = optarg;
			break;
		case 'B': baseline = optarg; break;
		case 'D':
			if (!*optarg || strlen(optarg) > 200) {
				fprintf(stderr, "ddlprof-report: --data-names: 1 to 200 characters of globs\n");
				return 2;
			}
			data_names = optarg;
			break;
		default: ddl_usage(stderr); return 2;
		}
	}
	int fi = -1;
	for (size_t i = 0; i < sizeof ddl_formats / sizeof ddl_formats[0]; i++)
		if (!strcmp(ddl_formats[i].name, format))
			fi = (int)i;
	if (fi < 0) {
		fprintf(stderr, "ddlprof-report: unknown format '%s' (text, json, dump, chrome, html or csv)\n", format);
		return 2;
	}
	if (ncompare) {
		/* --compare single=A node=B multi=C: the runs after the first are operands */
		for (int i = optind; i < argc; i++) {
			if (ncompare == DDL_CMP_RUNS || !strchr(argv[i], '=')) {
				fprintf(stderr, "ddlprof-report: with --compare, name the runs as single=DIR "
				        "node=DIR multi=DIR, or real=DIR synthetic=DIR, not '%s'\n", argv[i]);
				return 2;
			}
			compare[ncompare++] = argv[i];
		}
		if (strcmp(format, "text") && strcmp(format, "json")) {
			fprintf(stderr, "ddlprof-report: --compare writes text or --json\n");
			return 2;
		}
		struct ddl_cmp_opts co = {bw, iter_names, data_names, names_given, warmup,
		                          !strcmp(format, "json")};
		char tmp[4200];
		FILE *f = out ? ddl_open_out(out, force, tmp, sizeof tmp) : stdout;
		if (!f)
			return 1;
		int st = ddl_compare(compare, ncompare, &co, f);
		if (out && ddl_close_out(f, out, tmp, st == 0) != 0 && st == 0)
			st = 1;
		return st;
	}
	if (optind >= argc) {
		fprintf(stderr, "ddlprof-report: name a trace directory or file\n");
		ddl_usage(stderr);
		return 2;
	}
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
	struct ddl_analysis an = {bw, iter_names, names_given, data_names, warmup, 1, baseline, &prog};
	int arc = ddl_report_analyze(&rep, &set, run, &an, err, sizeof err);
	if (arc < 0) {
		fprintf(stderr, "ddlprof-report: %s\n", err);
		ddl_report_free(&rep);
		ddl_traceset_free(&set);
		return arc == DDL_ANALYZE_USAGE ? 2 : 1;
	}
	for (size_t i = 0; i < rep.nprocs; i++)
		for (size_t k = 0; k < rep.procs[i].ntr; k++) {
			const struct ddl_trace *t = rep.procs[i].tr[k];
			for (int j = 0; j < t->nproblems; j++)
				fprintf(stderr, "ddlprof-report: %s%s\n", t->problems[j],
				        t->corrupt || t->incomplete ? ""
				                                    : " (truncated trace: reporting what was written)");
			if (t->corrupt)
				status = 1;
		}
	char tmp[4200];
	FILE *f = out ? ddl_open_out(out, force, tmp, sizeof tmp) : stdout;
	if (!f) {
		status = 1;
	} else {
		int rc = ddl_formats[fi].out(&rep, f), why = errno;
		if (out) {
			if (ddl_close_out(f, out, tmp, rc == 0) != 0) {
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
	/* The CI gate, after the report is written: exit 3 when it trips; a
	 * report short of what the traces hold passes no gate (exit 4). */
	int tripped = 0;
	for (int k = 0; k < nfail && !rep.incomplete; k++)
		tripped |= ddl_failif_eval(&rep, fail_if[k], stderr);
	if (tripped && status == 0)
		status = 3;
	if (rep.incomplete) {
		fprintf(stderr, "ddlprof-report: out of memory: the report is incomplete (exit status %d%s)\n",
		        status == 1 ? 1 : 4, nfail ? "; --fail-if not judged" : "");
		if (status != 1)
			status = 4;
	}
	ddl_report_free(&rep);
	ddl_traceset_free(&set);
	return status;
}
