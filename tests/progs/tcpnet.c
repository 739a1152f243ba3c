/*
 * Two ends of one TCP connection for the multi-host tests:
 *   tcpnet server PORT BYTES      accepts one connection, reads BYTES, replies BYTES
 *   tcpnet client ADDR PORT BYTES connects (retrying), sends BYTES, reads BYTES
 * Prints one line with the byte counts.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static char buf[65536];

static long move(int fd, long n, int out)
{
	long done = 0;
	while (done < n) {
		size_t k = (size_t)(n - done) < sizeof buf ? (size_t)(n - done) : sizeof buf;
		ssize_t r = out ? send(fd, buf, k, 0) : recv(fd, buf, k, 0);
		if (r <= 0)
			exit(99);
		done += r;
	}
	return done;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "server")) {
		long n = atol(argv[3]);
		int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 1))
			return 99;
		int c = accept(s, NULL, NULL);
		if (c < 0)
			return 99;
		long got = move(c, n, 0), sent = move(c, n, 1);
		printf("tcpnet server: received %ld sent %ld\n", got, sent);
		return 0;
	}
	if (argc == 5 && !strcmp(argv[1], "client")) {
		long n = atol(argv[4]);
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[3]))};
		if (inet_pton(AF_INET, argv[2], &a.sin_addr) != 1)
			return 99;
		int s = -1;
		for (int i = 0; i < 300; i++) {
			s = socket(AF_INET, SOCK_STREAM, 0);
			if (connect(s, (struct sockaddr *)&a, sizeof a) == 0)
				break;
			close(s);
			s = -1;
			usleep(20000);
		}
		if (s < 0)
			return 98;
		long sent = move(s, n, 1), got = move(s, n, 0);
		printf("tcpnet client: sent %ld received %ld\n", sent, got);
		return 0;
	}
	fprintf(stderr, "usage: tcpnet server PORT BYTES | client ADDR PORT BYTES\n");
	return 2;
}
