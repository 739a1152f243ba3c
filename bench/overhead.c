/*
 * Overhead of an intercepted call, figures not pass/fail. Run by
 * scripts/bench.sh, with libddlprof preloaded or not.
 *
 *   overhead fake N R    the wrapper's own cost: send() with the real send
 *                        pointed at a no-op (ddl_real_set), against calling
 *                        the same no-op directly, interleaved, R rounds of N
 *                        calls; prints the median ns per call of each
 *   overhead send N R    send() of 64 bytes on a socketpair (drained by
 *                        recv every 64 calls); median ns per send
 *   overhead floor N R   the floor: two rdtsc and one 32-byte store per call
 *                        of the same no-op, against the no-op alone
 *   overhead count N     N wrapped and N direct calls, for callgrind
 *   overhead events N    N wrapped calls with varied results, to size the
 *                        trace (bytes per event) and time the reader
 *   overhead vm 1        the address space (VmSize, KiB) before the first
 *                        traced call, and after one send() and a flush
 *   overhead sem N R     sem_wait() of a free semaphore (posted before each,
 *                        as CPython takes a free lock): the wrapper against
 *                        the C library's own, interleaved; median ns a pair
 */
#include <dlfcn.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef ssize_t (*send_fn)(int, const void *, size_t, int);

static volatile ssize_t fake_result = 64;

__attribute__((noinline)) static ssize_t fake_send(int fd, const void *b, size_t n, int f)
{
	(void)fd;
	(void)b;
	(void)f;
	return fake_result > 0 ? (ssize_t)n : fake_result;
}

/* This process's address space, from /proc/self/status. */
static long vm_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "VmSize:", 7))
			v = atol(line + 7);
	if (f)
		fclose(f);
	return v;
}

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

__attribute__((noinline)) static void loop_wrapped(int fd, const char *buf, long n)
{
	for (long i = 0; i < n; i++)
		send(fd, buf, 64, 0);
}

__attribute__((noinline)) static void loop_direct(send_fn volatile f, int fd, const char *buf, long n)
{
	for (long i = 0; i < n; i++)
		f(fd, buf, 64, 0);
}

struct rec {
	uint64_t a, b, c, d;
};
static struct rec ring[4096];

__attribute__((noinline)) static void loop_floor(send_fn volatile f, int fd, const char *buf, long n)
{
	for (long i = 0; i < n; i++) {
		uint32_t lo, hi, lo2, hi2;
		__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
		ssize_t r = f(fd, buf, 64, 0);
		__asm__ __volatile__("rdtsc" : "=a"(lo2), "=d"(hi2));
		struct rec *e = &ring[i & 4095];
		e->a = ((uint64_t)hi << 32) | lo;
		e->b = (((uint64_t)hi2 << 32) | lo2) - e->a;
		e->c = (uint64_t)r;
		e->d = (uint64_t)fd;
		__asm__ __volatile__("" ::: "memory");
	}
}

static void pause_for_writer(void)
{
	struct timespec ts = {0, 150000000}; /* the writer drains every 100 ms */
	nanosleep(&ts, NULL);
}

/* What the loops below work on, set by main. */
static int g_fd;
static const char *g_buf;
static sem_t g_sem;
static int (*g_libc_sem_wait)(sem_t *);

static void run_wrapped(long n)
{
	loop_wrapped(g_fd, g_buf, n);
}

static void run_direct(long n)
{
	loop_direct(fake_send, g_fd, g_buf, n);
}

static void run_floor(long n)
{
	loop_floor(fake_send, g_fd, g_buf, n);
}

/* a free semaphore's wait, posted before each (as CPython takes a free lock) */
static void run_sem(long n)
{
	for (long i = 0; i < n; i++) {
		sem_post(&g_sem);
		sem_wait(&g_sem);
	}
}

static void run_sem_libc(long n)
{
	for (long i = 0; i < n; i++) {
		sem_post(&g_sem);
		g_libc_sem_wait(&g_sem);
	}
}

/* ROUNDS rounds of N calls of A then N of B, interleaved (PAUSE: a flush
 * between rounds); the medians of their ns a call into *MA, *MB. */
static void interleave(int rounds, long n, void (*a)(long), void (*b)(long), int pause, double *ma, double *mb)
{
	double w[101], d[101];
	for (int r = 0; r < rounds; r++) {
		double t0 = now_ns();
		a(n);
		double t1 = now_ns();
		b(n);
		double t2 = now_ns();
		w[r] = (t1 - t0) / (double)n;
		d[r] = (t2 - t1) / (double)n;
		if (pause)
			pause_for_writer();
	}
	*ma = median(w, rounds);
	*mb = median(d, rounds);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: overhead fake|send|count|events N [R]\n");
		return 2;
	}
	long n = atol(argv[2]);
	int rounds = argc > 3 ? atoi(argv[3]) : 7;
	if (n < 1 || rounds < 1 || rounds > 101)
		return 2;
	const char *mode = argv[1];
	if (!strcmp(mode, "vm")) {
		long before = vm_kib();
		int p[2];
		char c = 'v';
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, p) != 0 || send(p[0], &c, 1, 0) != 1)
			return 1;
		struct timespec ts = {0, 300000000}; /* past a flush period */
		nanosleep(&ts, NULL);
		printf("vm_kib_start %ld vm_kib_after_event %ld\n", before, vm_kib());
		return 0;
	}
	if (!strcmp(mode, "sem")) {
		void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
		g_libc_sem_wait = libc ? (int (*)(sem_t *))dlsym(libc, "sem_wait") : NULL;
		if (!g_libc_sem_wait || sem_init(&g_sem, 0, 0) != 0)
			return 1;
		double mw, md;
		interleave(rounds, n, run_sem, run_sem_libc, 0, &mw, &md);
		printf("wrapped_ns %.2f direct_ns %.2f added_ns %.2f\n", mw, md, mw - md);
		return 0;
	}
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		return 1;
	static char buf[65536];
	g_fd = sv[0];
	g_buf = buf;
	void *(*set)(const char *, void *) =
		(void *(*)(const char *, void *))dlsym(RTLD_DEFAULT, "ddl_real_set");

	if (!strcmp(mode, "fake") || !strcmp(mode, "count") || !strcmp(mode, "events")) {
		if (!set) {
			fprintf(stderr, "overhead: %s needs libddlprof preloaded\n", mode);
			return 1;
		}
		set("send", (void *)fake_send);
	}
	if (!strcmp(mode, "fake")) {
		send(sv[0], buf, 64, 0); /* first call: thread buffer, descriptor probe */
		double mw, md;
		interleave(rounds, n, run_wrapped, run_direct, 1, &mw, &md);
		printf("wrapped_ns %.2f direct_ns %.2f added_ns %.2f\n", mw, md, mw - md);
		return 0;
	}
	if (!strcmp(mode, "floor")) {
		double mw, md;
		interleave(rounds, n, run_floor, run_direct, 0, &mw, &md);
		printf("floor_ns %.2f direct_ns %.2f added_ns %.2f\n", mw, md, mw - md);
		return 0;
	}
	if (!strcmp(mode, "count")) {
		send(sv[0], buf, 64, 0);
		loop_wrapped(sv[0], buf, n);
		loop_direct(fake_send, sv[0], buf, n);
		return 0;
	}
	if (!strcmp(mode, "events")) {
		/* results and descriptors vary as in a real trace */
		for (long i = 0; i < n; i++) {
			fake_result = (i % 97 == 0) ? -11 : 1 + (i * 7919) % 65536;
			send(sv[i & 1], buf, (size_t)(1 + (i * 7919) % 65536), 0);
			if ((i & 0x1ffff) == 0x1ffff)
				pause_for_writer();
		}
		return 0;
	}
	if (!strcmp(mode, "send")) {
		double v[101];
		for (int r = 0; r < rounds; r++) {
			double a = now_ns();
			for (long i = 0; i < n; i++) {
				send(sv[0], buf, 64, 0);
				if ((i & 63) == 63 && recv(sv[1], buf, sizeof buf, MSG_DONTWAIT) < 0)
					return 1;
			}
			v[r] = (now_ns() - a) / (double)n;
			while (recv(sv[1], buf, sizeof buf, MSG_DONTWAIT) > 0)
				;
			pause_for_writer();
		}
		printf("send_ns %.1f\n", median(v, rounds));
		return 0;
	}
	fprintf(stderr, "overhead: unknown mode %s\n", mode);
	return 2;
}
