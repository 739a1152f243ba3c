/*
 * The process's own transitions, as a profiled process lives through them:
 * a fork() child keeps recording into a trace of its own (the pthread_atfork
 * handlers); exec flushes and ends the trace and the new image starts afresh
 * (a failed exec carries on with the same trace); daemon() ends the parent's
 * trace before glibc's own _exit; unshare and setns into namespaces the
 * kernel refuses to multi-threaded processes move the writer thread out of
 * the way; _exit and _Exit, which skip the destructors, flush first. The
 * library's start (core.c) registers the fork handlers with
 * ddl_process_init().
 */
#include <sched.h>
#include <stdarg.h>
#include <unistd.h>

#include "ddl.h"

/* ---- fork: the child starts a trace of its own ---- */

static void ddl_atfork_prepare(void)
{
	ddl_writer_atfork_prepare();
}

static void ddl_atfork_parent(void)
{
	ddl_writer_atfork_parent();
}

/* The child keeps recording into a trace of its own, created on first data;
 * its writer starts then too (ddl_writer_start_later). */
static void ddl_atfork_child(void)
{
	ddl_g.pid = getpid();
	ddl_g.ppid = getppid();
	ddl_clock_sample(&ddl_g.start);
	ddl_writer_after_fork_child(); /* first: it frees the string lock */
	ddl_threads_after_fork_child();
	ddl_gpu_after_fork_child();
	ddl_unwind_after_fork_child();
	ddl_papi_after_fork_child();
	ddl_gloo_after_fork_child();
	ddl_mpi_after_fork_child();
	if (!atomic_load(&ddl_g.enabled))
		return;
	ddl_writer_start_later(); /* on the child's first ring */
}
void ddl_process_init(void)
{
	pthread_atfork(ddl_atfork_prepare, ddl_atfork_parent, ddl_atfork_child);
}

/* ---- exec: flush, then the new image starts its own trace ---- */

static int ddl_exec_prepare(void)
{
	if (!ddl_g.initialised || !atomic_load(&ddl_g.enabled) || ddl_g.pid != getpid())
		return 0; /* off, or a vfork child sharing our memory */
	ddl_writer_stop(DDL_END_EXEC, 0);
	return 1;
}

/* exec failed: the image goes on, and so does its trace. */
static void ddl_exec_failed(int prepared)
{
	if (!prepared)
		return;
	int err = errno;
	ddl_writer_reopen();
	int rc = ddl_writer_start();
	if (rc < 0)
		ddl_disable("cannot restart the trace writer after a failed exec", -rc);
	errno = err;
}

DDL_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	if (ddl_unlikely(!ddl_real.execve))
		ddl_real_resolve();
	int p = ddl_exec_prepare();
	int r = ddl_real.execve(path, argv, envp);
	ddl_exec_failed(p);
	return r;
}

DDL_EXPORT int execv(const char *path, char *const argv[])
{
	if (ddl_unlikely(!ddl_real.execv))
		ddl_real_resolve();
	int p = ddl_exec_prepare();
	int r = ddl_real.execv(path, argv);
	ddl_exec_failed(p);
	return r;
}

DDL_EXPORT int execvp(const char *file, char *const argv[])
{
	if (ddl_unlikely(!ddl_real.execvp))
		ddl_real_resolve();
	int p = ddl_exec_prepare();
	int r = ddl_real.execvp(file, argv);
	ddl_exec_failed(p);
	return r;
}

DDL_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	if (ddl_unlikely(!ddl_real.execvpe))
		ddl_real_resolve();
	int p = ddl_exec_prepare();
	int r = ddl_real.execvpe(file, argv, envp);
	ddl_exec_failed(p);
	return r;
}

DDL_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                        int flags)
{
	if (ddl_unlikely(!ddl_real.execveat))
		ddl_real_resolve();
	int p = ddl_exec_prepare();
	int r = ddl_real.execveat(dirfd, path, argv, envp, flags);
	ddl_exec_failed(p);
	return r;
}

DDL_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	if (ddl_unlikely(!ddl_real.fexecve))
		ddl_real_resolve();
	int p = ddl_exec_prepare();
	int r = ddl_real.fexecve(fd, argv, envp);
	ddl_exec_failed(p);
	return r;
}

/*
 * execl, execlp and execle take their arguments inline; glibc turns them
 * into the vector forms internally, past our wrappers, so they are
 * interposed here by collecting the arguments the same way glibc does:
 * count them first, then an array of exactly that size on the stack.
 */
static size_t ddl_execl_count(const char *arg, va_list ap)
{
	size_t n = 1;
	if (arg)
		while (va_arg(ap, char *))
			n++;
	return n + 1; /* and the NULL */
}

static void ddl_execl_fill(const char *arg, va_list ap, char **argv, size_t n)
{
	argv[0] = (char *)arg;
	for (size_t i = 1; i < n; i++)
		argv[i] = arg ? va_arg(ap, char *) : NULL;
}

enum ddl_execl_how { DDL_EXECL_PATH, DDL_EXECL_SEARCH, DDL_EXECL_ENV };

/* The vector form of one execl call; AP is past ARG and is used up. */
static int ddl_execl(enum ddl_execl_how how, const char *file, const char *arg, va_list ap)
{
	va_list cp;
	va_copy(cp, ap);
	size_t n = ddl_execl_count(arg, cp);
	va_end(cp);
	char *argv[n];
	ddl_execl_fill(arg, ap, argv, n);
	if (how == DDL_EXECL_ENV)
		return execve(file, argv, va_arg(ap, char *const *));
	return how == DDL_EXECL_SEARCH ? execvp(file, argv) : execv(file, argv);
}

DDL_EXPORT int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	int r = ddl_execl(DDL_EXECL_PATH, path, arg, ap);
	va_end(ap);
	return r;
}

DDL_EXPORT int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	int r = ddl_execl(DDL_EXECL_SEARCH, file, arg, ap);
	va_end(ap);
	return r;
}

DDL_EXPORT int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	int r = ddl_execl(DDL_EXECL_ENV, path, arg, ap);
	va_end(ap);
	return r;
}

/* ---- namespaces and daemon(): calls that need us out of the way ---- */

DDL_EXPORT int unshare(int flags)
{
	if (ddl_unlikely(!ddl_real.unshare))
		ddl_real_resolve();
	int p = flags & (CLONE_NEWUSER | CLONE_NEWNS | CLONE_FS) ? ddl_writer_pause() : 0;
	int r = ddl_real.unshare(flags);
	/* A joined thread can still count in the kernel for a moment after
	 * pthread_join returns: retry a little before taking EINVAL as final. */
	for (int i = 0; p && r < 0 && errno == EINVAL && i < 100; i++) {
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
		r = ddl_real.unshare(flags);
	}
	ddl_writer_resume(p);
	return r;
}

DDL_EXPORT int setns(int fd, int nstype)
{
	if (ddl_unlikely(!ddl_real.setns))
		ddl_real_resolve();
	int p = nstype == 0 || nstype & (CLONE_NEWUSER | CLONE_NEWNS) ? ddl_writer_pause() : 0;
	int r = ddl_real.setns(fd, nstype);
	for (int i = 0; p && r < 0 && errno == EINVAL && i < 100; i++) {
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
		r = ddl_real.setns(fd, nstype);
	}
	ddl_writer_resume(p);
	return r;
}

/*
 * daemon() forks and the parent leaves through glibc's own _exit, past our
 * wrapper: end the parent's trace first. The child (and a parent whose fork
 * failed) carries on with a writer again.
 */
DDL_EXPORT int daemon(int nochdir, int noclose)
{
	if (ddl_unlikely(!ddl_real.daemon))
		ddl_real_resolve();
	int p = 0;
	if (ddl_g.initialised && atomic_load(&ddl_g.enabled) && ddl_g.pid == getpid()) {
		ddl_writer_stop(DDL_END_UEXIT, 0);
		p = 1;
	}
	int r = ddl_real.daemon(nochdir, noclose);
	if (p && ddl_g.pid == getpid()) { /* the child, or a parent whose fork failed */
		ddl_writer_reopen();
		ddl_writer_resume(1);
	}
	return r;
}

/* ---- _exit skips destructors: flush here ---- */

static void ddl_uexit_flush(int status)
{
	if (ddl_g.initialised && atomic_load(&ddl_g.enabled) && ddl_g.pid == getpid()) {
		if (!ddl_writer_exit_idle())
			ddl_writer_stop(DDL_END_UEXIT, status);
		atomic_store(&ddl_g.enabled, 0);
	}
}

DDL_EXPORT void _exit(int status)
{
	if (ddl_unlikely(!ddl_real._exit))
		ddl_real_resolve();
	ddl_uexit_flush(status);
	ddl_real._exit(status);
	__builtin_unreachable();
}

DDL_EXPORT void _Exit(int status)
{
	if (ddl_unlikely(!ddl_real._Exit))
		ddl_real_resolve();
	ddl_uexit_flush(status);
	ddl_real._Exit(status);
	__builtin_unreachable();
}
