/*
 * Device work of the examples, one interface for two builds:
 *   kernels.cu     real CUDA kernels, compiled by nvcc, linked with the
 *                  CUDA runtime and NCCL (build/examples/ddlsynth-gpu);
 *   emu_kernels.c  the same calls on the CPU emulation of the CUDA runtime
 *                  (kernels/emu, build/lib/libddlemu.so).
 * Every call launches through cudaLaunchKernel, so the preload library sees
 * a kernel launch, with the kernel's registered name, in both builds.
 */
#ifndef DDL_KERNELS_H
#define DDL_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Compute-bound (GEMM-like: a tile of multiply-adds kept in registers and
 * shared memory) for ns nanoseconds of device time, then stops. scratch
 * holds at least ddk_scratch_floats() floats of device memory.
 */
cudaError_t ddk_compute(cudaStream_t s, uint64_t ns, float *scratch);
size_t ddk_scratch_floats(void);

/*
 * Memory-bound: dst[i] = a * src[i] + dst[i] over n floats, repeated until
 * ns nanoseconds of device time have passed (at least once); a is
 * DDK_AXPY_A.
 */
cudaError_t ddk_memory(cudaStream_t s, float *dst, const float *src, size_t n, uint64_t ns);

/*
 * Interconnect bandwidth: copies bytes from each GPU to the next around a
 * ring of ndev GPUs (cudaMemcpyPeerAsync), reps times, and returns the
 * per-link bandwidth in GB/s through gbps. Returns the first CUDA error.
 * gbps is one number: the mean over the ndev links (all copying at once)
 * of bytes * reps / time, in 1e9 bytes per second.
 */
cudaError_t ddk_p2p_ring(int ndev, size_t bytes, int reps, double *gbps);

#define DDK_AXPY_A 0.5f

/* The kernel names as the profiler should report them (for tests). */
#define DDK_COMPUTE_NAME "ddk_compute_kernel"
#define DDK_MEMORY_NAME  "ddk_memory_kernel"

#ifdef __cplusplus
}
#endif
#endif
