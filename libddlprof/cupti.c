/*
 * The CUPTI activity back end: every kernel, memcpy and memset the device
 * runs, with its start and end on the GPU, whether or not we saw the call
 * that launched it (a framework that links the CUDA runtime statically
 * launches past our wrappers; CUPTI still sees the work).
 *
 * libcupti is opened with dlopen only when a GPU driver is present
 * (DDLPROF_CUPTI=auto, the default) or when asked (DDLPROF_CUPTI=1). It
 * starts at the first CUDA call we intercept, or earlier when the CUDA
 * driver loads us through CUDA_INJECTION64_PATH (InitializeInjection).
 * Any failure leaves the event-pair back end in charge, with one line.
 *
 * GPU timestamps are CUPTI's nanoseconds; paired readings of cuptiGetTimestamp
 * and our clock, taken at start and at every flush, map them onto the trace
 * clock. While CUPTI runs, launches are not also timed with event pairs.
 *
 * Correlation: CUPTI's runtime and driver records of the calls that put
 * work on the device (launches, graph launches, copies, memsets; enabled
 * one API at a time, so the program's many other CUDA calls cost nothing)
 * become cuda_api events carrying the correlation id their kernel, memcpy
 * or memset records carry too. The report joins them: each device interval
 * to the host call that issued it (ours or one we never saw, such as a
 * statically linked runtime's), and so how long work waited on the device.
 */
#ifdef DDL_HAVE_CUDA
#include <cupti.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu.h"

int ddl_cupti_on;

static struct {
	CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
	CUptiResult (*enable)(CUpti_ActivityKind);
	CUptiResult (*flush_all)(uint32_t);
	CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
	CUptiResult (*timestamp)(uint64_t *);
	/* optional: per-API records (CUDA 12.x and later) and API names */
	CUptiResult (*enable_rt)(CUpti_CallbackId, uint8_t);
	CUptiResult (*enable_drv)(CUpti_CallbackId, uint8_t);
	CUptiResult (*cb_name)(CUpti_CallbackDomain, uint32_t, const char **);
	double ticks_per_ns;
	int64_t offset_ticks; /* trace ticks at CUPTI time 0, as fitted */
	pthread_mutex_t lock;
} ddl_cp = {.lock = PTHREAD_MUTEX_INITIALIZER};

#define DDL_CUPTI_BUF (4u << 20)

static void ddl_cupti_sync_clock(void)
{
	uint64_t g = 0, a = ddl_clock_now();
	if (ddl_cp.timestamp(&g) != CUPTI_SUCCESS)
		return;
	uint64_t b = ddl_clock_now();
	double ticks = (double)(a + (b - a) / 2);
	ddl_cp.offset_ticks = (int64_t)(ticks - (double)g * ddl_cp.ticks_per_ns);
}

static uint64_t ddl_cupti_ticks(uint64_t gpu_ns)
{
	double t = (double)gpu_ns * ddl_cp.ticks_per_ns + (double)ddl_cp.offset_ticks;
	return t > 0 ? (uint64_t)t : 0;
}

/* CUPTI calls this on the program's own threads, inside their CUDA calls: errno is theirs. */
static void CUPTIAPI ddl_cupti_buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
	int saved = errno;
	*buf = aligned_alloc(8, DDL_CUPTI_BUF);
	*size = *buf ? DDL_CUPTI_BUF : 0;
	*max_records = 0;
	errno = saved;
}

/*
 * The calls whose records tie device work to the host: everything that
 * launches a kernel or a graph, copies or sets memory.
 */
static const CUpti_CallbackId ddl_cupti_rt_apis[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000,
};
static const CUpti_CallbackId ddl_cupti_drv_apis[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

/* Interned API names by domain and callback id, "cudaLaunchKernel_v7000" as "cudaLaunchKernel". */
#define DDL_CUPTI_MAX_CBID 2048
typedef _Atomic uint32_t ddl_cupti_name_tab[2][DDL_CUPTI_MAX_CBID];
static void *_Atomic ddl_cupti_names_map; /* a ddl_cupti_name_tab, mapped on first use (ddl_lazy) */

static uint32_t ddl_cupti_api_name(int driver, uint32_t cbid)
{
	if (cbid >= DDL_CUPTI_MAX_CBID || !ddl_cp.cb_name)
		return 0;
	ddl_cupti_name_tab *names = ddl_lazy(&ddl_cupti_names_map, sizeof *names);
	if (!names)
		return 0; /* unnamed: the call's kind still says what it was */
	uint32_t id = atomic_load_explicit(&(*names)[driver][cbid], memory_order_relaxed);
	if (id)
		return id;
	const char *name = NULL;
	if (ddl_cp.cb_name(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name) !=
	        CUPTI_SUCCESS || !name)
		return 0;
	char buf[256];
	size_t n = strnlen(name, sizeof buf - 1);
	memcpy(buf, name, n);
	buf[n] = 0;
	char *v = strrchr(buf, '_');
	if (v && v[1] == 'v' && v[2] && strspn(v + 2, "0123456789") == strlen(v + 2))
		*v = 0;
	id = ddl_name_intern(buf);
	atomic_store_explicit(&(*names)[driver][cbid], id, memory_order_relaxed);
	return id;
}

/* A runtime or driver record: the call on the host, tied to its device work by correlationId. */
static void ddl_cupti_api(const CUpti_ActivityAPI *r)
{
	int driver = r->kind == CUPTI_ACTIVITY_KIND_DRIVER;
	struct ddl_args a = ddl_args_make();
	a.name = ddl_cupti_api_name(driver, r->cbid);
	a.corr = r->correlationId;
	a.bytes = r->threadId; /* CUPTI's thread id, as it gave it */
	a.aux = r->cbid;
	a.op = (uint8_t)(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API);
	a.peer = (int32_t)r->returnValue;
	int idx = ddl_thread_idx_of((pid_t)r->threadId);
	struct ddl_thread *own = idx < 0 ? ddl_thread_internal_ring() : NULL;
	if (idx < 0 && !own)
		return;
	ddl_device_put(DDL_EV_CUDA_API, DDL_EVF_CUPTI, ddl_cupti_ticks(r->start), ddl_cupti_ticks(r->end),
	               (uint16_t)(idx < 0 ? own->idx : idx), -1, 0, r->correlationId, &a);
}

/* CUPTI stream ids are per context; ours have the top bit set to keep them apart. */
#define DDL_CUPTI_STREAM(id) (0x80000000u | (id))

static void CUPTIAPI ddl_cupti_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf,
                                                size_t size, size_t valid)
{
	int saved = errno;
	(void)ctx;
	(void)stream;
	(void)size;
	CUpti_Activity *rec = NULL;
	while (valid && ddl_cp.next_record(buf, valid, &rec) == CUPTI_SUCCESS) {
		struct ddl_args a = ddl_args_make();
		switch (rec->kind) {
		case CUPTI_ACTIVITY_KIND_KERNEL:
		case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
			CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)rec;
			a.name = k->name ? ddl_name_intern(k->name) : 0;
			a.bytes = (uint64_t)k->gridX * k->gridY * k->gridZ;
			a.aux = (uint32_t)(k->blockX * k->blockY * k->blockZ);
			a.corr = k->correlationId;
			ddl_device_put(DDL_EV_DEV_KERNEL, DDL_EVF_CUPTI, ddl_cupti_ticks(k->start),
			               ddl_cupti_ticks(k->end), 0, (int)k->deviceId,
			               DDL_CUPTI_STREAM(k->streamId), k->correlationId, &a);
			break;
		}
		case CUPTI_ACTIVITY_KIND_MEMCPY: {
			CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *)rec;
			a.bytes = m->bytes;
			a.op = m->copyKind;
			a.corr = m->correlationId;
			ddl_device_put(DDL_EV_DEV_MEMCPY, DDL_EVF_CUPTI, ddl_cupti_ticks(m->start),
			               ddl_cupti_ticks(m->end), 0, (int)m->deviceId,
			               DDL_CUPTI_STREAM(m->streamId), m->correlationId, &a);
			break;
		}
		case CUPTI_ACTIVITY_KIND_RUNTIME:
		case CUPTI_ACTIVITY_KIND_DRIVER:
			ddl_cupti_api((const CUpti_ActivityAPI *)rec);
			break;
		case CUPTI_ACTIVITY_KIND_MEMSET: {
			CUpti_ActivityMemset4 *m = (CUpti_ActivityMemset4 *)rec;
			a.bytes = m->bytes;
			a.corr = m->correlationId;
			ddl_device_put(DDL_EV_DEV_MEMSET, DDL_EVF_CUPTI, ddl_cupti_ticks(m->start),
			               ddl_cupti_ticks(m->end), 0, (int)m->deviceId,
			               DDL_CUPTI_STREAM(m->streamId), m->correlationId, &a);
			break;
		}
		default:
			break;
		}
	}
	free(buf);
	errno = saved;
}

static void *ddl_cupti_open(void)
{
	static const char *const names[] = {
	    "libcupti.so", "libcupti.so.13", "libcupti.so.12",
	    "/usr/local/cuda/lib64/libcupti.so", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (h)
			return h;
	}
	return NULL;
}

static void ddl_cupti_atexit(void)
{
	ddl_gpu_stop();
}

/* Set at exit (ddl_gpu_stop): a late start from the helper must not run
 * while the driver is being torn down. */
static int ddl_cupti_closed;

void ddl_cupti_close(void)
{
	pthread_mutex_lock(&ddl_cp.lock);
	ddl_cupti_closed = 1;
	pthread_mutex_unlock(&ddl_cp.lock);
}

static int ddl_cupti_start_locked(void)
{
	if (ddl_cupti_on)
		return 0;
	if (ddl_cupti_closed)
		return -1;
	/* Auto: only where the program drives a real GPU, that is where the
	 * driver library is loaded into it by now (after its first CUDA call,
	 * or calling InitializeInjection). A program on another runtime (the
	 * CPU emulation, say) on a machine with a GPU keeps the event pairs,
	 * which its runtime answers. */
	if (ddl_g.cfg.cupti < 0) {
		void *cuda = access("/proc/driver/nvidia/version", F_OK) == 0
		                 ? dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)
		                 : NULL;
		if (!cuda)
			return -1; /* no GPU driver in this process: the event pairs do the work */
		dlclose(cuda);
	}
	void *h = ddl_cupti_open();
	if (!h) {
		if (ddl_g.cfg.cupti > 0)
			ddl_warn("DDLPROF_CUPTI=1 but libcupti cannot be loaded; timing with CUDA events");
		return -1;
	}
	ddl_cp.register_callbacks = (__typeof__(ddl_cp.register_callbacks))dlsym(h, "cuptiActivityRegisterCallbacks");
	ddl_cp.enable = (__typeof__(ddl_cp.enable))dlsym(h, "cuptiActivityEnable");
	ddl_cp.flush_all = (__typeof__(ddl_cp.flush_all))dlsym(h, "cuptiActivityFlushAll");
	ddl_cp.next_record = (__typeof__(ddl_cp.next_record))dlsym(h, "cuptiActivityGetNextRecord");
	ddl_cp.timestamp = (__typeof__(ddl_cp.timestamp))dlsym(h, "cuptiGetTimestamp");
	ddl_cp.enable_rt = (__typeof__(ddl_cp.enable_rt))dlsym(h, "cuptiActivityEnableRuntimeApi");
	ddl_cp.enable_drv = (__typeof__(ddl_cp.enable_drv))dlsym(h, "cuptiActivityEnableDriverApi");
	ddl_cp.cb_name = (__typeof__(ddl_cp.cb_name))dlsym(h, "cuptiGetCallbackName");
	/* CUPTI's thread ids are pthread_self() cut to 32 bits unless asked for the
	 * system's (gettid), which the trace's thread table holds */
	CUptiResult (*tid_type)(CUpti_ActivityThreadIdType) =
	    (__typeof__(tid_type))dlsym(h, "cuptiSetThreadIdType");
	if (tid_type)
		tid_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	if (!ddl_cp.register_callbacks || !ddl_cp.enable || !ddl_cp.flush_all || !ddl_cp.next_record ||
	    !ddl_cp.timestamp)
		goto fail;
	ddl_cp.ticks_per_ns = ddl_clock_ticks_per_ns();
	ddl_cupti_sync_clock();
	if (ddl_cp.register_callbacks(ddl_cupti_buffer_requested, ddl_cupti_buffer_completed) !=
	    CUPTI_SUCCESS)
		goto fail;
	if (ddl_cp.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
		goto fail;
	ddl_cp.enable(CUPTI_ACTIVITY_KIND_MEMCPY);
	ddl_cp.enable(CUPTI_ACTIVITY_KIND_MEMSET);
	/* one API at a time: the whole RUNTIME kind would record every cudaGetDevice */
	if (ddl_cp.enable_rt && ddl_cp.enable_drv) {
		for (size_t i = 0; i < sizeof ddl_cupti_rt_apis / sizeof ddl_cupti_rt_apis[0]; i++)
			ddl_cp.enable_rt(ddl_cupti_rt_apis[i], 1);
		for (size_t i = 0; i < sizeof ddl_cupti_drv_apis / sizeof ddl_cupti_drv_apis[0]; i++)
			ddl_cp.enable_drv(ddl_cupti_drv_apis[i], 1);
	}
	ddl_cupti_on = 1;
	ddl_g.cfg.kernel_sample = 0; /* CUPTI sees every kernel */
	ddl_seg_on = 0;
	/* flush before CUPTI's and the runtime's own exit handlers (registered
	 * before ours, so they run after) tear them down */
	atexit(ddl_cupti_atexit);
	return 0;
fail:
	ddl_warn("CUPTI could not be started; timing with CUDA events instead");
	return -1;
}

void ddl_cupti_after_fork_child(void)
{
	pthread_mutex_init(&ddl_cp.lock, NULL);
}

int ddl_cupti_start(void)
{
	pthread_mutex_lock(&ddl_cp.lock);
	int rc = ddl_cupti_start_locked();
	pthread_mutex_unlock(&ddl_cp.lock);
	return rc;
}

void ddl_cupti_flush(void)
{
	if (!ddl_cupti_on)
		return;
	ddl_cupti_sync_clock();
	ddl_cp.flush_all(1 /* CUPTI_ACTIVITY_FLAG_FLUSH_FORCED */);
}

/*
 * CUPTI is started off the program's thread, and not while the program's
 * first CUDA call is still running: enabled during that call (the driver's
 * initialisation, which calls us), its hooks changed what the call left in
 * errno on a real GPU (seen on an H200: errno 2 became 0 after
 * cudaGetDeviceCount), also when started from another thread at once.
 * The helper waits for the driver's initialisation (cuInit returns once it
 * is done, on any thread), then 50 ms more for the call to return; a
 * wrapped CUDA call starts CUPTI first, right after its real call
 * (ddl_gpu_first), so this waiting matters only to programs whose CUDA
 * calls we do not see (a statically linked runtime). Until CUPTI runs, the
 * event pairs time what they see; a context takes longer to create than
 * the wait anyway.
 */
static void *ddl_cupti_injected_main(void *arg)
{
	(void)arg;
	ddl_thread_mark_internal(); /* the calls CUPTI and the driver make here are not the program's */
	/* the driver that loaded us; the runtime loads it without RTLD_GLOBAL */
	void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	CUresult (*cu_init)(unsigned) = cuda ? (CUresult(*)(unsigned))dlsym(cuda, "cuInit") : NULL;
	if (cu_init)
		cu_init(0);
	if (cuda)
		dlclose(cuda);
	struct timespec ts = {0, 50 * 1000 * 1000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	ddl_cupti_start();
	return NULL;
}

/* Called by the CUDA driver, inside cuInit, when CUDA_INJECTION64_PATH names this library. */
DDL_EXPORT int InitializeInjection(void)
{
	int saved = errno;
	if (!ddl_g.initialised)
		ddl_init();
	if (atomic_load(&ddl_g.enabled) && ddl_g.cfg.trace_cuda && ddl_g.cfg.cupti != 0 && !ddl_cupti_on) {
		pthread_t th;
		pthread_attr_t a;
		sigset_t all, old;
		sigfillset(&all);
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		pthread_sigmask(SIG_SETMASK, &all, &old); /* the helper takes none of the program's signals */
		if (pthread_create(&th, &a, ddl_cupti_injected_main, NULL) != 0)
			ddl_cupti_start(); /* no thread: here, as before */
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&a);
	}
	errno = saved;
	return 1;
}

#endif
