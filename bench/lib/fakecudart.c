/* A CUDA runtime whose kernel launch does nothing: the launch benchmark
 * measures the preload library's wrapper against it, not the runtime. */
#include <cuda_runtime_api.h>

__attribute__((visibility("default"), noinline)) cudaError_t
cudaLaunchKernel(const void *func, dim3 g, dim3 b, void **args, size_t shm, cudaStream_t s)
{
	__asm__ __volatile__("" : : "r"(func), "r"(args), "r"(s), "r"(shm), "r"(g.x), "r"(b.x) : "memory");
	return cudaSuccess;
}
