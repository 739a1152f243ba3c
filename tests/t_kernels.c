/*
 * ddlprof-report's top kernels (analyzer/kernels.c): the text section
 * "Top kernels by device time", job.kernels[] in the JSON report, and the
 * demangled names in the Chrome trace and the HTML page.
 *
 * Two sources. ddlsynth profiled on the CPU emulation with every launch
 * timed: each kernel's count must equal its launches and its total the sum
 * of its intervals in --dump. And a trace written here, byte by byte as
 * ddlprof-trace(5) says, holding kernel names copied from a PyTorch run on
 * an H200 (CUPTI records and event pairs, a run of launches timed as one,
 * an interval without a name, a recorded name cut short that does not
 * demangle, launches never timed): the names must come out as the C++
 * runtime demangles them, in order of device time, with nothing invented
 * for what was not timed.
 */
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ddlprof/chunk.h"
#include "ddlprof/trace.h"
#include "test.h"

/* ddlprof-report ARG DIR (ARG may be NULL): stdout (caller frees), or NULL. */
static char *ddl_kreport(const char *dir, const char *arg)
{
	char *argv[] = {(char *)tbuild("bin/ddlprof-report"), (char *)(arg ? arg : dir),
	                (char *)(arg ? dir : NULL), NULL};
	struct ddl_run_result r;
	if (trun(argv, NULL, 120, &r) < 0 || !WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0) {
		fprintf(stderr, "    ddlprof-report %s %s failed: %s\n", arg ? arg : "", dir, r.err ? r.err : "");
		trun_free(&r);
		return NULL;
	}
	free(r.err);
	return r.out;
}

static const char *ddl_kstr(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

/* The text report's "Top kernels" section, up to the blank line after it (in place). */
static char *ddl_ksection(char *text)
{
	char *s = strstr(text, "\nTop kernels by device time");
	if (!s)
		return NULL;
	s++;
	char *e = strstr(s, "\n\n");
	if (e)
		e[1] = 0;
	return s;
}

/* The row of the section whose name column is NAME: its count and total ms. */
static int ddl_krow(const char *sec, const char *name, unsigned long long *count, double *ms)
{
	for (const char *l = sec; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		size_t n = strlen(name);
		if (strncmp(l, "  ", 2) || strncmp(l + 2, name, n) || l[2 + n] != ' ')
			continue;
		const char *p = l + 2 + n;
		while (*p == ' ')
			p++;
		return sscanf(p, "%llu %lf", count, ms) == 2 ? 0 : -1;
	}
	return -1;
}

/* ---- ddlsynth on the emulation: counts and totals against --dump ---- */

#define DDL_KMAX 64

struct ddl_kdump {
	char name[DDL_KMAX][128];
	unsigned long long launches[DDL_KMAX], intervals[DDL_KMAX];
	double total_s[DDL_KMAX];
	int n;
	double all_s; /* every kernel interval */
};

static int ddl_kdump_index(struct ddl_kdump *d, const char *name)
{
	for (int i = 0; i < d->n; i++)
		if (!strcmp(d->name[i], name))
			return i;
	if (d->n == DDL_KMAX)
		return -1;
	snprintf(d->name[d->n], sizeof d->name[0], "%s", name);
	return d->n++;
}

/* KEY=VALUE from a dump line's last field ("stream=1,name=x,corr=3"), into V. */
static int ddl_kfield(const char *f, const char *key, char *v, size_t n)
{
	size_t k = strlen(key);
	for (const char *p = f; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, key, k) && p[k] == '=') {
			size_t len = strcspn(p + k + 1, ",");
			snprintf(v, n, "%.*s", (int)len, p + k + 1);
			return 0;
		}
	return -1;
}

/* Launches by kernel name, and kernel intervals charged to the launch they
 * timed (pid, thread, corr), from --dump. */
static int ddl_kdump_read(char *dump, struct ddl_kdump *d)
{
	memset(d, 0, sizeof *d);
	struct {
		long pid, tid, corr;
		int k;
	} *calls = calloc(1 << 16, sizeof *calls);
	CHECK(calls, "out of memory");
	size_t ncalls = 0;
	char *save;
	/* launches first: an interval may be written before its launch's chunk */
	for (int pass = 0; pass < 2; pass++) {
		char *copy = strdup(dump);
		CHECK(copy, "out of memory");
		for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			char ev[64], extra[2048], name[256], corr[32];
			long pid, tid, result;
			double dur;
			if (l[0] == '#' || sscanf(l, "%*s %ld %ld %*s %63s %*s %ld %lf %2047s", &pid, &tid, ev,
			                          &result, &dur, extra) != 6)
				continue;
			if (pass == 0 && !strcmp(ev, "cudaLaunchKernel") &&
			    ddl_kfield(extra, "name", name, sizeof name) == 0 &&
			    ddl_kfield(extra, "corr", corr, sizeof corr) == 0) {
				int k = ddl_kdump_index(d, name);
				CHECK(k >= 0 && ncalls < (1 << 16), "too many kernels or launches");
				d->launches[k]++;
				calls[ncalls].pid = pid;
				calls[ncalls].tid = tid;
				calls[ncalls].corr = strtol(corr, NULL, 10);
				calls[ncalls++].k = k;
			} else if (pass == 1 && !strcmp(ev, "kernel")) {
				d->all_s += dur / 1e6;
				CHECK(!strstr(extra, ",run"), "a run interval with --kernel-sample 1: %s", l);
				int k = -1;
				if (ddl_kfield(extra, "name", name, sizeof name) == 0) { /* CUPTI */
					k = ddl_kdump_index(d, name);
				} else { /* an event pair: its launch's (result is the corr) */
					for (size_t c = 0; c < ncalls && k < 0; c++)
						if (calls[c].pid == pid && calls[c].tid == tid && calls[c].corr == result)
							k = calls[c].k;
				}
				CHECK(k >= 0, "kernel interval without its launch: %s", l);
				d->intervals[k]++;
				d->total_s[k] += dur / 1e6;
			}
		}
		free(copy);
	}
	free(calls);
	return DDL_PASS;
}

int test_kernels_synth(void)
{
	const char *synth = tbuild("examples/ddlsynth");
	if (access(synth, X_OK) != 0)
		return DDL_SKIP; /* built without the CUDA headers */
	char *dir = tmpdir(), tdir[PATH_MAX];
	snprintf(tdir, sizeof tdir, "%s/t", dir);
	char *argv[] = {(char *)tbuild("bin/ddlprof"), "-q", "--kernel-sample", "1", "-o", tdir, "--",
	                (char *)synth, "--ranks", "2", "--ranks-per-host", "1", "--layers", "3",
	                "--params-per-layer", "100k", "--compute-ms", "1", "--bucket-mb", "1",
	                "--iterations", "4", "--overlap", "off", "--markers", "--quiet", NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 120, &r) == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "ddlsynth under ddlprof: status %d: %s", r.status, r.err);
	trun_free(&r);
	char *dump = ddl_kreport(tdir, "--dump"), *text = ddl_kreport(tdir, NULL);
	CHECK(dump && text, "no dump or text report");
	static struct ddl_kdump d;
	if (ddl_kdump_read(dump, &d) != DDL_PASS)
		return DDL_FAIL;
	CHECK(d.n >= 1 && d.launches[0] == 2 * 4 * 3 * 2, "%d kernels, %llu launches of the first; want "
	      "48 (2 ranks x 4 steps x 3 layers x 2)", d.n, d.n ? d.launches[0] : 0);
	int st;
	json_t *rep = treport(tdir, &st);
	CHECK(rep && st == 0, "no JSON report");
	json_t *job = json_object_get(rep, "job"), *ks = json_object_get(job, "kernels");
	CHECK(json_is_array(ks) && (int)json_array_size(ks) == d.n, "%zu kernels in job.kernels, %d in the "
	      "dump", json_array_size(ks), d.n);
	CHECK(json_integer_value(json_object_get(job, "kernels_distinct")) == d.n, "kernels_distinct");
	double kernel_s = json_number_value(json_object_get(job, "kernel_s"));
	CHECK(fabs(kernel_s - d.all_s) <= 1e-9 * (double)d.launches[0] + 1e-8 * d.all_s,
	      "job.kernel_s %.9f, the dump's intervals add up to %.9f", kernel_s, d.all_s);
	size_t i;
	json_t *k;
	double last = INFINITY, shares = 0;
	json_array_foreach(ks, i, k) {
		const char *name = ddl_kstr(k, "name");
		int x = ddl_kdump_index(&d, name);
		CHECK(x >= 0 && x < d.n && d.launches[x], "job.kernels[%zu] '%s' was never launched", i, name);
		CHECK(!strcmp(ddl_kstr(k, "mangled"), name), "'%s' is not a C++ name: mangled '%s'", name,
		      ddl_kstr(k, "mangled"));
		long long count = (long long)json_integer_value(json_object_get(k, "count"));
		double total = json_number_value(json_object_get(k, "total_s"));
		double mean = json_number_value(json_object_get(k, "mean_s"));
		double share = json_number_value(json_object_get(k, "share"));
		CHECK(count == (long long)d.launches[x] && count == (long long)d.intervals[x],
		      "%s: count %lld, %llu launches, %llu intervals", name, count, d.launches[x], d.intervals[x]);
		CHECK(fabs(total - d.total_s[x]) <= 1e-9 * (double)count + 1e-8 * total, "%s: total %.9f s, the dump "
		      "says %.9f", name, total, d.total_s[x]);
		CHECK(fabs(mean * (double)count - total) <= 1e-8 * total && fabs(share - total / kernel_s) < 1e-8,
		      "%s: mean %.9f, share %.6f", name, mean, share);
		CHECK(total <= last, "job.kernels not sorted by total: %s %.9f after %.9f", name, total, last);
		last = total;
		shares += share;
	}
	CHECK(fabs(shares - 1) < 1e-6, "shares add up to %.6f with every launch timed", shares);
	/* the text section: the same counts and totals, in milliseconds */
	char *sec = ddl_ksection(text);
	CHECK(sec, "no 'Top kernels by device time' section in\n%s", text);
	CHECK(strstr(text, "\nGPU work by process") && strstr(text, "\nGPU work by process") < sec,
	      "the section is not after 'GPU work by process'");
	unsigned long long count;
	double ms;
	CHECK(ddl_krow(sec, "ddk_compute_kernel", &count, &ms) == 0, "no ddk_compute_kernel row in\n%s", sec);
	int x = ddl_kdump_index(&d, "ddk_compute_kernel");
	CHECK(count == d.launches[x] && fabs(ms - d.total_s[x] * 1e3) < 0.0015, "row: %llu, %.3f ms; dump "
	      "%llu, %.3f ms", count, ms, d.launches[x], d.total_s[x] * 1e3);
	json_decref(rep);
	free(dump);
	free(text);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* ---- a trace written here, with real kernel names ---- */

/* Names as CUPTI recorded them in a PyTorch job on an H200, and as the C++
 * runtime demangles them (full names: what the JSON report holds). */
static const char ddl_k_cutlass[] = "_ZN7cutlass7Kernel2I43cutlass_80_simt_sgemm_256x128_8x4_nn_align1EEvNT_6ParamsE";
static const char ddl_k_cutlass_d[] = "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>"
                                      "(cutlass_80_simt_sgemm_256x128_8x4_nn_align1::Params)";
static const char ddl_k_reduce[] = "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIffffEEjfLi4ELi4EEEEEvT1_";
static const char ddl_k_reduce_d[] = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
                                     "at::native::MeanOps<float, float, float, float>, unsigned int, float, "
                                     "4, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, "
                                     "float, float>, unsigned int, float, 4, 4>)";
static const char ddl_k_vec[] = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_15binary_"
                                "internal10MulFunctorIfEEEESt5arrayIPcLm2EEEEviT0_T1_";
static const char ddl_k_vec_d[] = "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<"
                                  "float, float, float, at::native::binary_internal::MulFunctor<float> >, "
                                  "std::array<char*, 2ul> >(int, at::native::AUnaryFunctor<float, float, float, "
                                  "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul>)";
/* cut short where the trace recorded it: not a whole mangled name */
static const char ddl_k_cut[] = "_ZN2at6native54_GLOBAL__N__d8ceb000_21_DistributionNormal_cu_0c5b6e8543distribution_"
                                "elementwise_grid_stride_kernelIfLi4EZNS0_9templates4cuda20normal_and_transformIffPN"
                                "S_17CUDAGeneratorImplEZZZNS4_13normal_kernelIS7_EEvRKNS_10TensorBaseEddT_ENKUlvE_clEvENK";
/* a C name (the emulation's), timed by event pairs, and one launched but never timed */
static const char ddl_k_c[] = "ddk_compute_kernel";
static const char ddl_k_untimed[] = "_Z9ddl_emptyv";

enum { DDL_N_CUTLASS = 1, DDL_N_REDUCE, DDL_N_VEC, DDL_N_CUT, DDL_N_C, DDL_N_UNTIMED, DDL_N_NAMES };

struct ddl_kw {
	unsigned char *buf;
	size_t n, cap;
};

static void ddl_kw_put(struct ddl_kw *w, const void *p, size_t n)
{
	if (w->n + n > w->cap) {
		w->cap = (w->n + n) * 2;
		w->buf = realloc(w->buf, w->cap);
		if (!w->buf)
			abort();
	}
	memcpy(w->buf + w->n, p, n);
	w->n += n;
}

static void ddl_kw_chunk(struct ddl_kw *w, unsigned type, const void *p, size_t n)
{
	struct ddl_chunk c = ddl_chunk_make(type, 0, p, (uint32_t)n, (uint32_t)n);
	ddl_kw_put(w, &c, sizeof c);
	ddl_kw_put(w, p, n);
}

static void ddl_kw_str(struct ddl_kw *s, unsigned kind, uint32_t id, uint32_t value, const char *text)
{
	struct ddl_strrec r = {id, (uint16_t)kind, (uint16_t)strlen(text), value};
	ddl_kw_put(s, &r, sizeof r);
	ddl_kw_put(s, text, strlen(text));
}

/* An event at T us after the start, D us long, and its args record when NAME >= 0. */
static void ddl_kw_event(struct ddl_kw *e, unsigned kind, unsigned flags, double t_us, double d_us,
                         int64_t result, int name, uint32_t corr, unsigned aflags)
{
	struct ddl_event ev = {1000000000ull + (uint64_t)(t_us * 1e3), (uint32_t)(d_us * 1e3), (uint8_t)kind,
	                       (uint8_t)(flags | (name >= 0 ? DDL_EVF_ARGS : 0)), 0, result, 0, 0};
	ddl_kw_put(e, &ev, sizeof ev);
	if (name < 0)
		return;
	struct ddl_args a = {256, (uint32_t)name, DDL_EV_ARGS, 0, 0, (uint8_t)aflags, corr, 0, -1, 128};
	ddl_kw_put(e, &a, sizeof a);
}

/* Kernel device time by name, in us: vec 400 (1), cutlass 150 (3), the C
 * kernel 120 (4 event pairs), reduce 50 (5), cut 40 (2), unnamed 5 (1); and a
 * run of launches, 700, which is no one kernel's. */
static int ddl_kw_trace(const char *path)
{
	struct ddl_kw s = {0}, e = {0}, f = {0};
	ddl_kw_str(&s, DDL_STR_THREAD, 0, 4242, "python3");
	static const char *const names[DDL_N_NAMES] = {
	    [DDL_N_CUTLASS] = ddl_k_cutlass, [DDL_N_REDUCE] = ddl_k_reduce, [DDL_N_VEC] = ddl_k_vec,
	    [DDL_N_CUT] = ddl_k_cut,         [DDL_N_C] = ddl_k_c,           [DDL_N_UNTIMED] = ddl_k_untimed};
	for (int i = 1; i < DDL_N_NAMES; i++)
		ddl_kw_str(&s, DDL_STR_NAME, (uint32_t)i, 0, names[i]);
	double t = 0;
	const unsigned cupti = DDL_EVF_CUPTI;
	ddl_kw_event(&e, DDL_EV_DEV_KERNEL, cupti, t += 10, 400, 1, DDL_N_VEC, 1, 0);
	for (int i = 0; i < 3; i++)
		ddl_kw_event(&e, DDL_EV_DEV_KERNEL, cupti, t += 500, 50, 2 + i, DDL_N_CUTLASS, 2 + i, 0);
	for (int i = 0; i < 5; i++)
		ddl_kw_event(&e, DDL_EV_DEV_KERNEL, cupti, t += 100, 10, 5 + i, DDL_N_REDUCE, 5 + i, 0);
	for (int i = 0; i < 2; i++)
		ddl_kw_event(&e, DDL_EV_DEV_KERNEL, cupti, t += 100, 20, 10 + i, DDL_N_CUT, 10 + i, 0);
	ddl_kw_event(&e, DDL_EV_DEV_KERNEL, cupti, t += 100, 5, 12, -1, 0, 0); /* no name recorded */
	/* event pairs: six launches of the C kernel, four timed; the untimed name launched twice */
	uint32_t corr = 100;
	for (int i = 0; i < 6; i++) {
		int timed = i % 3 != 2;
		double at = t += 100;
		ddl_kw_event(&e, DDL_EV_CUDA_LAUNCH, 0, at, 5, 0, DDL_N_C, ++corr, timed ? DDL_ARGF_TIMED : 0);
		if (timed)
			ddl_kw_event(&e, DDL_EV_DEV_KERNEL, DDL_EVF_EVPAIR, at + 10, 30, corr, -1, 0, 0);
	}
	for (int i = 0; i < 2; i++)
		ddl_kw_event(&e, DDL_EV_CUDA_LAUNCH, 0, t += 100, 5, 0, DDL_N_UNTIMED, ++corr, 0);
	/* a run of launches, timed as one from the first (the default without CUPTI) */
	ddl_kw_event(&e, DDL_EV_CUDA_LAUNCH, 0, t += 100, 5, 0, DDL_N_C, ++corr, DDL_ARGF_TIMED);
	ddl_kw_event(&e, DDL_EV_DEV_KERNEL, DDL_EVF_EVPAIR | DDL_EVF_RUN, t + 10, 700, corr, -1, 0, 0);
	t += 1000;
	struct ddl_clock_sample clk[2] = {{1000000000ull, 1000000000, 1767225600000000000},
	                                  {1000000000ull + (uint64_t)(t * 1e3), 1000000000 + (int64_t)(t * 1e3),
	                                   1767225600000000000 + (int64_t)(t * 1e3)}};
	struct ddl_file_header h = {0};
	memcpy(h.ident, DDL_IDENT, 4);
	h.byte_order = DDL_BYTE_ORDER_MAGIC;
	h.version = DDL_FORMAT_VERSION;
	h.min_reader = 1;
	h.header_size = sizeof h;
	h.features = DDL_FEAT_CUDA;
	h.pid = 4242;
	h.ppid = 1;
	h.rank = h.world_size = h.local_rank = -1;
	h.clock_source = DDL_CLOCK_MONOTONIC;
	h.tick_hz = 1000000000;
	h.start_ticks = clk[0].ticks;
	h.start_mono_ns = clk[0].mono_ns;
	h.start_real_ns = clk[0].real_ns;
	snprintf(h.host, sizeof h.host, "h200");
	snprintf(h.run_id, sizeof h.run_id, "kernels-1");
	h.hcrc = ddl_crc32c(&h, offsetof(struct ddl_file_header, hcrc));
	ddl_kw_put(&f, &h, sizeof h);
	ddl_kw_chunk(&f, DDL_CHUNK_CLOCK, clk, sizeof clk);
	ddl_kw_chunk(&f, DDL_CHUNK_STRINGS, s.buf, s.n);
	ddl_kw_chunk(&f, DDL_CHUNK_EVENTS, e.buf, e.n);
	struct ddl_end end = {e.n / sizeof(struct ddl_event), 0, DDL_END_EXIT, 0};
	ddl_kw_chunk(&f, DDL_CHUNK_END, &end, sizeof end);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int ok = fd >= 0 && write(fd, f.buf, f.n) == (ssize_t)f.n;
	if (fd >= 0)
		close(fd);
	free(s.buf);
	free(e.buf);
	free(f.buf);
	return ok ? 0 : -1;
}

/* job.kernels[] of the written trace: names, order, counts, totals. */
static int ddl_k_json(json_t *rep)
{
	static const struct {
		const char *mangled, *name;
		long long count;
		double us;
	} want[] = {
	    {ddl_k_vec, ddl_k_vec_d, 1, 400},         {ddl_k_cutlass, ddl_k_cutlass_d, 3, 150},
	    {ddl_k_c, ddl_k_c, 4, 120},               {ddl_k_reduce, ddl_k_reduce_d, 5, 50},
	    {ddl_k_cut, ddl_k_cut, 2, 40},            {NULL, "(kernel not named)", 1, 5},
	};
	const double all_us = 400 + 150 + 120 + 50 + 40 + 5 + 700;
	json_t *job = json_object_get(rep, "job"), *ks = json_object_get(job, "kernels");
	CHECK(json_array_size(ks) == 6, "%zu kernels in job.kernels, want 6 (none for a launch never "
	      "timed, none for a run)", json_array_size(ks));
	CHECK(json_integer_value(json_object_get(job, "kernels_distinct")) == 6, "kernels_distinct");
	CHECK(fabs(json_number_value(json_object_get(job, "kernel_s")) - all_us / 1e6) < 1e-9, "kernel_s %.9f",
	      json_number_value(json_object_get(job, "kernel_s")));
	json_t *runs = json_object_get(job, "kernel_runs");
	CHECK(json_integer_value(json_object_get(runs, "count")) == 1 &&
	      fabs(json_number_value(json_object_get(runs, "total_s")) - 700e-6) < 1e-9, "kernel_runs");
	for (size_t i = 0; i < 6; i++) {
		json_t *k = json_array_get(ks, i);
		CHECK(!strcmp(ddl_kstr(k, "name"), want[i].name), "kernels[%zu].name:\n      '%s'\n want '%s'", i,
		      ddl_kstr(k, "name"), want[i].name);
		json_t *m = json_object_get(k, "mangled");
		CHECK(want[i].mangled ? !strcmp(ddl_kstr(k, "mangled"), want[i].mangled) : json_is_null(m),
		      "kernels[%zu].mangled '%s'", i, ddl_kstr(k, "mangled"));
		double total = json_number_value(json_object_get(k, "total_s"));
		CHECK(json_integer_value(json_object_get(k, "count")) == want[i].count &&
		      fabs(total - want[i].us / 1e6) < 1e-9, "%s: count %lld, total %.9f s; want %lld, %.6f",
		      want[i].name, (long long)json_integer_value(json_object_get(k, "count")), total,
		      want[i].count, want[i].us / 1e6);
		CHECK(fabs(json_number_value(json_object_get(k, "mean_s")) - want[i].us / 1e6 / (double)want[i].count) < 1e-12 &&
		      fabs(json_number_value(json_object_get(k, "share")) - want[i].us / all_us) < 1e-9,
		      "%s: mean_s or share", want[i].name);
	}
	return DDL_PASS;
}

/* The text section: the shortened names, in order, each at most 60 columns. */
static int ddl_k_text(char *text)
{
	char *sec = ddl_ksection(text);
	CHECK(sec, "no 'Top kernels by device time' section in\n%s", text);
	CHECK(strstr(sec, "(all processes: 17 kernel intervals, 1.465 ms)"), "heading: %.200s", sec);
	static const struct {
		const char *name;
		unsigned long long count;
		double ms;
	} rows[] = {
	    {"vectorized_elementwise_kernel<4, AUnaryFunctor, array>(...)", 1, 0.4},
	    {"Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(...)", 3, 0.15},
	    {"ddk_compute_kernel", 4, 0.12},
	    {"at::native::reduce_kernel<512, 1, ReduceOp<...>>(...)", 5, 0.05},
	    {"_ZN2at6native54_GLOBAL__N__d...ensorBaseEddT_ENKUlvE_clEvENK", 2, 0.04},
	    {"(kernel not named)", 1, 0.005},
	};
	const char *at = sec;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		unsigned long long count;
		double ms;
		CHECK(ddl_krow(sec, rows[i].name, &count, &ms) == 0, "no row '%s' in\n%s", rows[i].name, sec);
		CHECK(count == rows[i].count && fabs(ms - rows[i].ms) < 1e-6, "%s: %llu, %.3f ms", rows[i].name,
		      count, ms);
		const char *r = strstr(sec, rows[i].name);
		CHECK(r > at, "row '%s' out of order in\n%s", rows[i].name, sec);
		at = r;
	}
	/* rows: "  NAME(60) COUNT(9) TOTAL(10) MEAN(10) SHARE(6)", after the column heads */
	const char *l = strstr(sec, "\n  kernel ");
	CHECK(l, "no column heads in\n%s", sec);
	int nrows = 0;
	for (l = strchr(l + 1, '\n'); l && l[1] == ' ' && l[2] == ' '; l = strchr(l + 1, '\n')) {
		size_t len = strcspn(l + 1, "\n");
		if (l[len] != '%')
			break; /* the notes under the table */
		CHECK(len == 2 + 60 + 1 + 9 + 1 + 10 + 1 + 10 + 1 + 6 && l[1 + 2 + 60] == ' ',
		      "row not in its columns (a name wider than 60?): '%.*s'", (int)len, l + 1);
		nrows++;
	}
	CHECK(nrows == 6, "%d rows in\n%s", nrows, sec);
	CHECK(strstr(sec, "1 interval (0.700 ms, 47.8%) times a run of launches as one"),
	      "no line for the run of launches in\n%s", sec);
	CHECK(!strstr(sec, "ddl_empty"), "a kernel never timed is listed:\n%s", sec);
	return DDL_PASS;
}

/* The Chrome trace and the HTML page show the demangled names. */
static int ddl_k_views(const char *dir)
{
	char *out = ddl_kreport(dir, "--chrome");
	CHECK(out, "--chrome");
	json_error_t je;
	json_t *j = json_loads(out, 0, &je), *e;
	CHECK(j, "chrome output is not JSON: %s", je.text);
	size_t i;
	int dev = 0, launch = 0;
	json_array_foreach(json_object_get(j, "traceEvents"), i, e) {
		json_t *args = json_object_get(e, "args");
		if (!strcmp(ddl_kstr(e, "cat"), "device") && !strcmp(ddl_kstr(e, "name"), ddl_k_cutlass_d)) {
			CHECK(!strcmp(ddl_kstr(args, "mangled"), ddl_k_cutlass), "device slice's mangled '%s'",
			      ddl_kstr(args, "mangled"));
			dev++;
		}
		if (!strcmp(ddl_kstr(e, "name"), "cudaLaunchKernel") && !strcmp(ddl_kstr(args, "kernel"), "ddl_empty()")) {
			CHECK(!strcmp(ddl_kstr(args, "mangled"), ddl_k_untimed), "launch's mangled '%s'",
			      ddl_kstr(args, "mangled"));
			launch++;
		}
		CHECK(strncmp(ddl_kstr(e, "name"), "_ZN7cutlass", 11), "a slice named by its mangled name");
	}
	CHECK(dev == 3 && launch == 2, "%d device slices named '%s', %d launches of ddl_empty()", dev,
	      ddl_k_cutlass_d, launch);
	json_decref(j);
	free(out);
	out = ddl_kreport(dir, "--html");
	CHECK(out, "--html");
	CHECK(strstr(out, "<h2>Top kernels by device time</h2>"), "no top-kernels table in the page");
	CHECK(strstr(out, "<td class=\"l\" title=\"void cutlass::Kernel2&lt;cutlass_80_simt_sgemm_256x128_8x4"
	                  "_nn_align1&gt;(cutlass_80_simt_sgemm_256x128_8x4_nn_align1::Params)\"><code>"
	                  "cutlass::Kernel2&lt;cutlass_80_simt_sgemm_256x128_8x4_nn_align1&gt;(...)</code>"),
	      "no escaped, demangled cutlass row in the page");
	free(out);
	return DDL_PASS;
}

int test_kernels_demangle(void)
{
	char *dir = tmpdir(), path[PATH_MAX];
	snprintf(path, sizeof path, "%s/h200.4242.ddlt", dir);
	CHECK(ddl_kw_trace(path) == 0, "cannot write %s", path);
	int st;
	json_t *rep = treport(dir, &st);
	CHECK(rep && st == 0, "no JSON report of the written trace (status %d)", st);
	int rc = ddl_k_json(rep);
	json_decref(rep);
	char *text = rc == DDL_PASS ? ddl_kreport(dir, NULL) : NULL;
	if (rc == DDL_PASS)
		rc = text ? ddl_k_text(text) : DDL_FAIL;
	free(text);
	if (rc == DDL_PASS)
		rc = ddl_k_views(dir);
	trm(dir);
	free(dir);
	return rc;
}
