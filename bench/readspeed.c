/*
 * Reader speed and trace density, figures not pass/fail: reads every trace
 * file named, R times, and prints the median events per second of
 * ddl_trace_read (the whole trace into memory) and of ddl_trace_stream
 * (chunk by chunk, with a consumer that sums each kind's durations, as a
 * one-pass analysis does), and the bytes per event on disk.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "trace_read.h"

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static uint64_t acc[256];

/* A one-pass consumer: time per kind. */
static int sum_kinds(void *ctx, const struct ddl_trace *t, const struct ddl_event *ev, size_t n)
{
	(void)ctx;
	(void)t;
	for (size_t i = 0; i < n; i++)
		acc[ev[i].kind] += ev[i].dur;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: readspeed ROUNDS FILE...\n");
		return 2;
	}
	int rounds = atoi(argv[1]);
	if (rounds < 1 || rounds > 101)
		return 2;
	double v[101], sv[101];
	size_t events = 0, bytes = 0;
	for (int r = 0; r < rounds; r++) {
		struct timespec a0, b0;
		size_t sev = 0;
		clock_gettime(CLOCK_MONOTONIC, &a0);
		for (int i = 2; i < argc; i++) {
			struct ddl_trace t;
			char err[512];
			if (ddl_trace_stream(argv[i], &t, sum_kinds, NULL, err, sizeof err) < 0) {
				fprintf(stderr, "%s\n", err);
				return 1;
			}
			sev += t.nstreamed;
			ddl_trace_free(&t);
		}
		clock_gettime(CLOCK_MONOTONIC, &b0);
		sv[r] = (double)sev / ((double)(b0.tv_sec - a0.tv_sec) + (double)(b0.tv_nsec - a0.tv_nsec) / 1e9);
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
	printf("events %zu bytes %zu bytes_per_event %.2f read_events_per_s %.3g stream_events_per_s %.3g "
	       "(check %llu)\n", events, bytes, events ? (double)bytes / (double)events : 0.0, v[rounds / 2],
	       sv[rounds / 2], (unsigned long long)acc[1]);
	return 0;
}
