/*
 * The user's first hour, as the README and the man pages promise it: the
 * pages render without warnings, `make install PREFIX=` gives commands
 * that work from the prefix, every command answers --help and --version
 * on stdout and a bad flag on stderr only, --json output is the whole of
 * stdout, and the progress line appears on a terminal and nowhere else.
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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
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
		FILE *f = fopen(m, "r");
		CHECK(f, "%s: cannot open", m);
		char *text = NULL;
		size_t cap = 0;
		ssize_t n = getdelim(&text, &cap, 0, f);
		fclose(f);
		CHECK(n > 0, "%s: empty", m);
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
	               {"examples/mpi_netns_agent.sh", 1}};
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
	while ((k = read(fd, b, sizeof b)) > 0) {
		char *q = realloc(*buf, *n + (size_t)k + 1);
		if (!q)
			return;
		memcpy(q + *n, b, (size_t)k);
		*n += (size_t)k;
		q[*n] = 0;
		*buf = q;
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
		ioctl(s, TIOCSCTTY, 0);
		if (how == DOCS_PAUSE_MAPPED && ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
			_exit(125);
		struct termios tio; /* raw: what the tool writes, byte for byte */
		if (tcgetattr(s, &tio) == 0) {
			cfmakeraw(&tio);
			tcsetattr(s, TCSANOW, &tio);
		}
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
	char *plain[] = {(char *)tbuild("bin/ddlprof-report"), many, NULL};
	char *quiet[] = {(char *)tbuild("bin/ddlprof-report"), "-q", many, NULL};
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
