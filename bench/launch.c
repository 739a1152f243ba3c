/*
 * Cost the preload library adds to a kernel launch (figures, not pass or
 * fail; run by scripts/bench.sh with libddlprof preloaded).
 *
 *   launch LIB N R   loads LIB (a CUDA runtime: bench's no-op one, or the
 *                    emulation), then calls cudaLaunchKernel R rounds of N
 *                    times through the wrapper (the global symbol, which the
 *                    preloaded library provides) and straight into LIB,
 *                    interleaved, pausing 50 ms after each pair of rounds
 *                    so the writer drains; prints "wrapped W direct D
 *                    added A" in median ns per call. Keep N x 2 records
 *                    under half of DDLPROF_BUFFER_EVENTS. Every call names the same kernel,
 *                    as a training loop's launches mostly do.
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

/* On the emulation, the kernel's code (no parameters; takes no device time) */
static void kernel_stub(void **args)
{
	(void)args;
}

static const struct ddlemu_kernel stub_kernel = {.name = "bench_stub", .nargs = 0};
static const struct ddlemu_fatbin stub_fatbin = {DDLEMU_FATBIN_MAGIC, DDLEMU_FATBIN_VERSION, 1, &stub_kernel};

/* Registers kernel_stub as nvcc's generated code would and makes a stream; 0 on success. */
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
	reg_fn(mod, (const char *)kernel_stub, (char *)"bench_stub", "bench_stub", -1, NULL, NULL, NULL, NULL,
	       NULL);
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

static double round_ns(launch_fn f, long n, cudaStream_t s, sync_fn drain)
{
	dim3 g = {64, 1, 1}, b = {256, 1, 1};
	if (hold_fn)
		failed += hold_fn(s, hold, NULL) != cudaSuccess;
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		failed += f((const void *)kernel_stub, g, b, NULL, 0, s) != cudaSuccess;
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
	if (argc != 4) {
		fprintf(stderr, "usage: launch LIB N R\n");
		return 2;
	}
	long n = atol(argv[2]);
	int r = atoi(argv[3]);
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	if (!h || n <= 0 || r <= 0 || r > 99) {
		fprintf(stderr, "launch: %s\n", h ? "bad N or R" : dlerror());
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
