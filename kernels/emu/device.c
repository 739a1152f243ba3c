/*
 * Emulated devices: DDLEMU_DEVICES of them (default 8), all named "ddlemu",
 * with the figures of an H100-class part so that programs sizing their
 * launches from the properties make sensible choices. The current device
 * is per thread, as in the runtime; peer access is bookkeeping only (every
 * emulated device can reach every other).
 */
#include <stdio.h>
#include <string.h>

#include "emu.h"

#define EMU_SMS 132
#define EMU_MEM_BYTES (80ull << 30)

static __thread int emu_cur;
static pthread_mutex_t emu_peer_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t emu_peer_on[EMU_MAX_DEVICES]; /* bit p of [d]: d may access p */
static unsigned emu_dev_flags;

int emu_device_current(void)
{
	return emu_cur;
}

void emu_device_set_current(int dev)
{
	emu_cur = dev;
}

int emu_device_valid(int dev)
{
	emu_init();
	return dev >= 0 && dev < emu_cfg.devices;
}

cudaError_t cudaGetDeviceCount(int *count)
{
	emu_init();
	if (!count)
		return emu_err(cudaErrorInvalidValue);
	*count = emu_cfg.devices;
	return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
	if (!emu_device_valid(device))
		return emu_err(cudaErrorInvalidDevice);
	if (emu_forked)
		return emu_err(cudaErrorInitializationError);
	emu_cur = device;
	return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
	if (!device)
		return emu_err(cudaErrorInvalidValue);
	*device = emu_cur;
	return cudaSuccess;
}

cudaError_t cudaSetDeviceFlags(unsigned int flags)
{
	emu_dev_flags = flags;
	return cudaSuccess;
}

cudaError_t cudaGetDeviceFlags(unsigned int *flags)
{
	if (!flags)
		return emu_err(cudaErrorInvalidValue);
	*flags = emu_dev_flags;
	return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
	if (!prop)
		return emu_err(cudaErrorInvalidValue);
	if (!emu_device_valid(device))
		return emu_err(cudaErrorInvalidDevice);
	memset(prop, 0, sizeof *prop);
	snprintf(prop->name, sizeof prop->name, "ddlemu");
	prop->uuid.bytes[0] = (char)device;
	prop->totalGlobalMem = EMU_MEM_BYTES;
	prop->sharedMemPerBlock = 48 << 10;
	prop->sharedMemPerBlockOptin = 227 << 10;
	prop->sharedMemPerMultiprocessor = 228 << 10;
	prop->regsPerBlock = 65536;
	prop->regsPerMultiprocessor = 65536;
	prop->warpSize = 32;
	prop->memPitch = 1ul << 31;
	prop->maxThreadsPerBlock = 1024;
	prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
	prop->maxThreadsDim[2] = 64;
	prop->maxGridSize[0] = 0x7fffffff;
	prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
	prop->totalConstMem = 64 << 10;
	prop->major = 9;
	prop->minor = 0;
	prop->textureAlignment = 512;
	prop->multiProcessorCount = EMU_SMS;
	prop->maxThreadsPerMultiProcessor = 2048;
	prop->maxBlocksPerMultiProcessor = 32;
	prop->concurrentKernels = 1;
	prop->asyncEngineCount = 2;
	prop->unifiedAddressing = 1;
	prop->memoryBusWidth = 5120;
	prop->l2CacheSize = 50 << 20;
	prop->streamPrioritiesSupported = 1;
	prop->managedMemory = 0;
	prop->cooperativeLaunch = 1;
	prop->memoryPoolsSupported = 1;
	prop->pciBusID = device + 1;
	prop->hostNumaId = -1;
	return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
	if (!value)
		return emu_err(cudaErrorInvalidValue);
	if (!emu_device_valid(device))
		return emu_err(cudaErrorInvalidDevice);
	switch (attr) {
	case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
	case cudaDevAttrMaxBlockDimX: case cudaDevAttrMaxBlockDimY: *value = 1024; break;
	case cudaDevAttrMaxBlockDimZ: *value = 64; break;
	case cudaDevAttrMaxGridDimX: *value = 0x7fffffff; break;
	case cudaDevAttrMaxGridDimY: case cudaDevAttrMaxGridDimZ: *value = 65535; break;
	case cudaDevAttrMaxSharedMemoryPerBlock: *value = 48 << 10; break;
	case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = 227 << 10; break;
	case cudaDevAttrWarpSize: *value = 32; break;
	case cudaDevAttrMultiProcessorCount: *value = EMU_SMS; break;
	case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
	case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
	case cudaDevAttrMaxThreadsPerMultiProcessor: *value = 2048; break;
	case cudaDevAttrConcurrentKernels: *value = 1; break;
	case cudaDevAttrUnifiedAddressing: *value = 1; break;
	case cudaDevAttrCooperativeLaunch: *value = 1; break;
	case cudaDevAttrMemoryPoolsSupported: *value = 1; break;
	case cudaDevAttrPciBusId: *value = device + 1; break;
	default: return emu_err(cudaErrorNotSupported);
	}
	return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	if (leastPriority)
		*leastPriority = 0;
	if (greatestPriority)
		*greatestPriority = -5;
	return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
	if (!runtimeVersion)
		return emu_err(cudaErrorInvalidValue);
	*runtimeVersion = CUDART_VERSION;
	return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return emu_err(cudaErrorInvalidValue);
	*driverVersion = CUDART_VERSION;
	return cudaSuccess;
}

/*
 * Calls inside the library never go to another exported name (a profiler
 * interposing on both would see one call twice): shared bodies are static.
 */
static cudaError_t emu_device_synchronize(void)
{
	if (emu_forked)
		return emu_err(cudaErrorInitializationError);
	emu_device_sync(emu_cur);
	return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
	return emu_device_synchronize();
}

/* The emulation keeps allocations across a reset; it only drains the device. */
cudaError_t cudaDeviceReset(void)
{
	return emu_device_synchronize();
}

cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice)
{
	if (!canAccessPeer)
		return emu_err(cudaErrorInvalidValue);
	if (!emu_device_valid(device) || !emu_device_valid(peerDevice))
		return emu_err(cudaErrorInvalidDevice);
	*canAccessPeer = device != peerDevice;
	return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags)
{
	if (flags)
		return emu_err(cudaErrorInvalidValue);
	if (!emu_device_valid(peerDevice) || peerDevice == emu_cur)
		return emu_err(cudaErrorInvalidDevice);
	pthread_mutex_lock(&emu_peer_mu);
	int was = (int)(emu_peer_on[emu_cur] >> peerDevice & 1);
	emu_peer_on[emu_cur] |= 1ull << peerDevice;
	pthread_mutex_unlock(&emu_peer_mu);
	return was ? emu_err(cudaErrorPeerAccessAlreadyEnabled) : cudaSuccess;
}

cudaError_t cudaDeviceDisablePeerAccess(int peerDevice)
{
	if (!emu_device_valid(peerDevice))
		return emu_err(cudaErrorInvalidDevice);
	pthread_mutex_lock(&emu_peer_mu);
	int was = (int)(emu_peer_on[emu_cur] >> peerDevice & 1);
	emu_peer_on[emu_cur] &= ~(1ull << peerDevice);
	pthread_mutex_unlock(&emu_peer_mu);
	return was ? cudaSuccess : emu_err(cudaErrorPeerAccessNotEnabled);
}
