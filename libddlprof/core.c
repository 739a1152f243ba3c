/*
 * Start and stop of the preload library: the constructor reads the DDLPROF_*
 * settings and the launcher's rank variables, checks the trace directory
 * (the rule of ddlprof/tracedir.h), records the command line, and starts the
 * clock, the socket tables, the optional back ends, the writer, the signal
 * handlers and the fork handlers; the destructor writes the rest and the end
 * chunk. What happens between (fork, exec, _exit) is process.c's; the one
 * line a failure costs is diag.c's: profiling switches off and the program
 * runs on unchanged.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ddl.h"
#include "ddlprof/tracedir.h"

struct ddl_global ddl_g = {.rank = -1, .world_size = -1, .local_rank = -1};

void *ddl_lazy_map(void *_Atomic *slot, size_t bytes)
{
	int saved = errno;
	void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	errno = saved;
	if (m == MAP_FAILED)
		return NULL;
	void *expect = NULL;
	if (atomic_compare_exchange_strong(slot, &expect, m))
		return m;
	munmap(m, bytes); /* another thread mapped it first */
	errno = saved;
	return expect;
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
	c->trace_mpi = 1;
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
	/* Under ulimit -v every mapping of ours is address space the program
	 * cannot have: buffers of 128 KiB a thread, not 1 MiB, unless asked. */
	struct rlimit as;
	c->as_limited = getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY;
	if (c->as_limited)
		c->ring_events = 4096;
	unsigned ring = c->ring_events;
	rc |= ddl_parse_uint("DDLPROF_FLUSH_MS", 1, 60000, &c->flush_ms);
	rc |= ddl_parse_uint("DDLPROF_HANG_TIMEOUT", 0, 1000000, &c->hang_timeout_s);
	rc |= ddl_parse_uint("DDLPROF_BUFFER_EVENTS", 64, 1u << 24, &ring);
	while (ring & (ring - 1))
		ring += ring & -ring; /* round up to a power of two */
	c->ring_events = ring;
	/* Under ulimit -v the threads' buffers (each its ring and alternate
	 * signal stack) keep to a 64th of the limit, the first one whatever
	 * it costs: a program short of room for its own threads by more than
	 * that, and the library's fixed 0.9 MiB, runs as without us, its later
	 * threads unrecorded (thread.c). */
	c->thread_budget = c->as_limited ? (size_t)(as.rlim_cur / 64) : SIZE_MAX;
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
	if ((v = ddl_env("DDLPROF_WRITER"))) {
		if (!strcmp(v, "auto"))
			c->writer = DDL_WRITER_AUTO;
		else if (!strcmp(v, "thread"))
			c->writer = DDL_WRITER_THREAD;
		else if (!strcmp(v, "inline"))
			c->writer = DDL_WRITER_INLINE;
		else {
			ddl_warn("DDLPROF_WRITER='%.40s' is not auto, thread or inline; profiling is off", v);
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
			{"mpi", offsetof(struct ddl_settings, trace_mpi)},
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
				         "nccl, nvtx, gloo, mpi, file, python); profiling is off", tok);
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
	/* set by the launcher, not by users: a value that is no pid names no process */
	if ((v = ddl_env("DDLPROF_COMMAND_PID"))) {
		char *end;
		long pid = strtol(v, &end, 10);
		c->command_pid = !*end && pid > 0 ? pid : 0;
	}
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
 * every working directory. The directory must pass the launcher's rule
 * (ddlprof/tracedir.h). One line for the whole job when it cannot be used:
 * the first process to find out says it and leaves DDLPROF_DIR_FAILED=DIR
 * in its environment (set in the constructor, before the program runs), so
 * the processes it starts, which find the same, stay quiet. Returns 0 or -1
 * (profiling stays off).
 */
static int ddl_dir_check(const struct ddl_settings *c)
{
	static const char *const trap[] = {
		[DDL_TRACEDIR_LINK] = "it is a symbolic link",
		[DDL_TRACEDIR_NOTDIR] = "it is not a directory",
		[DDL_TRACEDIR_FOREIGN] = "it belongs to another user",
		[DDL_TRACEDIR_OPEN] = "every user can write into it (use a directory others cannot write)",
		[DDL_TRACEDIR_PARENT_LINK] = "it is reached through another user's symbolic link in a "
		                             "directory everyone can write into",
	};
	struct stat st;
	int rc = ddl_tracedir_prepare(c->dir, ddl_env("DDLPROF_DIR") != NULL, &st);
	if (rc == 0)
		return 0;
	const char *told = ddl_env("DDLPROF_DIR_FAILED");
	if (!told || strcmp(told, c->dir)) {
		ddl_warn("cannot write traces to %s: %s; profiling is off, the program continues", c->dir,
		         rc > 0 ? trap[rc] : strerror(-rc));
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
	ddl_diag_init(); /* before any warning: which file stderr is */
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
	ddl_process_init(); /* fork handlers (process.c) */
	atomic_store(&ddl_g.enabled, (ddl_g.cfg.trace_socket ? DDL_FAM_SOCKET | DDL_FAM_SYNC : 0) |
	                                 (ddl_g.cfg.trace_cuda ? DDL_FAM_CUDA : 0) |
	                                 (ddl_g.cfg.trace_nccl ? DDL_FAM_NCCL : 0) |
	                                 (ddl_g.cfg.trace_gloo ? DDL_FAM_GLOO : 0) |
	                                 (ddl_g.cfg.trace_mpi ? DDL_FAM_MPI : 0) |
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
