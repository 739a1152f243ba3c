/*
 * Life cycle of the preload library: the constructor reads the DDLPROF_*
 * settings and the launcher's rank variables, starts the clock, the socket
 * tables, the signal handlers and the writer; the destructor writes the
 * rest and the end chunk. fork() children start a trace of their own, exec
 * flushes first and the new image starts afresh, _exit flushes. Any internal
 * failure switches profiling off with one line on stderr; the program runs
 * on unchanged.
 */
#include <ctype.h>
#include <fcntl.h>
#include <sched.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ddl.h"
#include "ddlprof/runid.h"

struct ddl_global ddl_g = {.rank = -1, .world_size = -1, .local_rank = -1};

/*
 * The program's standard error as it is now. The writer thread has a
 * descriptor table of its own, so it borrows the program's descriptor 2 for
 * the one write (pidfd_getfd), or reopens it for appending; it never keeps
 * it, so a program that closes its stderr still delivers EOF to its reader.
 * Returns a descriptor and sets *own when the caller must close it.
 */
static int ddl_stderr(int *own)
{
	*own = 0;
	if (!ddl_private_fds)
		return 2;
	int pfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (pfd >= 0) {
		int fd = (int)syscall(SYS_pidfd_getfd, pfd, 2, 0);
		syscall(SYS_close, pfd);
		if (fd >= 0) {
			*own = 1;
			return fd;
		}
	}
	int fd = open("/proc/self/fd/2", O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
	*own = fd >= 0;
	return fd;
}

/* One line on stderr, straight to the descriptor (no stdio state touched). */
void ddl_warn(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n = snprintf(buf, sizeof buf, "ddlprof[%d]: ", (int)getpid());
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof buf - 1)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	int saved = errno, own;
	int fd = ddl_stderr(&own);
	if (fd >= 0)
		syscall(SYS_write, fd, buf, (size_t)n);
	if (own)
		syscall(SYS_close, fd);
	errno = saved;
}

void ddl_disable(const char *why, int err)
{
	if (!atomic_exchange(&ddl_g.enabled, 0) && ddl_g.initialised)
		return; /* already off: one line only */
	if (err)
		ddl_warn("%s: %s; profiling is off, the program continues", why, strerror(err));
	else
		ddl_warn("%s; profiling is off, the program continues", why);
}

/* ---- settings ---- */

static const char *ddl_env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

/* Parses an unsigned in [lo, hi]; returns 0 or -EINVAL. */
static int ddl_parse_uint(const char *name, unsigned lo, unsigned hi, unsigned *out)
{
	const char *v = ddl_env(name);
	if (!v)
		return 0;
	char *end;
	errno = 0;
	unsigned long x = strtoul(v, &end, 10);
	if (errno || *end || end == v || x < lo || x > hi || v[0] == '-') {
		ddl_warn("%s='%.40s' is not a whole number in %u..%u; profiling is off", name, v, lo, hi);
		return -EINVAL;
	}
	*out = (unsigned)x;
	return 0;
}

/* 1 or 0 for the spellings of a boolean, -1 for anything else. */
static int ddl_bool_of(const char *v)
{
	if (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "on") || !strcmp(v, "true"))
		return 1;
	if (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "off") || !strcmp(v, "false"))
		return 0;
	return -1;
}

static int ddl_parse_bool(const char *name, int *out)
{
	const char *v = ddl_env(name);
	if (!v)
		return 0;
	int b = ddl_bool_of(v);
	if (b < 0) {
		ddl_warn("%s='%.40s' is not 0 or 1; profiling is off", name, v);
		return -EINVAL;
	}
	*out = b;
	return 0;
}


static int ddl_settings_load(struct ddl_settings *c)
{
	const char *v;
	int rc = 0;
	memset(c, 0, sizeof *c);
	c->flush_ms = 100;
	c->ring_events = 32768;
	c->compress = DDL_COMPRESS_LZ4;
	c->trace_socket = 1;
	c->trace_cuda = 1;
	c->trace_nccl = 1;
	c->trace_nvtx = 1;
	c->trace_gloo = 1;
	c->trace_file = 1;
	c->kernel_sample = 0; /* kernel segments, not sampled pairs */
	c->cupti = -1;

	v = ddl_env("DDLPROF_DIR");
	if (v && strlen(v) >= sizeof c->dir - 64) {
		ddl_warn("DDLPROF_DIR is longer than %zu bytes; profiling is off", sizeof c->dir - 64);
		return -EINVAL;
	}
	if (v && v[0] == '/')
		snprintf(c->dir, sizeof c->dir, "%s", v);
	else {
		/* relative: the working directory in front must still leave room
		 * for the file names, never cut the path */
		char cwd[sizeof c->dir];
		if (!getcwd(cwd, sizeof cwd))
			snprintf(cwd, sizeof cwd, ".");
		const char *rel = v ? v : "ddlprof-trace";
		if (strlen(cwd) + 1 + strlen(rel) >= sizeof c->dir - 64) {
			ddl_warn("DDLPROF_DIR '%.40s' in the working directory makes a path longer than %zu "
			         "bytes; profiling is off", rel, sizeof c->dir - 64);
			return -EINVAL;
		}
		snprintf(c->dir, sizeof c->dir, "%s/%s", cwd, rel);
	}
	unsigned ring = c->ring_events;
	rc |= ddl_parse_uint("DDLPROF_FLUSH_MS", 1, 60000, &c->flush_ms);
	rc |= ddl_parse_uint("DDLPROF_BUFFER_EVENTS", 64, 1u << 24, &ring);
	while (ring & (ring - 1))
		ring += ring & -ring; /* round up to a power of two */
	c->ring_events = ring;
	if ((v = ddl_env("DDLPROF_COMPRESS"))) {
		/* a codec, or as before a boolean: on means the default codec */
		if (!strcmp(v, "lz4") || !strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "on") ||
		    !strcmp(v, "true"))
			c->compress = DDL_COMPRESS_LZ4;
		else if (!strcmp(v, "zstd"))
			c->compress = DDL_COMPRESS_ZSTD;
		else if (!strcmp(v, "none") || !strcmp(v, "0") || !strcmp(v, "no") ||
		         !strcmp(v, "off") || !strcmp(v, "false"))
			c->compress = DDL_COMPRESS_NONE;
		else {
			ddl_warn("DDLPROF_COMPRESS='%.40s' is not lz4, zstd, none, 1 or 0; profiling is off", v);
			rc = -EINVAL;
		}
	}
	rc |= ddl_parse_bool("DDLPROF_QUIET", &c->quiet);
	rc |= ddl_parse_uint("DDLPROF_KERNEL_SAMPLE", 0, 1u << 20, &c->kernel_sample);
	if ((v = ddl_env("DDLPROF_CUPTI")) && strcmp(v, "auto")) {
		c->cupti = ddl_bool_of(v);
		if (c->cupti < 0) {
			ddl_warn("DDLPROF_CUPTI='%.40s' is not auto, on or off; profiling is off", v);
			rc = -EINVAL;
		}
	}

	if ((v = ddl_env("DDLPROF_TRACE")) && strlen(v) >= 256) {
		/* as the launcher's --trace: a list this long is no list of families */
		ddl_warn("DDLPROF_TRACE is longer than 255 bytes; profiling is off");
		rc = -EINVAL;
	} else if (v) {
		char list[256];
		snprintf(list, sizeof list, "%s", v);
		static const struct {
			const char *name;
			size_t off;
		} fams[] = {
			{"socket", offsetof(struct ddl_settings, trace_socket)},
			{"cuda", offsetof(struct ddl_settings, trace_cuda)},
			{"nccl", offsetof(struct ddl_settings, trace_nccl)},
			{"nvtx", offsetof(struct ddl_settings, trace_nvtx)},
			{"gloo", offsetof(struct ddl_settings, trace_gloo)},
			{"file", offsetof(struct ddl_settings, trace_file)},
			{"python", 0}, /* the launcher's: the Python hook, not this library */
		};
		enum { NFAM = sizeof fams / sizeof fams[0] };
		for (size_t i = 0; i < NFAM; i++)
			if (fams[i].off)
				*(int *)((char *)c + fams[i].off) = 0;
		for (char *save, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			int all = !strcmp(tok, "all"), known = all;
			for (size_t i = 0; i < NFAM; i++)
				if (all || !strcmp(tok, fams[i].name)) {
					known = 1;
					if (fams[i].off)
						*(int *)((char *)c + fams[i].off) = 1;
				}
			if (!known) {
				ddl_warn("DDLPROF_TRACE: unknown family '%.40s' (known: all, socket, cuda, "
				         "nccl, nvtx, gloo, file, python); profiling is off", tok);
				rc = -EINVAL;
			}
		}
	}
	if ((v = ddl_env("DDLPROF_PERTURB_NET")) && ddl_perturb_parse(v) < 0) {
		ddl_warn("DDLPROF_PERTURB_NET='%.40s' is not delay=USEC or rate=RATE (e.g. rate=100mbit); "
		         "profiling is off", v);
		rc = -EINVAL;
	}
	if ((v = ddl_env("DDLPROF_CLOCK"))) {
		if (!strcmp(v, "tsc"))
			c->clock = DDL_CLOCK_TSC;
		else if (!strcmp(v, "monotonic"))
			c->clock = DDL_CLOCK_MONOTONIC;
		else if (strcmp(v, "auto")) {
			ddl_warn("DDLPROF_CLOCK='%.40s' is not auto, tsc or monotonic; profiling is off", v);
			rc = -EINVAL;
		}
	}
	rc |= ddl_parse_uint("DDLPROF_BACKTRACE", 0, 32, &c->backtrace);
	if ((v = ddl_env("DDLPROF_PAPI"))) {
		if (strlen(v) >= sizeof c->papi) {
			ddl_warn("DDLPROF_PAPI is longer than %zu bytes; profiling is off", sizeof c->papi - 1);
			rc = -EINVAL;
		} else {
			snprintf(c->papi, sizeof c->papi, "%s", v);
		}
	}
	return rc ? -EINVAL : 0;
}

/*
 * The trace directory, checked when the process starts, so that a job whose
 * directory cannot be used says so once instead of once in every process
 * at its first write. A DDLPROF_DIR named explicitly (the launcher always
 * names one) is created now, mode 0700; the default one waits for the first
 * write, so that programs which record nothing leave no empty directory in
 * every working directory. An existing directory must be a real directory
 * of ours, as the launcher demands, and not one every user may write into
 * (unless sticky); it is never changed. Returns 0, or a negative errno with
 * *why naming the problem where strerror would not.
 */
static int ddl_dir_prepare(const char *dir, int create, const char **why)
{
	struct stat st;
	*why = NULL;
	if (create && mkdir(dir, 0700) != 0 && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st) != 0)
		return errno == ENOENT && !create ? 0 : -errno; /* the first write says */
	if (S_ISLNK(st.st_mode)) {
		*why = "it is a symbolic link";
		return -ELOOP;
	}
	if (!S_ISDIR(st.st_mode)) {
		*why = "it is not a directory";
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		*why = "it belongs to another user";
		return -EPERM;
	}
	/* An existing directory is never changed: one every user may write
	 * into (and that is not sticky) lets them replace or remove the traces.
	 * Group write is the group's business (a umask of 002 gives it). */
	if ((st.st_mode & 002) && !(st.st_mode & S_ISVTX)) {
		*why = "every user can write into it (use a directory others cannot write)";
		return -EPERM;
	}
	if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) != 0)
		return -errno;
	return 0;
}

/*
 * One line for the whole job when the directory cannot be used: the first
 * process to find out says it and leaves DDLPROF_DIR_FAILED=DIR in its
 * environment (set in the constructor, before the program runs), so the
 * processes it starts, which find the same, stay quiet. Returns 0 or -1
 * (profiling stays off).
 */
static int ddl_dir_check(const struct ddl_settings *c)
{
	const char *why;
	int rc = ddl_dir_prepare(c->dir, ddl_env("DDLPROF_DIR") != NULL, &why);
	if (rc == 0)
		return 0;
	const char *told = ddl_env("DDLPROF_DIR_FAILED");
	if (!told || strcmp(told, c->dir)) {
		ddl_warn("cannot write traces to %s: %s; profiling is off, the program continues", c->dir,
		         why ? why : strerror(-rc));
		setenv("DDLPROF_DIR_FAILED", c->dir, 1);
	}
	return -1;
}

static int32_t ddl_env_int(const char *a, const char *b, const char *c, const char *d)
{
	const char *names[] = {a, b, c, d};
	for (int i = 0; i < 4; i++) {
		const char *v = names[i] ? ddl_env(names[i]) : NULL;
		if (!v)
			continue;
		char *end;
		long x = strtol(v, &end, 10);
		if (!*end && x >= 0 && x < INT32_MAX)
			return (int32_t)x;
	}
	return -1;
}

void ddl_meta(const char *key, const char *val)
{
	static _Atomic uint32_t seq;
	char buf[1100];
	int n = snprintf(buf, sizeof buf, "%s=%s", key, val);
	if (n < 0)
		return;
	ddl_strings_add(DDL_STR_META, atomic_fetch_add(&seq, 1), 0, buf,
	                (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

uint32_t ddl_comm_id_new(void)
{
	static _Atomic uint32_t last;
	return atomic_fetch_add(&last, 1) + 1;
}

/* Command line, directory and the launch variables that explain a rank. */
static void ddl_meta_record(void)
{
	static const char *const keep[] = {
		"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
		"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
		"SLURM_JOB_ID", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_NODEID",
		"CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "DDLPROF_PERTURB_NET", NULL};
	char buf[1024];
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = syscall(SYS_read, fd, buf, sizeof buf - 1);
		syscall(SYS_close, fd);
		if (n > 0) {
			for (ssize_t i = 0; i < n - 1; i++)
				if (!buf[i])
					buf[i] = ' ';
			buf[n] = 0;
			ddl_meta("cmdline", buf);
		}
	}
	if (getcwd(buf, sizeof buf))
		ddl_meta("cwd", buf);
	for (int i = 0; keep[i]; i++) {
		const char *v = ddl_env(keep[i]);
		if (v)
			ddl_meta(keep[i], v);
	}
	ddl_meta("ddlprof_version", DDLPROF_VERSION);
}

static void ddl_atfork_prepare(void)
{
	ddl_writer_atfork_prepare();
}

static void ddl_atfork_parent(void)
{
	ddl_writer_atfork_parent();
}

/* The child keeps recording into a trace of its own, created on first data. */
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
	if (!atomic_load(&ddl_g.enabled))
		return;
	int rc = ddl_writer_start();
	if (rc < 0)
		ddl_disable("cannot start the trace writer in a forked child", -rc);
}

__attribute__((constructor(101))) static void ddl_constructor(void)
{
	int saved = errno; /* the program starts with the errno it would have had */
	ddl_init();
	errno = saved;
}

void ddl_init(void)
{
	if (ddl_g.initialised)
		return;
	ddl_real_resolve();
	ddl_g.pid = getpid();
	ddl_g.ppid = getppid();
	int off = 0;
	/* Secure execution (setuid): the loader ignores LD_PRELOAD, but the
	 * NVTX and CUDA loaders dlopen their tool from a plain getenv. Such a
	 * process must not act on the user's settings: stay off, silently. */
	if (getauxval(AT_SECURE) || ddl_parse_bool("DDLPROF_DISABLE", &off) < 0 || off) {
		ddl_g.initialised = 1;
		return;
	}
	/* DDLPROF_HOST names the host when one machine stands for several (the
	 * CPU emulation of a GPU cluster); otherwise the kernel's hostname. */
	const char *hv = ddl_env("DDLPROF_HOST");
	if (hv && *hv)
		snprintf(ddl_g.host, sizeof ddl_g.host, "%s", hv);
	else if (gethostname(ddl_g.host, sizeof ddl_g.host - 1) != 0)
		snprintf(ddl_g.host, sizeof ddl_g.host, "unknown");
	ddl_runid_sanitize(ddl_g.host);
	if (ddl_settings_load(&ddl_g.cfg) < 0 || ddl_dir_check(&ddl_g.cfg) < 0) {
		ddl_g.initialised = 1;
		return;
	}
	ddl_runid_make(ddl_g.cfg.run_id, sizeof ddl_g.cfg.run_id, ddl_env, ddl_g.host, (long)getpid(), 0);
	ddl_g.rank = ddl_env_int("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID");
	ddl_g.world_size = ddl_env_int("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS");
	ddl_g.local_rank =
		ddl_env_int("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID");
	const char *skew = ddl_env("DDLPROF_CLOCK_SKEW_NS");
	if (skew) {
		char *end;
		long long v = strtoll(skew, &end, 10);
		if (*end || end == skew || v < -1000000000000LL || v > 1000000000000LL)
			ddl_warn("DDLPROF_CLOCK_SKEW_NS='%.40s' is not a whole number of nanoseconds within "
			         "1000 s; ignored", skew);
		else
			ddl_clock_skew_ns = v;
	}
	ddl_clock_init(ddl_g.cfg.clock);
	ddl_clock_sample(&ddl_g.start);
	ddl_socket_init();
	ddl_meta_record();
	ddl_unwind_init(); /* --backtrace: libunwind, found now or never */
	ddl_papi_init();   /* --papi: libpapi, and which of the counters it has */
	/* The writer starts here, never from a wrapper (which may run in a
	 * signal handler, where creating a thread is not allowed). */
	int rc = ddl_writer_start();
	ddl_g.initialised = 1;
	if (rc < 0) {
		ddl_warn("cannot start the trace writer thread: %s; profiling is off, the program "
		         "continues", strerror(-rc));
		return;
	}
	ddl_signal_init();
	pthread_atfork(ddl_atfork_prepare, ddl_atfork_parent, ddl_atfork_child);
	atomic_store(&ddl_g.enabled, (ddl_g.cfg.trace_socket ? DDL_FAM_SOCKET | DDL_FAM_SYNC : 0) |
	                                 (ddl_g.cfg.trace_cuda ? DDL_FAM_CUDA : 0) |
	                                 (ddl_g.cfg.trace_nccl ? DDL_FAM_NCCL : 0) |
	                                 (ddl_g.cfg.trace_gloo ? DDL_FAM_GLOO : 0) |
	                                 (ddl_g.cfg.trace_file ? DDL_FAM_FILE : 0) | DDL_FAM_MARK);
}

__attribute__((destructor(101))) static void ddl_destructor(void)
{
	if (!atomic_load(&ddl_g.enabled) || ddl_g.pid != getpid())
		return;
	ddl_gpu_stop(); /* normally done already, by our atexit handler */
	ddl_writer_stop(DDL_END_EXIT, 0);
	atomic_store(&ddl_g.enabled, 0);
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
