/*
 * Moves 5000 bytes over a socketpair, prints one line, then dies by the
 * signal named in argv[1] (segv, abort, term, or overflow: SIGSEGV from a
 * stack overflow, where a handler can only run on an alternate stack;
 * overflow-idle: the same on a main thread that recorded nothing, the
 * bytes moved by another thread) with
 * its default action. The trace must still hold those events, flushed from
 * the signal handler. With "altstack" it prints what sigaltstack() says as
 * it gives the thread a stack of its own and takes it away, and exits 0.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>

#define PROG "crash"
#include "progs.h"

static volatile int g_depth_limit = 1 << 30; /* never reached: the stack ends first */

static int deeper(volatile char *up, int depth)
{
	volatile char frame[1024];
	frame[0] = up ? up[0] + 1 : 0;
	if (depth >= g_depth_limit)
		return frame[0];
	return deeper(frame, depth + 1) + frame[1]; /* not a tail call */
}

static void show(const char *when)
{
	stack_t cur;
	errno = 0;
	int r = sigaltstack(NULL, &cur);
	printf("%s: %d %s flags %#x size %zu%s\n", when, r, strerror(errno), (unsigned)cur.ss_flags,
	       cur.ss_size, cur.ss_sp == NULL ? " no stack" : "");
}

static int altstack(void)
{
	static char mine[65536];
	show("at start");
	stack_t ss = {.ss_sp = mine, .ss_size = sizeof mine, .ss_flags = 0}, old;
	errno = 0;
	int r = sigaltstack(&ss, &old);
	printf("set own: %d %s, was flags %#x size %zu\n", r, strerror(errno), (unsigned)old.ss_flags,
	       old.ss_size);
	stack_t cur;
	sigaltstack(NULL, &cur);
	printf("own: %s\n", cur.ss_sp == mine && cur.ss_size == sizeof mine ? "yes" : "no");
	ss.ss_flags = SS_DISABLE;
	r = sigaltstack(&ss, NULL);
	printf("disable: %d\n", r);
	show("after disable");
	r = sigaltstack(&ss, NULL); /* disabling none */
	printf("disable again: %d\n", r);
	show("again");
	errno = 0;
	r = sigaltstack(NULL, (stack_t *)8);
	printf("bad pointer: %d %s\n", r, strerror(errno));
	ss.ss_flags = 0;
	ss.ss_size = 16;
	errno = 0;
	r = sigaltstack(&ss, NULL);
	printf("too small: %d %s\n", r, strerror(errno));
	show("at end");
	return 0;
}

/* The 5000 bytes, on whichever thread calls it. */
static void *exchange(void *arg)
{
	int sv[2];
	char buf[5000];
	(void)arg;
	memset(buf, 'c', sizeof buf);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		exit(99);
	send_all(sv[0], buf, sizeof buf, 0, 0);
	recv_all(sv[1], buf, sizeof buf, 0, 0);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "segv";
	if (!strcmp(how, "overflow-idle")) {
		/* another thread moves the bytes; the main thread, which records
		 * nothing, overflows its stack while they are still buffered */
		pthread_t th;
		if (pthread_create(&th, NULL, exchange, NULL) != 0 || pthread_join(th, NULL) != 0)
			return 99;
	} else {
		exchange(NULL);
	}
	printf("crash: moved %llu bytes\n", g_recv);
	fflush(stdout);
	if (!strcmp(how, "altstack"))
		return altstack();
	if (!strcmp(how, "overflow") || !strcmp(how, "overflow-idle"))
		return deeper(NULL, 0);
	if (!strcmp(how, "abort"))
		abort();
	if (!strcmp(how, "term"))
		raise(SIGTERM);
	volatile int *p = NULL;
	return *p;
}
