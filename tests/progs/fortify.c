/*
 * Built with _FORTIFY_SOURCE=2, as hardened distributions build programs:
 * recv, read, recvfrom and poll become __recv_chk, __read_chk,
 * __recvfrom_chk and __poll_chk. Also looks at data with MSG_PEEK before
 * reading it, which must not count as received twice.
 */
#define _GNU_SOURCE
#define _FORTIFY_SOURCE 2
#include <poll.h>

#define PROG "fortify"
#include "progs.h"

int main(void)
{
	int sv[2];
	char buf[4096];
	volatile size_t cap = sizeof buf; /* not a constant: the _chk forms are called */
	volatile nfds_t one = 1;
	unsigned long long sent = 0, got = 0;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		return 99;
	memset(buf, 'f', sizeof buf);
	for (int i = 0; i < 4; i++) {
		ssize_t w = send(sv[0], buf, 1000, 0);
		if (w != 1000)
			return 99;
		sent += (unsigned long long)w;
		struct pollfd p[1] = {{sv[1], POLLIN, 0}};
		if (poll(p, one, 5000) != 1)
			return 99;
		char peek[16];
		if (recv(sv[1], peek, cap < sizeof peek ? cap : sizeof peek, MSG_PEEK) != (ssize_t)sizeof peek)
			return 99;
		ssize_t r;
		if (i == 0)
			r = recv(sv[1], buf, cap, 0);
		else if (i == 1)
			r = recvfrom(sv[1], buf, cap, 0, NULL, NULL);
		else
			r = read(sv[1], buf, cap);
		if (r <= 0)
			return 99;
		got += (unsigned long long)r;
		while (got < sent) {
			r = read(sv[1], buf, cap);
			if (r <= 0)
				return 99;
			got += (unsigned long long)r;
		}
	}
	printf("fortify: sent %llu received %llu\n", sent, got);
	write_expect(sent, got);
	return 0;
}
