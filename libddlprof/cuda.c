/*
 * CUDA runtime and driver wrappers. Each times the real call on the host
 * and appends an event with an args record: the stream, the device current
 * on the thread, the kernel's name (interned once per kernel), the bytes.
 * Launches are timed on the device one in DDLPROF_KERNEL_SAMPLE (event
 * pairs, gpu.c); copies, memsets and graph launches always are.
 *
 * The per-thread-default-stream variants (_ptsz, _ptds) share the bodies:
 * nvcc --default-stream per-thread makes programs call those names.
 */
#ifdef DDL_HAVE_CUDA
#include "gpu.h"

/* Shared tail of every wrapper: time the device side if asked, record. */
struct ddl_call {
	struct ddl_thread *t;
	struct ddl_args a;
	cudaEvent_t ev;
	cudaStream_t s;
	uint32_t sid;
};

static inline void ddl_call_begin(struct ddl_call *c, struct ddl_thread *t, cudaStream_t s, int timed)
{
	c->t = t;
	c->a = ddl_args_make();
	c->a.corr = ++ddl_gtls.corr;
	c->s = s;
	c->sid = ddl_stream_id(s);
	c->ev = NULL;
	if (ddl_unlikely(timed)) {
		int saved = errno;
		t->busy = 1;
		c->ev = ddl_pair_start_event(s, ddl_gtls.dev);
		t->busy = 0;
		errno = saved;
		if (c->ev)
			c->a.flags |= DDL_ARGF_TIMED;
	}
}

static inline void ddl_call_end(struct ddl_call *c, unsigned kind, unsigned dev_kind, uint64_t t0,
                                uint64_t t1, int64_t r)
{
	struct ddl_thread *t = c->t;
	if (ddl_unlikely(c->ev != NULL)) {
		int saved = errno;
		t->busy = 1;
		ddl_pair_end_event(c->ev, c->s, ddl_gtls.dev, dev_kind, t->idx, c->a.corr, c->sid);
		t->busy = 0;
		errno = saved;
	}
	ddl_ring_put_args(t, kind, 0, t0, t1, r, ddl_gtls.dev, c->sid, &c->a);
	/* after the real call: the runtime is initialised by now */
	if (ddl_unlikely(!atomic_load_explicit(&ddl_gpu_started, memory_order_relaxed)))
		ddl_gpu_first();
}

static inline int ddl_sample_launch(void)
{
	unsigned n = ddl_g.cfg.kernel_sample;
	if (ddl_likely(!n || ++ddl_gtls.launches < n))
		return 0;
	ddl_gtls.launches = 0;
	return ddl_gpu_started;
}

/* A launch is timed alone (sampled), or as part of its stream's segment. */
static inline void ddl_launch_begin(struct ddl_call *c, struct ddl_thread *t, cudaStream_t s)
{
	int sampled = ddl_sample_launch();
	ddl_call_begin(c, t, s, sampled);
	if (!sampled && ddl_seg_launch(t, s, c->sid, c->a.corr))
		c->a.flags |= DDL_ARGF_TIMED;
}

/* Other work goes on S: the kernels launched before it on S end their segment. */
static inline void ddl_other_work(struct ddl_thread *t, cudaStream_t s)
{
	if (ddl_unlikely(ddl_seg_on))
		ddl_seg_close(t, ddl_stream_id(s));
}

/* ---- kernel launches ---- */

typedef cudaError_t (*ddl_launch_fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t);

/*
 * Launches that take the long way: sampled ones (timed alone with an event
 * pair), and those whose record does not fit in one ring slot (a device
 * interval asked for: the first launch of a run; large ids or sizes). Out
 * of line, so the common path keeps a small frame.
 */
static __attribute__((noinline, cold)) cudaError_t
ddl_launch_long(ddl_launch_fn real, unsigned kind, struct ddl_thread *t, const void *func, dim3 g, dim3 b,
                void **args, size_t shm, cudaStream_t s, int sampled, uint32_t corr, unsigned aflags)
{
	struct ddl_call c;
	if (sampled) {
		ddl_call_begin(&c, t, s, 1);
	} else {
		/* numbered, and its run's segment opened or not, by the caller */
		c.t = t;
		c.a = ddl_args_make();
		c.a.corr = corr;
		c.a.flags = (uint8_t)aflags;
		c.s = s;
		c.sid = ddl_stream_id(s);
		c.ev = NULL;
	}
	c.a.name = ddl_kernel_name(func, 0);
	c.a.bytes = (uint64_t)g.x * g.y * g.z;
	c.a.aux = b.x * b.y * b.z;
	uint64_t t0 = ddl_clock_now();
	cudaError_t r = real(func, g, b, args, shm, s);
	uint64_t t1 = ddl_clock_now();
	ddl_call_end(&c, kind, DDL_EV_DEV_KERNEL, t0, t1, r);
	return r;
}

/* A launch recorded in full after all (a return code over 16 bits). */
static __attribute__((noinline, cold)) void ddl_launch_put_full(struct ddl_thread *t, unsigned kind, uint64_t t0,
                                                                uint64_t t1, cudaError_t r, uint64_t res,
                                                                uint32_t fdv, uint32_t sid, uint32_t corr)
{
	struct ddl_args a = {.bytes = res & 0xffffffffu, .name = fdv & 0xffffffu, .kind = DDL_EV_ARGS,
	                     .corr = corr, .peer = -1, .aux = (uint32_t)(res >> 32)};
	ddl_ring_put_args(t, kind, 0, t0, t1, r, (int)(fdv >> 24), sid, &a);
}

/*
 * The hottest wrapper: a training step launches thousands of kernels. The
 * common launch is one ring slot, packed (packed.c): every field is worked
 * out before the real call, so that little lives across it.
 */
static inline __attribute__((always_inline)) cudaError_t ddl_launch(ddl_launch_fn real, unsigned kind,
                                                                   const void *func, dim3 g, dim3 b,
                                                                   void **args, size_t shm, cudaStream_t s)
{
	if (ddl_unlikely(!real))
		return cudaErrorNotSupported;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (!t)
		return real(func, g, b, args, shm, s);
	if (ddl_unlikely(ddl_sample_launch()))
		return ddl_launch_long(real, kind, t, func, g, b, args, shm, s, 1, 0, 0);
	uint32_t name = ddl_kernel_name(func, 0);
	uint32_t sid = ddl_stream_id(s);
	uint32_t corr = ++ddl_gtls.corr;
	uint64_t blocks = (uint64_t)g.x * g.y * g.z;
	uint32_t threads = b.x * b.y * b.z;
	unsigned dev = (unsigned)ddl_gtls.dev;
	unsigned aflags = ddl_seg_launch(t, s, sid, corr) ? DDL_ARGF_TIMED : 0;
	if (ddl_unlikely(aflags || (blocks >> 32) || (threads >> 16) || (name >> 24) || dev >= 256))
		return ddl_launch_long(real, kind, t, func, g, b, args, shm, s, 0, corr, aflags);
	uint64_t res = blocks | (uint64_t)threads << 32;
	uint32_t fdv = name | dev << 24;
	/* the slot this launch will fill: fetched while the runtime works */
	__builtin_prefetch(&t->ev[t->head & t->mask], 1);
	uint64_t t0 = ddl_clock_now();
	cudaError_t r = real(func, g, b, args, shm, s);
	uint64_t t1 = ddl_clock_now();
	if (ddl_unlikely((unsigned)r > 0xffffu)) {
		ddl_launch_put_full(t, kind, t0, t1, r, res, fdv, sid, corr);
	} else {
		t->busy = 1;
		uint64_t h = t->head;
		/* one slot, packed; the file will have two records (packed.c) */
		if (ddl_ring_claim(t, h, 1, 2)) {
			unsigned pk = kind == DDL_EV_CUDA_LAUNCH ? DDL_RING_LAUNCH : DDL_RING_LAUNCH_COOP;
			ddl_event_fill(&t->ev[h & t->mask], pk, 0, t->tidbits, t0, t1,
			               (int64_t)(res | (uint64_t)r << 48), (int32_t)fdv, sid);
			ddl_ring_publish(t, h + 1);
		}
		t->busy = 0;
	}
	if (ddl_unlikely(!atomic_load_explicit(&ddl_gpu_started, memory_order_relaxed)))
		ddl_gpu_first();
	return r;
}

DDL_EXPORT cudaError_t cudaLaunchKernel(const void *func, dim3 g, dim3 b, void **args, size_t shm,
                                        cudaStream_t s)
{
	return ddl_launch(DDL_GPU_REAL(cudaLaunchKernel), DDL_EV_CUDA_LAUNCH, func, g, b, args, shm, s);
}

DDL_EXPORT cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 g, dim3 b, void **args, size_t shm,
                                             cudaStream_t s)
{
	if (!s)
		s = cudaStreamPerThread; /* 0 means the thread's own stream here */
	return ddl_launch(DDL_GPU_REAL(cudaLaunchKernel_ptsz), DDL_EV_CUDA_LAUNCH, func, g, b, args, shm, s);
}

DDL_EXPORT cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 g, dim3 b, void **args,
                                                   size_t shm, cudaStream_t s)
{
	return ddl_launch(DDL_GPU_REAL(cudaLaunchCooperativeKernel), DDL_EV_CUDA_LAUNCH_COOP, func, g, b,
	                  args, shm, s);
}

DDL_EXPORT cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 g, dim3 b, void **args,
                                                        size_t shm, cudaStream_t s)
{
	if (!s)
		s = cudaStreamPerThread; /* 0 means the thread's own stream here */
	return ddl_launch(DDL_GPU_REAL(cudaLaunchCooperativeKernel_ptsz), DDL_EV_CUDA_LAUNCH_COOP, func, g,
	                  b, args, shm, s);
}

/*
 * Since CUDA 13, nvcc's <<<...>>> launches go through __cudaGetKernel (once
 * per kernel: the host function's kernel handle) and __cudaLaunchKernel
 * with that handle. We name each handle after its host function, and time
 * those launches like cudaLaunchKernel's.
 */
cudaError_t __cudaGetKernel(cudaKernel_t *k, const void *func);
cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void **args, size_t shm, cudaStream_t s);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 g, dim3 b, void **args, size_t shm,
                                    cudaStream_t s);

DDL_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t *k, const void *func)
{
	__typeof__(ddl_gpu_real.__cudaGetKernel) real = DDL_GPU_REAL(__cudaGetKernel);
	if (!real)
		return cudaErrorNotSupported;
	cudaError_t r = real(k, func);
	if (r == cudaSuccess && k && *k && ddl_g.initialised && atomic_load(&ddl_g.enabled)) {
		int saved = errno;
		ddl_kernel_alias(*k, func);
		errno = saved;
	}
	return r;
}

DDL_EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void **args, size_t shm,
                                          cudaStream_t s)
{
	/* same ABI: the handle is a pointer */
	return ddl_launch((ddl_launch_fn)DDL_GPU_REAL(__cudaLaunchKernel), DDL_EV_CUDA_LAUNCH, (const void *)k,
	                  g, b, args, shm, s);
}

DDL_EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 g, dim3 b, void **args, size_t shm,
                                               cudaStream_t s)
{
	if (!s)
		s = cudaStreamPerThread; /* 0 means the thread's own stream here */
	return ddl_launch((ddl_launch_fn)DDL_GPU_REAL(__cudaLaunchKernel_ptsz), DDL_EV_CUDA_LAUNCH,
	                  (const void *)k, g, b, args, shm, s);
}

typedef cudaError_t (*ddl_launch_ex_fn)(const cudaLaunchConfig_t *, const void *, void **);

static inline cudaError_t ddl_launch_ex(ddl_launch_ex_fn real, const cudaLaunchConfig_t *cfg,
                                        const void *func, void **args)
{
	if (ddl_unlikely(!real))
		return cudaErrorNotSupported;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (!t || !cfg)
		return real(cfg, func, args);
	struct ddl_call c;
	ddl_launch_begin(&c, t, cfg->stream);
	c.a.name = ddl_kernel_name(func, 0);
	c.a.bytes = (uint64_t)cfg->gridDim.x * cfg->gridDim.y * cfg->gridDim.z;
	c.a.aux = cfg->blockDim.x * cfg->blockDim.y * cfg->blockDim.z;
	uint64_t t0 = ddl_clock_now();
	cudaError_t r = real(cfg, func, args);
	uint64_t t1 = ddl_clock_now();
	ddl_call_end(&c, DDL_EV_CUDA_LAUNCH_EX, DDL_EV_DEV_KERNEL, t0, t1, r);
	return r;
}

DDL_EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *cfg, const void *func, void **args)
{
	return ddl_launch_ex(DDL_GPU_REAL(cudaLaunchKernelExC), cfg, func, args);
}

DDL_EXPORT cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *cfg, const void *func,
                                                void **args)
{
	return ddl_launch_ex(DDL_GPU_REAL(cudaLaunchKernelExC_ptsz), cfg, func, args);
}

typedef CUresult (*ddl_cu_launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                     unsigned, unsigned, CUstream, void **, void **);

static inline CUresult ddl_cu_launch(ddl_cu_launch_fn real, CUfunction f, unsigned gx, unsigned gy,
                                     unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                     unsigned shm, CUstream s, void **params, void **extra)
{
	if (ddl_unlikely(!real))
		return CUDA_ERROR_NOT_SUPPORTED;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (!t)
		return real(f, gx, gy, gz, bx, by, bz, shm, s, params, extra);
	struct ddl_call c;
	ddl_launch_begin(&c, t, (cudaStream_t)s);
	c.a.name = ddl_kernel_name((const void *)f, 1);
	c.a.bytes = (uint64_t)gx * gy * gz;
	c.a.aux = bx * by * bz;
	uint64_t t0 = ddl_clock_now();
	CUresult r = real(f, gx, gy, gz, bx, by, bz, shm, s, params, extra);
	uint64_t t1 = ddl_clock_now();
	ddl_call_end(&c, DDL_EV_CU_LAUNCH, DDL_EV_DEV_KERNEL, t0, t1, r);
	return r;
}

DDL_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                   unsigned by, unsigned bz, unsigned shm, CUstream s, void **params,
                                   void **extra)
{
	return ddl_cu_launch(DDL_GPU_REAL(cuLaunchKernel), f, gx, gy, gz, bx, by, bz, shm, s,
	                     params, extra);
}

DDL_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                        unsigned bx, unsigned by, unsigned bz, unsigned shm,
                                        CUstream s, void **params, void **extra)
{
	return ddl_cu_launch(DDL_GPU_REAL(cuLaunchKernel_ptsz), f, gx, gy, gz, bx, by, bz, shm, s,
	                     params, extra);
}

typedef CUresult (*ddl_cu_launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);

static inline CUresult ddl_cu_launch_ex(ddl_cu_launch_ex_fn real, const CUlaunchConfig *cfg,
                                        CUfunction f, void **params, void **extra)
{
	if (ddl_unlikely(!real))
		return CUDA_ERROR_NOT_SUPPORTED;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (!t || !cfg)
		return real(cfg, f, params, extra);
	struct ddl_call c;
	ddl_launch_begin(&c, t, (cudaStream_t)cfg->hStream);
	c.a.name = ddl_kernel_name((const void *)f, 1);
	c.a.bytes = (uint64_t)cfg->gridDimX * cfg->gridDimY * cfg->gridDimZ;
	c.a.aux = cfg->blockDimX * cfg->blockDimY * cfg->blockDimZ;
	uint64_t t0 = ddl_clock_now();
	CUresult r = real(cfg, f, params, extra);
	uint64_t t1 = ddl_clock_now();
	ddl_call_end(&c, DDL_EV_CU_LAUNCH_EX, DDL_EV_DEV_KERNEL, t0, t1, r);
	return r;
}

DDL_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *cfg, CUfunction f, void **params,
                                     void **extra)
{
	return ddl_cu_launch_ex(DDL_GPU_REAL(cuLaunchKernelEx), cfg, f, params, extra);
}

DDL_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *cfg, CUfunction f, void **params,
                                          void **extra)
{
	return ddl_cu_launch_ex(DDL_GPU_REAL(cuLaunchKernelEx_ptsz), cfg, f, params, extra);
}

typedef cudaError_t (*ddl_graph_fn)(cudaGraphExec_t, cudaStream_t);

static inline cudaError_t ddl_graph(ddl_graph_fn real, cudaGraphExec_t g, cudaStream_t s)
{
	if (ddl_unlikely(!real))
		return cudaErrorNotSupported;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (!t)
		return real(g, s);
	ddl_other_work(t, s);
	struct ddl_call c;
	ddl_call_begin(&c, t, s, ddl_gpu_started);
	uint64_t t0 = ddl_clock_now();
	cudaError_t r = real(g, s);
	uint64_t t1 = ddl_clock_now();
	ddl_call_end(&c, DDL_EV_CUDA_GRAPH_LAUNCH, DDL_EV_DEV_GRAPH, t0, t1, r);
	return r;
}

DDL_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t g, cudaStream_t s)
{
	return ddl_graph(DDL_GPU_REAL(cudaGraphLaunch), g, s);
}

DDL_EXPORT cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t g, cudaStream_t s)
{
	if (!s)
		s = cudaStreamPerThread; /* 0 means the thread's own stream here */
	return ddl_graph(DDL_GPU_REAL(cudaGraphLaunch_ptsz), g, s);
}

/* Kernel names, as nvcc-generated code registers them at start-up. */
DDL_EXPORT void __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun,
                                       const char *deviceName, int thread_limit, uint3 *tid,
                                       uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize)
{
	__typeof__(ddl_gpu_real.__cudaRegisterFunction) real = DDL_GPU_REAL(__cudaRegisterFunction);
	if (!real)
		return;
	int saved = errno;
	ddl_kernel_register(hostFun, deviceFun ? deviceFun : deviceName);
	errno = saved;
	real(handle, hostFun, deviceFun, deviceName, thread_limit, tid, bid, bDim, gDim, wSize);
}

/* ---- copies and memsets: always timed on the device ---- */

typedef cudaError_t (*ddl_memcpy_async_fn)(void *, const void *, size_t, enum cudaMemcpyKind,
                                           cudaStream_t);

static inline cudaError_t ddl_memcpy_async(ddl_memcpy_async_fn real, void *d, const void *src,
                                           size_t n, enum cudaMemcpyKind k, cudaStream_t s)
{
	if (ddl_unlikely(!real))
		return cudaErrorNotSupported;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (!t)
		return real(d, src, n, k, s);
	ddl_other_work(t, s);
	struct ddl_call c;
	ddl_call_begin(&c, t, s, ddl_gpu_started);
	c.a.bytes = n;
	c.a.op = (uint8_t)k;
	uint64_t t0 = ddl_clock_now();
	cudaError_t r = real(d, src, n, k, s);
	uint64_t t1 = ddl_clock_now();
	ddl_call_end(&c, DDL_EV_CUDA_MEMCPY_ASYNC, DDL_EV_DEV_MEMCPY, t0, t1, r);
	return r;
}

DDL_EXPORT cudaError_t cudaMemcpyAsync(void *d, const void *src, size_t n, enum cudaMemcpyKind k,
                                       cudaStream_t s)
{
	return ddl_memcpy_async(DDL_GPU_REAL(cudaMemcpyAsync), d, src, n, k, s);
}

DDL_EXPORT cudaError_t cudaMemcpyAsync_ptsz(void *d, const void *src, size_t n,
                                            enum cudaMemcpyKind k, cudaStream_t s)
{
	if (!s)
		s = cudaStreamPerThread; /* 0 means the thread's own stream here */
	return ddl_memcpy_async(DDL_GPU_REAL(cudaMemcpyAsync_ptsz), d, src, n, k, s);
}

typedef cudaError_t (*ddl_memcpy_fn)(void *, const void *, size_t, enum cudaMemcpyKind);

/* A blocking copy runs on the legacy default stream (or the thread's own with _ptds). */
static inline cudaError_t ddl_memcpy(ddl_memcpy_fn real, cudaStream_t s, void *d, const void *src,
                                     size_t n, enum cudaMemcpyKind k)
{
	if (ddl_unlikely(!real))
		return cudaErrorNotSupported;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (!t)
		return real(d, src, n, k);
	ddl_other_work(t, s);
	struct ddl_call c;
	ddl_call_begin(&c, t, s, ddl_gpu_started);
	c.a.bytes = n;
	c.a.op = (uint8_t)k;
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_CUDA_MEMCPY, t0, ddl_gtls.dev, c.sid);
	if (ddl_unlikely(ddl_bt_depth))
		t0 = ddl_clock_now(); /* its record has no stack: the one taken for a hang is no time of the copy's */
	cudaError_t r = real(d, src, n, k);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	ddl_call_end(&c, DDL_EV_CUDA_MEMCPY, DDL_EV_DEV_MEMCPY, t0, t1, r);
	return r;
}

DDL_EXPORT cudaError_t cudaMemcpy(void *d, const void *src, size_t n, enum cudaMemcpyKind k)
{
	return ddl_memcpy(DDL_GPU_REAL(cudaMemcpy), NULL, d, src, n, k);
}

DDL_EXPORT cudaError_t cudaMemcpy_ptds(void *d, const void *src, size_t n, enum cudaMemcpyKind k)
{
	return ddl_memcpy(DDL_GPU_REAL(cudaMemcpy_ptds), cudaStreamPerThread, d, src, n, k);
}

DDL_EXPORT cudaError_t cudaMemcpyPeer(void *d, int dd, const void *src, int sd, size_t n)
{
	__typeof__(ddl_gpu_real.cudaMemcpyPeer) real = DDL_GPU_REAL(cudaMemcpyPeer);
	if (!real)
		return cudaErrorNotSupported;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (!t)
		return real(d, dd, src, sd, n);
	ddl_other_work(t, NULL);
	struct ddl_call c;
	ddl_call_begin(&c, t, NULL, ddl_gpu_started);
	c.a.bytes = n;
	c.a.op = cudaMemcpyDeviceToDevice;
	c.a.peer = dd;
	c.a.aux = (uint32_t)sd;
	uint64_t t0 = ddl_clock_now();
	cudaError_t r = real(d, dd, src, sd, n);
	uint64_t t1 = ddl_clock_now();
	ddl_call_end(&c, DDL_EV_CUDA_MEMCPY_PEER, DDL_EV_DEV_MEMCPY, t0, t1, r);
	return r;
}

DDL_EXPORT cudaError_t cudaMemcpyPeerAsync(void *d, int dd, const void *src, int sd, size_t n,
                                           cudaStream_t s)
{
	__typeof__(ddl_gpu_real.cudaMemcpyPeerAsync) real = DDL_GPU_REAL(cudaMemcpyPeerAsync);
	if (!real)
		return cudaErrorNotSupported;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (!t)
		return real(d, dd, src, sd, n, s);
	ddl_other_work(t, s);
	struct ddl_call c;
	ddl_call_begin(&c, t, s, ddl_gpu_started);
	c.a.bytes = n;
	c.a.op = cudaMemcpyDeviceToDevice;
	c.a.peer = dd;
	c.a.aux = (uint32_t)sd;
	uint64_t t0 = ddl_clock_now();
	cudaError_t r = real(d, dd, src, sd, n, s);
	uint64_t t1 = ddl_clock_now();
	ddl_call_end(&c, DDL_EV_CUDA_MEMCPY_PEER_ASYNC, DDL_EV_DEV_MEMCPY, t0, t1, r);
	return r;
}

typedef cudaError_t (*ddl_memset_fn)(void *, int, size_t);
typedef cudaError_t (*ddl_memset_async_fn)(void *, int, size_t, cudaStream_t);

static inline cudaError_t ddl_memset(ddl_memset_fn real, ddl_memset_async_fn areal, unsigned kind,
                                     void *p, int v, size_t n, cudaStream_t s)
{
	if (ddl_unlikely(!real && !areal))
		return cudaErrorNotSupported;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (!t)
		return real ? real(p, v, n) : areal(p, v, n, s);
	ddl_other_work(t, s);
	struct ddl_call c;
	ddl_call_begin(&c, t, s, ddl_gpu_started);
	c.a.bytes = n;
	uint64_t t0 = ddl_clock_now();
	cudaError_t r = real ? real(p, v, n) : areal(p, v, n, s);
	uint64_t t1 = ddl_clock_now();
	ddl_call_end(&c, kind, DDL_EV_DEV_MEMSET, t0, t1, r);
	return r;
}

DDL_EXPORT cudaError_t cudaMemset(void *p, int v, size_t n)
{
	return ddl_memset(DDL_GPU_REAL(cudaMemset), NULL, DDL_EV_CUDA_MEMSET, p, v, n, NULL);
}

DDL_EXPORT cudaError_t cudaMemset_ptds(void *p, int v, size_t n)
{
	return ddl_memset(DDL_GPU_REAL(cudaMemset_ptds), NULL, DDL_EV_CUDA_MEMSET, p, v, n,
	                  cudaStreamPerThread);
}

DDL_EXPORT cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s)
{
	return ddl_memset(NULL, DDL_GPU_REAL(cudaMemsetAsync), DDL_EV_CUDA_MEMSET_ASYNC, p, v, n, s);
}

DDL_EXPORT cudaError_t cudaMemsetAsync_ptsz(void *p, int v, size_t n, cudaStream_t s)
{
	if (!s)
		s = cudaStreamPerThread; /* 0 means the thread's own stream here */
	return ddl_memset(NULL, DDL_GPU_REAL(cudaMemsetAsync_ptsz), DDL_EV_CUDA_MEMSET_ASYNC, p, v, n, s);
}

/* ---- waits and bookkeeping: host time only ---- */

/* The end of a host wait for the device: with --backtrace, with its stack. */
static inline void ddl_sync_end(struct ddl_call *c, unsigned kind, uint64_t t0, uint64_t t1,
                                int64_t r)
{
	ddl_ring_put_args_call(c->t, kind, 0, t0, t1, r, ddl_gtls.dev, c->sid, &c->a);
	if (ddl_unlikely(!ddl_gpu_started))
		ddl_gpu_first();
}

typedef cudaError_t (*ddl_stream_sync_fn)(cudaStream_t);

static inline cudaError_t ddl_stream_sync(ddl_stream_sync_fn real, cudaStream_t s)
{
	if (ddl_unlikely(!real))
		return cudaErrorNotSupported;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (!t)
		return real(s);
	ddl_other_work(t, s);
	struct ddl_call c;
	ddl_call_begin(&c, t, s, 0);
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_CUDA_STREAM_SYNC, t0, ddl_gtls.dev, c.sid);
	cudaError_t r = real(s);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	ddl_sync_end(&c, DDL_EV_CUDA_STREAM_SYNC, t0, t1, r);
	return r;
}

DDL_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
	return ddl_stream_sync(DDL_GPU_REAL(cudaStreamSynchronize), s);
}

DDL_EXPORT cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s)
{
	if (!s)
		s = cudaStreamPerThread; /* 0 means the thread's own stream here */
	return ddl_stream_sync(DDL_GPU_REAL(cudaStreamSynchronize_ptsz), s);
}

DDL_EXPORT cudaError_t cudaDeviceSynchronize(void)
{
	__typeof__(ddl_gpu_real.cudaDeviceSynchronize) real = DDL_GPU_REAL(cudaDeviceSynchronize);
	if (!real)
		return cudaErrorNotSupported;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (!t)
		return real();
	if (ddl_seg_on) {
		t->busy = 1;
		ddl_seg_close_all();
		t->busy = 0;
	}
	struct ddl_call c;
	ddl_call_begin(&c, t, NULL, 0);
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_CUDA_DEVICE_SYNC, t0, ddl_gtls.dev, 0);
	cudaError_t r = real();
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	ddl_sync_end(&c, DDL_EV_CUDA_DEVICE_SYNC, t0, t1, r);
	return r;
}

DDL_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
	__typeof__(ddl_gpu_real.cudaEventSynchronize) real = DDL_GPU_REAL(cudaEventSynchronize);
	if (!real)
		return cudaErrorNotSupported;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (!t)
		return real(e);
	struct ddl_call c;
	ddl_call_begin(&c, t, NULL, 0);
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_CUDA_EVENT_SYNC, t0, ddl_gtls.dev, 0);
	cudaError_t r = real(e);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	ddl_sync_end(&c, DDL_EV_CUDA_EVENT_SYNC, t0, t1, r);
	return r;
}

typedef cudaError_t (*ddl_wait_event_fn)(cudaStream_t, cudaEvent_t, unsigned int);

static inline cudaError_t ddl_wait_event(ddl_wait_event_fn real, cudaStream_t s, cudaEvent_t e,
                                         unsigned flags)
{
	if (ddl_unlikely(!real))
		return cudaErrorNotSupported;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (!t)
		return real(s, e, flags);
	ddl_other_work(t, s);
	struct ddl_call c;
	ddl_call_begin(&c, t, s, 0);
	uint64_t t0 = ddl_clock_now();
	cudaError_t r = real(s, e, flags);
	uint64_t t1 = ddl_clock_now();
	ddl_call_end(&c, DDL_EV_CUDA_STREAM_WAIT_EVENT, 0, t0, t1, r);
	return r;
}

DDL_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags)
{
	return ddl_wait_event(DDL_GPU_REAL(cudaStreamWaitEvent), s, e, flags);
}

DDL_EXPORT cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t s, cudaEvent_t e, unsigned int flags)
{
	return ddl_wait_event(DDL_GPU_REAL(cudaStreamWaitEvent_ptsz), s, e, flags);
}

typedef cudaError_t (*ddl_event_record_fn)(cudaEvent_t, cudaStream_t);

static inline cudaError_t ddl_event_record(ddl_event_record_fn real, cudaEvent_t e, cudaStream_t s)
{
	if (ddl_unlikely(!real))
		return cudaErrorNotSupported;
	/* An event on a stream is how programs hand work to another stream:
	 * the run of kernels before it ends here (the stream may go idle). */
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (!t)
		return real(e, s);
	ddl_other_work(t, s);
	struct ddl_call c;
	ddl_call_begin(&c, t, s, 0);
	uint64_t t0 = ddl_clock_now();
	cudaError_t r = real(e, s);
	uint64_t t1 = ddl_clock_now();
	ddl_call_end(&c, DDL_EV_CUDA_EVENT_RECORD, 0, t0, t1, r);
	return r;
}

DDL_EXPORT cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
	return ddl_event_record(DDL_GPU_REAL(cudaEventRecord), e, s);
}

DDL_EXPORT cudaError_t cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s)
{
	if (!s)
		s = cudaStreamPerThread; /* 0 means the thread's own stream here */
	return ddl_event_record(DDL_GPU_REAL(cudaEventRecord_ptsz), e, s);
}

/*
 * The program reads and clears its last error (the runtime keeps one per
 * thread): a run of kernels that could not start while it was pending may
 * start at the next launch (gpu.h, DDL_SEG_RETRY). Nothing is recorded.
 */
DDL_EXPORT cudaError_t cudaGetLastError(void)
{
	__typeof__(ddl_gpu_real.cudaGetLastError) f = DDL_GPU_REAL(cudaGetLastError);
	ddl_gtls.seg_skip = 0;
	return f ? f() : cudaErrorNotSupported;
}

DDL_EXPORT cudaError_t cudaSetDevice(int dev)
{
	__typeof__(ddl_gpu_real.cudaSetDevice) real = DDL_GPU_REAL(cudaSetDevice);
	if (!real)
		return cudaErrorNotSupported;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (!t) {
		/* not recorded, but the device stays known: NCCL's pairs use it */
		cudaError_t r = real(dev);
		if (r == cudaSuccess)
			ddl_gtls.dev = dev;
		return r;
	}
	struct ddl_call c;
	ddl_call_begin(&c, t, NULL, 0);
	uint64_t t0 = ddl_clock_now();
	cudaError_t r = real(dev);
	uint64_t t1 = ddl_clock_now();
	if (r == cudaSuccess)
		ddl_gtls.dev = dev;
	c.a.peer = dev;
	ddl_call_end(&c, DDL_EV_CUDA_SET_DEVICE, 0, t0, t1, r);
	return r;
}

DDL_EXPORT cudaError_t cudaMalloc(void **p, size_t n)
{
	__typeof__(ddl_gpu_real.cudaMalloc) real = DDL_GPU_REAL(cudaMalloc);
	if (!real)
		return cudaErrorNotSupported;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (!t)
		return real(p, n);
	struct ddl_call c;
	ddl_call_begin(&c, t, NULL, 0);
	c.a.bytes = n;
	uint64_t t0 = ddl_clock_now();
	cudaError_t r = real(p, n);
	uint64_t t1 = ddl_clock_now();
	ddl_call_end(&c, DDL_EV_CUDA_MALLOC, 0, t0, t1, r);
	return r;
}

DDL_EXPORT cudaError_t cudaFree(void *p)
{
	__typeof__(ddl_gpu_real.cudaFree) real = DDL_GPU_REAL(cudaFree);
	if (!real)
		return cudaErrorNotSupported;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (!t)
		return real(p);
	struct ddl_call c;
	ddl_call_begin(&c, t, NULL, 0);
	uint64_t t0 = ddl_clock_now();
	cudaError_t r = real(p);
	uint64_t t1 = ddl_clock_now();
	ddl_call_end(&c, DDL_EV_CUDA_FREE, 0, t0, t1, r);
	return r;
}

typedef cudaError_t (*ddl_malloc_async_fn)(void **, size_t, cudaStream_t);
typedef cudaError_t (*ddl_free_async_fn)(void *, cudaStream_t);

static inline cudaError_t ddl_malloc_async(ddl_malloc_async_fn real, void **p, size_t n,
                                           cudaStream_t s)
{
	if (ddl_unlikely(!real))
		return cudaErrorNotSupported;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (!t)
		return real(p, n, s);
	struct ddl_call c;
	ddl_call_begin(&c, t, s, 0);
	c.a.bytes = n;
	uint64_t t0 = ddl_clock_now();
	cudaError_t r = real(p, n, s);
	uint64_t t1 = ddl_clock_now();
	ddl_call_end(&c, DDL_EV_CUDA_MALLOC_ASYNC, 0, t0, t1, r);
	return r;
}

static inline cudaError_t ddl_free_async(ddl_free_async_fn real, void *p, cudaStream_t s)
{
	if (ddl_unlikely(!real))
		return cudaErrorNotSupported;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (!t)
		return real(p, s);
	struct ddl_call c;
	ddl_call_begin(&c, t, s, 0);
	uint64_t t0 = ddl_clock_now();
	cudaError_t r = real(p, s);
	uint64_t t1 = ddl_clock_now();
	ddl_call_end(&c, DDL_EV_CUDA_FREE_ASYNC, 0, t0, t1, r);
	return r;
}

DDL_EXPORT cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t s)
{
	return ddl_malloc_async(DDL_GPU_REAL(cudaMallocAsync), p, n, s);
}

DDL_EXPORT cudaError_t cudaMallocAsync_ptsz(void **p, size_t n, cudaStream_t s)
{
	if (!s)
		s = cudaStreamPerThread; /* 0 means the thread's own stream here */
	return ddl_malloc_async(DDL_GPU_REAL(cudaMallocAsync_ptsz), p, n, s);
}

DDL_EXPORT cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
	return ddl_free_async(DDL_GPU_REAL(cudaFreeAsync), p, s);
}

DDL_EXPORT cudaError_t cudaFreeAsync_ptsz(void *p, cudaStream_t s)
{
	if (!s)
		s = cudaStreamPerThread; /* 0 means the thread's own stream here */
	return ddl_free_async(DDL_GPU_REAL(cudaFreeAsync_ptsz), p, s);
}

/*
 * A stream going away ends its run of kernels first (its handle may be
 * reused by the next stream created). Not recorded.
 */
DDL_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t s)
{
	__typeof__(ddl_gpu_real.cudaStreamDestroy) real = DDL_GPU_REAL(cudaStreamDestroy);
	if (!real)
		return cudaErrorNotSupported;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (t && s)
		ddl_other_work(t, s);
	return real(s);
}

/*
 * Stream capture: not recorded, only counted, so that event pairs keep off
 * the legacy stream while any capture is open (touching it would end a
 * global-mode capture with an error the program never made).
 */
typedef cudaError_t (*ddl_begin_capture_fn)(cudaStream_t, enum cudaStreamCaptureMode);
typedef cudaError_t (*ddl_end_capture_fn)(cudaStream_t, cudaGraph_t *);

static inline cudaError_t ddl_begin_capture(ddl_begin_capture_fn real, cudaStream_t s,
                                            enum cudaStreamCaptureMode m)
{
	if (ddl_unlikely(!real))
		return cudaErrorNotSupported;
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_CUDA);
	if (t)
		ddl_other_work(t, s); /* a run of kernels must not end inside the capture */
	ddl_gpu_capture_begin(); /* before: no pair may slip in while it starts */
	cudaError_t r = real(s, m);
	if (r != cudaSuccess)
		ddl_gpu_capture_end();
	return r;
}

static inline cudaError_t ddl_end_capture(ddl_end_capture_fn real, cudaStream_t s, cudaGraph_t *g)
{
	if (ddl_unlikely(!real))
		return cudaErrorNotSupported;
	cudaError_t r = real(s, g);
	/* Ended, successfully or invalidated, unless the stream was not capturing
	 * or the call came from the wrong thread (the capture goes on). No query
	 * of ours here: its error would replace the program's. */
	if (r != cudaErrorIllegalState && r != cudaErrorStreamCaptureWrongThread)
		ddl_gpu_capture_end();
	return r;
}

DDL_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode m)
{
	return ddl_begin_capture(DDL_GPU_REAL(cudaStreamBeginCapture), s, m);
}

DDL_EXPORT cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t s, enum cudaStreamCaptureMode m)
{
	return ddl_begin_capture(DDL_GPU_REAL(cudaStreamBeginCapture_ptsz), s, m);
}

DDL_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
	return ddl_end_capture(DDL_GPU_REAL(cudaStreamEndCapture), s, g);
}

DDL_EXPORT cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t s, cudaGraph_t *g)
{
	return ddl_end_capture(DDL_GPU_REAL(cudaStreamEndCapture_ptsz), s, g);
}

#endif
