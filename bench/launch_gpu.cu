/*
 * Cost the preload library adds to a real kernel launch on a real GPU
 * (figures, not pass or fail; run by scripts/device-check.sh, with and
 * without libddlprof preloaded).
 *
 *   launch_gpu N R   launches an empty kernel R rounds of N times through
 *                    the global cudaLaunchKernel (the wrapper, when
 *                    libddlprof is preloaded) and straight into libcudart
 *                    (found with dlopen RTLD_NOLOAD), interleaved, and the
 *                    same with <<<>>>, which CUDA 13 routes through
 *                    __cudaLaunchKernel; the device is drained between
 *                    batches of 256 launches, outside the timed part, so
 *                    the launch queue never fills. Prints median ns per
 *                    launch: "wrapped W direct D added A" and "chevron C".
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime.h>

typedef cudaError_t (*launch_fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t);

__global__ void ddl_empty(void)
{
}

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

enum { BATCH = 256 };

/* N launches through F (or <<<>>> when F is NULL), in batches; ns per launch. */
static double round_ns(launch_fn f, long n, cudaStream_t s)
{
	double spent = 0;
	for (long done = 0; done < n; done += BATCH) {
		double t0 = now_ns();
		if (f)
			for (int i = 0; i < BATCH; i++)
				f((const void *)ddl_empty, dim3(1), dim3(32), NULL, 0, s);
		else
			for (int i = 0; i < BATCH; i++)
				ddl_empty<<<1, 32, 0, s>>>();
		spent += now_ns() - t0;
		cudaStreamSynchronize(s);
	}
	return spent / (double)(n / BATCH * BATCH);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: launch_gpu N R\n");
		return 2;
	}
	long n = atol(argv[1]);
	int r = atoi(argv[2]);
	if (n < BATCH || r <= 0 || r > 99) {
		fprintf(stderr, "launch_gpu: N at least %d, R from 1 to 99\n", BATCH);
		return 2;
	}
	cudaStream_t s;
	if (cudaStreamCreate(&s) != cudaSuccess) {
		fprintf(stderr, "launch_gpu: no CUDA device: %s\n", cudaGetErrorString(cudaGetLastError()));
		return 1;
	}
	void *h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
	launch_fn direct = h ? (launch_fn)dlsym(h, "cudaLaunchKernel") : NULL;
	if (!direct) {
		fprintf(stderr, "launch_gpu: libcudart.so.13 not loaded: %s\n", dlerror());
		return 1;
	}
	launch_fn wrapped = (launch_fn)cudaLaunchKernel;
	round_ns(wrapped, BATCH * 8, s); /* warm up: module load, first launches */
	round_ns(NULL, BATCH * 8, s);
	double w[99], d[99], c[99];
	for (int i = 0; i < r; i++) {
		w[i] = round_ns(wrapped, n, s);
		d[i] = round_ns(direct, n, s);
		c[i] = round_ns(NULL, n, s);
	}
	qsort(w, (size_t)r, sizeof w[0], cmp);
	qsort(d, (size_t)r, sizeof d[0], cmp);
	qsort(c, (size_t)r, sizeof c[0], cmp);
	cudaError_t e = cudaStreamSynchronize(s);
	printf("wrapped %.1f direct %.1f added %.1f chevron %.1f ns per launch (medians of %d rounds of %ld)%s%s\n",
	       w[r / 2], d[r / 2], w[r / 2] - d[r / 2], c[r / 2], r, n, e ? ": " : "",
	       e ? cudaGetErrorString(e) : "");
	return e != cudaSuccess;
}
