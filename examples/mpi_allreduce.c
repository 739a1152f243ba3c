/*
 * mpi_allreduce: a data-parallel "training" loop on MPI, to profile an MPI
 * job with ddlprof. Each step computes for a while (a busy loop standing in
 * for forward and backward passes), then sums its gradient buffer across
 * the ranks with MPI_Allreduce. Before the loop, ranks in pairs (0 and 1,
 * 2 and 3, ...) exchange a fixed payload with MPI_Send and MPI_Recv, so the
 * bytes each rank handed to MPI are known exactly; each rank prints them.
 *
 *   mpirun -np 2 --mca btl tcp,self mpi_allreduce [-n STEPS] [-m MB] [-c MS]
 *          [-x MB] [-k] [-a]
 *
 * -n steps (20), -m MB of gradients (4, as doubles), -c MS of compute per
 * step (20), -x MB of point-to-point payload each way (8), -k to name each
 * step "step" with ddlprof's marker API (a no-op without ddlprof), -a to
 * make every step the other calls of a training job too, each on a
 * sixteenth of the gradients: a broadcast (from each rank in turn), a
 * reduce, an all-gather and an all-gather-v, a reduce-scatter and a
 * reduce-scatter-block, an all-to-all and an all-to-all-v, a nonblocking
 * all-reduce and its wait, a nonblocking exchange with the ring's
 * neighbours and its waitall, an all-reduce on half the ranks (a
 * communicator split once, before the loop) and a barrier.
 * Rank 0 prints the mean step time; every rank prints the lines
 *   mpi_allreduce: rank R of N: p2p_sent B p2p_received B allreduce_bytes B
 *   mpi_allreduce: rank R ops OP CALLS BYTES ...
 * where allreduce_bytes is the buffer size times the steps (what a rank
 * hands to MPI_Allreduce, not what goes on the wire), and the second line
 * gives, for each operation, the calls the rank made and the bytes it put
 * in: its send buffer (count x type size); a broadcast's buffer on every
 * rank; a receive, what it received; the nonblocking all-reduce counted
 * with the all-reduces, the nonblocking sends and receives with the sends
 * and receives. Those are ddlprof's own figures (ddlprof-trace(5)).
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
	fputs("usage: mpirun -np N mpi_allreduce [-n STEPS] [-m MB] [-c MS] [-x MB] [-k] [-a]\n"
	      "                     [-s RANK] [-H RANK [-N STEP]]\n"
	      "A data-parallel loop on MPI: compute, then MPI_Allreduce of the gradients;\n"
	      "first, ranks in pairs exchange a known payload with MPI_Send and MPI_Recv.\n"
	      "  -n STEPS  steps (20)\n"
	      "  -m MB     gradient buffer, MiB of doubles (4)\n"
	      "  -c MS     compute per step, ms (20)\n"
	      "  -x MB     point-to-point payload each way, MiB (8)\n"
	      "  -k        name each step \"step\" with ddlprof's marker API\n"
	      "  -a        every step, the other collectives, nonblocking calls and a\n"
	      "            sub-communicator's all-reduce too\n"
	      "  -s RANK   that rank is a straggler: twice the compute\n"
	      "  -H RANK   that rank stops for good before step -N's all-reduce (a hang,\n"
	      "            for tests and demos; the others wait in it)\n"
	      "  -N STEP   the step -H stops at, from 1 (1)\n"
	      "  -h, --help  this text\n",
	      f);
	return status;
}

/* What a rank handed to MPI, by operation, as ddlprof counts it. */
enum { OP_ALLREDUCE, OP_BROADCAST, OP_REDUCE, OP_ALLGATHER, OP_REDUCESCATTER, OP_ALLTOALL, OP_SEND,
       OP_RECV, OP_BARRIER, NOPS };
static const char *const op_names[NOPS] = {"allreduce", "broadcast", "reduce", "allgather",
                                           "reducescatter", "alltoall", "send", "recv", "barrier"};
static unsigned long long op_calls[NOPS], op_bytes[NOPS];

static void tally(int op, unsigned long long bytes)
{
	op_calls[op]++;
	op_bytes[op] += bytes;
}

/* One step's other calls (-a), on N doubles of BUF (room for N * SIZE at
 * both, and at TMP) and the communicator HALF. Aborts on an error. */
static void others(double *buf, double *tmp, size_t n, int step, int rank, int size, MPI_Comm half)
{
	int c = (int)n, *counts = malloc(4 * (size_t)size * sizeof *counts), *displs = counts + size;
	int *vc = displs + size, *vd = vc + size; /* all-to-all-v: rank r and i swap (r + i + 1) parts */
	MPI_Request req[2];
	if (!counts)
		MPI_Abort(MPI_COMM_WORLD, 1);
	size_t b = n * sizeof(double);
	int root = step % size, ok = MPI_SUCCESS;
	ok |= MPI_Bcast(buf, c, MPI_DOUBLE, root, MPI_COMM_WORLD);
	tally(OP_BROADCAST, b);
	ok |= MPI_Reduce(buf, tmp, c, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
	tally(OP_REDUCE, b);
	ok |= MPI_Allgather(buf, c, MPI_DOUBLE, tmp, c, MPI_DOUBLE, MPI_COMM_WORLD);
	tally(OP_ALLGATHER, b);
	for (int i = 0; i < size; i++) { /* rank i's block: i + 1 sixteenths of N */
		counts[i] = (int)(n * (size_t)(i + 1) / 16);
		displs[i] = i ? displs[i - 1] + counts[i - 1] : 0;
	}
	ok |= MPI_Allgatherv(buf, counts[rank], MPI_DOUBLE, tmp, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
	tally(OP_ALLGATHER, (unsigned long long)counts[rank] * sizeof(double));
	ok |= MPI_Reduce_scatter_block(tmp, buf, c / size, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	tally(OP_REDUCESCATTER, (unsigned long long)(c / size) * size * sizeof(double));
	ok |= MPI_Reduce_scatter(tmp, buf, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	tally(OP_REDUCESCATTER, (unsigned long long)(displs[size - 1] + counts[size - 1]) * sizeof(double));
	ok |= MPI_Alltoall(tmp, c / size, MPI_DOUBLE, buf, c / size, MPI_DOUBLE, MPI_COMM_WORLD);
	tally(OP_ALLTOALL, (unsigned long long)(c / size) * size * sizeof(double));
	for (int i = 0; i < size; i++) {
		vc[i] = (int)(n * (size_t)(rank + i + 1) / (32 * (size_t)size));
		vd[i] = i ? vd[i - 1] + vc[i - 1] : 0;
	}
	ok |= MPI_Alltoallv(tmp, vc, vd, MPI_DOUBLE, buf, vc, vd, MPI_DOUBLE, MPI_COMM_WORLD);
	tally(OP_ALLTOALL, (unsigned long long)(vd[size - 1] + vc[size - 1]) * sizeof(double));
	ok |= MPI_Iallreduce(MPI_IN_PLACE, buf, c, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &req[0]);
	ok |= MPI_Wait(&req[0], MPI_STATUS_IGNORE);
	tally(OP_ALLREDUCE, b);
	/* the ring: a sixteenth of N to the next rank, from the one before */
	ok |= MPI_Irecv(tmp, c / 16, MPI_DOUBLE, (rank + size - 1) % size, 9, MPI_COMM_WORLD, &req[0]);
	ok |= MPI_Isend(buf, c / 16, MPI_DOUBLE, (rank + 1) % size, 9, MPI_COMM_WORLD, &req[1]);
	ok |= MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
	tally(OP_RECV, (unsigned long long)(c / 16) * sizeof(double));
	tally(OP_SEND, (unsigned long long)(c / 16) * sizeof(double));
	ok |= MPI_Allreduce(MPI_IN_PLACE, buf, c / 16, MPI_DOUBLE, MPI_SUM, half);
	tally(OP_ALLREDUCE, (unsigned long long)(c / 16) * sizeof(double));
	ok |= MPI_Barrier(MPI_COMM_WORLD);
	tally(OP_BARRIER, 0);
	free(counts);
	if (ok != MPI_SUCCESS)
		MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
	int steps = 20, marks = 0, all = 0, slow = -1, hang = -1, hang_at = 1, opt;
	double mb = 4, ms = 20, xmb = 8;
	static const struct option longs[] = {{"help", no_argument, NULL, 'h'}, {0}};
	while ((opt = getopt_long(argc, argv, "n:m:c:x:kas:H:N:h", longs, NULL)) != -1) {
		switch (opt) {
		case 'n': steps = atoi(optarg); break;
		case 'm': mb = atof(optarg); break;
		case 'c': ms = atof(optarg); break;
		case 'x': xmb = atof(optarg); break;
		case 'k': marks = 1; break;
		case 'a': all = 1; break;
		case 's': slow = atoi(optarg); break;
		case 'H': hang = atoi(optarg); break;
		case 'N': hang_at = atoi(optarg); break;
		case 'h': return usage(stdout, 0);
		default: return usage(stderr, 2);
		}
	}
	if (steps < 1 || mb <= 0 || mb > 1024 || ms < 0 || xmb < 0 || xmb > 1024 || hang_at < 1 ||
	    optind != argc)
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
			tally(OP_SEND, (unsigned long long)n);
			tally(OP_RECV, (unsigned long long)got);
		}
	}

	size_t count = (size_t)(mb * 1048576 / sizeof(double));
	double *grad = malloc(count * sizeof *grad), *sum = malloc(count * sizeof *sum);
	if (!grad || !sum)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (size_t i = 0; i < count; i++)
		grad[i] = (double)(rank + 1);
	/* -a: a sixteenth of the gradients for the other calls, room for every
	 * rank's share of it; half the ranks (the even, the odd) for a
	 * sub-communicator */
	size_t xn = count / 16 > (size_t)size ? count / 16 : (size_t)size;
	double *xbuf2 = all ? calloc(xn * (size_t)size, sizeof *xbuf2) : NULL;
	double *xtmp = all ? calloc(xn * (size_t)size, sizeof *xtmp) : NULL;
	MPI_Comm half = MPI_COMM_NULL;
	if (all && (!xbuf2 || !xtmp || MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half) != MPI_SUCCESS))
		MPI_Abort(MPI_COMM_WORLD, 1);
	MPI_Barrier(MPI_COMM_WORLD);
	tally(OP_BARRIER, 0);
	double t0 = now_s();
	for (int s = 0; s < steps; s++) {
		if (marks && ddlprof_range_push)
			ddlprof_range_push("step");
		compute(grad, count, rank == slow ? 2 * ms : ms, s);
		if (rank == hang && s + 1 == hang_at) {
			fprintf(stderr, "mpi_allreduce: rank %d: stopping before step %d's all-reduce for good (-H)\n",
			        rank, s + 1);
			for (;;)
				pause();
		}
		MPI_Allreduce(grad, sum, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		tally(OP_ALLREDUCE, (unsigned long long)count * sizeof(double));
		for (size_t i = 0; i < count; i += 4096)
			grad[i] = sum[i] / size;
		if (all)
			others(xbuf2, xtmp, xn, s, rank, size, half);
		if (marks && ddlprof_range_pop)
			ddlprof_range_pop();
	}
	double dt = (now_s() - t0) / steps;
	if (half != MPI_COMM_NULL)
		MPI_Comm_free(&half);

	printf("mpi_allreduce: rank %d of %d: p2p_sent %llu p2p_received %llu allreduce_bytes %llu\n",
	       rank, size, p2p_sent, p2p_recv,
	       (unsigned long long)count * sizeof(double) * (unsigned long long)steps);
	printf("mpi_allreduce: rank %d ops", rank);
	for (int op = 0; op < NOPS; op++)
		printf(" %s %llu %llu", op_names[op], op_calls[op], op_bytes[op]);
	printf("\n");
	if (rank == 0)
		printf("mpi_allreduce: %d ranks, %d steps, %.4f s/step\n", size, steps, dt);
	fflush(stdout);
	free(xbuf2);
	free(xtmp);
	free(xbuf);
	free(ybuf);
	free(grad);
	free(sum);
	MPI_Finalize();
	return 0;
}
