/*
 * A CUDA runtime whose kernel launch does nothing: the launch benchmark
 * measures the preload library's wrapper against it, not the runtime. The
 * few calls the library's event-pair back end makes are here too, so the
 * library runs in its steady state (a run of launches open on the stream)
 * as on a real runtime; events never complete.
 */
#include <string.h>

#include <cuda_runtime_api.h>

#define FAKE __attribute__((visibility("default"), noinline))

FAKE cudaError_t cudaLaunchKernel(const void *func, dim3 g, dim3 b, void **args, size_t shm,
                                  cudaStream_t s)
{
	__asm__ __volatile__("" : : "r"(func), "r"(args), "r"(s), "r"(shm), "r"(g.x), "r"(b.x) : "memory");
	return cudaSuccess;
}

static char fake_obj[64];

FAKE cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int f)
{
	(void)f;
	*e = (cudaEvent_t)(void *)fake_obj;
	return cudaSuccess;
}
FAKE cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { (void)e; (void)s; return cudaSuccess; }
FAKE cudaError_t cudaEventQuery(cudaEvent_t e) { (void)e; return cudaErrorNotReady; }
FAKE cudaError_t cudaEventSynchronize(cudaEvent_t e) { (void)e; return cudaSuccess; }
FAKE cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
	(void)a;
	(void)b;
	*ms = 0;
	return cudaSuccess;
}
FAKE cudaError_t cudaEventDestroy(cudaEvent_t e) { (void)e; return cudaSuccess; }
FAKE cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int f)
{
	(void)f;
	*s = (cudaStream_t)(void *)(fake_obj + 8);
	return cudaSuccess;
}
FAKE cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *c)
{
	(void)s;
	*c = cudaStreamCaptureStatusNone;
	return cudaSuccess;
}
FAKE cudaError_t cudaPeekAtLastError(void) { return cudaSuccess; }
FAKE cudaError_t cudaGetLastError(void) { return cudaSuccess; }
FAKE cudaError_t cudaSetDevice(int d) { (void)d; return cudaSuccess; }
FAKE cudaError_t cudaGetDevice(int *d) { *d = 0; return cudaSuccess; }
FAKE cudaError_t cudaGetDeviceCount(int *n) { *n = 1; return cudaSuccess; }
FAKE cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int d)
{
	(void)d;
	memset(p, 0, sizeof *p);
	strcpy(p->name, "fake");
	return cudaSuccess;
}
