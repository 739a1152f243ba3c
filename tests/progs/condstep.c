/*
 * A CPU training loop with no network at all: its only rhythm is where it
 * waits. A loader thread fetches each batch (a sleep of LOAD ms, as a read
 * from slow storage would block) while the main thread computes on the
 * last one (a busy loop of COMPUTE ms); the main thread waits on a
 * condition variable for the next batch, the loader for the main thread to
 * take it. The loader is the slower, so the main thread waits every step.
 *
 *   condstep [STEPS [COMPUTE_MS [LOAD_MS]]]       (20, 5, 20)
 *
 * Prints "condstep: N steps" (timing never goes to stdout); with
 * CONDSTEP_TIMES set, writes there the main thread's own step times, one
 * a line in seconds: from taking one batch to taking the next (so N - 1
 * of them).
 */
#define _GNU_SOURCE
#define PROG "condstep"
#include "progs.h"

#include <pthread.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready, done, steps = 20;
static double compute_ms = 5, load_ms = 20;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double busy(double ms)
{
	double end = now_s() + ms / 1e3, x = 1;
	while (now_s() < end)
		for (int k = 0; k < 1000; k++)
			x = x * 1.0000001 + 1e-9;
	return x;
}

static void *loader(void *arg)
{
	(void)arg;
	for (int i = 0; i < steps; i++) {
		struct timespec ts = {(time_t)(load_ms / 1e3), (long)(load_ms * 1e6) % 1000000000L};
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&mu);
		ready = 1;
		pthread_cond_broadcast(&cv);
		while (ready && !done)
			pthread_cond_wait(&cv, &mu);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		steps = atoi(argv[1]);
	if (argc > 2)
		compute_ms = atof(argv[2]);
	if (argc > 3)
		load_ms = atof(argv[3]);
	if (steps < 1 || compute_ms < 0 || load_ms < 0)
		fail("usage: condstep [STEPS [COMPUTE_MS [LOAD_MS]]]");
	pthread_t t;
	if (pthread_create(&t, NULL, loader, NULL))
		fail("pthread_create");
	double *took = calloc((size_t)steps, sizeof *took);
	if (!took)
		fail("calloc");
	for (int i = 0; i < steps; i++) {
		pthread_mutex_lock(&mu);
		while (!ready)
			pthread_cond_wait(&cv, &mu);
		ready = 0;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
		took[i] = now_s(); /* a step: from taking one batch to taking the next */
		busy(compute_ms);
	}
	pthread_mutex_lock(&mu);
	done = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(t, NULL);
	printf("condstep: %d steps\n", steps);
	write_expect(g_sent, g_recv);
	const char *out = getenv("CONDSTEP_TIMES");
	FILE *f = out ? fopen(out, "w") : NULL;
	if (out && !f)
		die(out);
	for (int i = 1; f && i < steps; i++)
		fprintf(f, "%.9f\n", took[i] - took[i - 1]);
	if (f && fclose(f))
		die(out);
	free(took);
	return 0;
}
