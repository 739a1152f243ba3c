/*
 * tcpring: a small data-parallel "training" job with no GPU. Each rank
 * computes for a while (a busy loop standing in for forward and backward
 * passes), then all-reduces its gradient buffer with its peers by a ring
 * all-reduce over TCP (reduce-scatter, then all-gather), the way gloo and
 * NCCL's ring do. It is the demo's job until the GPU path exists.
 *
 * Ranks come from RANK and WORLD_SIZE, or, with neither set, from Slurm's
 * SLURM_PROCID and SLURM_NTASKS (a task of `srun -n N`); with none of
 * them, it starts WORLD_SIZE=4 ranks itself (re-executing itself with RANK
 * set), so `ddlprof -- tcpring` profiles a whole job.
 *
 * Options: -n ITER (20), -m MB of gradients (8), -c MS of compute (20),
 * -p PORT base (20000 + pid % 1500 * 8: below the ephemeral ports), -k to name each step "step" with
 * ddlprof's marker API (a no-op without ddlprof), -w K to say also the mean of the iterations after
 * the first K (a report leaves out a warm-up: the first ones touch fresh memory and wait for the
 * ranks' start); -h or --help for usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ddlprof/ddlprof.h"

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "tcpring: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Busy "compute" for ms milliseconds, touching the gradients as a model would. */
static void compute(float *g, size_t n, double ms, int iter)
{
	double end = now_s() + ms / 1e3;
	size_t i = 0;
	while (now_s() < end) {
		for (int k = 0; k < 4096; k++, i++)
			g[i % n] = g[i % n] * 0.999f + (float)(iter + 1) * 1e-3f;
	}
}

/* Sends a and receives b at the same time, with poll, so neither side blocks. */
static void exchange(int out, const char *a, size_t na, int in, char *b, size_t nb)
{
	size_t sent = 0, got = 0;
	while (sent < na || got < nb) {
		struct pollfd p[2] = {{out, sent < na ? POLLOUT : 0, 0}, {in, got < nb ? POLLIN : 0, 0}};
		if (poll(p, 2, 10000) <= 0)
			die("poll");
		if (p[0].revents & POLLOUT) {
			ssize_t r = send(out, a + sent, na - sent, MSG_DONTWAIT);
			if (r < 0 && errno != EAGAIN)
				die("send");
			sent += r > 0 ? (size_t)r : 0;
		}
		if (p[1].revents & (POLLIN | POLLHUP)) {
			ssize_t r = recv(in, b + got, nb - got, MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno != EAGAIN))
				die("recv");
			got += r > 0 ? (size_t)r : 0;
		}
	}
}

static void ring_allreduce(float *g, size_t n, int rank, int world, int out, int in, float *tmp)
{
	size_t chunk = (n + (size_t)world - 1) / (size_t)world;
	for (int step = 0; step < world - 1; step++) { /* reduce-scatter */
		int s = (rank - step + world) % world, r = (rank - step - 1 + world) % world;
		size_t so = (size_t)s * chunk, ro = (size_t)r * chunk;
		size_t sn = so < n ? (n - so < chunk ? n - so : chunk) : 0;
		size_t rn = ro < n ? (n - ro < chunk ? n - ro : chunk) : 0;
		exchange(out, (char *)(g + so), sn * 4, in, (char *)tmp, rn * 4);
		for (size_t i = 0; i < rn; i++)
			g[ro + i] += tmp[i];
	}
	for (int step = 0; step < world - 1; step++) { /* all-gather */
		int s = (rank + 1 - step + world) % world, r = (rank - step + world) % world;
		size_t so = (size_t)s * chunk, ro = (size_t)r * chunk;
		size_t sn = so < n ? (n - so < chunk ? n - so : chunk) : 0;
		size_t rn = ro < n ? (n - ro < chunk ? n - ro : chunk) : 0;
		exchange(out, (char *)(g + so), sn * 4, in, (char *)(g + ro), rn * 4);
	}
}

static int listen_on(int port)
{
	int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 4))
		die("listen");
	return s;
}

static int connect_to(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int tries = 0; tries < 500; tries++) {
		int s = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in me;
		socklen_t len = sizeof me;
		/* connected to itself (its own ephemeral port was the target): again */
		if (connect(s, (struct sockaddr *)&a, sizeof a) == 0 &&
		    (getsockname(s, (struct sockaddr *)&me, &len) || me.sin_port != a.sin_port)) {
			int one = 1;
			setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
			return s;
		}
		close(s);
		usleep(10000);
	}
	die("connect");
	return -1;
}

/* The usage text on F; returns STATUS. */
static int tcpring_usage(FILE *f, int status)
{
	fputs("usage: tcpring [-n ITER] [-m MB] [-c MS] [-p PORT] [-k] [-w K]\n"
	      "A data-parallel job without a GPU: each rank computes, then ring-all-reduces\n"
	      "its gradients over TCP. Ranks from RANK and WORLD_SIZE, else from srun's\n"
	      "SLURM_PROCID and SLURM_NTASKS; with none set it starts WORLD_SIZE (default 4)\n"
	      "ranks of itself.\n"
	      "  -n ITER   iterations (20)\n"
	      "  -m MB     gradient buffer, MiB (8)\n"
	      "  -c MS     compute per iteration, ms (20)\n"
	      "  -p PORT   base port (20000 + pid % 1500 * 8: below the ephemeral ports)\n"
	      "  -k        name each step \"step\" with ddlprof's marker API\n"
	      "  -w K      say also the mean of the iterations after the first K\n"
	      "  -h, --help  this text\n",
	      f);
	return status;
}

int main(int argc, char **argv)
{
	int iters = 20, mb = 8, c, markers = 0, warm = 0;
	double ms = 20;
	int port = 20000 + (int)(getpid() % 1500) * 8;
	static const struct option longs[] = {{"help", no_argument, NULL, 'h'}, {0}};
	while ((c = getopt_long(argc, argv, "n:m:c:p:kw:h", longs, NULL)) != -1) {
		switch (c) {
		case 'n': iters = atoi(optarg); break;
		case 'm': mb = atoi(optarg); break;
		case 'c': ms = atof(optarg); break;
		case 'p': port = atoi(optarg); break;
		case 'k': markers = 1; break;
		case 'w': warm = atoi(optarg); break;
		case 'h': return tcpring_usage(stdout, 0);
		default: return tcpring_usage(stderr, 2);
		}
	}
	if (iters < 1 || mb < 1 || ms < 0 || warm < 0 || port < 1024 || port > 65000) {
		fprintf(stderr, "tcpring: bad option value\n");
		return 2;
	}
	const char *rs = getenv("RANK"), *ws = getenv("WORLD_SIZE");
	if (!rs && !ws && getenv("SLURM_PROCID") && getenv("SLURM_NTASKS")) {
		rs = getenv("SLURM_PROCID"); /* one task of srun -n N */
		ws = getenv("SLURM_NTASKS");
	}
	if (!rs || !ws) { /* start the whole job: WORLD_SIZE ranks of ourselves */
		int world = ws ? atoi(ws) : 4;
		char w[16], r[16], p[16];
		snprintf(w, sizeof w, "%d", world);
		snprintf(p, sizeof p, "%d", port);
		for (int i = 0; i < world; i++) {
			if (fork() == 0) {
				snprintf(r, sizeof r, "%d", i);
				setenv("RANK", r, 1);
				setenv("WORLD_SIZE", w, 1);
				char self[4096];
				ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
				self[sl > 0 ? sl : 0] = 0;
				char *nargv[16] = {sl > 0 ? self : "/proc/self/exe", "-p", p};
				int k = 3;
				for (int j = 1; j < argc && k < 15; j++)
					nargv[k++] = argv[j];
				nargv[k] = NULL;
				execv(nargv[0], nargv);
				die("exec");
			}
		}
		int st, bad = 0;
		while (wait(&st) > 0)
			bad |= !WIFEXITED(st) || WEXITSTATUS(st);
		return bad;
	}
	int rank = atoi(rs), world = atoi(ws);
	if (world < 2 || rank < 0 || rank >= world) {
		fprintf(stderr, "tcpring: RANK %d of WORLD_SIZE %d\n", rank, world);
		return 2;
	}
	int ls = listen_on(port + rank);
	int out = connect_to(port + (rank + 1) % world);
	int in = accept(ls, NULL, NULL);
	if (in < 0)
		die("accept");
	close(ls);
	size_t n = (size_t)mb * 1024 * 1024 / 4;
	float *g = calloc(n, 4), *tmp = calloc(n / (size_t)world + 1, 4);
	if (!g || !tmp)
		die("calloc");
	double t0 = now_s(), comm = 0, tw = t0;
	for (int it = 0; it < iters; it++) {
		if (it == warm)
			tw = now_s();
		if (markers && ddlprof_range_push)
			ddlprof_range_push("step");
		compute(g, n, ms, it);
		double a = now_s();
		ring_allreduce(g, n, rank, world, out, in, tmp);
		comm += now_s() - a;
		if (markers && ddlprof_range_pop)
			ddlprof_range_pop();
	}
	double end = now_s(), total = end - t0;
	if (rank == 0) {
		printf("tcpring: %d ranks, %d iterations, %d MiB gradients: %.1f ms/iteration, "
		       "%.0f%% in all-reduce",
		       world, iters, mb, total / iters * 1e3, 100 * comm / total);
		if (warm > 0 && warm < iters)
			printf("; after the first %d: %.2f ms/iteration", warm, (end - tw) / (iters - warm) * 1e3);
		printf("\n");
	}
	return 0;
}
