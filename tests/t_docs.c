/*
 * The user's first hour, as the README and the man pages promise it: the
 * pages render without warnings, `make install PREFIX=` gives commands
 * that work from the prefix, every command answers --help and --version
 * on stdout and a bad flag on stderr only, --json output is the whole of
 * stdout, the progress line appears on a terminal and nowhere else, make
 * demo asks for no package it does not use and prints short build lines,
 * and the README's walkthrough prints what the README shows.
 *
 * docs_man_render      every page in man/ through `groff -ww -z -man`: no
 *                      output on stderr, and the sections a page needs
 * docs_install         `make install PREFIX=TMP` from the tests' build
 *                      (without remaking it); a two-rank job started by
 *                      examples/launch_ranks.sh under the installed ddlprof,
 *                      the installed ddlprof-report and ddlprof-recommend
 *                      (which must find the installed catalog) on it
 * docs_cli_manners     --help, -h, --version and a bad flag on every
 *                      command, the examples and the helper scripts
 * docs_json_stdout     ddlprof-report, ddlprof-recommend and ddlprof-sim
 *                      --json: one JSON document on stdout, nothing else
 * docs_progress_report ddlprof-report with a terminal on stderr while
 *                      reading traces takes more than a second: a progress
 *                      line; with -q, or stderr a pipe, none
 * docs_progress_sim    the same for a ddlprof-sim simulation
 * docs_flags           one meaning per flag, in all four commands: --help
 *                      describes every option of the command's table, a
 *                      usage error is one line ending "try --help", -q is
 *                      taken, the man page's SYNOPSIS lists every option;
 *                      -o, --force and --json as ddlprof-report's
 * docs_rate_units      the one rate parser: a table of spellings, refusals,
 *                      and the tools that take a rate agreeing on it
 * docs_deps_targets    the Debian packages make demo, make check and make fuzz
 *                      ask for (make -n, then install-deps.sh --list), and
 *                      install-deps.sh among stand-ins for dpkg-query, id and
 *                      apt-get: a user without clang, chromium, torch or Open
 *                      MPI runs make demo; root installs none of them for it
 * docs_quiet_build     build lines are kbuild's short ones ("  CC      x.c"),
 *                      the whole commands with V=1
 * docs_readme_marks    the README's marked blocks (below): every "Real output"
 *                      is marked, every group has commands and output
 * docs_readme_demo     sections 1, 2, 3 and 6 run as written, twice (section
 *                      1 first by make demo's script, then as the README
 *                      writes it); their
 *                      output against the README's; the --fail-if figure is
 *                      the report's network share, there and here
 * docs_readme_torch    section 4 on two namespace hosts (root, python3-torch)
 * docs_readme_torchdata  section 4's one-host runs with their data and
 *                      without (--data synthetic), compared
 * docs_readme_mpi      section 5 (root, Open MPI), one host and two
 * docs_readme_sim      section 7, twice, its output exactly the README's
 * docs_readme_hang     section 8, a hang made with ddlsynth --hang-rank: the watchdog and the report
 *
 * "Takes more than a second" is made to happen on any machine by holding
 * the tool still for 1.2 s in the middle of the phase that shows progress:
 * the monotonic clock runs on meanwhile, just as on a loaded machine. The
 * report is traced (ptrace) and looked at, at each of its system calls,
 * until /proc shows a trace file mapped by its reader (a few milliseconds
 * that a busy machine could hide from a look now and then); the simulator
 * gets SIGSTOP once its job-trace descriptor has been closed (its loading
 * done) for 150 ms, time to sort the jobs and start.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "../launcher/launcher_opts.h"
#include "../recommender/rec_opts.h"
#include "../scheduler/sim_opts.h"
#include "ddlprof/rate.h"
#include "report_opts.h"
#include "test.h"

/* A path in the source tree (the build's parent), in one of 4 buffers. */
static const char *docs_src(const char *rel)
{
	static char buf[4][PATH_MAX];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%s../%s", tbuild(""), rel);
	return buf[k];
}

static int docs_status(const struct ddl_run_result *r)
{
	return WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1;
}

/* 1 when the command can be run at all (exit status other than 127). */
static int docs_have(const char *cmd)
{
	char *argv[] = {(char *)cmd, "--version", NULL};
	struct ddl_run_result r;
	int ok = trun(argv, NULL, 30, &r) == 0 && docs_status(&r) != 127;
	trun_free(&r);
	return ok;
}

static int docs_write(const char *path, const char *text, size_t n)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	int ok = fwrite(text, 1, n, f) == n;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* The whole of file PATH, NUL-terminated, or NULL. */
static char *docs_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *text = NULL;
	size_t cap = 0;
	ssize_t n = getdelim(&text, &cap, 0, f);
	fclose(f);
	if (n < 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* A base port for tcpring (two ranks) below the ephemeral range. */
static int docs_port(void)
{
	return tfreeports(2);
}

/*
 * A two-rank tcpring job with markers under DDLPROF (a ddlprof binary),
 * started by examples/launch_ranks.sh, into DIR. DDL_PASS or DDL_FAIL.
 */
static int docs_job(const char *ddlprof, const char *dir)
{
	char port[16];
	snprintf(port, sizeof port, "%d", docs_port());
	char *argv[] = {(char *)docs_src("examples/launch_ranks.sh"), "2", (char *)ddlprof, "-q", "-o",
	                (char *)dir, "--run-id", "docs", "--", (char *)tbuild("examples/tcpring"),
	                "-n", "12", "-m", "1", "-c", "5", "-k", "-p", port, NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 60, &r) == 0, "launch_ranks.sh did not finish");
	CHECK(docs_status(&r) == 0, "launch_ranks.sh 2 ddlprof ... tcpring: status %#x: %s%s", r.status,
	      r.out, r.err);
	CHECK(strstr(r.out, "tcpring: 2 ranks"), "tcpring's line: %s", r.out);
	trun_free(&r);
	return DDL_PASS;
}

/* Checks a report of docs_job's run: two ranks with their ring traffic. */
static int docs_check_job(json_t *rep)
{
	json_t *job = json_object_get(rep, "job");
	CHECK(!strcmp(json_string_value(json_object_get(rep, "schema")) ?: "", "ddlprof-report/1"),
	      "schema");
	CHECK(json_integer_value(json_object_get(job, "ranks")) == 2, "job.ranks %lld",
	      (long long)json_integer_value(json_object_get(job, "ranks")));
	CHECK(json_integer_value(json_object_get(job, "iterations")) > 0, "no iterations");
	size_t i;
	json_t *p;
	long long sent = 0;
	json_array_foreach(json_object_get(rep, "processes"), i, p)
		sent += json_integer_value(json_object_get(json_object_get(p, "network"), "bytes_sent"));
	/* 12 ring all-reduces of 1 MiB on 2 ranks: each rank sends 1 MiB a step. */
	CHECK(sent >= 2 * 12 * 1048576LL, "%lld bytes sent by the job", sent);
	return DDL_PASS;
}

/*
 * REPORT (a ddlprof-report binary) --json -o OUT DIR: status 0, nothing on
 * stdout or stderr, and OUT a report of docs_job's run.
 */
static int docs_report_file(const char *report, const char *dir, const char *out)
{
	char *argv[] = {(char *)report, "--json", "-o", (char *)out, (char *)dir, NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 60, &r) == 0 && docs_status(&r) == 0 && r.nout == 0 && r.nerr == 0,
	      "%s --json -o: status %d, stdout '%.80s', stderr '%s'", report, docs_status(&r), r.out,
	      r.err);
	trun_free(&r);
	json_error_t je;
	json_t *j = json_load_file(out, 0, &je);
	CHECK(j, "%s: %s", out, je.text);
	int rc = docs_check_job(j);
	json_decref(j);
	return rc;
}

int test_docs_man_render(void)
{
	char *probe[] = {"groff", "-v", NULL};
	struct ddl_run_result r;
	if (trun(probe, NULL, 30, &r) != 0 || docs_status(&r) != 0) {
		trun_free(&r);
		fprintf(stderr, "    needs groff (Debian's groff-base): skipped\n");
		return DDL_SKIP;
	}
	trun_free(&r);
	/* The pages the issue asks for, and what each kind must have. */
	static const char *const pages[] = {"ddlprof.1", "ddlprof-report.1", "ddlprof-recommend.1",
	                                    "ddlprof-sim.1", "ddlprof-trace.5"};
	static const char *const sec1[] = {".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION",
	                                   ".SH OPTIONS", ".SH EXIT STATUS", ".SH EXAMPLES",
	                                   ".SH SEE ALSO"};
	static const char *const sec5[] = {".SH NAME", ".SH DESCRIPTION", ".SH EXAMPLES",
	                                   ".SH SEE ALSO"};
	for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++) {
		char rel[64];
		snprintf(rel, sizeof rel, "man/%s", pages[i]);
		CHECK(access(docs_src(rel), R_OK) == 0, "%s is missing", rel);
	}
	glob_t g;
	CHECK(glob(docs_src("man/*.[1-9]"), 0, NULL, &g) == 0, "no man pages");
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *m = g.gl_pathv[i];
		char *argv[] = {"groff", "-ww", "-z", "-man", (char *)m, NULL};
		CHECK(trun(argv, NULL, 60, &r) == 0, "groff on %s did not finish", m);
		CHECK(docs_status(&r) == 0 && r.nerr == 0, "groff -ww -z -man %s: status %d:\n%s", m,
		      docs_status(&r), r.err);
		trun_free(&r);
		/* The sections a page of its kind needs, read from the source. */
		char *text = docs_slurp(m);
		CHECK(text && *text, "%s: cannot read it, or empty", m);
		int is5 = m[strlen(m) - 1] == '5';
		const char *const *need = is5 ? sec5 : sec1;
		size_t nneed = is5 ? sizeof sec5 / sizeof sec5[0] : sizeof sec1 / sizeof sec1[0];
		for (size_t k = 0; k < nneed; k++)
			CHECK(strstr(text, need[k]), "%s has no %s section", m, need[k] + 4);
		if (!is5)
			CHECK(strstr(text, "\\-\\-help") && strstr(text, "\\-\\-version"),
			      "%s does not document --help and --version", m);
		free(text);
	}
	CHECK(g.gl_pathc >= 5, "%zu man pages", g.gl_pathc);
	globfree(&g);
	return DDL_PASS;
}

int test_docs_install(void)
{
	if (!docs_have("make")) {
		fprintf(stderr, "    needs make: skipped\n");
		return DDL_SKIP;
	}
	char *dir = tmpdir(), prefix[PATH_MAX], pre[PATH_MAX + 16], b[PATH_MAX], t[PATH_MAX],
	     out[PATH_MAX], p[PATH_MAX];
	snprintf(prefix, sizeof prefix, "%s/usr", dir);
	snprintf(pre, sizeof pre, "PREFIX=%s", prefix);
	/* B= the build these tests belong to; -o all: install what it holds,
	 * remake nothing (others may be editing the sources meanwhile). */
	snprintf(b, sizeof b, "B=%s", tbuild(""));
	b[strlen(b) - 1] = 0; /* no trailing slash */
	char *mk[] = {"make", "--no-print-directory", "-C", (char *)docs_src(""), "-o", "all", b, pre,
	              "install", NULL};
	char *env[] = {"MAKEFLAGS=", "MAKELEVEL=", "MFLAGS=", NULL};
	struct ddl_run_result r;
	CHECK(trun(mk, env, 120, &r) == 0, "make install did not finish");
	CHECK(docs_status(&r) == 0, "make install %s: status %d: %s%s", pre, docs_status(&r), r.out,
	      r.err);
	trun_free(&r);

	static const char *const files[] = {"bin/ddlprof", "bin/ddlprof-report",
	                                    "bin/ddlprof-recommend", "bin/ddlprof-sim",
	                                    "lib/libddlprof.so", "include/ddlprof/ddlprof.h",
	                                    "include/ddlprof/trace.h", "include/ddlprof/python.h",
	                                    "lib/ddlprof/python/sitecustomize.py",
	                                    "lib/ddlprof/python/ddlprof_hook/__init__.py",
	                                    "share/ddlprof/catalog/aws.json"};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		snprintf(p, sizeof p, "%s/%s", prefix, files[i]);
		CHECK(access(p, R_OK) == 0, "%s not installed", p);
	}
	/* Every page of man/ under share/man/manN. */
	glob_t g;
	CHECK(glob(docs_src("man/*.[1-9]"), 0, NULL, &g) == 0, "no man pages");
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *base = strrchr(g.gl_pathv[i], '/') + 1;
		snprintf(p, sizeof p, "%s/share/man/man%c/%s", prefix, base[strlen(base) - 1], base);
		CHECK(access(p, R_OK) == 0, "%s not installed", p);
	}
	globfree(&g);

	/* The installed launcher preloads the installed library. */
	char lib[PATH_MAX + 32], ddlprof[PATH_MAX], bin[PATH_MAX];
	snprintf(ddlprof, sizeof ddlprof, "%s/bin/ddlprof", prefix);
	snprintf(lib, sizeof lib, "%s/lib/libddlprof.so", prefix);
	snprintf(t, sizeof t, "%s/t0", dir);
	char *show[] = {ddlprof, "-q", "-o", t, "--", "/bin/sh", "-c", "printf %s \"$LD_PRELOAD\"", NULL};
	CHECK(trun(show, NULL, 30, &r) == 0 && docs_status(&r) == 0, "installed ddlprof: %s", r.err);
	CHECK(!strncmp(r.out, lib, strlen(lib)), "LD_PRELOAD is '%s', not %s", r.out, lib);
	trun_free(&r);
	/* ... and puts the installed Python hook in front of PYTHONPATH */
	char hook[PATH_MAX + 32];
	snprintf(hook, sizeof hook, "%s/lib/ddlprof/python", prefix);
	char *showpy[] = {ddlprof, "-q", "-o", t, "--", "/bin/sh", "-c", "printf %s \"$PYTHONPATH\"", NULL};
	char *keep[] = {"PYTHONPATH=/somewhere/else", NULL};
	CHECK(trun(showpy, keep, 30, &r) == 0 && docs_status(&r) == 0, "installed ddlprof: %s", r.err);
	snprintf(p, sizeof p, "%s:/somewhere/else", hook);
	CHECK(!strcmp(r.out, p), "PYTHONPATH is '%s', not %s", r.out, p);
	trun_free(&r);

	/* A job under it, reported and projected by the installed tools. */
	snprintf(t, sizeof t, "%s/t", dir);
	if (docs_job(ddlprof, t) != DDL_PASS)
		return DDL_FAIL;
	snprintf(bin, sizeof bin, "%s/bin/ddlprof-report", prefix);
	snprintf(out, sizeof out, "%s/report.json", dir);
	if (docs_report_file(bin, t, out) != DDL_PASS)
		return DDL_FAIL;
	snprintf(bin, sizeof bin, "%s/bin/ddlprof-recommend", prefix);
	char *rec[] = {bin, "--profile", out, "--iterations", "1000", "--json", NULL};
	CHECK(trun(rec, NULL, 60, &r) == 0 && docs_status(&r) == 0,
	      "installed ddlprof-recommend (its catalog from %s/share): status %d: %s", prefix,
	      docs_status(&r), r.err);
	json_error_t je;
	json_t *j = json_loads(r.out, 0, &je);
	CHECK(j && !strcmp(json_string_value(json_object_get(j, "schema")) ?: "",
	                   "ddlprof-recommend/1"),
	      "ddlprof-recommend --json: %s", r.out);
	json_decref(j);
	trun_free(&r);
	snprintf(bin, sizeof bin, "%s/bin/ddlprof-sim", prefix);
	char *sim[] = {bin, "--version", NULL};
	CHECK(trun(sim, NULL, 30, &r) == 0 && docs_status(&r) == 0 && strstr(r.out, DDLPROF_VERSION),
	      "installed ddlprof-sim --version: %s", r.out);
	trun_free(&r);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * --help, -h and --version of PATH (named NAME): status 0, text on stdout
 * only; a bad flag: status BAD, stderr naming it, stdout empty.
 */
static int docs_manners(const char *path, const char *name, int bad, int version)
{
	struct ddl_run_result r;
	static const char *const help[] = {"--help", "-h"};
	for (int i = 0; i < 2; i++) {
		char *argv[] = {(char *)path, (char *)help[i], NULL};
		CHECK(trun(argv, NULL, 30, &r) == 0, "%s %s did not finish", name, help[i]);
		CHECK(docs_status(&r) == 0 && !strncmp(r.out, "usage: ", 7) && r.nerr == 0,
		      "%s %s: status %d, stdout '%.80s', stderr '%.200s'", name, help[i], docs_status(&r),
		      r.out, r.err);
		trun_free(&r);
	}
	if (version) {
		char *argv[] = {(char *)path, "--version", NULL};
		char want[128];
		snprintf(want, sizeof want, "%s %s", name, DDLPROF_VERSION);
		CHECK(trun(argv, NULL, 30, &r) == 0, "%s --version did not finish", name);
		CHECK(docs_status(&r) == 0 && !strncmp(r.out, want, strlen(want)) && r.nerr == 0,
		      "%s --version: status %d, stdout '%s', stderr '%s' (want '%s')", name,
		      docs_status(&r), r.out, r.err, want);
		trun_free(&r);
	}
	char *argv[] = {(char *)path, "--no-such-flag", NULL};
	CHECK(trun(argv, NULL, 30, &r) == 0, "%s --no-such-flag did not finish", name);
	CHECK(docs_status(&r) == bad && r.nout == 0 && strstr(r.err, "no-such-flag"),
	      "%s --no-such-flag: status %d (want %d), stdout '%.80s', stderr '%.200s'", name,
	      docs_status(&r), bad, r.out, r.err);
	trun_free(&r);
	return DDL_PASS;
}

int test_docs_cli_manners(void)
{
	/* The launcher's own errors are 125, beside the command's statuses. */
	static const struct {
		const char *path, *name;
		int bad, version;
	} cmds[] = {
		{"bin/ddlprof", "ddlprof", 125, 1},
		{"bin/ddlprof-report", "ddlprof-report", 2, 1},
		{"bin/ddlprof-recommend", "ddlprof-recommend", 2, 1},
		{"bin/ddlprof-sim", "ddlprof-sim", 2, 1},
		{"examples/ddlsynth", "ddlsynth", 2, 1},
		{"examples/tcpring", "tcpring", 2, 0},
		{"examples/mpi_allreduce", "mpi_allreduce", 2, 0},
	};
	int ran = 0;
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		const char *p = tbuild(cmds[i].path);
		if (access(p, X_OK) != 0 && strncmp(cmds[i].path, "bin/", 4)) {
			fprintf(stderr, "    %s not built here: not checked\n", cmds[i].path);
			continue;
		}
		if (docs_manners(p, cmds[i].name, cmds[i].bad, cmds[i].version) != DDL_PASS)
			return DDL_FAIL;
		ran++;
	}
	CHECK(ran >= 5, "only %d commands checked", ran);

	/* The helper scripts: usage on stdout for --help, on stderr for bad use. */
	static const struct {
		const char *path;
		int bad;
	} scripts[] = {{"examples/launch_ranks.sh", 2},
	               {"scripts/netns-hosts.sh", 1},
	               {"examples/mpi_netns_agent.sh", 1},
	               {"scripts/install-deps.sh", 2}};
	for (size_t i = 0; i < sizeof scripts / sizeof scripts[0]; i++) {
		const char *p = docs_src(scripts[i].path);
		struct ddl_run_result r;
		for (int h = 0; h < 2; h++) {
			char *argv[] = {(char *)p, h ? "-h" : "--help", NULL};
			CHECK(trun(argv, NULL, 30, &r) == 0, "%s --help did not finish", p);
			CHECK(docs_status(&r) == 0 && !strncmp(r.out, "usage: ", 7) && r.nerr == 0,
			      "%s %s: status %d, stdout '%.200s', stderr '%.200s'", scripts[i].path, argv[1],
			      docs_status(&r), r.out, r.err);
			trun_free(&r);
		}
		char *argv[] = {(char *)p, "bogus", "true", NULL};
		CHECK(trun(argv, NULL, 30, &r) == 0, "%s bogus did not finish", p);
		CHECK(docs_status(&r) == scripts[i].bad && r.nout == 0 && strstr(r.err, "bogus"),
		      "%s bogus: status %d (want %d), stdout '%.80s', stderr '%.200s'", scripts[i].path,
		      docs_status(&r), scripts[i].bad, r.out, r.err);
		trun_free(&r);
	}
	return DDL_PASS;
}

/* Runs ARGV; its stdout must be one JSON document of SCHEMA, stderr empty. */
static int docs_json_only(char *const argv[], const char *schema)
{
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 120, &r) == 0, "%s did not finish", argv[0]);
	CHECK(docs_status(&r) == 0, "%s: status %d: %s", argv[0], docs_status(&r), r.err);
	json_error_t je;
	json_t *j = json_loads(r.out, 0, &je); /* refuses anything after the document */
	CHECK(j, "%s --json: stdout is not one JSON document (%s): %.200s", argv[0], je.text, r.out);
	CHECK(!strcmp(json_string_value(json_object_get(j, "schema")) ?: "", schema),
	      "%s: schema is not %s", argv[0], schema);
	CHECK(r.nerr == 0, "%s --json: stderr '%s'", argv[0], r.err);
	json_decref(j);
	trun_free(&r);
	return DDL_PASS;
}

int test_docs_json_stdout(void)
{
	char *dir = tmpdir(), t[PATH_MAX], rep[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	snprintf(rep, sizeof rep, "%s/r.json", dir);
	if (docs_job(tbuild("bin/ddlprof"), t) != DDL_PASS)
		return DDL_FAIL;
	char *a[] = {(char *)tbuild("bin/ddlprof-report"), "--json", t, NULL};
	if (docs_json_only(a, "ddlprof-report/1") != DDL_PASS)
		return DDL_FAIL;
	/* -o FILE: the same document in the file, nothing on stdout. */
	if (docs_report_file(tbuild("bin/ddlprof-report"), t, rep) != DDL_PASS)
		return DDL_FAIL;
	char *c[] = {(char *)tbuild("bin/ddlprof-recommend"), "--profile", rep, "--iterations", "1000",
	             "--json", NULL};
	if (docs_json_only(c, "ddlprof-recommend/1") != DDL_PASS)
		return DDL_FAIL;
	char *d[] = {(char *)tbuild("bin/ddlprof-sim"), "--trace", (char *)docs_src("examples/jobs.csv"),
	             "--cluster", "2x4x8", "--policy", "dally", "--json", NULL};
	if (docs_json_only(d, "ddlprof-sim/1") != DDL_PASS)
		return DDL_FAIL;
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* Where docs_pty_run stops the tool for a while. */
enum docs_pause { DOCS_PAUSE_MAPPED, DOCS_PAUSE_CLOSED };

/* 1 when process PID maps a file whose name has SUFFIX (DOCS_PAUSE_MAPPED),
 * or has a descriptor open on one (DOCS_PAUSE_CLOSED). */
static int docs_proc_has(pid_t pid, enum docs_pause how, const char *suffix)
{
	char p[64];
	int found = 0;
	if (how == DOCS_PAUSE_MAPPED) {
		snprintf(p, sizeof p, "/proc/%d/maps", (int)pid);
		FILE *f = fopen(p, "r");
		char line[PATH_MAX + 128];
		while (f && !found && fgets(line, sizeof line, f)) {
			line[strcspn(line, "\n")] = 0;
			size_t n = strlen(line), k = strlen(suffix);
			found = n >= k && !strcmp(line + n - k, suffix);
		}
		if (f)
			fclose(f);
		return found;
	}
	snprintf(p, sizeof p, "/proc/%d/fd", (int)pid);
	DIR *d = opendir(p);
	struct dirent *e;
	while (d && !found && (e = readdir(d))) {
		char l[PATH_MAX + 80], target[PATH_MAX];
		snprintf(l, sizeof l, "%s/%s", p, e->d_name);
		ssize_t n = readlink(l, target, sizeof target - 1);
		if (n <= 0)
			continue;
		target[n] = 0;
		size_t k = strlen(suffix);
		found = (size_t)n >= k && !strcmp(target + n - k, suffix);
	}
	if (d)
		closedir(d);
	return found;
}

/* Appends what can be read from FD now (non-blocking) to *BUF, of *N bytes. */
static void docs_drain(int fd, char **buf, size_t *n)
{
	char b[4096];
	ssize_t k;
	while ((k = read(fd, b, sizeof b)) > 0)
		tappend(buf, n, b, (size_t)k);
}

/* In a child after setsid(): terminal S becomes its controlling one, raw,
 * so that what is written there arrives byte for byte. */
static void docs_tty_take(int s)
{
	ioctl(s, TIOCSCTTY, 0);
	struct termios tio;
	if (tcgetattr(s, &tio) == 0) {
		cfmakeraw(&tio);
		tcsetattr(s, TCSANOW, &tio);
	}
}

/*
 * Runs ARGV with stdout on /dev/null and stderr on a new terminal (or on a
 * pipe when PIPE), holding it still for 1.2 s once it is in the middle of
 * the phase HOW and SUFFIX mark. Fills *ERR with what it wrote on stderr and
 * *STOPPED with whether the stop happened. Returns its exit status, or -1.
 */
static int docs_pty_run(char *const argv[], int pipe_err, enum docs_pause how, const char *suffix,
                        char **err, int *stopped)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY), pe[2] = {-1, -1};
	if (m < 0 || grantpt(m) || unlockpt(m) || (pipe_err && pipe(pe)))
		return -1;
	char *sname = ptsname(m);
	if (!sname)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		setsid();
		int s = open(sname, O_RDWR);
		if (s < 0)
			_exit(126);
		docs_tty_take(s);
		if (how == DOCS_PAUSE_MAPPED && ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
			_exit(125);
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		dup2(pipe_err ? pe[1] : s, 2);
		close(m);
		execv(argv[0], argv);
		_exit(127);
	}
	/* The terminal stays open with a pipe too: closing its master would
	 * hang up the tool. */
	int rd = pipe_err ? pe[0] : m;
	if (pipe_err)
		close(pe[1]);
	fcntl(rd, F_SETFL, O_NONBLOCK);
	size_t n = 0;
	*err = calloc(1, 1);
	*stopped = 0;
	int seen = 0, status = -1, traced = how == DOCS_PAUSE_MAPPED, traced_opts = 0;
	double gone_at = 0, resume_at = 0, end = tnow() + 120;
	for (;;) {
		docs_drain(rd, err, &n);
		double now = tnow();
		if (how == DOCS_PAUSE_MAPPED && traced) {
			/* Stopped at each system call (the child asked to be traced),
			 * looked at, let go: a busy machine cannot hide the few
			 * milliseconds of reading. Found: held 1.2 s, then let go
			 * for good (before its exit, where LeakSanitizer traces it). */
			int st;
			if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st)) {
				status = st;
				break;
			}
			int sig = WSTOPSIG(st);
			if (sig == (SIGTRAP | 0x80) || sig == SIGTRAP) {
				sig = 0;
				if (!*stopped && docs_proc_has(pid, how, suffix)) {
					*stopped = 1;
					struct timespec hold = {1, 200000000};
					nanosleep(&hold, NULL);
					ptrace(PTRACE_DETACH, pid, NULL, NULL);
					traced = 0;
					continue;
				}
			}
			if (sig == 0 && !traced_opts) {
				ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)PTRACE_O_TRACESYSGOOD);
				traced_opts = 1;
			}
			ptrace(PTRACE_SYSCALL, pid, NULL, (void *)(long)sig);
			continue;
		} else if (!*stopped && how != DOCS_PAUSE_MAPPED) {
			int has = docs_proc_has(pid, how, suffix);
			int go = 0;
			if (has) {
				seen = 1;
				gone_at = 0;
			} else if (seen && gone_at == 0) {
				gone_at = now;
			} else if (seen && now - gone_at >= 0.15) {
				go = 1;
			}
			if (go && kill(pid, SIGSTOP) == 0) {
				*stopped = 1;
				resume_at = now + 1.2;
			}
		} else if (resume_at > 0 && now >= resume_at) {
			kill(pid, SIGCONT);
			resume_at = 0;
		}
		pid_t w = waitpid(pid, &status, WNOHANG | WUNTRACED);
		if (w == pid && WIFSTOPPED(status))
			w = 0;
		if (w == pid)
			break;
		if (now > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		if (*stopped) {
			struct pollfd pf = {rd, POLLIN, 0};
			poll(&pf, 1, 20);
		}
	}
	docs_drain(rd, err, &n); /* what is still there after the exit */
	close(rd);
	if (pipe_err)
		close(m);
	if (WIFSIGNALED(status))
		fprintf(stderr, "    %s: killed by signal %d\n", argv[0], WTERMSIG(status));
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * The three runs of a progress test, each stopped as docs_pty_run says:
 * PLAIN with stderr on a terminal (a line with WHAT, erased at the end),
 * QUIET (PLAIN with -q) on a terminal, PLAIN with stderr a pipe (neither
 * shows anything). DDL_SKIP when the tool finished before the stop.
 */
static int docs_progress(char *const plain[], char *const quiet[], enum docs_pause how,
                         const char *suffix, const char *what)
{
	static const char *const mode[] = {"a terminal", "a terminal with -q", "a pipe"};
	for (int i = 0; i < 3; i++) {
		char *err = NULL;
		int stopped = 0;
		int st = docs_pty_run(i == 1 ? quiet : plain, i == 2, how, suffix, &err, &stopped);
		if (!stopped) {
			fprintf(stderr, "    %s (status %d) finished before it could be held: skipped\n",
			        plain[0], st);
			free(err);
			return DDL_SKIP;
		}
		CHECK(st == 0, "%s with stderr on %s: status %d: %s", plain[0], mode[i], st,
		      err ? err : "");
		if (i == 0) {
			CHECK(strstr(err, what) && strchr(err, '\r'),
			      "no progress line on the terminal after 1.2 s stopped: '%s'", err);
			/* Erased when done: the last thing written is the erase. */
			size_t n = strlen(err);
			CHECK(n >= 4 && !strcmp(err + n - 4, "\r\033[K"), "the progress line is not erased");
		} else {
			CHECK(!strstr(err, what) && !strchr(err, '\r'), "a progress line on %s: '%s'", mode[i],
			      err);
		}
		free(err);
	}
	return DDL_PASS;
}

int test_docs_progress_report(void)
{
	/* Two ranks of 400 quick all-reduces (some 10,000 events each), each
	 * trace named 12 times (as links): tens of milliseconds of reading,
	 * long beside a look into /proc. */
	char *dir = tmpdir(), t[PATH_MAX], many[PATH_MAX], port[16];
	snprintf(t, sizeof t, "%s/t", dir);
	snprintf(many, sizeof many, "%s/many", dir);
	snprintf(port, sizeof port, "%d", docs_port());
	char *job[] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", t, "--",
	               (char *)tbuild("examples/tcpring"), "-n", "400", "-m", "1", "-c", "0", "-p",
	               port, NULL};
	char *env[] = {"WORLD_SIZE=2", NULL};
	struct ddl_run_result r;
	CHECK(trun(job, env, 120, &r) == 0 && docs_status(&r) == 0, "tcpring under ddlprof: %s%s",
	      r.out, r.err);
	trun_free(&r);
	CHECK(mkdir(many, 0700) == 0, "mkdir %s", many);
	DIR *d = opendir(t);
	CHECK(d, "%s", t);
	struct dirent *e;
	int links = 0;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n < 5 || strcmp(e->d_name + n - 5, ".ddlt"))
			continue;
		for (int i = 0; i < 12; i++) {
			char from[PATH_MAX + 300], to[PATH_MAX + 300];
			snprintf(from, sizeof from, "%s/%s", t, e->d_name);
			snprintf(to, sizeof to, "%s/%d.%s", many, i, e->d_name);
			CHECK(symlink(from, to) == 0, "symlink %s", to);
			links++;
		}
	}
	closedir(d);
	CHECK(links >= 24, "%d traces", links);
	/* held where a trace is first mapped, while the traces are read: the
	 * line counts the events read. On one thread, the one whose calls
	 * are traced: on worker threads the directory's traces are mapped
	 * where that trace cannot see, and the hold came later or never */
	char *plain[] = {(char *)tbuild("bin/ddlprof-report"), "--threads", "1", many, NULL};
	char *quiet[] = {(char *)tbuild("bin/ddlprof-report"), "--threads", "1", "-q", many, NULL};
	int rc = docs_progress(plain, quiet, DOCS_PAUSE_MAPPED, ".ddlt", "events read");
	if (rc == DDL_PASS) {
		trm(dir);
		free(dir);
	}
	return rc;
}

int test_docs_progress_sim(void)
{
	char *dir = tmpdir(), jobs[PATH_MAX];
	snprintf(jobs, sizeof jobs, "%s/jobs.csv", dir);
	char *gen[] = {(char *)tbuild("bin/ddlprof-sim"), "--generate", "150000", "--cluster", "2x4x8",
	               "--seed", "3", NULL};
	struct ddl_run_result r;
	CHECK(trun(gen, NULL, 60, &r) == 0 && docs_status(&r) == 0 && r.nout > 4000000,
	      "ddlprof-sim --generate: %s", r.err);
	CHECK(docs_write(jobs, r.out, r.nout) == 0, "writing %s", jobs);
	trun_free(&r);
	char *plain[] = {(char *)tbuild("bin/ddlprof-sim"), "--trace", jobs, "--cluster", "2x4x8",
	                 "--policy", "dally", NULL};
	char *quiet[] = {(char *)tbuild("bin/ddlprof-sim"), "-q", "--trace", jobs, "--cluster",
	                 "2x4x8", "--policy", "dally", NULL};
	int rc = docs_progress(plain, quiet, DOCS_PAUSE_CLOSED, "/jobs.csv", "jobs done");
	if (rc == DDL_PASS) {
		trm(dir);
		free(dir);
	}
	return rc;
}

/*
 * ---- One meaning per flag (issue 16) ----
 * Each command with its option table, the one its parser and --help are
 * made from (ddlprof/cli.h), its man page and the status of a usage error.
 */
static const struct ddl_cli_opt docs_launch_opts[] = {DDL_LAUNCH_OPTIONS(DDL_CLI_OPT)};
static const struct ddl_cli_opt docs_report_opts[] = {DDL_REPORT_OPTIONS(DDL_CLI_OPT)};
static const struct ddl_cli_opt docs_rec_opts[] = {DDL_REC_OPTIONS(DDL_CLI_OPT)};
static const struct ddl_cli_opt docs_sim_opts[] = {DDL_SIM_OPTIONS(DDL_CLI_OPT)};
#define DOCS_N(a) (sizeof a / sizeof a[0])
static const struct docs_tool {
	const char *bin, *name, *man;
	const struct ddl_cli_opt *opt;
	size_t n;
	int bad; /* a usage error's status: the launcher's own errors are 125 */
} docs_tools[] = {
	{"bin/ddlprof", "ddlprof", "man/ddlprof.1", docs_launch_opts, DOCS_N(docs_launch_opts), 125},
	{"bin/ddlprof-report", "ddlprof-report", "man/ddlprof-report.1", docs_report_opts,
	 DOCS_N(docs_report_opts), 2},
	{"bin/ddlprof-recommend", "ddlprof-recommend", "man/ddlprof-recommend.1", docs_rec_opts,
	 DOCS_N(docs_rec_opts), 2},
	{"bin/ddlprof-sim", "ddlprof-sim", "man/ddlprof-sim.1", docs_sim_opts, DOCS_N(docs_sim_opts), 2},
};

/*
 * Whether HELP (--help's output) has a line for option O, "  -o, --output
 * FILE" or "      --trace LIST", followed by a description on that line
 * or, indented, on the next.
 */
static int docs_help_has(const char *help, const struct ddl_cli_opt *o)
{
	char want[128];
	if (o->letter)
		snprintf(want, sizeof want, "  -%c, --%s%s%s", o->letter, o->name, o->arg ? " " : "",
		         o->arg ? o->arg : "");
	else
		snprintf(want, sizeof want, "      --%s%s%s", o->name, o->arg ? " " : "",
		         o->arg ? o->arg : "");
	size_t n = strlen(want);
	for (const char *l = help; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, want, n))
			continue;
		const char *rest = l + n;
		if (*rest == ' ') {
			while (*rest == ' ')
				rest++;
			if (*rest && *rest != '\n')
				return 1; /* described on its line */
		} else if (*rest == '\n') {
			const char *next = rest + 1;
			size_t ind = strspn(next, " ");
			if (ind >= 8 && next[ind] && next[ind] != '\n')
				return 1; /* on the next */
		}
	}
	return 0;
}

/* Runs ARGV, a usage error: status BAD, nothing on stdout, and one line on
 * stderr, "NAME: ...; try --help". */
static int docs_one_line_error(char *const argv[], const char *name, int bad)
{
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 30, &r) == 0, "%s %s did not finish", name, argv[1]);
	char prefix[64];
	snprintf(prefix, sizeof prefix, "%s: ", name);
	char *nl = strchr(r.err, '\n');
	CHECK(docs_status(&r) == bad && r.nout == 0 && !strncmp(r.err, prefix, strlen(prefix)) &&
	      nl && !nl[1] && strstr(r.err, "; try --help\n"),
	      "%s %s: status %d (want %d), stdout '%.80s', stderr '%s' (want one line '%s...; try "
	      "--help')", name, argv[1], docs_status(&r), bad, r.out, r.err, prefix);
	trun_free(&r);
	return DDL_PASS;
}

/*
 * The SYNOPSIS of a man page (its source) as plain words: the roff
 * requests dropped, \- as -, font escapes and quotes removed. NULL when
 * the page has none. The caller frees it.
 */
static char *docs_synopsis(const char *page)
{
	FILE *f = fopen(page, "r");
	if (!f)
		return NULL;
	char line[1024];
	int in = 0;
	size_t cap = 1 << 16, n = 0;
	char *out = calloc(1, cap);
	while (out && fgets(line, sizeof line, f)) {
		if (!strncmp(line, ".SH", 3)) {
			if (in)
				break;
			in = strstr(line, "SYNOPSIS") != NULL;
			continue;
		}
		if (!in)
			continue;
		const char *p = line;
		if (*p == '.') /* a request: its name goes, its arguments stay */
			p += strcspn(p, " \n");
		for (; *p && n + 2 < cap; p++) {
			if (p[0] == '\\' && p[1] == '-') {
				out[n++] = '-';
				p++;
			} else if (p[0] == '\\' && p[1] == 'f' && p[2]) {
				p += 2;
			} else if (p[0] == '\\' && p[1] == '&') {
				p++;
			} else if (*p == '"' || *p == '\n') {
				out[n++] = ' ';
			} else {
				out[n++] = *p;
			}
		}
		out[n++] = ' ';
	}
	fclose(f);
	if (out && !n) {
		free(out);
		out = NULL;
	}
	return out;
}

/* Whether TEXT holds OPT ("--trace", "-o") as a word of its own. */
static int docs_has_word(const char *text, const char *opt)
{
	size_t n = strlen(opt);
	for (const char *p = strstr(text, opt); p; p = strstr(p + 1, opt)) {
		char before = p == text ? ' ' : p[-1], after = p[n];
		if (strchr(" [(|", before) && (!after || strchr(" ])|=,.", after)))
			return 1;
	}
	return 0;
}

/*
 * For each of the four commands: --help lists every option of its table,
 * each with a description; an unknown option, an unknown short one and
 * one missing its value each give one line on stderr, "NAME: ...; try
 * --help", and status 2 (125 for the launcher, whose own errors stay apart
 * from the command's); -q is accepted; every option of the table is in
 * the SYNOPSIS of its man page (a short option's letter will do). Then
 * -o, --force and --json mean the same for ddlprof-sim and
 * ddlprof-recommend as for ddlprof-report (report_errors): the output
 * written whole to -o's file, never over an existing one without --force.
 */
int test_docs_flags(void)
{
	struct ddl_run_result r;
	for (size_t t = 0; t < DOCS_N(docs_tools); t++) {
		const struct docs_tool *T = &docs_tools[t];
		const char *bin = tbuild(T->bin);
		char *help[] = {(char *)bin, "--help", NULL};
		CHECK(trun(help, NULL, 30, &r) == 0 && docs_status(&r) == 0, "%s --help: status %d",
		      T->name, docs_status(&r));
		for (size_t i = 0; i < T->n; i++)
			CHECK(docs_help_has(r.out, &T->opt[i]),
			      "%s --help has no described line for --%s:\n%s", T->name, T->opt[i].name, r.out);
		trun_free(&r);

		/* the first option that takes a value, given none */
		const char *valued = NULL;
		for (size_t i = 0; i < T->n && !valued; i++)
			if (T->opt[i].arg)
				valued = T->opt[i].name;
		CHECK(valued, "%s: no option takes a value", T->name);
		char missing[64];
		snprintf(missing, sizeof missing, "--%s", valued);
		char *bad1[] = {(char *)bin, "--no-such-option", "true", NULL};
		char *bad2[] = {(char *)bin, "-Z", "true", NULL};
		char *bad3[] = {(char *)bin, missing, NULL};
		if (docs_one_line_error(bad1, T->name, T->bad) != DDL_PASS ||
		    docs_one_line_error(bad2, T->name, T->bad) != DDL_PASS ||
		    docs_one_line_error(bad3, T->name, T->bad) != DDL_PASS)
			return DDL_FAIL;

		char *quiet[] = {(char *)bin, "-q", "--version", NULL};
		CHECK(trun(quiet, NULL, 30, &r) == 0 && docs_status(&r) == 0 && r.nerr == 0 &&
		      !strncmp(r.out, T->name, strlen(T->name)),
		      "%s -q --version: status %d, stdout '%s', stderr '%s'", T->name, docs_status(&r),
		      r.out, r.err);
		trun_free(&r);

		char *syn = docs_synopsis(docs_src(T->man));
		CHECK(syn, "%s has no SYNOPSIS", T->man);
		for (size_t i = 0; i < T->n; i++) {
			char lng[64], shrt[4] = "";
			snprintf(lng, sizeof lng, "--%s", T->opt[i].name);
			if (T->opt[i].letter)
				snprintf(shrt, sizeof shrt, "-%c", T->opt[i].letter);
			CHECK(docs_has_word(syn, lng) || (shrt[0] && docs_has_word(syn, shrt)),
			      "%s: SYNOPSIS lacks %s%s%s: %s", T->man, shrt, shrt[0] ? " or " : "", lng, syn);
		}
		free(syn);
	}

	/* -q does something: ddlprof-recommend's notes, ddlprof's messages */
	const char *rec = tbuild("bin/ddlprof-recommend");
	char *notes[] = {(char *)rec, "--layers", "10", "--params", "1e6", "--compute-ms", "100",
	                 "--iterations", "1000", NULL};
	char *noted[] = {(char *)rec, "-q", "--layers", "10", "--params", "1e6", "--compute-ms", "100",
	                 "--iterations", "1000", NULL};
	CHECK(trun(notes, NULL, 60, &r) == 0 && docs_status(&r) == 0 && strstr(r.err, "note: "),
	      "ddlprof-recommend without -q: status %d, no notes: '%s'", docs_status(&r), r.err);
	trun_free(&r);
	CHECK(trun(noted, NULL, 60, &r) == 0 && docs_status(&r) == 0 && r.nerr == 0 && r.nout > 0,
	      "ddlprof-recommend -q: status %d, stderr '%s'", docs_status(&r), r.err);
	trun_free(&r);

	/* -o, --force and --json, in ddlprof-sim and ddlprof-recommend */
	char *dir = tmpdir(), out[PATH_MAX];
	snprintf(out, sizeof out, "%s/out.json", dir);
	const char *sim = tbuild("bin/ddlprof-sim"), *jobs = docs_src("examples/jobs.csv");
	char *const cmds[][14] = {
		{(char *)sim, "--trace", (char *)jobs, "--cluster", "2x4x8", "--json", "-o", out, NULL},
		{(char *)rec, "--layers", "10", "--params", "1e6", "--compute-ms", "100", "--iterations",
		 "1000", "--json", "-o", out, NULL},
	};
	static const char *const schema[] = {"ddlprof-sim/1", "ddlprof-recommend/1"};
	for (size_t i = 0; i < 2; i++) {
		unlink(out);
		CHECK(trun(cmds[i], NULL, 60, &r) == 0 && docs_status(&r) == 0 && r.nout == 0,
		      "%s --json -o: status %d, stdout '%.80s', stderr '%s'", cmds[i][0], docs_status(&r),
		      r.out, r.err);
		trun_free(&r);
		json_t *j = json_load_file(out, 0, NULL);
		CHECK(j && !strcmp(json_string_value(json_object_get(j, "schema")) ?: "", schema[i]),
		      "%s -o: %s is not %s JSON", cmds[i][0], out, schema[i]);
		json_decref(j);
		CHECK(docs_write(out, "keep", 4) == 0, "%s", out);
		CHECK(trun(cmds[i], NULL, 60, &r) == 0 && docs_status(&r) == 1 && r.nout == 0 &&
		      strstr(r.err, "--force"),
		      "%s -o over an existing file: status %d, stderr '%s'", cmds[i][0], docs_status(&r),
		      r.err);
		trun_free(&r);
		char buf[8] = "";
		FILE *f = fopen(out, "r");
		CHECK(f && fread(buf, 1, sizeof buf, f) == 4 && !memcmp(buf, "keep", 4),
		      "%s: replaced without --force", out);
		fclose(f);
		char *forced[16];
		size_t k = 0;
		for (; cmds[i][k]; k++)
			forced[k] = cmds[i][k];
		forced[k++] = "--force";
		forced[k] = NULL;
		CHECK(trun(forced, NULL, 60, &r) == 0 && docs_status(&r) == 0, "%s --force: %s",
		      cmds[i][0], r.err);
		trun_free(&r);
		j = json_load_file(out, 0, NULL);
		CHECK(j, "%s --force -o: %s not replaced by JSON", cmds[i][0], out);
		json_decref(j);
	}
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * The one rate parser (ddlprof/rate.h) every rate option uses: a table of
 * spellings and their bits per second, and of refusals; then each tool
 * with a rate: ddlprof-report --bw rack=1 is 1 Gbit/s (not 1 byte a
 * second) as rack=1gbit is, ddlprof-sim takes --bw rack=1gbit, and absurd
 * rates are refused by all three in one line naming the option and the
 * value.
 */
int test_docs_rate_units(void)
{
	static const struct {
		const char *in;
		double bps;
	} good[] = {
		{"25gbit", 25e9},   {"400mbit", 400e6},   {"100mbit", 100e6}, {"10G", 10e9},
		{"10g", 10e9},      {"25", 25e9},         {"0.5", 0.5e9},     {"1.5Tbit/s", 1.5e12},
		{"100M", 100e6},    {"64K", 64e3},        {"2T", 2e12},       {"25GBIT", 25e9},
		{"25GBit", 25e9},   {"10gbits", 10e9},    {"10Gb/s", 10e9},   {"10Gbps", 10e9},
		{"2000kbps", 2e6},  {"3Mb", 3e6},         {"1kbit/S", 1e3},   {"1000bit", 1e3},
		{"8e3bit", 8e3},    {"1e2G", 100e9},      {"100tbit", 1e14},  {"100T", 1e14},
		{"10mbitps", 10e6}, {"1e-5", 1e4},        {".5g", 0.5e9},     {"5.", 5e9},
	};
	static const char *const bad[] = {
		"",       "0",      "0.0",     "-1",      "-25gbit", "+5",     "nan",    "NaN",
		"inf",    "0x10",   "25GB",    "25GB/s",  "10MBps",  "1B",     "999bit", "0.5kbit",
		"101tbit", "1e15",  "1e400",   "25gbit!", "25 gbit", " 25",    "fast",   "10ps",
		"10/s",   "10parsec", ".",     "1e",      "25gbitx", "gbit",   "10gbit/s/s", "1..5",
	};
	char why[256];
	for (size_t i = 0; i < DOCS_N(good); i++) {
		double bps = -1;
		why[0] = 0;
		CHECK(ddl_rate_parse(good[i].in, strlen(good[i].in), &bps, why, sizeof why) == 0,
		      "'%s' refused: %s", good[i].in, why);
		CHECK(bps > good[i].bps * (1 - 1e-12) && bps < good[i].bps * (1 + 1e-12),
		      "'%s' is %.17g bit/s, not %.17g", good[i].in, bps, good[i].bps);
	}
	for (size_t i = 0; i < DOCS_N(bad); i++) {
		double bps = -1;
		why[0] = 0;
		CHECK(ddl_rate_parse(bad[i], strlen(bad[i]), &bps, why, sizeof why) < 0,
		      "'%s' taken as %g bit/s", bad[i], bps);
		CHECK(bps == -1 && why[0] && (!bad[i][0] || strstr(why, bad[i])),
		      "'%s': the reason '%s' does not name it", bad[i], why);
	}
	/* a part of a list: only the N bytes given */
	double bps = 0;
	CHECK(ddl_rate_parse("25gbit,rack=1", 6, &bps, why, sizeof why) == 0 && bps == 25e9,
	      "a rate within a list: %s", why);

	/* absurd rates, refused by each tool in its one line */
	const char *T = tbuild("bin/ddlprof-report"), *S = tbuild("bin/ddlprof-sim"),
	           *L = tbuild("bin/ddlprof");
	const char *jobs = docs_src("examples/jobs.csv");
	struct {
		char *argv[10];
		const char *name, *says;
		int status;
	} c[] = {
		{{(char *)T, "--bw", "rack=0", "/nonexistent", NULL}, "ddlprof-report", "--bw 'rack=0'", 2},
		{{(char *)T, "--bw", "cluster=25GB", "/nonexistent", NULL}, "ddlprof-report",
		 "--bw 'cluster=25GB'", 2},
		{{(char *)T, "--bw", "rack=1e15", "/nonexistent", NULL}, "ddlprof-report", "above", 2},
		{{(char *)S, "--trace", (char *)jobs, "--bw", "rack=nan", NULL}, "ddlprof-sim",
		 "--bw 'rack=nan'", 2},
		{{(char *)S, "--trace", (char *)jobs, "--bw", "rack=-1gbit", NULL}, "ddlprof-sim",
		 "--bw 'rack=-1gbit'", 2},
		{{(char *)L, "--perturb-net", "rate=100bit", "true", NULL}, "ddlprof",
		 "--perturb-net 'rate=100bit'", 125},
		{{(char *)L, "--perturb-net", "rate=10mbitx", "true", NULL}, "ddlprof",
		 "--perturb-net 'rate=10mbitx'", 125},
	};
	struct ddl_run_result r;
	for (size_t i = 0; i < DOCS_N(c); i++) {
		if (docs_one_line_error(c[i].argv, c[i].name, c[i].status) != DDL_PASS)
			return DDL_FAIL;
		CHECK(trun(c[i].argv, NULL, 30, &r) == 0 && strstr(r.err, c[i].says),
		      "%s %s %s: '%s' does not say '%s'", c[i].name, c[i].argv[1], c[i].argv[2], r.err,
		      c[i].says);
		trun_free(&r);
	}

	/* ddlprof-sim: 1gbit and a bare 1 are the same rate */
	char *s1[] = {(char *)S, "--trace", (char *)jobs, "--cluster", "2x4x8", "--bw",
	              "rack=1gbit,cluster=400mbit", "--json", NULL};
	char *s2[] = {(char *)S, "--trace", (char *)jobs, "--cluster", "2x4x8", "--bw",
	              "rack=1,cluster=0.4", "--json", NULL};
	struct ddl_run_result r2;
	CHECK(trun(s1, NULL, 60, &r) == 0 && docs_status(&r) == 0, "sim --bw rack=1gbit: %s", r.err);
	CHECK(trun(s2, NULL, 60, &r2) == 0 && docs_status(&r2) == 0, "sim --bw rack=1: %s", r2.err);
	CHECK(r.nout == r2.nout && !memcmp(r.out, r2.out, r.nout),
	      "sim: --bw rack=1gbit,cluster=400mbit and rack=1,cluster=0.4 differ:\n%s\n%s", r.out,
	      r2.out);
	trun_free(&r);
	trun_free(&r2);

	/* ddlprof-report: rack=1 is 1 Gbit/s, as rack=1gbit and rack=1G */
	char *dir = tmpdir(), t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	if (docs_job(tbuild("bin/ddlprof"), t) != DDL_PASS)
		return DDL_FAIL;
	static const char *const spell[] = {"rack=1", "rack=1gbit", "rack=1G"};
	for (size_t i = 0; i < DOCS_N(spell); i++) {
		char *a[] = {(char *)T, "--json", "--bw", (char *)spell[i], t, NULL};
		CHECK(trun(a, NULL, 60, &r) == 0 && docs_status(&r) == 0, "report --bw %s: %s", spell[i],
		      r.err);
		json_t *j = json_loads(r.out, 0, NULL);
		json_t *bw = tjget(j, "job.sensitivity.bandwidth_bps.rack");
		CHECK(bw && json_number_value(bw) == 1e9, "report --bw %s: rack at %g bit/s, not 1e9",
		      spell[i], bw ? json_number_value(bw) : -1.0);
		json_decref(j);
		trun_free(&r);
	}
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * Stand-ins for dpkg-query, id and apt-get in DIR, to run
 * scripts/install-deps.sh as another user on another machine: dpkg-query
 * finds every package installed but those in MISSING, id -u prints UID,
 * apt-get appends its arguments to DIR/apt.log. 0, or -1.
 */
static int docs_fake_debian(const char *dir, const char *missing, int uid)
{
	char p[PATH_MAX + 16], text[1024];
	snprintf(p, sizeof p, "%s/dpkg-query", dir);
	snprintf(text, sizeof text,
	         "#!/bin/sh\nfor p; do :; done\ncase \" %s \" in *\" $p \"*) exit 1 ;; esac\n"
	         "printf 'install ok installed'\n",
	         missing);
	if (docs_write(p, text, strlen(text)) || chmod(p, 0755))
		return -1;
	snprintf(p, sizeof p, "%s/id", dir);
	snprintf(text, sizeof text, "#!/bin/sh\necho %d\n", uid);
	if (docs_write(p, text, strlen(text)) || chmod(p, 0755))
		return -1;
	snprintf(p, sizeof p, "%s/apt-get", dir);
	snprintf(text, sizeof text, "#!/bin/sh\necho \"$*\" >>'%s/apt.log'\n", dir);
	return docs_write(p, text, strlen(text)) || chmod(p, 0755) ? -1 : 0;
}

/* 1 when the space-separated LIST has the word W. */
static int docs_list_has(const char *list, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = strstr(list, w); p; p = strstr(p + 1, w))
		if ((p == list || p[-1] == ' ' || p[-1] == ':') && (p[n] == 0 || p[n] == ' ' || p[n] == '\n'))
			return 1;
	return 0;
}

/* The packages that only the tests, or only make fuzz, need. */
static const char *const docs_test_only[] = {"chromium", "python3-torch", "openmpi-bin",
                                             "libopenmpi-dev"};

int test_docs_deps_targets(void)
{
	if (!docs_have("make")) {
		fprintf(stderr, "    needs make: skipped\n");
		return DDL_SKIP;
	}
	char b[PATH_MAX];
	snprintf(b, sizeof b, "B=%s", tbuild(""));
	b[strlen(b) - 1] = 0;
	char *env[] = {"MAKEFLAGS=", "MAKELEVEL=", "MFLAGS=", NULL};
	static const char *const targets[] = {"demo", "check", "fuzz"};
	for (size_t t = 0; t < 3; t++) {
		/* What the target asks scripts/install-deps.sh for (make -n runs
		 * the recursive makes too, printing their commands only). */
		char *mk[] = {"make", "-n", "--no-print-directory", "-C", (char *)docs_src(""), b,
		              (char *)targets[t], NULL};
		struct ddl_run_result r;
		CHECK(trun(mk, env, 120, &r) == 0 && docs_status(&r) == 0, "make -n %s: %s", targets[t],
		      r.err);
		char sets[256] = "";
		for (char *l = r.out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
			const char *key = "scripts/install-deps.sh";
			if (strncmp(l, key, strlen(key)))
				continue;
			size_t n = strcspn(l + strlen(key), "\n");
			if (strlen(sets) + n + 1 < sizeof sets)
				strncat(sets, l + strlen(key), n);
		}
		trun_free(&r);
		CHECK(*sets, "make -n %s runs no scripts/install-deps.sh SET", targets[t]);
		char cmd[512];
		snprintf(cmd, sizeof cmd, "'%s' --list%s", docs_src("scripts/install-deps.sh"), sets);
		char *list[] = {"/bin/sh", "-c", cmd, NULL};
		CHECK(trun(list, NULL, 30, &r) == 0 && docs_status(&r) == 0, "%s: %s", cmd, r.err);
		char *req = strstr(r.out, "required:"), *opt = strstr(r.out, "optional:");
		CHECK(req && opt, "%s printed no required: and optional: lines: '%s'", cmd, r.out);
		*strchrnul(req, '\n') = 0;
		*strchrnul(opt, '\n') = 0;
		CHECK(docs_list_has(req, "libjansson-dev"), "make %s: %s", targets[t], req);
		int fuzz = t == 2, check = t == 1;
		CHECK(docs_list_has(req, "clang") == fuzz && docs_list_has(req, "libclang-rt-14-dev") == fuzz,
		      "make %s (sets%s): %s", targets[t], sets, req);
		CHECK(docs_list_has(req, "zlib1g-dev") == check && docs_list_has(req, "iproute2") == check,
		      "make %s (sets%s): %s", targets[t], sets, req);
		for (size_t k = 0; k < sizeof docs_test_only / sizeof docs_test_only[0]; k++) {
			CHECK(!docs_list_has(req, docs_test_only[k]), "make %s requires %s", targets[t],
			      docs_test_only[k]);
			CHECK(docs_list_has(opt, docs_test_only[k]) == check, "make %s (sets%s): %s",
			      targets[t], sets, opt);
		}
		trun_free(&r);
	}

	/* As a user without clang, chromium, torch or Open MPI: make demo's
	 * packages are there, make check's tests skip, make fuzz names clang.
	 * As root: nothing installed for the demo, the tests' packages for
	 * make check, clang for make fuzz. */
	char *dir = tmpdir(), path[PATH_MAX + 8], log[PATH_MAX];
	const char *missing = "clang libclang-rt-14-dev chromium python3-torch openmpi-bin libopenmpi-dev";
	snprintf(path, sizeof path, "PATH=%s:%s", dir, getenv("PATH") ?: "/usr/bin:/bin");
	snprintf(log, sizeof log, "%s/apt.log", dir);
	char *fenv[] = {path, NULL};
	static const struct {
		int uid;
		const char *set;
		int status;
		const char *said, *not_said, *installed, *not_installed;
	} cases[] = {
		{1000, "demo", 0, NULL, "clang", NULL, NULL},
		{1000, "check", 0, "python3-torch", "clang", NULL, NULL},
		{1000, "fuzz", 1, "missing Debian packages: clang libclang-rt-14-dev", "chromium", NULL, NULL},
		{0, "demo", 0, NULL, "installing", NULL, NULL},
		{0, "check", 0, "installing", "clang", "python3-torch openmpi-bin libopenmpi-dev chromium",
		 "clang"},
		{0, "fuzz", 0, "installing clang libclang-rt-14-dev", "chromium", "clang libclang-rt-14-dev",
		 "chromium"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		unlink(log);
		CHECK(docs_fake_debian(dir, missing, cases[i].uid) == 0, "writing the stand-ins in %s", dir);
		char *argv[] = {(char *)docs_src("scripts/install-deps.sh"), (char *)cases[i].set, NULL};
		struct ddl_run_result r;
		CHECK(trun(argv, fenv, 30, &r) == 0, "install-deps.sh %s did not finish", cases[i].set);
		const char *who = cases[i].uid ? "a user" : "root";
		CHECK(docs_status(&r) == cases[i].status, "install-deps.sh %s as %s: status %d (want %d): %s",
		      cases[i].set, who, docs_status(&r), cases[i].status, r.err);
		CHECK(cases[i].said ? strstr(r.err, cases[i].said) != NULL : r.nerr == 0,
		      "install-deps.sh %s as %s said '%s' (want '%s')", cases[i].set, who, r.err,
		      cases[i].said ? cases[i].said : "");
		CHECK(!strstr(r.err, cases[i].not_said), "install-deps.sh %s as %s: '%s'", cases[i].set, who,
		      r.err);
		trun_free(&r);
		FILE *f = fopen(log, "r");
		char got[1024] = "";
		size_t n = f ? fread(got, 1, sizeof got - 1, f) : 0;
		got[n] = 0;
		if (f)
			fclose(f);
		if (cases[i].installed) {
			CHECK(strstr(got, "install") && strstr(got, cases[i].installed) &&
			              !docs_list_has(got, cases[i].not_installed),
			      "install-deps.sh %s as root ran apt-get '%s'", cases[i].set, got);
		} else {
			CHECK(n == 0, "install-deps.sh %s as %s ran apt-get '%s'", cases[i].set, who, got);
		}
	}
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* Recipe lines that run a compiler or make a file, printed whole unless quiet. */
static const char *const docs_loud[] = {"\t$(CC)",     "\t$(NVCC)", "\t$(MPICC)", "\t$(FUZZ_CC)",
                                        "\t$(TSAN_CC)", "\t$(AR)",   "\tcp ",      "\t$(PYTHON3)"};

int test_docs_quiet_build(void)
{
	if (!docs_have("make")) {
		fprintf(stderr, "    needs make: skipped\n");
		return DDL_SKIP;
	}
	/* Every build line goes through say (kbuild's short lines). */
	FILE *f = fopen(docs_src("Makefile"), "r");
	CHECK(f, "no Makefile");
	char line[1024];
	int no = 0, said = 0;
	while (fgets(line, sizeof line, f)) {
		no++;
		said += !strncmp(line, "\t$(call say,", 12);
		for (size_t k = 0; k < sizeof docs_loud / sizeof docs_loud[0]; k++)
			CHECK(strncmp(line, docs_loud[k], strlen(docs_loud[k])),
			      "Makefile:%d prints its whole command: %s", no, line);
	}
	fclose(f);
	CHECK(said >= 20, "only %d quiet build lines in the Makefile", said);

	/* The launcher built into a fresh folder: two short lines; with V=1,
	 * the commands. */
	char *dir = tmpdir(), b[PATH_MAX + 8], target[PATH_MAX + 16], want[2 * PATH_MAX];
	char *env[] = {"MAKEFLAGS=", "MAKELEVEL=", "MFLAGS=", NULL};
	for (int v = 0; v < 2; v++) {
		snprintf(b, sizeof b, "B=%s/b%d", dir, v);
		snprintf(target, sizeof target, "%s/b%d/bin/ddlprof", dir, v);
		char *mk[] = {"make", "--no-print-directory", "-C", (char *)docs_src(""), b,
		              v ? "V=1" : "V=0", target, NULL};
		struct ddl_run_result r;
		CHECK(trun(mk, env, 120, &r) == 0 && docs_status(&r) == 0, "make %s %s: %s%s", b, target,
		      r.out, r.err);
		CHECK(access(target, X_OK) == 0, "make %s built no %s", b, target);
		if (!v) {
			snprintf(want, sizeof want, "  CC      launcher/ddlprof.c\n  LD      %s\n", target);
			CHECK(!strcmp(r.out, want) && r.nerr == 0, "a quiet build printed '%s%s', not '%s'",
			      r.out, r.err, want);
		} else {
			CHECK(strstr(r.out, "-Wall") && strstr(r.out, "-c launcher/ddlprof.c") &&
			              !strstr(r.out, "  CC      "),
			      "make V=1 printed '%s'", r.out);
		}
		trun_free(&r);
	}
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * The README's walkthrough, run as written. A comment before a block says
 * what the block is:
 *
 *   <!-- readme-test GROUP run -->             commands: run with sh -e, so
 *                                              each must succeed (one whose
 *                                              failure is shown: CMD || ...)
 *   <!-- readme-test GROUP script PATH -->     commands that the script PATH
 *                                              runs (checked to be in it):
 *                                              the script is run instead
 *   <!-- readme-test GROUP output [exact] [optional=WORDS]... [ignore=TEXT]... -->
 *                                              what the GROUP's commands
 *                                              since its last output block
 *                                              printed
 *
 * Each group's blocks run in order in a fresh directory that looks like a
 * checkout after make (build/bin, build/lib, build/examples, scripts,
 * examples and recommender linked to the tests' build and sources), on a
 * terminal, as a user would see them. An output block is compared line by
 * line with what the terminal showed: "..." stands for lines left out (and
 * the output may start before and go on after what the README shows);
 * lines match when they have the same shape: the same words, every number
 * a number, a size with any unit, runs of blanks after the indent as one.
 * `exact` compares lines as they are. Lines beginning with optional WORDS
 * (and the more indented lines under them) may be there or not, and so may
 * an ignored TEXT within a line (quoted where it has blanks): they come and
 * go with the machine's load (a straggler, a hint, a clock corrected). The
 * machine's hostname stands for "vm", the README's. Namespace hosts are
 * made with a prefix of their own (ddlrd-h0 for ddl-h0), so that other
 * tests' hosts are left alone, and shown by the README's names.
 */
#define DOCS_NS "ddlrd"

struct docs_block {
	char group[16], kind[16], opts[256];
	char *text; /* the block without its four-space indent */
	int line;   /* its first line in README.md */
};

/* Splits TEXT in place into lines; *N of them. The array is malloc'd. */
static char **docs_lines(char *text, size_t *n)
{
	size_t cap = 1;
	for (const char *p = text; *p; p++)
		cap += *p == '\n';
	char **v = malloc(cap * sizeof *v);
	*n = 0;
	if (!v)
		return NULL;
	for (char *p = text; *p;) {
		v[(*n)++] = p;
		char *e = strchr(p, '\n');
		if (!e)
			break;
		*e = 0;
		p = e + 1;
	}
	return v;
}

static int docs_blank(const char *s)
{
	return s[strspn(s, " \t")] == 0;
}

/*
 * The README's marked blocks, up to MAX, into B; their number, or -1 with
 * a message: a marker without a block, a kind unknown, or a "Real output"
 * paragraph whose block is not marked as output.
 */
static int docs_readme_blocks(struct docs_block *b, int max)
{
	char *text = docs_slurp(docs_src("README.md"));
	size_t n;
	char **l = text ? docs_lines(text, &n) : NULL;
	if (!l) {
		fprintf(stderr, "    cannot read %s\n", docs_src("README.md"));
		free(text);
		return -1;
	}
	int nb = 0, rc = 0;
	size_t real_output = 0; /* the line of a "Real output" still to be marked */
	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *key = "<!-- readme-test ";
		if (strncmp(l[i], key, strlen(key))) {
			int code = !strncmp(l[i], "    ", 4) && !docs_blank(l[i]) && i && docs_blank(l[i - 1]);
			if (code && real_output) {
				fprintf(stderr, "    README.md:%zu: real output without a <!-- readme-test GROUP output --> "
				        "before its block (line %zu)\n", real_output, i + 1);
				rc = -1;
			}
			if (strstr(l[i], "Real output"))
				real_output = i + 1;
			continue;
		}
		struct docs_block *k = &b[nb];
		memset(k, 0, sizeof *k);
		char rest[512];
		snprintf(rest, sizeof rest, "%s", l[i] + strlen(key));
		char *end = strstr(rest, "-->");
		if (end)
			*end = 0;
		int used = 0;
		if (!end || nb == max || sscanf(rest, "%15s %15s %n", k->group, k->kind, &used) < 2 ||
		    (strcmp(k->kind, "run") && strcmp(k->kind, "script") && strcmp(k->kind, "output"))) {
			fprintf(stderr, "    README.md:%zu: a readme-test marker is GROUP run|script|output: %s\n",
			        i + 1, l[i]);
			rc = -1;
			break;
		}
		snprintf(k->opts, sizeof k->opts, "%s", rest + used);
		for (size_t e = strlen(k->opts); e && k->opts[e - 1] == ' '; e--)
			k->opts[e - 1] = 0;
		if (!strcmp(k->kind, "output"))
			real_output = 0;
		size_t j = i + 1;
		while (j < n && docs_blank(l[j]))
			j++;
		size_t first = j, last = j;
		for (; j < n && (docs_blank(l[j]) || !strncmp(l[j], "    ", 4)); j++)
			if (!docs_blank(l[j]))
				last = j + 1;
		if (last == first) {
			fprintf(stderr, "    README.md:%zu: a readme-test marker without an indented block\n", i + 1);
			rc = -1;
			break;
		}
		size_t len = 1;
		for (size_t m = first; m < last; m++)
			len += strlen(l[m]) + 1;
		k->text = calloc(1, len);
		for (size_t m = first; m < last && k->text; m++) {
			strcat(k->text, strlen(l[m]) > 4 ? l[m] + 4 : "");
			strcat(k->text, "\n");
		}
		k->line = (int)first + 1;
		nb++;
		i = last - 1;
	}
	free(l);
	free(text);
	return rc ? -1 : nb;
}

/* What a terminal shows: carriage returns, backspaces and erase to the end
 * of the line applied, other escape sequences dropped. */
struct docs_screen {
	char *out;
	size_t nout, len, col;
	int esc;
	char line[16384];
};

static void docs_screen_put(struct docs_screen *sc, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = b[i];
		if (sc->esc == 1) {
			sc->esc = c == '[' ? 2 : 0;
			continue;
		}
		if (sc->esc == 2) {
			if (c >= 0x40 && c <= 0x7e) {
				if (c == 'K')
					sc->len = sc->col;
				sc->esc = 0;
			}
			continue;
		}
		if (c == 033) {
			sc->esc = 1;
		} else if (c == '\r') {
			sc->col = 0;
		} else if (c == '\b') {
			sc->col -= sc->col > 0;
		} else if (c == '\n') {
			tappend(&sc->out, &sc->nout, sc->line, sc->len);
			tappend(&sc->out, &sc->nout, "\n", 1);
			sc->len = sc->col = 0;
		} else if (sc->col < sizeof sc->line) {
			sc->line[sc->col++] = c;
			if (sc->col > sc->len)
				sc->len = sc->col;
		}
	}
}

/*
 * Runs TEXT with `sh -e -c` in DIR, with the extra ENV entries, stdin
 * /dev/null and stdout and stderr on a new terminal; *OUT (malloc'd) gets
 * what the terminal showed. Returns the exit status, or -1 when it could
 * not start or ran past TIMEOUT_S (then killed, with what it left).
 */
static int docs_tty_sh(const char *text, const char *dir, char *const env[], int timeout_s, char **out)
{
	struct docs_screen *sc = calloc(1, sizeof *sc);
	*out = NULL;
	if (!sc)
		return -1;
	sc->out = calloc(1, 1);
	int m = posix_openpt(O_RDWR | O_NOCTTY), s = -1;
	char *sname = m >= 0 && !grantpt(m) && !unlockpt(m) ? ptsname(m) : NULL;
	/* Ours kept open too: the terminal stays up until the output is read. */
	if (sname)
		s = open(sname, O_RDWR | O_NOCTTY);
	pid_t pid = s >= 0 ? fork() : -1;
	if (pid == 0) {
		setsid();
		docs_tty_take(s);
		int null = open("/dev/null", O_RDONLY);
		dup2(null, 0);
		dup2(s, 1);
		dup2(s, 2);
		close(m);
		if (s > 2)
			close(s);
		if (chdir(dir) != 0)
			_exit(126);
		for (int i = 0; env && env[i]; i++)
			putenv(env[i]);
		execl("/bin/sh", "sh", "-e", "-c", text, (char *)NULL);
		_exit(127);
	}
	int status = -1, exited = 0;
	double end = tnow() + timeout_s;
	while (pid > 0) {
		struct pollfd pf = {m, POLLIN, 0};
		if (poll(&pf, 1, 100) > 0) {
			char buf[4096];
			ssize_t k = read(m, buf, sizeof buf);
			if (k > 0) {
				docs_screen_put(sc, buf, (size_t)k);
				continue;
			}
		} else if (exited) {
			break; /* exited, and nothing more to read */
		}
		if (!exited && waitpid(pid, &status, WNOHANG) == pid)
			exited = 1;
		if (!exited && tnow() > end) {
			fprintf(stderr, "    the commands ran past %d s: killed\n", timeout_s);
			kill(-pid, SIGKILL);
			waitpid(pid, &status, 0);
			status = -1;
			break;
		}
	}
	if (pid > 0)
		kill(-pid, SIGKILL); /* anything left behind */
	docs_screen_put(sc, "\n", sc->len ? 1 : 0);
	*out = sc->out;
	free(sc);
	if (s >= 0)
		close(s);
	if (m >= 0)
		close(m);
	return status == -1 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Replaces every FROM in *S with TO; with WORDS only where it stands as a
 * word of its own (no letter or digit either side). *S is malloc'd and
 * may move. */
static void docs_replace(char **s, const char *from, const char *to, int words)
{
	size_t nf = strlen(from), len = 0;
	char *out = calloc(1, 1);
	const char *p = *s;
	for (const char *q; (q = strstr(p, from));) {
		int word = !words || ((q == *s || !isalnum((unsigned char)q[-1])) &&
		                      !isalnum((unsigned char)q[nf]));
		tappend(&out, &len, p, (size_t)(q - p));
		tappend(&out, &len, word ? to : from, word ? strlen(to) : nf);
		p = q + nf;
	}
	tappend(&out, &len, p, strlen(p));
	free(*s);
	*s = out;
}

/* TEXT with the README's namespace hosts and interfaces (ddl-h0, ddl0)
 * given this test's prefix; malloc'd. */
static char *docs_ns_text(const char *text)
{
	size_t len = 0;
	char *out = calloc(1, 1);
	for (const char *p = text; *p; p++) {
		int at = !strncmp(p, "ddl", 3) && (p == text || !isalnum((unsigned char)p[-1])) &&
		         (isdigit((unsigned char)p[3]) || (p[3] == '-' && p[4] == 'h' && isdigit((unsigned char)p[5])));
		if (at) {
			tappend(&out, &len, DOCS_NS, strlen(DOCS_NS));
			p += 2;
		} else {
			tappend(&out, &len, p, 1);
		}
	}
	return out;
}

/* Output as the README would show it: this machine's hostname as "vm",
 * this test's namespace hosts by the README's names. */
static void docs_readme_names(char **out)
{
	char host[256] = "";
	if (gethostname(host, sizeof host - 1) == 0 && *host && strcmp(host, "vm"))
		docs_replace(out, host, "vm", 1);
	docs_replace(out, DOCS_NS, "ddl", 0);
}

/*
 * The shape of LINE into OUT: its indent, then its words with runs of
 * blanks as one and no blanks at the end; a number (a sign, digits,
 * thousands, decimals, an exponent) as '#', a size (a number and B, KiB,
 * MiB, GiB or TiB) as '#B', a hexadecimal id of 8 or more digits as '#x'.
 */
static void docs_shape(const char *line, char *out, size_t n)
{
	static const char *const units[] = {" B", " KiB", " MiB", " GiB", " TiB"};
	size_t k = 0;
	const char *s = line;
	while (*s == ' ' && k + 1 < n)
		out[k++] = *s++;
	int blank = 0;
	while (*s && k + 3 < n) {
		if (*s == ' ' || *s == '\t') {
			blank = 1;
			s++;
			continue;
		}
		if (blank)
			out[k++] = ' ';
		blank = 0;
		int edge = s == line || !isalnum((unsigned char)s[-1]);
		size_t h = 0;
		int digit = 0, letter = 0;
		while (edge && (isdigit((unsigned char)s[h]) || (s[h] >= 'a' && s[h] <= 'f'))) {
			digit |= isdigit((unsigned char)s[h]) != 0;
			letter |= isalpha((unsigned char)s[h]) != 0;
			h++;
		}
		if (h >= 8 && digit && letter && !isalnum((unsigned char)s[h])) {
			out[k++] = '#';
			out[k++] = 'x';
			s += h;
			continue;
		}
		const char *p = s;
		if ((*p == '-' || *p == '+') && edge && isdigit((unsigned char)p[1]))
			p++;
		if (!isdigit((unsigned char)*p)) {
			out[k++] = *s++;
			continue;
		}
		while (isdigit((unsigned char)*p) ||
		       (*p == ',' && isdigit((unsigned char)p[1]) && isdigit((unsigned char)p[2]) &&
		        isdigit((unsigned char)p[3]) && !isdigit((unsigned char)p[4])))
			p++;
		if (*p == '.' && isdigit((unsigned char)p[1]))
			for (p++; isdigit((unsigned char)*p); p++)
				;
		if ((*p == 'e' || *p == 'E') && (isdigit((unsigned char)p[1]) ||
		                                 ((p[1] == '-' || p[1] == '+') && isdigit((unsigned char)p[2]))))
			for (p += 2; isdigit((unsigned char)*p); p++)
				;
		out[k++] = '#';
		for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
			size_t nu = strlen(units[u]);
			if (!strncmp(p, units[u], nu) && !isalnum((unsigned char)p[nu])) {
				out[k++] = 'B';
				p += nu;
				break;
			}
		}
		s = p;
	}
	out[k] = 0;
}

/* 1 when the two lines match: as they are (EXACT, less blanks at the end),
 * else by shape. */
static int docs_line_eq(const char *a, const char *b, int exact)
{
	static char sa[16384], sb[16384];
	if (exact) {
		size_t na = strlen(a), nb = strlen(b);
		while (na && a[na - 1] == ' ')
			na--;
		while (nb && b[nb - 1] == ' ')
			nb--;
		return na == nb && !memcmp(a, b, na);
	}
	docs_shape(a, sa, sizeof sa);
	docs_shape(b, sb, sizeof sb);
	return !strcmp(sa, sb);
}

static size_t docs_indent(const char *s)
{
	return strspn(s, " ");
}

/* The values of KEY= in OPTS (KEY=WORD or KEY="SOME WORDS"), up to 8, into
 * V; how many. */
static int docs_opt_values(const char *opts, const char *key, char v[8][64])
{
	int n = 0;
	size_t nk = strlen(key);
	for (const char *p = strstr(opts, key); p && n < 8; p = strstr(p + 1, key)) {
		if (p[nk] != '=' || (p != opts && p[-1] != ' '))
			continue;
		const char *w = p + nk + 1;
		size_t len = *w == '"' ? strcspn(++w, "\"") : strcspn(w, " ");
		snprintf(v[n++], sizeof v[0], "%.*s", (int)len, w);
	}
	return n;
}

/*
 * Drops from V (N lines, their README lines in NO when not NULL) what OPTS
 * says may be there or not: the lines that begin with an optional=WORDS,
 * with the more indented lines under them, and every ignore=TEXT within a
 * line; then every blank line after a blank line.
 */
static void docs_prune(char **v, int *no, size_t *n, const char *opts)
{
	char words[8][64], ignore[8][64];
	int nw = docs_opt_values(opts, "optional", words), ni = docs_opt_values(opts, "ignore", ignore);
	size_t k = 0;
	for (size_t i = 0; i < *n; i++) {
		for (int j = 0; j < ni; j++)
			for (char *q; *ignore[j] && (q = strstr(v[i], ignore[j]));)
				memmove(q, q + strlen(ignore[j]), strlen(q + strlen(ignore[j])) + 1);
		const char *t = v[i] + docs_indent(v[i]);
		int drop = 0;
		for (int w = 0; w < nw && !drop; w++)
			drop = !strncmp(t, words[w], strlen(words[w]));
		if (drop) {
			size_t in = docs_indent(v[i]);
			while (i + 1 < *n && !docs_blank(v[i + 1]) && docs_indent(v[i + 1]) > in)
				i++;
			continue;
		}
		if (docs_blank(v[i]) && k && docs_blank(v[k - 1]))
			continue;
		if (no)
			no[k] = no[i];
		v[k++] = v[i];
	}
	*n = k;
}

static int docs_ellipsis(const char *s)
{
	return !strcmp(s + docs_indent(s), "...");
}

/*
 * Compares output block B with REAL, what its commands printed: every run
 * of README lines between "..." lines found in REAL, in order, line after
 * line. DDL_PASS, or DDL_FAIL saying which README line was not found.
 */
static int docs_match(const struct docs_block *b, const char *real)
{
	char *want = strdup(b->text), *got = strdup(real);
	size_t nw, ng;
	char **w = docs_lines(want, &nw), **g = docs_lines(got, &ng);
	int *no = malloc((nw + 1) * sizeof *no);
	CHECK(w && g && no, "out of memory");
	for (size_t i = 0; i < nw; i++)
		no[i] = b->line + (int)i;
	docs_prune(w, no, &nw, b->opts);
	docs_prune(g, NULL, &ng, b->opts);
	int exact = strstr(b->opts, "exact") != NULL, rc = DDL_PASS;
	size_t pos = 0;
	for (size_t i = 0; i < nw && rc == DDL_PASS;) {
		if (docs_ellipsis(w[i])) {
			i++;
			continue;
		}
		size_t len = 0;
		while (i + len < nw && !docs_ellipsis(w[i + len]))
			len++;
		/* The first place from POS where the whole run matches; else the
		 * line of the run that the longest partial match stopped at. */
		size_t best = 0, best_at = pos;
		int found = 0;
		for (size_t at = pos; at + len <= ng && !found; at++) {
			size_t k = 0;
			while (k < len && docs_line_eq(w[i + k], g[at + k], exact))
				k++;
			found = k == len;
			if (k > best || found) {
				best = k;
				best_at = at;
			}
		}
		if (!found) {
			size_t miss = i + best;
			fprintf(stderr, "    README.md:%d: not in the output%s: '%s'\n", no[miss],
			        best ? " after the lines before it" : "", w[miss]);
			if (best && best_at + best < ng)
				fprintf(stderr, "    the output has there: '%s'\n", g[best_at + best]);
			fprintf(stderr, "    what the commands printed:\n");
			for (size_t k = 0; k < ng; k++)
				fprintf(stderr, "    | %s\n", g[k]);
			rc = DDL_FAIL;
		}
		pos = best_at + len;
		i += len;
	}
	free(no);
	free(w);
	free(g);
	free(want);
	free(got);
	return rc;
}

/* TEXT with its continuation lines joined and blanks squeezed; malloc'd. */
static char *docs_squeeze(const char *text)
{
	char *out = calloc(1, strlen(text) + 1);
	size_t k = 0;
	int blank = 0;
	for (const char *p = text; out && *p; p++) {
		if (*p == '\\' && p[1] == '\n') {
			blank = 1;
			p++;
		} else if (*p == ' ' || *p == '\t') {
			blank = 1;
		} else {
			if (blank && k && out[k - 1] != '\n')
				out[k++] = ' ';
			blank = 0;
			out[k++] = *p;
		}
	}
	return out;
}

/* A script block: each of its commands is one that the script runs. */
static int docs_script_has(const struct docs_block *b)
{
	char *script = docs_slurp(docs_src(b->opts));
	CHECK(script, "README.md:%d: no script %s", b->line, b->opts);
	char *s = docs_squeeze(script), *cmds = docs_squeeze(b->text);
	for (char *c = cmds, *e; c && *c; c = e ? e + 1 : NULL) {
		e = strchr(c, '\n');
		if (e)
			*e = 0;
		CHECK(docs_blank(c) || strstr(s, c), "README.md:%d: %s does not run '%s'", b->line, b->opts, c);
	}
	free(cmds);
	free(s);
	free(script);
	return DDL_PASS;
}

/* A directory like a checkout after make, for the README's commands; NULL
 * when it cannot be made. */
static char *docs_checkout(void)
{
	char *dir = tmpdir(), p[PATH_MAX + 32];
	static const char *const built[] = {"bin", "lib", "examples"};
	static const char *const src[] = {"scripts", "examples", "recommender"};
	snprintf(p, sizeof p, "%s/build", dir);
	int ok = mkdir(p, 0755) == 0;
	for (size_t i = 0; i < 3 && ok; i++) {
		char to[PATH_MAX];
		snprintf(to, sizeof to, "%s", tbuild(built[i]));
		snprintf(p, sizeof p, "%s/build/%s", dir, built[i]);
		ok = symlink(to, p) == 0;
		snprintf(p, sizeof p, "%s/%s", dir, src[i]);
		ok = ok && symlink(docs_src(src[i]), p) == 0;
	}
	if (!ok) {
		fprintf(stderr, "    cannot make a checkout in %s\n", dir);
		trm(dir);
		free(dir);
		return NULL;
	}
	return dir;
}

/*
 * Runs the README's blocks of GROUP in a fresh checkout and compares its
 * output blocks; with AGAIN, runs its commands a second time there, which
 * must not fail for what the first run left. OUTS (up to MAXOUT, may be
 * NULL) gets what the commands printed for each output block, malloc'd.
 */
static int docs_readme_group(const char *group, int again, char **outs, int maxout)
{
	static struct docs_block b[64];
	int nb = docs_readme_blocks(b, 64);
	CHECK(nb >= 0, "README.md's markers");
	char *dir = docs_checkout();
	CHECK(dir, "no checkout");
	char port[32], *env[] = {"DDL_NETNS_PREFIX=" DOCS_NS, port, NULL};
	snprintf(port, sizeof port, "MASTER_PORT=%d", tfreeports(1));
	char *pending = calloc(1, 1);
	size_t npending = 0;
	int nout = 0, seen = 0;
	for (int pass = 0; pass < (again ? 2 : 1); pass++) {
		for (int i = 0; i < nb; i++) {
			if (strcmp(b[i].group, group))
				continue;
			seen++;
			if (!strcmp(b[i].kind, "output")) {
				if (pass == 0 && docs_match(&b[i], pending) != DDL_PASS)
					return DDL_FAIL;
				if (pass == 0 && outs && nout < maxout)
					outs[nout++] = strdup(pending);
				npending = 0;
				*pending = 0;
				continue;
			}
			if (!strcmp(b[i].kind, "script") && docs_script_has(&b[i]) != DDL_PASS)
				return DDL_FAIL;
			/* make demo's own script first, which starts afresh; the
			 * second time the commands as the README writes them, after
			 * what the script left (they must be rerunnable as written) */
			char *cmd = !strcmp(b[i].kind, "script") && !pass ? strdup(b[i].opts)
			                                                  : docs_ns_text(b[i].text);
			char *o;
			double t0 = tnow();
			int st = docs_tty_sh(cmd, dir, env, 200, &o);
			CHECK(o, "running README.md:%d", b[i].line);
			docs_readme_names(&o);
			CHECK(st == 0, "README.md:%d: the commands%s exited with %d after %.1f s in %s:\n%s\n"
			      "--- what they printed:\n%s", b[i].line, pass ? ", run a second time," : "", st,
			      tnow() - t0, dir, b[i].text, o);
			tappend(&pending, &npending, o, strlen(o));
			free(o);
			free(cmd);
		}
	}
	CHECK(seen, "README.md has no blocks of group %s", group);
	free(pending);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* The first number after KEY in TEXT, or NAN. */
static double docs_number_after(const char *text, const char *key)
{
	const char *p = text ? strstr(text, key) : NULL;
	return p ? strtod(p + strlen(key), NULL) : NAN;
}

/* The job's network share in a text report ("job (share of time)", the
 * fourth figure), or NAN. */
static double docs_network_share(const char *text)
{
	const char *p = text ? strstr(text, "job (share of time)") : NULL;
	double v = NAN;
	for (int i = 0; p && i < 4; i++) {
		p += strcspn(p, "0123456789");
		v = strtod(p, (char **)&p);
	}
	return v;
}

int test_docs_readme_marks(void)
{
	static struct docs_block b[64];
	int nb = docs_readme_blocks(b, 64);
	CHECK(nb > 0, "README.md's readme-test markers");
	static const char *const groups[] = {"demo", "torch", "torchdata", "mpi", "sim", "hang"};
	for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
		int runs = 0, outputs = 0;
		for (int i = 0; i < nb; i++) {
			if (strcmp(b[i].group, groups[g]))
				continue;
			if (!strcmp(b[i].kind, "output"))
				CHECK(runs > 0 && ++outputs, "README.md:%d: output before any commands of %s",
				      b[i].line, groups[g]);
			else
				runs++;
		}
		CHECK(runs && outputs, "README.md: group %s has %d command and %d output blocks", groups[g],
		      runs, outputs);
	}
	for (int i = 0; i < nb; i++) {
		int known = 0;
		for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
			known |= !strcmp(b[i].group, groups[g]);
		CHECK(known, "README.md:%d: group %s is run by no test", b[i].line, b[i].group);
		if (!strcmp(b[i].kind, "script"))
			CHECK(docs_script_has(&b[i]) == DDL_PASS, "README.md:%d", b[i].line);
	}
	/* The shapes themselves. */
	static const struct {
		const char *a, *b;
		int eq;
	} shapes[] = {
		{"  vm-h0:1212 rank 0      48.00   3.55", "  vm-h0:23399 rank 0 148.00 13.5", 1},
		{"  ddk  576 2304.013 100.0%", "  ddk  576   2304.005 99.9%   ", 1},
		{"  x 496 B 6.53 KiB 206.03 MiB", "  x 6.5 GiB 0 B 1 B", 1},
		{"  a311402bcdd6e325  2 ranks", "  e898654c188ab2e1  2 ranks", 1},
		{"disagreement -0.295 ms, +1.539", "disagreement +3.5 ms, -1,234.5", 1},
		{"  4 processes on 2 hosts, 4 ranks", "  4 processes on 2 hosts: 4 ranks", 0},
		{"  1 worker", "  2 workers", 0},
		{"  vm-h0 rank 0", "    vm-h0 rank 0", 0},
	};
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
		CHECK(docs_line_eq(shapes[i].a, shapes[i].b, 0) == shapes[i].eq, "'%s' and '%s' %s",
		      shapes[i].a, shapes[i].b, shapes[i].eq ? "differ" : "match");
	return DDL_PASS;
}

/* The README's walkthrough is run in the plain build only: under the
 * sanitizers it would check the same text again, for a minute more. */
#if defined(__SANITIZE_ADDRESS__)
#define DOCS_SANITIZED 1
#else
#define DOCS_SANITIZED 0
#endif

int test_docs_readme_demo(void)
{
	if (DOCS_SANITIZED) {
		printf("    skipped: the README's commands are checked in the plain build\n");
		return DDL_SKIP;
	}
	if (access(tbuild("examples/ddlsynth"), X_OK) != 0) {
		fprintf(stderr, "    no ddlsynth (no CUDA headers): make demo profiles tcpring: skipped\n");
		return DDL_SKIP;
	}
	char *outs[8] = {NULL};
	if (docs_readme_group("demo", 1, outs, 8) != DDL_PASS)
		return DDL_FAIL;
	/* The --fail-if figure is the demo's network share, in the README
	 * (both pasted from one run) and here. */
	static struct docs_block b[64];
	int nb = docs_readme_blocks(b, 64);
	const char *readme_report = NULL, *readme_fail = NULL;
	for (int i = 0; i < nb; i++) {
		if (strcmp(b[i].group, "demo") || strcmp(b[i].kind, "output"))
			continue;
		if (!readme_report && strstr(b[i].text, "job (share of time)"))
			readme_report = b[i].text;
		if (!readme_fail && strstr(b[i].text, "network_stall_pct is "))
			readme_fail = b[i].text;
	}
	const char *report = NULL, *fail = NULL;
	for (int i = 0; i < 8 && outs[i]; i++) {
		if (!report && strstr(outs[i], "job (share of time)"))
			report = outs[i];
		if (!fail && strstr(outs[i], "network_stall_pct is "))
			fail = outs[i];
	}
	const char *key = "network_stall_pct is ";
	double rs = docs_network_share(readme_report), rf = docs_number_after(readme_fail, key);
	double s = docs_network_share(report), f = docs_number_after(fail, key);
	CHECK(fabs(rs - rf) <= 0.051, "README.md: the demo's network share %.1f%% and --fail-if's %g "
	      "are not of one run", rs, rf);
	CHECK(fabs(s - f) <= 0.051, "the demo's network share %.1f%% and --fail-if's %g", s, f);
	for (int i = 0; i < 8; i++)
		free(outs[i]);
	return DDL_PASS;
}

/* netns-hosts.sh ARG... on this test's namespace hosts; its exit status. */
static int docs_netns(char *arg, char *count)
{
	char *env[] = {"DDL_NETNS_PREFIX=" DOCS_NS, NULL};
	char *argv[] = {(char *)docs_src("scripts/netns-hosts.sh"), arg, count, NULL};
	struct ddl_run_result r;
	int st = trun(argv, env, 30, &r) == 0 ? docs_status(&r) : -1;
	trun_free(&r);
	return st;
}

/* 1 when network namespace hosts can be made here (root, iproute2). */
static int docs_netns_ok(void)
{
	if (geteuid() != 0)
		return 0;
	docs_netns("down", NULL); /* what a killed run left */
	int ok = docs_netns("up", "1") == 0;
	docs_netns("down", NULL);
	return ok;
}

/* A group run on namespace hosts, which are taken down whatever happens. */
static int docs_readme_netns(const char *group)
{
	int rc = docs_readme_group(group, 0, NULL, 0);
	docs_netns("down", NULL);
	return rc;
}

/* 1 when Debian's python3-torch is here. */
static int docs_torch_ok(void)
{
	char *probe[] = {"/usr/bin/python3", "-c", "import torch.distributed", NULL};
	struct ddl_run_result r;
	int ok = access("/usr/bin/python3", X_OK) == 0 && trun(probe, NULL, 60, &r) == 0 &&
	         docs_status(&r) == 0;
	trun_free(&r);
	return ok;
}

/* Section 4's job on two namespace hosts. */
int test_docs_readme_torch(void)
{
	if (DOCS_SANITIZED) {
		printf("    skipped: the README's commands are checked in the plain build\n");
		return DDL_SKIP;
	}
	if (!docs_torch_ok() || !docs_netns_ok()) {
		fprintf(stderr, "    needs Debian's python3-torch, and root for network namespaces: skipped\n");
		return DDL_SKIP;
	}
	return docs_readme_netns("torch");
}

/* Section 4's job on one host, with its data and with --data synthetic. */
int test_docs_readme_torchdata(void)
{
	if (DOCS_SANITIZED) {
		printf("    skipped: the README's commands are checked in the plain build\n");
		return DDL_SKIP;
	}
	if (!docs_torch_ok()) {
		fprintf(stderr, "    needs Debian's python3-torch: skipped\n");
		return DDL_SKIP;
	}
	return docs_readme_group("torchdata", 0, NULL, 0);
}

int test_docs_readme_mpi(void)
{
	if (DOCS_SANITIZED) {
		printf("    skipped: the README's commands are checked in the plain build\n");
		return DDL_SKIP;
	}
	if (access(tbuild("examples/mpi_allreduce"), X_OK) != 0 || !docs_have("mpirun") ||
	    !docs_netns_ok()) {
		fprintf(stderr, "    needs Open MPI (examples/mpi_allreduce built), and root for network "
		        "namespaces: skipped\n");
		return DDL_SKIP;
	}
	return docs_readme_netns("mpi");
}

/* Section 8: a hang made on purpose, the watchdog's lines and the report's Hang section. */
int test_docs_readme_hang(void)
{
	if (DOCS_SANITIZED) {
		printf("    skipped: the README's commands are checked in the plain build\n");
		return DDL_SKIP;
	}
	if (access(tbuild("examples/ddlsynth"), X_OK) != 0) {
		fprintf(stderr, "    no ddlsynth (no CUDA headers): skipped\n");
		return DDL_SKIP;
	}
	return docs_readme_group("hang", 0, NULL, 0);
}

int test_docs_readme_sim(void)
{
	if (DOCS_SANITIZED) {
		printf("    skipped: the README's commands are checked in the plain build\n");
		return DDL_SKIP;
	}
	if (access(tbuild("bin/ddlprof-sim"), X_OK) != 0) {
		fprintf(stderr, "    no ddlprof-sim built: skipped\n");
		return DDL_SKIP;
	}
	return docs_readme_group("sim", 1, NULL, 0);
}
