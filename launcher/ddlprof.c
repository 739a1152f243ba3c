/*
 * ddlprof: the launcher. Prepares the trace directory and the run id (by
 * the rules the library follows too: ddlprof/tracedir.h), sets LD_PRELOAD
 * (prepending libddlprof.so, never replacing what is there) and the
 * DDLPROF_* settings, then execs the command, so the exit status and the
 * signals are the command's own. One launcher per rank under srun, mpirun
 * or torchrun; all write into the same directory, told apart by host and pid
 * and grouped by run id.
 *
 * Options: launcher_opts.h's table, read as every ddlprof command reads
 * its own (ddlprof/cli.h); a --perturb-net rate by ddlprof/rate.h, the
 * library's rule.
 *
 * Exit status when the command cannot be started: 125 for our own errors
 * (bad options, said in one line ending "try --help"; a trace directory that cannot be made or written into, or
 * is a link, a file or another user's), 126 command not executable, 127
 * not found, as env(1) and timeout(1) do. Both are found out before the
 * command starts, with one line naming the path, so that a job in CI
 * never runs unprofiled by surprise; a command that cannot be started
 * leaves no trace directory behind. What fails after the start (a disk
 * that fills up) is the library's: it switches itself off and the job
 * runs on.
 */
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ddlprof/rate.h"
#include "ddlprof/tracedir.h"
#include "ddlprof/trace.h"
#include "launcher_opts.h"

#define DDL_EXIT_OWN 125
#define DDL_PAPI_MAX 16 /* as libddlprof/papi.c */

static const struct ddl_cli_opt ddl_opts[] = {DDL_LAUNCH_OPTIONS(DDL_CLI_OPT)};

static void ddl_usage(void)
{
	printf("usage: ddlprof [-q] [-o DIR] [--trace LIST] [--run-id ID] [--python on|off]\n"
	       "               [--data real|synthetic] [--flush-ms N] [--compress MODE]\n"
	       "               [--perturb-net SPEC] [--kernel-sample N] [--cupti MODE]\n"
	       "               [--backtrace DEPTH] [--papi EVENTS] [--hang-timeout SECONDS]\n"
	       "               [--] COMMAND [ARGS...]\n"
	       "Run COMMAND with its communication, GPU and data loading calls traced.\n");
	ddl_cli_help(stdout, ddl_opts, sizeof ddl_opts / sizeof ddl_opts[0]);
	printf("See ddlprof(1).\n");
}

static int ddl_valid_trace(const char *list)
{
	char buf[256];
	if (strlen(list) >= sizeof buf)
		return 0;
	snprintf(buf, sizeof buf, "%s", list);
	char *save;
	int n = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save), n++)
		if (strcmp(t, "all") && strcmp(t, "socket") && strcmp(t, "cuda") && strcmp(t, "nccl") &&
		    strcmp(t, "nvtx") && strcmp(t, "gloo") && strcmp(t, "mpi") && strcmp(t, "file") &&
		    strcmp(t, "python"))
			return 0;
	return n > 0;
}

/* Whether LIST (DDLPROF_TRACE's form; NULL: all) names FAMILY. */
static int ddl_trace_has(const char *list, const char *family)
{
	if (!list)
		return 1;
	char buf[256];
	snprintf(buf, sizeof buf, "%s", list);
	char *save;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (!strcmp(t, "all") || !strcmp(t, family))
			return 1;
	return 0;
}

static const char *ddl_env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

/* Creates the missing parents of DIR, as mkdir -p does (mode from umask). */
static void ddl_make_parents(const char *dir)
{
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s", dir);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		mkdir(p, 0777);
		*s = '/';
	}
}

/* The shallowest of DIR and its parents that does not exist yet, which
 * ddl_prepare_dir would create, into OUT (CAP bytes); "" when DIR exists. */
static void ddl_first_missing(const char *dir, char *out, size_t cap)
{
	char p[PATH_MAX];
	struct stat st;
	out[0] = 0;
	snprintf(p, sizeof p, "%s", dir);
	for (char *s = p + 1;; s++) {
		if (*s && *s != '/')
			continue;
		char c = *s;
		*s = 0;
		if (lstat(p, &st) != 0) {
			snprintf(out, cap, "%s", p);
			return;
		}
		*s = c;
		if (!c)
			return;
	}
}

/* Removes DIR and its parents up to MADE (ddl_first_missing's answer
 * before they were made) while they are empty. */
static void ddl_unmake_dirs(const char *dir, const char *made)
{
	char p[PATH_MAX];
	size_t stop = strlen(made);
	snprintf(p, sizeof p, "%s", dir);
	while (stop && strlen(p) >= stop && rmdir(p) == 0) {
		char *s = strrchr(p, '/');
		while (s && s > p && s[1] == 0) { /* a trailing slash */
			*s = 0;
			s = strrchr(p, '/');
		}
		if (!s || s == p)
			return;
		*s = 0;
	}
}

/*
 * Whether a trace can be written into DIR now: a file made, written and
 * removed again. Permissions alone miss a full disk, a quota, and root
 * squashed by NFS. Returns 0 or a negative errno.
 */
static int ddl_probe_dir(const char *dir)
{
	char p[PATH_MAX + 64];
	int fd = -1;
	for (int i = 0; i < 100 && fd < 0; i++) {
		snprintf(p, sizeof p, "%s/.ddlprof-probe.%ld.%d", dir, (long)getpid(), i);
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	int rc = write(fd, "", 1) == 1 ? 0 : -errno;
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	unlink(p);
	return rc;
}

/* For ENOTDIR on DIR: the first of its parents that exists and is not a
 * directory, into OUT; "" when there is none. */
static void ddl_notdir_part(const char *dir, char *out, size_t cap)
{
	char p[PATH_MAX];
	struct stat st;
	out[0] = 0;
	snprintf(p, sizeof p, "%s", dir);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		int found = stat(p, &st) == 0 && !S_ISDIR(st.st_mode);
		if (found) {
			snprintf(out, cap, "%s", p);
			return;
		}
		*s = '/';
	}
}

/*
 * Creates DIR 0700 (and its missing parents), or checks an existing one by
 * the rule of ddlprof/tracedir.h (an existing directory is never changed),
 * then checks a trace can be written there. Returns 0, or -1 with one line
 * saying why: it cannot be made or written into (no permission, a
 * read-only or full file system, a file on the way), or it looks like a
 * trap (a symbolic link, a file, another user's directory, one every user
 * may write into).
 */
static int ddl_prepare_dir(const char *dir)
{
	struct stat st;
	int rc = ddl_tracedir_parent_trap(dir) ? DDL_TRACEDIR_PARENT_LINK : 0;
	if (rc == 0) {
		ddl_make_parents(dir); /* not through another user's link, checked first */
		rc = ddl_tracedir_prepare(dir, 1, &st);
	}
	if (rc == 0)
		rc = ddl_probe_dir(dir);
	if (rc < 0) {
		char part[PATH_MAX] = "";
		if (rc == -ENOTDIR)
			ddl_notdir_part(dir, part, sizeof part);
		if (*part)
			fprintf(stderr, "ddlprof: cannot write traces to %s: %s is not a directory; the "
			        "command was not run\n", dir, part);
		else
			fprintf(stderr, "ddlprof: cannot write traces to %s: %s; the command was not run\n",
			        dir, strerror(-rc));
		return -1;
	}
	switch (rc) {
	case DDL_TRACEDIR_LINK:
		fprintf(stderr, "ddlprof: %s is a symbolic link; name the directory itself\n", dir);
		return -1;
	case DDL_TRACEDIR_NOTDIR:
		fprintf(stderr, "ddlprof: %s exists and is not a directory\n", dir);
		return -1;
	case DDL_TRACEDIR_FOREIGN:
		fprintf(stderr, "ddlprof: %s belongs to another user (uid %u); refusing to write there\n",
		        dir, (unsigned)st.st_uid);
		return -1;
	case DDL_TRACEDIR_OPEN:
		fprintf(stderr, "ddlprof: every user can write into %s (mode %04o); refusing to write "
		        "traces there: use a directory others cannot write\n", dir,
		        (unsigned)(st.st_mode & 07777));
		return -1;
	case DDL_TRACEDIR_PARENT_LINK:
		fprintf(stderr, "ddlprof: %s is reached through another user's symbolic link in a "
		        "directory everyone can write into; refusing to follow it\n", dir);
		return -1;
	}
	return 0;
}

/*
 * A trace of this run's own id counts as an earlier run's when nothing was
 * written to it for this long before we started: a live process writes at
 * least its clock sample every second (writer.c), so the other ranks of
 * this job (srun, mpirun: each rank's launcher scans the same directory)
 * are never taken for one.
 */
#define DDL_EARLIER_RUN_S 5

/*
 * Warns, once, when DIR already holds traces of other runs, or of an
 * earlier run with the same id (a rerun with a fixed --run-id), which the
 * report tells apart by time and names ID#1, ID#2 ...
 */
static void ddl_warn_other_runs(const char *dir, const char *run)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	char other[DDL_RUNID_MAX] = "";
	int count = 0, same = 0;
	time_t now = time(NULL);
	struct dirent *e;
	while ((e = readdir(d)) && count + same < 100000) {
		size_t l = strlen(e->d_name);
		if (l < 6 || strcmp(e->d_name + l - 5, ".ddlt"))
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		/* a regular file of ours only: in a sticky directory others may
		 * leave a FIFO (which would block a plain open) or a forgery */
		int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		struct stat fst;
		if (fstat(fd, &fst) != 0 || !S_ISREG(fst.st_mode) || fst.st_uid != geteuid()) {
			close(fd);
			continue;
		}
		struct ddl_file_header h;
		ssize_t n = read(fd, &h, sizeof h);
		close(fd);
		if (n != (ssize_t)sizeof h || memcmp(h.ident, DDL_IDENT, 4))
			continue;
		h.run_id[DDL_RUNID_MAX - 1] = 0;
		if (strcmp(h.run_id, run)) {
			if (!count)
				snprintf(other, sizeof other, "%s", h.run_id);
			count++;
		} else if (fst.st_mtime + DDL_EARLIER_RUN_S <= now) {
			same++;
		}
	}
	closedir(d);
	if (count)
		fprintf(stderr,
		        "ddlprof: %s already holds %d trace%s of another run (%s%s); ddlprof-report "
		        "shows the newest run, --run ID picks one\n",
		        dir, count, count == 1 ? "" : "s", other, count > 1 ? ", ..." : "");
	if (same)
		fprintf(stderr,
		        "ddlprof: %s already holds %d trace%s of an earlier run with the same id (%s); "
		        "ddlprof-report tells them apart by time (%s#1, %s#2, ...) and shows the newest\n",
		        dir, same, same == 1 ? "" : "s", run, run, run);
}

/* Whether V is a whole number in LO..HI (an option's value). */
static int ddl_valid_long(const char *v, long lo, long hi)
{
	char *end;
	long n = strtol(v, &end, 10);
	return !*end && end != v && n >= lo && n <= hi;
}

/* --papi's list: 1 to 16 names of 1 to 127 characters, no blanks. */
static int ddl_valid_papi(const char *list)
{
	int n = 0;
	size_t len = 0;
	if (!*list || strlen(list) >= 512)
		return 0;
	for (const char *p = list;; p++) {
		if (*p == ',' || !*p) {
			if (len == 0 || len > 127 || ++n > DDL_PAPI_MAX)
				return 0;
			len = 0;
			if (!*p)
				return 1;
		} else if (!isgraph((unsigned char)*p)) {
			return 0;
		} else {
			len++;
		}
	}
}

/*
 * Says once, for the whole job, which of the --papi counters this machine
 * refuses (hardware counters in most virtual machines), as the library
 * would in every process; PAPI is found with dlopen, as there. Returns 1
 * when it could ask PAPI, 0 when not (the library then says why itself).
 */
static int ddl_papi_check(const char *list)
{
	static const char *const libs[] = {"libpapi.so.7.2", "libpapi.so.7.1", "libpapi.so.7.0",
	                                   "libpapi.so.6.0", "libpapi.so.5", "libpapi.so"};
	static const int vers[] = {0x07020000, 0x07010000, 0x07000000, 0x06000000, 0x05070000,
	                           0x05060000, 0x05050000};
	void *h = NULL;
	for (size_t i = 0; i < sizeof libs / sizeof libs[0] && !h; i++)
		h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
	int (*init)(int) = h ? (int (*)(int))dlsym(h, "PAPI_library_init") : NULL;
	int (*create)(int *) = h ? (int (*)(int *))dlsym(h, "PAPI_create_eventset") : NULL;
	int (*add)(int, const char *) = h ? (int (*)(int, const char *))dlsym(h, "PAPI_add_named_event") : NULL;
	int (*cleanup)(int) = h ? (int (*)(int))dlsym(h, "PAPI_cleanup_eventset") : NULL;
	int (*destroy)(int *) = h ? (int (*)(int *))dlsym(h, "PAPI_destroy_eventset") : NULL;
	int (*domain)(int) = h ? (int (*)(int))dlsym(h, "PAPI_set_domain") : NULL;
	char *(*why)(int) = h ? (char *(*)(int))dlsym(h, "PAPI_strerror") : NULL;
	if (!init || !create || !add || !cleanup || !destroy) {
		fprintf(stderr, "ddlprof: --papi: cannot load libpapi (libpapi.so.7.0 and others); no "
		        "counters will be read\n");
		return 1;
	}
	int rc = -1;
	for (size_t i = 0; i < sizeof vers / sizeof vers[0] && rc == -1 /* PAPI_EINVAL */; i++)
		rc = init(vers[i]);
	if (rc < 0)
		return 0;
	char buf[512], out[600] = "";
	size_t nout = 0;
	int names = 0, refused = 0;
	snprintf(buf, sizeof buf, "%s", list);
	/* under the domain the library will use: user and kernel, else user only */
	for (int pass = 0; pass < 2; pass++) {
		int es = -1; /* PAPI_NULL */
		if (domain)
			domain(pass ? 0x1 : 0xf);
		if (create(&es) != 0)
			return 0;
		char copy[512];
		snprintf(copy, sizeof copy, "%s", buf);
		names = refused = 0;
		nout = 0;
		for (char *save, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			names++;
			int r = add(es, tok);
			if (r == 0)
				continue;
			refused++;
			const char *w = why ? why(r) : NULL;
			if (nout < sizeof out)
				nout += (size_t)snprintf(out + nout, sizeof out - nout, "%s%s (error %d: %s)",
				                         refused > 1 ? ", " : "", tok, r, w ? w : "refused");
		}
		cleanup(es);
		destroy(&es);
		if (!refused || !domain)
			break;
	}
	if (refused)
		fprintf(stderr, "ddlprof: --papi: counters not available here, not counted: %s; %s\n", out,
		        refused == names ? "no counters will be read"
		                         : "hardware counters are often not exposed in virtual machines");
	return 1;
}

/* libddlprof.so relative to this executable: BIN/../lib, in build/ or PREFIX. */
static int ddl_find_lib(char *out, size_t cap)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return -1;
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = 0;
	snprintf(out, cap, "%s/../lib/libddlprof.so", exe);
	char real[PATH_MAX];
	if (!realpath(out, real) || access(real, R_OK) != 0)
		return -1;
	snprintf(out, cap, "%s", real);
	return 0;
}

/*
 * The Python hook (python/sitecustomize.py) in front of PYTHONPATH, from
 * LIB's directory: LIBDIR/ddlprof/python. Returns 0, or -1 when it is not
 * installed there (then Python programs are profiled without it).
 */
static int ddl_python_path(const char *lib)
{
	char dir[PATH_MAX], probe[PATH_MAX + 32];
	snprintf(dir, sizeof dir, "%s", lib);
	char *slash = strrchr(dir, '/');
	if (!slash)
		return -1;
	snprintf(slash, sizeof dir - (size_t)(slash - dir), "/ddlprof/python");
	snprintf(probe, sizeof probe, "%s/sitecustomize.py", dir);
	if (access(probe, R_OK) != 0)
		return -1;
	const char *old = getenv("PYTHONPATH");
	size_t n = strlen(dir) + (old ? strlen(old) : 0) + 2;
	char *v = malloc(n);
	if (!v)
		return -1;
	if (old && *old)
		snprintf(v, n, "%s:%s", dir, old);
	else
		snprintf(v, n, "%s", dir);
	int rc = setenv("PYTHONPATH", v, 1);
	free(v);
	return rc;
}

/* The status of a command that cannot be started for ERR (an errno),
 * said in one line: 127 not found, 126 found but not executable. */
static int ddl_cannot_start(const char *cmd, int err)
{
	fprintf(stderr, "ddlprof: %s: %s\n", cmd, strerror(err));
	return err == ENOENT ? 127 : 126;
}

/*
 * Finds CMD as execvp will: a name with a slash as it is, else the first
 * executable regular file of that name in PATH (glibc's /bin:/usr/bin when
 * PATH is unset). Returns 0, or the errno execvp would fail with: ENOENT
 * when there is none, EACCES when one is there but cannot be executed.
 */
static int ddl_command_find(const char *cmd)
{
	struct stat st;
	if (!*cmd)
		return ENOENT;
	if (strchr(cmd, '/')) {
		if (stat(cmd, &st) != 0)
			return errno;
		return S_ISREG(st.st_mode) && access(cmd, X_OK) == 0 ? 0 : EACCES;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin";
	int err = ENOENT;
	for (const char *p = path;;) {
		const char *colon = strchr(p, ':');
		int n = colon ? (int)(colon - p) : (int)strlen(p);
		char full[PATH_MAX];
		/* an empty entry is the working directory */
		snprintf(full, sizeof full, "%.*s/%s", n ? n : 1, n ? p : ".", cmd);
		if (stat(full, &st) == 0) {
			if (S_ISREG(st.st_mode) && access(full, X_OK) == 0)
				return 0;
			err = EACCES;
		}
		if (!colon)
			return err;
		p = colon + 1;
	}
}

/* Runs the command; returns, with a line saying why, only when it cannot. */
static int ddl_exec(char **cmd)
{
	execvp(cmd[0], cmd);
	return ddl_cannot_start(cmd[0], errno);
}

int main(int argc, char **argv)
{
	const char *dir = "ddlprof-trace", *trace = NULL, *run_id = NULL, *flush = NULL, *perturb = NULL;
	const char *ksample = NULL, *cupti = NULL, *backtrace = NULL, *papi = NULL, *compress = NULL;
	const char *python = NULL, *data = NULL, *hang = NULL;
	int quiet = 0, c;
	struct ddl_cli cli;
	ddl_cli_init(&cli, "ddlprof", ddl_opts, sizeof ddl_opts / sizeof ddl_opts[0], 1);
	while ((c = ddl_cli_next(&cli, argc, argv)) != -1) {
		switch (c) {
		case DDL_LAUNCH_O_OUTPUT: dir = optarg; break;
		case DDL_LAUNCH_O_TRACE: trace = optarg; break;
		case DDL_LAUNCH_O_RUN_ID: run_id = optarg; break;
		case DDL_LAUNCH_O_FLUSH_MS: flush = optarg; break;
		case DDL_LAUNCH_O_QUIET: quiet = 1; break;
		case DDL_LAUNCH_O_PERTURB_NET: perturb = optarg; break;
		case DDL_LAUNCH_O_KERNEL_SAMPLE: ksample = optarg; break;
		case DDL_LAUNCH_O_CUPTI: cupti = optarg; break;
		case DDL_LAUNCH_O_BACKTRACE: backtrace = optarg; break;
		case DDL_LAUNCH_O_PAPI: papi = optarg; break;
		case DDL_LAUNCH_O_COMPRESS: compress = optarg; break;
		case DDL_LAUNCH_O_PYTHON: python = optarg; break;
		case DDL_LAUNCH_O_DATA: data = optarg; break;
		case DDL_LAUNCH_O_HANG_TIMEOUT: hang = optarg; break;
		case DDL_LAUNCH_O_HELP: ddl_usage(); return 0;
		case DDL_LAUNCH_O_VERSION: printf("ddlprof %s\n", DDLPROF_VERSION); return 0;
		default: return DDL_EXIT_OWN; /* said by ddl_cli_next */
		}
	}
	if (optind >= argc) {
		ddl_cli_usage("ddlprof", "no command to profile");
		return DDL_EXIT_OWN;
	}
	if (trace && !ddl_valid_trace(trace)) {
		ddl_cli_usage("ddlprof", "--trace '%s': use a comma list of all, socket, cuda, nccl, nvtx, "
		              "gloo, mpi, file, python", trace);
		return DDL_EXIT_OWN;
	}
	if (run_id && !ddl_runid_valid(run_id)) {
		ddl_cli_usage("ddlprof", "--run-id '%s': 1 to %d characters of A-Z a-z 0-9 - _ . :",
		              run_id, DDL_RUNID_MAX - 1);
		return DDL_EXIT_OWN;
	}
	char why[256];
	long delay_us;
	double bps;
	if (perturb && ddl_perturb_spec_parse(perturb, &delay_us, &bps, why, sizeof why) < 0) {
		ddl_cli_usage("ddlprof", "--perturb-net '%s': %s", perturb, why);
		return DDL_EXIT_OWN;
	}
	if (ksample && !ddl_valid_long(ksample, 0, 1 << 20)) {
		ddl_cli_usage("ddlprof", "--kernel-sample '%s': a whole number in 0..1048576", ksample);
		return DDL_EXIT_OWN;
	}
	if (compress && strcmp(compress, "lz4") && strcmp(compress, "zstd") && strcmp(compress, "none")) {
		ddl_cli_usage("ddlprof", "--compress '%s': lz4, zstd or none", compress);
		return DDL_EXIT_OWN;
	}
	if (python && strcmp(python, "on") && strcmp(python, "off")) {
		ddl_cli_usage("ddlprof", "--python '%s': on or off", python);
		return DDL_EXIT_OWN;
	}
	if (data && strcmp(data, "real") && strcmp(data, "synthetic")) {
		ddl_cli_usage("ddlprof", "--data '%s': real or synthetic", data);
		return DDL_EXIT_OWN;
	}
	if (cupti && strcmp(cupti, "auto") && strcmp(cupti, "on") && strcmp(cupti, "off")) {
		ddl_cli_usage("ddlprof", "--cupti '%s': auto, on or off", cupti);
		return DDL_EXIT_OWN;
	}
	if (backtrace && !ddl_valid_long(backtrace, 0, 32)) {
		ddl_cli_usage("ddlprof", "--backtrace '%s': frames to record, a whole number in 0..32",
		              backtrace);
		return DDL_EXIT_OWN;
	}
	if (papi && !ddl_valid_papi(papi)) {
		ddl_cli_usage("ddlprof", "--papi '%s': a comma list of 1 to %d PAPI event names, such as "
		              "perf::TASK-CLOCK,PAPI_TOT_INS", papi, DDL_PAPI_MAX);
		return DDL_EXIT_OWN;
	}
	if (hang && !ddl_valid_long(hang, 1, 1000000)) {
		ddl_cli_usage("ddlprof", "--hang-timeout '%s': a whole number of seconds in 1..1000000", hang);
		return DDL_EXIT_OWN;
	}
	if (flush && !ddl_valid_long(flush, 1, 60000)) {
		ddl_cli_usage("ddlprof", "--flush-ms '%s': a whole number of milliseconds in 1..60000", flush);
		return DDL_EXIT_OWN;
	}
	char lib[PATH_MAX], absdir[PATH_MAX], id[DDL_RUNID_MAX];
	if (ddl_find_lib(lib, sizeof lib) < 0) {
		fprintf(stderr, "ddlprof: cannot find libddlprof.so in ../lib beside this program\n");
		return DDL_EXIT_OWN;
	}
	/* Before anything is made: a command that is not there leaves no
	 * directory behind. */
	int err = ddl_command_find(argv[optind]);
	if (err)
		return ddl_cannot_start(argv[optind], err);
	char made[PATH_MAX];
	ddl_first_missing(dir, made, sizeof made);
	if (ddl_prepare_dir(dir) < 0) {
		ddl_unmake_dirs(dir, made);
		return DDL_EXIT_OWN;
	}
	if (!realpath(dir, absdir)) {
		fprintf(stderr, "ddlprof: %s: %s\n", dir, strerror(errno));
		return DDL_EXIT_OWN;
	}
	char cpid[24];
	snprintf(cpid, sizeof cpid, "%ld", (long)getpid()); /* the command's, after exec */
	if (run_id) {
		snprintf(id, sizeof id, "%s", run_id);
	} else {
		char host[DDL_HOST_MAX] = "host";
		gethostname(host, sizeof host - 1);
		ddl_runid_make(id, sizeof id, ddl_env, host, (long)getpid(), (long)time(NULL));
	}
	if (!quiet)
		ddl_warn_other_runs(absdir, id);

	/* What PAPI refuses here is said once, for the job, not by every process. */
	int papi_checked = papi && !quiet && ddl_papi_check(papi);
	const char *old = getenv("LD_PRELOAD");
	size_t n = strlen(lib) + (old ? strlen(old) : 0) + 2;
	char *preload = malloc(n);
	if (!preload)
		return DDL_EXIT_OWN;
	if (old && *old)
		snprintf(preload, n, "%s:%s", lib, old);
	else
		snprintf(preload, n, "%s", lib);
	if (setenv("LD_PRELOAD", preload, 1) || setenv("DDLPROF_DIR", absdir, 1) ||
	    /* the library's cue to leave a trace for the command even when it
	     * records nothing (writer.c) */
	    setenv("DDLPROF_COMMAND_PID", cpid, 1) ||
	    setenv("DDLPROF_RUN_ID", id, 1) || (trace && setenv("DDLPROF_TRACE", trace, 1)) ||
	    (flush && setenv("DDLPROF_FLUSH_MS", flush, 1)) ||
	    (hang && setenv("DDLPROF_HANG_TIMEOUT", hang, 1)) ||
	    (compress && setenv("DDLPROF_COMPRESS", compress, 1)) ||
	    (perturb && setenv("DDLPROF_PERTURB_NET", perturb, 1)) ||
	    (ksample && setenv("DDLPROF_KERNEL_SAMPLE", ksample, 1)) ||
	    (cupti && setenv("DDLPROF_CUPTI", cupti, 1)) ||
	    (backtrace && setenv("DDLPROF_BACKTRACE", backtrace, 1)) ||
	    (papi && setenv("DDLPROF_PAPI", papi, 1)) ||
	    (papi_checked && setenv("DDLPROF_PAPI_CHECKED", "1", 1)) ||
	    /* The CUDA driver loads us at cuInit to start CUPTI early; a tool
	     * already named there (Nsight, say) keeps its place. */
	    (!getenv("CUDA_INJECTION64_PATH") && setenv("CUDA_INJECTION64_PATH", lib, 1)) ||
	    /* NVTX ranges (nvtx.c): likewise, unless a tool is named already. */
	    (!getenv("NVTX_INJECTION64_PATH") && setenv("NVTX_INJECTION64_PATH", lib, 1)) ||
	    (quiet && setenv("DDLPROF_QUIET", "1", 1))) {
		fprintf(stderr, "ddlprof: cannot set the environment: %s\n", strerror(errno));
		return DDL_EXIT_OWN;
	}
	/* The Python hook: on unless switched off here, by --trace or in the environment. */
	const char *pyenv = getenv("DDLPROF_PYTHON");
	int py_on = python ? !strcmp(python, "on") : !(pyenv && !strcmp(pyenv, "0"));
	if (python && setenv("DDLPROF_PYTHON", py_on ? "1" : "0", 1)) {
		fprintf(stderr, "ddlprof: cannot set the environment: %s\n", strerror(errno));
		return DDL_EXIT_OWN;
	}
	if (py_on && ddl_trace_has(trace, "python") && ddl_python_path(lib) < 0 && !quiet)
		fprintf(stderr, "ddlprof: the Python hook is not installed beside %s; Python programs "
		        "are profiled without it\n", lib);
	if (data && setenv("DDLPROF_DATA", data, 1)) {
		fprintf(stderr, "ddlprof: cannot set the environment: %s\n", strerror(errno));
		return DDL_EXIT_OWN;
	}
	int rc = ddl_exec(argv + optind);
	free(preload);
	ddl_unmake_dirs(dir, made);
	return rc;
}
