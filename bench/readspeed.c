/*
 * Reader speed and trace density, figures not pass/fail: reads every trace
 * file named, R times, and prints the median events per second of
 * ddl_trace_read and the bytes per event on disk.
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

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: readspeed ROUNDS FILE...\n");
		return 2;
	}
	int rounds = atoi(argv[1]);
	if (rounds < 1 || rounds > 101)
		return 2;
	double v[101];
	size_t events = 0, bytes = 0;
	for (int r = 0; r < rounds; r++) {
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
	printf("events %zu bytes %zu bytes_per_event %.2f read_events_per_s %.3g\n", events, bytes,
	       events ? (double)bytes / (double)events : 0.0, v[rounds / 2]);
	return 0;
}
