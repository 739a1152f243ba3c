/*
 * fork + waitpid beside busy socket threads: NTHREADS threads each send
 * and recv 64 bytes in a loop over a socketpair of their own, while the
 * main thread forks N times (child _exit(0) at once) and waits. Prints the
 * median, p10, p90 of one fork+wait in ms, and of fork() alone (what the
 * parent spends in fork, its atfork handlers included).
 *
 *   make build/bench/forkbusy
 *   build/bench/forkbusy [forks=200] [threads=8]
 *   build/bin/ddlprof -q -o DIR -- build/bench/forkbusy [forks] [threads]
 * Figures, not pass/fail: on a 2-core machine beside 8 threads they come
 * in multiples of the 4 ms scheduler tick, each a wait for a CPU.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;
static atomic_long ops;

static void *busy(void *arg)
{
	(void)arg;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
		perror("socketpair");
		exit(1);
	}
	char buf[64] = "x";
	long n = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (send(sv[0], buf, sizeof buf, 0) != sizeof buf)
			break;
		if (recv(sv[1], buf, sizeof buf, 0) <= 0)
			break;
		n++;
	}
	atomic_fetch_add(&ops, n);
	return NULL;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int nforks = argc > 1 ? atoi(argv[1]) : 200;
	int nthr = argc > 2 ? atoi(argv[2]) : 8;
	pthread_t th[64];
	for (int i = 0; i < nthr; i++)
		pthread_create(&th[i], NULL, busy, NULL);
	struct timespec warm = {0, 200000000};
	nanosleep(&warm, NULL); /* threads running, rings warm */
	double *d = malloc(sizeof *d * (size_t)nforks);
	double *df = malloc(sizeof *df * (size_t)nforks); /* fork() alone, in the parent */
	double t00 = now_ms();
	for (int i = 0; i < nforks; i++) {
		double t0 = now_ms();
		pid_t p = fork();
		if (p == 0)
			_exit(0);
		df[i] = now_ms() - t0;
		if (p < 0) {
			perror("fork");
			return 1;
		}
		int st;
		waitpid(p, &st, 0);
		d[i] = now_ms() - t0;
	}
	double total = now_ms() - t00;
	atomic_store(&stop, 1);
	for (int i = 0; i < nthr; i++)
		pthread_join(th[i], NULL);
	qsort(d, (size_t)nforks, sizeof *d, cmp);
	qsort(df, (size_t)nforks, sizeof *df, cmp);
	printf("forks=%d threads=%d median=%.3f ms p10=%.3f p90=%.3f max=%.3f total=%.0f ms"
	       " | fork() alone median=%.3f p90=%.3f | ops=%ld\n",
	       nforks, nthr, d[nforks / 2], d[nforks / 10], d[nforks * 9 / 10], d[nforks - 1], total,
	       df[nforks / 2], df[nforks * 9 / 10], atomic_load(&ops));
	return 0;
}
