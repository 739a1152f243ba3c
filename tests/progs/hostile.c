/*
 * Things programs do that a preload library easily gets wrong, each printed
 * so a run with the profiler can be compared with one without:
 * the lowest-descriptor idiom while the writer flushes, descriptors closed
 * behind the library's back (closefrom, fclose), SA_RESETHAND handlers and
 * the disposition seen afterwards, signal(SIG_ERR), bad pointers that must
 * give EFAULT, execl from a thread with a small stack, a signal handler
 * that longjmps out of a blocking recv, and unshare(CLONE_NEWUSER) after
 * traffic (it needs a single-threaded process).
 */
#define _GNU_SOURCE
#define PROG "hostile"
#include "progs.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <sys/select.h>
#include <sys/wait.h>

static int fpe_calls;
static void on_fpe(int s)
{
	(void)s;
	fpe_calls++;
}

static sigjmp_buf jb;
static void on_alrm(int s)
{
	(void)s;
	siglongjmp(jb, 1);
}

static void *small_stack_exec(void *arg)
{
	(void)arg;
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	printf("execl from a small stack: exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return NULL;
}

int main(void)
{
	int sv[2];
	char buf[4096];
	memset(buf, 'h', sizeof buf);
	stream_pair(sv, 0);
	send_all(sv[0], buf, 3000, 1000, 0);
	recv_all(sv[1], buf, 3000, 1000, 0);

	/* the lowest free descriptor, again and again, while the writer works */
	int wrong = 0;
	for (int i = 0; i < 200000; i++) {
		close(0);
		int fd = open("/dev/null", O_RDONLY);
		wrong += fd != 0;
		if (i % 10000 == 0)
			send_all(sv[0], buf, 10, 10, 0), recv_all(sv[1], buf, 10, 10, 0);
	}
	printf("open() missed the lowest descriptor %d times\n", wrong);

	/* a socket closed by closefrom, its number reused for a file */
	int s2[2];
	stream_pair(s2, 0);
	send_all(s2[0], buf, 1, 1, 0);
	recv_all(s2[1], buf, 1, 1, 0);
	int low = s2[0] < s2[1] ? s2[0] : s2[1];
	int keep_hi = sv[0] > sv[1] ? sv[0] : sv[1];
	if (low > keep_hi) {
		closefrom(low);
		int f = open("/proc/self/cmdline", O_RDONLY);
		ssize_t n = read(f, buf, sizeof buf);
		printf("file on a reused descriptor: read %s\n", n > 0 ? "ok" : "failed");
		close(f);
	}

	/* SA_RESETHAND: the handler runs once, then the default is seen */
	struct sigaction a, o;
	memset(&a, 0, sizeof a);
	a.sa_handler = on_fpe;
	a.sa_flags = SA_RESETHAND;
	sigaction(SIGFPE, &a, NULL);
	raise(SIGFPE);
	sigaction(SIGFPE, NULL, &o);
	printf("SA_RESETHAND handler calls %d, then %s\n", fpe_calls,
	       o.sa_handler == SIG_DFL ? "SIG_DFL" : "something else");
	errno = 0;
	int rejected = signal(SIGUSR2, SIG_ERR) == SIG_ERR;
	int err = errno;
	printf("signal(SIGUSR2, SIG_ERR): %s, errno %s\n", rejected ? "SIG_ERR" : "accepted",
	       strerror(err));

	/* bad pointers: EFAULT from the kernel, not a crash */
	void *volatile badp = (void *)16; /* opaque to the compiler */
	void *bad = badp;
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	errno = 0;
	int r = connect(u, bad, sizeof(struct sockaddr_in));
	printf("connect(bad) %d %s\n", r, strerror(errno));
	errno = 0;
	r = (int)sendto(u, buf, 1, 0, bad, sizeof(struct sockaddr_in));
	printf("sendto(bad) %d %s\n", r, strerror(errno));
	errno = 0;
	r = poll(bad, 1, 0);
	printf("poll(bad) %d %s\n", r, strerror(errno));
	errno = 0;
	r = select(4, bad, NULL, NULL, &(struct timeval){0, 0});
	printf("select(bad) %d %s\n", r, strerror(errno));
	close(u);

	/* execl from a thread with a 64 KiB stack */
	pthread_attr_t at;
	pthread_t th;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 64 * 1024);
	pthread_create(&th, &at, small_stack_exec, NULL);
	pthread_join(th, NULL);

	/* siglongjmp out of a blocking recv; later calls must be recorded */
	signal(SIGALRM, on_alrm);
	if (sigsetjmp(jb, 1) == 0) {
		alarm(1);
		recv(sv[1], buf, 1, 0);
	}
	signal(SIGALRM, SIG_DFL);
	send_all(sv[0], buf, 500, 500, 0);
	recv_all(sv[1], buf, 500, 500, 0);
	printf("recv after siglongjmp ok\n");

	/* a namespace call that needs a single-threaded process */
	r = unshare(CLONE_NEWUSER);
	printf("unshare(CLONE_NEWUSER) %s\n", r == 0 ? "ok" : strerror(errno));
	send_all(sv[0], buf, 700, 700, 0);
	recv_all(sv[1], buf, 700, 700, 0);
	write_expect(g_sent, g_recv);
	return 0;
}
