/*
 * The shared part of the ThreadSanitizer programs (harness.h): checks,
 * running the workload in a profiled child, and the one libc function the
 * preload library's sources, compiled into these programs, must find
 * changed here (syscall, below).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <linux/close_range.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static int passed, failed;

void tsan_check(int ok, const char *what)
{
	if (ok) {
		passed++;
	} else {
		failed++;
		fprintf(stderr, "tsan: FAILED: %s\n", what);
	}
}

int tsan_summary(void)
{
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

/*
 * The writer thread gives itself a descriptor table with nothing in it
 * (close_range(0, ~0, CLOSE_RANGE_UNSHARE) through syscall()), so a TSan
 * report made on that thread would have no descriptor 2 to go to, or would
 * land in whatever the writer opened there. The library's syscall() calls
 * land here (it is compiled into the program): that one call keeps
 * descriptor 2; everything else goes to libc's syscall(). Not instrumented:
 * TSan's own start-up reaches it (sigaltstack, through the library's).
 */
__attribute__((no_sanitize("thread"))) long syscall(long nr, ...)
{
	static long (*real_syscall)(long, ...);
	long (*real)(long, ...) = __atomic_load_n(&real_syscall, __ATOMIC_RELAXED);
	va_list ap;
	long a[6];
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real) {
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
		__atomic_store_n(&real_syscall, real, __ATOMIC_RELAXED);
	}
	if (nr == SYS_close_range && (unsigned)a[0] == 0 && (unsigned)a[1] == ~0u &&
	    (a[2] & CLOSE_RANGE_UNSHARE)) {
		long r = real(SYS_close_range, 0u, 1u, (unsigned)a[2]);
		if (r == 0)
			real(SYS_close_range, 3u, ~0u, 0u);
		return r;
	}
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

int tsan_run_profiled(const char *argv0, char *dir, const char *const *env, unsigned timeout_s)
{
	strcpy(dir, "/tmp/ddlprof-tsan.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("tsan: mkdtemp");
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("tsan: fork");
		return -1;
	}
	if (pid == 0) {
		unsetenv("DDLPROF_DISABLE");
		setenv("DDLPROF_DIR", dir, 1);
		setenv("DDLPROF_QUIET", "1", 1);
		for (; env && *env; env++)
			putenv((char *)*env);
		alarm(timeout_s);
		execl("/proc/self/exe", argv0, "run", (char *)NULL);
		_exit(127);
	}
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	char what[128];
	snprintf(what, sizeof what, "the workload exits 0 (status %d%s)",
	         WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
	         WIFEXITED(st) && WEXITSTATUS(st) == 66 ? ": ThreadSanitizer reports above"
	         : WIFSIGNALED(st)                      ? ", a signal"
	                                                : "");
	tsan_check(WIFEXITED(st) && WEXITSTATUS(st) == 0, what);
	return 0;
}

void tsan_remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}
