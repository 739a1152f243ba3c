/*
 * ddlprof: the launcher. Prepares the trace directory, sets LD_PRELOAD
 * (prepending libddlprof.so, never replacing what is there) and the
 * DDLPROF_* settings, then execs the command, so the exit status and the
 * signals are the command's own. One launcher per rank under srun, mpirun
 * or torchrun; all write into the same directory, told apart by host and pid
 * and grouped by run id.
 *
 * Exit status when the command cannot be started: 125 for our own errors
 * (bad options, unusable directory), 126 command not executable, 127 not
 * found, as env(1) and timeout(1) do.
 */
#include <ctype.h>
#include <dirent.h>
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

#include "ddlprof/trace.h"

#define DDL_EXIT_OWN 125

static void ddl_usage(FILE *f)
{
	fprintf(f,
	        "usage: ddlprof [-o DIR] [--trace LIST] [--run-id ID] [--flush-ms N] [-q] [--]\n"
	        "               COMMAND [ARGS...]\n"
	        "  -o, --output DIR   trace directory (default ddlprof-trace), created 0700\n"
	        "  --trace LIST       families to trace: all, socket, cuda, nccl, nvtx (default all)\n"
	        "  --run-id ID        run id shared by every rank (default: the scheduler's job id)\n"
	        "  --flush-ms N       writer period in milliseconds, 1..60000 (default 100)\n"
	        "  --perturb-net SPEC slow the job's own sends: delay=USEC each, or rate=RATE\n"
	        "                     (e.g. rate=100mbit), to measure its network sensitivity\n"
	        "  --kernel-sample N  time 1 kernel launch in N on the device with CUDA events\n"
	        "                     (0 never; default 16; every launch when CUPTI runs)\n"
	        "  --cupti MODE       auto (when a GPU driver is present), on or off\n"
	        "  -q, --quiet        no messages from the launcher (the library still reports\n"
	        "                     failures, one line each)\n"
	        "See ddlprof(1).\n");
}

static int ddl_valid_id(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= DDL_RUNID_MAX)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("-_.:", *s))
			return 0;
	return 1;
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
		    strcmp(t, "nvtx"))
			return 0;
	return n > 0;
}

static void ddl_sanitize(char *s)
{
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("-_.:", *s))
			*s = '_';
}

/* Same precedence as the library: explicit, then the scheduler's job id. */
static void ddl_run_id(char *out, size_t cap)
{
	const char *v;
	char host[DDL_HOST_MAX] = "host";
	if ((v = getenv("DDLPROF_RUN_ID")) && *v)
		snprintf(out, cap, "%s", v);
	else if ((v = getenv("SLURM_JOB_ID")) && *v)
		snprintf(out, cap, "slurm-%s", v);
	else if ((v = getenv("TORCHELASTIC_RUN_ID")) && *v)
		snprintf(out, cap, "torch-%s", v);
	else if ((v = getenv("OMPI_MCA_ess_base_jobid")) && *v)
		snprintf(out, cap, "ompi-%s", v);
	else if ((v = getenv("PMIX_NAMESPACE")) && *v)
		snprintf(out, cap, "pmix-%s", v);
	else {
		gethostname(host, sizeof host - 1);
		snprintf(out, cap, "local-%.30s-%d-%ld", host, (int)getpid(), (long)time(NULL));
	}
	ddl_sanitize(out);
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

/* Creates DIR 0700, or checks an existing one is a real directory of ours. */
static int ddl_prepare_dir(const char *dir)
{
	struct stat st;
	ddl_make_parents(dir);
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		fprintf(stderr, "ddlprof: cannot create %s: %s\n", dir, strerror(errno));
		return -1;
	}
	if (lstat(dir, &st) != 0) {
		fprintf(stderr, "ddlprof: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	if (S_ISLNK(st.st_mode)) {
		fprintf(stderr, "ddlprof: %s is a symbolic link; name the directory itself\n", dir);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "ddlprof: %s exists and is not a directory\n", dir);
		return -1;
	}
	if (st.st_uid != geteuid()) {
		fprintf(stderr, "ddlprof: %s belongs to another user (uid %u); refusing to write there\n",
		        dir, (unsigned)st.st_uid);
		return -1;
	}
	if (access(dir, W_OK | X_OK) != 0) {
		fprintf(stderr, "ddlprof: cannot write into %s: %s\n", dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* Warns, once, when DIR already holds traces of other runs. */
static void ddl_warn_other_runs(const char *dir, const char *run)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	char other[DDL_RUNID_MAX] = "";
	int count = 0;
	struct dirent *e;
	while ((e = readdir(d)) && count < 100000) {
		size_t l = strlen(e->d_name);
		if (l < 6 || strcmp(e->d_name + l - 5, ".ddlt"))
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
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
		}
	}
	closedir(d);
	if (count)
		fprintf(stderr,
		        "ddlprof: %s already holds %d trace%s of another run (%s%s); ddlprof-report "
		        "shows the newest run, --run ID picks one\n",
		        dir, count, count == 1 ? "" : "s", other, count > 1 ? ", ..." : "");
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

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'}, {"trace", required_argument, NULL, 't'},
		{"run-id", required_argument, NULL, 'r'}, {"flush-ms", required_argument, NULL, 'F'},
		{"quiet", no_argument, NULL, 'q'},        {"help", no_argument, NULL, 'h'},
		{"perturb-net", required_argument, NULL, 'P'},
		{"kernel-sample", required_argument, NULL, 'K'},
		{"cupti", required_argument, NULL, 'C'},
		{"version", no_argument, NULL, 'V'},      {NULL, 0, NULL, 0}};
	const char *dir = "ddlprof-trace", *trace = NULL, *run_id = NULL, *flush = NULL, *perturb = NULL;
	const char *ksample = NULL, *cupti = NULL;
	int quiet = 0, c;
	while ((c = getopt_long(argc, argv, "+o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o': dir = optarg; break;
		case 't': trace = optarg; break;
		case 'r': run_id = optarg; break;
		case 'F': flush = optarg; break;
		case 'q': quiet = 1; break;
		case 'P': perturb = optarg; break;
		case 'K': ksample = optarg; break;
		case 'C': cupti = optarg; break;
		case 'h': ddl_usage(stdout); return 0;
		case 'V': printf("ddlprof %s\n", DDLPROF_VERSION); return 0;
		default: ddl_usage(stderr); return DDL_EXIT_OWN;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "ddlprof: no command to profile\n");
		ddl_usage(stderr);
		return DDL_EXIT_OWN;
	}
	if (trace && !ddl_valid_trace(trace)) {
		fprintf(stderr, "ddlprof: --trace '%s': use a comma list of all, socket, cuda, nccl, nvtx\n",
		        trace);
		return DDL_EXIT_OWN;
	}
	if (run_id && !ddl_valid_id(run_id)) {
		fprintf(stderr, "ddlprof: --run-id '%s': 1 to %d characters of A-Z a-z 0-9 - _ . :\n",
		        run_id, DDL_RUNID_MAX - 1);
		return DDL_EXIT_OWN;
	}
	if (perturb && strncmp(perturb, "delay=", 6) && strncmp(perturb, "rate=", 5)) {
		fprintf(stderr, "ddlprof: --perturb-net '%s': delay=USEC or rate=RATE (e.g. rate=100mbit)\n",
		        perturb);
		return DDL_EXIT_OWN;
	}
	if (ksample) {
		char *end;
		long v = strtol(ksample, &end, 10);
		if (*end || end == ksample || v < 0 || v > (1 << 20)) {
			fprintf(stderr, "ddlprof: --kernel-sample '%s': a whole number in 0..1048576\n", ksample);
			return DDL_EXIT_OWN;
		}
	}
	if (cupti && strcmp(cupti, "auto") && strcmp(cupti, "on") && strcmp(cupti, "off")) {
		fprintf(stderr, "ddlprof: --cupti '%s': auto, on or off\n", cupti);
		return DDL_EXIT_OWN;
	}
	if (flush) {
		char *end;
		long v = strtol(flush, &end, 10);
		if (*end || end == flush || v < 1 || v > 60000) {
			fprintf(stderr, "ddlprof: --flush-ms '%s': a whole number of milliseconds in 1..60000\n",
			        flush);
			return DDL_EXIT_OWN;
		}
	}
	char lib[PATH_MAX], absdir[PATH_MAX], id[DDL_RUNID_MAX];
	if (ddl_find_lib(lib, sizeof lib) < 0) {
		fprintf(stderr, "ddlprof: cannot find libddlprof.so in ../lib beside this program\n");
		return DDL_EXIT_OWN;
	}
	if (ddl_prepare_dir(dir) < 0)
		return DDL_EXIT_OWN;
	if (!realpath(dir, absdir)) {
		fprintf(stderr, "ddlprof: %s: %s\n", dir, strerror(errno));
		return DDL_EXIT_OWN;
	}
	if (run_id)
		snprintf(id, sizeof id, "%s", run_id);
	else
		ddl_run_id(id, sizeof id);
	if (!quiet)
		ddl_warn_other_runs(absdir, id);

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
	    setenv("DDLPROF_RUN_ID", id, 1) || (trace && setenv("DDLPROF_TRACE", trace, 1)) ||
	    (flush && setenv("DDLPROF_FLUSH_MS", flush, 1)) ||
	    (perturb && setenv("DDLPROF_PERTURB_NET", perturb, 1)) ||
	    (ksample && setenv("DDLPROF_KERNEL_SAMPLE", ksample, 1)) ||
	    (cupti && setenv("DDLPROF_CUPTI", cupti, 1)) ||
	    /* The CUDA driver loads us at cuInit to start CUPTI early; a tool
	     * already named there (Nsight, say) keeps its place. */
	    (!getenv("CUDA_INJECTION64_PATH") && setenv("CUDA_INJECTION64_PATH", lib, 1)) ||
	    (quiet && setenv("DDLPROF_QUIET", "1", 1))) {
		fprintf(stderr, "ddlprof: cannot set the environment: %s\n", strerror(errno));
		return DDL_EXIT_OWN;
	}
	execvp(argv[optind], argv + optind);
	int err = errno;
	free(preload);
	fprintf(stderr, "ddlprof: %s: %s\n", argv[optind], strerror(err));
	return err == ENOENT ? 127 : 126;
}
