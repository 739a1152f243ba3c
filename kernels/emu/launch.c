/*
 * Kernel registration and launch on the emulation. Programs register
 * modules and kernels exactly as nvcc-generated code does
 * (__cudaRegisterFatBinary, __cudaRegisterFunction), with the conventions
 * of kernels/ddlemu.h: the fat binary lists each kernel's parameter sizes,
 * and the registered host function is the kernel's code. A launch copies
 * the arguments (so the caller may reuse them at once) and enqueues the
 * kernel on its stream; the worker calls the code, which decides how long
 * the kernel takes. cudaLaunchKernel, cudaLaunchKernelExC,
 * cudaLaunchCooperativeKernel and the driver's cuLaunchKernel and
 * cuLaunchKernelEx (a CUfunction is a registered host function) all end in
 * emu_launch.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cuda.h>

#include "emu.h"

struct emu_module {
	void *fatbin; /* what the program passed */
	const struct ddlemu_fatbin *desc;
};

struct emu_func {
	const void *host;
	const struct ddlemu_kernel *k; /* NULL: layout unknown */
	struct emu_module *mod;
	char *name; /* the deviceName it was registered with */
};

static pthread_mutex_t emu_fn_mu = PTHREAD_MUTEX_INITIALIZER;
static struct emu_func *emu_fns;
static size_t emu_nfns, emu_capfns;

void **__cudaRegisterFatBinary(void *fatCubin)
{
	struct emu_module *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	m->fatbin = fatCubin;
	const struct ddlemu_fatbin *d = fatCubin;
	if (d && d->magic == DDLEMU_FATBIN_MAGIC && d->version == DDLEMU_FATBIN_VERSION &&
	    d->nkernels >= 0 && (d->kernels || d->nkernels == 0))
		m->desc = d;
	return (void **)m;
}

void __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
	(void)fatCubinHandle;
}

void __cudaUnregisterFatBinary(void **fatCubinHandle)
{
	struct emu_module *m = (struct emu_module *)fatCubinHandle;
	if (!m)
		return;
	pthread_mutex_lock(&emu_fn_mu);
	size_t j = 0;
	for (size_t i = 0; i < emu_nfns; i++) {
		if (emu_fns[i].mod != m)
			emu_fns[j++] = emu_fns[i];
		else
			free(emu_fns[i].name);
	}
	emu_nfns = j;
	pthread_mutex_unlock(&emu_fn_mu);
	free(m);
}

static const struct ddlemu_kernel *emu_module_find(const struct emu_module *m, const char *name)
{
	if (!m || !m->desc || !name)
		return NULL;
	for (int i = 0; i < m->desc->nkernels; i++) {
		const struct ddlemu_kernel *k = &m->desc->kernels[i];
		if (k->name && !strcmp(k->name, name) && k->nargs >= 0 && k->nargs <= DDLEMU_MAX_ARGS)
			return k;
	}
	return NULL;
}

void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                            const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
                            dim3 *bDim, dim3 *gDim, int *wSize)
{
	(void)deviceFun;
	(void)thread_limit;
	(void)tid;
	(void)bid;
	(void)bDim;
	(void)gDim;
	(void)wSize;
	struct emu_module *m = (struct emu_module *)fatCubinHandle;
	if (!hostFun)
		return;
	struct emu_func f = {hostFun, emu_module_find(m, deviceName), m, deviceName ? strdup(deviceName) : NULL};
	pthread_mutex_lock(&emu_fn_mu);
	size_t i = 0;
	while (i < emu_nfns && emu_fns[i].host != hostFun)
		i++;
	if (i == emu_nfns && emu_nfns == emu_capfns) {
		size_t cap = emu_capfns ? emu_capfns * 2 : 16;
		struct emu_func *a = realloc(emu_fns, cap * sizeof *a);
		if (!a) {
			pthread_mutex_unlock(&emu_fn_mu);
			free(f.name);
			return;
		}
		emu_fns = a;
		emu_capfns = cap;
	}
	if (i < emu_nfns)
		free(emu_fns[i].name);
	emu_fns[i] = f;
	if (i == emu_nfns)
		emu_nfns++;
	pthread_mutex_unlock(&emu_fn_mu);
}

/* The layout of a registered kernel; NULL when unknown. */
static const struct ddlemu_kernel *emu_func_find(const void *host)
{
	const struct ddlemu_kernel *k = NULL;
	pthread_mutex_lock(&emu_fn_mu);
	for (size_t i = 0; i < emu_nfns; i++)
		if (emu_fns[i].host == host) {
			k = emu_fns[i].k;
			break;
		}
	pthread_mutex_unlock(&emu_fn_mu);
	return k;
}

static size_t emu_align_of(size_t size)
{
	size_t a = 1;
	while (a < 8 && size % (a * 2) == 0)
		a *= 2;
	return a;
}

/* Finds the packed parameter buffer in cuLaunchKernel's extra; 0, or -1 if malformed. */
static int emu_extra_buffer(void **extra, const char **buf, size_t *size)
{
	*buf = NULL;
	*size = 0;
	for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
		if (i > 64)
			return -1;
		if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
			*buf = extra[i + 1];
		else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1])
			*size = *(size_t *)extra[i + 1];
		else
			return -1;
	}
	return *buf || *size == 0 ? 0 : -1;
}

/* Pointers kept for a kernel's arguments: an even count, so the copies after them stay 16-aligned. */
static size_t emu_argv_slots(const struct ddlemu_kernel *k)
{
	return ((size_t)k->nargs + 1) / 2 * 2;
}

/* Copies the arguments into the op; 0, or -1 when they cannot be read. */
static int emu_copy_args(struct emu_op *op, const struct ddlemu_kernel *k, void **args, void **extra,
                         size_t offset)
{
	void **argv = (void **)((char *)op + offset);
	char *data = (char *)(argv + emu_argv_slots(k)); /* 16-aligned, as argv is */
	const char *buf = NULL;
	size_t bufsize = 0, boff = 0;
	if (k->nargs > 0 && !args && (!extra || emu_extra_buffer(extra, &buf, &bufsize) < 0 || !buf))
		return -1;
	for (int i = 0; i < k->nargs; i++) {
		size_t sz = k->arg_size[i];
		const void *from;
		if (args) {
			from = args[i];
		} else {
			size_t al = emu_align_of(sz);
			boff = (boff + al - 1) / al * al;
			if (boff + sz > bufsize)
				return -1;
			from = buf + boff;
			boff += sz;
		}
		if (!from && sz)
			return -1;
		argv[i] = data;
		if (sz)
			memcpy(data, from, sz);
		data += (sz + 15) / 16 * 16;
	}
	op->u.kern.args = argv;
	return 0;
}

/* ---- activity records (kernels/ddlemu.h) ---- */

static _Atomic(ddlemu_activity_fn) emu_act_hook;
static atomic_uint emu_act_corr;

void ddlemu_activity_hook(ddlemu_activity_fn fn)
{
	atomic_store(&emu_act_hook, fn);
}

/* One launch call, as the hook will hear of it. */
struct emu_act_call {
	ddlemu_activity_fn fn;
	uint64_t t0;
	uint32_t corr;
};

static uint32_t emu_act_begin(struct emu_act_call *c)
{
	c->fn = atomic_load_explicit(&emu_act_hook, memory_order_acquire);
	if (!c->fn)
		return 0;
	c->t0 = emu_now();
	c->corr = atomic_fetch_add(&emu_act_corr, 1) + 1;
	if (!c->corr) /* 0 means "no record": skip it when the counter wraps */
		c->corr = atomic_fetch_add(&emu_act_corr, 1) + 1;
	return c->corr;
}

static void emu_act_end(const struct emu_act_call *c, const char *api, int driver, int result)
{
	if (!c->fn)
		return;
	struct ddlemu_activity a = {.kind = DDLEMU_ACT_API, .corr = c->corr, .start = c->t0, .end = emu_now(),
	                            .api = api, .driver = driver, .result = result,
	                            .tid = (uint32_t)syscall(SYS_gettid),
	                            .self = (uint32_t)(uintptr_t)pthread_self()};
	c->fn(&a);
}

void emu_act_kernel(const struct emu_op *op, int dev, uint32_t sid, uint64_t start, uint64_t end)
{
	ddlemu_activity_fn fn = atomic_load_explicit(&emu_act_hook, memory_order_acquire);
	if (!fn || op->kind != EMU_OP_KERNEL || !op->u.kern.corr)
		return;
	struct ddlemu_activity a = {.kind = DDLEMU_ACT_KERNEL, .corr = op->u.kern.corr, .start = start,
	                            .end = end, .name = op->u.kern.name, .dev = dev, .stream = sid};
	memcpy(a.grid, op->u.kern.grid, sizeof a.grid);
	memcpy(a.block, op->u.kern.block, sizeof a.block);
	fn(&a);
}

cudaError_t emu_launch(const void *func, dim3 grid, dim3 block, void **args, void **extra, size_t shmem,
                       cudaStream_t stream, uint32_t corr)
{
	struct emu_stream *s;
	const struct ddlemu_kernel *k = func ? emu_func_find(func) : NULL;
	if (!k)
		return cudaErrorInvalidDeviceFunction;
	if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z || grid.y > 65535 ||
	    grid.z > 65535 || block.z > 64 || (uint64_t)block.x * block.y * block.z > 1024 ||
	    shmem > (227u << 10))
		return cudaErrorInvalidConfiguration;
	cudaError_t e = emu_stream_get(stream, &s);
	if (e)
		return e;
	size_t bytes = 0;
	for (int i = 0; i < k->nargs; i++)
		bytes += (k->arg_size[i] + 15) / 16 * 16;
	size_t offset = (sizeof(struct emu_op) + 15) / 16 * 16 - sizeof(struct emu_op);
	struct emu_op *op = emu_op_new(EMU_OP_KERNEL, offset + emu_argv_slots(k) * sizeof(void *) + bytes);
	if (!op)
		return cudaErrorMemoryAllocation;
	if (emu_copy_args(op, k, args, extra, sizeof *op + offset) < 0) {
		free(op);
		return cudaErrorInvalidValue;
	}
	/* the registered host function is the kernel's code (kernels/ddlemu.h) */
	memcpy(&op->u.kern.fn, &func, sizeof op->u.kern.fn);
	if (corr) {
		op->u.kern.corr = corr;
		op->u.kern.name = k->name;
		op->u.kern.grid[0] = grid.x, op->u.kern.grid[1] = grid.y, op->u.kern.grid[2] = grid.z;
		op->u.kern.block[0] = block.x, op->u.kern.block[1] = block.y, op->u.kern.block[2] = block.z;
	}
	emu_stream_push(s, op);
	return cudaSuccess;
}

cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                             cudaStream_t stream)
{
	struct emu_act_call c;
	cudaError_t e = emu_err(emu_launch(func, gridDim, blockDim, args, NULL, sharedMem, stream, emu_act_begin(&c)));
	emu_act_end(&c, "cudaLaunchKernel", 0, e);
	return e;
}

cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                        size_t sharedMem, cudaStream_t stream)
{
	struct emu_act_call c;
	cudaError_t e = emu_err(emu_launch(func, gridDim, blockDim, args, NULL, sharedMem, stream, emu_act_begin(&c)));
	emu_act_end(&c, "cudaLaunchCooperativeKernel", 0, e);
	return e;
}

/* Launch attributes (clusters, priorities, programmatic serialisation) are accepted and ignored. */
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args)
{
	struct emu_act_call c;
	uint32_t corr = emu_act_begin(&c);
	cudaError_t e = !config || (config->numAttrs && !config->attrs)
	                    ? emu_err(cudaErrorInvalidValue)
	                    : emu_err(emu_launch(func, config->gridDim, config->blockDim, args, NULL,
	                                         config->dynamicSmemBytes, config->stream, corr));
	emu_act_end(&c, "cudaLaunchKernelExC", 0, e);
	return e;
}

/* The registered name of a kernel (CUDA 12.3 and later): a profiler loaded
 * after the registration asks the runtime for it. */
cudaError_t cudaFuncGetName(const char **name, const void *func)
{
	if (!name || !func)
		return emu_err(cudaErrorInvalidValue);
	cudaError_t r = cudaErrorInvalidDeviceFunction;
	pthread_mutex_lock(&emu_fn_mu);
	for (size_t i = 0; i < emu_nfns; i++)
		if (emu_fns[i].host == func && emu_fns[i].name) {
			*name = emu_fns[i].name; /* lives as long as the registration */
			r = cudaSuccess;
			break;
		}
	pthread_mutex_unlock(&emu_fn_mu);
	return emu_err(r);
}

/* ---- the driver API entry points ---- */

/* The registered name of a kernel (a CUfunction is its registered host function). */
CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
	if (!name || !hfunc)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&emu_fn_mu);
	for (size_t i = 0; i < emu_nfns; i++)
		if (emu_fns[i].host == (const void *)hfunc && emu_fns[i].name) {
			*name = emu_fns[i].name; /* lives as long as the registration */
			r = CUDA_SUCCESS;
			break;
		}
	pthread_mutex_unlock(&emu_fn_mu);
	return r;
}

static CUresult emu_cu_result(cudaError_t e)
{
	switch (e) {
	case cudaSuccess: return CUDA_SUCCESS;
	case cudaErrorInvalidDeviceFunction:
	case cudaErrorInvalidResourceHandle: return CUDA_ERROR_INVALID_HANDLE;
	case cudaErrorMemoryAllocation: return CUDA_ERROR_OUT_OF_MEMORY;
	case cudaErrorInitializationError: return CUDA_ERROR_NOT_INITIALIZED;
	default: return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult cuInit(unsigned int Flags)
{
	if (Flags)
		return CUDA_ERROR_INVALID_VALUE;
	emu_init();
	return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                        unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                        unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
	dim3 g = {gridDimX, gridDimY, gridDimZ}, b = {blockDimX, blockDimY, blockDimZ};
	struct emu_act_call c;
	uint32_t corr = emu_act_begin(&c);
	CUresult r = kernelParams && extra ? CUDA_ERROR_INVALID_VALUE
	                                   : emu_cu_result(emu_launch((const void *)f, g, b, kernelParams, extra,
	                                                              sharedMemBytes, (cudaStream_t)hStream, corr));
	emu_act_end(&c, "cuLaunchKernel", 1, (int)r);
	return r;
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
	struct emu_act_call c;
	uint32_t corr = emu_act_begin(&c);
	CUresult r;
	if (!config || (config->numAttrs && !config->attrs) || (kernelParams && extra)) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		dim3 g = {config->gridDimX, config->gridDimY, config->gridDimZ};
		dim3 b = {config->blockDimX, config->blockDimY, config->blockDimZ};
		r = emu_cu_result(emu_launch((const void *)f, g, b, kernelParams, extra, config->sharedMemBytes,
		                             (cudaStream_t)config->hStream, corr));
	}
	emu_act_end(&c, "cuLaunchKernelEx", 1, (int)r);
	return r;
}

/*
 * The per-thread-default-stream entry points (programs built with
 * --default-stream per-thread call these): the same code under a second
 * name, so a profiler wrapping both still sees one call. The emulation's
 * per-thread default stream is the legacy stream (README).
 */
__typeof__(cudaLaunchKernel) cudaLaunchKernel_ptsz __attribute__((alias("cudaLaunchKernel")));
__typeof__(cudaLaunchKernelExC) cudaLaunchKernelExC_ptsz __attribute__((alias("cudaLaunchKernelExC")));
__typeof__(cudaLaunchCooperativeKernel) cudaLaunchCooperativeKernel_ptsz __attribute__((alias("cudaLaunchCooperativeKernel")));
__typeof__(cuLaunchKernel) cuLaunchKernel_ptsz __attribute__((alias("cuLaunchKernel")));
__typeof__(cuLaunchKernelEx) cuLaunchKernelEx_ptsz __attribute__((alias("cuLaunchKernelEx")));
