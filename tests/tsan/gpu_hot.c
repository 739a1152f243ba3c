/*
 * The preload library's GPU hot path under ThreadSanitizer, with many
 * threads, on the CPU emulation of the CUDA runtime and NCCL (kernels/emu,
 * built with TSan too). As for hot.c, `make tsan` compiles the library's
 * sources, here with its CUDA and NCCL wrappers (-DDDL_HAVE_CUDA), into
 * this program: its wrappers interpose on libddlemu from the executable,
 * as the preloaded library does on libcudart and libnccl, and dlsym
 * (RTLD_NEXT) finds the emulation's functions behind them.
 *
 *   gpu_hot       runs `gpu_hot run` with profiling on (harness.c), then
 *                 reads the trace: every call the workload counted is in
 *                 it, each launch with its kernel's name, nothing dropped,
 *                 device intervals for every copy and collective, a clean
 *                 end chunk
 *   gpu_hot run   the workload, which writes what it called to
 *                 DDLPROF_DIR/expected
 *
 * The workload: NTHREADS threads on NDEV emulated devices make their first
 * CUDA calls together (the library's GPU side starts under them), the
 * first a launch of a kernel never registered (its name is asked of the
 * runtime, which the library resolves then; the launch fails), then each
 * launches LAUNCHES kernels of several names (cudaLaunchKernel, every third
 * cuLaunchKernel) on a stream of its own, on a stream its device shares
 * among its threads, on the legacy stream and on the per-thread stream, so
 * the packed launch records go through the rings while the writer expands
 * them, and kernel runs (segments) are opened and closed by threads racing
 * on shared streams. Between launches: cudaMemcpyAsync (an event pair for
 * the resolver thread), cudaEventRecord and cudaStreamWaitEvent on the
 * shared stream, stream, event and device syncs. Halfway, one thread
 * registers a new kernel that the others start launching (names interned
 * while others look them up). The first NDEV threads are the ranks of a
 * communicator (ncclCommInitRank, one thread each) and all-reduce on it
 * every COLL_EVERY launches; one more thread makes a second communicator
 * (ncclCommInitAll) and drives its ranks with grouped all-reduces and
 * send/receive rings. It runs twice: with kernels timed as runs (the
 * default), and with one launch in 10 timed alone (DDLPROF_KERNEL_SAMPLE).
 * Rings hold DDLPROF_BUFFER_EVENTS=8192 slots: a launching thread fills
 * more than half of one (the writer is woken), no thread, the resolver
 * included, puts more than 8192 in one, so nothing may be dropped however
 * late the writer is. About 6 s. Prints "N passed, N failed"; exits 1 on
 * failure.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <nccl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ddlemu.h"
#include "harness.h"
#include "trace_read.h"

#define NDEV 4
#define NTHREADS 16
#define LAUNCHES 3000
#define COPY_EVERY 50
#define EVENT_EVERY 100
#define SYNC_EVERY 300
#define COLL_EVERY 100
#define GROUPS 24
#define COUNT 1024 /* floats per collective */
#define COPY_BYTES 4096
#define NKERN 4
#define TIMEOUT_S 170

/* What the workload called, and the event kind each call is recorded as. */
#define TALLIES(X) \
	X(rt_launch, DDL_EV_CUDA_LAUNCH) \
	X(drv_launch, DDL_EV_CU_LAUNCH) \
	X(memcpy_async, DDL_EV_CUDA_MEMCPY_ASYNC) \
	X(event_record, DDL_EV_CUDA_EVENT_RECORD) \
	X(stream_wait, DDL_EV_CUDA_STREAM_WAIT_EVENT) \
	X(stream_sync, DDL_EV_CUDA_STREAM_SYNC) \
	X(event_sync, DDL_EV_CUDA_EVENT_SYNC) \
	X(device_sync, DDL_EV_CUDA_DEVICE_SYNC) \
	X(allreduce, DDL_EV_NCCL_ALLREDUCE) \
	X(send, DDL_EV_NCCL_SEND) \
	X(recv, DDL_EV_NCCL_RECV) \
	X(group_start, DDL_EV_NCCL_GROUP_START) \
	X(group_end, DDL_EV_NCCL_GROUP_END) \
	X(comm_init_rank, DDL_EV_NCCL_COMM_INIT_RANK) \
	X(comm_init_all, DDL_EV_NCCL_COMM_INIT_ALL) \
	X(comm_destroy, DDL_EV_NCCL_COMM_DESTROY)

struct tally {
#define X_FIELD(n, k) long n;
	TALLIES(X_FIELD)
#undef X_FIELD
	long unregistered; /* launches of a kernel that is not (they fail) */
};

static struct tally tallies[NTHREADS + 2]; /* the workers', the grouper's, main's */

static void die(const char *what, int code)
{
	fprintf(stderr, "gpu_hot run: %s failed (%d)\n", what, code);
	exit(1);
}

#define CK(call) \
	do { \
		int e_ = (int)(call); \
		if (e_) \
			die(#call, e_); \
	} while (0)

/* ---- the kernels: host code the streams' workers run ---- */

static _Atomic long kernels_ran;

static void k_code(void **args)
{
	(void)args;
	atomic_fetch_add_explicit(&kernels_ran, 1, memory_order_relaxed);
}
/* distinct functions: a kernel is known by its host function's address */
static void k0(void **a) { k_code(a); }
static void k1(void **a) { k_code(a); }
static void k2(void **a) { k_code(a); }
static void k3(void **a) { k_code(a); }
static void k_late(void **a) { k_code(a); }
static void k_unregistered(void **a) { k_code(a); }

/* The "host function" a kernel is registered and launched by: its code. */
static const char *host_of(ddlemu_kernel_fn fn)
{
	return (const char *)(uintptr_t)fn;
}

static const struct ddlemu_kernel kernels[NKERN] = {
    {"tsan_k0", 1, {sizeof(int)}}, {"tsan_k1", 1, {sizeof(int)}},
    {"tsan_k2", 1, {sizeof(int)}}, {"tsan_k3", 1, {sizeof(int)}}};
static const struct ddlemu_fatbin fatbin = {DDLEMU_FATBIN_MAGIC, DDLEMU_FATBIN_VERSION, NKERN, kernels};
static const struct ddlemu_kernel late_kernel[1] = {{"tsan_late", 1, {sizeof(int)}}};
static const struct ddlemu_fatbin late_fatbin = {DDLEMU_FATBIN_MAGIC, DDLEMU_FATBIN_VERSION, 1, late_kernel};
static const void *kfn[NKERN];
static _Atomic int late_ready;

static void register_kernels(const struct ddlemu_fatbin *fb, ddlemu_kernel_fn *fns)
{
	void **h = __cudaRegisterFatBinary((void *)fb);
	for (int i = 0; i < fb->nkernels; i++)
		__cudaRegisterFunction(h, host_of(fns[i]), (char *)fb->kernels[i].name, fb->kernels[i].name,
		                       -1, NULL, NULL, NULL, NULL, NULL);
	__cudaRegisterFatBinaryEnd(h);
}

/* ---- the workload ---- */

static cudaStream_t shared_stream[NDEV];
static ncclUniqueId uid;
static ncclComm_t comm_a[NDEV], comm_b[NDEV];
/* go: the threads make their first CUDA calls together (the library's GPU
 * side starts under them); ready: set up, the shared streams made */
static pthread_barrier_t go, ready;

static void launch(struct tally *n, const void *f, int i, cudaStream_t s)
{
	void *args[] = {&i};
	if (i % 3 == 0) {
		CK(cuLaunchKernel((CUfunction)(uintptr_t)f, 2, 1, 1, 64, 1, 1, 0, (CUstream)s, args, NULL));
		n->drv_launch++;
	} else {
		CK(cudaLaunchKernel(f, (dim3){2, 1, 1}, (dim3){64, 1, 1}, args, 0, s));
		n->rt_launch++;
	}
}

static void *worker(void *arg)
{
	long id = (long)arg;
	int dev = (int)(id % NDEV);
	struct tally *n = &tallies[id];
	cudaStream_t own, shared;
	cudaEvent_t ev;
	void *dbuf, *hbuf;
	float *coll = NULL;
	pthread_barrier_wait(&go);
	/* First of all, a kernel never registered: the library looks its
	 * name up in the runtime (which it resolves) in every thread at once */
	int zero = 0;
	void *args[] = {&zero};
	cudaError_t r = cudaLaunchKernel(host_of(k_unregistered), (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, NULL);
	if (r != cudaErrorInvalidDeviceFunction)
		die("cudaLaunchKernel of an unregistered kernel", (int)r);
	cudaGetLastError();
	n->rt_launch++;
	n->unregistered++;
	CK(cudaSetDevice(dev));
	if (id < NDEV) {
		CK(cudaStreamCreateWithFlags(&shared_stream[id], cudaStreamNonBlocking));
		/* the ranks of comm_a join together, one thread each */
		CK(ncclCommInitRank(&comm_a[id], NDEV, uid, (int)id));
		n->comm_init_rank++;
	}
	CK(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking));
	CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
	CK(cudaMalloc(&dbuf, COPY_BYTES));
	CK(cudaMallocHost(&hbuf, COPY_BYTES));
	if (id < NDEV) {
		CK(cudaMalloc((void **)&coll, COUNT * sizeof *coll));
		CK(cudaMemsetAsync(coll, 0, COUNT * sizeof *coll, own));
	}
	pthread_barrier_wait(&ready);
	shared = shared_stream[dev];
	for (int i = 0; i < LAUNCHES; i++) {
		cudaStream_t s = i % 97 == 0    ? NULL
		                 : i % 97 == 48 ? cudaStreamPerThread
		                 : i % 4 == 3   ? shared
		                                : own;
		const void *f = kfn[(i + id) % NKERN];
		if (id == 0 && i == LAUNCHES / 2) {
			register_kernels(&late_fatbin, (ddlemu_kernel_fn[]){k_late});
			atomic_store_explicit(&late_ready, 1, memory_order_release);
		}
		if (i % 10 == 5 && atomic_load_explicit(&late_ready, memory_order_acquire))
			f = host_of(k_late);
		launch(n, f, i, s);
		if (i % COPY_EVERY == COPY_EVERY - 1) {
			CK(cudaMemcpyAsync(dbuf, hbuf, COPY_BYTES, cudaMemcpyHostToDevice, own));
			n->memcpy_async++;
		}
		if (i % EVENT_EVERY == EVENT_EVERY / 2) {
			CK(cudaEventRecord(ev, own));
			CK(cudaStreamWaitEvent(shared, ev, 0));
			n->event_record++;
			n->stream_wait++;
		}
		if (id < NDEV && i % COLL_EVERY == COLL_EVERY - 1) {
			CK(ncclAllReduce(coll, coll, COUNT, ncclFloat, ncclSum, comm_a[id], own));
			n->allreduce++;
		}
		if (i % SYNC_EVERY == SYNC_EVERY - 1) {
			CK(cudaStreamSynchronize(own));
			CK(cudaEventSynchronize(ev));
			n->stream_sync++;
			n->event_sync++;
		}
		if (i == LAUNCHES * 3 / 4) {
			/* every stream of the device, and every open run of kernels */
			CK(cudaDeviceSynchronize());
			n->device_sync++;
		}
	}
	CK(cudaStreamSynchronize(own));
	CK(cudaStreamSynchronize(shared));
	CK(cudaStreamSynchronize(NULL));
	n->stream_sync += 3;
	CK(cudaStreamDestroy(own));
	CK(cudaEventDestroy(ev));
	CK(cudaFree(dbuf));
	CK(cudaFreeHost(hbuf));
	if (coll)
		CK(cudaFree(coll));
	return NULL;
}

/* Drives every rank of comm_b from this one thread: grouped calls. */
static void *grouper(void *arg)
{
	struct tally *n = arg;
	cudaStream_t s[NDEV];
	float *buf[NDEV], *rbuf[NDEV];
	pthread_barrier_wait(&go);
	CK(ncclCommInitAll(comm_b, NDEV, NULL));
	n->comm_init_all++;
	for (int r = 0; r < NDEV; r++) {
		CK(cudaSetDevice(r));
		CK(cudaStreamCreateWithFlags(&s[r], cudaStreamNonBlocking));
		CK(cudaMalloc((void **)&buf[r], COUNT * sizeof(float)));
		CK(cudaMalloc((void **)&rbuf[r], COUNT * sizeof(float)));
		CK(cudaMemsetAsync(buf[r], 0, COUNT * sizeof(float), s[r]));
	}
	pthread_barrier_wait(&ready);
	for (int g = 0; g < GROUPS; g++) {
		CK(ncclGroupStart());
		n->group_start++;
		for (int r = 0; r < NDEV; r++) {
			CK(ncclAllReduce(buf[r], buf[r], COUNT, ncclFloat, ncclSum, comm_b[r], s[r]));
			n->allreduce++;
		}
		if (g % 3 == 2)
			for (int r = 0; r < NDEV; r++) {
				CK(ncclSend(buf[r], COUNT, ncclFloat, (r + 1) % NDEV, comm_b[r], s[r]));
				CK(ncclRecv(rbuf[r], COUNT, ncclFloat, (r + NDEV - 1) % NDEV, comm_b[r], s[r]));
				n->send++;
				n->recv++;
			}
		CK(ncclGroupEnd());
		n->group_end++;
		if (g % 6 == 5)
			for (int r = 0; r < NDEV; r++) {
				CK(cudaStreamSynchronize(s[r]));
				n->stream_sync++;
			}
	}
	for (int r = 0; r < NDEV; r++) {
		CK(cudaStreamSynchronize(s[r]));
		n->stream_sync++;
		CK(cudaStreamDestroy(s[r]));
		CK(cudaFree(buf[r]));
		CK(cudaFree(rbuf[r]));
	}
	return NULL;
}

static int run(void)
{
	struct tally *n = &tallies[NTHREADS + 1];
	register_kernels(&fatbin, (ddlemu_kernel_fn[]){k0, k1, k2, k3});
	kfn[0] = host_of(k0);
	kfn[1] = host_of(k1);
	kfn[2] = host_of(k2);
	kfn[3] = host_of(k3);
	CK(ncclGetUniqueId(&uid));
	pthread_t th[NTHREADS + 1];
	pthread_barrier_init(&go, NULL, NTHREADS + 1);
	pthread_barrier_init(&ready, NULL, NTHREADS + 1);
	for (long i = 0; i < NTHREADS; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)i))
			die("pthread_create", 0);
	if (pthread_create(&th[NTHREADS], NULL, grouper, &tallies[NTHREADS]))
		die("pthread_create", 0);
	for (int i = 0; i <= NTHREADS; i++)
		pthread_join(th[i], NULL);
	for (int d = 0; d < NDEV; d++) {
		CK(ncclCommDestroy(comm_a[d]));
		CK(ncclCommDestroy(comm_b[d]));
		n->comm_destroy += 2;
		CK(cudaStreamDestroy(shared_stream[d]));
	}

	struct tally sum = {0};
	for (int i = 0; i < NTHREADS + 2; i++) {
#define X_SUM(f, k) sum.f += tallies[i].f;
		TALLIES(X_SUM)
#undef X_SUM
		sum.unregistered += tallies[i].unregistered;
	}
	long ran = atomic_load(&kernels_ran);
	if (ran != sum.rt_launch + sum.drv_launch - sum.unregistered) {
		fprintf(stderr, "gpu_hot run: %ld kernels ran of %ld launched\n", ran,
		        sum.rt_launch + sum.drv_launch - sum.unregistered);
		return 1;
	}
	char path[4200];
	snprintf(path, sizeof path, "%s/expected", getenv("DDLPROF_DIR"));
	FILE *f = fopen(path, "w");
	if (!f)
		die("fopen expected", 0);
#define X_PRINT(f_, k) fprintf(f, "%ld\n", sum.f_);
	TALLIES(X_PRINT)
#undef X_PRINT
	fprintf(f, "%ld\n", sum.unregistered);
	return fclose(f) ? 1 : 0;
}

/* ---- the checks, in the parent ---- */

struct seen {
	long kinds[256];
	long named;      /* launches whose args record names one of our kernels */
	long failed;     /* launches that returned cudaErrorInvalidDeviceFunction */
	long late;       /* ... tsan_late */
	long dev_kernel, dev_kernel_runs, dev_memcpy, dev_coll;
	uint64_t dropped;
	size_t threads;
	int nfiles, clean;
};

static int our_kernel(const struct ddl_trace *t, uint32_t name)
{
	const char *s = name < t->nnames ? t->names[name] : NULL;
	if (!s)
		return 0;
	if (!strcmp(s, "tsan_late"))
		return 2;
	return !strncmp(s, "tsan_k", 6) && s[6] >= '0' && s[6] < '0' + NKERN && !s[7];
}

static int read_trace(const char *path, struct seen *w)
{
	struct ddl_trace t;
	char err[512];
	if (ddl_trace_read(path, &t, err, sizeof err) < 0) {
		fprintf(stderr, "tsan: %s\n", err);
		return -1;
	}
	w->nfiles++;
	w->threads += t.nthreads;
	w->dropped += t.end.dropped;
	w->clean = t.ended && !t.truncated && !t.corrupt;
	for (size_t i = 0; i < t.nev; i++) {
		const struct ddl_event *e = &t.ev[i];
		w->kinds[e->kind]++;
		if ((e->kind == DDL_EV_CUDA_LAUNCH || e->kind == DDL_EV_CU_LAUNCH) && (e->flags & DDL_EVF_ARGS) &&
		    i + 1 < t.nev && t.ev[i + 1].kind == DDL_EV_ARGS) {
			struct ddl_args a;
			memcpy(&a, &t.ev[i + 1], sizeof a);
			int k = our_kernel(&t, a.name);
			w->named += k != 0;
			w->failed += e->result == cudaErrorInvalidDeviceFunction;
			w->late += k == 2;
		}
		w->dev_kernel += e->kind == DDL_EV_DEV_KERNEL;
		w->dev_kernel_runs += e->kind == DDL_EV_DEV_KERNEL && (e->flags & DDL_EVF_RUN);
		w->dev_memcpy += e->kind == DDL_EV_DEV_MEMCPY;
		w->dev_coll += e->kind == DDL_EV_DEV_COLL;
	}
	ddl_trace_free(&t);
	return 0;
}

/* Runs the workload with profiling on and the settings ENV, then checks its trace. */
static void check_run(const char *argv0, const char *how, const char *const *env, unsigned sample)
{
	char dir[64], path[4200], what[200];
	fprintf(stderr, "tsan: %s\n", how);
	if (tsan_run_profiled(argv0, dir, env, TIMEOUT_S) < 0) {
		tsan_check(0, "the workload runs");
		return;
	}
	struct tally want;
	snprintf(path, sizeof path, "%s/expected", dir);
	FILE *f = fopen(path, "r");
	int got = 0;
#define X_SCAN(f_, k) got += f && fscanf(f, "%ld", &want.f_) == 1;
	TALLIES(X_SCAN)
#undef X_SCAN
	got += f && fscanf(f, "%ld", &want.unregistered) == 1;
	if (f)
		fclose(f);
	int complete = got == sizeof want / sizeof want.rt_launch;
	tsan_check(complete, "the workload says what it called");

	struct seen w = {0};
	DIR *d = opendir(dir);
	struct dirent *e;
	int bad = 0;
	while (d && (e = readdir(d)))
		if (strstr(e->d_name, ".ddlt")) {
			snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
			bad |= read_trace(path, &w) < 0;
		}
	if (d)
		closedir(d);
	tsan_remove_dir(dir);
	tsan_check(!bad && w.nfiles == 1, "one readable trace");
	tsan_check(w.clean, "the trace ends with an end chunk, nothing truncated or corrupt");
	snprintf(what, sizeof what, "no event dropped (%llu)", (unsigned long long)w.dropped);
	tsan_check(w.dropped == 0, what);
	tsan_check(w.threads >= NTHREADS + 2, "every thread is in the trace");
	if (!complete)
		return;
#define X_CHECK(f_, k) \
	snprintf(what, sizeof what, "%s: %ld recorded of %ld called", #f_, w.kinds[k], want.f_); \
	tsan_check(w.kinds[k] == want.f_, what);
	TALLIES(X_CHECK)
#undef X_CHECK
	long launches = want.rt_launch + want.drv_launch;
	snprintf(what, sizeof what, "every launch names its kernel (%ld of %ld, %ld tsan_late)", w.named,
	         launches - want.unregistered, w.late);
	tsan_check(w.named == launches - want.unregistered && w.late > 0, what);
	snprintf(what, sizeof what, "failed launches recorded with their error (%ld of %ld)", w.failed,
	         want.unregistered);
	tsan_check(w.failed == want.unregistered, what);
	snprintf(what, sizeof what, "a device interval per cudaMemcpyAsync (%ld of %ld)", w.dev_memcpy,
	         want.memcpy_async);
	tsan_check(w.dev_memcpy == want.memcpy_async, what);
	/* an ungrouped collective one each; a group one per stream it used,
	 * which is one per all-reduce in it here */
	snprintf(what, sizeof what, "a device interval per collective or group stream (%ld of %ld)",
	         w.dev_coll, want.allreduce);
	tsan_check(w.dev_coll == want.allreduce, what);
	if (sample) {
		/* one launch in SAMPLE of each worker's, timed alone; no runs */
		long timed = NTHREADS * (LAUNCHES / sample);
		snprintf(what, sizeof what, "a device interval per sampled launch (%ld of %ld, %ld runs)",
		         w.dev_kernel, timed, w.dev_kernel_runs);
		tsan_check(w.dev_kernel == timed && w.dev_kernel_runs == 0, what);
	} else {
		snprintf(what, sizeof what, "runs of kernels timed on the device (%ld)", w.dev_kernel_runs);
		tsan_check(w.dev_kernel_runs > 0 && w.dev_kernel_runs == w.dev_kernel &&
		               w.dev_kernel_runs <= launches,
		           what);
	}
	fprintf(stderr, "tsan: %zu threads, %ld launches, %ld kernel intervals, %ld copies, %ld collectives\n",
	        w.threads, launches, w.dev_kernel, w.dev_memcpy, w.dev_coll);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "run"))
		return run();
#define COMMON "DDLPROF_BUFFER_EVENTS=8192", "DDLPROF_FLUSH_MS=1", "DDLPROF_CUPTI=0", \
	"DDLEMU_DEVICES=4", "DDLEMU_INTRA_GBPS=0"
	static const char *const runs[] = {COMMON, "DDLPROF_KERNEL_SAMPLE=0", NULL};
	static const char *const sampled[] = {COMMON, "DDLPROF_KERNEL_SAMPLE=10", NULL};
#undef COMMON
	check_run(argv[0], "kernels timed in runs (the default)", runs, 0);
	check_run(argv[0], "one launch in 10 timed alone", sampled, 10);
	return tsan_summary();
}
