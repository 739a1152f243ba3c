/*
 * The CPU emulation's extensions to the CUDA runtime ABI: how an emulated
 * kernel's code and argument layout reach the emulator, and how the code
 * says how long the kernel takes on the emulated device.
 *
 * On a GPU, nvcc-generated code registers a module with
 * __cudaRegisterFatBinary(fatbin) and each kernel with
 * __cudaRegisterFunction(handle, hostStub, deviceFun, deviceName, ...); the
 * runtime reads the kernel's parameter layout from the fat binary. The
 * emulator keeps that exact call sequence (so a profiler interposing on it
 * learns kernel names the same way), with two conventions:
 *
 *   - the "fat binary" is a struct ddlemu_fatbin: for each kernel name, the
 *     number of parameters and the size of each, in order;
 *   - the "host stub" registered for a kernel is its device code: a host
 *     function void fn(void **args) that the stream's worker thread calls
 *     with one pointer per parameter, each pointing to a copy taken at
 *     launch (CUDA semantics: the caller may reuse its argument storage as
 *     soon as the launch call returns).
 *
 * A launch of a function registered without a layout (any other fat binary)
 * fails with cudaErrorInvalidDeviceFunction. The packed form of
 * cuLaunchKernel's `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER) is unpacked with
 * each parameter aligned to the smaller of its size and 8.
 */
#ifndef DDL_DDLEMU_H
#define DDL_DDLEMU_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DDLEMU_FATBIN_MAGIC 0x4d45444cu /* "LDEM" little-endian */
#define DDLEMU_FATBIN_VERSION 1         /* bump when struct ddlemu_fatbin changes */
#define DDLEMU_MAX_ARGS 16

struct ddlemu_kernel {
	const char *name; /* the deviceName passed to __cudaRegisterFunction */
	int nargs;
	size_t arg_size[DDLEMU_MAX_ARGS];
};

struct ddlemu_fatbin {
	uint32_t magic;   /* DDLEMU_FATBIN_MAGIC */
	uint32_t version; /* DDLEMU_FATBIN_VERSION */
	int nkernels;
	const struct ddlemu_kernel *kernels;
};

/* An emulated kernel's code; args[i] points to the copy of parameter i. */
typedef void (*ddlemu_kernel_fn)(void **args);

/*
 * Called by a kernel's code (on the stream's worker thread): the kernel
 * takes ns of device time from its start on the device, or the time its
 * code ran when that is longer. The emulator sleeps the rest once the code
 * returns, and the device start is when the stream reached the kernel, not
 * when the worker thread was scheduled, so kernels queued back to back end
 * on schedule. Code that never calls it takes the time it runs. Outside
 * kernel code it does nothing. (Not part of the real runtime: only the
 * emulated kernels call it.)
 */
void ddlemu_kernel_time(uint64_t ns);

/*
 * How many times the calling thread has called cudaPeekAtLastError: lets a
 * test see how often a profiler asks (not part of the real runtime).
 */
unsigned long ddlemu_peek_calls(void);

/*
 * Activity records: the emulation's side of what CUPTI gets from the CUDA
 * driver, so that a CUPTI consumer can be tested without a GPU
 * (tests/cupti/fakecupti.c). With a hook set, every kernel launch call
 * gives an API record when it returns, and every kernel a device record
 * when it ends on its stream; the two carry the same correlation id, as
 * CUPTI's runtime or driver record and kernel record do. Times are
 * CLOCK_MONOTONIC nanoseconds. The hook runs on the launching thread (API)
 * or the stream's worker (kernel); NULL removes it.
 */
enum { DDLEMU_ACT_API = 1, DDLEMU_ACT_KERNEL = 2 };

struct ddlemu_activity {
	int kind;      /* DDLEMU_ACT_* */
	uint32_t corr; /* from 1, one per launch call */
	uint64_t start, end;
	/* API records */
	const char *api; /* "cudaLaunchKernel", "cuLaunchKernel", ... */
	int driver;      /* a driver API call */
	int result;      /* what the call returned */
	uint32_t tid;    /* the calling thread (gettid) */
	uint32_t self;   /* ... and its pthread_self(), cut to 32 bits */
	/* kernel records */
	const char *name; /* the registered device name */
	int dev;
	uint32_t stream; /* the stream's number in the emulation, from 1 */
	unsigned grid[3], block[3];
};

typedef void (*ddlemu_activity_fn)(const struct ddlemu_activity *a);
void ddlemu_activity_hook(ddlemu_activity_fn fn);

/*
 * The registration entry points of the CUDA runtime, with the prototypes of
 * crt/host_runtime.h (a C++ header, hence repeated here). libddlemu exports
 * them; on a GPU, libcudart does.
 */
void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
void __cudaUnregisterFatBinary(void **fatCubinHandle);
void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                            const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
                            dim3 *bDim, dim3 *gDim, int *wSize);

#ifdef __cplusplus
}
#endif
#endif
