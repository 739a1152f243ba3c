/*
 * emu_check: exercises the CUDA/NCCL emulation (libddlemu) through the
 * real API, for tests/t_emu.c, which builds it with kernels/emu_kernels.c
 * and runs one mode per test:
 *
 *   kernel                  kernel timing by events, argument copies, every launch entry point
 *   streams                 ordering, concurrency, events, legacy-stream synchronisation
 *   memcpy                  copy timing against DDLEMU_*_GBPS, data, memset, pointers
 *   errors                  error codes of the runtime and of NCCL (one-rank communicator)
 *   launches                launches of every shape a profiler records (see mode_launches)
 *   cupti                   queued, driver, failing and unwrapped launches (see mode_cupti)
 *   pending                 launches while an error is pending, then read (see mode_pending)
 *   signals                 the CUDA and NCCL calls under a 100 us timer (see mode_signals)
 *   nccl RANK N DIR COLOR   one rank of a multi-process job (unique id through DIR/id)
 *   initall                 ncclCommInitAll and grouped initialisation in one process
 *   peerdeath RANK DIR      two ranks; rank 1 dies, rank 0 must see an error, not hang
 *
 * Measured figures go to stdout as "NAME VALUE" lines. On any failed check
 * it prints the reason on stderr and exits 1.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cuda.h>
#include <dlfcn.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <nccl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "ddlemu.h"
#include "kernels.h"

#define MS 1000000ull

static const char *mode = "?";
static int myrank = -1;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "emu_check %s", mode);
	if (myrank >= 0)
		fprintf(stderr, " rank %d", myrank);
	fprintf(stderr, ": ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

#define CK(call) \
	do { \
		cudaError_t e_ = (call); \
		if (e_ != cudaSuccess) \
			fail("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorName(e_)); \
	} while (0)
#define NK(call) \
	do { \
		ncclResult_t r_ = (call); \
		if (r_ != ncclSuccess) \
			fail("%s:%d: %s: %s (%s)", __FILE__, __LINE__, #call, ncclGetErrorString(r_), \
			     ncclGetLastError(NULL)); \
	} while (0)
#define EXPECT(cond, ...) \
	do { \
		if (!(cond)) \
			fail(__VA_ARGS__); \
	} while (0)

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/*
 * Prints a measured time. Faster than planned by more than tol is a bug;
 * slower may be load on a shared machine, so the test harness judges that
 * (and runs again); only twice the plan fails here.
 */
static void within(const char *what, double got, double want, double tol)
{
	printf("%s %.3f\n", what, got);
	EXPECT(got >= want * (1 - tol) && got <= 2 * want, "%s: %.3f ms, planned %.3f ms", what, got, want);
}

/* ---- a test kernel registered the nvcc way, with its own "fat binary" ---- */

static int seen_i;
static double seen_d;
static int seen_calls;

/* t_args_kernel(int i, double d) */
static void t_args_code(void **args)
{
	seen_i = *(int *)args[0];
	seen_d = *(double *)args[1];
	seen_calls++;
}

static const struct ddlemu_kernel t_kernels[] = {{"t_args_kernel", 2, {sizeof(int), sizeof(double)}}};
static const struct ddlemu_fatbin t_fatbin = {DDLEMU_FATBIN_MAGIC, DDLEMU_FATBIN_VERSION, 1, t_kernels};

/* A kernel's code as the host-function pointer the runtime takes */
static const void *t_code_ptr(ddlemu_kernel_fn f)
{
	union {
		ddlemu_kernel_fn f;
		const void *p;
	} u = {.f = f};
	return u.p;
}

static const void *t_args_fn(void)
{
	return t_code_ptr(t_args_code);
}

static void t_register(void)
{
	void **h = __cudaRegisterFatBinary((void *)&t_fatbin);
	__cudaRegisterFunction(h, t_args_fn(), (char *)"t_args_kernel", "t_args_kernel", -1, NULL, NULL, NULL,
	                       NULL, NULL);
	__cudaRegisterFatBinaryEnd(h);
}

/* Declared by cuda_runtime_api.h only under CUDA_API_PER_THREAD_DEFAULT_STREAM. */
extern __typeof__(cudaLaunchKernel) cudaLaunchKernel_ptsz;

static float time_between(cudaEvent_t a, cudaEvent_t b)
{
	float ms = -1;
	CK(cudaEventSynchronize(b));
	CK(cudaEventElapsedTime(&ms, a, b));
	return ms;
}

static void check_args(const char *how, int calls, int i, double d)
{
	EXPECT(seen_calls == calls && seen_i == i && seen_d == d,
	       "%s: kernel saw call %d i=%d d=%g, expected call %d i=%d d=%g", how, seen_calls, seen_i, seen_d,
	       calls, i, d);
}

static void mode_kernel(void)
{
	cudaStream_t s;
	cudaEvent_t a, b;
	float *scratch, *x, *y;
	CK(cudaStreamCreate(&s));
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	CK(cudaMalloc((void **)&scratch, ddk_scratch_floats() * sizeof(float)));
	for (int rep = 0; rep < 3; rep++) {
		CK(cudaEventRecord(a, s));
		CK(ddk_compute(s, 20 * MS, scratch));
		CK(cudaEventRecord(b, s));
		within("compute_ms", time_between(a, b), 20, 0.05);
	}
	/* the memory kernel does its axpy once, really */
	size_t n = 1 << 20;
	CK(cudaMallocHost((void **)&x, n * sizeof *x));
	CK(cudaMallocHost((void **)&y, n * sizeof *y));
	for (size_t i = 0; i < n; i++) {
		x[i] = (float)(i % 100);
		y[i] = 1.0f;
	}
	CK(cudaEventRecord(a, s));
	CK(ddk_memory(s, y, x, n, 10 * MS));
	CK(cudaEventRecord(b, s));
	within("memory_ms", time_between(a, b), 10, 0.05);
	for (size_t i = 0; i < n; i++)
		EXPECT(y[i] == DDK_AXPY_A * (float)(i % 100) + 1.0f, "axpy: y[%zu] = %g", i, (double)y[i]);

	/* arguments are copied at launch: change them while the kernel waits behind another */
	t_register();
	int iv = 7;
	double dv = 2.5;
	void *args[] = {&iv, &dv};
	CK(ddk_compute(s, 30 * MS, scratch));
	CK(cudaLaunchKernel(t_args_fn(), (dim3){1, 1, 1}, (dim3){32, 1, 1}, args, 0, s));
	iv = 99;
	dv = -1;
	EXPECT(seen_calls == 0, "kernel ran before the one ahead of it finished");
	CK(cudaStreamSynchronize(s));
	check_args("cudaLaunchKernel", 1, 7, 2.5);

	iv = 8;
	dv = 3.5;
	CK(cudaLaunchCooperativeKernel(t_args_fn(), (dim3){2, 1, 1}, (dim3){64, 1, 1}, args, 0, s));
	CK(cudaStreamSynchronize(s));
	check_args("cudaLaunchCooperativeKernel", 2, 8, 3.5);

	iv = 9;
	cudaLaunchConfig_t cfg = {.gridDim = {1, 1, 1}, .blockDim = {128, 1, 1}, .stream = s};
	CK(cudaLaunchKernelExC(&cfg, t_args_fn(), args));
	CK(cudaStreamSynchronize(s));
	check_args("cudaLaunchKernelExC", 3, 9, 3.5);

	CUfunction f = (CUfunction)t_args_fn();
	iv = 10;
	EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, (CUstream)s, args, NULL) == CUDA_SUCCESS, "cuLaunchKernel");
	CK(cudaStreamSynchronize(s));
	check_args("cuLaunchKernel", 4, 10, 3.5);

	/* the packed form: int at 0, double at 8 */
	char buf[16] = {0};
	int pi = 11;
	double pd = 4.25;
	size_t bsz = sizeof buf;
	memcpy(buf, &pi, sizeof pi);
	memcpy(buf + 8, &pd, sizeof pd);
	void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &bsz, CU_LAUNCH_PARAM_END};
	EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, (CUstream)s, NULL, extra) == CUDA_SUCCESS,
	       "cuLaunchKernel extra");
	CK(cudaStreamSynchronize(s));
	check_args("cuLaunchKernel extra", 5, 11, 4.25);

	iv = 12;
	CUlaunchConfig lc = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1, .blockDimY = 1,
	                     .blockDimZ = 1, .hStream = (CUstream)s};
	EXPECT(cuLaunchKernelEx(&lc, f, args, NULL) == CUDA_SUCCESS, "cuLaunchKernelEx");
	CK(cudaStreamSynchronize(s));
	check_args("cuLaunchKernelEx", 6, 12, 3.5);

	/* the driver names a registered kernel; the per-thread-stream entry point is the same call */
	const char *fname = NULL;
	EXPECT(cuFuncGetName(&fname, f) == CUDA_SUCCESS && fname && !strcmp(fname, "t_args_kernel"), "cuFuncGetName");
	EXPECT(cuFuncGetName(&fname, (CUfunction)(void *)&iv) == CUDA_ERROR_INVALID_HANDLE, "cuFuncGetName of junk");
	iv = 13;
	CK(cudaLaunchKernel_ptsz(t_args_fn(), (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, s));
	CK(cudaStreamSynchronize(s));
	check_args("cudaLaunchKernel_ptsz", 7, 13, 3.5);

	/* launch errors */
	EXPECT(cudaLaunchKernel((const void *)&iv, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, s) ==
	               cudaErrorInvalidDeviceFunction,
	       "unregistered function");
	EXPECT(cudaGetLastError() == cudaErrorInvalidDeviceFunction && cudaGetLastError() == cudaSuccess,
	       "last error after a bad launch");
	EXPECT(cudaLaunchKernel(t_args_fn(), (dim3){0, 1, 1}, (dim3){1, 1, 1}, args, 0, s) ==
	               cudaErrorInvalidConfiguration,
	       "empty grid");
	EXPECT(cudaLaunchKernel(t_args_fn(), (dim3){1, 1, 1}, (dim3){2048, 1, 1}, args, 0, s) ==
	               cudaErrorInvalidConfiguration,
	       "2048 threads per block");
	EXPECT(cudaPeekAtLastError() == cudaErrorInvalidConfiguration, "peek");
	cudaGetLastError();
	EXPECT(cuLaunchKernel((CUfunction)(void *)&iv, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL) ==
	               CUDA_ERROR_INVALID_HANDLE,
	       "cuLaunchKernel of an unregistered function");
	EXPECT(cudaLaunchKernel(t_args_fn(), (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, (cudaStream_t)&iv) ==
	               cudaErrorInvalidResourceHandle,
	       "bad stream");
	cudaGetLastError();
	CK(cudaFree(scratch));
	CK(cudaFreeHost(x));
	CK(cudaFreeHost(y));
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
	CK(cudaStreamDestroy(s));
}

/* ---- streams ---- */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char oplog[64];

static void CUDART_CB log_op(void *arg)
{
	pthread_mutex_lock(&log_mu);
	size_t n = strlen(oplog);
	if (n + 1 < sizeof oplog)
		oplog[n] = (char)(intptr_t)arg;
	pthread_mutex_unlock(&log_mu);
}

static void CUDART_CB log_cb(cudaStream_t s, cudaError_t e, void *arg)
{
	(void)s;
	(void)e;
	log_op(arg);
}

static void log_reset(void)
{
	pthread_mutex_lock(&log_mu);
	memset(oplog, 0, sizeof oplog);
	pthread_mutex_unlock(&log_mu);
}

static void log_expect(const char *want, const char *what)
{
	pthread_mutex_lock(&log_mu);
	int ok = !strcmp(oplog, want);
	char got[64];
	memcpy(got, oplog, sizeof got);
	pthread_mutex_unlock(&log_mu);
	EXPECT(ok, "%s: order \"%s\", expected \"%s\"", what, got, want);
}

static void mode_streams(void)
{
	cudaStream_t s1, s2, nb;
	cudaEvent_t e, a, b, nt;
	float *scratch, *d;
	float h[4] = {1, 2, 3, 4}, g[4];
	CK(cudaStreamCreate(&s1));
	CK(cudaStreamCreateWithPriority(&s2, 0, -1));
	CK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
	CK(cudaEventCreate(&e));
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	CK(cudaEventCreateWithFlags(&nt, cudaEventDisableTiming));
	CK(cudaMalloc((void **)&scratch, ddk_scratch_floats() * sizeof(float)));
	CK(cudaMalloc((void **)&d, sizeof h));

	/* in order within a stream */
	log_reset();
	CK(ddk_compute(s1, 20 * MS, scratch));
	CK(cudaLaunchHostFunc(s1, log_op, (void *)'A'));
	CK(ddk_compute(s1, 5 * MS, scratch));
	CK(cudaStreamAddCallback(s1, log_cb, (void *)'B', 0));
	EXPECT(cudaStreamQuery(s1) == cudaErrorNotReady, "stream query while a kernel runs");
	CK(cudaStreamSynchronize(s1));
	EXPECT(cudaStreamQuery(s1) == cudaSuccess, "stream query when idle");
	log_expect("AB", "one stream");

	/* two streams run concurrently; an event orders them */
	log_reset();
	double t0 = now_ms();
	CK(ddk_compute(s1, 40 * MS, scratch));
	CK(cudaLaunchHostFunc(s1, log_op, (void *)'1'));
	CK(cudaEventRecord(e, s1));
	CK(ddk_compute(s2, 40 * MS, scratch));
	CK(cudaLaunchHostFunc(s2, log_op, (void *)'2'));
	CK(cudaStreamWaitEvent(s2, e, 0));
	CK(cudaLaunchHostFunc(s2, log_op, (void *)'w'));
	EXPECT(cudaEventQuery(e) == cudaErrorNotReady, "event query before its stream reaches it");
	CK(cudaDeviceSynchronize());
	double took = now_ms() - t0;
	EXPECT(cudaEventQuery(e) == cudaSuccess, "event query after the device synchronised");
	pthread_mutex_lock(&log_mu);
	int ok = strlen(oplog) == 3 && oplog[2] == 'w';
	pthread_mutex_unlock(&log_mu);
	EXPECT(ok, "cudaStreamWaitEvent: order \"%s\", w must come last", oplog);
	EXPECT(took < 70, "two 40 ms kernels on two streams took %.1f ms: not concurrent", took);

	/* elapsed time across streams, and the errors of ElapsedTime */
	CK(cudaEventRecord(a, s1));
	CK(ddk_compute(s1, 15 * MS, scratch));
	CK(cudaEventRecord(e, s1));
	CK(cudaStreamWaitEvent(s2, e, 0));
	CK(ddk_compute(s2, 15 * MS, scratch));
	CK(cudaEventRecord(b, s2));
	within("two_stream_ms", time_between(a, b), 30, 0.05);
	float ms;
	CK(cudaEventRecord(nt, s1));
	CK(cudaEventSynchronize(nt));
	EXPECT(cudaEventElapsedTime(&ms, a, nt) == cudaErrorInvalidResourceHandle, "elapsed time with DisableTiming");
	cudaEvent_t never;
	CK(cudaEventCreate(&never));
	EXPECT(cudaEventElapsedTime(&ms, a, never) == cudaErrorInvalidResourceHandle, "elapsed time, never recorded");
	EXPECT(cudaEventQuery(never) == cudaSuccess, "query of a never-recorded event");
	CK(ddk_compute(s1, 20 * MS, scratch));
	CK(cudaEventRecord(never, s1));
	EXPECT(cudaEventElapsedTime(&ms, a, never) == cudaErrorNotReady, "elapsed time before completion");
	CK(cudaEventSynchronize(never));
	CK(cudaEventDestroy(never));
	cudaGetLastError();

	/* the legacy default stream waits for blocking streams, not for non-blocking ones */
	log_reset();
	CK(ddk_compute(s1, 30 * MS, scratch));
	CK(cudaLaunchHostFunc(s1, log_op, (void *)'k'));
	CK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
	log_expect("k", "cudaMemcpy after work on a blocking stream");
	log_reset();
	CK(ddk_compute(nb, 50 * MS, scratch));
	CK(cudaLaunchHostFunc(nb, log_op, (void *)'n'));
	CK(cudaMemcpy(g, d, sizeof g, cudaMemcpyDeviceToHost));
	log_expect("", "cudaMemcpy with work on a non-blocking stream");
	EXPECT(!memcmp(g, h, sizeof g), "copy round trip");
	/* and a blocking stream waits for the legacy stream */
	log_reset();
	CK(ddk_compute(NULL, 30 * MS, scratch));
	CK(cudaLaunchHostFunc(NULL, log_op, (void *)'L'));
	CK(cudaLaunchHostFunc(s2, log_op, (void *)'S'));
	CK(cudaStreamSynchronize(s2));
	log_expect("LS", "a blocking stream after the legacy stream");
	CK(cudaDeviceSynchronize());

	/* a destroyed stream still runs what it was given */
	log_reset();
	cudaStream_t tmp;
	CK(cudaStreamCreate(&tmp));
	CK(ddk_compute(tmp, 20 * MS, scratch));
	CK(cudaLaunchHostFunc(tmp, log_op, (void *)'d'));
	CK(cudaStreamDestroy(tmp));
	EXPECT(cudaStreamSynchronize(tmp) == cudaErrorInvalidResourceHandle, "synchronize a destroyed stream");
	cudaGetLastError();
	CK(cudaDeviceSynchronize());
	log_expect("d", "work of a destroyed stream");
	EXPECT(cudaStreamDestroy(NULL) == cudaErrorInvalidResourceHandle, "destroy the legacy stream");
	cudaGetLastError();

	/* streams of another device */
	int prio, dev;
	unsigned flags;
	CK(cudaStreamGetPriority(s2, &prio));
	CK(cudaStreamGetFlags(nb, &flags));
	EXPECT(prio == -1 && flags == cudaStreamNonBlocking, "priority %d flags %u", prio, flags);
	CK(cudaSetDevice(1));
	cudaStream_t s3;
	CK(cudaStreamCreate(&s3));
	CK(cudaStreamGetDevice(s3, &dev));
	EXPECT(dev == 1, "stream of device %d", dev);
	CK(ddk_compute(s3, 10 * MS, scratch));
	CK(cudaDeviceSynchronize());
	CK(cudaStreamDestroy(s3));
	CK(cudaSetDevice(0));

	CK(cudaFree(scratch));
	CK(cudaFree(d));
	CK(cudaStreamDestroy(s1));
	CK(cudaStreamDestroy(s2));
	CK(cudaStreamDestroy(nb));
	CK(cudaEventDestroy(e));
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
	CK(cudaEventDestroy(nt));
}

/* ---- copies ---- */

static double env_gbps(const char *name, double def)
{
	const char *v = getenv(name);
	return v && *v ? atof(v) : def;
}

static float timed_copy(void *dst, const void *src, size_t n, enum cudaMemcpyKind k, cudaStream_t s)
{
	cudaEvent_t a, b;
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	CK(cudaEventRecord(a, s));
	CK(cudaMemcpyAsync(dst, src, n, k, s));
	CK(cudaEventRecord(b, s));
	float ms = time_between(a, b);
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
	return ms;
}

static void mode_memcpy(void)
{
	size_t n = 16u << 20;
	double pcie = env_gbps("DDLEMU_PCIE_GBPS", 64), hbm = env_gbps("DDLEMU_HBM_GBPS", 8000);
	double p2p = env_gbps("DDLEMU_P2P_GBPS", hbm);
	char *h, *h2, *d0, *d0b, *d1;
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	CK(cudaMallocHost((void **)&h, n));
	h2 = malloc(n); /* pageable */
	EXPECT(h2 != NULL, "malloc");
	memset(h2, 0, n);
	CK(cudaMalloc((void **)&d0, n));
	CK(cudaMalloc((void **)&d0b, n));
	CK(cudaSetDevice(1));
	CK(cudaMalloc((void **)&d1, n));
	CK(cudaSetDevice(0));
	for (size_t i = 0; i < n; i++)
		h[i] = (char)(i * 7 + 3);
	double plan = (double)n * 8 / (pcie * 1e9) * 1e3;
	within("h2d_ms", timed_copy(d0, h, n, cudaMemcpyHostToDevice, s), plan, 0.05);
	within("d2d_ms", timed_copy(d0b, d0, n, cudaMemcpyDeviceToDevice, s), (double)n * 8 / (hbm * 1e9) * 1e3, 0.05);
	within("default_d2h_ms", timed_copy(h2, d0b, n, cudaMemcpyDefault, s), plan, 0.05);
	EXPECT(!memcmp(h, h2, n), "data after H2D, D2D, D2H");
	cudaEvent_t a, b;
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	CK(cudaEventRecord(a, s));
	CK(cudaMemcpyPeerAsync(d1, 1, d0, 0, n, s));
	CK(cudaEventRecord(b, s));
	within("peer_ms", time_between(a, b), (double)n * 8 / (p2p * 1e9) * 1e3, 0.05);
	EXPECT(!memcmp(d1, h, n), "data after a peer copy");
	double t0 = now_ms();
	CK(cudaMemcpy(h2, d1, n, cudaMemcpyDeviceToHost));
	within("sync_d2h_ms", now_ms() - t0, plan, 0.10);
	double gbps = 0;
	CK(ddk_p2p_ring(4, 4u << 20, 2, &gbps));
	printf("p2p_ring_gbytes_per_s %.3f\n", gbps);
	EXPECT(gbps <= 1.05 * p2p / 8 && gbps >= 0.5 * p2p / 8, "p2p ring %.3f GB/s, planned %.3f", gbps, p2p / 8);

	CK(cudaMemset(d0, 0x5a, n));
	CK(cudaMemsetAsync(d0 + 10, 0x11, 5, s));
	CK(cudaMemcpyAsync(h2, d0, 64, cudaMemcpyDeviceToHost, s));
	CK(cudaStreamSynchronize(s));
	EXPECT(h2[0] == 0x5a && h2[9] == 0x5a && h2[10] == 0x11 && h2[14] == 0x11 && h2[15] == 0x5a, "memset");
	EXPECT(cudaMemset(h2, 0, 10) == cudaErrorInvalidValue, "memset of pageable memory");
	EXPECT(cudaMemcpy(h2, d0, 1, (enum cudaMemcpyKind)9) == cudaErrorInvalidMemcpyDirection, "bad kind");
	EXPECT(cudaFree(h2) == cudaErrorInvalidValue, "cudaFree of a host pointer");
	EXPECT(cudaFreeHost(d0) == cudaErrorInvalidValue, "cudaFreeHost of a device pointer");
	cudaGetLastError();

	struct cudaPointerAttributes pa;
	CK(cudaPointerGetAttributes(&pa, d1 + 100));
	EXPECT(pa.type == cudaMemoryTypeDevice && pa.device == 1, "attributes of device memory");
	CK(cudaPointerGetAttributes(&pa, h));
	EXPECT(pa.type == cudaMemoryTypeHost, "attributes of pinned memory");
	CK(cudaPointerGetAttributes(&pa, h2));
	EXPECT(pa.type == cudaMemoryTypeUnregistered, "attributes of pageable memory");
	size_t fr, tot;
	CK(cudaMemGetInfo(&fr, &tot));
	EXPECT(tot - fr == 2 * n, "cudaMemGetInfo: %zu used, expected %zu", tot - fr, 2 * n);
	void *p;
	CK(cudaMallocAsync(&p, 1000, s));
	CK(cudaFreeAsync(p, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaFree(d0));
	CK(cudaFree(d0b));
	CK(cudaFree(d1));
	CK(cudaFreeHost(h));
	free(h2);
	CK(cudaMemGetInfo(&fr, &tot));
	EXPECT(fr == tot, "memory left after freeing all");
	CK(cudaStreamDestroy(s));
}

/* ---- errors ---- */

static void mode_errors(void)
{
	int n = 0, dev = -1;
	CK(cudaGetDeviceCount(&n));
	const char *want = getenv("DDLEMU_DEVICES");
	EXPECT(n == (want && atoi(want) >= 1 && atoi(want) <= 64 ? atoi(want) : 8), "%d devices", n);
	struct cudaDeviceProp p;
	CK(cudaGetDeviceProperties(&p, n - 1));
	EXPECT(!strcmp(p.name, "ddlemu") && p.multiProcessorCount > 0, "properties: %s", p.name);
	EXPECT(cudaSetDevice(n) == cudaErrorInvalidDevice, "cudaSetDevice(%d)", n);
	EXPECT(cudaGetLastError() == cudaErrorInvalidDevice, "last error");
	EXPECT(cudaGetLastError() == cudaSuccess, "last error cleared");
	EXPECT(cudaGetDeviceProperties(&p, -1) == cudaErrorInvalidDevice, "properties of device -1");
	CK(cudaGetDevice(&dev));
	EXPECT(dev == 0, "current device %d", dev);
	EXPECT(!strcmp(cudaGetErrorName(cudaErrorNotReady), "cudaErrorNotReady") &&
	               !strcmp(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument") &&
	               !strcmp(cudaGetErrorString((cudaError_t)12345), "unrecognized error code"),
	       "error strings");
	int can = -1;
	CK(cudaDeviceCanAccessPeer(&can, 0, n - 1));
	EXPECT(can == (n > 1), "can access peer");
	if (n > 1) {
		CK(cudaDeviceEnablePeerAccess(1, 0));
		EXPECT(cudaDeviceEnablePeerAccess(1, 0) == cudaErrorPeerAccessAlreadyEnabled, "enable twice");
		CK(cudaDeviceDisablePeerAccess(1));
		EXPECT(cudaDeviceDisablePeerAccess(1) == cudaErrorPeerAccessNotEnabled, "disable twice");
	}
	EXPECT(cudaStreamCreateWithFlags(NULL, 0) == cudaErrorInvalidValue, "stream create NULL");
	cudaStream_t s;
	EXPECT(cudaStreamCreateWithFlags(&s, 0x80) == cudaErrorInvalidValue, "stream flags");
	cudaEvent_t ev;
	EXPECT(cudaEventCreateWithFlags(&ev, cudaEventInterprocess) == cudaErrorInvalidValue, "event flags");
	cudaGetLastError();

	/* NCCL, on a communicator of one rank */
	int v = 0;
	NK(ncclGetVersion(&v));
	EXPECT(v == NCCL_VERSION_CODE, "version %d", v);
	ncclUniqueId id;
	ncclComm_t c = NULL, bad;
	NK(ncclGetUniqueId(&id));
	EXPECT(ncclCommInitRank(NULL, 1, id, 0) == ncclInvalidArgument, "init NULL comm");
	EXPECT(ncclCommInitRank(&bad, 0, id, 0) == ncclInvalidArgument, "init 0 ranks");
	EXPECT(ncclCommInitRank(&bad, 2, id, 2) == ncclInvalidArgument, "init rank 2 of 2");
	EXPECT(strlen(ncclGetLastError(NULL)) > 0, "ncclGetLastError after an error");
	ncclUniqueId junk;
	memset(&junk, 0x5a, sizeof junk);
	EXPECT(ncclCommInitRank(&bad, 1, junk, 0) == ncclInvalidArgument, "init with a junk id");
	ncclConfig_t cfgbad = {0};
	EXPECT(ncclCommInitRankConfig(&bad, 1, id, 0, &cfgbad) == ncclInvalidArgument, "uninitialised config");
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	NK(ncclCommInitRankConfig(&c, 1, id, 0, &cfg));
	int cnt = 0, rk = -1, cd = -1;
	NK(ncclCommCount(c, &cnt));
	NK(ncclCommUserRank(c, &rk));
	NK(ncclCommCuDevice(c, &cd));
	EXPECT(cnt == 1 && rk == 0 && cd == 0, "count %d rank %d device %d", cnt, rk, cd);
	float *x, *y;
	CK(cudaMalloc((void **)&x, 64 * sizeof *x));
	CK(cudaMalloc((void **)&y, 64 * sizeof *y));
	for (int i = 0; i < 64; i++)
		x[i] = (float)i;
	NK(ncclAllReduce(x, y, 64, ncclFloat, ncclSum, c, NULL));
	CK(cudaStreamSynchronize(NULL));
	EXPECT(y[63] == 63 && y[1] == 1, "one-rank all-reduce");
	EXPECT(ncclAllReduce(x, y, 64, ncclFloat, ncclSum, NULL, NULL) == ncclInvalidArgument, "NULL comm");
	EXPECT(ncclAllReduce(x, y, 64, (ncclDataType_t)42, ncclSum, c, NULL) == ncclInvalidArgument, "bad type");
	EXPECT(ncclAllReduce(x, y, 64, ncclFloat, (ncclRedOp_t)17, c, NULL) == ncclInvalidArgument, "bad op");
	EXPECT(ncclAllReduce(x, y, 64, ncclFloat8e4m3, ncclSum, c, NULL) == ncclInvalidArgument, "fp8 sum");
	EXPECT(ncclAllReduce(NULL, y, 64, ncclFloat, ncclSum, c, NULL) == ncclInvalidArgument, "NULL buffer");
	EXPECT(ncclBroadcast(x, y, 64, ncclFloat, 1, c, NULL) == ncclInvalidArgument, "root 1 of 1");
	EXPECT(ncclSend(x, 64, ncclFloat, -1, c, NULL) == ncclInvalidArgument, "peer -1");
	EXPECT(ncclRecv(y, 64, ncclFloat, 3, c, NULL) == ncclInvalidArgument, "peer 3");
	EXPECT(ncclAllReduce(x, y, 64, ncclFloat, ncclSum, c, (cudaStream_t)&v) == ncclUnhandledCudaError,
	       "bad stream");
	EXPECT(ncclGroupEnd() == ncclInvalidUsage, "ncclGroupEnd without start");
	NK(ncclGroupStart());
	EXPECT(ncclReduce(x, y, 64, ncclFloat, ncclSum, 5, c, NULL) == ncclInvalidArgument, "bad root in a group");
	EXPECT(ncclGroupEnd() == ncclInvalidArgument, "ncclGroupEnd reports the group's error");
	/* send to self in a group */
	NK(ncclGroupStart());
	NK(ncclSend(x, 64, ncclFloat, 0, c, NULL));
	NK(ncclRecv(y + 0, 64, ncclFloat, 0, c, NULL));
	NK(ncclGroupEnd());
	CK(cudaStreamSynchronize(NULL));
	EXPECT(y[5] == 5, "send to self");
	EXPECT(!strcmp(ncclGetErrorString(ncclInvalidUsage), "invalid usage"), "nccl error string");
	ncclResult_t as = ncclInternalError;
	NK(ncclCommGetAsyncError(c, &as));
	EXPECT(as == ncclSuccess, "async error %d", as);
	NK(ncclCommFinalize(c));
	NK(ncclCommDestroy(c));
	CK(cudaFree(x));
	CK(cudaFree(y));
}

/* ---- NCCL across processes ---- */

static void *dmalloc(size_t n)
{
	void *p;
	CK(cudaMalloc(&p, n ? n : 1));
	return p;
}

static void id_exchange(int rank, const char *dir, ncclUniqueId *id)
{
	char path[4096], tmp[4200];
	snprintf(path, sizeof path, "%s/id", dir);
	if (rank == 0) {
		NK(ncclGetUniqueId(id));
		snprintf(tmp, sizeof tmp, "%s.tmp", path);
		FILE *f = fopen(tmp, "wb");
		EXPECT(f && fwrite(id, sizeof *id, 1, f) == 1 && fclose(f) == 0 && rename(tmp, path) == 0,
		       "cannot write %s", path);
		return;
	}
	for (int i = 0; i < 3000; i++) {
		FILE *f = fopen(path, "rb");
		if (f) {
			int ok = fread(id, sizeof *id, 1, f) == 1;
			fclose(f);
			if (ok)
				return;
		}
		usleep(10000);
	}
	fail("no unique id in %s", path);
}


static double timed_allreduce(ncclComm_t c, cudaStream_t s, float *buf, size_t count)
{
	cudaEvent_t a, b;
	int *one = dmalloc(sizeof *one);
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	/* a barrier first, so that every rank starts together */
	NK(ncclAllReduce(one, one, 1, ncclInt32, ncclSum, c, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaFree(one));
	CK(cudaEventRecord(a, s));
	NK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, c, s));
	CK(cudaEventRecord(b, s));
	double ms = time_between(a, b);
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
	return ms;
}

/* Waits for the stream, then checks that the communicator has not failed. */
static void sync_comm(ncclComm_t c, cudaStream_t s)
{
	ncclResult_t as = ncclInternalError;
	CK(cudaStreamSynchronize(s));
	NK(ncclCommGetAsyncError(c, &as));
	EXPECT(as == ncclSuccess, "communicator failed: %s", ncclGetLastError(c));
}

static void check_types(ncclComm_t c, cudaStream_t s, int r, int n)
{
	size_t cnt = 4099;
	int64_t *a = dmalloc(cnt * 8);
	int8_t *b = dmalloc(cnt);
	uint8_t *u = dmalloc(cnt);
	double *d = dmalloc(cnt * 8);
	uint16_t *h = dmalloc(cnt * 2), *bf = dmalloc(cnt * 2);
	float *f = dmalloc(cnt * 4);
	for (size_t i = 0; i < cnt; i++) {
		a[i] = (int64_t)(i * 1000 + (size_t)r) - 5000;
		b[i] = (int8_t)(100 + r);         /* wraps */
		u[i] = (uint8_t)(200 - r * 3 - i % 5);
		d[i] = r == 0 ? 2.0 : 1.5;
		h[i] = 0x3c00;                    /* 1.0 in float16 */
		bf[i] = 0x4000;                   /* 2.0 in bfloat16 */
		f[i] = (float)(r + 1) * 3;
	}
	NK(ncclGroupStart());
	NK(ncclAllReduce(a, a, cnt, ncclInt64, ncclMax, c, s));
	NK(ncclAllReduce(b, b, cnt, ncclInt8, ncclSum, c, s));
	NK(ncclAllReduce(u, u, cnt, ncclUint8, ncclMin, c, s));
	NK(ncclAllReduce(d, d, cnt, ncclFloat64, ncclProd, c, s));
	NK(ncclAllReduce(h, h, cnt, ncclFloat16, ncclSum, c, s));
	NK(ncclAllReduce(bf, bf, cnt, ncclBfloat16, ncclSum, c, s));
	NK(ncclAllReduce(f, f, cnt, ncclFloat, ncclAvg, c, s));
	NK(ncclGroupEnd());
	sync_comm(c, s);
	int bsum = 0;
	for (int k = 0; k < n; k++)
		bsum += 100 + k;
	double prod = 2.0 * pow(1.5, n - 1);
	uint16_t hn = n == 4 ? 0x4400 : n == 3 ? 0x4200 : n == 2 ? 0x4000 : 0x3c00;
	float avg = 3.0f * (float)(n + 1) / 2;
	for (size_t i = 0; i < cnt; i++) {
		EXPECT(a[i] == (int64_t)(i * 1000 + (size_t)(n - 1)) - 5000, "int64 max [%zu] = %lld", i, (long long)a[i]);
		EXPECT(b[i] == (int8_t)bsum, "int8 sum [%zu] = %d, expected %d", i, b[i], (int8_t)bsum);
		EXPECT(u[i] == (uint8_t)(200 - (n - 1) * 3 - i % 5), "uint8 min [%zu] = %d", i, u[i]);
		EXPECT(d[i] == prod, "float64 prod [%zu] = %g", i, d[i]);
		EXPECT(n > 4 || h[i] == hn, "float16 sum [%zu] = %#x", i, h[i]);
		EXPECT(bf[i] == (uint16_t)(0x4000 + (n == 1 ? 0 : n == 2 ? 0x80 : n == 3 ? 0xc0 : 0x100)) || n > 4,
		       "bfloat16 sum [%zu] = %#x", i, bf[i]);
		EXPECT(f[i] == avg, "float avg [%zu] = %g, expected %g", i, (double)f[i], (double)avg);
	}
	CK(cudaFree(a));
	CK(cudaFree(b));
	CK(cudaFree(u));
	CK(cudaFree(d));
	CK(cudaFree(h));
	CK(cudaFree(bf));
	CK(cudaFree(f));
}

static void check_collectives(ncclComm_t c, cudaStream_t s, int r, int n)
{
	/* all-reduce with uneven chunks, out of place then in place */
	size_t cnt = 1000003;
	float *x = dmalloc(cnt * 4), *y = dmalloc(cnt * 4);
	for (size_t i = 0; i < cnt; i++)
		x[i] = (float)(r + 1) + (float)(i % 7);
	NK(ncclAllReduce(x, y, cnt, ncclFloat, ncclSum, c, s));
	NK(ncclAllReduce(x, x, cnt, ncclFloat, ncclSum, c, s));
	sync_comm(c, s);
	for (size_t i = 0; i < cnt; i++) {
		float want = (float)(n * (n + 1) / 2) + (float)n * (float)(i % 7);
		EXPECT(y[i] == want && x[i] == want, "all-reduce [%zu] = %g / %g, expected %g", i, (double)y[i],
		       (double)x[i], (double)want);
	}
	check_types(c, s, r, n);

	/* all-gather */
	size_t ag = 1001;
	int *gs = dmalloc(ag * 4), *gr = dmalloc(ag * 4 * (size_t)n);
	for (size_t i = 0; i < ag; i++)
		gs[i] = r * 100000 + (int)i;
	NK(ncclAllGather(gs, gr, ag, ncclInt32, c, s));
	sync_comm(c, s);
	for (int k = 0; k < n; k++)
		for (size_t i = 0; i < ag; i++)
			EXPECT(gr[(size_t)k * ag + i] == k * 100000 + (int)i, "all-gather block %d [%zu] = %d", k, i,
			       gr[(size_t)k * ag + i]);

	/* reduce-scatter */
	size_t rc = 777;
	float *rs = dmalloc(rc * 4 * (size_t)n), *rr = dmalloc(rc * 4);
	for (size_t i = 0; i < rc * (size_t)n; i++)
		rs[i] = (float)(r + 1) * (float)(i % 1000);
	NK(ncclReduceScatter(rs, rr, rc, ncclFloat, ncclSum, c, s));
	sync_comm(c, s);
	for (size_t i = 0; i < rc; i++)
		EXPECT(rr[i] == (float)(n * (n + 1) / 2) * (float)(((size_t)r * rc + i) % 1000),
		       "reduce-scatter [%zu] = %g", i, (double)rr[i]);

	/* broadcast over several pipeline chunks, and the in-place ncclBcast */
	size_t bc = 3u << 20;
	unsigned char *bb = dmalloc(bc), *bo = dmalloc(bc);
	for (size_t i = 0; i < bc; i++)
		bb[i] = r == n - 1 ? (unsigned char)(i * 13 + 1) : 0;
	NK(ncclBroadcast(bb, bo, bc, ncclUint8, n - 1, c, s));
	NK(ncclBcast(bb, bc, ncclUint8, n - 1, c, s));
	sync_comm(c, s);
	for (size_t i = 0; i < bc; i++)
		EXPECT(bo[i] == (unsigned char)(i * 13 + 1) && bb[i] == bo[i], "broadcast [%zu] = %d", i, bo[i]);

	/* reduce to root 1 % n */
	size_t rd = (3u << 20) / 4 + 5;
	int *ri = dmalloc(rd * 4), *ro = dmalloc(rd * 4);
	for (size_t i = 0; i < rd; i++) {
		ri[i] = (r + 1) * (int)(i % 1000);
		ro[i] = -1;
	}
	NK(ncclReduce(ri, ro, rd, ncclInt32, ncclSum, 1 % n, c, s));
	sync_comm(c, s);
	for (size_t i = 0; r == 1 % n && i < rd; i++)
		EXPECT(ro[i] == n * (n + 1) / 2 * (int)(i % 1000), "reduce [%zu] = %d", i, ro[i]);
	EXPECT(r == 1 % n || ro[0] == -1, "reduce wrote recvbuff on a non-root rank");

	/* a group of send to next / receive from previous, twice to each peer (in order) */
	size_t pc = 300000;
	int *p1 = dmalloc(pc * 4), *p2 = dmalloc(pc * 4), *q1 = dmalloc(pc * 4), *q2 = dmalloc(pc * 4);
	for (size_t i = 0; i < pc; i++) {
		p1[i] = r * 1000 + (int)(i % 1000);
		p2[i] = -p1[i];
	}
	int next = (r + 1) % n, prev = (r + n - 1) % n;
	NK(ncclGroupStart());
	NK(ncclSend(p1, pc, ncclInt32, next, c, s));
	NK(ncclRecv(q1, pc, ncclInt32, prev, c, s));
	NK(ncclSend(p2, pc, ncclInt32, next, c, s));
	NK(ncclRecv(q2, pc, ncclInt32, prev, c, s));
	NK(ncclGroupEnd());
	sync_comm(c, s);
	for (size_t i = 0; i < pc; i++)
		EXPECT(q1[i] == prev * 1000 + (int)(i % 1000) && q2[i] == -q1[i], "send/recv [%zu] = %d %d", i, q1[i],
		       q2[i]);

	/* all-to-all, gather to root 0, scatter from root n-1 */
	size_t ac = 5000;
	int *as = dmalloc(ac * 4 * (size_t)n), *ar = dmalloc(ac * 4 * (size_t)n);
	for (int k = 0; k < n; k++)
		for (size_t i = 0; i < ac; i++)
			as[(size_t)k * ac + i] = r * 1000000 + k * 10000 + (int)i;
	NK(ncclAlltoAll(as, ar, ac, ncclInt32, c, s));
	NK(ncclGather(as, gr, ag, ncclInt32, 0, c, s));
	NK(ncclScatter(as, gs, ag, ncclInt32, n - 1, c, s));
	sync_comm(c, s);
	for (int k = 0; k < n; k++)
		for (size_t i = 0; i < ac; i++)
			EXPECT(ar[(size_t)k * ac + i] == k * 1000000 + r * 10000 + (int)i, "all-to-all from %d [%zu]", k, i);
	for (int k = 0; r == 0 && k < n; k++)
		for (size_t i = 0; i < ag; i++)
			EXPECT(gr[(size_t)k * ag + i] == k * 1000000 + (int)i, "gather block %d [%zu]", k, i);
	for (size_t i = 0; i < ag; i++) {
		size_t j = (size_t)r * ag + i; /* the root's element */
		EXPECT(gs[i] == (n - 1) * 1000000 + (int)(j / ac) * 10000 + (int)(j % ac), "scatter [%zu] = %d", i,
		       gs[i]);
	}
	void *bufs[] = {x, y, gs, gr, rs, rr, bb, bo, ri, ro, p1, p2, q1, q2, as, ar};
	for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
		CK(cudaFree(bufs[i]));
}

static void mode_nccl(int rank, int n, const char *dir, int color)
{
	int ndev;
	ncclUniqueId id;
	ncclComm_t c, sub;
	cudaStream_t s;
	myrank = rank;
	CK(cudaGetDeviceCount(&ndev));
	CK(cudaSetDevice(rank % ndev));
	id_exchange(rank, dir, &id);
	NK(ncclCommInitRank(&c, n, id, rank));
	CK(cudaStreamCreate(&s));
	check_collectives(c, s, rank, n);

	size_t count = (size_t)atol(getenv("EMU_TIMED_FLOATS") ? getenv("EMU_TIMED_FLOATS") : "4194304");
	float *buf = dmalloc(count * 4);
	for (size_t i = 0; i < count; i++)
		buf[i] = 1.0f;
	printf("allreduce_ms %.3f\n", timed_allreduce(c, s, buf, count));
	EXPECT(buf[count - 1] == (float)n && buf[0] == (float)n, "timed all-reduce result %g", (double)buf[0]);

	/* paired exchange of 4 MiB with the rank half a ring away (on the other host in the test) */
	if (n % 2 == 0) {
		size_t pb = 4u << 20;
		int peer = (rank + n / 2) % n, *one = dmalloc(sizeof *one);
		char *ps = dmalloc(pb), *pr = dmalloc(pb);
		cudaEvent_t a, b;
		memset(ps, rank + 1, pb);
		CK(cudaEventCreate(&a));
		CK(cudaEventCreate(&b));
		NK(ncclAllReduce(one, one, 1, ncclInt32, ncclSum, c, s));
		sync_comm(c, s);
		CK(cudaEventRecord(a, s));
		NK(ncclGroupStart());
		NK(ncclSend(ps, pb, ncclInt8, peer, c, s));
		NK(ncclRecv(pr, pb, ncclInt8, peer, c, s));
		NK(ncclGroupEnd());
		CK(cudaEventRecord(b, s));
		printf("p2p_ms %.3f\n", time_between(a, b));
		sync_comm(c, s);
		EXPECT(pr[0] == peer + 1 && pr[pb - 1] == peer + 1, "exchange with rank %d: got %d", peer, pr[0]);
		CK(cudaEventDestroy(a));
		CK(cudaEventDestroy(b));
		CK(cudaFree(ps));
		CK(cudaFree(pr));
		CK(cudaFree(one));
	}

	/* one communicator per color (the test gives each emulated host its own) */
	NK(ncclCommSplit(c, color, rank, &sub, NULL));
	int sn = 0, sr = -1;
	NK(ncclCommCount(sub, &sn));
	NK(ncclCommUserRank(sub, &sr));
	printf("split_ranks %d\nsplit_rank %d\n", sn, sr);
	for (size_t i = 0; i < count; i++)
		buf[i] = 1.0f;
	printf("split_allreduce_ms %.3f\n", timed_allreduce(sub, s, buf, count));
	EXPECT(buf[count / 2] == (float)sn, "split all-reduce result %g with %d ranks", (double)buf[0], sn);
	int *one = dmalloc(4);
	*one = rank;
	NK(ncclAllReduce(one, one, 1, ncclInt32, ncclMax, sub, s));
	CK(cudaStreamSynchronize(s));
	printf("split_max_rank %d\n", *one);
	ncclComm_t none = (ncclComm_t)1;
	NK(ncclCommSplit(c, rank == 0 ? NCCL_SPLIT_NOCOLOR : 0, 0, &none, NULL));
	EXPECT(rank == 0 ? none == NULL : none != NULL, "split with NCCL_SPLIT_NOCOLOR");
	if (none) {
		NK(ncclCommCount(none, &sn));
		EXPECT(sn == n - 1, "the no-color split has %d ranks", sn);
		NK(ncclCommDestroy(none));
	}
	NK(ncclCommDestroy(sub));
	NK(ncclCommDestroy(c));
	CK(cudaFree(buf));
	CK(cudaFree(one));
	CK(cudaStreamDestroy(s));
}

/*
 * A peer that dies: rank 1 leaves right after initialisation; rank 0's
 * all-reduce must fail (not hang), later calls report it, abort works, and
 * the process exits at once with a kernel still queued.
 */
static void mode_peerdeath(int rank, const char *dir)
{
	ncclUniqueId id;
	ncclComm_t c;
	cudaStream_t s;
	myrank = rank;
	id_exchange(rank, dir, &id);
	NK(ncclCommInitRank(&c, 2, id, rank));
	if (rank == 1) {
		printf("ok\n");
		_exit(0);
	}
	usleep(100000);
	CK(cudaStreamCreate(&s));
	size_t n = 1 << 20;
	float *x = dmalloc(n * 4);
	NK(ncclAllReduce(x, x, n, ncclFloat, ncclSum, c, s));
	CK(cudaStreamSynchronize(s));
	ncclResult_t as = ncclSuccess;
	NK(ncclCommGetAsyncError(c, &as));
	EXPECT(as == ncclRemoteError, "async error %d after the peer died", as);
	EXPECT(ncclAllReduce(x, x, n, ncclFloat, ncclSum, c, s) == ncclRemoteError, "a call after the failure");
	printf("error %s\n", ncclGetLastError(c));
	NK(ncclCommAbort(c));
	float *scratch = dmalloc(ddk_scratch_floats() * 4);
	CK(ddk_compute(s, 10000 * MS, scratch));
	printf("ok\n");
	exit(0); /* with a 10 s kernel queued: exit must not wait for it */
}

/* ---- one process, several devices ---- */

static void mode_initall(void)
{
	enum { N = 4 };
	ncclComm_t c[N];
	cudaStream_t s[N];
	float *x[N];
	size_t cnt = 100000;
	NK(ncclCommInitAll(c, N, NULL));
	for (int i = 0; i < N; i++) {
		int d = -1;
		NK(ncclCommCuDevice(c[i], &d));
		EXPECT(d == i, "comm %d on device %d", i, d);
		CK(cudaSetDevice(i));
		CK(cudaStreamCreate(&s[i]));
		x[i] = dmalloc(cnt * 4);
		for (size_t j = 0; j < cnt; j++)
			x[i][j] = (float)(i + 1);
	}
	NK(ncclGroupStart());
	for (int i = 0; i < N; i++)
		NK(ncclAllReduce(x[i], x[i], cnt, ncclFloat, ncclSum, c[i], s[i]));
	NK(ncclGroupEnd());
	for (int i = 0; i < N; i++) {
		CK(cudaStreamSynchronize(s[i]));
		EXPECT(x[i][cnt - 1] == 10.0f, "comm %d: %g", i, (double)x[i][0]);
		NK(ncclCommDestroy(c[i]));
	}
	/* two ranks initialised in one thread by a group */
	ncclUniqueId id;
	ncclComm_t g[2];
	NK(ncclGetUniqueId(&id));
	NK(ncclGroupStart());
	for (int i = 0; i < 2; i++) {
		CK(cudaSetDevice(i));
		NK(ncclCommInitRank(&g[i], 2, id, i));
	}
	NK(ncclGroupEnd());
	NK(ncclGroupStart());
	for (int i = 0; i < 2; i++)
		NK(ncclBroadcast(x[0], x[i], cnt, ncclFloat, 0, g[i], s[i]));
	NK(ncclGroupEnd());
	for (int i = 0; i < 2; i++) {
		CK(cudaStreamSynchronize(s[i]));
		EXPECT(x[i][7] == 10.0f, "group init: broadcast gave %g", (double)x[i][7]);
		NK(ncclCommDestroy(g[i]));
	}
	EXPECT(ncclCommInitAll(c, 2, (int[]){1, 1}) == ncclInvalidUsage, "ncclCommInitAll with a device twice");
	for (int i = 0; i < N; i++) {
		CK(cudaFree(x[i]));
		CK(cudaStreamDestroy(s[i]));
	}
}

/* ---- launches: the records a profiler makes of them (tests/t_emu.c) ---- */

/*
 * On device 3 and a stream of its own: five named launches, an unregistered
 * function with a 42-block grid of 128-thread blocks (the runtime's error),
 * a grid of more than 2^32 blocks (an error too: its y is over the limit),
 * and a cooperative launch. Prints the grid and the codes to compare.
 */
static void mode_launches(void)
{
	CK(cudaSetDevice(3));
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	float *buf;
	CK(cudaMalloc((void **)&buf, ddk_scratch_floats() * sizeof *buf));
	for (int i = 0; i < 5; i++)
		CK(ddk_compute(s, 1000, buf));
	static int not_a_kernel;
	cudaError_t e1 = cudaLaunchKernel(&not_a_kernel, (dim3){7, 3, 2}, (dim3){32, 4, 1}, NULL, 0, s);
	cudaGetLastError();
	cudaError_t e2 = cudaLaunchKernel(&not_a_kernel, (dim3){2147483647u, 65536, 2}, (dim3){1, 1, 1}, NULL, 0, s);
	cudaGetLastError();
	cudaError_t e3 = cudaLaunchCooperativeKernel(&not_a_kernel, (dim3){5, 1, 1}, (dim3){64, 1, 1}, NULL, 0, s);
	cudaGetLastError();
	CK(cudaStreamSynchronize(s));
	int sms = 0;
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 3));
	printf("grid %d\nerrors %d %d %d\n", sms, (int)e1, (int)e2, (int)e3);
	CK(cudaFree(buf));
	CK(cudaStreamDestroy(s));
}

/* A kernel registered past any profiler (with the emulation's own entry
 * points), as one registered before the profiler was loaded: only the
 * runtime knows its name. Its code is static, so no symbol names it. */
static void t_hidden_code(void **args)
{
	(void)args;
	seen_calls++;
}

static const struct ddlemu_kernel t_hidden_kernels[] = {{"t_hidden_kernel", 0, {0}}};
static const struct ddlemu_fatbin t_hidden_fatbin = {DDLEMU_FATBIN_MAGIC, DDLEMU_FATBIN_VERSION, 1,
                                                     t_hidden_kernels};

static const void *t_hidden_fn(void)
{
	return t_code_ptr(t_hidden_code);
}

static void t_register_hidden(void)
{
	void *emu = dlopen("libddlemu.so", RTLD_LAZY | RTLD_NOLOAD);
	__typeof__(__cudaRegisterFatBinary) *bin =
	    emu ? (__typeof__(__cudaRegisterFatBinary) *)dlsym(emu, "__cudaRegisterFatBinary") : NULL;
	__typeof__(__cudaRegisterFunction) *fn =
	    emu ? (__typeof__(__cudaRegisterFunction) *)dlsym(emu, "__cudaRegisterFunction") : NULL;
	EXPECT(bin && fn, "the emulation's own registration: %s", dlerror());
	void **h = bin((void *)&t_hidden_fatbin);
	fn(h, t_hidden_fn(), (char *)"t_hidden_kernel", "t_hidden_kernel", -1, NULL, NULL, NULL, NULL, NULL);
}

/*
 * An error left pending (an unregistered function's launch, not read; the
 * stream synchronised after it) while 4,000 short kernels are launched; then the error is read, and 3
 * kernels of 2 ms run; then a kernel the profiler did not see registered is
 * launched once with an error pending and twice after. Prints how often this thread called
 * cudaPeekAtLastError during the 4,000 launches (a profiler that asks on
 * every launch shows here) and the error codes, to compare.
 */
static void mode_pending(void)
{
	CK(cudaSetDevice(0));
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	float *buf;
	CK(cudaMalloc((void **)&buf, ddk_scratch_floats() * sizeof *buf));
	static int not_a_kernel;
	cudaError_t bad = cudaLaunchKernel(&not_a_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, NULL, 0, s);
	EXPECT(bad != cudaSuccess, "an unregistered function launched");
	CK(cudaStreamSynchronize(s)); /* ends any run a profiler began before the error */
	unsigned long p0 = ddlemu_peek_calls();
	for (int i = 0; i < 4000; i++)
		CK(ddk_compute(s, 1000, buf));
	unsigned long peeks = ddlemu_peek_calls() - p0;
	cudaError_t last = cudaGetLastError();
	EXPECT(last == bad, "the pending error read as %d, launched as %d", (int)last, (int)bad);
	CK(cudaStreamSynchronize(s));
	for (int i = 0; i < 3; i++)
		CK(ddk_compute(s, 2 * MS, buf));
	CK(cudaStreamSynchronize(s));
	EXPECT(cudaGetLastError() == cudaSuccess, "an error after the 2 ms kernels");
	/* the hidden kernel, first with an error pending (a profiler may not ask
	 * the runtime its name then), then twice after the error was read */
	t_register_hidden();
	EXPECT(cudaLaunchKernel(&not_a_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, NULL, 0, s) == bad,
	       "the unregistered function again");
	for (int i = 0; i < 3; i++) {
		CK(cudaLaunchKernel(t_hidden_fn(), (dim3){3, 1, 1}, (dim3){32, 1, 1}, NULL, 0, s));
		if (i == 0)
			EXPECT(cudaGetLastError() == bad, "the pending error was lost");
	}
	CK(cudaStreamSynchronize(s));
	printf("pending_peeks %lu\nerror %d\n", peeks, (int)bad);
	CK(cudaFree(buf));
	CK(cudaStreamDestroy(s));
}

/*
 * For the CUPTI back end's correlation (tests/cupti): 20 kernels of 2 ms
 * queued at once on one stream (the last waits about 38 ms to start), 4
 * driver launches each run alone, one launch that fails, and 2 launches
 * through the emulation's own entry point, past any wrapper (as a
 * statically linked runtime's would be).
 */
static void mode_cupti(void)
{
	CK(cudaSetDevice(1));
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	float *buf;
	CK(cudaMalloc((void **)&buf, ddk_scratch_floats() * sizeof *buf));
	for (int i = 0; i < 20; i++)
		CK(ddk_compute(s, 2 * MS, buf));
	CK(cudaStreamSynchronize(s));
	t_register();
	int iv = 1;
	double dv = 0.5;
	void *args[] = {&iv, &dv};
	CUfunction f = (CUfunction)t_args_fn();
	for (int i = 0; i < 4; i++) {
		EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, (CUstream)s, args, NULL) == CUDA_SUCCESS, "cuLaunchKernel");
		CK(cudaStreamSynchronize(s));
	}
	static int not_a_kernel;
	cudaError_t bad = cudaLaunchKernel(&not_a_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, NULL, 0, s);
	cudaGetLastError();
	void *emu = dlopen("libddlemu.so", RTLD_LAZY | RTLD_NOLOAD);
	__typeof__(cudaLaunchKernel) *direct = emu ? (__typeof__(cudaLaunchKernel) *)dlsym(emu, "cudaLaunchKernel") : NULL;
	EXPECT(direct != NULL, "the emulation's own cudaLaunchKernel: %s", dlerror());
	for (int i = 0; i < 2; i++)
		CK(direct(t_args_fn(), (dim3){1, 1, 1}, (dim3){32, 1, 1}, args, 0, s));
	CK(cudaStreamSynchronize(s));
	EXPECT(seen_calls == 6, "%d of 6 test kernels ran", seen_calls);
	printf("launches 20 4 2\nfailed %d\n", (int)bad);
	CK(cudaFree(buf));
	CK(cudaStreamDestroy(s));
}

/*
 * Signals arriving during the CUDA and NCCL calls a profiler wraps: a
 * 100 us interval timer whose handler is installed without SA_RESTART
 * interrupts launches, copies, memsets, stream, event and device syncs and
 * NCCL collectives, for 300 rounds. Every result is checked; the output
 * does not depend on how many signals came.
 */
static volatile sig_atomic_t ticks;
static void on_tick(int sig)
{
	(void)sig;
	ticks++;
}

static void mode_signals(void)
{
	enum { N = 2, ROUNDS = 300, CNT = 4096 };
	struct sigaction sa = {0};
	sa.sa_handler = on_tick; /* no SA_RESTART */
	sigemptyset(&sa.sa_mask);
	EXPECT(sigaction(SIGALRM, &sa, NULL) == 0, "sigaction");
	ncclComm_t c[N];
	cudaStream_t s[N];
	cudaEvent_t ev[N];
	float *x[N], *scratch[N];
	NK(ncclCommInitAll(c, N, NULL));
	for (int i = 0; i < N; i++) {
		CK(cudaSetDevice(i));
		CK(cudaStreamCreate(&s[i]));
		CK(cudaEventCreate(&ev[i]));
		CK(cudaMalloc((void **)&scratch[i], ddk_scratch_floats() * sizeof(float)));
		x[i] = dmalloc(CNT * sizeof(float));
	}
	struct itimerval it = {{0, 100}, {0, 100}};
	EXPECT(setitimer(ITIMER_REAL, &it, NULL) == 0, "setitimer");
	float h[CNT], back[CNT];
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < N; i++) {
			CK(cudaSetDevice(i));
			for (int k = 0; k < CNT; k++)
				h[k] = (float)(r + i);
			CK(cudaMemcpy(x[i], h, sizeof h, cudaMemcpyHostToDevice));
			CK(ddk_compute(s[i], 20000, scratch[i]));
			CK(cudaEventRecord(ev[i], s[i]));
			CK(cudaEventSynchronize(ev[i]));
		}
		NK(ncclGroupStart());
		for (int i = 0; i < N; i++)
			NK(ncclAllReduce(x[i], x[i], CNT, ncclFloat, ncclSum, c[i], s[i]));
		NK(ncclGroupEnd());
		for (int i = 0; i < N; i++) {
			CK(cudaSetDevice(i));
			CK(cudaStreamSynchronize(s[i]));
			CK(cudaMemcpyAsync(back, x[i], sizeof back, cudaMemcpyDeviceToHost, s[i]));
			CK(cudaStreamSynchronize(s[i]));
			EXPECT(back[0] == (float)(2 * r + 1) && back[CNT - 1] == (float)(2 * r + 1),
			       "round %d device %d: %g, want %d", r, i, (double)back[0], 2 * r + 1);
			CK(cudaMemsetAsync(x[i], 0, sizeof h, s[i]));
		}
		CK(cudaDeviceSynchronize());
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	EXPECT(ticks > 0, "no signal arrived");
	for (int i = 0; i < N; i++) {
		NK(ncclCommDestroy(c[i]));
		CK(cudaSetDevice(i));
		CK(cudaStreamDestroy(s[i]));
		CK(cudaEventDestroy(ev[i]));
	}
	printf("rounds %d\n", ROUNDS);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	mode = argc > 1 ? argv[1] : "?";
	if (!strcmp(mode, "kernel"))
		mode_kernel();
	else if (!strcmp(mode, "streams"))
		mode_streams();
	else if (!strcmp(mode, "memcpy"))
		mode_memcpy();
	else if (!strcmp(mode, "errors"))
		mode_errors();
	else if (!strcmp(mode, "nccl") && argc == 6)
		mode_nccl(atoi(argv[2]), atoi(argv[3]), argv[4], atoi(argv[5]));
	else if (!strcmp(mode, "initall"))
		mode_initall();
	else if (!strcmp(mode, "launches"))
		mode_launches();
	else if (!strcmp(mode, "cupti"))
		mode_cupti();
	else if (!strcmp(mode, "pending"))
		mode_pending();
	else if (!strcmp(mode, "signals"))
		mode_signals();
	else if (!strcmp(mode, "peerdeath") && argc == 4)
		mode_peerdeath(atoi(argv[2]), argv[3]);
	else
		fail("usage: emu_check kernel|streams|memcpy|errors|initall|launches|cupti|pending|signals|nccl RANK N DIR COLOR|peerdeath RANK DIR");
	printf("ok\n");
	return 0;
}
