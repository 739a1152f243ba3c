/*
 * Closes every descriptor above 2 (as daemons and some launchers do), then
 * opens files expecting the lowest numbers, dup2()s over others, and moves
 * bytes over a socketpair. Prints what it saw; identical with or without
 * the profiler, whose trace file must not be disturbed or disturb us.
 */
#define _GNU_SOURCE
#include <sys/resource.h>

#define PROG "closeall"
#include "progs.h"

int main(void)
{
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	long max = rl.rlim_cur > 65536 ? 65536 : (long)rl.rlim_cur;
	for (long fd = 3; fd < max; fd++)
		close((int)fd);
	int a = open("/dev/null", O_RDONLY);
	printf("closeall: first open got %d\n", a);
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		return 99;
	printf("closeall: socketpair got %d %d\n", sv[0], sv[1]);
	for (int fd = 3; fd < 64; fd++)
		if (fd != sv[0] && fd != sv[1] && fd != a)
			dup2(a, fd);
	unsigned long long sent = 0, got = 0;
	char buf[4096];
	memset(buf, 'z', sizeof buf);
	for (int i = 0; i < 200; i++) {
		ssize_t w = write(sv[0], buf, sizeof buf);
		if (w <= 0)
			return 99;
		sent += (unsigned long long)w;
		while (got < sent) {
			ssize_t r = read(sv[1], buf, sizeof buf);
			if (r <= 0)
				return 99;
			got += (unsigned long long)r;
		}
		if (i == 100)
			usleep(250000); /* let the writer flush while our fds are dup2'ed */
	}
	for (long fd = 3; fd < max; fd++)
		if (fd != sv[0] && fd != sv[1])
			close((int)fd);
	printf("closeall: moved %llu bytes\n", got);
	write_expect(sent, got);
	return 0;
}
