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
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime_api.h>

typedef cudaError_t (*launch_fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t);

static void kernel_stub(void)
{
}

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static double round_ns(launch_fn f, long n, cudaStream_t s)
{
	dim3 g = {64, 1, 1}, b = {256, 1, 1};
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		f((const void *)kernel_stub, g, b, NULL, 0, s);
	return (now_ns() - t0) / (double)n;
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
	double w[99], d[99];
	round_ns(wrapped, n, s); /* warm: first-call paths, page faults */
	round_ns(direct, n, s);
	for (int i = 0; i < r; i++) {
		w[i] = round_ns(wrapped, n, s);
		d[i] = round_ns(direct, n, s);
		/* let the writer drain what the round wrote (two records a launch):
		 * the figure is the launch's cost, not the writer's throughput */
		struct timespec pause = {0, 50 * 1000 * 1000};
		nanosleep(&pause, NULL);
	}
	qsort(w, (size_t)r, sizeof *w, cmp);
	qsort(d, (size_t)r, sizeof *d, cmp);
	printf("wrapped %.2f direct %.2f added %.2f\n", w[r / 2], d[r / 2], w[r / 2] - d[r / 2]);
	return 0;
}
