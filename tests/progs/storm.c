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
 *   storm nproc       fork children that each move bytes and wait, until
 *                     fork fails (run it under a small ulimit -u): prints
 *                     how many it made, then lets them all go
 *   storm calls       a 100 us interval timer, first without SA_RESTART,
 *                     then with it, interrupting every blocking call a
 *                     wrapper times: connect, accept, poll, select,
 *                     epoll_wait, sendmsg, recvmsg, recvmmsg,
 *                     pthread_cond_wait and pthread_cond_timedwait,
 *                     sem_wait, sem_timedwait and sem_clockwait (see
 *                     calls() below);
 *                     every result is checked
 *   storm vforked     a child that records nothing, vforks a grandchild that
 *                     makes one recorded call and exits, then moves bytes
 *                     itself: its trace is whole (the grandchild shares its
 *                     memory, and must not start its writer for it)
 *   storm quiet N     N children in turn, each of which counts its own
 *                     threads (/proc/self/status through raw system calls,
 *                     which nothing records) and exits with the count at
 *                     once: prints how many children saw how many threads
 */
#define _GNU_SOURCE
#define PROG "storm"
#include "progs.h"

#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <spawn.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>

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

/* ---- storm nproc ---- */

static int nproc(void)
{
	int go[2], ready[2];
	make_pipe(go);
	make_pipe(ready);
	pid_t kids[4096];
	int n = 0, err = 0;
	while (n < 4096) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0) {
			err = errno;
			break;
		}
		if (pid == 0) {
			int sv[2];
			char c;
			close(go[1]);
			stream_pair(sv, 0);
			exchange(sv[0], sv[1], 1000); /* events: the child has a trace of its own */
			if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 0)
				_exit(97);
			_exit(0);
		}
		kids[n++] = pid;
		char c;
		if (read(ready[0], &c, 1) != 1)
			fail("a child did not start");
	}
	printf("nproc: %d children, then %s\n", n, err == EAGAIN ? "EAGAIN" : strerror(err));
	fflush(stdout);
	close(go[1]); /* every child reads end of file and exits */
	int bad = 0;
	for (int i = 0; i < n; i++) {
		int st;
		if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad++;
	}
	printf("nproc: %d children failed\n", bad);
	return bad ? 1 : 0;
}

/* ---- storm calls ---- */

/*
 * The main thread makes every blocking call; SIGALRM, every 100 us, can
 * only reach it (the helper threads block it), and each call blocks until
 * a helper acts after a pause of a few hundred microseconds, so most calls
 * meet the signal. Each call is retried as a careful program does: EINTR
 * (always, for poll, select and epoll_wait, which are never restarted),
 * partial transfers, an interrupted connect that may have gone on. The
 * counts of socket bytes are kept by every thread (DDLT_EXPECT).
 */
static _Atomic unsigned long long c_sent, c_recv;
static int c_restart;

#define C_ROUNDS 100
#define C_STREAM (256 * 1024)
#define C_DGRAMS 300

static void pause_us(long us)
{
	struct timespec ts = {0, us * 1000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* A helper thread, started with SIGALRM blocked: the timer's signals all
 * go to the main thread, which makes the calls under test. */
static void c_spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t alrm, old;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &alrm, &old);
	int e = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		errno = e;
		die("pthread_create");
	}
}

/* One byte over a socket, counted; retried on EINTR. */
static void put_byte(int fd, unsigned char b)
{
	ssize_t r;
	while ((r = send(fd, &b, 1, 0)) < 0 && errno == EINTR)
		;
	if (r != 1)
		die("send byte");
	c_sent++;
}

static unsigned char get_byte(int fd)
{
	unsigned char b;
	ssize_t r;
	while ((r = recv(fd, &b, 1, 0)) < 0 && errno == EINTR)
		;
	if (r != 1)
		die("recv byte");
	c_recv++;
	return b;
}

/* A failed blocking call must say EINTR, nothing else. */
static void only_eintr(const char *call)
{
	if (errno != EINTR)
		die(call);
}

static int c_unix_listener(struct sockaddr_un *a)
{
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "storm-%d-%d", (int)getpid(), c_restart);
	if (l < 0 || bind(l, (struct sockaddr *)a, sizeof *a) < 0 || listen(l, 0) < 0)
		die("unix listener");
	return l;
}

/* connect: an AF_UNIX listener with no backlog makes a connect block until
 * the helper has accepted the one before. */
static void *c_acceptor(void *arg)
{
	int l = *(int *)arg;
	for (int i = 0; i < C_ROUNDS; i++) {
		pause_us(300);
		int c = accept(l, NULL, NULL);
		if (c < 0)
			die("helper accept");
		if (get_byte(c) != (unsigned char)i)
			fail("connect: wrong byte");
		close(c);
	}
	return NULL;
}

static void c_connect(void)
{
	struct sockaddr_un a;
	int l = c_unix_listener(&a);
	pthread_t t;
	c_spawn(&t, c_acceptor, &l);
	for (int i = 0; i < C_ROUNDS; i++) {
		int s = socket(AF_UNIX, SOCK_STREAM, 0);
		if (s < 0)
			die("socket");
		/* interrupted, an AF_UNIX connect has not happened: try again */
		while (connect(s, (struct sockaddr *)&a, sizeof a) != 0)
			only_eintr("connect");
		put_byte(s, (unsigned char)i);
		close(s);
	}
	pthread_join(t, NULL);
	close(l);
}

/* accept: the helper connects over TCP after a pause. */
static void *c_connector(void *arg)
{
	struct sockaddr_in *a = arg;
	for (int i = 0; i < C_ROUNDS; i++) {
		pause_us(300);
		int s = socket(AF_INET, SOCK_STREAM, 0);
		if (s < 0 || connect(s, (struct sockaddr *)a, sizeof *a) != 0)
			die("helper connect");
		put_byte(s, (unsigned char)(i * 7));
		close(s);
	}
	return NULL;
}

static void c_accept(void)
{
	struct sockaddr_in a;
	int l = loopback_socket(SOCK_STREAM, 16, &a);
	pthread_t t;
	c_spawn(&t, c_connector, &a);
	for (int i = 0; i < C_ROUNDS; i++) {
		int c;
		while ((c = accept(l, NULL, NULL)) < 0)
			only_eintr("accept");
		if (get_byte(c) != (unsigned char)(i * 7))
			fail("accept: wrong byte");
		close(c);
	}
	pthread_join(t, NULL);
	close(l);
}

/* poll, select, epoll_wait in turn: the helper sends one byte after a
 * pause, then waits for the main thread's answer. */
static void *c_pinger(void *arg)
{
	int fd = *(int *)arg;
	for (int i = 0; i < 3 * C_ROUNDS; i++) {
		pause_us(300);
		put_byte(fd, (unsigned char)i);
		if (get_byte(fd) != (unsigned char)~i)
			fail("wait: wrong answer");
	}
	return NULL;
}

static void c_waits(void)
{
	int sv[2];
	stream_pair(sv, 0);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 77};
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, sv[0], &ev) != 0)
		die("epoll");
	pthread_t t;
	c_spawn(&t, c_pinger, &sv[1]);
	for (int i = 0; i < 3 * C_ROUNDS; i++) {
		int r;
		if (i % 3 == 0) {
			struct pollfd p = {sv[0], POLLIN, 0};
			while ((r = poll(&p, 1, 10000)) < 0)
				only_eintr("poll");
			if (r != 1 || !(p.revents & POLLIN))
				fail("poll: not readable");
		} else if (i % 3 == 1) {
			fd_set rd;
			do { /* the set is undefined after an error: build it again */
				FD_ZERO(&rd);
				FD_SET(sv[0], &rd);
				struct timeval tv = {10, 0};
				r = select(sv[0] + 1, &rd, NULL, NULL, &tv);
			} while (r < 0 && errno == EINTR);
			if (r != 1 || !FD_ISSET(sv[0], &rd))
				die("select");
		} else {
			struct epoll_event got;
			while ((r = epoll_wait(ep, &got, 1, 10000)) < 0)
				only_eintr("epoll_wait");
			if (r != 1 || got.data.u32 != 77 || !(got.events & EPOLLIN))
				fail("epoll_wait: wrong event");
		}
		if (get_byte(sv[0]) != (unsigned char)i)
			fail("wait: wrong byte");
		put_byte(sv[0], (unsigned char)~i);
	}
	pthread_join(t, NULL);
	close(ep);
	close(sv[0]);
	close(sv[1]);
}

/* sendmsg and recvmsg: C_STREAM bytes each way through small socket
 * buffers, two iovecs a call, byte k of the stream being k % 251; the
 * helper moves its side in 4 KiB steps with pauses. */
static unsigned char c_out[C_STREAM], c_in[C_STREAM];

static void *c_streamer(void *arg)
{
	int fd = *(int *)arg;
	static unsigned char got[4096];
	for (size_t off = 0; off < C_STREAM;) { /* what sendmsg sends */
		ssize_t r = recv(fd, got, sizeof got, 0);
		if (r <= 0)
			die("helper recv");
		c_recv += (unsigned long long)r;
		for (ssize_t k = 0; k < r; k++)
			if (got[k] != (off + (size_t)k) % 251)
				fail("sendmsg: stream damaged");
		off += (size_t)r;
		if (off % 16384 < (size_t)r)
			pause_us(200);
	}
	for (size_t off = 0; off < C_STREAM; off += 4096) { /* what recvmsg takes */
		ssize_t r = send(fd, c_out + off, 4096, 0);
		if (r != 4096)
			die("helper send");
		c_sent += (unsigned long long)r;
		if (off % 16384 == 0)
			pause_us(200);
	}
	return NULL;
}

/* Moves the iovecs *v (n of them) past k bytes. */
static void c_advance(struct iovec **v, int *n, size_t k)
{
	while (*n > 0 && k >= (*v)->iov_len) {
		k -= (*v)->iov_len;
		(*v)++;
		(*n)--;
	}
	if (*n > 0) {
		(*v)->iov_base = (char *)(*v)->iov_base + k;
		(*v)->iov_len -= k;
	}
}

/* All of the two iovecs V with sendmsg, or with recvmsg when RECEIVING:
 * interrupted part way, a call moves some and the next the rest. */
static void c_msgs(int fd, struct iovec *v, int receiving)
{
	int n = 2;
	while (n > 0) {
		struct msghdr m = {.msg_iov = v, .msg_iovlen = (size_t)n};
		ssize_t r = receiving ? recvmsg(fd, &m, 0) : sendmsg(fd, &m, 0);
		if (r < 0) {
			only_eintr(receiving ? "recvmsg" : "sendmsg");
			continue;
		}
		if (r == 0 && receiving)
			fail("recvmsg: EOF");
		if (receiving)
			c_recv += (unsigned long long)r;
		else
			c_sent += (unsigned long long)r;
		c_advance(&v, &n, (size_t)r);
	}
}

static void c_stream(void)
{
	int sv[2], small = 4096;
	stream_pair(sv, 0);
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
	for (size_t k = 0; k < C_STREAM; k++)
		c_out[k] = (unsigned char)(k % 251);
	pthread_t t;
	c_spawn(&t, c_streamer, &sv[1]);
	struct iovec out[2] = {{c_out, C_STREAM / 3}, {c_out + C_STREAM / 3, C_STREAM - C_STREAM / 3}};
	struct iovec in[2] = {{c_in, 1000}, {c_in + 1000, C_STREAM - 1000}};
	c_msgs(sv[0], out, 0);
	c_msgs(sv[0], in, 1);
	if (memcmp(c_in, c_out, C_STREAM))
		fail("recvmsg: stream damaged");
	pthread_join(t, NULL);
	close(sv[0]);
	close(sv[1]);
}

/* recvmmsg: C_DGRAMS datagrams, datagram i of i % 97 + 1 bytes of i & 255,
 * sent in bursts of five with pauses; read 8 at a time, MSG_WAITFORONE. */
static void *c_dgram_sender(void *arg)
{
	int fd = *(int *)arg;
	unsigned char b[128];
	for (int i = 0; i < C_DGRAMS; i++) {
		size_t len = (size_t)(i % 97 + 1);
		memset(b, i & 255, len);
		ssize_t r = send(fd, b, len, 0);
		if (r != (ssize_t)len)
			die("helper send datagram");
		c_sent += len;
		if (i % 5 == 4)
			pause_us(300);
	}
	return NULL;
}

static void c_dgrams(void)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) < 0)
		die("socketpair");
	pthread_t t;
	c_spawn(&t, c_dgram_sender, &sv[1]);
	static unsigned char b[8][128];
	for (int i = 0; i < C_DGRAMS;) {
		struct mmsghdr mv[8];
		struct iovec iov[8];
		memset(mv, 0, sizeof mv);
		for (int k = 0; k < 8; k++) {
			iov[k] = (struct iovec){b[k], sizeof b[k]};
			mv[k].msg_hdr.msg_iov = &iov[k];
			mv[k].msg_hdr.msg_iovlen = 1;
		}
		int r = recvmmsg(sv[0], mv, 8, MSG_WAITFORONE, NULL);
		if (r < 0) {
			only_eintr("recvmmsg");
			continue;
		}
		for (int k = 0; k < r; k++, i++) {
			size_t len = (size_t)(i % 97 + 1);
			if (mv[k].msg_len != len)
				fail("recvmmsg: wrong length");
			check_bytes(b[k], len, (unsigned char)(i & 255));
			c_recv += mv[k].msg_len;
		}
	}
	pthread_join(t, NULL);
	close(sv[0]);
	close(sv[1]);
}

/* pthread_cond_wait and pthread_cond_timedwait: never EINTR, never
 * early; a helper raises a counter after a pause, waiting for each round
 * to be taken first. Then timed waits nobody signals must time out. */
static pthread_mutex_t c_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c_raised = PTHREAD_COND_INITIALIZER, c_taken = PTHREAD_COND_INITIALIZER;
static int c_value, c_took;

static void *c_raiser(void *arg)
{
	(void)arg;
	for (int i = 0; i < 2 * C_ROUNDS; i++) {
		pause_us(200);
		pthread_mutex_lock(&c_mu);
		while (c_took < i)
			pthread_cond_wait(&c_taken, &c_mu);
		c_value = i + 1;
		pthread_cond_signal(&c_raised);
		pthread_mutex_unlock(&c_mu);
	}
	return NULL;
}

static struct timespec c_in_us(long us)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_nsec += us * 1000;
	t.tv_sec += t.tv_nsec / 1000000000;
	t.tv_nsec %= 1000000000;
	return t;
}

static void c_conds(void)
{
	c_value = c_took = 0;
	pthread_t t;
	c_spawn(&t, c_raiser, NULL);
	pthread_mutex_lock(&c_mu);
	for (int i = 0; i < 2 * C_ROUNDS; i++) {
		while (c_value < i + 1) {
			struct timespec until = c_in_us(10000000);
			int r = i % 2 ? pthread_cond_wait(&c_raised, &c_mu)
						  : pthread_cond_timedwait(&c_raised, &c_mu, &until);
			if (r != 0) /* EINTR is not allowed; a 10 s timeout is a hang */
				fail(r == EINTR ? "cond wait: EINTR" : "cond wait failed");
		}
		c_took = i + 1;
		pthread_cond_signal(&c_taken);
	}
	for (int i = 0; i < 20; i++) {
		struct timespec until = c_in_us(500), now;
		int r;
		do /* a wake-up with nothing to see (spurious) waits on */
			r = pthread_cond_timedwait(&c_raised, &c_mu, &until);
		while (r == 0);
		clock_gettime(CLOCK_REALTIME, &now);
		if (r != ETIMEDOUT || now.tv_sec < until.tv_sec ||
			(now.tv_sec == until.tv_sec && now.tv_nsec < until.tv_nsec))
			fail("cond timedwait: not a timeout");
	}
	pthread_mutex_unlock(&c_mu);
	pthread_join(t, NULL);
}

/* sem_wait, sem_timedwait, sem_clockwait: EINTR when a handler interrupts them (with
 * SA_RESTART too: a semaphore wait is never restarted), then the wait goes
 * on; never early, never a lost post. A helper posts after a pause, once a
 * round; then timed waits nobody posts must time out, errno ETIMEDOUT. */
static sem_t s_sem;

static void *s_poster(void *arg)
{
	(void)arg;
	for (int i = 0; i < 2 * C_ROUNDS; i++) {
		pause_us(200);
		sem_post(&s_sem);
	}
	return NULL;
}

static void s_sems(void)
{
	if (sem_init(&s_sem, 0, 0))
		fail("sem_init");
	pthread_t t;
	c_spawn(&t, s_poster, NULL);
	for (int i = 0; i < 2 * C_ROUNDS; i++) {
		struct timespec until = c_in_us(10000000);
		int r;
		struct timespec mono;
		clock_gettime(CLOCK_MONOTONIC, &mono);
		mono.tv_sec += 10;
		do
			r = i % 3 == 0 ? sem_wait(&s_sem) : i % 3 == 1 ? sem_timedwait(&s_sem, &until)
			                                               : sem_clockwait(&s_sem, CLOCK_MONOTONIC, &mono);
		while (r == -1 && errno == EINTR);
		if (r != 0)
			fail("sem wait failed"); /* a 10 s timeout is a hang */
	}
	pthread_join(t, NULL);
	for (int i = 0; i < 20; i++) { /* half on the real-time clock, half on the monotonic one */
		clockid_t ck = i % 2 ? CLOCK_MONOTONIC : CLOCK_REALTIME;
		struct timespec until, now;
		clock_gettime(ck, &until);
		until.tv_nsec += 500000;
		until.tv_sec += until.tv_nsec / 1000000000;
		until.tv_nsec %= 1000000000;
		int r;
		do
			r = i % 2 ? sem_clockwait(&s_sem, ck, &until) : sem_timedwait(&s_sem, &until);
		while (r == -1 && errno == EINTR);
		clock_gettime(ck, &now);
		if (r != -1 || errno != ETIMEDOUT || now.tv_sec < until.tv_sec ||
		    (now.tv_sec == until.tv_sec && now.tv_nsec < until.tv_nsec))
			fail("sem_timedwait: not a timeout");
	}
	int v = -1;
	if (sem_getvalue(&s_sem, &v) || v != 0 || sem_destroy(&s_sem))
		fail("semaphore left with a count");
}

static int calls(void)
{
	for (c_restart = 0; c_restart < 2; c_restart++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_tick;
		sa.sa_flags = c_restart ? SA_RESTART : 0;
		sigaction(SIGALRM, &sa, NULL);
		ticks = 0;
		struct itimerval it = {{0, 100}, {0, 100}};
		setitimer(ITIMER_REAL, &it, NULL);
		void (*step[])(void) = {c_connect, c_accept, c_waits, c_stream, c_dgrams, c_conds, s_sems};
		for (size_t k = 0; k < sizeof step / sizeof step[0]; k++)
			step[k]();
		struct itimerval off = {{0, 0}, {0, 0}};
		setitimer(ITIMER_REAL, &off, NULL);
		printf("calls, SA_RESTART %s: %d connect, %d accept, %d poll/select/epoll_wait, "
			   "%d bytes by sendmsg and by recvmsg, %d datagrams by recvmmsg, %d condition "
			   "waits and 20 timeouts, %d semaphore waits and 20 timeouts: all results right; %s\n",
			   c_restart ? "on" : "off", C_ROUNDS, C_ROUNDS, 3 * C_ROUNDS, C_STREAM, C_DGRAMS,
			   2 * C_ROUNDS, 2 * C_ROUNDS, ticks > 0 ? "interrupted" : "never interrupted");
	}
	write_expect(c_sent, c_recv);
	return 0;
}

/* The calling process's thread count, read with raw system calls; -1 on failure. */
static int quiet_threads(void)
{
	char st[4096];
	long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	long n = syscall(SYS_read, (int)fd, st, sizeof st - 1);
	syscall(SYS_close, (int)fd);
	if (n <= 0)
		return -1;
	st[n] = 0;
	const char *t = strstr(st, "\nThreads:");
	return t ? atoi(t + 9) : -1;
}

static int vforked(void)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		die("socketpair");
	pid_t c = fork();
	if (c < 0)
		die("fork");
	if (c == 0) {
		pid_t v = vfork();
		if (v == 0) {
			ssize_t k = send(sv[0], "v", 1, 0); /* recorded, in the vfork child */
			_exit(k == 1 ? 0 : 1);
		}
		int st;
		if (v < 0 || waitpid(v, &st, 0) != v || !WIFEXITED(st) || WEXITSTATUS(st))
			_exit(2);
		char b[64];
		if (recv(sv[1], b, 1, 0) != 1)
			_exit(3);
		unsigned long long moved = 1;
		for (int i = 0; i < 5000; i++) {
			if (send(sv[0], b, 64, 0) != 64 || recv(sv[1], b, 64, 0) != 64)
				_exit(4);
			moved += 64;
		}
		write_expect(moved, moved);
		_exit(0);
	}
	int st;
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st))
		die("child");
	printf("vforked: the child moved its bytes\n");
	write_expect(0, 0);
	return 0;
}

static int quiet(int n)
{
	int seen[8] = {0};
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0)
			die("fork");
		if (p == 0)
			syscall(SYS_exit_group, quiet_threads());
		int status;
		if (waitpid(p, &status, 0) != p || !WIFEXITED(status))
			die("waitpid");
		seen[WEXITSTATUS(status) < 7 ? WEXITSTATUS(status) : 7]++;
	}
	for (int k = 0; k < 8; k++)
		if (seen[k])
			printf("quiet: %d children saw %d thread%s\n", seen[k], k, k == 1 ? "" : "s");
	write_expect(0, 0);
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
	if (!strcmp(m, "calls"))
		return calls();
	if (!strcmp(m, "nproc"))
		return nproc();
	if (!strcmp(m, "quiet") && n > 0)
		return quiet(n);
	if (!strcmp(m, "vforked"))
		return vforked();
	fprintf(stderr, "usage: storm spawns | forks N | threads N | signals | fdlimit | calls | nproc | quiet N | vforked\n");
	return 2;
}
