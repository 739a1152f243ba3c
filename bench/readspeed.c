/*
 * Reader speed and trace density, figures not pass/fail: reads every trace
 * file named, R times, and prints the median events per second of
 * ddl_trace_read (the whole trace into memory) and of ddl_trace_stream
 * (chunk by chunk, with a consumer that sums each kind's durations, as a
 * one-pass analysis does), and the bytes per event on disk. The streaming
 * rate is given twice: over wall-clock time, and over the CPU time the
 * process was given, which is the rate of one core even when other work
 * shares the machine.
 *
 *   readspeed -m FILE...   streams each file once and prints the peak
 *                          resident memory (max_rss_kib): the streaming
 *                          reader's memory, which must not grow with the
 *                          trace's length.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "trace_read.h"

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static uint64_t acc[256];

static double ddl_secs(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A one-pass consumer: time per kind. */
static int sum_kinds(void *ctx, const struct ddl_trace *t, const struct ddl_event *ev, size_t n)
{
	(void)ctx;
	(void)t;
	for (size_t i = 0; i < n; i++)
		acc[ev[i].kind] += ev[i].dur;
	return 0;
}

/* Streams files FILES[0..N) once; their events, or -1 after the reader's message. */
static long long stream_all(char **files, int n)
{
	long long ev = 0;
	for (int i = 0; i < n; i++) {
		struct ddl_trace t;
		char err[512];
		if (ddl_trace_stream(files[i], &t, sum_kinds, NULL, err, sizeof err) < 0) {
			fprintf(stderr, "%s\n", err);
			return -1;
		}
		ev += (long long)t.nstreamed;
		ddl_trace_free(&t);
	}
	return ev;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: readspeed ROUNDS FILE... | readspeed -m FILE...\n");
		return 2;
	}
	if (!strcmp(argv[1], "-m")) {
		long long n = stream_all(argv + 2, argc - 2);
		if (n < 0)
			return 1;
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		printf("events %lld max_rss_kib %ld\n", n, ru.ru_maxrss);
		return 0;
	}
	int rounds = atoi(argv[1]);
	if (rounds < 1 || rounds > 101)
		return 2;
	double v[101], sv[101], cv[101];
	size_t events = 0, bytes = 0;
	for (int r = 0; r < rounds; r++) {
		double a0 = ddl_secs(CLOCK_MONOTONIC), c0 = ddl_secs(CLOCK_PROCESS_CPUTIME_ID);
		long long sev = stream_all(argv + 2, argc - 2);
		if (sev < 0)
			return 1;
		double c1 = ddl_secs(CLOCK_PROCESS_CPUTIME_ID), a1 = ddl_secs(CLOCK_MONOTONIC);
		sv[r] = (double)sev / (a1 - a0);
		cv[r] = (double)sev / (c1 - c0);
		struct timespec a, b;
		events = bytes = 0;
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (int i = 2; i < argc; i++) {
			struct ddl_trace t;
			char err[512];
			if (ddl_trace_read(argv[i], &t, err, sizeof err) < 0) {
				fprintf(stderr, "%s\n", err);
				return 1;
			}
			events += t.nev;
			ddl_trace_free(&t);
			struct stat st;
			if (stat(argv[i], &st) == 0)
				bytes += (size_t)st.st_size;
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
		v[r] = (double)events / s;
	}
	qsort(v, (size_t)rounds, sizeof *v, cmp_d);
	qsort(sv, (size_t)rounds, sizeof *sv, cmp_d);
	qsort(cv, (size_t)rounds, sizeof *cv, cmp_d);
	printf("events %zu bytes %zu bytes_per_event %.2f read_events_per_s %.3g stream_events_per_s %.3g "
	       "stream_cpu_events_per_s %.3g (check %llu)\n", events, bytes,
	       events ? (double)bytes / (double)events : 0.0, v[rounds / 2], sv[rounds / 2],
	       cv[rounds / 2], (unsigned long long)acc[1]);
	return 0;
}
