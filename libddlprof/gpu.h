/*
 * The GPU side of libddlprof: shared by the CUDA wrappers (cuda.c), the
 * NCCL wrappers (nccl.c), the event-pair back end and its resolver thread
 * (gpu.c) and the CUPTI back end (cupti.c). Compiled only where the CUDA
 * headers are (DDL_HAVE_CUDA); nothing here links against CUDA: every real
 * function is found with dlsym(RTLD_NEXT) on first use, because libcudart
 * and libnccl are often loaded after us (dlopen by a framework).
 */
#ifndef DDL_GPU_H
#define DDL_GPU_H

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include "ddl.h"

/*
 * The real functions of the GPU APIs, one X-list per family, in the manner
 * of DDL_HOOKS (ddl.h): X(name, ret, params). Each entry is a slot of
 * ddl_gpu_real, found on first use (DDL_GPU_REAL: the runtime and NCCL are
 * often loaded after us), which ddl_real_set can point at a fake. The
 * wrappers are written out in cuda.c and nccl.c; entries no wrapper has
 * are the calls the back ends make themselves (DDL_CUDA_OWN).
 */
#define DDL_CUDART_HOOKS(X) \
	X(cudaLaunchKernel, cudaError_t, (const void *, dim3, dim3, void **, size_t, cudaStream_t)) \
	X(cudaLaunchKernel_ptsz, cudaError_t, (const void *, dim3, dim3, void **, size_t, cudaStream_t)) \
	X(cudaLaunchCooperativeKernel, cudaError_t, (const void *, dim3, dim3, void **, size_t, cudaStream_t)) \
	X(cudaLaunchCooperativeKernel_ptsz, cudaError_t, \
	  (const void *, dim3, dim3, void **, size_t, cudaStream_t)) \
	X(__cudaGetKernel, cudaError_t, (cudaKernel_t *, const void *)) \
	X(__cudaLaunchKernel, cudaError_t, (cudaKernel_t, dim3, dim3, void **, size_t, cudaStream_t)) \
	X(__cudaLaunchKernel_ptsz, cudaError_t, (cudaKernel_t, dim3, dim3, void **, size_t, cudaStream_t)) \
	X(cudaLaunchKernelExC, cudaError_t, (const cudaLaunchConfig_t *, const void *, void **)) \
	X(cudaLaunchKernelExC_ptsz, cudaError_t, (const cudaLaunchConfig_t *, const void *, void **)) \
	X(cudaGraphLaunch, cudaError_t, (cudaGraphExec_t, cudaStream_t)) \
	X(cudaGraphLaunch_ptsz, cudaError_t, (cudaGraphExec_t, cudaStream_t)) \
	X(__cudaRegisterFunction, void, \
	  (void **, const char *, char *, const char *, int, uint3 *, uint3 *, dim3 *, dim3 *, int *)) \
	X(cudaMemcpyAsync, cudaError_t, (void *, const void *, size_t, enum cudaMemcpyKind, cudaStream_t)) \
	X(cudaMemcpyAsync_ptsz, cudaError_t, \
	  (void *, const void *, size_t, enum cudaMemcpyKind, cudaStream_t)) \
	X(cudaMemcpy, cudaError_t, (void *, const void *, size_t, enum cudaMemcpyKind)) \
	X(cudaMemcpy_ptds, cudaError_t, (void *, const void *, size_t, enum cudaMemcpyKind)) \
	X(cudaMemcpyPeer, cudaError_t, (void *, int, const void *, int, size_t)) \
	X(cudaMemcpyPeerAsync, cudaError_t, (void *, int, const void *, int, size_t, cudaStream_t)) \
	X(cudaMemset, cudaError_t, (void *, int, size_t)) \
	X(cudaMemset_ptds, cudaError_t, (void *, int, size_t)) \
	X(cudaMemsetAsync, cudaError_t, (void *, int, size_t, cudaStream_t)) \
	X(cudaMemsetAsync_ptsz, cudaError_t, (void *, int, size_t, cudaStream_t)) \
	X(cudaStreamSynchronize, cudaError_t, (cudaStream_t)) \
	X(cudaStreamSynchronize_ptsz, cudaError_t, (cudaStream_t)) \
	X(cudaDeviceSynchronize, cudaError_t, (void)) \
	X(cudaEventSynchronize, cudaError_t, (cudaEvent_t)) \
	X(cudaStreamWaitEvent, cudaError_t, (cudaStream_t, cudaEvent_t, unsigned int)) \
	X(cudaStreamWaitEvent_ptsz, cudaError_t, (cudaStream_t, cudaEvent_t, unsigned int)) \
	X(cudaEventRecord, cudaError_t, (cudaEvent_t, cudaStream_t)) \
	X(cudaEventRecord_ptsz, cudaError_t, (cudaEvent_t, cudaStream_t)) \
	X(cudaGetLastError, cudaError_t, (void)) \
	X(cudaSetDevice, cudaError_t, (int)) \
	X(cudaMalloc, cudaError_t, (void **, size_t)) \
	X(cudaFree, cudaError_t, (void *)) \
	X(cudaMallocAsync, cudaError_t, (void **, size_t, cudaStream_t)) \
	X(cudaMallocAsync_ptsz, cudaError_t, (void **, size_t, cudaStream_t)) \
	X(cudaFreeAsync, cudaError_t, (void *, cudaStream_t)) \
	X(cudaFreeAsync_ptsz, cudaError_t, (void *, cudaStream_t)) \
	X(cudaStreamDestroy, cudaError_t, (cudaStream_t)) \
	X(cudaStreamBeginCapture, cudaError_t, (cudaStream_t, enum cudaStreamCaptureMode)) \
	X(cudaStreamBeginCapture_ptsz, cudaError_t, (cudaStream_t, enum cudaStreamCaptureMode)) \
	X(cudaStreamEndCapture, cudaError_t, (cudaStream_t, cudaGraph_t *)) \
	X(cudaStreamEndCapture_ptsz, cudaError_t, (cudaStream_t, cudaGraph_t *)) \
	X(cudaEventCreateWithFlags, cudaError_t, (cudaEvent_t *, unsigned int)) \
	X(cudaEventQuery, cudaError_t, (cudaEvent_t)) \
	X(cudaEventElapsedTime, cudaError_t, (float *, cudaEvent_t, cudaEvent_t)) \
	X(cudaEventDestroy, cudaError_t, (cudaEvent_t)) \
	X(cudaStreamCreateWithFlags, cudaError_t, (cudaStream_t *, unsigned int)) \
	X(cudaStreamIsCapturing, cudaError_t, (cudaStream_t, enum cudaStreamCaptureStatus *)) \
	X(cudaPeekAtLastError, cudaError_t, (void)) \
	X(cudaGetDevice, cudaError_t, (int *)) \
	X(cudaGetDeviceCount, cudaError_t, (int *)) \
	X(cudaGetDeviceProperties, cudaError_t, (struct cudaDeviceProp *, int)) \
	X(cudaThreadExchangeStreamCaptureMode, cudaError_t, (enum cudaStreamCaptureMode *)) \
	X(cudaFuncGetName, cudaError_t, (const char **, const void *))

#define DDL_CUDA_DRIVER_HOOKS(X) \
	X(cuLaunchKernel, CUresult, (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, \
	                             unsigned, unsigned, CUstream, void **, void **)) \
	X(cuLaunchKernel_ptsz, CUresult, (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, \
	                                  unsigned, unsigned, CUstream, void **, void **)) \
	X(cuLaunchKernelEx, CUresult, (const CUlaunchConfig *, CUfunction, void **, void **)) \
	X(cuLaunchKernelEx_ptsz, CUresult, (const CUlaunchConfig *, CUfunction, void **, void **))

#define DDL_NCCL_HOOKS(X) \
	X(ncclAllReduce, ncclResult_t, \
	  (const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t)) \
	X(ncclReduce, ncclResult_t, \
	  (const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t)) \
	X(ncclBroadcast, ncclResult_t, (const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)) \
	X(ncclBcast, ncclResult_t, (void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)) \
	X(ncclAllGather, ncclResult_t, (const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t)) \
	X(ncclReduceScatter, ncclResult_t, \
	  (const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t)) \
	X(ncclAlltoAll, ncclResult_t, (const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t)) \
	X(ncclGather, ncclResult_t, (const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)) \
	X(ncclScatter, ncclResult_t, (const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)) \
	X(ncclSend, ncclResult_t, (const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)) \
	X(ncclRecv, ncclResult_t, (void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)) \
	X(ncclGroupStart, ncclResult_t, (void)) \
	X(ncclGroupEnd, ncclResult_t, (void)) \
	X(ncclCommInitRank, ncclResult_t, (ncclComm_t *, int, ncclUniqueId, int)) \
	X(ncclCommInitRankConfig, ncclResult_t, (ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *)) \
	X(ncclCommInitRankScalable, ncclResult_t, (ncclComm_t *, int, int, int, ncclUniqueId *, ncclConfig_t *)) \
	X(ncclCommSplit, ncclResult_t, (ncclComm_t, int, int, ncclComm_t *, ncclConfig_t *)) \
	X(ncclCommShrink, ncclResult_t, (ncclComm_t, int *, int, ncclComm_t *, ncclConfig_t *, int)) \
	X(ncclCommInitAll, ncclResult_t, (ncclComm_t *, int, const int *)) \
	X(ncclCommDestroy, ncclResult_t, (ncclComm_t)) \
	X(ncclCommAbort, ncclResult_t, (ncclComm_t)) \
	X(ncclCommUserRank, ncclResult_t, (const ncclComm_t, int *)) \
	X(ncclCommCount, ncclResult_t, (const ncclComm_t, int *)) \
	X(ncclCommCuDevice, ncclResult_t, (const ncclComm_t, int *))

struct ddl_gpu_real {
#define DDL_X_FIELD(n, r, p) r(*n) p;
	DDL_CUDART_HOOKS(DDL_X_FIELD)
	DDL_CUDA_DRIVER_HOOKS(DDL_X_FIELD)
	DDL_NCCL_HOOKS(DDL_X_FIELD)
#undef DDL_X_FIELD
};
extern struct ddl_gpu_real ddl_gpu_real DDL_HIDDEN;
/* The GPU families' entries, for ddl_real_set and ddl_real_entry (real.c). */
extern const struct ddl_hook_entry ddl_gpu_hooks[] DDL_HIDDEN;
extern const size_t ddl_gpu_nhooks DDL_HIDDEN;

/*
 * The runtime calls the back ends make themselves (gpu.c, cupti.c), all
 * found at once by ddl_cuda_own_resolve, in the same slots; the optional
 * ones (O = 1) a runtime may lack.
 */
#define DDL_CUDA_OWN(X) \
	X(cudaEventCreateWithFlags, 0) X(cudaEventRecord, 0) X(cudaEventQuery, 0) \
	X(cudaEventSynchronize, 0) X(cudaEventElapsedTime, 0) X(cudaEventDestroy, 0) \
	X(cudaStreamCreateWithFlags, 0) X(cudaStreamIsCapturing, 1) X(cudaPeekAtLastError, 0) \
	X(cudaGetLastError, 0) X(cudaSetDevice, 0) X(cudaGetDevice, 0) X(cudaGetDeviceCount, 0) \
	X(cudaGetDeviceProperties, 0) X(cudaThreadExchangeStreamCaptureMode, 1) X(cudaFuncGetName, 1)
/* Resolves the DDL_CUDA_OWN entries; 0 when the CUDA runtime is loaded, -1 when not. */
int ddl_cuda_own_resolve(void) DDL_HIDDEN;

/*
 * Lazily resolved real function: a slot per entry, which threads may fill
 * at the same moment. Only the first function found is stored
 * (ddl_gpu_next_slot), so once DDL_NEXT has returned, the wrapper may read
 * the slot plainly: it never changes again (but for ddl_real_set, which
 * tests call before the calls they fake). The load is a plain one on x86-64.
 */
#define DDL_NEXT(slot, name) \
	__extension__({ \
		__typeof__(slot) ddl_next_ = __atomic_load_n(&(slot), __ATOMIC_ACQUIRE); \
		if (ddl_unlikely(!ddl_next_)) \
			ddl_next_ = (__typeof__(slot))ddl_gpu_next_slot((void **)&(slot), name); \
		ddl_next_; \
	})
/* The real function of entry N of the GPU tables: NULL when not loaded. */
#define DDL_GPU_REAL(n) DDL_NEXT(ddl_gpu_real.n, #n)
void *ddl_gpu_next_slot(void **slot, const char *name) DDL_HIDDEN;
void *ddl_gpu_next(const char *name) DDL_HIDDEN;

/* Per thread: the current device (cudaSetDevice), call numbers, groups. */
#define DDL_KCACHE 16 /* kernels whose names a thread keeps: a step's launches take turns */
struct ddl_gpu_tls {
	int dev;
	uint32_t corr;
	unsigned launches;      /* since the last timed launch */
	int group_depth;        /* ncclGroupStart nesting */
	int ngroup_streams;     /* streams used in the open group (event pairs) */
	cudaStream_t group_stream[8];
	cudaEvent_t group_start[8];
	int group_dev[8];
	struct {                /* kernel names: a small cache in front of the shared table */
		const void *func;
		uint32_t name;
	} kc[DDL_KCACHE];
	cudaStream_t last_stream; /* a one-entry cache in front of the shared table */
	uint32_t last_stream_id;
	unsigned seg_skip;      /* launches before a run may be tried again (ddl_seg_launch_slow) */
};
extern __thread struct ddl_gpu_tls ddl_gtls DDL_HIDDEN;

/* Called on every thread's first CUDA/NCCL call: starts the back ends once. */
void ddl_gpu_first(void) DDL_HIDDEN;
/* Set once the back ends are started (ddl_gpu_first); what they set up
 * before is visible to a thread that reads it set. */
extern _Atomic int ddl_gpu_started DDL_HIDDEN;

/* Stream and kernel-name ids (string table entries made on first sight). */
uint32_t ddl_stream_id_slow(cudaStream_t s) DDL_HIDDEN;
static inline uint32_t ddl_stream_id(cudaStream_t s)
{
	if (!s)
		return 0;
	if (ddl_likely(ddl_gtls.last_stream == s))
		return ddl_gtls.last_stream_id;
	uint32_t id = ddl_stream_id_slow(s);
	ddl_gtls.last_stream = s;
	ddl_gtls.last_stream_id = id;
	return id;
}
/* *final is cleared when the name is a stand-in, to be asked for again next time. */
uint32_t ddl_kernel_name_slow(const void *func, int driver, int *final) DDL_HIDDEN;
static inline uint32_t ddl_kernel_name(const void *func, int driver)
{
	uintptr_t k = (uintptr_t)func;
	unsigned slot = (unsigned)(k >> 4 ^ k >> 10) % DDL_KCACHE;
	if (ddl_likely(ddl_gtls.kc[slot].func == func))
		return ddl_gtls.kc[slot].name;
	int final = 1;
	uint32_t id = ddl_kernel_name_slow(func, driver, &final);
	if (final) {
		ddl_gtls.kc[slot].func = func;
		ddl_gtls.kc[slot].name = id;
	}
	return id;
}
/* Remember a kernel's name from __cudaRegisterFunction. */
void ddl_kernel_register(const void *func, const char *name) DDL_HIDDEN;
/* A kernel handle (__cudaGetKernel) named after its host function. */
void ddl_kernel_alias(const void *handle, const void *func) DDL_HIDDEN;

/*
 * The event-pair back end. ddl_pair_start_event records a start event on
 * the stream (NULL when this call goes untimed: no events, the stream is
 * being captured into a graph, a CUDA error is pending); ddl_pair_end_event
 * records the end event and queues the pair for the resolver (DEV_KIND is the
 * device event's kind, with DDL_EVF_* flags to add in bits 8-15). Callers keep
 * errno; these keep the runtime's last error as the program left it.
 */
void ddl_pair_end_event(cudaEvent_t start, cudaStream_t s, int dev, unsigned dev_kind,
                        uint16_t tid, uint32_t corr, uint32_t stream_id) DDL_HIDDEN;
cudaEvent_t ddl_pair_start_event(cudaStream_t s, int dev) DDL_HIDDEN;
/* Stream captures in progress (cudaStreamBeginCapture .. EndCapture). */
void ddl_gpu_capture_begin(void) DDL_HIDDEN;
void ddl_gpu_capture_end(void) DDL_HIDDEN;

/* A device interval, written from a back-end thread on TID's behalf. */
void ddl_device_put(unsigned kind, unsigned flags, uint64_t t0, uint64_t t1, uint16_t tid,
                    int dev, uint32_t stream_id, int64_t corr, const struct ddl_args *a)
    DDL_HIDDEN;

/*
 * Kernel segments: by default (DDLPROF_KERNEL_SAMPLE=0, no CUPTI) launches
 * are timed as runs: the first launch on a stream opens a segment (a start
 * event), and the next call that puts other work on that stream (a copy, a
 * collective, a wait, a sync), from any thread, closes it (an end event).
 * The interval covers the run's kernels at the cost of two events a run.
 * When a run cannot start because an error of the program's is pending
 * (the runtime keeps one per thread), the thread tries again DDL_SEG_RETRY launches later,
 * or at its next cudaGetLastError: a program that leaves an error pending
 * does not pay for a failed try on every launch.
 */
#define DDL_SEG_MAX 4096
#define DDL_SEG_RETRY 64
extern _Atomic int ddl_seg_on DDL_HIDDEN;
extern _Atomic int ddl_seg_open[DDL_SEG_MAX] DDL_HIDDEN;
int ddl_seg_launch_slow(cudaStream_t s, uint32_t sid, uint16_t tid, uint32_t corr) DDL_HIDDEN;
void ddl_seg_close_slow(uint32_t sid) DDL_HIDDEN;
void ddl_seg_close_all(void) DDL_HIDDEN;

/* Returns 1 when this launch opened a segment. */
static inline int ddl_seg_launch(struct ddl_thread *t, cudaStream_t s, uint32_t sid, uint32_t corr)
{
	if (ddl_likely(!atomic_load_explicit(&ddl_seg_on, memory_order_relaxed)) || sid >= DDL_SEG_MAX ||
	    ddl_likely(atomic_load_explicit(&ddl_seg_open[sid], memory_order_relaxed)))
		return 0;
	t->busy = 1;
	int saved = errno;
	int r = ddl_seg_launch_slow(s, sid, t->idx, corr);
	errno = saved;
	t->busy = 0;
	return r;
}

/* Other work is about to go on stream SID: end its open segment first. */
static inline void ddl_seg_close(struct ddl_thread *t, uint32_t sid)
{
	if (ddl_likely(!atomic_load_explicit(&ddl_seg_on, memory_order_relaxed)) || sid >= DDL_SEG_MAX ||
	    !atomic_load_explicit(&ddl_seg_open[sid], memory_order_relaxed))
		return;
	t->busy = 1;
	int saved = errno;
	ddl_seg_close_slow(sid);
	errno = saved;
	t->busy = 0;
}

/* Locks of nccl.c and cupti.c, fresh in a forked child. */
void ddl_nccl_after_fork_child(void) DDL_HIDDEN;
void ddl_cupti_after_fork_child(void) DDL_HIDDEN;

/* CUPTI (cupti.c): started once a GPU is known to be present. */
int ddl_cupti_start(void) DDL_HIDDEN;
void ddl_cupti_flush(void) DDL_HIDDEN;
/* At exit: CUPTI is not started any more (the helper thread may be late). */
void ddl_cupti_close(void) DDL_HIDDEN;
extern int ddl_cupti_on DDL_HIDDEN;

static inline struct ddl_args ddl_args_make(void)
{
	struct ddl_args a;
	__builtin_memset(&a, 0, sizeof a);
	a.kind = DDL_EV_ARGS;
	a.peer = -1;
	return a;
}

#endif
