/*
 * NVTX from C, the way a training program (or PyTorch) uses it, for
 * tests/t_nvtx.c. Built by the test with the NVTX 3 headers and -ldl, and
 * linked with libnvtxlib.so (nvtx_lib.c), a second NVTX instance.
 *
 *   nvtx_prog [STEPS]      STEPS (default 20) "step" ranges of 5 ms, half
 *                          pushed with the wide-string call, each holding
 *                          nested ranges and marks of every kind (default
 *                          domain, a named domain, a wide-named domain,
 *                          registered strings, attribute structures); before
 *                          them, marks and start/end ranges, some ended on
 *                          another thread
 *   nvtx_prog storm T N    T threads, each N times: a push and pop of one of
 *                          50 names shared by all threads, a mark, a
 *                          start/end range
 *   nvtx_prog fork         ranges in a forked child and its parent
 *
 * stdout does not depend on whether a tool is attached: only what NVTX
 * returns without one (push and pop: NVTX_NO_PUSH_POP_TRACKING) is printed.
 * On an unexpected error it prints to stderr and exits 99.
 */
#define _GNU_SOURCE
#include <nvtx3/nvToolsExt.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void nvtx_lib_work(void);

static void fail(const char *what)
{
	fprintf(stderr, "nvtx_prog: %s: %s\n", what, strerror(errno));
	exit(99);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, ms % 1000 * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static nvtxEventAttributes_t attr(int type)
{
	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof a);
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.colorType = NVTX_COLOR_ARGB;
	a.color = 0xff00ff00u;
	a.messageType = type;
	return a;
}

static nvtxDomainHandle_t dom;

static void *end_range(void *p)
{
	sleep_ms(2);
	nvtxRangeEnd(*(nvtxRangeId_t *)p);
	return NULL;
}

static void *end_domain_range(void *p)
{
	sleep_ms(1);
	nvtxDomainRangeEnd(dom, *(nvtxRangeId_t *)p);
	return NULL;
}

static void on_thread(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	errno = pthread_create(&t, NULL, fn, arg);
	if (errno)
		fail("pthread_create");
	pthread_join(t, NULL);
}

static int run(int steps)
{
	nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "nvtx-main");
	dom = nvtxDomainCreateA("ddltest");
	nvtxDomainHandle_t wdom = nvtxDomainCreateW(L"wdomain_\u00e9");
	nvtxStringHandle_t reg = nvtxDomainRegisterStringA(dom, "registered_load");
	nvtxStringHandle_t wreg = nvtxDomainRegisterStringW(wdom, L"wide_registered");
	nvtxMarkA("begin");
	nvtxMarkW(L"wide_mark_\u00fc\u4e16");

	/* start/end ranges: one ended on another thread, in both domains */
	nvtxRangeId_t a = nvtxRangeStartA("async_io");
	on_thread(end_range, &a);
	nvtxRangeId_t b = nvtxRangeStartW(L"async_wide");
	nvtxRangeEnd(b);
	nvtxEventAttributes_t ea = attr(NVTX_MESSAGE_TYPE_ASCII);
	ea.message.ascii = "domain_async";
	nvtxRangeId_t c = nvtxDomainRangeStartEx(dom, &ea);
	on_thread(end_domain_range, &c);
	ea.message.ascii = "ex_async";
	nvtxRangeEnd(nvtxRangeStartEx(&ea));

	int rpush = 0, rpop = 0;
	for (int i = 0; i < steps; i++) {
		rpush = i % 2 ? nvtxRangePushA("step") : nvtxRangePushW(L"step");
		sleep_ms(5);
		nvtxRangePushW(L"wide_range_\u00e4");
		nvtxRangePop();
		nvtxEventAttributes_t r = attr(NVTX_MESSAGE_TYPE_REGISTERED);
		r.message.registered = reg;
		nvtxDomainRangePushEx(dom, &r);
		nvtxDomainRangePop(dom);
		nvtxEventAttributes_t f = attr(NVTX_MESSAGE_TYPE_ASCII);
		f.message.ascii = "fetch";
		nvtxDomainRangePushEx(dom, &f);
		nvtxDomainRangePop(dom);
		nvtxEventAttributes_t w = attr(NVTX_MESSAGE_TYPE_UNICODE);
		w.message.unicode = L"ex_wide_\u00f6";
		nvtxRangePushEx(&w);
		nvtxRangePop();
		r.message.registered = wreg;
		nvtxDomainMarkEx(wdom, &r);
		f.message.ascii = "ex_mark";
		nvtxMarkEx(&f);
		nvtx_lib_work();
		rpop = nvtxRangePop();
	}
	nvtxDomainDestroy(dom);
	printf("nvtx_prog: %d steps, push returned %d, pop returned %d\n", steps, rpush, rpop);
	return 0;
}

static int storm_n;

static void *storm_thread(void *p)
{
	int k = (int)(long)p;
	char name[32];
	for (int i = 0; i < storm_n; i++) {
		snprintf(name, sizeof name, "storm_%d", (i + k) % 50);
		nvtxRangePushA(name);
		nvtxMarkA("storm_mark");
		nvtxRangeEnd(nvtxRangeStartA("storm_async"));
		nvtxRangePop();
	}
	return NULL;
}

static int storm(int threads, int n)
{
	pthread_t t[64];
	storm_n = n;
	if (threads < 1 || threads > 64)
		return 99;
	for (int i = 0; i < threads; i++) {
		errno = pthread_create(&t[i], NULL, storm_thread, (void *)(long)i);
		if (errno)
			fail("pthread_create");
	}
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("nvtx_prog: storm of %d threads x %d\n", threads, n);
	return 0;
}

static int forked(void)
{
	nvtxRangePushA("parent_range");
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		fail("fork");
	if (pid == 0) {
		for (int i = 0; i < 3; i++) {
			nvtxRangePushA("child_step");
			sleep_ms(1);
			nvtxRangePop();
		}
		_exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid)
		fail("waitpid");
	nvtxRangePop();
	printf("nvtx_prog: child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "storm"))
		return storm(argc > 2 ? atoi(argv[2]) : 8, argc > 3 ? atoi(argv[3]) : 500);
	if (argc > 1 && !strcmp(argv[1], "fork"))
		return forked();
	return run(argc > 1 ? atoi(argv[1]) : 20);
}
