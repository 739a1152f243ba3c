/*
 * The launcher and the report as users meet them: option errors, directory
 * safety, trace directories checked before the command starts, the trace
 * of a command that records nothing, run ids and the warning about other
 * runs, and the report's handling of bad paths, bad files and existing
 * outputs.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

static int ddl_status(struct ddl_run_result *r)
{
	return WIFEXITED(r->status) ? WEXITSTATUS(r->status) : 1000 + WTERMSIG(r->status);
}

int test_launcher_errors(void)
{
	const char *L = tbuild("bin/ddlprof");
	struct {
		char *argv[8];
		int status;
		const char *says;
	} c[] = {
		{{(char *)L, NULL}, 125, "no command"},
		{{(char *)L, "--trace", "sockets", "true", NULL}, 125, "--trace"},
		{{(char *)L, "--run-id", "a/b", "true", NULL}, 125, "--run-id"},
		{{(char *)L, "--flush-ms", "0", "true", NULL}, 125, "--flush-ms"},
		{{(char *)L, "--bogus", "true", NULL}, 125, "ddlprof: unknown option --bogus; try --help"},
		{{(char *)L, "-q", "-o", "/tmp/ddltest-nf", "--", "/no/such/command", NULL}, 127,
		 "/no/such/command"},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		struct ddl_run_result r;
		CHECK(trun(c[i].argv, NULL, 20, &r) == 0, "case %zu", i);
		CHECK(ddl_status(&r) == c[i].status && strstr(r.err, c[i].says),
		      "case %zu: status %d, stderr '%s'", i, ddl_status(&r), r.err);
		trun_free(&r);
	}
	trm("/tmp/ddltest-nf");
	return DDL_PASS;
}

/*
 * -o through another user's symbolic link in a sticky directory everyone
 * can write into (as /tmp is), with fs.protected_symlinks off as here: the
 * launcher and the library refuse to follow it, and nothing is made where
 * it points; our own link there, or another user's in a directory of ours,
 * is followed. Needs root (to own a link as another user).
 */
int test_launcher_parent_link(void)
{
	if (geteuid() != 0)
		return DDL_SKIP;
	char *dir = tmpdir(), sticky[PATH_MAX], target[PATH_MAX], theirs[PATH_MAX], ours[PATH_MAX],
	     out[PATH_MAX], made[PATH_MAX];
	snprintf(sticky, sizeof sticky, "%s/tmp", dir);
	snprintf(target, sizeof target, "%s/target", dir);
	snprintf(theirs, sizeof theirs, "%s/theirs", sticky);
	snprintf(ours, sizeof ours, "%s/ours", sticky);
	CHECK(mkdir(sticky, 0777) == 0 && chmod(sticky, 01777) == 0 && mkdir(target, 0700) == 0, "dirs");
	CHECK(symlink(target, theirs) == 0 && lchown(theirs, 65534, 65534) == 0 && symlink(target, ours) == 0,
	      "links: %s", strerror(errno));
	const char *L = tbuild("bin/ddlprof");
	snprintf(out, sizeof out, "%s/run", theirs);
	snprintf(made, sizeof made, "%s/run", target);
	char *a1[] = {(char *)L, "-q", "-o", out, "true", NULL};
	struct ddl_run_result r;
	CHECK(trun(a1, NULL, 20, &r) == 0 && ddl_status(&r) == 125 && strstr(r.err, "symbolic link"),
	      "another user's link: status %d: %s", ddl_status(&r), r.err);
	trun_free(&r);
	struct stat st;
	CHECK(stat(made, &st) != 0, "%s was made through the link", made);
	/* the library alone, as a process the launcher did not start */
	char env1[PATH_MAX + 16], env2[PATH_MAX + 16];
	snprintf(env1, sizeof env1, "DDLPROF_DIR=%s", out);
	snprintf(env2, sizeof env2, "LD_PRELOAD=%s", tbuild("lib/libddlprof.so"));
	char *env[] = {env1, env2, NULL};
	char *a2[] = {(char *)tbuild("tests/progs/socketpair"), NULL};
	CHECK(trun(a2, env, 30, &r) == 0 && ddl_status(&r) == 0 && strstr(r.err, "symbolic link"),
	      "the library through the link: status %d: %s", ddl_status(&r), r.err);
	trun_free(&r);
	CHECK(stat(made, &st) != 0, "%s was made through the link by the library", made);
	/* our own link in the same place is followed */
	snprintf(out, sizeof out, "%s/run", ours);
	char *a3[] = {(char *)L, "-q", "-o", out, "true", NULL};
	CHECK(trun(a3, NULL, 20, &r) == 0 && ddl_status(&r) == 0, "our own link: status %d: %s",
	      ddl_status(&r), r.err);
	trun_free(&r);
	CHECK(stat(made, &st) == 0 && S_ISDIR(st.st_mode), "our own link not followed");
	return DDL_PASS;
}

int test_launcher_dir_safety(void)
{
	char *dir = tmpdir(), p[PATH_MAX];
	const char *L = tbuild("bin/ddlprof");
	/* created 0700 */
	snprintf(p, sizeof p, "%s/new", dir);
	char *a1[] = {(char *)L, "-q", "-o", p, "true", NULL};
	struct ddl_run_result r;
	CHECK(trun(a1, NULL, 20, &r) == 0 && ddl_status(&r) == 0, "true under ddlprof: %s", r.err);
	struct stat st;
	CHECK(stat(p, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700,
	      "directory mode %o", st.st_mode & 0777);
	trun_free(&r);
	/* a symbolic link is refused */
	char link[PATH_MAX];
	snprintf(link, sizeof link, "%s/link", dir);
	CHECK(symlink(p, link) == 0, "symlink");
	char *a2[] = {(char *)L, "-q", "-o", link, "true", NULL};
	CHECK(trun(a2, NULL, 20, &r) == 0 && ddl_status(&r) == 125 && strstr(r.err, "symbolic link"),
	      "symlink: %d %s", ddl_status(&r), r.err);
	trun_free(&r);
	/* a file is refused */
	char file[PATH_MAX];
	snprintf(file, sizeof file, "%s/file", dir);
	close(open(file, O_CREAT | O_WRONLY, 0600));
	char *a3[] = {(char *)L, "-q", "-o", file, "true", NULL};
	CHECK(trun(a3, NULL, 20, &r) == 0 && ddl_status(&r) == 125 && strstr(r.err, "not a directory"),
	      "file: %d %s", ddl_status(&r), r.err);
	trun_free(&r);
	/* another user's directory is refused (as root we can make one) */
	if (geteuid() == 0) {
		char other[PATH_MAX];
		snprintf(other, sizeof other, "%s/other", dir);
		mkdir(other, 0777);
		CHECK(chown(other, 65534, 65534) == 0, "chown");
		char *a4[] = {(char *)L, "-q", "-o", other, "true", NULL};
		CHECK(trun(a4, NULL, 20, &r) == 0 && ddl_status(&r) == 125 &&
		      strstr(r.err, "another user"), "other user: %d %s", ddl_status(&r), r.err);
		trun_free(&r);
	}
	/* an existing directory is never changed: one every user may write into
	 * is refused, a sticky one is used as it is */
	char open_dir[PATH_MAX], sticky[PATH_MAX];
	snprintf(open_dir, sizeof open_dir, "%s/open", dir);
	snprintf(sticky, sizeof sticky, "%s/sticky", dir);
	mkdir(open_dir, 0700);
	chmod(open_dir, 0777);
	mkdir(sticky, 0700);
	chmod(sticky, 01777);
	char *a6[] = {(char *)L, "-q", "-o", open_dir, (char *)tbuild("tests/progs/exitcode"), NULL};
	CHECK(trun(a6, NULL, 20, &r) == 0 && ddl_status(&r) == 125 && strstr(r.err, "every user can write"),
	      "mode 0777: %d %s", ddl_status(&r), r.err);
	CHECK(stat(open_dir, &st) == 0 && (st.st_mode & 07777) == 0777, "mode %o after the run",
	      st.st_mode & 07777);
	trun_free(&r);
	char *a8[] = {(char *)L, "-q", "-o", sticky, (char *)tbuild("tests/progs/exitcode"), NULL};
	CHECK(trun(a8, NULL, 20, &r) == 0 && ddl_status(&r) == 7 && r.nerr == 0, "mode 1777: %d %s",
	      ddl_status(&r), r.err);
	CHECK(stat(sticky, &st) == 0 && (st.st_mode & 07777) == 01777, "mode %o after the run",
	      st.st_mode & 07777);
	trun_free(&r);
	/* in a sticky directory others may leave a FIFO named like a trace: the
	 * launcher's look at earlier runs and the report must not block on it */
	char fifo[PATH_MAX + 16];
	snprintf(fifo, sizeof fifo, "%s/planted.ddlt", sticky);
	CHECK(mkfifo(fifo, 0666) == 0, "mkfifo %s", fifo);
	CHECK(trun(a8, NULL, 20, &r) == 0 && ddl_status(&r) == 7, "with a FIFO there: %d %s", ddl_status(&r),
	      r.err);
	trun_free(&r);
	char *rep[] = {(char *)tbuild("bin/ddlprof-report"), sticky, NULL};
	CHECK(trun(rep, NULL, 20, &r) == 0 && strstr(r.err, "planted.ddlt") && strstr(r.err, "not a regular file"),
	      "report with a FIFO there: %d %s", ddl_status(&r), r.err);
	trun_free(&r);
	/* one that cannot be made (even by root) is refused before the command
	 * runs (launcher_dir_checked has the rest): one line, even with -q */
	char *a7[] = {(char *)L, "-q", "-o", "/proc/ddlprof-cannot-be-here/t",
	              (char *)tbuild("tests/progs/exitcode"), NULL};
	CHECK(trun(a7, NULL, 20, &r) == 0 && ddl_status(&r) == 125 && r.nout == 0 &&
	      strstr(r.err, "cannot write traces to /proc/ddlprof-cannot-be-here/t") &&
	      strchr(r.err, '\n') == r.err + r.nerr - 1,
	      "unwritable: %d %s", ddl_status(&r), r.err);
	trun_free(&r);
	/* existing traces are never overwritten: a second run adds files */
	char *a5[] = {(char *)L, "-q", "-o", p, "--run-id", "one", (char *)tbuild("tests/progs/exitcode"), NULL};
	CHECK(trun(a5, NULL, 20, &r) == 0 && ddl_status(&r) == 7, "exitcode: %d", ddl_status(&r));
	trun_free(&r);
	CHECK(trun(a5, NULL, 20, &r) == 0 && ddl_status(&r) == 7, "exitcode again");
	trun_free(&r);
	int n = 0;
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof cmd, "ls %s/*.ddlt | wc -l", p);
	FILE *f = popen(cmd, "r");
	CHECK(f && fscanf(f, "%d", &n) == 1, "count");
	pclose(f);
	/* and the first run's, of true, which recorded nothing: the command's file */
	CHECK(n == 5, "expected 5 trace files after a run of true and two of 2 processes, found %d", n);
	trm(dir);
	return DDL_PASS;
}

/* Sets every trace file in DIR's mtime AGO seconds back; how many. */
static int age_traces(const char *dir, int ago)
{
	char cmd[PATH_MAX + 96];
	snprintf(cmd, sizeof cmd, "touch -d '%d seconds ago' %s/*.ddlt && ls %s/*.ddlt | wc -l", ago,
	         dir, dir);
	int n = -1;
	FILE *f = popen(cmd, "r");
	if (f && fscanf(f, "%d", &n) != 1)
		n = -1;
	if (f)
		pclose(f);
	return n;
}

/* A rerun with the same --run-id into the same directory (issue 16, 2). */
int test_launcher_same_run_id(void)
{
	char *dir = tmpdir(), p[PATH_MAX];
	snprintf(p, sizeof p, "%s/t", dir);
	const char *L = tbuild("bin/ddlprof");
	struct ddl_run_result r;
	char *a1[] = {(char *)L, "-o", p, "--run-id", "same", (char *)tbuild("tests/progs/socketpair"), NULL};
	CHECK(trun(a1, NULL, 30, &r) == 0 && ddl_status(&r) == 0, "first run");
	CHECK(!strstr(r.err, "same id"), "warned on an empty directory: %s", r.err);
	trun_free(&r);
	/* traces of this id written just now are the job's other ranks' (each
	 * rank's launcher scans the directory): no warning */
	CHECK(trun(a1, NULL, 30, &r) == 0 && ddl_status(&r) == 0, "second launcher");
	CHECK(!strstr(r.err, "same id"), "warned about traces written a moment ago: %s", r.err);
	trun_free(&r);
	trm(dir);
	dir = tmpdir();
	snprintf(p, sizeof p, "%s/t", dir);
	CHECK(trun(a1, NULL, 30, &r) == 0 && ddl_status(&r) == 0, "first run");
	trun_free(&r);
	int old = age_traces(p, 60);
	CHECK(old >= 2, "the first run left %d traces", old);
	/* the same command a minute later: said, with the count of traces */
	CHECK(trun(a1, NULL, 30, &r) == 0 && ddl_status(&r) == 0, "rerun");
	char want[160];
	snprintf(want, sizeof want, "already holds %d traces of an earlier run with the same id (same)",
	         old);
	CHECK(strstr(r.err, want), "rerun not said (%s): %s", want, r.err);
	CHECK(!strstr(r.err, "another run"), "the same id taken for another: %s", r.err);
	trun_free(&r);
	/* the report tells the two apart and shows the newest, naming the other */
	json_t *rep = treport(p, NULL);
	CHECK(rep && !strcmp(json_string_value(json_object_get(rep, "run_id")), "same#2"),
	      "default run is not the newest of the two");
	json_t *others = json_object_get(rep, "other_runs");
	CHECK(json_array_size(others) == 1 && !strcmp(json_string_value(json_array_get(others, 0)), "same#1"),
	      "the earlier run not named");
	CHECK(json_array_size(json_object_get(rep, "processes")) == (size_t)old,
	      "the newest run has %zu processes, not %d", json_array_size(json_object_get(rep, "processes")),
	      old);
	json_decref(rep);
	char *a3[] = {(char *)tbuild("bin/ddlprof-report"), p, NULL};
	CHECK(trun(a3, NULL, 30, &r) == 0 && ddl_status(&r) == 0, "text report");
	CHECK(strstr(r.out, "run same#2") && strstr(r.out, "also in these traces: run same#1"),
	      "the text does not tell the runs apart: %.300s", r.out);
	trun_free(&r);
	trm(dir);
	return DDL_PASS;
}

int test_launcher_runs(void)
{
	char *dir = tmpdir(), p[PATH_MAX];
	snprintf(p, sizeof p, "%s/t", dir);
	const char *L = tbuild("bin/ddlprof");
	struct ddl_run_result r;
	char *a1[] = {(char *)L, "-o", p, "--run-id", "first", (char *)tbuild("tests/progs/socketpair"), NULL};
	CHECK(trun(a1, NULL, 30, &r) == 0 && ddl_status(&r) == 0, "first run");
	CHECK(!strstr(r.err, "another run"), "warned on an empty directory: %s", r.err);
	trun_free(&r);
	char *a2[] = {(char *)L, "-o", p, "--run-id", "second", (char *)tbuild("tests/progs/crash"), "term", NULL};
	CHECK(trun(a2, NULL, 30, &r) == 0, "second run");
	CHECK(strstr(r.err, "another run") && strstr(r.err, "first"), "no warning about run first: %s",
	      r.err);
	trun_free(&r);
	/* the newest run by default, the others named; --run picks */
	json_t *rep = treport(p, NULL);
	CHECK(rep && !strcmp(json_string_value(json_object_get(rep, "run_id")), "second"),
	      "default run is not the newest");
	CHECK(json_array_size(json_object_get(rep, "other_runs")) == 1 &&
	      !strcmp(json_string_value(json_array_get(json_object_get(rep, "other_runs"), 0)), "first"),
	      "other run not named");
	json_decref(rep);
	char *a3[] = {(char *)tbuild("bin/ddlprof-report"), "--json", "--run", "first", p, NULL};
	CHECK(trun(a3, NULL, 30, &r) == 0 && ddl_status(&r) == 0, "--run first");
	rep = json_loads(r.out, 0, NULL);
	CHECK(rep && json_array_size(json_object_get(rep, "processes")) == 2, "run first has 2 processes");
	json_decref(rep);
	trun_free(&r);
	/* the environment's job id is the run id when none is given */
	char *a4[] = {(char *)L, "-q", "-o", p, (char *)tbuild("tests/progs/crash"), "term", NULL};
	char *env[] = {"SLURM_JOB_ID=4242", NULL};
	CHECK(trun(a4, env, 30, &r) == 0, "slurm run");
	trun_free(&r);
	char *a5[] = {(char *)tbuild("bin/ddlprof-report"), "--run", "slurm-4242", p, NULL};
	CHECK(trun(a5, NULL, 30, &r) == 0 && ddl_status(&r) == 0 && strstr(r.out, "slurm-4242"),
	      "slurm run id: %s", r.err);
	trun_free(&r);
	trm(dir);
	return DDL_PASS;
}

int test_report_errors(void)
{
	char *dir = tmpdir(), p[PATH_MAX];
	const char *R = tbuild("bin/ddlprof-report");
	struct ddl_run_result r;
	char *a1[] = {(char *)R, "/no/such/dir", NULL};
	CHECK(trun(a1, NULL, 20, &r) == 0 && ddl_status(&r) == 1 && strstr(r.err, "/no/such/dir"),
	      "missing path: %s", r.err);
	trun_free(&r);
	char *a2[] = {(char *)R, dir, NULL};
	CHECK(trun(a2, NULL, 20, &r) == 0 && ddl_status(&r) == 1 && strstr(r.err, "no readable traces"),
	      "empty dir: %s", r.err);
	trun_free(&r);
	char *a3[] = {(char *)R, "--format", "xml", dir, NULL};
	CHECK(trun(a3, NULL, 20, &r) == 0 && ddl_status(&r) == 2 && strstr(r.err, "xml"), "bad format");
	trun_free(&r);
	/* --memory's sizes: k, M, G in either case; anything else is named */
	static const char *const sizes[] = {"0", "64k", "64K", "256m", "256M", "1g", "1G", "12x", "1T",
	                                    "-1", "2048G", ""};
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		int good = i < 7;
		char *am[] = {(char *)R, "-q", "--memory", (char *)sizes[i], dir, NULL};
		CHECK(trun(am, NULL, 20, &r) == 0 && ddl_status(&r) == (good ? 1 : 2) &&
		      (good ? strstr(r.err, "no readable traces") : strstr(r.err, "--memory")),
		      "--memory '%s': status %d: %s", sizes[i], ddl_status(&r), r.err);
		trun_free(&r);
	}
	/* a file that is not a trace is named */
	snprintf(p, sizeof p, "%s/junk.ddlt", dir);
	int fd = open(p, O_CREAT | O_WRONLY, 0600);
	CHECK(write(fd, "hello, not a trace", 18) == 18, "write");
	close(fd);
	CHECK(trun(a2, NULL, 20, &r) == 0 && ddl_status(&r) == 1 && strstr(r.err, p) &&
	      strstr(r.err, "not a ddlprof trace"), "junk: %s", r.err);
	trun_free(&r);
	/* -o never overwrites without --force */
	char t[PATH_MAX], out[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	snprintf(out, sizeof out, "%s/out.json", dir);
	char *a4[] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", t, (char *)tbuild("tests/progs/socketpair"), NULL};
	CHECK(trun(a4, NULL, 30, &r) == 0, "socketpair");
	trun_free(&r);
	fd = open(out, O_CREAT | O_WRONLY, 0644);
	CHECK(write(fd, "keep", 4) == 4, "write");
	close(fd);
	char *a5[] = {(char *)R, "--json", "-o", out, t, NULL};
	CHECK(trun(a5, NULL, 20, &r) == 0 && ddl_status(&r) == 1 && strstr(r.err, "--force"),
	      "overwrite refused: %s", r.err);
	trun_free(&r);
	char buf[16] = "";
	fd = open(out, O_RDONLY);
	CHECK(read(fd, buf, sizeof buf) == 4 && !memcmp(buf, "keep", 4), "output overwritten");
	close(fd);
	char *a6[] = {(char *)R, "--json", "--force", "-o", out, t, NULL};
	CHECK(trun(a6, NULL, 20, &r) == 0 && ddl_status(&r) == 0, "--force: %s", r.err);
	trun_free(&r);
	json_t *j = json_load_file(out, 0, NULL);
	CHECK(j && !strcmp(json_string_value(json_object_get(j, "schema")), "ddlprof-report/1"),
	      "written report has no schema");
	json_decref(j);
	/* --dump lists every event */
	char *a7[] = {(char *)R, "--dump", t, NULL};
	CHECK(trun(a7, NULL, 20, &r) == 0 && ddl_status(&r) == 0 && strstr(r.out, " send ") &&
	      strstr(r.out, " recv ") && strstr(r.out, "unix"), "dump: %.300s", r.out);
	trun_free(&r);
	trm(dir);
	return DDL_PASS;
}

/* --fail-if: a CI gate, exit 3 with one line per condition that trips. */
int test_report_fail_if(void)
{
	char *dir = tmpdir(), t[PATH_MAX], k[PATH_MAX];
	const char *R = tbuild("bin/ddlprof-report");
	snprintf(t, sizeof t, "%s/m", dir);
	snprintf(k, sizeof k, "%s/k", dir);
	char *a1[] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", t, "--", (char *)tbuild("tests/progs/markers"), NULL};
	char *a2[] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", k, "--", (char *)tbuild("tests/progs/crash"), "term", NULL};
	struct ddl_run_result r;
	CHECK(trun(a1, NULL, 30, &r) == 0 && ddl_status(&r) == 0, "markers");
	trun_free(&r);
	CHECK(trun(a2, NULL, 30, &r) == 0, "crash");
	trun_free(&r);
	struct {
		const char *dir, *cond;
		int status;
		const char *says;
	} c[] = {
		{t, "iteration_mean_ms>5", 3, "fail-if iteration_mean_ms>5: iteration_mean_ms is 2"},
		{t, "iteration_mean_ms>500", 0, NULL},
		{t, "compute_pct<=100", 3, "compute_pct is"},
		{k, "iteration_p99_ms>1", 3, "was not measured"},
		{t, "stragglers>0", 3, "stragglers was not measured"}, /* no collectives */
		{t, "network_stall>1", 2, "METRIC OP NUMBER"},
		{t, "idle_pct>>1", 2, "METRIC OP NUMBER"},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		char *argv[] = {(char *)R, "--fail-if", (char *)c[i].cond, (char *)c[i].dir, NULL};
		CHECK(trun(argv, NULL, 30, &r) == 0, "report");
		CHECK(ddl_status(&r) == c[i].status && (!c[i].says || strstr(r.err, c[i].says)),
		      "%s: status %d, stderr '%s'", c[i].cond, ddl_status(&r), r.err);
		trun_free(&r);
	}
	trm(dir);
	return DDL_PASS;
}

/* Trace files (*.ddlt) in DIR. */
static int ddl_traces_in(const char *dir)
{
	char cmd[PATH_MAX + 64];
	int n = -1;
	snprintf(cmd, sizeof cmd, "ls %s | grep -c '\\.ddlt$'", dir);
	FILE *f = popen(cmd, "r");
	if (f && fscanf(f, "%d", &n) != 1)
		n = -1;
	if (f)
		pclose(f);
	return n;
}

/*
 * A trace directory the launcher cannot make or write into is found out
 * before the command starts: status 125, one line naming the path (even
 * with -q), and the command never runs. A file on the way: the line names
 * it. A full file system (as root, a 64 KiB tmpfs filled up): the file
 * mode says yes, only a write says no; a directory made for it is removed
 * again.
 */
int test_launcher_dir_checked(void)
{
	char *dir = tmpdir(), file[PATH_MAX], out[PATH_MAX], ran[PATH_MAX], sh[3 * PATH_MAX];
	const char *L = tbuild("bin/ddlprof");
	snprintf(file, sizeof file, "%s/afile", dir);
	snprintf(out, sizeof out, "%s/sub", file);
	snprintf(ran, sizeof ran, "%s/ran", dir);
	snprintf(sh, sizeof sh, "touch %s", ran);
	close(open(file, O_CREAT | O_WRONLY, 0600));
	struct ddl_run_result r;
	struct stat st;
	char *a1[] = {(char *)L, "-q", "-o", out, "--", "/bin/sh", "-c", sh, NULL};
	CHECK(trun(a1, NULL, 20, &r) == 0, "ddlprof -o afile/sub");
	CHECK(ddl_status(&r) == 125 && r.nout == 0 && strchr(r.err, '\n') == r.err + r.nerr - 1 &&
	      strstr(r.err, out) && strstr(r.err, "afile is not a directory") && strstr(r.err, "not run"),
	      "-o afile/sub: status %d, stderr '%s'", ddl_status(&r), r.err);
	CHECK(stat(ran, &st) != 0, "the command ran although its traces could not be written");
	trun_free(&r);
	if (geteuid() != 0) {
		trm(dir);
		return DDL_PASS;
	}
	char mnt[PATH_MAX], full[PATH_MAX], fresh[PATH_MAX], parent[PATH_MAX];
	snprintf(mnt, sizeof mnt, "%s/mnt", dir);
	snprintf(full, sizeof full, "%s/t", mnt);
	snprintf(parent, sizeof parent, "%s/new", mnt);
	snprintf(fresh, sizeof fresh, "%s/new/t", mnt);
	if (tfulldisk(mnt) != 0) {
		fprintf(stderr, "    cannot mount a tmpfs: the full disk left out\n");
		trm(dir);
		return DDL_PASS;
	}
	mkdir(full, 0700); /* a directory needs no data block */
	int rc = DDL_PASS;
	for (int k = 0; k < 2 && rc == DDL_PASS; k++) {
		const char *to = k ? fresh : full;
		char *a2[] = {(char *)L, "-q", "-o", (char *)to, "--", "/bin/sh", "-c", sh, NULL};
		if (trun(a2, NULL, 20, &r) != 0 || ddl_status(&r) != 125 || r.nout != 0 ||
		    !strstr(r.err, to) || !strstr(r.err, "No space left")) {
			fprintf(stderr, "    full disk, -o %s: status %d, stderr '%s'\n", to, ddl_status(&r), r.err);
			rc = DDL_FAIL;
		} else if (stat(ran, &st) == 0) {
			fprintf(stderr, "    full disk: the command ran\n");
			rc = DDL_FAIL;
		} else if (k && stat(parent, &st) == 0) {
			fprintf(stderr, "    full disk: %s was left behind\n", parent);
			rc = DDL_FAIL;
		}
		trun_free(&r);
	}
	umount(mnt);
	trm(dir);
	return rc;
}

/*
 * The command the launcher starts leaves a trace even when it records
 * nothing: header, command line and end, so the report shows the process
 * and says nothing was recorded (not "no readable traces"); its status is
 * its own. Processes it starts that record nothing leave none (a shell's
 * helpers), and a command that execs leaves one, its last image's. A
 * command that is not there, or cannot be run, leaves no directory
 * behind, with 127 and 126 as a shell has.
 */
int test_launcher_silent_command(void)
{
	char *dir = tmpdir(), t[PATH_MAX];
	const char *L = tbuild("bin/ddlprof");
	struct ddl_run_result r;
	snprintf(t, sizeof t, "%s/true", dir);
	char *a1[] = {(char *)L, "-q", "-o", t, "--", "true", NULL};
	CHECK(trun(a1, NULL, 20, &r) == 0 && ddl_status(&r) == 0 && r.nerr == 0, "true: %d %s",
	      ddl_status(&r), r.err);
	trun_free(&r);
	CHECK(ddl_traces_in(t) == 1, "true left %d trace files", ddl_traces_in(t));
	char *rep[] = {(char *)tbuild("bin/ddlprof-report"), t, NULL};
	CHECK(trun(rep, NULL, 20, &r) == 0 && ddl_status(&r) == 0 &&
	      strstr(r.out, "1 process, no communication or GPU work recorded") &&
	      strstr(r.out, "command: true") && !strstr(r.err, "no readable traces"),
	      "report of true: status %d\n%s%s", ddl_status(&r), r.out, r.err);
	trun_free(&r);
	json_t *j = treport(t, NULL);
	json_t *p = json_array_get(json_object_get(j, "processes"), 0);
	CHECK(j && json_array_size(json_object_get(j, "processes")) == 1 &&
	      json_integer_value(json_object_get(p, "events")) == 0 &&
	      json_is_false(json_object_get(j, "truncated")),
	      "JSON report of true: %zu processes, truncated %d",
	      json_array_size(json_object_get(j, "processes")), json_is_true(json_object_get(j, "truncated")));
	json_decref(j);

	/* a shell whose children record nothing: one file, the shell's, and its status */
	struct {
		const char *name, *script;
		int status;
	} c[] = {{"helpers", "/bin/true; /bin/true; exit 3", 3}, {"exec", "exec true", 0}};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		snprintf(t, sizeof t, "%s/%s", dir, c[i].name);
		char *a2[] = {(char *)L, "-q", "-o", t, "--", "/bin/sh", "-c", (char *)c[i].script, NULL};
		CHECK(trun(a2, NULL, 20, &r) == 0 && ddl_status(&r) == c[i].status, "sh -c '%s': %d %s",
		      c[i].script, ddl_status(&r), r.err);
		trun_free(&r);
		CHECK(ddl_traces_in(t) == 1, "sh -c '%s' left %d trace files", c[i].script, ddl_traces_in(t));
	}

	/* nothing made for a command that cannot start */
	char plain[PATH_MAX];
	snprintf(plain, sizeof plain, "%s/plain", dir);
	close(open(plain, O_CREAT | O_WRONLY, 0644));
	struct {
		const char *cmd;
		int status;
	} bad[] = {{"/no/such/command", 127}, {"ddltest-no-such-command", 127}, {plain, 126}, {dir, 126}};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char top[PATH_MAX], out[PATH_MAX];
		snprintf(top, sizeof top, "%s/new%zu", dir, i);
		snprintf(out, sizeof out, "%s/sub", top);
		char *a3[] = {(char *)L, "-q", "-o", out, "--", (char *)bad[i].cmd, NULL};
		CHECK(trun(a3, NULL, 20, &r) == 0 && ddl_status(&r) == bad[i].status && strstr(r.err, bad[i].cmd),
		      "%s: status %d, stderr '%s'", bad[i].cmd, ddl_status(&r), r.err);
		trun_free(&r);
		struct stat st;
		CHECK(stat(top, &st) != 0, "%s: %s was left behind", bad[i].cmd, top);
	}
	trm(dir);
	return DDL_PASS;
}
