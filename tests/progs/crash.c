/*
 * Moves 5000 bytes over a socketpair, prints one line, then dies by the
 * signal named in argv[1] (segv, abort, term) with its default action.
 * The trace must still hold those events, flushed from the signal handler.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int sv[2];
	char buf[5000];
	memset(buf, 'c', sizeof buf);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		return 99;
	if (send(sv[0], buf, sizeof buf, 0) != (ssize_t)sizeof buf)
		return 99;
	size_t got = 0;
	while (got < sizeof buf) {
		ssize_t r = recv(sv[1], buf, sizeof buf - got, 0);
		if (r <= 0)
			return 99;
		got += (size_t)r;
	}
	printf("crash: moved %zu bytes\n", got);
	fflush(stdout);
	const char *how = argc > 1 ? argv[1] : "segv";
	if (!strcmp(how, "abort"))
		abort();
	if (!strcmp(how, "term"))
		raise(SIGTERM);
	volatile int *p = NULL;
	return *p;
}
