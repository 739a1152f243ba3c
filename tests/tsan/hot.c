/*
 * The preload library's hot path under ThreadSanitizer, with many threads.
 * A TSan-built libddlprof.so cannot be preloaded (the TSan runtime must be
 * the first thing in the process and set up before any instrumented code
 * runs), so `make tsan` compiles the library's sources into this program
 * instead: its wrappers then interpose on libc from the executable, and
 * dlsym(RTLD_NEXT) finds the TSan runtime's interceptors behind them (gcc
 * links libtsan.so first), so the runtime still sees every lock, wait and
 * descriptor. The trace reader is compiled in too, to check the result.
 *
 *   hot         makes a trace directory, runs `hot run` in it with
 *               profiling on, checks its exit status (TSan exits 66 on any
 *               report) and reads the trace back: every round's threads
 *               recorded, every fake sendto either recorded or counted as
 *               dropped, a clean end chunk
 *   hot run     the workload: ROUNDS rounds of NTHREADS threads that start,
 *               hammer the wrappers and end (their rings are reused), with
 *               a 64-event ring (DDLPROF_BUFFER_EVENTS) so rings overflow and
 *               wake the writer, which flushes every millisecond
 *
 * Each thread: sendto with the real one pointed at a no-op (ddl_real_set,
 * the recording path at full speed), every 100th to a new address off the
 * host (interned and classed remote, which rereads the host's addresses in
 * a new second: a round's threads start together just after one begins), a
 * TCP connection to its own listener (connect, accept, new peers interned
 * into the shared string table while the other threads do the same),
 * send/recv round trips over it, markers with names other threads intern
 * at the same moment, condition-variable timed waits, and dup2/close of
 * sockets. The library's constructor runs as in a preloaded process; this
 * program only calls the wrappers and the exported test hook. Not covered:
 * fork (TSan does not support a multi-threaded process's child starting
 * threads, as ours does its writer) and the CUDA/NCCL wrappers (built
 * without CUDA here: gpu_hot.c covers them). The checks, the profiled child
 * and the syscall() that keeps TSan's descriptor 2 are in harness.c. About
 * 4 s. Prints "N passed, N failed"; exits 1 on
 * failure.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ddlprof/ddlprof.h"
#include "harness.h"
#include "trace_read.h"

#define ROUNDS 4
#define NTHREADS 24
#define FAKE_SENDS 3000
#define ROUND_TRIPS 100
#define TIMEOUT_S 120

void *ddl_real_set(const char *name, void *fn);

static pthread_barrier_t start; /* a round's threads go together */

static ssize_t fake_sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *to,
                           socklen_t tolen)
{
	(void)fd;
	(void)buf;
	(void)flags;
	(void)to;
	(void)tolen;
	return (ssize_t)n;
}

/* A connected pair over loopback TCP through a listener of our own. */
static int tcp_pair(int sv[2])
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0)
		return -1;
	if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &len)) {
		close(l);
		return -1;
	}
	sv[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sv[0] < 0 || connect(sv[0], (struct sockaddr *)&a, sizeof a)) {
		close(l);
		return -1;
	}
	sv[1] = accept(l, NULL, NULL);
	close(l);
	return sv[1] < 0 ? -1 : 0;
}

static void *worker(void *arg)
{
	long id = (long)arg;
	char buf[256] = {0}, name[32];
	int sv[2];
	pthread_barrier_wait(&start);
	if (tcp_pair(sv) < 0)
		return (void *)1;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	for (int i = 0; i < FAKE_SENDS; i++) {
		if (i % 500 == 0) {
			/* names shared by every thread, interned concurrently */
			snprintf(name, sizeof name, "step-%d", i / 500);
			ddlprof_range_push(name);
			ddlprof_mark("tick");
			ddlprof_range_pop();
		}
		if (i % 100 == 0) {
			/* a new peer, most likely off this host (TEST-NET-3), as a
			 * datagram's destination: interned, and classed */
			uint32_t host = 0xcb007100u | (uint32_t)(id % 250 + 1); /* 203.0.113.x */
			struct sockaddr_in to = {.sin_family = AF_INET,
			                         .sin_port = htons((uint16_t)(1024 + i / 100)),
			                         .sin_addr.s_addr = htonl(host)};
			sendto(sv[0], buf, 64, 0, (struct sockaddr *)&to, sizeof to);
			continue;
		}
		sendto(sv[0], buf, 64, 0, NULL, 0);
	}
	for (int i = 0; i < ROUND_TRIPS; i++) {
		if (send(sv[0], buf, sizeof buf, 0) != (ssize_t)sizeof buf ||
		    recv(sv[1], buf, sizeof buf, MSG_WAITALL) != (ssize_t)sizeof buf ||
		    send(sv[1], buf, 16, 0) != 16 || recv(sv[0], buf, 16, MSG_WAITALL) != 16)
			return (void *)1;
		if (i % 25 == 0) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			pthread_mutex_lock(&m);
			pthread_cond_timedwait(&c, &m, &ts); /* times out at once */
			pthread_mutex_unlock(&m);
		}
	}
	/* the descriptor table: a socket renumbered and closed */
	int d = dup(sv[0]);
	if (d >= 0) {
		dup2(sv[1], d);
		send(d, buf, 8, 0);
		recv(sv[0], buf, 8, MSG_WAITALL);
		close(d);
	}
	close(sv[0]);
	close(sv[1]);
	return NULL;
}

static int run(void)
{
	if (!ddl_real_set("sendto", (void *)fake_sendto)) {
		fprintf(stderr, "tsan: ddl_real_set failed\n");
		return 1;
	}
	int bad = 0;
	for (int r = 0; r < ROUNDS; r++) {
		pthread_t th[NTHREADS];
		pthread_barrier_init(&start, NULL, NTHREADS + 1);
		for (long i = 0; i < NTHREADS; i++)
			if (pthread_create(&th[i], NULL, worker, (void *)(r * NTHREADS + i)))
				return 1;
		/* Let them go together at the start of a new second: the library
		 * rereads the host's addresses when a peer it does not know as
		 * local shows up in a second it has not looked in yet, so every
		 * thread may do so at once. */
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		struct timespec rest = {0, 1000000000L - now.tv_nsec};
		nanosleep(&rest, NULL);
		pthread_barrier_wait(&start);
		for (int i = 0; i < NTHREADS; i++) {
			void *rv;
			pthread_join(th[i], &rv);
			bad += rv != NULL;
		}
		pthread_barrier_destroy(&start);
	}
	if (bad)
		fprintf(stderr, "tsan: %d threads could not talk over loopback TCP\n", bad);
	return bad ? 1 : 0;
}

/* The "A.B.C.D:PORT" peer TEXT is an address of this host. */
static int on_host(const char *text)
{
	char ip[64];
	snprintf(ip, sizeof ip, "%s", text);
	char *colon = strchr(ip, ':');
	if (colon)
		*colon = 0;
	struct in_addr a;
	struct ifaddrs *ifa = NULL;
	int found = 0;
	if (inet_pton(AF_INET, ip, &a) != 1 || getifaddrs(&ifa) != 0)
		return 0;
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
		found |= i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		         ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == a.s_addr;
	freeifaddrs(ifa);
	return found;
}

/* Reads every trace in DIR; adds up what the checks need. */
static int read_traces(const char *dir, size_t *nfiles, size_t *threads, uint64_t *sendto,
                       uint64_t *marks, uint64_t *dropped, int *clean, size_t *remote,
                       size_t *misclassed)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct dirent *e;
	*clean = 1;
	while ((e = readdir(d))) {
		if (!strstr(e->d_name, ".ddlt"))
			continue;
		char path[4096], err[512];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		struct ddl_trace t;
		if (ddl_trace_read(path, &t, err, sizeof err) < 0) {
			fprintf(stderr, "tsan: %s\n", err);
			closedir(d);
			return -1;
		}
		(*nfiles)++;
		*threads += t.nthreads;
		for (size_t i = 0; i < t.nev; i++) {
			*sendto += t.ev[i].kind == DDL_EV_SENDTO;
			*marks += t.ev[i].kind == DDL_EV_MARK;
		}
		*dropped += t.end.dropped;
		for (size_t i = 0; i < t.npeers; i++) {
			const char *p = t.peers[i].text;
			if (!p)
				continue;
			int test_net = !strncmp(p, "203.0.113.", 10), lo = !strncmp(p, "127.", 4);
			int local = lo || (test_net && on_host(p));
			*remote += test_net && !local;
			if ((test_net || lo) && t.peers[i].local != local) {
				if (!*misclassed)
					fprintf(stderr, "tsan: peer %s classed %s\n", p,
					        t.peers[i].local ? "local" : "remote");
				++*misclassed;
			}
		}
		if (!t.ended || t.truncated || t.corrupt)
			*clean = 0;
		ddl_trace_free(&t);
	}
	closedir(d);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "run"))
		return run();

	char dir[64];
	static const char *const env[] = {"DDLPROF_BUFFER_EVENTS=64", "DDLPROF_FLUSH_MS=1", NULL};
	if (tsan_run_profiled(argv[0], dir, env, TIMEOUT_S) < 0)
		return 1;

	size_t nfiles = 0, threads = 0, remote = 0, misclassed = 0;
	uint64_t sendto = 0, marks = 0, dropped = 0;
	int clean = 0;
	int rc = read_traces(dir, &nfiles, &threads, &sendto, &marks, &dropped, &clean, &remote,
	                     &misclassed);
	tsan_check(rc == 0 && nfiles == 1, "one readable trace");
	tsan_check(clean, "the trace ends with an end chunk, nothing truncated or corrupt");
	/* Rings of ended threads are reused, but each thread gets an index. */
	tsan_check(threads >= ROUNDS * NTHREADS, "every thread of every round is in the trace");
	uint64_t calls = (uint64_t)ROUNDS * NTHREADS * FAKE_SENDS;
	tsan_check(sendto <= calls && sendto + dropped >= calls,
	           "every sendto is recorded or counted as dropped");
	tsan_check(marks > 0, "markers recorded");
	/* a TEST-NET-3 host per thread, 30 ports each, met by threads at once */
	tsan_check(remote > 250 && !misclassed, "peers off the host classed remote, the host's local");
	fprintf(stderr,
	        "tsan: %zu threads, %llu of %llu sendto recorded, %llu events dropped, %zu remote "
	        "peers\n",
	        threads, (unsigned long long)sendto, (unsigned long long)calls,
	        (unsigned long long)dropped, remote);

	tsan_remove_dir(dir);
	return tsan_summary();
}
