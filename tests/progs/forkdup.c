/*
 * Sends, then forks at once (inside one flush period, so the parent's events
 * are still buffered), and both go on sending different amounts. A child
 * that re-wrote the parent's buffered events would report too many bytes.
 * Also tells rank variables apart: prints nothing that depends on them.
 */
#define _GNU_SOURCE

#define PROG "forkdup"
#include "progs.h"

static char buf[8192];

static unsigned long long drain(int fd, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = recv(fd, buf, sizeof buf, 0);
		if (r <= 0)
			exit(99);
		got += (size_t)r;
	}
	return got;
}

int main(void)
{
	int a[2], b[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, a) || socketpair(AF_UNIX, SOCK_STREAM, 0, b))
		return 99;
	/* parent: 1111 out on a, then 3333 more after the fork */
	if (send(a[0], buf, 1111, 0) != 1111)
		return 99;
	unsigned long long precv = drain(a[1], 1111);
	pid_t pid = fork();
	if (pid == 0) {
		if (send(b[0], buf, 2222, 0) != 2222)
			_exit(99);
		unsigned long long r = drain(b[1], 2222);
		write_expect(2222, r);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	if (send(a[0], buf, 3333, 0) != 3333)
		return 99;
	precv += drain(a[1], 3333);
	write_expect(1111 + 3333, precv);
	printf("forkdup: child %d, parent sent 4444\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}
