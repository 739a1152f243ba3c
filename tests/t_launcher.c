/*
 * The launcher and the report as users meet them: option errors, directory
 * safety, run ids and the warning about other runs, and the report's
 * handling of bad paths, bad files and existing outputs.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
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
	/* one that cannot be made (even by root) costs the profile, not the run:
	 * one line, even with -q, and the command's own status */
	char *a7[] = {(char *)L, "-q", "-o", "/proc/ddlprof-cannot-be-here/t",
	              (char *)tbuild("tests/progs/exitcode"), NULL};
	CHECK(trun(a7, NULL, 20, &r) == 0 && ddl_status(&r) == 7 &&
	      strstr(r.err, "running without profiling") && strchr(r.err, '\n') == r.err + r.nerr - 1,
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
	CHECK(n == 4, "expected 4 trace files after two runs of 2 processes, found %d", n);
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
