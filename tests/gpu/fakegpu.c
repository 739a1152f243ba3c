/*
 * The tables of real functions, faked (ddl_real_set), on any machine:
 * every entry of every family can be pointed at a fake and back; then CUDA
 * runtime, driver, NCCL and socket calls go to fakes, and the wrappers must
 * hand the fakes the program's arguments and the program the fakes'
 * results. Run under ddlprof; t_gpu.c reads the trace. Prints a line per
 * family ("family NAME ENTRIES RESOLVED") and the calls the fakes saw.
 * Exit 77 without the library, 1 on a mismatch.
 *
 *   fakegpu steps N   N training steps of two all-reduces each (1 and 7 MB,
 *                     the fakes take 12 and 25 ms), 50 ms of compute before
 *                     each step and 40 between its two calls, but 2 in every
 *                     third step: pauses that repeat every three steps
 *   fakegpu micro N   N steps of two micro-batches alike (the same two
 *                     all-reduces each, 10 ms apart), 60 ms before each step
 *   Both print "step S ms", the mean step the program timed itself.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

typedef void *(*set_fn)(const char *, void *);
typedef const char *(*entry_fn)(unsigned, const char **, void **);

static int bad;
#define EXPECT(c, ...) \
	do { \
		if (!(c)) { \
			fprintf(stderr, "fakegpu: " __VA_ARGS__); \
			fputc('\n', stderr); \
			bad = 1; \
		} \
	} while (0)

static int n_launch, n_memcpy, n_sync, n_cu, n_allreduce, n_query, n_send;
static cudaStream_t the_stream = (cudaStream_t)0x5000;

static cudaError_t fake_launch(const void *f, dim3 g, dim3 b, void **args, size_t shm, cudaStream_t s)
{
	(void)f;
	(void)args;
	EXPECT(g.x == 4 && g.y == 2 && b.x == 128 && shm == 64 && s == the_stream, "launch arguments");
	return ++n_launch == 5 ? cudaErrorLaunchFailure : cudaSuccess;
}

static cudaError_t fake_memcpy(void *d, const void *src, size_t n, enum cudaMemcpyKind k, cudaStream_t s)
{
	EXPECT(d && src && n == 4096 && k == cudaMemcpyHostToDevice && s == the_stream, "memcpy arguments");
	n_memcpy++;
	return cudaSuccess;
}

static cudaError_t fake_sync(cudaStream_t s)
{
	EXPECT(s == the_stream, "sync arguments");
	n_sync++;
	return cudaSuccess;
}

static CUresult fake_cu_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shm, CUstream s, void **p, void **x)
{
	(void)f;
	(void)p;
	(void)x;
	EXPECT(gx == 8 && gy == 1 && gz == 1 && bx == 32 && by == 1 && bz == 1 && shm == 0 &&
	       s == (CUstream)the_stream, "cuLaunchKernel arguments");
	n_cu++;
	return CUDA_SUCCESS;
}

static ncclResult_t fake_allreduce(const void *sb, void *rb, size_t count, ncclDataType_t dt, ncclRedOp_t op,
                                   ncclComm_t comm, cudaStream_t s)
{
	EXPECT(sb && rb && count == 1000 && dt == ncclFloat32 && op == ncclSum && comm == (ncclComm_t)0x1234 &&
	       s == the_stream, "allreduce arguments");
	n_allreduce++;
	return ncclSuccess;
}

static ncclResult_t fake_query(const ncclComm_t c, int *v)
{
	(void)c;
	*v = n_query++ % 3 == 1 ? 2 : 0; /* rank 0, of 2, on device 0 */
	return ncclSuccess;
}

static ssize_t fake_send(int fd, const void *b, size_t n, int flags)
{
	(void)fd;
	(void)b;
	(void)flags;
	n_send++;
	return (ssize_t)n - 1; /* a short send: the program sees it */
}

static void fake_marker(void)
{
}

static void sleep_ms(double ms)
{
	struct timespec ts = {(time_t)(ms / 1e3), (long)((ms - (double)(time_t)(ms / 1e3) * 1e3) * 1e6)};
	while (nanosleep(&ts, &ts) != 0)
		;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* An all-reduce that takes 12 ms a MB, up to 25 ms: the wire's time. */
static ncclResult_t fake_slow_allreduce(const void *sb, void *rb, size_t count, ncclDataType_t dt,
                                        ncclRedOp_t op, ncclComm_t comm, cudaStream_t s)
{
	(void)sb, (void)rb, (void)dt, (void)op, (void)comm, (void)s;
	sleep_ms(count * 4 < (2u << 20) ? 12 : 25);
	return ncclSuccess;
}

/* The training loops of "steps" and "micro"; 0, or 2 on a bad mode. */
static int loop(const char *mode, int n, set_fn set)
{
	set("ncclAllReduce", (void *)fake_slow_allreduce);
	set("ncclCommUserRank", (void *)fake_query);
	set("ncclCommCount", (void *)fake_query);
	set("ncclCommCuDevice", (void *)fake_query);
	static float buf[(7u << 20) / 4];
	int micro = !strcmp(mode, "micro");
	if (!micro && strcmp(mode, "steps"))
		return 2;
	double t0 = 0;
	for (int i = 0; i < n; i++) {
		if (i == 1)
			t0 = now_ms(); /* the first step sets up */
		sleep_ms(micro ? 60 : 50);
		for (int m = 0; m < (micro ? 2 : 1); m++) {
			if (m)
				sleep_ms(10);
			ncclAllReduce(buf, buf, (1u << 20) / 4, ncclFloat32, ncclSum, (ncclComm_t)0x1234, the_stream);
			sleep_ms(micro ? 10 : i % 3 == 2 ? 2 : 40);
			ncclAllReduce(buf, buf, (7u << 20) / 4, ncclFloat32, ncclSum, (ncclComm_t)0x1234, the_stream);
		}
	}
	printf("step %.3f ms\n", (now_ms() - t0) / (n - 1));
	return 0;
}

int main(int argc, char **argv)
{
	set_fn set = (set_fn)dlsym(RTLD_DEFAULT, "ddl_real_set");
	entry_fn entry = (entry_fn)dlsym(RTLD_DEFAULT, "ddl_real_entry");
	if (!set || !entry) {
		fprintf(stderr, "fakegpu: run it under ddlprof\n");
		return 77;
	}
	if (argc == 3)
		return loop(argv[1], atoi(argv[2]), set);
	/* every entry: pointed at a fake and back (libc's at itself: the
	 * library's own threads call those meanwhile) */
	const char *fams[8] = {0};
	unsigned nfam = 0, count[8] = {0}, resolved[8] = {0};
	const char *name, *family;
	void *cur;
	for (unsigned i = 0; (name = entry(i, &family, &cur)); i++) {
		unsigned f = 0;
		while (f < nfam && strcmp(fams[f], family))
			f++;
		if (f == nfam && nfam < 8)
			fams[nfam++] = family;
		if (f == 8)
			continue;
		count[f]++;
		resolved[f] += cur != NULL;
		int gpu = !strncmp(family, "cuda", 4) || !strcmp(family, "nccl");
		void *fake = gpu ? (void *)fake_marker : cur;
		void *was = set(name, fake);
		EXPECT(was == cur, "%s: ddl_real_set gave %p, the table held %p", name, was, cur);
		was = set(name, cur);
		EXPECT(was == fake, "%s: not faked (%p)", name, was);
	}
	EXPECT(!set("no_such_function", (void *)fake_marker), "a name not in the tables was taken");
	for (unsigned f = 0; f < nfam; f++)
		printf("family %s %u %u\n", fams[f], count[f], resolved[f]);

	set("cudaLaunchKernel", (void *)fake_launch);
	set("cudaMemcpyAsync", (void *)fake_memcpy);
	set("cudaStreamSynchronize", (void *)fake_sync);
	set("cuLaunchKernel", (void *)fake_cu_launch);
	set("ncclAllReduce", (void *)fake_allreduce);
	set("ncclCommUserRank", (void *)fake_query);
	set("ncclCommCount", (void *)fake_query);
	set("ncclCommCuDevice", (void *)fake_query);
	set("send", (void *)fake_send);
	int errs = 0;
	for (int i = 0; i < 5; i++)
		errs += cudaLaunchKernel((const void *)fake_marker, (dim3){4, 2, 1}, (dim3){128, 1, 1}, NULL,
		                         64, the_stream) != cudaSuccess;
	EXPECT(errs == 1, "%d launches failed, the fake failed one", errs);
	static char host[4096], dev[4096];
	for (int i = 0; i < 2; i++)
		EXPECT(cudaMemcpyAsync(dev, host, sizeof host, cudaMemcpyHostToDevice, the_stream) == cudaSuccess,
		       "memcpy failed");
	EXPECT(cudaStreamSynchronize(the_stream) == cudaSuccess, "sync failed");
	CUresult (*cu_launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
	                      CUstream, void **, void **) =
	    (CUresult(*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
	                 CUstream, void **, void **))dlsym(RTLD_DEFAULT, "cuLaunchKernel");
	for (int i = 0; i < 3 && cu_launch; i++)
		EXPECT(cu_launch((CUfunction)0x77, 8, 1, 1, 32, 1, 1, 0, (CUstream)the_stream, NULL, NULL) ==
		       CUDA_SUCCESS, "cuLaunchKernel failed");
	static float sb[1000], rb[1000];
	for (int i = 0; i < 4; i++)
		EXPECT(ncclAllReduce(sb, rb, 1000, ncclFloat32, ncclSum, (ncclComm_t)0x1234, the_stream) ==
		       ncclSuccess, "allreduce failed");
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0) {
		EXPECT(send(sv[0], "hello", 5, 0) == 4, "the fake's short send not handed back");
		close(sv[0]);
		close(sv[1]);
	}
	printf("calls launch=%d memcpy=%d sync=%d culaunch=%d allreduce=%d send=%d\n", n_launch, n_memcpy,
	       n_sync, n_cu, n_allreduce, n_send);
	return bad;
}
