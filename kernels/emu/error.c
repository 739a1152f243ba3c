/*
 * CUDA runtime errors on the emulation: the per-thread last error that
 * cudaGetLastError returns and clears, and the names and messages of the
 * codes (the messages are those of libcudart).
 */
#include "emu.h"

static __thread cudaError_t emu_last;

cudaError_t emu_err(cudaError_t e)
{
	if (e != cudaSuccess)
		emu_last = e;
	return e;
}

cudaError_t cudaGetLastError(void)
{
	cudaError_t e = emu_last;
	emu_last = cudaSuccess;
	return e;
}

static __thread unsigned long emu_peeks;

cudaError_t cudaPeekAtLastError(void)
{
	emu_peeks++;
	return emu_last;
}

unsigned long ddlemu_peek_calls(void)
{
	return emu_peeks;
}

#define EMU_ERRORS(X) \
	X(cudaSuccess, "no error") \
	X(cudaErrorInvalidValue, "invalid argument") \
	X(cudaErrorMemoryAllocation, "out of memory") \
	X(cudaErrorInitializationError, "initialization error") \
	X(cudaErrorCudartUnloading, "driver shutting down") \
	X(cudaErrorInvalidConfiguration, "invalid configuration argument") \
	X(cudaErrorInvalidPitchValue, "invalid pitch argument") \
	X(cudaErrorInvalidSymbol, "invalid device symbol") \
	X(cudaErrorInvalidHostPointer, "invalid host pointer") \
	X(cudaErrorInvalidDevicePointer, "invalid device pointer") \
	X(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy") \
	X(cudaErrorMissingConfiguration, "__global__ function call is not configured") \
	X(cudaErrorInvalidDeviceFunction, "invalid device function") \
	X(cudaErrorNoDevice, "no CUDA-capable device is detected") \
	X(cudaErrorInvalidDevice, "invalid device ordinal") \
	X(cudaErrorStartupFailure, "device kernel image is invalid") \
	X(cudaErrorInvalidKernelImage, "device kernel image is invalid") \
	X(cudaErrorNoKernelImageForDevice, "no kernel image is available for execution on the device") \
	X(cudaErrorPeerAccessUnsupported, "peer access is not supported between these two devices") \
	X(cudaErrorOperatingSystem, "OS call failed or operation not supported on this OS") \
	X(cudaErrorInvalidResourceHandle, "invalid resource handle") \
	X(cudaErrorIllegalState, "the operation cannot be performed in the present state") \
	X(cudaErrorSymbolNotFound, "named symbol not found") \
	X(cudaErrorNotReady, "device not ready") \
	X(cudaErrorIllegalAddress, "an illegal memory access was encountered") \
	X(cudaErrorLaunchOutOfResources, "too many resources requested for launch") \
	X(cudaErrorLaunchTimeout, "the launch timed out and was terminated") \
	X(cudaErrorPeerAccessAlreadyEnabled, "peer access is already enabled") \
	X(cudaErrorPeerAccessNotEnabled, "peer access has not been enabled") \
	X(cudaErrorSetOnActiveProcess, "cannot set while device is active in this process") \
	X(cudaErrorContextIsDestroyed, "context is destroyed") \
	X(cudaErrorHostMemoryAlreadyRegistered, "part or all of the requested memory range is already mapped") \
	X(cudaErrorHostMemoryNotRegistered, "pointer does not correspond to a registered memory region") \
	X(cudaErrorLaunchFailure, "unspecified launch failure") \
	X(cudaErrorCooperativeLaunchTooLarge, "too many blocks in cooperative launch") \
	X(cudaErrorNotPermitted, "operation not permitted") \
	X(cudaErrorNotSupported, "operation not supported") \
	X(cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing") \
	X(cudaErrorTimeout, "wait operation timed out") \
	X(cudaErrorUnknown, "unknown error")

static const struct {
	cudaError_t code;
	const char *name, *msg;
} emu_errors[] = {
#define EMU_X(c, m) {c, #c, m},
	EMU_ERRORS(EMU_X)
#undef EMU_X
};

static int emu_err_find(cudaError_t e)
{
	for (size_t i = 0; i < sizeof emu_errors / sizeof emu_errors[0]; i++)
		if (emu_errors[i].code == e)
			return (int)i;
	return -1;
}

const char *cudaGetErrorString(cudaError_t error)
{
	int i = emu_err_find(error);
	return i < 0 ? "unrecognized error code" : emu_errors[i].msg;
}

const char *cudaGetErrorName(cudaError_t error)
{
	int i = emu_err_find(error);
	return i < 0 ? "unrecognized error code" : emu_errors[i].name;
}
