/*
 * The kernels.h API on the CPU emulation (libddlemu). The kernels' "device
 * code" is host code run by the stream's worker thread; it is registered at
 * load time exactly as nvcc-generated code registers real kernels
 * (__cudaRegisterFatBinary, then __cudaRegisterFunction with the kernel
 * names DDK_COMPUTE_NAME and DDK_MEMORY_NAME), so a profiler interposing on
 * the registration learns the names as it would on a GPU, and every launch
 * goes through cudaLaunchKernel. Argument convention (kernels/ddlemu.h):
 * the fat binary lists each kernel's parameter sizes, in the order of the
 * real kernels' parameters in kernels.cu, and the code receives one pointer
 * per parameter.
 *
 * Timing: a kernel takes its planned device time, which it tells the
 * emulator with ddlemu_kernel_time (kernels/ddlemu.h): the compute kernel
 * does nothing else; the memory kernel does its axpy over the buffers once
 * (really) first. The emulator sleeps until the kernel's device start +
 * ns, never spinning (on the emulation several ranks share a few cores),
 * and starts the next kernel of the stream from that end.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "ddlemu.h"
#include "kernels.h"

#define DDK_THREADS 256
#define DDK_SCRATCH_FLOATS (1u << 20)
#define DDK_MAX_DEVICES 64

/* ddk_compute_kernel(uint64_t ns, float *scratch) */
static void ddk_compute_code(void **args)
{
	ddlemu_kernel_time(*(uint64_t *)args[0]);
}

/* ddk_memory_kernel(float *dst, const float *src, size_t n, float a, uint64_t ns) */
static void ddk_memory_code(void **args)
{
	float *dst = *(float **)args[0];
	const float *src = *(const float **)args[1];
	size_t n = *(size_t *)args[2];
	float a = *(float *)args[3];
	uint64_t ns = *(uint64_t *)args[4];
	for (size_t i = 0; i < n; i++)
		dst[i] = a * src[i] + dst[i];
	ddlemu_kernel_time(ns);
}

static const struct ddlemu_kernel ddk_kernels[] = {
	{DDK_COMPUTE_NAME, 2, {sizeof(uint64_t), sizeof(float *)}},
	{DDK_MEMORY_NAME, 5, {sizeof(float *), sizeof(const float *), sizeof(size_t), sizeof(float), sizeof(uint64_t)}},
};

static const struct ddlemu_fatbin ddk_fatbin = {
	DDLEMU_FATBIN_MAGIC, DDLEMU_FATBIN_VERSION, sizeof ddk_kernels / sizeof ddk_kernels[0], ddk_kernels,
};

/* The host functions are registered by address, as nvcc's stubs are. */
static const char *ddk_host(ddlemu_kernel_fn fn)
{
	union {
		ddlemu_kernel_fn fn;
		const char *p;
	} u = {.fn = fn};
	return u.p;
}

__attribute__((constructor)) static void ddk_register(void)
{
	void **h = __cudaRegisterFatBinary((void *)&ddk_fatbin);
	__cudaRegisterFunction(h, ddk_host(ddk_compute_code), (char *)DDK_COMPUTE_NAME, DDK_COMPUTE_NAME, -1,
	                       NULL, NULL, NULL, NULL, NULL);
	__cudaRegisterFunction(h, ddk_host(ddk_memory_code), (char *)DDK_MEMORY_NAME, DDK_MEMORY_NAME, -1, NULL,
	                       NULL, NULL, NULL, NULL);
	__cudaRegisterFatBinaryEnd(h);
}

/* As many blocks as the device has multiprocessors, so all run at once (asked once per device). */
static dim3 ddk_grid(void)
{
	static _Atomic int sms_of[DDK_MAX_DEVICES];
	int dev = 0, sms = 0;
	cudaGetDevice(&dev);
	if (dev >= 0 && dev < DDK_MAX_DEVICES)
		sms = atomic_load(&sms_of[dev]);
	if (!sms) {
		if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms < 1)
			sms = 1;
		if (dev >= 0 && dev < DDK_MAX_DEVICES)
			atomic_store(&sms_of[dev], sms);
	}
	return (dim3){(unsigned)sms, 1, 1};
}

size_t ddk_scratch_floats(void)
{
	return DDK_SCRATCH_FLOATS;
}

cudaError_t ddk_compute(cudaStream_t s, uint64_t ns, float *scratch)
{
	void *args[] = {&ns, &scratch};
	return cudaLaunchKernel(ddk_host(ddk_compute_code), ddk_grid(), (dim3){DDK_THREADS, 1, 1}, args, 0, s);
}

cudaError_t ddk_memory(cudaStream_t s, float *dst, const float *src, size_t n, uint64_t ns)
{
	float a = DDK_AXPY_A;
	void *args[] = {&dst, &src, &n, &a, &ns};
	return cudaLaunchKernel(ddk_host(ddk_memory_code), ddk_grid(), (dim3){DDK_THREADS, 1, 1}, args, 0, s);
}

/*
 * The same measurement as kernels.cu makes on GPUs, on the emulated copies
 * (which take bytes / DDLEMU_P2P_GBPS between two devices).
 */
cudaError_t ddk_p2p_ring(int ndev, size_t bytes, int reps, double *gbps)
{
	int ndevs = 0, cur = 0;
	cudaError_t e = cudaGetDeviceCount(&ndevs);
	if (e)
		return e;
	if (ndev < 1 || ndev > ndevs || ndev > DDK_MAX_DEVICES || bytes == 0 || reps < 1 || !gbps)
		return cudaErrorInvalidValue;
	cudaGetDevice(&cur);
	void *src[DDK_MAX_DEVICES] = {0}, *dst[DDK_MAX_DEVICES] = {0};
	cudaStream_t st[DDK_MAX_DEVICES] = {0};
	cudaEvent_t t0[DDK_MAX_DEVICES] = {0}, t1[DDK_MAX_DEVICES] = {0};
	for (int i = 0; i < ndev && !e; i++) {
		int next = (i + 1) % ndev, can = 0;
		e = cudaSetDevice(i);
		if (!e)
			e = cudaMalloc(&src[i], bytes);
		if (!e)
			e = cudaMalloc(&dst[i], bytes);
		if (!e)
			e = cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking);
		if (!e)
			e = cudaEventCreate(&t0[i]);
		if (!e)
			e = cudaEventCreate(&t1[i]);
		if (!e && next != i && cudaDeviceCanAccessPeer(&can, i, next) == cudaSuccess && can) {
			e = cudaDeviceEnablePeerAccess(next, 0);
			if (e == cudaErrorPeerAccessAlreadyEnabled) {
				cudaGetLastError();
				e = cudaSuccess;
			}
		}
	}
	/* one copy per link to warm up, then reps timed copies on every link at once */
	for (int r = -1; r < reps && !e; r++)
		for (int i = 0; i < ndev && !e; i++) {
			int next = (i + 1) % ndev;
			if (r == 0)
				e = cudaEventRecord(t0[i], st[i]);
			if (!e)
				e = cudaMemcpyPeerAsync(dst[next], next, src[i], i, bytes, st[i]);
			if (!e && r == reps - 1)
				e = cudaEventRecord(t1[i], st[i]);
		}
	double sum = 0;
	for (int i = 0; i < ndev && !e; i++) {
		float ms = 0;
		e = cudaEventSynchronize(t1[i]);
		if (!e)
			e = cudaEventElapsedTime(&ms, t0[i], t1[i]);
		sum += ms > 0 ? (double)bytes * reps / (ms * 1e-3) / 1e9 : 0;
	}
	if (!e)
		*gbps = sum / ndev;
	for (int i = 0; i < ndev; i++) {
		cudaSetDevice(i);
		if (st[i])
			cudaStreamSynchronize(st[i]);
		cudaFree(src[i]);
		cudaFree(dst[i]);
		if (st[i])
			cudaStreamDestroy(st[i]);
		if (t0[i])
			cudaEventDestroy(t0[i]);
		if (t1[i])
			cudaEventDestroy(t1[i]);
	}
	cudaSetDevice(cur);
	return e;
}
