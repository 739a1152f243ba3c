/*
 * mpicheck: what MPI's calls give a program, printed, so that a run under
 * ddlprof can be compared with one without it (tests/t_mpi.c). Every line
 * is deterministic: return codes, error classes, statuses, counts, errno
 * after each call (set to a mark before it), data checksums. Run it with
 * two ranks or more.
 *
 *   mpicheck calls         point-to-point with and without statuses (any
 *                          source, MPI_PROC_NULL, a short message into a
 *                          large buffer), nonblocking calls and every wait,
 *                          collectives in place, communicators made and
 *                          freed, and failing calls (MPI_ERRORS_RETURN)
 *   mpicheck preinit       a collective before MPI_Init (MPI aborts)
 *   mpicheck postfinalize  a collective after MPI_Finalize (MPI aborts)
 *
 * Exit status 0, or 3 when a result is not what MPI promises (checked
 * here too, so that a wrapper that got one wrong cannot hide behind the
 * comparison).
 */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, bad;

#define MARK 4242

/*
 * One line: what the call returned, its error class, and errno after it.
 * errno as MPI leaves it is its last failed system call's, which depends
 * on timing: whether its progress engine's read of a nonblocking socket
 * found nothing (EAGAIN) in this call; so EAGAIN reads as the mark left
 * alone, and after MPI_Init and MPI_Finalize, which make hundreds of
 * calls (file probes, sockets: ENOENT in one run, EAGAIN in the next),
 * errno is not said. A wrapper that set errno to anything else after any
 * other call would still show.
 */
static void said_errno(const char *what, int rc, int exact)
{
	int e = errno, cls = -1;
	if (rc != MPI_SUCCESS)
		MPI_Error_class(rc, &cls);
	if (e == EAGAIN || e == EWOULDBLOCK)
		e = MARK;
	if (exact)
		printf("rank %d: %s rc=%s class=%d errno=%d\n", rank, what, rc == MPI_SUCCESS ? "ok" : "error", cls, e);
	else
		printf("rank %d: %s rc=%s class=%d\n", rank, what, rc == MPI_SUCCESS ? "ok" : "error", cls);
	errno = MARK;
}

static void said(const char *what, int rc)
{
	said_errno(what, rc, 1);
}

static void expect(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "mpicheck: rank %d: %s\n", rank, what);
		bad = 1;
	}
}

static unsigned sum(const void *p, size_t n)
{
	const unsigned char *b = p;
	unsigned s = 0;
	for (size_t i = 0; i < n; i++)
		s = s * 31 + b[i];
	return s;
}

static void status_line(const char *what, const MPI_Status *st, MPI_Datatype dt)
{
	int n = -1;
	MPI_Get_count(st, dt, &n);
	printf("rank %d: %s source=%d tag=%d count=%d\n", rank, what, st->MPI_SOURCE, st->MPI_TAG, n);
}

static void p2p(void)
{
	int peer = rank ^ 1;
	if (peer >= size)
		return;
	char out[1000], in[4096];
	for (size_t i = 0; i < sizeof out; i++)
		out[i] = (char)(rank * 7 + i);
	MPI_Status st;
	errno = MARK;
	/* a status, then MPI_STATUS_IGNORE; a short message into a large buffer */
	for (int k = 0; k < 2; k++) {
		memset(in, 0, sizeof in);
		if (rank & 1) {
			said("recv", MPI_Recv(in, sizeof in, MPI_CHAR, peer, 5, MPI_COMM_WORLD, k ? MPI_STATUS_IGNORE : &st));
			said("send", MPI_Send(out, sizeof out, MPI_CHAR, peer, 6, MPI_COMM_WORLD));
		} else {
			said("send", MPI_Send(out, sizeof out, MPI_CHAR, peer, 5, MPI_COMM_WORLD));
			said("recv", MPI_Recv(in, sizeof in, MPI_CHAR, peer, 6, MPI_COMM_WORLD, k ? MPI_STATUS_IGNORE : &st));
		}
		if (!k)
			status_line("recv status", &st, MPI_CHAR);
		printf("rank %d: received %u\n", rank, sum(in, sizeof in));
	}
	/* from any source, with a status; then from MPI_PROC_NULL */
	if (rank & 1) {
		said("send", MPI_Send(out, 100, MPI_CHAR, peer, 7, MPI_COMM_WORLD));
	} else {
		said("recv any", MPI_Recv(in, sizeof in, MPI_CHAR, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
		status_line("recv any status", &st, MPI_CHAR);
		expect(st.MPI_SOURCE == peer, "any source: not the peer");
	}
	said("recv proc_null", MPI_Recv(in, 10, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st));
	status_line("recv proc_null status", &st, MPI_INT);
	expect(st.MPI_SOURCE == MPI_PROC_NULL, "MPI_PROC_NULL: source");
	said("send proc_null", MPI_Send(out, 10, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
}

static void nonblocking(void)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	double out[256], in[4][256];
	for (int i = 0; i < 256; i++)
		out[i] = rank + i / 256.0;
	MPI_Request r[4];
	MPI_Status st[4];
	int flag = 0, idx = -1, n = -1, idxs[4];
	errno = MARK;
	/* Wait with a status */
	said("irecv", MPI_Irecv(in[0], 256, MPI_DOUBLE, prev, 1, MPI_COMM_WORLD, &r[0]));
	said("isend", MPI_Isend(out, 256, MPI_DOUBLE, next, 1, MPI_COMM_WORLD, &r[1]));
	said("wait", MPI_Wait(&r[0], &st[0]));
	status_line("wait status", &st[0], MPI_DOUBLE);
	said("wait", MPI_Wait(&r[1], MPI_STATUS_IGNORE));
	expect(r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL, "waited requests not null");
	said("wait null", MPI_Wait(&r[0], MPI_STATUS_IGNORE));
	/* Waitany, then Waitsome */
	said("irecv", MPI_Irecv(in[1], 256, MPI_DOUBLE, prev, 2, MPI_COMM_WORLD, &r[0]));
	said("isend", MPI_Isend(out, 128, MPI_DOUBLE, next, 2, MPI_COMM_WORLD, &r[1]));
	for (int k = 0; k < 2; k++) {
		said("waitany", MPI_Waitany(2, r, &idx, &st[0]));
		expect(idx == 0 || idx == 1, "waitany index");
	}
	said("waitany none", MPI_Waitany(2, r, &idx, &st[0]));
	printf("rank %d: waitany none index=%s\n", rank, idx == MPI_UNDEFINED ? "undefined" : "set");
	said("irecv", MPI_Irecv(in[2], 256, MPI_DOUBLE, prev, 3, MPI_COMM_WORLD, &r[0]));
	said("isend", MPI_Isend(out, 64, MPI_DOUBLE, next, 3, MPI_COMM_WORLD, &r[1]));
	/* one call or two, as the requests complete: its outcome said once */
	int ws = MPI_SUCCESS;
	for (int done = 0; done < 2 && ws == MPI_SUCCESS; done += n > 0 ? n : 0) {
		ws = MPI_Waitsome(2, r, &n, idxs, st);
		expect(n >= 1 && n <= 2, "waitsome count");
	}
	said("waitsome", ws);
	/* Test until done, then Testall */
	said("irecv", MPI_Irecv(in[3], 256, MPI_DOUBLE, prev, 4, MPI_COMM_WORLD, &r[0]));
	said("isend", MPI_Isend(out, 32, MPI_DOUBLE, next, 4, MPI_COMM_WORLD, &r[1]));
	long tries = 0;
	for (flag = 0; !flag; tries++)
		MPI_Test(&r[0], &flag, &st[0]);
	errno = MARK;
	status_line("test status", &st[0], MPI_DOUBLE);
	for (flag = 0; !flag;)
		MPI_Testall(1, &r[1], &flag, MPI_STATUSES_IGNORE);
	errno = MARK;
	said("testall done", MPI_SUCCESS);
	printf("rank %d: nonblocking received %u %u %u %u\n", rank, sum(in[0], sizeof in[0]),
	       sum(in[1], 128 * sizeof(double)), sum(in[2], 64 * sizeof(double)), sum(in[3], 32 * sizeof(double)));
}

static void collectives(void)
{
	double v[64], w[64 * 16];
	int counts[16], displs[16];
	if (size > 16)
		return;
	errno = MARK;
	for (int i = 0; i < 64; i++)
		v[i] = rank + i;
	said("allreduce in place", MPI_Allreduce(MPI_IN_PLACE, v, 64, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
	printf("rank %d: allreduce %u\n", rank, sum(v, sizeof v));
	for (int i = 0; i < 4 * size; i++)
		w[i] = i / 4 == rank ? rank * 10 + i : -1;
	said("allgather in place", MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, w, 4, MPI_DOUBLE, MPI_COMM_WORLD));
	printf("rank %d: allgather %u\n", rank, sum(w, 4 * size * sizeof *w));
	for (int i = 0; i < size; i++) {
		counts[i] = i + 1;
		displs[i] = i * 2;
	}
	said("allgatherv", MPI_Allgatherv(v, rank + 1, MPI_DOUBLE, w, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD));
	printf("rank %d: allgatherv %u\n", rank, sum(w, 2 * size * sizeof *w));
	for (int i = 0; i < 2 * size; i++)
		w[i] = rank * 100 + i;
	said("alltoall in place", MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, w, 2, MPI_DOUBLE, MPI_COMM_WORLD));
	printf("rank %d: alltoall %u\n", rank, sum(w, 2 * size * sizeof *w));
	for (int i = 0; i < size; i++) {
		counts[i] = 1;
		displs[i] = i;
	}
	said("alltoallv in place", MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, w, counts, displs,
	                                         MPI_DOUBLE, MPI_COMM_WORLD));
	printf("rank %d: alltoallv %u\n", rank, sum(w, size * sizeof *w));
	said("reduce in place", MPI_Reduce(rank ? v : MPI_IN_PLACE, v, 64, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
	said("bcast", MPI_Bcast(v, 64, MPI_DOUBLE, 0, MPI_COMM_WORLD));
	printf("rank %d: bcast %u\n", rank, sum(v, sizeof v));
	said("reduce_scatter_block in place",
	     MPI_Reduce_scatter_block(MPI_IN_PLACE, w, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
	printf("rank %d: reduce_scatter_block %u\n", rank, sum(w, 2 * sizeof *w));
	MPI_Request r;
	said("iallreduce", MPI_Iallreduce(MPI_IN_PLACE, v, 64, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD, &r));
	said("wait", MPI_Wait(&r, MPI_STATUS_IGNORE));
	printf("rank %d: iallreduce %u\n", rank, sum(v, sizeof v));
	said("barrier", MPI_Barrier(MPI_COMM_WORLD));
}

static void communicators(void)
{
	MPI_Comm dup, half, none, shared, made;
	MPI_Group g, first;
	int n = -1, r = -1;
	errno = MARK;
	said("comm_dup", MPI_Comm_dup(MPI_COMM_WORLD, &dup));
	said("comm_split", MPI_Comm_split(dup, rank % 2, -rank, &half));
	MPI_Comm_size(half, &n);
	MPI_Comm_rank(half, &r);
	printf("rank %d: half size=%d rank=%d\n", rank, n, r);
	said("allreduce half", MPI_Allreduce(MPI_IN_PLACE, &n, 1, MPI_INT, MPI_SUM, half));
	said("comm_split undefined", MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 1 : MPI_UNDEFINED, 0, &none));
	printf("rank %d: undefined is null=%d\n", rank, none == MPI_COMM_NULL);
	said("comm_split_type", MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared));
	MPI_Comm_group(MPI_COMM_WORLD, &g);
	int ranks[1] = {0};
	MPI_Group_incl(g, 1, ranks, &first);
	said("comm_create", MPI_Comm_create(MPI_COMM_WORLD, first, &made));
	printf("rank %d: created is null=%d\n", rank, made == MPI_COMM_NULL);
	if (made != MPI_COMM_NULL)
		said("barrier made", MPI_Barrier(made));
	MPI_Group_free(&first);
	MPI_Group_free(&g);
	if (none != MPI_COMM_NULL)
		said("comm_free", MPI_Comm_free(&none));
	if (made != MPI_COMM_NULL)
		said("comm_free", MPI_Comm_free(&made));
	said("comm_free", MPI_Comm_free(&shared));
	said("comm_free", MPI_Comm_free(&half));
	said("comm_free", MPI_Comm_free(&dup));
	expect(dup == MPI_COMM_NULL, "freed communicator not null");
}

static void failures(void)
{
	char b[16] = "";
	errno = MARK;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	said("send to no rank", MPI_Send(b, 1, MPI_CHAR, size + 5, 0, MPI_COMM_WORLD));
	said("allreduce of -1", MPI_Allreduce(MPI_IN_PLACE, b, -1, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD));
	said("bcast from no root", MPI_Bcast(b, 1, MPI_CHAR, size + 1, MPI_COMM_WORLD));
	said("recv of a bad type", MPI_Recv(b, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	said("barrier on null", MPI_Barrier(MPI_COMM_NULL));
	MPI_Request r = MPI_REQUEST_NULL;
	said("isend of -1", MPI_Isend(b, -1, MPI_CHAR, 0, 0, MPI_COMM_WORLD, &r));
	/* and a good one after them, in sequence with the other ranks' */
	said("barrier", MPI_Barrier(MPI_COMM_WORLD));
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
	/* a line a write: mpirun forwards each rank's writes as they come, and
	 * a block cut mid-line would be spliced with another rank's */
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *mode = argc > 1 ? argv[1] : "calls";
	if (!strcmp(mode, "preinit")) {
		MPI_Barrier(MPI_COMM_WORLD); /* MPI aborts the process */
		return 3;
	}
	int provided = -1;
	errno = MARK;
	int rc = MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	said_errno("init_thread", rc, 0);
	printf("rank %d: provided %s\n", rank, provided >= MPI_THREAD_FUNNELED ? "funneled+" : "less");
	if (!strcmp(mode, "postfinalize")) {
		MPI_Finalize();
		int x = 1;
		MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* MPI aborts */
		return 3;
	}
	if (strcmp(mode, "calls")) {
		fprintf(stderr, "usage: mpicheck calls|preinit|postfinalize\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	p2p();
	nonblocking();
	collectives();
	communicators();
	failures();
	fflush(stdout);
	said_errno("finalize", MPI_Finalize(), 0);
	return bad ? 3 : 0;
}
