/*
 * The device work of the examples on a real GPU (built with nvcc into
 * ddlsynth-gpu; kernels.h is the interface, emu_kernels.c the same calls on
 * the CPU emulation). Both kernels run for a planned time measured on the
 * GPU's own clock (%globaltimer, nanoseconds) from the moment each block
 * starts; the host functions launch one block per multiprocessor (four for
 * the memory kernel), few enough that every block is resident at once, so
 * the kernel takes its planned time. Launches go through cudaLaunchKernel,
 * as the profiler expects.
 */
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels.h"

#define DDK_TILE 16
#define DDK_THREADS (DDK_TILE * DDK_TILE)
#define DDK_ACC 8
#define DDK_SCRATCH_FLOATS (1u << 20)
#define DDK_MAX_DEVICES 64

static __device__ __forceinline__ uint64_t ddk_globaltimer(void)
{
	uint64_t t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/*
 * GEMM-like and compute-bound: each block keeps a pair of 16x16 tiles in
 * shared memory and each thread multiplies a row of one by columns of the
 * other into DDK_ACC independent register accumulators (independent, so
 * the FMA pipelines stay full), over and over, reading the clock only
 * between batches. Each thread's result goes to scratch, which keeps the
 * work from being optimised away.
 */
extern "C" __global__ void ddk_compute_kernel(uint64_t ns, float *scratch)
{
	__shared__ float a[DDK_TILE][DDK_TILE + 1], b[DDK_TILE][DDK_TILE + 1];
	uint64_t start = ddk_globaltimer();
	int tx = threadIdx.x % DDK_TILE, ty = (threadIdx.x / DDK_TILE) % DDK_TILE;
	a[ty][tx] = 1.0f + 1e-3f * (float)(tx - ty);
	b[ty][tx] = 0.5f - 1e-3f * (float)(tx + ty);
	__syncthreads();
	float acc[DDK_ACC];
#pragma unroll
	for (int j = 0; j < DDK_ACC; j++)
		acc[j] = 0.0f;
	do {
		for (int r = 0; r < 16; r++) {
#pragma unroll
			for (int k = 0; k < DDK_TILE; k++) {
				float av = a[ty][k];
#pragma unroll
				for (int j = 0; j < DDK_ACC; j++)
					acc[j] = fmaf(av, b[k][(tx + j) % DDK_TILE], acc[j]);
			}
		}
	} while (ddk_globaltimer() - start < ns);
	float sum = 0.0f;
#pragma unroll
	for (int j = 0; j < DDK_ACC; j++)
		sum += acc[j];
	scratch[((size_t)blockIdx.x * blockDim.x + threadIdx.x) % DDK_SCRATCH_FLOATS] = sum;
}

/* Memory-bound: a grid-stride axpy, repeated until ns have passed (at least once). */
extern "C" __global__ void ddk_memory_kernel(float *dst, const float *src, size_t n, float a, uint64_t ns)
{
	uint64_t start = ddk_globaltimer();
	size_t stride = (size_t)gridDim.x * blockDim.x;
	do {
		for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
			dst[i] = a * src[i] + dst[i];
	} while (ddk_globaltimer() - start < ns);
}

/* Multiprocessors of the current device, asked once per device. */
static int ddk_sms(void)
{
	static int sms_of[DDK_MAX_DEVICES];
	int dev = 0, sms = 0;
	cudaGetDevice(&dev);
	if (dev >= 0 && dev < DDK_MAX_DEVICES)
		sms = __atomic_load_n(&sms_of[dev], __ATOMIC_RELAXED);
	if (!sms) {
		if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms < 1)
			sms = 1;
		if (dev >= 0 && dev < DDK_MAX_DEVICES)
			__atomic_store_n(&sms_of[dev], sms, __ATOMIC_RELAXED);
	}
	return sms;
}

size_t ddk_scratch_floats(void)
{
	return DDK_SCRATCH_FLOATS;
}

cudaError_t ddk_compute(cudaStream_t s, uint64_t ns, float *scratch)
{
	void *args[] = {&ns, &scratch};
	return cudaLaunchKernel((const void *)ddk_compute_kernel, dim3(ddk_sms()), dim3(DDK_THREADS), args, 0, s);
}

cudaError_t ddk_memory(cudaStream_t s, float *dst, const float *src, size_t n, uint64_t ns)
{
	float a = DDK_AXPY_A;
	void *args[] = {&dst, &src, &n, &a, &ns};
	return cudaLaunchKernel((const void *)ddk_memory_kernel, dim3(4 * ddk_sms()), dim3(DDK_THREADS), args, 0, s);
}

/*
 * Every GPU copies to the next around the ring at once, on its own stream,
 * with peer access enabled where the hardware allows (otherwise the copy
 * is staged through the host, and the figure shows it). One copy per link
 * warms up; events time the reps that follow.
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
