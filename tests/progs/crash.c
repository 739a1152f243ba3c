/*
 * Moves 5000 bytes over a socketpair, prints one line, then dies by the
 * signal named in argv[1] (segv, abort, term) with its default action.
 * The trace must still hold those events, flushed from the signal handler.
 */
#define _GNU_SOURCE
#include <signal.h>

#define PROG "crash"
#include "progs.h"

int main(int argc, char **argv)
{
	int sv[2];
	char buf[5000];
	memset(buf, 'c', sizeof buf);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		return 99;
	send_all(sv[0], buf, sizeof buf, 0, 0);
	recv_all(sv[1], buf, sizeof buf, 0, 0);
	printf("crash: moved %llu bytes\n", g_recv);
	fflush(stdout);
	const char *how = argc > 1 ? argv[1] : "segv";
	if (!strcmp(how, "abort"))
		abort();
	if (!strcmp(how, "term"))
		raise(SIGTERM);
	volatile int *p = NULL;
	return *p;
}
