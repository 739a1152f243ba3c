/*
 * The Python hook's entry points (include/ddlprof/python.h) from C, as a
 * framework's own hook would call them: a training loop of 12 steps of
 * about 12 ms (a 3 ms wait for data, a 3 ms forward, a 4 ms backward, a
 * 1 ms optimizer step), fed by a forked loader worker that reads a file
 * for each batch (fetch) and spins a little (prep). No torch needed: the
 * report's steps, phases, roles and fetch/prep split are tested on what
 * the loop itself did. The entry points are found with dlsym: without the
 * profiler they are absent and the program runs the same.
 */
#define _GNU_SOURCE
#define PROG "pysteps"
#include "progs.h"

#include <dlfcn.h>
#include <time.h>

static void (*begin)(void);
static void (*phase)(int, long long);
static void (*step)(int, long long);
static void (*meta)(const char *, const char *);

static void spin_ms(double ms)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6 < ms);
}

static void sleep_ms(double ms)
{
	struct timespec t = {0, (long)(ms * 1e6)};
	nanosleep(&t, NULL);
}

static void open_phase(void)
{
	if (begin)
		begin();
}

static void close_phase(int what, long long v)
{
	if (phase)
		phase(what, v);
}

/* The loader worker: a batch each time the loop asks, read from FILE (fetch) then spun on (prep). */
static void worker(int req, int done, const char *file)
{
	if (meta) {
		char ppid[32];
		snprintf(ppid, sizeof ppid, "%d", (int)getppid());
		meta("role", "dataloader_worker");
		meta("serves_pid", ppid);
	}
	char c, buf[65536];
	for (long long n = 1; read(req, &c, 1) == 1; n++) {
		open_phase();
		int fd = open(file, O_RDONLY);
		if (fd < 0)
			die("open");
		for (int k = 0; k < 16; k++)
			if (pread(fd, buf, sizeof buf, 0) < 0)
				die("pread");
		close(fd);
		spin_ms(2);
		close_phase(4 /* batch */, n);
		if (write(done, "b", 1) != 1)
			die("write");
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	const char *file = argc > 1 ? argv[1] : "/proc/self/exe";
	*(void **)&begin = dlsym(RTLD_DEFAULT, "ddlprof_py_begin");
	*(void **)&phase = dlsym(RTLD_DEFAULT, "ddlprof_py_phase");
	*(void **)&step = dlsym(RTLD_DEFAULT, "ddlprof_py_step");
	*(void **)&meta = dlsym(RTLD_DEFAULT, "ddlprof_py_meta");
	int req[2], done[2];
	if (pipe(req) || pipe(done))
		die("pipe");
	pid_t w = fork();
	if (w < 0)
		die("fork");
	if (w == 0) {
		close(req[1]);
		close(done[0]);
		worker(req[0], done[1], file);
	}
	close(req[0]);
	close(done[1]);
	char c;
	struct timespec t0, t1, w0, last;
	double steps = 0, waits = 0; /* its own timer: steps 6 on, as the report's warm-up */
	clock_gettime(CLOCK_MONOTONIC, &last);
	for (long long i = 1; i <= 12; i++) {
		clock_gettime(CLOCK_MONOTONIC, &w0);
		open_phase(); /* the wait for the next batch */
		if (write(req[1], "r", 1) != 1 || read(done[0], &c, 1) != 1)
			die("the worker");
		sleep_ms(1);
		close_phase(1 /* data wait */, i);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (i > 5)
			waits += (double)(t0.tv_sec - w0.tv_sec) * 1e3 + (double)(t0.tv_nsec - w0.tv_nsec) / 1e6;
		open_phase();
		spin_ms(3);
		close_phase(2 /* forward */, 0);
		open_phase();
		spin_ms(4);
		close_phase(3 /* backward */, 0);
		open_phase();
		spin_ms(1);
		if (step)
			step(0, i);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (i > 5)
			steps += (double)(t1.tv_sec - last.tv_sec) * 1e3 + (double)(t1.tv_nsec - last.tv_nsec) / 1e6;
		last = t1;
	}
	close(req[1]);
	int st;
	if (waitpid(w, &st, 0) != w || !WIFEXITED(st) || WEXITSTATUS(st))
		die("the worker failed");
	printf("pysteps: 12 steps, %.3f ms a step, %.3f ms waiting for data (steps 6 on)\n", steps / 7,
	       waits / 7);
	return 0;
}
