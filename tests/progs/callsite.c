/*
 * callsite: a training loop whose stall has one known call site, for the
 * call-site and counter tests (t_callsite.c). One process, three threads:
 *
 *   main       STEPS steps, each a marker range "step": idle_wait() polls
 *              an idle socket for 3 ms (idle: no traffic then),
 *              compute() spins 3 ms, send_grads() sends 64 KiB to the peer
 *              thread and wait_for_peer() blocks in recv for its 64 KiB
 *              reply, about 10 ms: the stall, on a local peer
 *              (interconnect), from wait_for_peer.
 *   peer       waits in poll for the gradients, takes them, sleeps 10 ms,
 *              replies.
 *   heartbeat  blocks in recv() on a socket of its own for the whole run
 *              (more time in calls than any other site, but no stall: it
 *              is not the training thread, and moves no bytes).
 *
 * The functions the tests look for are noinline and noclone, so their names
 * survive in the symbol table. Stdout and the exit status do not depend on
 * timing: "callsite: STEPS steps".
 *
 *   callsite [STEPS]   (default 30)
 */
#define _GNU_SOURCE
#define PROG "callsite"
#include "progs.h"

#include <poll.h>
#include <pthread.h>
#include <time.h>

#include "ddlprof/ddlprof.h"

#define GRAD (64 * 1024)
#define CS_NOINLINE __attribute__((noinline, noclone))

static int g_steps = 30;
static int g_train[2], g_beat[2], g_idle[2];
static char g_buf[GRAD], g_peerbuf[GRAD], g_reply[GRAD];

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

CS_NOINLINE void idle_wait(void)
{
	struct pollfd p = {g_idle[0], POLLIN, 0};
	if (poll(&p, 1, 3) < 0 && errno != EINTR)
		die("poll");
}

CS_NOINLINE void compute(int step)
{
	double end = now_ms() + 3;
	volatile unsigned x = (unsigned)step;
	while (now_ms() < end)
		for (int i = 0; i < 1000; i++)
			x = x * 1103515245u + 12345u;
}

CS_NOINLINE void send_grads(void)
{
	send_all(g_train[0], g_buf, GRAD, 0, 0);
}

CS_NOINLINE void wait_for_peer(void)
{
	recv_all(g_train[0], g_reply, GRAD, 0, 0);
}

CS_NOINLINE static void *peer_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < g_steps; i++) {
		struct pollfd p = {g_train[1], POLLIN, 0};
		while (poll(&p, 1, -1) < 0)
			if (errno != EINTR)
				die("poll");
		recv_all(g_train[1], g_peerbuf, GRAD, 0, 0);
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
		send_all(g_train[1], g_peerbuf, GRAD, 0, 0);
	}
	return NULL;
}

CS_NOINLINE static void *heartbeat_main(void *arg)
{
	(void)arg;
	char c;
	if (recv(g_beat[1], &c, 1, 0) != 0) /* until main shuts its end */
		fail("heartbeat: expected EOF");
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		g_steps = atoi(argv[1]);
	if (g_steps < 1 || g_steps > 100000)
		fail("usage: callsite [STEPS]");
	stream_pair(g_train, 0);
	stream_pair(g_beat, 0);
	stream_pair(g_idle, 0);
	memset(g_buf, 'g', sizeof g_buf);
	pthread_t peer, beat;
	if (pthread_create(&peer, NULL, peer_main, NULL) || pthread_create(&beat, NULL, heartbeat_main, NULL))
		fail("pthread_create");
	for (int i = 0; i < g_steps; i++) {
		if (ddlprof_range_push)
			ddlprof_range_push("step");
		idle_wait();
		compute(i);
		send_grads();
		wait_for_peer();
		check_bytes(g_reply, GRAD, 'g');
		if (ddlprof_range_pop)
			ddlprof_range_pop();
	}
	shutdown(g_beat[0], SHUT_RDWR);
	pthread_join(peer, NULL);
	pthread_join(beat, NULL);
	printf("callsite: %d steps\n", g_steps);
	return 0;
}
