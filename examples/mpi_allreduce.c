/*
 * mpi_allreduce: a data-parallel "training" loop on MPI, to profile an MPI
 * job with ddlprof. Each step computes for a while (a busy loop standing in
 * for forward and backward passes), then sums its gradient buffer across
 * the ranks with MPI_Allreduce. Before the loop, ranks in pairs (0 and 1,
 * 2 and 3, ...) exchange a fixed payload with MPI_Send and MPI_Recv, so the
 * bytes each rank handed to MPI are known exactly; each rank prints them.
 *
 *   mpirun -np 2 --mca btl tcp,self mpi_allreduce [-n STEPS] [-m MB] [-c MS]
 *          [-x MB] [-k]
 *
 * -n steps (20), -m MB of gradients (4, as doubles), -c MS of compute per
 * step (20), -x MB of point-to-point payload each way (8), -k to name each
 * step "step" with ddlprof's marker API (a no-op without ddlprof).
 * Rank 0 prints the mean step time; every rank prints one line
 *   mpi_allreduce: rank R of N: p2p_sent B p2p_received B allreduce_bytes B
 * where allreduce_bytes is the buffer size times the steps (what a rank
 * hands to MPI_Allreduce, not what goes on the wire).
 */
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ddlprof/ddlprof.h"

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Busy "compute" for MS milliseconds, touching the gradients as a model would. */
static void compute(double *g, size_t n, double ms, int step)
{
	double end = now_s() + ms / 1e3;
	size_t i = 0;
	while (now_s() < end)
		for (int k = 0; k < 4096; k++, i++)
			g[i % n] = g[i % n] * 0.999 + (step + 1) * 1e-3;
}

/* The usage text on F; returns STATUS. */
static int usage(FILE *f, int status)
{
	fputs("usage: mpirun -np N mpi_allreduce [-n STEPS] [-m MB] [-c MS] [-x MB] [-k]\n"
	      "A data-parallel loop on MPI: compute, then MPI_Allreduce of the gradients;\n"
	      "first, ranks in pairs exchange a known payload with MPI_Send and MPI_Recv.\n"
	      "  -n STEPS  steps (20)\n"
	      "  -m MB     gradient buffer, MiB of doubles (4)\n"
	      "  -c MS     compute per step, ms (20)\n"
	      "  -x MB     point-to-point payload each way, MiB (8)\n"
	      "  -k        name each step \"step\" with ddlprof's marker API\n"
	      "  -h, --help  this text\n",
	      f);
	return status;
}

int main(int argc, char **argv)
{
	int steps = 20, marks = 0, opt;
	double mb = 4, ms = 20, xmb = 8;
	static const struct option longs[] = {{"help", no_argument, NULL, 'h'}, {0}};
	while ((opt = getopt_long(argc, argv, "n:m:c:x:kh", longs, NULL)) != -1) {
		switch (opt) {
		case 'n': steps = atoi(optarg); break;
		case 'm': mb = atof(optarg); break;
		case 'c': ms = atof(optarg); break;
		case 'x': xmb = atof(optarg); break;
		case 'k': marks = 1; break;
		case 'h': return usage(stdout, 0);
		default: return usage(stderr, 2);
		}
	}
	if (steps < 1 || mb <= 0 || mb > 1024 || ms < 0 || xmb < 0 || xmb > 1024 || optind != argc)
		return usage(stderr, 2);

	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);

	/* The known payload: ranks in pairs, each way, in 1 MiB messages. */
	size_t xbytes = (size_t)(xmb * 1048576), chunk = 1048576;
	char *xbuf = calloc(1, chunk), *ybuf = malloc(chunk);
	unsigned long long p2p_sent = 0, p2p_recv = 0;
	int peer = rank ^ 1;
	if (!xbuf || !ybuf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	if (peer < size) {
		for (size_t off = 0; off < xbytes; off += chunk) {
			int n = (int)(xbytes - off < chunk ? xbytes - off : chunk);
			MPI_Status st;
			int got = 0;
			if (rank & 1) {
				MPI_Recv(ybuf, (int)chunk, MPI_CHAR, peer, 7, MPI_COMM_WORLD, &st);
				MPI_Send(xbuf, n, MPI_CHAR, peer, 7, MPI_COMM_WORLD);
			} else {
				MPI_Send(xbuf, n, MPI_CHAR, peer, 7, MPI_COMM_WORLD);
				MPI_Recv(ybuf, (int)chunk, MPI_CHAR, peer, 7, MPI_COMM_WORLD, &st);
			}
			MPI_Get_count(&st, MPI_CHAR, &got);
			p2p_sent += (unsigned long long)n;
			p2p_recv += (unsigned long long)got;
		}
	}

	size_t count = (size_t)(mb * 1048576 / sizeof(double));
	double *grad = malloc(count * sizeof *grad), *sum = malloc(count * sizeof *sum);
	if (!grad || !sum)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (size_t i = 0; i < count; i++)
		grad[i] = (double)(rank + 1);
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = now_s();
	for (int s = 0; s < steps; s++) {
		if (marks && ddlprof_range_push)
			ddlprof_range_push("step");
		compute(grad, count, ms, s);
		MPI_Allreduce(grad, sum, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		for (size_t i = 0; i < count; i += 4096)
			grad[i] = sum[i] / size;
		if (marks && ddlprof_range_pop)
			ddlprof_range_pop();
	}
	double dt = (now_s() - t0) / steps;

	printf("mpi_allreduce: rank %d of %d: p2p_sent %llu p2p_received %llu allreduce_bytes %llu\n",
	       rank, size, p2p_sent, p2p_recv,
	       (unsigned long long)count * sizeof(double) * (unsigned long long)steps);
	if (rank == 0)
		printf("mpi_allreduce: %d ranks, %d steps, %.4f s/step\n", size, steps, dt);
	fflush(stdout);
	free(xbuf);
	free(ybuf);
	free(grad);
	free(sum);
	MPI_Finalize();
	return 0;
}
