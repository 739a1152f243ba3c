/*
 * Emulated device memory and copies. "Device" memory is host memory that
 * the emulator remembers (base, size, device) in a sorted table, so that
 * cudaMemcpyDefault, cudaPointerGetAttributes and the copy timing can tell
 * device from host pointers. Copies and memsets run on a stream's worker:
 * the bytes really move, then the op sleeps until it has taken its planned
 * time: bytes / DDLEMU_PCIE_GBPS between host and device, bytes /
 * DDLEMU_HBM_GBPS within one device, bytes / DDLEMU_P2P_GBPS between two
 * devices. cudaFree and cudaFreeHost wait for the device first, as the
 * runtime does, so no queued op touches freed memory. Device and pinned
 * memory come from mmap with every page present (MAP_POPULATE).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "emu.h"

#define EMU_MEM_LIMIT (80ull << 30)

struct emu_alloc {
	uintptr_t base;
	size_t size;
	int dev; /* -1 for pinned host memory */
	int kind;
};

static pthread_mutex_t emu_mem_mu = PTHREAD_MUTEX_INITIALIZER;
static struct emu_alloc *emu_allocs;
static size_t emu_nallocs, emu_capallocs;
static size_t emu_dev_bytes[EMU_MAX_DEVICES];

/* Index of the first allocation whose base is > p. Caller holds the lock. */
static size_t emu_mem_upper(uintptr_t p)
{
	size_t lo = 0, hi = emu_nallocs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (emu_allocs[mid].base <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int emu_mem_add(void *p, size_t size, int dev, int kind)
{
	pthread_mutex_lock(&emu_mem_mu);
	if (emu_nallocs == emu_capallocs) {
		size_t cap = emu_capallocs ? emu_capallocs * 2 : 64;
		struct emu_alloc *a = realloc(emu_allocs, cap * sizeof *a);
		if (!a) {
			pthread_mutex_unlock(&emu_mem_mu);
			return -1;
		}
		emu_allocs = a;
		emu_capallocs = cap;
	}
	size_t i = emu_mem_upper((uintptr_t)p);
	memmove(&emu_allocs[i + 1], &emu_allocs[i], (emu_nallocs - i) * sizeof *emu_allocs);
	emu_allocs[i] = (struct emu_alloc){(uintptr_t)p, size, dev, kind};
	emu_nallocs++;
	if (dev >= 0)
		emu_dev_bytes[dev] += size;
	pthread_mutex_unlock(&emu_mem_mu);
	return 0;
}

/* Finds the allocation containing p; 0 and *out, or -1. */
static int emu_mem_find(const void *p, struct emu_alloc *out)
{
	int found = -1;
	pthread_mutex_lock(&emu_mem_mu);
	size_t i = emu_mem_upper((uintptr_t)p);
	if (i > 0) {
		struct emu_alloc *a = &emu_allocs[i - 1];
		if ((uintptr_t)p - a->base < (a->size ? a->size : 1)) {
			*out = *a;
			found = 0;
		}
	}
	pthread_mutex_unlock(&emu_mem_mu);
	return found;
}

/* Forgets the allocation starting exactly at p; its size, or 0 if there is none of that kind. */
static size_t emu_mem_del(void *p, int kind)
{
	size_t rc = 0;
	pthread_mutex_lock(&emu_mem_mu);
	size_t i = emu_mem_upper((uintptr_t)p);
	if (i > 0 && emu_allocs[i - 1].base == (uintptr_t)p && emu_allocs[i - 1].kind == kind) {
		struct emu_alloc *a = &emu_allocs[i - 1];
		if (a->dev >= 0)
			emu_dev_bytes[a->dev] -= a->size;
		rc = a->size;
		memmove(a, a + 1, (emu_nallocs - i) * sizeof *a);
		emu_nallocs--;
	}
	pthread_mutex_unlock(&emu_mem_mu);
	return rc;
}

/*
 * Memory whose pages are all present: device memory exists once allocated,
 * and a first-touch page fault inside a timed copy would make it slower
 * than planned.
 */
static void *emu_pages(size_t size)
{
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

static void emu_pages_free(void *p, size_t size)
{
	munmap(p, size);
}

int emu_mem_kind(const void *p, int *dev)
{
	struct emu_alloc a;
	if (!p || emu_mem_find(p, &a) < 0) {
		*dev = -1;
		return EMU_MEM_NONE;
	}
	*dev = a.dev;
	return a.kind;
}

/* Runs on a worker for cudaFreeAsync. */
void emu_mem_release(void *p)
{
	size_t size = emu_mem_del(p, EMU_MEM_DEVICE);
	if (size)
		emu_pages_free(p, size);
}

static cudaError_t emu_alloc_dev(void **p, size_t size, int dev)
{
	if (!p)
		return cudaErrorInvalidValue;
	if (emu_forked)
		return cudaErrorInitializationError;
	*p = NULL;
	if (size == 0)
		return cudaSuccess;
	pthread_mutex_lock(&emu_mem_mu);
	int over = size > EMU_MEM_LIMIT || emu_dev_bytes[dev] > EMU_MEM_LIMIT - size;
	pthread_mutex_unlock(&emu_mem_mu);
	void *m = over ? NULL : emu_pages(size);
	if (!m)
		return cudaErrorMemoryAllocation;
	if (emu_mem_add(m, size, dev, EMU_MEM_DEVICE) < 0) {
		emu_pages_free(m, size);
		return cudaErrorMemoryAllocation;
	}
	*p = m;
	return cudaSuccess;
}

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	emu_init();
	return emu_err(emu_alloc_dev(devPtr, size, emu_device_current()));
}

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
	struct emu_stream *s;
	cudaError_t e = emu_stream_get(hStream, &s);
	if (e)
		return emu_err(e);
	return emu_err(emu_alloc_dev(devPtr, size, emu_stream_device(s)));
}

cudaError_t cudaFree(void *devPtr)
{
	int dev;
	if (!devPtr)
		return cudaSuccess;
	if (emu_mem_kind(devPtr, &dev) != EMU_MEM_DEVICE)
		return emu_err(cudaErrorInvalidValue);
	emu_device_sync(dev);
	size_t size = emu_mem_del(devPtr, EMU_MEM_DEVICE);
	if (!size)
		return emu_err(cudaErrorInvalidValue);
	emu_pages_free(devPtr, size);
	return cudaSuccess;
}

cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
	int dev;
	struct emu_stream *s;
	cudaError_t e = emu_stream_get(hStream, &s);
	if (e)
		return emu_err(e);
	if (!devPtr)
		return cudaSuccess;
	if (emu_mem_kind(devPtr, &dev) != EMU_MEM_DEVICE)
		return emu_err(cudaErrorInvalidValue);
	struct emu_op *op = emu_op_new(EMU_OP_FREE, 0);
	if (!op)
		return emu_err(cudaErrorMemoryAllocation);
	op->u.free.p = devPtr;
	emu_stream_push(s, op);
	return cudaSuccess;
}

/* The body of both pinned allocations (an exported name never calls another). */
static cudaError_t emu_host_alloc(void **pHost, size_t size)
{
	if (!pHost)
		return emu_err(cudaErrorInvalidValue);
	*pHost = NULL;
	if (size == 0)
		return cudaSuccess;
	void *m = emu_pages(size); /* pinned: present, like page-locked memory */
	if (!m)
		return emu_err(cudaErrorMemoryAllocation);
	if (emu_mem_add(m, size, -1, EMU_MEM_HOST) < 0) {
		emu_pages_free(m, size);
		return emu_err(cudaErrorMemoryAllocation);
	}
	*pHost = m;
	return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
	(void)flags; /* portable, mapped, write-combined: all the same host memory here */
	return emu_host_alloc(pHost, size);
}

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	return emu_host_alloc(ptr, size);
}

cudaError_t cudaFreeHost(void *ptr)
{
	if (!ptr)
		return cudaSuccess;
	int dev;
	if (emu_mem_kind(ptr, &dev) != EMU_MEM_HOST)
		return emu_err(cudaErrorInvalidValue);
	emu_device_sync_all();
	size_t size = emu_mem_del(ptr, EMU_MEM_HOST);
	if (!size)
		return emu_err(cudaErrorInvalidValue);
	emu_pages_free(ptr, size);
	return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
	int dev = emu_device_current();
	pthread_mutex_lock(&emu_mem_mu);
	size_t used = emu_dev_bytes[dev];
	pthread_mutex_unlock(&emu_mem_mu);
	if (free_bytes)
		*free_bytes = EMU_MEM_LIMIT - used;
	if (total)
		*total = EMU_MEM_LIMIT;
	return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr)
{
	if (!attributes)
		return emu_err(cudaErrorInvalidValue);
	int dev;
	int kind = emu_mem_kind(ptr, &dev);
	memset(attributes, 0, sizeof *attributes);
	attributes->device = dev < 0 ? emu_device_current() : dev;
	if (kind == EMU_MEM_DEVICE) {
		attributes->type = cudaMemoryTypeDevice;
		attributes->devicePointer = (void *)ptr;
	} else if (kind == EMU_MEM_HOST) {
		attributes->type = cudaMemoryTypeHost;
		attributes->devicePointer = attributes->hostPointer = (void *)ptr;
	} else {
		attributes->type = cudaMemoryTypeUnregistered;
		attributes->device = -2;
	}
	return cudaSuccess;
}

/* ---- copies ---- */

/* Planned time of a copy between memory of devices sdev and ddev (-1: host). */
static uint64_t emu_copy_ns(size_t n, int sdev, int ddev)
{
	if (sdev < 0 && ddev < 0)
		return 0; /* host to host: as fast as memcpy */
	if (sdev < 0 || ddev < 0)
		return emu_wire_ns(n, emu_cfg.pcie_bps);
	return emu_wire_ns(n, sdev == ddev ? emu_cfg.hbm_bps : emu_cfg.p2p_bps);
}

/* Which side of a copy is on a device, by the kind, checked against the table. */
static int emu_copy_side(const void *p, int on_device, int fallback_dev)
{
	int dev, kind = emu_mem_kind(p, &dev);
	if (!on_device)
		return -1;
	return kind == EMU_MEM_DEVICE ? dev : fallback_dev;
}

static cudaError_t emu_copy(void *dst, const void *src, size_t n, int ddev, int sdev, cudaStream_t h,
                            int sync)
{
	struct emu_stream *s;
	if (n == 0)
		return cudaSuccess;
	if (!dst || !src)
		return cudaErrorInvalidValue;
	cudaError_t e = emu_stream_get(h, &s);
	if (e)
		return e;
	struct emu_op *op = emu_op_new(EMU_OP_COPY, 0);
	if (!op)
		return cudaErrorMemoryAllocation;
	op->u.copy.dst = dst;
	op->u.copy.src = src;
	op->u.copy.n = n;
	op->u.copy.ns = emu_copy_ns(n, sdev, ddev);
	uint64_t seq = emu_stream_push(s, op);
	if (sync)
		emu_stream_wait(s, seq);
	return cudaSuccess;
}

/* Resolves a copy's direction into devices (or -1); 0, or -1 for a bad kind. */
static int emu_copy_devs(const void *dst, const void *src, enum cudaMemcpyKind kind, int *ddev, int *sdev)
{
	int cur = emu_device_current(), dk, sk;
	switch (kind) {
	case cudaMemcpyHostToHost: *ddev = *sdev = -1; return 0;
	case cudaMemcpyHostToDevice: *sdev = -1; *ddev = emu_copy_side(dst, 1, cur); return 0;
	case cudaMemcpyDeviceToHost: *ddev = -1; *sdev = emu_copy_side(src, 1, cur); return 0;
	case cudaMemcpyDeviceToDevice:
		*ddev = emu_copy_side(dst, 1, cur);
		*sdev = emu_copy_side(src, 1, cur);
		return 0;
	case cudaMemcpyDefault:
		dk = emu_mem_kind(dst, ddev);
		sk = emu_mem_kind(src, sdev);
		if (dk != EMU_MEM_DEVICE)
			*ddev = -1;
		if (sk != EMU_MEM_DEVICE)
			*sdev = -1;
		return 0;
	}
	return -1;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream)
{
	int ddev, sdev;
	if (emu_copy_devs(dst, src, kind, &ddev, &sdev) < 0)
		return emu_err(cudaErrorInvalidMemcpyDirection);
	return emu_err(emu_copy(dst, src, count, ddev, sdev, stream, 0));
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	int ddev, sdev;
	if (emu_copy_devs(dst, src, kind, &ddev, &sdev) < 0)
		return emu_err(cudaErrorInvalidMemcpyDirection);
	return emu_err(emu_copy(dst, src, count, ddev, sdev, NULL, 1));
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice, size_t count,
                                cudaStream_t stream)
{
	if (!emu_device_valid(dstDevice) || !emu_device_valid(srcDevice))
		return emu_err(cudaErrorInvalidDevice);
	return emu_err(emu_copy(dst, src, count, dstDevice, srcDevice, stream, 0));
}

cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count)
{
	if (!emu_device_valid(dstDevice) || !emu_device_valid(srcDevice))
		return emu_err(cudaErrorInvalidDevice);
	return emu_err(emu_copy(dst, src, count, dstDevice, srcDevice, NULL, 1));
}

/* ---- memset ---- */

static cudaError_t emu_memset(void *p, int value, size_t count, cudaStream_t h, int async)
{
	struct emu_stream *s;
	int dev;
	if (count == 0)
		return cudaSuccess;
	int kind = emu_mem_kind(p, &dev);
	if (kind == EMU_MEM_NONE)
		return cudaErrorInvalidValue;
	cudaError_t e = emu_stream_get(h, &s);
	if (e)
		return e;
	struct emu_op *op = emu_op_new(EMU_OP_SET, 0);
	if (!op)
		return cudaErrorMemoryAllocation;
	op->u.set.dst = p;
	op->u.set.val = value;
	op->u.set.n = count;
	op->u.set.ns = kind == EMU_MEM_DEVICE ? emu_wire_ns(count, emu_cfg.hbm_bps) : 0;
	uint64_t seq = emu_stream_push(s, op);
	/* cudaMemset is synchronous only on pinned host memory */
	if (!async && kind == EMU_MEM_HOST)
		emu_stream_wait(s, seq);
	return cudaSuccess;
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
	return emu_err(emu_memset(devPtr, value, count, NULL, 0));
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	return emu_err(emu_memset(devPtr, value, count, stream, 1));
}

/*
 * The per-thread-default-stream entry points (programs built with
 * --default-stream per-thread call these): the same code under a second
 * name, so a profiler wrapping both still sees one call. The emulation's
 * per-thread default stream is the legacy stream (README).
 */
__typeof__(cudaMemcpy) cudaMemcpy_ptds __attribute__((alias("cudaMemcpy")));
__typeof__(cudaMemset) cudaMemset_ptds __attribute__((alias("cudaMemset")));
__typeof__(cudaMemcpyAsync) cudaMemcpyAsync_ptsz __attribute__((alias("cudaMemcpyAsync")));
__typeof__(cudaMemsetAsync) cudaMemsetAsync_ptsz __attribute__((alias("cudaMemsetAsync")));
__typeof__(cudaMallocAsync) cudaMallocAsync_ptsz __attribute__((alias("cudaMallocAsync")));
__typeof__(cudaFreeAsync) cudaFreeAsync_ptsz __attribute__((alias("cudaFreeAsync")));
