/*
 * A stand-in libcupti.so for tests without a GPU: the part of CUPTI's
 * activity API that libddlprof's back end uses (libddlprof/cupti.c), fed
 * by the CPU emulation's activity hook (kernels/ddlemu.h) instead of the
 * driver. It keeps CUPTI's contracts where the back end depends on them:
 * records come in buffers the client supplies, are walked with
 * cuptiActivityGetNextRecord, and are delivered at a flush; a kernel record
 * and the runtime or driver record of the call that launched it share a
 * correlation id; API records are made only for the kinds or the single
 * APIs (cuptiActivityEnableRuntimeApi / EnableDriverApi) enabled;
 * timestamps are nanoseconds on CLOCK_MONOTONIC.
 *
 * Put its directory on LD_LIBRARY_PATH and set DDLPROF_CUPTI=1.
 */
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ddlemu.h"

#define FAKE_MAX_KIND 64
#define FAKE_MAX_CBID 1024

static pthread_mutex_t fake_mu = PTHREAD_MUTEX_INITIALIZER;
static CUpti_BuffersCallbackRequestFunc fake_request;
static CUpti_BuffersCallbackCompleteFunc fake_complete;
static unsigned char fake_kind_on[FAKE_MAX_KIND];
static unsigned char fake_rt_on[FAKE_MAX_CBID], fake_drv_on[FAKE_MAX_CBID];
/* CUPTI's default thread ids are pthread_self() cut to 32 bits; SYSTEM gives gettid */
static CUpti_ActivityThreadIdType fake_tid_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;

/* Records made and not yet delivered. */
union fake_rec {
	CUpti_Activity head;
	CUpti_ActivityKernel10 kernel;
	CUpti_ActivityAPI api;
};
static union fake_rec *fake_pending;
static size_t fake_n, fake_cap;

static size_t fake_size(const CUpti_Activity *r)
{
	switch (r->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return sizeof(CUpti_ActivityKernel10);
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		return sizeof(CUpti_ActivityAPI);
	default:
		return 0;
	}
}

static void fake_push(const union fake_rec *r)
{
	pthread_mutex_lock(&fake_mu);
	if (fake_n == fake_cap) {
		size_t cap = fake_cap ? 2 * fake_cap : 256;
		union fake_rec *p = realloc(fake_pending, cap * sizeof *p);
		if (!p) {
			pthread_mutex_unlock(&fake_mu);
			return; /* CUPTI drops records when it runs out too */
		}
		fake_pending = p;
		fake_cap = cap;
	}
	fake_pending[fake_n++] = *r;
	pthread_mutex_unlock(&fake_mu);
}

/* The callback id of an emulated API, as cupti_runtime_cbid.h and cupti_driver_cbid.h number them. */
static int fake_cbid(const char *api, int driver)
{
	static const struct {
		const char *name;
		int driver, cbid;
	} t[] = {
	    {"cudaLaunchKernel", 0, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000},
	    {"cudaLaunchCooperativeKernel", 0, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000},
	    {"cudaLaunchKernelExC", 0, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060},
	    {"cuLaunchKernel", 1, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel},
	    {"cuLaunchKernelEx", 1, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (t[i].driver == driver && !strcmp(t[i].name, api))
			return t[i].cbid;
	return -1;
}

static void fake_hook(const struct ddlemu_activity *a)
{
	union fake_rec r;
	memset(&r, 0, sizeof r);
	if (a->kind == DDLEMU_ACT_API) {
		int cbid = fake_cbid(a->api, a->driver);
		if (cbid < 0 || cbid >= FAKE_MAX_CBID)
			return;
		CUpti_ActivityKind k = a->driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
		if (!fake_kind_on[k] && !(a->driver ? fake_drv_on : fake_rt_on)[cbid])
			return;
		r.api.kind = k;
		r.api.cbid = (CUpti_CallbackId)cbid;
		r.api.start = a->start;
		r.api.end = a->end;
		r.api.processId = (uint32_t)getpid();
		r.api.threadId = fake_tid_type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM ? a->tid : a->self;
		r.api.correlationId = a->corr;
		r.api.returnValue = (uint32_t)a->result;
	} else if (a->kind == DDLEMU_ACT_KERNEL) {
		if (!fake_kind_on[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] && !fake_kind_on[CUPTI_ACTIVITY_KIND_KERNEL])
			return;
		r.kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
		r.kernel.start = a->start;
		r.kernel.end = a->end;
		r.kernel.deviceId = (uint32_t)a->dev;
		r.kernel.streamId = a->stream;
		r.kernel.correlationId = a->corr;
		r.kernel.name = a->name;
		r.kernel.gridX = (int32_t)a->grid[0], r.kernel.gridY = (int32_t)a->grid[1];
		r.kernel.gridZ = (int32_t)a->grid[2];
		r.kernel.blockX = (int32_t)a->block[0], r.kernel.blockY = (int32_t)a->block[1];
		r.kernel.blockZ = (int32_t)a->block[2];
	} else {
		return;
	}
	fake_push(&r);
}

/* The hook goes in once something is enabled; the emulation is in the program. */
static void fake_attach(void)
{
	void (*set)(ddlemu_activity_fn) = (void (*)(ddlemu_activity_fn))dlsym(RTLD_DEFAULT, "ddlemu_activity_hook");
	if (set)
		set(fake_hook);
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                    CUpti_BuffersCallbackCompleteFunc comp)
{
	if (!req || !comp)
		return CUPTI_ERROR_INVALID_PARAMETER;
	fake_request = req;
	fake_complete = comp;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
	if ((unsigned)kind >= FAKE_MAX_KIND)
		return CUPTI_ERROR_INVALID_KIND;
	fake_kind_on[kind] = 1;
	fake_attach();
	return CUPTI_SUCCESS;
}

static CUptiResult fake_enable_api(unsigned char *on, CUpti_CallbackId cbid, uint8_t enable)
{
	if (cbid >= FAKE_MAX_CBID)
		return CUPTI_ERROR_INVALID_PARAMETER;
	on[cbid] = enable != 0;
	fake_attach();
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable)
{
	return fake_enable_api(fake_rt_on, cbid, enable);
}

CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable)
{
	return fake_enable_api(fake_drv_on, cbid, enable);
}

CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType type)
{
	if (type != CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT && type != CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
		return CUPTI_ERROR_INVALID_PARAMETER;
	fake_tid_type = type;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *ts)
{
	struct timespec t;
	if (!ts)
		return CUPTI_ERROR_INVALID_PARAMETER;
	clock_gettime(CLOCK_MONOTONIC, &t);
	*ts = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char **name)
{
	static const struct {
		CUpti_CallbackDomain domain;
		uint32_t cbid;
		const char *name;
	} t[] = {
	    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel_v7000"},
	    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
	     "cudaLaunchCooperativeKernel_v9000"},
	    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
	     "cudaLaunchKernelExC_v11060"},
	    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel"},
	    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, "cuLaunchKernelEx"},
	};
	if (!name)
		return CUPTI_ERROR_INVALID_PARAMETER;
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (t[i].domain == domain && t[i].cbid == cbid) {
			*name = t[i].name;
			return CUPTI_SUCCESS;
		}
	return CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record)
{
	uint8_t *p = *record ? (uint8_t *)*record + fake_size(*record) : buffer;
	if (p < buffer || p + sizeof(CUpti_Activity) > buffer + valid || p + fake_size((CUpti_Activity *)p) > buffer + valid ||
	    !fake_size((CUpti_Activity *)p))
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*record = (CUpti_Activity *)p;
	return CUPTI_SUCCESS;
}

/* Delivers what was recorded, in buffers the client gives, on the calling thread. */
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
	(void)flag;
	pthread_mutex_lock(&fake_mu);
	union fake_rec *recs = fake_pending;
	size_t n = fake_n;
	fake_pending = NULL;
	fake_n = fake_cap = 0;
	pthread_mutex_unlock(&fake_mu);
	size_t i = 0;
	while (i < n && fake_request && fake_complete) {
		uint8_t *buf = NULL;
		size_t size = 0, max = 0;
		fake_request(&buf, &size, &max);
		if (!buf)
			break;
		size_t used = 0;
		while (i < n) {
			size_t sz = fake_size(&recs[i].head);
			if (used + sz > size)
				break;
			memcpy(buf + used, &recs[i], sz);
			used += sz;
			i++;
		}
		fake_complete(NULL, 0, buf, size, used);
		if (!used)
			break; /* a buffer too small for one record */
	}
	free(recs);
	return CUPTI_SUCCESS;
}
