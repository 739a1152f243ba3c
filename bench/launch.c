/*
 * Cost the preload library adds to a kernel launch (figures, not pass or
 * fail; run by scripts/bench.sh with libddlprof preloaded).
 *
 *   launch LIB N R [K]
 *                    loads LIB (a CUDA runtime: bench's no-op one, or the
 *                    emulation), then calls cudaLaunchKernel R rounds of N
 *                    times through the wrapper (the global symbol, which the
 *                    preloaded library provides) and straight into LIB,
 *                    interleaved, pausing 50 ms after each pair of rounds
 *                    so the writer drains; prints "wrapped W direct D
 *                    added A" in median ns per call. Keep N x 2 records
 *                    under half of DDLPROF_BUFFER_EVENTS. With K (1, the default, to 8)
 *                    the calls name K kernels in turn, each with its own grid, as
 *                    a training step's different kernels do; with 1, every call
 *                    names the same kernel with the same shape, as a loop over
 *                    layers does.
 *
 * On the CPU emulation (LIB exports ddlemu_kernel_time) the launches are
 * real ones: a kernel registered as nvcc-generated code registers it
 * (kernels/ddlemu.h), on a stream of its own. As on a GPU that runs behind
 * its host, the device is busy through each round (the stream's worker is
 * held in a host function queued first), so a launch only queues its
 * kernel; after the round the worker runs them and the queue is drained,
 * untimed and around the wrapper. Without that, the launching thread would
 * race the worker for the stream's lock and for the 2 CPUs here, and the
 * figure would measure that race. Elsewhere the stream is a made-up handle
 * the no-op runtime ignores.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "../kernels/ddlemu.h"

typedef cudaError_t (*launch_fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t);
typedef cudaError_t (*sync_fn)(cudaStream_t);

/* On the emulation, the kernels' code (no parameters; takes no device time) */
static volatile int stub_ran;
#define STUB(i) \
	static void kernel_stub##i(void **args) \
	{ \
		(void)args; \
		stub_ran = i; /* distinct code: no two share an address */ \
	}
STUB(0) STUB(1) STUB(2) STUB(3) STUB(4) STUB(5) STUB(6) STUB(7)
static void (*const stubs[8])(void **) = {kernel_stub0, kernel_stub1, kernel_stub2, kernel_stub3,
                                          kernel_stub4, kernel_stub5, kernel_stub6, kernel_stub7};
static const struct ddlemu_kernel stub_kernels[8] = {
    {.name = "bench_stub0"}, {.name = "bench_stub1"}, {.name = "bench_stub2"}, {.name = "bench_stub3"},
    {.name = "bench_stub4"}, {.name = "bench_stub5"}, {.name = "bench_stub6"}, {.name = "bench_stub7"}};
static const struct ddlemu_fatbin stub_fatbin = {DDLEMU_FATBIN_MAGIC, DDLEMU_FATBIN_VERSION, 8, stub_kernels};

/* Registers the stubs as nvcc's generated code would and makes a stream; 0 on success. */
static int emu_setup(void *h, cudaStream_t *s)
{
	void **(*reg_bin)(void *) = (void **(*)(void *))dlsym(RTLD_DEFAULT, "__cudaRegisterFatBinary");
	void (*reg_fn)(void **, const char *, char *, const char *, int, uint3 *, uint3 *, dim3 *, dim3 *,
	               int *) = (void (*)(void **, const char *, char *, const char *, int, uint3 *, uint3 *,
	                                  dim3 *, dim3 *, int *))dlsym(RTLD_DEFAULT, "__cudaRegisterFunction");
	cudaError_t (*mk)(cudaStream_t *, unsigned) =
	    (cudaError_t(*)(cudaStream_t *, unsigned))dlsym(h, "cudaStreamCreateWithFlags");
	if (!reg_bin || !reg_fn || !mk)
		return -1;
	void **mod = reg_bin((void *)&stub_fatbin);
	if (!mod)
		return -1;
	for (int i = 0; i < 8; i++)
		reg_fn(mod, (const char *)stubs[i], (char *)stub_kernels[i].name, stub_kernels[i].name, -1, NULL,
		       NULL, NULL, NULL, NULL);
	return mk(s, cudaStreamNonBlocking) == cudaSuccess ? 0 : -1;
}

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static long failed;

/* The emulation's device, held busy through a round */
typedef cudaError_t (*hostfn_fn)(cudaStream_t, cudaHostFn_t, void *);
static hostfn_fn hold_fn;
static int hold_pipe[2];

static void hold(void *arg)
{
	(void)arg;
	char c;
	while (read(hold_pipe[0], &c, 1) < 0 && errno == EINTR)
		;
}

static unsigned nk = 1; /* kernels in turn */

static double round_ns(launch_fn f, long n, cudaStream_t s, sync_fn drain)
{
	dim3 g = {64, 1, 1}, b = {256, 1, 1};
	if (hold_fn)
		failed += hold_fn(s, hold, NULL) != cudaSuccess;
	double t0 = now_ns();
	if (nk == 1) {
		for (long i = 0; i < n; i++)
			failed += f((const void *)stubs[0], g, b, NULL, 0, s) != cudaSuccess;
	} else {
		for (long i = 0; i < n; i++) {
			unsigned k = (unsigned)i % nk;
			g.x = 64 + 32 * k;
			failed += f((const void *)stubs[k], g, b, NULL, 0, s) != cudaSuccess;
		}
	}
	double t = (now_ns() - t0) / (double)n;
	if (hold_fn)
		failed += write(hold_pipe[1], "x", 1) != 1;
	if (drain)
		drain(s);
	return t;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: launch LIB N R [K]\n");
		return 2;
	}
	long n = atol(argv[2]);
	int r = atoi(argv[3]);
	nk = argc == 5 ? (unsigned)atoi(argv[4]) : 1;
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	if (!h || n <= 0 || r <= 0 || r > 99 || nk < 1 || nk > 8) {
		fprintf(stderr, "launch: %s\n", h ? "bad N, R or K" : dlerror());
		return 2;
	}
	launch_fn direct = (launch_fn)dlsym(h, "cudaLaunchKernel");
	launch_fn wrapped = (launch_fn)dlsym(RTLD_DEFAULT, "cudaLaunchKernel");
	if (!direct || !wrapped)
		return 2;
	cudaStream_t s = (cudaStream_t)(size_t)0x1000; /* one stream, as a training loop uses */
	sync_fn drain = NULL;
	if (dlsym(h, "ddlemu_kernel_time")) {
		drain = (sync_fn)dlsym(h, "cudaStreamSynchronize");
		hold_fn = (hostfn_fn)dlsym(h, "cudaLaunchHostFunc");
		if (!drain || !hold_fn || pipe(hold_pipe) < 0 || emu_setup(h, &s) < 0) {
			fprintf(stderr, "launch: %s: cannot register a kernel on the emulation\n", argv[1]);
			return 2;
		}
	}
	double w[99], d[99];
	round_ns(wrapped, n, s, drain); /* warm: first-call paths, page faults */
	round_ns(direct, n, s, drain);
	for (int i = 0; i < r; i++) {
		/* in turn first: neither gains from what the other left (a warm queue, a drained one) */
		if (i & 1) {
			d[i] = round_ns(direct, n, s, drain);
			w[i] = round_ns(wrapped, n, s, drain);
		} else {
			w[i] = round_ns(wrapped, n, s, drain);
			d[i] = round_ns(direct, n, s, drain);
		}
		/* let the writer drain what the round wrote (two records a launch):
		 * the figure is the launch's cost, not the writer's throughput */
		struct timespec pause = {0, 50 * 1000 * 1000};
		nanosleep(&pause, NULL);
	}
	qsort(w, (size_t)r, sizeof *w, cmp);
	qsort(d, (size_t)r, sizeof *d, cmp);
	printf("wrapped %.2f direct %.2f added %.2f\n", w[r / 2], d[r / 2], w[r / 2] - d[r / 2]);
	if (failed && drain) {
		fprintf(stderr, "launch: %ld launches failed on the emulation\n", failed);
		return 1;
	}
	return 0;
}
