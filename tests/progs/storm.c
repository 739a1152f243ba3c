/*
 * Fault injection for the preload library, one mode per run; each prints a
 * fixed summary, and every process writes its DDLT_EXPECT line:
 *   storm spawns      system, popen, posix_spawn, vfork+exec, vfork with a
 *                     failed exec, fork with a failed execlp, and daemon()
 *   storm forks N     N children at once, each moving bytes with the parent
 *   storm threads N   N threads, 200 alive at a time, each moving bytes
 *   storm signals     a 200 us interval timer interrupting socket calls
 *                     (handler without SA_RESTART), 20000 exchanges
 *   storm fdlimit     RLIMIT_NOFILE 64: open until EMFILE, then socket I/O
 */
#define _GNU_SOURCE
#define PROG "storm"
#include "progs.h"

#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/time.h>

extern char **environ;

static char buf[65536];

static void exchange(int a, int b, size_t n)
{
	send_all(a, buf, n, 0, 0);
	recv_all(b, buf, n, 0, 0);
}

static int status_of(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int spawns(void)
{
	int sv[2];
	stream_pair(sv, 0);
	exchange(sv[0], sv[1], 1000);
	printf("system: %d\n", status_of(system("exit 3")));
	exchange(sv[0], sv[1], 1001);
	FILE *p = popen("echo hi", "r");
	char line[16] = "";
	if (!p || !fgets(line, sizeof line, p))
		fail("popen");
	printf("popen: %s", line);
	printf("pclose: %d\n", status_of(pclose(p)));
	pid_t pid;
	char *targv[] = {"true", NULL};
	if (posix_spawn(&pid, "/bin/true", NULL, NULL, targv, environ) != 0)
		fail("posix_spawn");
	int st;
	waitpid(pid, &st, 0);
	printf("posix_spawn: %d\n", status_of(st));
	exchange(sv[0], sv[1], 1002);
	pid = vfork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", "exit 6", (char *)NULL);
		_exit(99);
	}
	waitpid(pid, &st, 0);
	printf("vfork+exec: %d\n", status_of(st));
	pid = vfork();
	if (pid == 0) {
		execl("/nonexistent/program", "x", (char *)NULL);
		_exit(7);
	}
	waitpid(pid, &st, 0);
	printf("vfork+failed exec: %d\n", status_of(st));
	pid = fork_flushed();
	if (pid == 0) {
		g_sent = g_recv = 0;
		execlp("no-such-program-anywhere", "x", (char *)NULL);
		exchange(sv[0], sv[1], 1003); /* the failed exec's image goes on */
		write_expect(g_sent, g_recv);
		_exit(9);
	}
	waitpid(pid, &st, 0);
	printf("fork+failed execlp: %d\n", status_of(st));
	/* daemon(): a child daemonizes; the daemon reports back on a pipe */
	int done[2];
	make_pipe(done);
	pid = fork_flushed();
	if (pid == 0) {
		g_sent = g_recv = 0;
		if (daemon(1, 1) != 0)
			_exit(98);
		exchange(sv[0], sv[1], 1004);
		write_expect(g_sent, g_recv);
		if (write(done[1], "d", 1) != 1)
			_exit(97);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	char d;
	if (read(done[0], &d, 1) != 1)
		fail("daemon did not report");
	printf("daemon: parent %d, daemon done\n", status_of(st));
	exchange(sv[0], sv[1], 1005);
	write_expect(g_sent, g_recv);
	return 0;
}

static int forks(int n)
{
	pid_t *pids = calloc((size_t)n, sizeof *pids);
	int (*sv)[2] = calloc((size_t)n, sizeof *sv);
	for (int i = 0; i < n; i++) {
		stream_pair(sv[i], 0);
		pids[i] = fork_flushed();
		if (pids[i] == 0) {
			g_sent = g_recv = 0;
			send_all(sv[i][1], buf, 100 + (size_t)i, 0, 0);
			recv_all(sv[i][1], buf, 7, 0, 0);
			write_expect(g_sent, g_recv);
			_exit(0);
		}
	}
	for (int i = 0; i < n; i++) {
		recv_all(sv[i][0], buf, 100 + (size_t)i, 0, 0);
		send_all(sv[i][0], buf, 7, 0, 0);
	}
	for (int i = 0; i < n; i++)
		wait_exit0(pids[i]);
	printf("forks: %d children\n", n);
	write_expect(g_sent, g_recv);
	return 0;
}

static _Atomic unsigned long long t_sent, t_recv;

static void *one_thread(void *arg)
{
	size_t n = 10 + (size_t)(uintptr_t)arg % 1000;
	int sv[2];
	char b[1024];
	stream_pair(sv, 0);
	for (size_t off = 0; off < n;) {
		ssize_t w = send(sv[0], b, n - off, 0);
		if (w <= 0)
			fail("send");
		off += (size_t)w;
		t_sent += (unsigned long long)w;
	}
	for (size_t off = 0; off < n;) {
		ssize_t r = recv(sv[1], b, n - off, 0);
		if (r <= 0)
			fail("recv");
		off += (size_t)r;
		t_recv += (unsigned long long)r;
	}
	close(sv[0]);
	close(sv[1]);
	return NULL;
}

static int threads(int n)
{
	pthread_t th[200];
	for (int i = 0; i < n; i += 200) {
		int k = n - i < 200 ? n - i : 200;
		for (int j = 0; j < k; j++)
			if (pthread_create(&th[j], NULL, one_thread, (void *)(uintptr_t)(i + j)))
				fail("pthread_create");
		for (int j = 0; j < k; j++)
			pthread_join(th[j], NULL);
	}
	printf("threads: %d\n", n);
	write_expect(t_sent, t_recv);
	return 0;
}

static volatile sig_atomic_t ticks;
static void on_tick(int s)
{
	(void)s;
	ticks++;
}

static int signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_tick; /* no SA_RESTART: calls fail with EINTR */
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 200}, {0, 200}};
	setitimer(ITIMER_REAL, &it, NULL);
	int sv[2];
	stream_pair(sv, 0);
	for (int i = 0; i < 20000; i++)
		exchange(sv[0], sv[1], 100 + (size_t)(i % 300));
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	printf("signals: 20000 exchanges, %s\n", ticks > 0 ? "interrupted" : "never interrupted");
	write_expect(g_sent, g_recv);
	return 0;
}

static int fdlimit(void)
{
	struct rlimit rl = {64, 64};
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		fail("setrlimit");
	int fds[64], n = 0;
	while (n < 64) {
		int fd = open("/dev/null", O_RDONLY);
		if (fd < 0)
			break;
		fds[n++] = fd;
	}
	printf("fdlimit: opened %d before %s\n", n, errno == EMFILE ? "EMFILE" : "something else");
	for (int k = 0; k < 3; k++) /* room for a socketpair and the expect file */
		close(fds[--n]);
	int sv[2];
	stream_pair(sv, 0);
	for (int i = 0; i < 2000; i++)
		exchange(sv[0], sv[1], 4096);
	printf("fdlimit: moved 2000 blocks\n");
	write_expect(g_sent, g_recv);
	return 0;
}

int main(int argc, char **argv)
{
	memset(buf, 's', sizeof buf);
	const char *m = argc > 1 ? argv[1] : "";
	int n = argc > 2 ? atoi(argv[2]) : 0;
	if (!strcmp(m, "spawns"))
		return spawns();
	if (!strcmp(m, "forks") && n > 0)
		return forks(n);
	if (!strcmp(m, "threads") && n > 0)
		return threads(n);
	if (!strcmp(m, "signals"))
		return signals();
	if (!strcmp(m, "fdlimit"))
		return fdlimit();
	fprintf(stderr, "usage: storm spawns | forks N | threads N | signals | fdlimit\n");
	return 2;
}
