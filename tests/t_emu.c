/*
 * Tests of the CPU emulation of the CUDA runtime and NCCL (kernels/,
 * libddlemu; DESIGN.md section 9). They build tests/emu/emu_check.c with
 * kernels/emu_kernels.c against the build's libddlemu (once per build) and
 * run its modes: kernel and copy timing measured by CUDA events against the
 * plan, stream semantics, error codes, and NCCL jobs of several rank
 * processes on emulated hosts (DDLPROF_HOST), checking every result and
 * the paced time of the all-reduce. Skipped where the CUDA headers or the
 * library are missing. DDLTEST_VERBOSE=1 prints the measured figures.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#define EMU_COMPUTE_NAME "ddk_compute_kernel" /* DDK_COMPUTE_NAME, kernels/kernels.h */

#define EMU_MIB (1u << 20)

static const char *emu_cuda_home(void)
{
	const char *h = getenv("CUDA_HOME");
	return h && *h ? h : "/usr/local/cuda";
}

static int emu_verbose(void)
{
	const char *v = getenv("DDLTEST_VERBOSE");
	return v && *v && strcmp(v, "0");
}

static double emu_mtime(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return -1;
	return (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9;
}

/* Compiles emu_check into out; 0, or -1 with the compiler's messages on stderr. */
static int emu_compile(const char *out, const char *src, const char *kern, const char *libdir, int ubsan)
{
	char inc[PATH_MAX], kdir[PATH_MAX], rpath[PATH_MAX + 16];
	snprintf(inc, sizeof inc, "%s/include", emu_cuda_home());
	snprintf(kdir, sizeof kdir, "%s", kern);
	*strrchr(kdir, '/') = 0;
	snprintf(rpath, sizeof rpath, "-Wl,-rpath,%s", libdir);
	char *argv[] = {"cc", "-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE",
	                "-isystem", inc, "-I", kdir, "-o", (char *)out, (char *)src, (char *)kern,
	                "-L", (char *)libdir, "-lddlemu", rpath, "-pthread", "-lm",
	                ubsan ? "-fsanitize=undefined" : NULL, NULL};
	struct ddl_run_result r;
	int rc = trun(argv, NULL, 120, &r);
	int ok = rc == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0;
	if (!ok && ubsan)
		fprintf(stderr, "    cannot build emu_check:\n%s%s", r.out, r.err);
	trun_free(&r);
	return ok ? 0 : -1;
}

/*
 * The emu_check program of this build, built if missing or older than its
 * sources or the library. NULL when the emulation is not here (*skip set)
 * or the build failed.
 */
static const char *emu_bin(int *skip)
{
	static char out[PATH_MAX];
	char hdr[PATH_MAX], src[PATH_MAX], kern[PATH_MAX], lib[PATH_MAX], libdir[PATH_MAX], tmp[PATH_MAX + 32];
	*skip = 0;
	snprintf(hdr, sizeof hdr, "%s/include/cuda_runtime_api.h", emu_cuda_home());
	snprintf(lib, sizeof lib, "%s", tbuild("lib/libddlemu.so"));
	if (access(hdr, R_OK) != 0 || access(lib, R_OK) != 0) {
		fprintf(stderr, "    no CUDA headers or no %s: skipped\n", lib);
		*skip = 1;
		return NULL;
	}
	if (!realpath(tbuild("../tests/emu/emu_check.c"), src) || !realpath(tbuild("../kernels/emu_kernels.c"), kern) ||
	    !realpath(tbuild("lib"), libdir)) {
		fprintf(stderr, "    no source tree next to the build directory: skipped\n");
		*skip = 1;
		return NULL;
	}
	snprintf(out, sizeof out, "%s", tbuild("tests/emu_check"));
	const char *deps[] = {src, kern, lib, tbuild("../kernels/kernels.h"), tbuild("../kernels/ddlemu.h")};
	double t = emu_mtime(out);
	int fresh = t > 0;
	for (size_t i = 0; i < sizeof deps / sizeof deps[0]; i++)
		fresh &= emu_mtime(deps[i]) <= t;
	if (fresh)
		return out;
	snprintf(tmp, sizeof tmp, "%s.tmp.%d", out, (int)getpid());
	/* a sanitizer build's library needs the UBSan runtime in the program too */
	if (emu_compile(tmp, src, kern, libdir, 0) < 0 && emu_compile(tmp, src, kern, libdir, 1) < 0) {
		unlink(tmp);
		return NULL;
	}
	if (rename(tmp, out) != 0) {
		unlink(tmp);
		return NULL;
	}
	return out;
}

/* The value of the n-th "NAME VALUE" line of out; NAN if there is none. */
static double emu_value(const char *out, const char *name, int n)
{
	size_t k = strlen(name);
	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, name, k) && p[k] == ' ' && n-- == 0)
			return strtod(p + k + 1, NULL);
	return NAN;
}

/* Runs one emu_check mode; 0 when it printed ok and exited 0, else -1 with its output shown. */
static int emu_mode(const char *bin, const char *mode, char *const env[], struct ddl_run_result *r)
{
	char *argv[] = {(char *)bin, (char *)mode, NULL};
	int rc = trun(argv, env, 60, r);
	if (rc == 0 && WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0 && strstr(r->out, "ok\n")) {
		if (emu_verbose())
			fprintf(stderr, "%s", r->out);
		return 0;
	}
	fprintf(stderr, "    emu_check %s: status %#x\n%s%s", mode, r->status, r->out, r->err);
	return -1;
}

/* A measured figure of an emu_check run and its plan. */
struct emu_fig {
	const char *name;
	int nth;
	double want, tol;
};

/*
 * Runs a mode until every figure is within its tolerance: at most three
 * runs, since other load on a shared machine can make a run late. A run
 * that fails its own checks fails at once.
 */
static int emu_timed(const char *bin, const char *mode, char *const env[], const struct emu_fig *f, size_t n)
{
	for (int attempt = 1; attempt <= 3; attempt++) {
		struct ddl_run_result r;
		CHECK(emu_mode(bin, mode, env, &r) == 0, "%s mode failed", mode);
		CHECK(r.nerr == 0, "%s: stderr: %s", mode, r.err);
		size_t i = 0;
		for (; i < n; i++) {
			double v = emu_value(r.out, f[i].name, f[i].nth);
			if (!(fabs(v - f[i].want) <= f[i].tol * f[i].want)) {
				fprintf(stderr, "    run %d: %s %.3f, planned %.3f (+-%.0f%%)\n", attempt, f[i].name, v,
				        f[i].want, f[i].tol * 100);
				break;
			}
		}
		trun_free(&r);
		if (i == n)
			return DDL_PASS;
	}
	CHECK(0, "%s: figures off the plan in three runs", mode);
	return DDL_FAIL;
}

/* ddk_compute of 20 ms and ddk_memory of 10 ms, measured by events: +-5%. */
int test_emu_kernel_timing(void)
{
	int skip;
	const char *bin = emu_bin(&skip);
	if (!bin)
		return skip ? DDL_SKIP : DDL_FAIL;
	static const struct emu_fig f[] = {{"compute_ms", 0, 20, 0.05}, {"compute_ms", 1, 20, 0.05},
	                                   {"compute_ms", 2, 20, 0.05}, {"memory_ms", 0, 10, 0.05}};
	return emu_timed(bin, "kernel", NULL, f, sizeof f / sizeof f[0]);
}

int test_emu_stream_semantics(void)
{
	int skip;
	const char *bin = emu_bin(&skip);
	if (!bin)
		return skip ? DDL_SKIP : DDL_FAIL;
	static const struct emu_fig f[] = {{"two_stream_ms", 0, 30, 0.05}};
	return emu_timed(bin, "streams", NULL, f, 1);
}

/* 16 MiB copies at PCIe 8, HBM 16 and P2P 8 Gbit/s: +-5%; the p2p ring: 1 GB/s +-10%. */
int test_emu_memcpy_timing(void)
{
	int skip;
	const char *bin = emu_bin(&skip);
	if (!bin)
		return skip ? DDL_SKIP : DDL_FAIL;
	char *env[] = {"DDLEMU_PCIE_GBPS=8", "DDLEMU_HBM_GBPS=16", "DDLEMU_P2P_GBPS=8", NULL};
	double ms = 16.0 * EMU_MIB * 8 / 8e9 * 1e3; /* at 8 Gbit/s */
	const struct emu_fig f[] = {{"h2d_ms", 0, ms, 0.05},         {"d2d_ms", 0, ms / 2, 0.05},
	                            {"default_d2h_ms", 0, ms, 0.05}, {"peer_ms", 0, ms, 0.05},
	                            {"sync_d2h_ms", 0, ms, 0.10},    {"p2p_ring_gbytes_per_s", 0, 1, 0.10}};
	return emu_timed(bin, "memcpy", env, f, sizeof f / sizeof f[0]);
}

/*
 * Launch records through the library's one-slot ring form (packed.c) and
 * the long form: emu_check launches under ddlprof, every launch in --dump
 * with its device, stream, kernel name, grid, block and return code.
 */
int test_emu_launch_records(void)
{
	int skip;
	const char *bin = emu_bin(&skip);
	if (!bin)
		return skip ? DDL_SKIP : DDL_FAIL;
	char *dir = tmpdir(), tdir[PATH_MAX], cmd[PATH_MAX * 3];
	snprintf(tdir, sizeof tdir, "%s/t", dir);
	char *argv[] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", tdir, "--", (char *)bin, "launches", NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 60, &r) == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "emu_check launches under ddlprof: %s", r.err);
	int grid = 0, e1 = -1, e2 = -1, e3 = -1;
	const char *g = strstr(r.out, "grid "), *er = strstr(r.out, "errors ");
	CHECK(g && er && sscanf(g, "grid %d", &grid) == 1 && sscanf(er, "errors %d %d %d", &e1, &e2, &e3) == 3,
	      "no figures from emu_check: %s", r.out);
	trun_free(&r);
	CHECK(e1 != 0 && e2 != 0 && e3 != 0, "the bad launches succeeded: %d %d %d", e1, e2, e3);
	snprintf(cmd, sizeof cmd, "%s --dump %s", tbuild("bin/ddlprof-report"), tdir);
	FILE *p = popen(cmd, "r");
	CHECK(p, "cannot run %s", cmd);
	char line[4096], want[256];
	int named = 0, bad1 = 0, bad2 = 0, coop = 0, other = 0;
	unsigned stream = 0;
	while (fgets(line, sizeof line, p)) {
		char host[256], ev[128], rest[2048] = "";
		unsigned pid, tid, st = 0;
		double ts, dur;
		int fd;
		long long res;
		if (sscanf(line, "%255s %u %u %lf %127s %d %lld %lf %2047s", host, &pid, &tid, &ts, ev, &fd, &res,
		           &dur, rest) < 8 || strncmp(ev, "cudaLaunch", 10))
			continue;
		sscanf(rest, "stream=%u", &st);
		CHECK(fd == 3 && st != 0, "launch not on device 3 and the program's stream: %s", line);
		CHECK(!stream || st == stream, "launches on two streams: %s", line);
		stream = st;
		snprintf(want, sizeof want, "blocks=%d,threads=256,name=" EMU_COMPUTE_NAME ",", grid);
		if (!strcmp(ev, "cudaLaunchKernel") && res == 0 && strstr(rest, want))
			named++;
		else if (!strcmp(ev, "cudaLaunchKernel") && res == e1 && strstr(rest, "blocks=42,threads=128,"))
			bad1++;
		else if (!strcmp(ev, "cudaLaunchKernel") && res == e2 &&
		         strstr(rest, "blocks=281474976579584,threads=1,")) /* (2^31 - 1) x 65536 x 2 */
			bad2++;
		else if (!strcmp(ev, "cudaLaunchCooperativeKernel") && res == e3 && strstr(rest, "blocks=5,threads=64,"))
			coop++;
		else {
			fprintf(stderr, "    unexpected: %s", line);
			other++;
		}
	}
	pclose(p);
	trm(dir);
	free(dir);
	CHECK(named == 5 && bad1 == 1 && bad2 == 1 && coop == 1 && other == 0,
	      "launch records: %d named (want 5), %d, %d, %d bad (want 1 each), %d others", named, bad1, bad2, coop,
	      other);
	return DDL_PASS;
}

/*
 * An error the program leaves pending stops the library's kernel runs from
 * starting (its event would hide nothing, but the runtime is left as the
 * program left it). It must not ask on every launch while the error stays
 * (emu_check pending: 4,000 launches; the library tries again every
 * DDL_SEG_RETRY = 64), and once the program reads the error the next
 * launch starts a run: the 3 kernels of 2 ms after it are timed. A kernel
 * only the runtime can name, first launched while an error is pending, is
 * named by the runtime from the first launch after the error was read.
 */
int test_emu_pending_error(void)
{
	int skip;
	const char *bin = emu_bin(&skip);
	if (!bin)
		return skip ? DDL_SKIP : DDL_FAIL;
	struct ddl_run_result r;
	int plain_err = -1, err = -2;
	unsigned long peeks = 1;
	CHECK(emu_mode(bin, "pending", NULL, &r) == 0, "pending mode failed");
	const char *p = strstr(r.out, "pending_peeks "), *e = strstr(r.out, "error ");
	CHECK(p && e && sscanf(p, "pending_peeks %lu", &peeks) == 1 && sscanf(e, "error %d", &plain_err) == 1,
	      "no figures: %s", r.out);
	trun_free(&r);
	CHECK(peeks == 0, "the program alone peeked %lu times", peeks);

	char *dir = tmpdir(), tdir[PATH_MAX], cmd[PATH_MAX * 3];
	snprintf(tdir, sizeof tdir, "%s/t", dir);
	char *argv[] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", tdir, "--", (char *)bin, "pending", NULL};
	CHECK(trun(argv, NULL, 60, &r) == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 &&
	          strstr(r.out, "ok\n"),
	      "emu_check pending under ddlprof: %s%s", r.out, r.err);
	p = strstr(r.out, "pending_peeks ");
	e = strstr(r.out, "error ");
	CHECK(p && e && sscanf(p, "pending_peeks %lu", &peeks) == 1 && sscanf(e, "error %d", &err) == 1,
	      "no figures under ddlprof: %s", r.out);
	trun_free(&r);
	CHECK(err == plain_err, "the launch failed with %d under ddlprof, %d without", err, plain_err);
	CHECK(peeks <= 2 * (4000 / 64) + 8, /* a try asks twice: before its event, and why it failed */
	      "the library asked for the last error %lu times in 4,000 launches", peeks);

	/* the run of the last 3 kernels: one device interval of about 6 ms */
	snprintf(cmd, sizeof cmd, "%s --dump %s", tbuild("bin/ddlprof-report"), tdir);
	FILE *f = popen(cmd, "r");
	CHECK(f, "cannot run %s", cmd);
	char line[4096];
	double longest = 0;
	char hidden[4][64] = {{0}}; /* the hidden kernel's launches, in order: their names */
	int nhidden = 0;
	while (fgets(line, sizeof line, f)) {
		char host[256], ev[128], rest[2048] = "";
		unsigned pid, tid;
		double ts, dur;
		int fd;
		long long res;
		if (sscanf(line, "%255s %u %u %lf %127s %d %lld %lf %2047s", host, &pid, &tid, &ts, ev, &fd, &res,
		           &dur, rest) != 9)
			continue;
		if (!strcmp(ev, "kernel") && strstr(rest, "run") && dur > longest)
			longest = dur;
		const char *nm = strstr(rest, "name=");
		if (!strcmp(ev, "cudaLaunchKernel") && strstr(rest, "blocks=3,threads=32,") && nm && nhidden < 4)
			sscanf(nm, "name=%63[^,]", hidden[nhidden++]);
	}
	pclose(f);
	trm(dir);
	free(dir);
	CHECK(longest >= 5700 && longest < 60000, "the longest run of kernels took %.0f us, not about 6,000",
	      longest);
	/* named by the runtime once the error was read, and from then on: a
	 * stand-in name given while it was pending is not kept */
	CHECK(nhidden == 3 && !strcmp(hidden[1], "t_hidden_kernel") && !strcmp(hidden[2], "t_hidden_kernel"),
	      "the hidden kernel's launches were named %s, %s, %s (%d of 3)", hidden[0], hidden[1], hidden[2],
	      nhidden);
	return DDL_PASS;
}

int test_emu_error_codes(void)
{
	int skip;
	const char *bin = emu_bin(&skip);
	if (!bin)
		return skip ? DDL_SKIP : DDL_FAIL;
	struct ddl_run_result r;
	CHECK(emu_mode(bin, "errors", NULL, &r) == 0, "errors mode failed");
	CHECK(r.nerr == 0, "the emulation printed on success: %s", r.err);
	trun_free(&r);
	char *env[] = {"DDLEMU_DEVICES=3", NULL};
	CHECK(emu_mode(bin, "errors", env, &r) == 0, "errors mode with 3 devices failed");
	trun_free(&r);

	/* bad settings: one line each, naming the variable, then the defaults */
	char *bad[] = {"DDLEMU_DEVICES=0", "DDLEMU_NET_GBPS=fast", "DDLEMU_ADDR=nowhere", "DDLEMU_INTRA_GBPS=-1",
	               NULL};
	CHECK(emu_mode(bin, "errors", bad, &r) == 0, "errors mode with bad settings failed");
	int lines = 0;
	for (const char *p = r.err; (p = strchr(p, '\n')); p++)
		lines++;
	CHECK(lines == 4, "%d lines on stderr for 4 bad settings:\n%s", lines, r.err);
	const char *names[] = {"DDLEMU_DEVICES", "DDLEMU_NET_GBPS", "DDLEMU_ADDR", "DDLEMU_INTRA_GBPS"};
	for (int i = 0; i < 4; i++)
		CHECK(strstr(r.err, names[i]), "no message names %s:\n%s", names[i], r.err);
	trun_free(&r);
	return DDL_PASS;
}

/*
 * Starts n ranks of `emu_check nccl` (rank i on host hosts[i], split color
 * colors[i]) with env, waits for all (at most timeout_s), and collects
 * their stdout in outs (caller frees). 0 when every rank printed ok.
 */
static int emu_job(const char *bin, const char *mode, int n, const char *const hosts[], const int colors[],
                   char *const env[], int timeout_s, char **outs)
{
	char *dir = tmpdir();
	pid_t pids[16];
	int ok = 1;
	for (int i = 0; i < n; i++) {
		char o[PATH_MAX], e[PATH_MAX];
		snprintf(o, sizeof o, "%s/out%d", dir, i);
		snprintf(e, sizeof e, "%s/err%d", dir, i);
		pids[i] = fork();
		if (pids[i] == 0) {
			char rank[16], nr[16], col[16], host[128];
			snprintf(rank, sizeof rank, "%d", i);
			snprintf(nr, sizeof nr, "%d", n);
			snprintf(col, sizeof col, "%d", colors ? colors[i] : 0);
			snprintf(host, sizeof host, "DDLPROF_HOST=%s", hosts[i]);
			if (!freopen(o, "w", stdout) || !freopen(e, "w", stderr))
				_exit(126);
			putenv(host);
			for (int k = 0; env && env[k]; k++)
				putenv(env[k]);
			if (!strcmp(mode, "nccl"))
				execl(bin, bin, mode, rank, nr, dir, col, (char *)NULL);
			else
				execl(bin, bin, mode, rank, dir, (char *)NULL);
			_exit(127);
		}
	}
	time_t end = time(NULL) + timeout_s;
	for (int i = 0; i < n; i++) {
		int st = 0;
		pid_t w;
		while ((w = waitpid(pids[i], &st, WNOHANG)) == 0 && time(NULL) < end)
			usleep(20000);
		if (w == 0) {
			fprintf(stderr, "    rank %d: timed out after %d s\n", i, timeout_s);
			for (int k = i; k < n; k++)
				kill(pids[k], SIGKILL);
			waitpid(pids[i], &st, 0);
			ok = 0;
		} else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "    rank %d: status %#x\n", i, st);
			ok = 0;
		}
	}
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/out%d", dir, i);
		FILE *f = fopen(path, "r");
		outs[i] = calloc(1, 1 << 16);
		if (f) {
			size_t k = fread(outs[i], 1, (1 << 16) - 1, f);
			outs[i][k] = 0;
			fclose(f);
		}
		if (!strstr(outs[i], "ok\n"))
			ok = 0;
		snprintf(path, sizeof path, "%s/err%d", dir, i);
		f = fopen(path, "r");
		char err[4096] = "";
		if (f) {
			size_t k = fread(err, 1, sizeof err - 1, f);
			err[k] = 0;
			fclose(f);
		}
		if (err[0] && (!ok || emu_verbose()))
			fprintf(stderr, "    rank %d stderr: %s", i, err);
		if (emu_verbose())
			fprintf(stderr, "    rank %d stdout:\n%s", i, outs[i]);
	}
	trm(dir);
	free(dir);
	return ok ? 0 : -1;
}

static void emu_free_outs(char **outs, int n)
{
	for (int i = 0; i < n; i++)
		free(outs[i]);
}

/* Every rank's NAME within tol of want; the worst deviation in *worst. */
static int emu_all_within(char **outs, int n, const char *name, double want, double tol, double *worst)
{
	*worst = 0;
	for (int i = 0; i < n; i++) {
		double v = emu_value(outs[i], name, 0), d = fabs(v - want) / want;
		if (isnan(v))
			return 0;
		*worst = d > *worst ? d : *worst;
	}
	return *worst <= tol;
}

/*
 * Four rank processes on two emulated hosts (two ranks each): every
 * collective correct on every rank, the 8 MiB all-reduce in the paced time
 * of its ring (2 * 3/4 * 8 MiB over the 0.5 Gbit/s network links, +-10%),
 * a 4 MiB exchange across hosts in 4 MiB / 0.5 Gbit/s (+-5%), and
 * ncclCommSplit into one communicator per host whose all-reduce takes the
 * intra-host time (2 * 1/2 * 8 MiB at 1 Gbit/s, +-10%). Timing may be disturbed
 * by other load (a few seconds of it here can spoil three runs in a row):
 * up to five runs, each correct, one must be on time.
 */
int test_emu_nccl_two_hosts(void)
{
	int skip;
	const char *bin = emu_bin(&skip);
	if (!bin)
		return skip ? DDL_SKIP : DDL_FAIL;
	char ha[64], hb[64];
	snprintf(ha, sizeof ha, "emuhostA%d", (int)getpid());
	snprintf(hb, sizeof hb, "emuhostB%d", (int)getpid());
	const char *hosts[] = {ha, ha, hb, hb};
	int colors[] = {0, 0, 1, 1};
	/* rates low enough that four ranks' copying leaves the two cores idle most of the time */
	char *env[] = {"DDLEMU_NET_GBPS=0.5", "DDLEMU_INTRA_GBPS=1", "EMU_TIMED_FLOATS=2097152", NULL};
	double bytes = 8.0 * EMU_MIB;
	double plan = 2 * 3.0 / 4 * bytes * 8 / 0.5e9 * 1e3, plan_split = 2 * 1.0 / 2 * bytes * 8 / 1e9 * 1e3;
	double plan_p2p = 4.0 * EMU_MIB * 8 / 0.5e9 * 1e3;
	double w1 = 0, w2 = 0, w3 = 0;
	for (int attempt = 0; attempt < 5; attempt++) {
		char *outs[4];
		CHECK(emu_job(bin, "nccl", 4, hosts, colors, env, 120, outs) == 0, "the 4-rank job failed");
		for (int i = 0; i < 4; i++) {
			CHECK(emu_value(outs[i], "split_ranks", 0) == 2, "rank %d: split communicator size", i);
			CHECK(emu_value(outs[i], "split_rank", 0) == i % 2, "rank %d: rank in its host's communicator", i);
			CHECK(emu_value(outs[i], "split_max_rank", 0) == (i < 2 ? 1 : 3),
			      "rank %d: the split communicator mixes hosts", i);
		}
		int on_time = emu_all_within(outs, 4, "allreduce_ms", plan, 0.10, &w1);
		on_time &= emu_all_within(outs, 4, "split_allreduce_ms", plan_split, 0.10, &w2);
		/* a rank that left the barrier early also counts the wait for its peer: the later one of a pair measures the transfer */
		on_time &= emu_all_within(outs, 4, "p2p_ms", plan_p2p, 0.10, &w3);
		double best = INFINITY;
		for (int i = 0; i < 4; i++) {
			double v = emu_value(outs[i], "p2p_ms", 0);
			best = v < best ? v : best;
		}
		on_time &= fabs(best - plan_p2p) <= 0.05 * plan_p2p;
		if (emu_verbose() || !on_time)
			fprintf(stderr, "    attempt %d: all-reduce %.1f ms (planned %.1f, worst rank off by %.1f%%), "
			                "per-host all-reduce %.1f ms (planned %.1f, worst %.1f%%), "
			                "4 MiB exchange %.2f ms at best (planned %.2f, worst %.1f%%)\n",
			        attempt + 1, emu_value(outs[0], "allreduce_ms", 0), plan, w1 * 100,
			        emu_value(outs[0], "split_allreduce_ms", 0), plan_split, w2 * 100,
			        best, plan_p2p, w3 * 100);
		emu_free_outs(outs, 4);
		if (on_time)
			return DDL_PASS;
	}
	CHECK(0, "the all-reduce times stayed off the plan in five runs");
	return DDL_FAIL;
}

/* Three ranks on one host (an odd ring), unpaced: results only. */
int test_emu_nccl_one_host(void)
{
	int skip;
	const char *bin = emu_bin(&skip);
	if (!bin)
		return skip ? DDL_SKIP : DDL_FAIL;
	char h[64];
	snprintf(h, sizeof h, "emuhost%d", (int)getpid());
	const char *hosts[] = {h, h, h};
	int colors[] = {0, 1, 0};
	char *env[] = {"DDLEMU_NET_GBPS=0", "DDLEMU_INTRA_GBPS=0", "EMU_TIMED_FLOATS=100000", NULL};
	char *outs[3];
	CHECK(emu_job(bin, "nccl", 3, hosts, colors, env, 120, outs) == 0, "the 3-rank job failed");
	CHECK(emu_value(outs[0], "split_ranks", 0) == 2 && emu_value(outs[1], "split_ranks", 0) == 1 &&
	              emu_value(outs[2], "split_rank", 0) == 1,
	      "split by colors 0,1,0");
	emu_free_outs(outs, 3);
	return DDL_PASS;
}

int test_emu_nccl_one_process(void)
{
	int skip;
	const char *bin = emu_bin(&skip);
	if (!bin)
		return skip ? DDL_SKIP : DDL_FAIL;
	struct ddl_run_result r;
	CHECK(emu_mode(bin, "initall", NULL, &r) == 0, "initall mode failed");
	trun_free(&r);
	return DDL_PASS;
}

/* A rank dies: the other sees ncclRemoteError instead of hanging, and exits at once. */
int test_emu_nccl_peer_death(void)
{
	int skip;
	const char *bin = emu_bin(&skip);
	if (!bin)
		return skip ? DDL_SKIP : DDL_FAIL;
	const char *hosts[] = {"emudeath", "emudeath"};
	char *outs[2];
	time_t t0 = time(NULL);
	CHECK(emu_job(bin, "peerdeath", 2, hosts, NULL, NULL, 30, outs) == 0,
	      "rank 0 did not handle the death of rank 1");
	CHECK(time(NULL) - t0 < 8, "took %ld s: exit waited for the queued kernel", (long)(time(NULL) - t0));
	CHECK(strstr(outs[0], "error "), "no error message");
	emu_free_outs(outs, 2);
	return DDL_PASS;
}

/*
 * The CUPTI back end's correlation, without a GPU: a stand-in libcupti fed
 * by the emulation (tests/cupti/fakecupti.c) gives kernel records and the
 * runtime and driver records of the calls that launched them. The report
 * must tie every kernel to its call (24 through the wrapped calls, 2
 * through the emulation's own entry point, past the wrappers), count the
 * failed launch's call, and see the queue: 20 kernels of 2 ms launched at
 * once, the last starting about 38 ms after its call returned.
 */
int test_emu_cupti_correlation(void)
{
	int skip;
	const char *bin = emu_bin(&skip);
	if (!bin)
		return skip ? DDL_SKIP : DDL_FAIL;
	char libdir[PATH_MAX], ldpath[PATH_MAX * 2 + 32];
	if (!realpath(tbuild("tests/cupti"), libdir) || access(tbuild("tests/cupti/libcupti.so"), R_OK) != 0) {
		fprintf(stderr, "    no %s: skipped\n", tbuild("tests/cupti/libcupti.so"));
		return DDL_SKIP;
	}
	const char *old = getenv("LD_LIBRARY_PATH");
	snprintf(ldpath, sizeof ldpath, "LD_LIBRARY_PATH=%s%s%s", libdir, old ? ":" : "", old ? old : "");
	char *env[] = {ldpath, "DDLPROF_CUPTI=1", NULL};
	char *dir = tmpdir(), tdir[PATH_MAX];
	snprintf(tdir, sizeof tdir, "%s/t", dir);
	char *plain_argv[] = {(char *)bin, "cupti", NULL};
	char *argv[] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", tdir, "--", (char *)bin, "cupti", NULL};
	struct ddl_run_result plain, r;
	CHECK(trun(plain_argv, env, 60, &plain) == 0 && WIFEXITED(plain.status) && WEXITSTATUS(plain.status) == 0,
	      "emu_check cupti: %s", plain.err);
	CHECK(trun(argv, env, 60, &r) == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "emu_check cupti under ddlprof: %s", r.err);
	CHECK(!strcmp(plain.out, r.out), "output differs:\n%s---\n%s", plain.out, r.out);
	CHECK(!strstr(r.err, "CUPTI could not"), "CUPTI did not start: %s", r.err);
	trun_free(&plain);
	trun_free(&r);
	int st;
	json_t *rep = treport(tdir, &st);
	CHECK(rep, "no report");
	json_t *c = json_object_get(json_object_get(json_object_get(rep, "job"), "gpu"), "correlation");
	CHECK(json_is_object(c), "no job.gpu.correlation");
#define CI(k) json_integer_value(json_object_get(c, k))
	CHECK(CI("api_calls") == 27 && CI("driver_calls") == 4 && CI("failed_calls") == 1,
	      "calls: %lld (want 27), driver %lld (want 4), failed %lld (want 1)", (long long)CI("api_calls"),
	      (long long)CI("driver_calls"), (long long)CI("failed_calls"));
	CHECK(CI("device_intervals") == 26 && CI("joined") == 26, "kernels %lld, joined %lld (want 26, 26)",
	      (long long)CI("device_intervals"), (long long)CI("joined"));
	CHECK(CI("through_wrapped_calls") == 24 && CI("through_other_calls") == 2,
	      "through wrapped calls %lld (want 24), others %lld (want 2)", (long long)CI("through_wrapped_calls"),
	      (long long)CI("through_other_calls"));
#undef CI
	json_t *w = json_object_get(c, "queue_wait_s");
	double p50 = json_real_value(json_object_get(w, "p50")), mx = json_real_value(json_object_get(w, "max"));
	/* 20 x 2 ms queued: waits 0, 2, ..., 38 ms; the 6 lone ones wait ~0 */
	CHECK(mx >= 0.030 && mx <= 0.5, "longest wait %.4f s, want about 0.038", mx);
	CHECK(p50 >= 0.004 && p50 < mx, "median wait %.4f s, want several ms", p50);
	json_t *k = json_object_get(json_object_get(rep, "job"), "kernels");
	CHECK(json_array_size(k) >= 2, "kernels by device time: %zu", json_array_size(k));
	json_decref(rep);
	/* CUPTI's records name the calling thread (its system thread ids): the
	 * dump shows them on the thread that launched, not on a thread of ours */
	char cmd[PATH_MAX * 2];
	snprintf(cmd, sizeof cmd, "%s --dump %s", tbuild("bin/ddlprof-report"), tdir);
	FILE *dp = popen(cmd, "r");
	CHECK(dp, "cannot run %s", cmd);
	char dl[4096];
	int api_on_launcher = 0, api_all = 0;
	while (fgets(dl, sizeof dl, dp)) {
		char host[256], ev[64];
		long pid, tid;
		if (sscanf(dl, "%255s %ld %ld %*f %63s", host, &pid, &tid, ev) != 4 || strcmp(ev, "cuda_api"))
			continue;
		api_all++;
		api_on_launcher += tid == pid; /* emu_check launches from its main thread */
	}
	pclose(dp);
	CHECK(api_all == 27 && api_on_launcher == 27, "%d of %d CUDA call records on the launching thread",
	      api_on_launcher, api_all);
	/* the Chrome trace draws a flow from each call to its kernel, each
	 * starting inside a slice of the calling thread (Perfetto drops the
	 * others): the wrapped call's, or CUPTI's record of a call not seen */
	snprintf(cmd, sizeof cmd, "%s --chrome %s", tbuild("bin/ddlprof-report"), tdir);
	FILE *p = popen(cmd, "r");
	CHECK(p, "cannot run %s", cmd);
	json_t *ct = json_loadf(p, 0, NULL);
	pclose(p);
	CHECK(ct, "the Chrome trace is not JSON");
	json_t *evs = json_object_get(ct, "traceEvents"), *x, *y;
	size_t i, j;
	int flows = 0, ends = 0, enclosed = 0, api_slices = 0;
	json_array_foreach(evs, i, x) {
		const char *ph = json_string_value(json_object_get(x, "ph"));
		if (!ph || strcmp(ph, "X") || strcmp(json_string_value(json_object_get(x, "cat")), "cuda"))
			continue;
		api_slices += json_is_object(json_object_get(x, "args")) &&
		              json_object_get(json_object_get(x, "args"), "seen_by");
	}
	json_array_foreach(evs, i, x) {
		const char *ph = json_string_value(json_object_get(x, "ph"));
		ends += ph && !strcmp(ph, "f");
		if (!ph || strcmp(ph, "s"))
			continue;
		flows++;
		double ts = json_number_value(json_object_get(x, "ts"));
		json_int_t pid = json_integer_value(json_object_get(x, "pid"));
		json_int_t tid = json_integer_value(json_object_get(x, "tid"));
		json_array_foreach(evs, j, y) {
			const char *yph = json_string_value(json_object_get(y, "ph"));
			double a = json_number_value(json_object_get(y, "ts"));
			double d = json_number_value(json_object_get(y, "dur"));
			if (yph && !strcmp(yph, "X") && json_integer_value(json_object_get(y, "pid")) == pid &&
			    json_integer_value(json_object_get(y, "tid")) == tid && a <= ts && ts <= a + d) {
				enclosed++;
				break;
			}
		}
	}
	json_decref(ct);
	CHECK(enclosed == flows, "%d of %d flow starts inside a slice of their thread", enclosed, flows);
	CHECK(api_slices == 2, "%d slices of calls only CUPTI saw, want 2", api_slices);
	CHECK(flows == 26 && ends == 26, "%d flow starts and %d ends in the Chrome trace, want 26", flows, ends);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * Signals during every CUDA and NCCL call the library wraps: emu_check's
 * signals mode runs launches, copies, memsets, syncs and all-reduces under
 * a 100 us timer (no SA_RESTART) and checks each result; under ddlprof its
 * output and status must be those of a plain run, and the calls recorded.
 */
int test_emu_signal_storm(void)
{
	int skip;
	const char *bin = emu_bin(&skip);
	if (!bin)
		return skip ? DDL_SKIP : DDL_FAIL;
	char *dir = tmpdir(), tdir[PATH_MAX];
	snprintf(tdir, sizeof tdir, "%s/t", dir);
	char *plain_argv[] = {(char *)bin, "signals", NULL};
	char *argv[] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", tdir, "--", (char *)bin, "signals", NULL};
	struct ddl_run_result plain, r;
	CHECK(trun(plain_argv, NULL, 120, &plain) == 0 && WIFEXITED(plain.status) && WEXITSTATUS(plain.status) == 0,
	      "emu_check signals: %s", plain.err);
	CHECK(trun(argv, NULL, 120, &r) == 0 && r.status == plain.status, "under ddlprof: status %#x: %s", r.status,
	      r.err);
	CHECK(!strcmp(plain.out, r.out), "output differs:\n%s---\n%s", plain.out, r.out);
	trun_free(&plain);
	trun_free(&r);
	int st;
	json_t *rep = treport(tdir, &st);
	CHECK(rep && st == 0, "report of the signals run");
	json_t *p = json_array_get(json_object_get(rep, "processes"), 0);
	json_t *g = json_object_get(p, "gpu");
	json_int_t launches = json_integer_value(json_object_get(g, "launches"));
	json_int_t colls = json_integer_value(json_object_get(json_object_get(p, "collectives"), "count"));
	CHECK(launches == 600, "%lld launches recorded, want 600", (long long)launches);
	CHECK(colls == 600, "%lld collectives recorded, want 600", (long long)colls);
	json_decref(rep);
	trm(dir);
	free(dir);
	return DDL_PASS;
}
