/*
 * Signal handlers at the worst moments for a preload library:
 *   sigrace first   the process's only traced calls are write()s to a pipe
 *                   from a SIGALRM handler, while main allocates memory: the
 *                   library must do nothing there that is not
 *                   async-signal-safe (such as starting a thread);
 *   sigrace exit N  N send/recv pairs, then exit(0); 3 ms into exit a
 *                   SIGUSR1 handler calls _exit(3): the trace must still end
 *                   with every event.
 */
#define _GNU_SOURCE
#define PROG "sigrace"
#include "progs.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/time.h>

static int pfd[2];
static volatile sig_atomic_t ticks;

static void on_alarm(int s)
{
	(void)s;
	char c = '.';
	if (write(pfd[1], &c, 1) != 1)
		_exit(98);
	ticks++;
}

static int first_call_in_handler(void)
{
	make_pipe(pfd);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 1000}, {0, 1000}};
	setitimer(ITIMER_REAL, &it, NULL);
	void *keep[64] = {0};
	unsigned long n = 0;
	while (ticks < 100) {
		size_t i = n++ % 64;
		free(keep[i]);
		keep[i] = malloc(16 + (n * 7919) % 70000);
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	printf("sigrace first: %s\n", ticks >= 100 ? "ok" : "short");
	return 0;
}

static pthread_t main_thread;
static atomic_int exiting;

static void on_usr1(int s)
{
	(void)s;
	_exit(3);
}

static void mark_exiting(void)
{
	atomic_store(&exiting, 1);
}

static void *killer(void *a)
{
	(void)a;
	while (!atomic_load(&exiting))
		usleep(100);
	usleep(3000);
	pthread_kill(main_thread, SIGUSR1);
	return NULL;
}

static int exit_during_flush(long n)
{
	int sv[2];
	char b[1];
	stream_pair(sv, 0);
	for (long i = 0; i < n; i++) {
		send_all(sv[0], "x", 1, 1, 0);
		recv_all(sv[1], b, 1, 1, 0);
	}
	write_expect(g_sent, g_recv);
	main_thread = pthread_self();
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	pthread_t k;
	pthread_create(&k, NULL, killer, NULL);
	atexit(mark_exiting);
	printf("sigrace exit: %ld pairs\n", n);
	fflush(stdout);
	exit(0);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "first"))
		return first_call_in_handler();
	if (argc > 2 && !strcmp(argv[1], "exit"))
		return exit_during_flush(atol(argv[2]));
	fprintf(stderr, "usage: sigrace first | exit N\n");
	return 2;
}
