/*
 * Test helpers: paths in the build tree, temporary directories, running a
 * program with a time limit and captured output, and reading reports.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

const char *tbuild(const char *rel)
{
	static char buf[8][PATH_MAX];
	static int k;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = 0;
	char *s = strrchr(exe, '/'); /* build/tests/ddltest -> build */
	if (s)
		*s = 0;
	s = strrchr(exe, '/');
	if (s)
		*s = 0;
	k = (k + 1) % 8;
	snprintf(buf[k], sizeof buf[k], "%s/%s", exe, rel);
	return buf[k];
}

char *tmpdir(void)
{
	char *t = strdup("/tmp/ddltest.XXXXXX");
	if (!t || !mkdtemp(t))
		abort();
	return t;
}

static int ddl_rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	remove(p);
	return 0;
}

void trm(const char *path)
{
	if (getenv("DDLTEST_KEEP")) { /* the tests' traces kept, to compare reports over */
		/* moved aside, not left in place: a test that removes a directory
		 * to record into it again finds it gone, as it would */
		static unsigned kept;
		char to[PATH_MAX];
		snprintf(to, sizeof to, "%s.kept%u", path, ++kept);
		rename(path, to);
		return;
	}
	nftw(path, ddl_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void tappend(char **buf, size_t *n, const char *p, size_t k)
{
	char *q = realloc(*buf, *n + k + 1);
	if (!q)
		return;
	memcpy(q + *n, p, k);
	*n += k;
	q[*n] = 0;
	*buf = q;
}

/* Appends K bytes at P to *BUF (*N of them, NUL-terminated, room for *CAP),
 * in room that doubles: a report of tens of MB comes through the pipe a
 * page at a time. */
static void ddl_append(char **buf, size_t *n, size_t *cap, const char *p, size_t k)
{
	if (*n + k + 1 > *cap) {
		size_t c = *cap ? *cap : 4096;
		while (c < *n + k + 1)
			c *= 2;
		char *q = realloc(*buf, c);
		if (!q)
			return;
		*buf = q;
		*cap = c;
	}
	memcpy(*buf + *n, p, k);
	*n += k;
	(*buf)[*n] = 0;
}

int trun(char *const argv[], char *const env[], int timeout_s, struct ddl_run_result *r)
{
	int po[2], pe[2];
	memset(r, 0, sizeof *r);
	r->out = calloc(1, 1);
	r->err = calloc(1, 1);
	if (pipe(po) || pipe(pe))
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		setpgid(0, 0);
		dup2(po[1], 1);
		dup2(pe[1], 2);
		close(po[0]);
		close(pe[0]);
		close(po[1]);
		close(pe[1]);
		for (int i = 0; env && env[i]; i++)
			putenv(env[i]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	struct pollfd pf[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
	int open_fds = 2;
	time_t end = time(NULL) + timeout_s;
	int timed_out = 0;
	while (open_fds > 0) {
		int left = (int)(end - time(NULL));
		if (left <= 0) {
			timed_out = 1;
			break;
		}
		if (poll(pf, 2, left * 1000) <= 0)
			continue;
		for (int i = 0; i < 2; i++) {
			if (pf[i].fd < 0 || !pf[i].revents)
				continue;
			char buf[65536];
			ssize_t k = read(pf[i].fd, buf, sizeof buf);
			if (k <= 0) {
				close(pf[i].fd);
				pf[i].fd = -1;
				open_fds--;
			} else if (i == 0) {
				ddl_append(&r->out, &r->nout, &r->capout, buf, (size_t)k);
			} else {
				ddl_append(&r->err, &r->nerr, &r->caperr, buf, (size_t)k);
			}
		}
	}
	if (timed_out) {
		kill(-pid, SIGKILL);
		fprintf(stderr, "    %s: timed out after %d s\n", argv[0], timeout_s);
	}
	for (int i = 0; i < 2; i++)
		if (pf[i].fd >= 0)
			close(pf[i].fd);
	waitpid(pid, &r->status, 0);
	return timed_out ? -1 : 0;
}

void trun_free(struct ddl_run_result *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof *r);
}

json_t *tjget(json_t *o, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *save, *k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save))
		o = json_object_get(o, k);
	return o;
}

json_t *treport(const char *dir, int *status)
{
	char *argv[] = {(char *)tbuild("bin/ddlprof-report"), "--json", (char *)dir, NULL};
	struct ddl_run_result r;
	if (trun(argv, NULL, 60, &r) < 0) {
		trun_free(&r);
		return NULL;
	}
	if (status)
		*status = WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1;
	json_error_t je;
	json_t *j = json_loads(r.out, 0, &je);
	if (!j)
		fprintf(stderr, "    report is not JSON (%s); stderr: %s\n", je.text, r.err);
	trun_free(&r);
	return j;
}

/* The member of REPORT's array KEY whose "pid" is PID, or NULL. */
static json_t *tfind_pid(json_t *report, const char *key, long pid)
{
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(report, key), i, p)
		if (json_integer_value(json_object_get(p, "pid")) == pid)
			return p;
	return NULL;
}

json_t *tproc(json_t *report, long pid)
{
	return tfind_pid(report, "processes", pid);
}

/* The ranks[] entry of rank RANK in REPORT (the first one), or NULL. */
json_t *trank_of(json_t *report, int rank)
{
	json_t *ranks = json_object_get(report, "ranks");
	for (size_t i = 0; i < json_array_size(ranks); i++) {
		json_t *r = json_array_get(ranks, i);
		if (json_integer_value(json_object_get(r, "rank")) == rank)
			return r;
	}
	return NULL;
}

json_t *trank(json_t *report, long pid)
{
	return tfind_pid(report, "ranks", pid);
}

int tprog_exact(const char *prog, char *const args[], int expect_status)
{
	return tprog_exact_env(prog, args, expect_status, NULL);
}

int tprog_exact_env(const char *prog, char *const args[], int expect_status, const char *setting)
{
	char path[PATH_MAX], *dir = tmpdir();
	char expect[PATH_MAX], envexp[PATH_MAX + 16];
	snprintf(path, sizeof path, "%s", tbuild("tests/progs/"));
	strncat(path, prog, sizeof path - strlen(path) - 1);
	snprintf(expect, sizeof expect, "%s/expect", dir);
	snprintf(envexp, sizeof envexp, "DDLT_EXPECT=%s", expect);
	char tdir[PATH_MAX];
	snprintf(tdir, sizeof tdir, "%s/trace", dir);

	/* Without the library. */
	char *argv0[16] = {path};
	int n = 1;
	for (int i = 0; args && args[i] && n < 14; i++)
		argv0[n++] = args[i];
	argv0[n] = NULL;
	struct ddl_run_result plain, prof;
	CHECK(trun(argv0, NULL, 60, &plain) == 0, "%s did not finish without ddlprof", prog);

	/* With it. */
	char *argv1[20] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", tdir, "--"};
	int m = 5;
	for (int i = 0; i < n && m < 18; i++)
		argv1[m++] = argv0[i];
	argv1[m] = NULL;
	char *env[] = {envexp, (char *)setting, NULL};
	CHECK(trun(argv1, env, 60, &prof) == 0, "%s did not finish under ddlprof", prog);
	CHECK(plain.status == prof.status, "%s: status %#x without, %#x with ddlprof", prog,
	      plain.status, prof.status);
	CHECK(WIFEXITED(prof.status) && WEXITSTATUS(prof.status) == expect_status,
	      "%s: exit status %d, expected %d; stderr: %s", prog, WEXITSTATUS(prof.status),
	      expect_status, prof.err);
	CHECK(plain.nout == prof.nout && !memcmp(plain.out, prof.out, plain.nout),
	      "%s: stdout differs:\n--- without\n%s--- with\n%s", prog, plain.out, prof.out);
	CHECK(prof.nerr == 0, "%s: ddlprof printed on stderr: %s", prog, prof.err);

	int st;
	json_t *rep = treport(tdir, &st);
	CHECK(rep, "no report for %s", prog);
	CHECK(st == 0, "report exit status %d", st);
	FILE *f = fopen(expect, "r");
	CHECK(f, "%s wrote no expect file", prog);
	long pid;
	unsigned long long sent, recv;
	int lines = 0;
	while (fscanf(f, "%ld %llu %llu", &pid, &sent, &recv) == 3) {
		json_t *p = tproc(rep, pid);
		CHECK(p, "%s: pid %ld missing from the report", prog, pid);
		/* a full ring drops what the writer did not drain in time, and
		 * says so: a count short of the program's then says why */
		json_int_t lost = json_integer_value(json_object_get(p, "events_dropped"));
		CHECK(lost == 0, "%s pid %ld: %lld events dropped (the writer fell behind: its ring was full)",
		      prog, pid, (long long)lost);
		json_t *net = json_object_get(p, "network");
		unsigned long long rs = (unsigned long long)json_integer_value(json_object_get(net, "bytes_sent"));
		unsigned long long rr =
			(unsigned long long)json_integer_value(json_object_get(net, "bytes_received"));
		CHECK(rs == sent && rr == recv, "%s pid %ld: report says sent %llu received %llu, program %llu %llu",
		      prog, pid, rs, rr, sent, recv);
		lines++;
	}
	fclose(f);
	CHECK(lines > 0, "%s: empty expect file", prog);
	CHECK(json_is_false(json_object_get(rep, "truncated")), "%s: report says truncated", prog);
	json_decref(rep);
	trun_free(&plain);
	trun_free(&prof);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * A base port with n ports after it free on every address now, below the
 * kernel's ephemeral range (where any outgoing connection may take one):
 * tried from a place set by the process id, so tests running at once
 * differ. A bind without SO_REUSEADDR fails on a port in use or waiting
 * out TIME_WAIT, as the program's listen would.
 */
int tfreeports(int n)
{
	int lo = 20000, hi = 32768, a, b;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	if (f) {
		if (fscanf(f, "%d %d", &a, &b) == 2 && a > lo + 1000)
			hi = a;
		fclose(f);
	}
	int slots = n > 0 && (hi - lo) / n > 0 ? (hi - lo) / n : 1, start = (int)(getpid() % slots);
	for (int k = 0; k < slots; k++) {
		int base = lo + (start + k) % slots * n, ok = 1;
		for (int i = 0; i < n && ok; i++) {
			int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)(base + i)),
			                         .sin_addr.s_addr = htonl(INADDR_ANY)};
			ok = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
			if (fd >= 0)
				close(fd);
		}
		if (ok)
			return base;
	}
	return lo + start * n;
}

double tnow(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int tfulldisk(const char *mnt)
{
	mkdir(mnt, 0700);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=64k") != 0)
		return -1;
	char fill[PATH_MAX];
	snprintf(fill, sizeof fill, "%s/filler", mnt);
	int fd = open(fill, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	static char zero[1024];
	while (fd >= 0 && write(fd, zero, sizeof zero) > 0)
		;
	if (fd >= 0)
		close(fd);
	return 0;
}

int tskip_sanitized(void)
{
#if defined(__SANITIZE_ADDRESS__)
	printf("    skipped: a real workload's figures, checked in the plain build (torch_transparency "
	       "and hang_torch run it under the sanitizers)\n");
	return 1;
#else
	return 0;
#endif
}

int tstatus(const struct ddl_run_result *r)
{
	return WIFEXITED(r->status) ? WEXITSTATUS(r->status) : 1000 + WTERMSIG(r->status);
}
