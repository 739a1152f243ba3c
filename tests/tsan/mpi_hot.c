/*
 * The MPI wrappers (libddlprof/mpi.c) under ThreadSanitizer, with many
 * threads, as hot.c does the library's hot path: the library's sources
 * compiled into this program, its real functions pointed at fakes with
 * ddl_real_set (no MPI is needed: the fakes say they are MPICH, whose
 * handles are ints), the workload in a profiled child, the trace read back.
 *
 *   mpi_hot      runs `mpi_hot run` profiled (a 64-event ring flushed every
 *                millisecond) and checks its trace
 *   mpi_hot run  MPI_Init_thread, then ROUNDS rounds of NTHREADS threads
 *                that each: all-reduce on MPI_COMM_WORLD (every thread the
 *                same communicator, its sequence counted by all at once);
 *                on 16 communicators made by no wrapped call, met first by
 *                several threads at the same moment (recorded once each,
 *                under the table's lock, while others look up without it);
 *                send and receive to and from every rank, with
 *                MPI_STATUS_IGNORE (the point-to-point counters mapped by
 *                whichever thread comes first); nonblocking pairs and their
 *                waitall (each thread's own requests); and splits and frees
 *                of communicators of its own, whose handles come back for
 *                the next one (a freed slot taken again while the other
 *                threads probe past it); then MPI_Finalize
 *
 * Checks: a clean trace; no number given twice in a sequence (the world's
 * collectives, each peer's sends) among the calls recorded; each of the 16
 * shared communicators recorded once; every wait naming its start. About
 * 2 s. Prints "N passed, N failed"; exits 1 on failure.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "trace_read.h"

#define ROUNDS 3
#define NTHREADS 16
#define ITERS 600
#define SHARED 16
#define TIMEOUT_S 120

/* MPICH's constants, as the fakes use them */
#define WORLD 0x44000000u
#define COMM_NULL 0x04000000u
#define REQUEST_NULL 0x2c000000u
#define DOUBLE 0x4c00080bu
#define SUM 0x58000003u
#define SHARED0 0x84000100u
#define OWN0 0x84001000u
#define STATUS_IGNORE ((void *)1)

void *ddl_real_set(const char *name, void *fn);

/* the wrappers, compiled in (libddlprof/mpi.h's types, written out) */
int MPI_Init_thread(int *, char ***, int, int *);
int MPI_Finalize(void);
int MPI_Allreduce(const void *, void *, int, uintptr_t, uintptr_t, uintptr_t);
int MPI_Send(const void *, int, uintptr_t, int, int, uintptr_t);
int MPI_Recv(void *, int, uintptr_t, int, int, uintptr_t, void *);
int MPI_Isend(const void *, int, uintptr_t, int, int, uintptr_t, void *);
int MPI_Irecv(void *, int, uintptr_t, int, int, uintptr_t, void *);
int MPI_Waitall(int, void *, void *);
int MPI_Comm_split(uintptr_t, int, int, void *);
int MPI_Comm_free(void *);

/* ---- the fakes ---- */

static _Atomic unsigned next_req = 1;

static int f_init_thread(int *c, char ***v, int req, int *prov)
{
	(void)c, (void)v;
	*prov = req;
	return 0;
}
static int f_finalize(void) { return 0; }
static int f_allreduce(const void *s, void *r, int n, uintptr_t dt, uintptr_t op, uintptr_t c)
{
	(void)s, (void)r, (void)n, (void)dt, (void)op, (void)c;
	return 0;
}
static int f_send(const void *b, int n, uintptr_t dt, int peer, int tag, uintptr_t c)
{
	(void)b, (void)n, (void)dt, (void)peer, (void)tag, (void)c;
	return 0;
}
/* MPICH's status: count_lo, count_hi_and_cancelled, MPI_SOURCE, MPI_TAG, MPI_ERROR */
static int f_recv(void *b, int n, uintptr_t dt, int src, int tag, uintptr_t c, void *st)
{
	(void)b, (void)dt, (void)c;
	int *s = st;
	s[0] = n;
	s[1] = 0;
	s[2] = src;
	s[3] = tag;
	s[4] = 0;
	return 0;
}
static int f_istart(const void *b, int n, uintptr_t dt, int peer, int tag, uintptr_t c, void *req)
{
	(void)b, (void)n, (void)dt, (void)peer, (void)tag, (void)c;
	*(int *)req = (int)(0x2c100000u + atomic_fetch_add(&next_req, 1) % 0x10000);
	return 0;
}
static int f_waitall(int n, void *reqs, void *st)
{
	(void)st;
	for (int i = 0; i < n; i++)
		((int *)reqs)[i] = (int)REQUEST_NULL;
	return 0;
}
static __thread int own_next;
static __thread long own_id;
static int f_split(uintptr_t c, int color, int key, void *nc)
{
	(void)c, (void)color, (void)key;
	*(int *)nc = (int)(OWN0 + (unsigned)own_id * 4 + (unsigned)(own_next++ % 4)); /* back again after a free */
	return 0;
}
static int f_free(void *c)
{
	*(int *)c = (int)COMM_NULL;
	return 0;
}
static int f_initialized(int *f) { *f = 1; return 0; }
static int f_finalized(int *f) { *f = 0; return 0; }
static int f_version(char *s, int *n)
{
	*n = snprintf(s, 64, "MPICH Version: 4.0 (the tsan fakes)");
	return 0;
}
static int f_type_size(uintptr_t dt, int *s)
{
	(void)dt;
	*s = 8;
	return 0;
}
static int f_comm_size(uintptr_t c, int *s)
{
	*s = (uint32_t)c == WORLD ? 8 : 4;
	return 0;
}
static int f_comm_rank(uintptr_t c, int *r)
{
	(void)c;
	*r = 1;
	return 0;
}
static int f_comm_group(uintptr_t c, void *g)
{
	*(int *)g = (int)(0x88000000u | ((uint32_t)c & 0xffffu));
	return 0;
}
static int f_translate(uintptr_t g1, int n, const int *in, uintptr_t g2, int *out)
{
	(void)g2;
	for (int i = 0; i < n; i++)
		out[i] = (in[i] * 2 + (int)(g1 & 1)) % 8;
	return 0;
}
static int f_group_free(void *g)
{
	*(int *)g = 0x08000000;
	return 0;
}
static int f_get_count(const void *st, uintptr_t dt, int *n)
{
	(void)dt;
	*n = ((const int *)st)[0];
	return 0;
}

static pthread_barrier_t start;

static void *worker(void *arg)
{
	long id = (long)arg;
	own_id = id;
	double buf[64] = {0};
	pthread_barrier_wait(&start);
	int bad = 0;
	for (int i = 0; i < ITERS; i++) {
		bad |= MPI_Allreduce(buf, buf, 64, DOUBLE, SUM, WORLD);
		if (i % 5 == 0) /* the shared ones, met by several threads at once */
			bad |= MPI_Allreduce(buf, buf, 8, DOUBLE, SUM, SHARED0 + (unsigned)((i / 5 + id) % SHARED));
		if (i % 7 == 0) {
			int peer = (int)((id + i) % 8);
			bad |= MPI_Send(buf, 4, DOUBLE, peer, 1, WORLD);
			bad |= MPI_Recv(buf, 4, DOUBLE, peer, 1, WORLD, STATUS_IGNORE);
		}
		if (i % 11 == 0) {
			int req[2];
			bad |= MPI_Irecv(buf, 2, DOUBLE, 3, 2, WORLD, &req[0]);
			bad |= MPI_Isend(buf + 2, 2, DOUBLE, 3, 2, WORLD, &req[1]);
			bad |= MPI_Waitall(2, req, NULL);
		}
		if (i % 50 == 0) {
			int sub;
			bad |= MPI_Comm_split(WORLD, (int)(id % 2), 0, &sub);
			bad |= MPI_Allreduce(buf, buf, 1, DOUBLE, SUM, (uint32_t)sub);
			bad |= MPI_Comm_free(&sub);
		}
	}
	return bad ? (void *)1 : NULL;
}

static int run(void)
{
	static const struct {
		const char *name;
		void *fn;
	} fakes[] = {
		{"MPI_Init_thread", (void *)f_init_thread}, {"MPI_Finalize", (void *)f_finalize},
		{"MPI_Allreduce", (void *)f_allreduce}, {"MPI_Send", (void *)f_send},
		{"MPI_Recv", (void *)f_recv}, {"MPI_Isend", (void *)f_istart},
		{"MPI_Irecv", (void *)f_istart}, {"MPI_Waitall", (void *)f_waitall},
		{"MPI_Comm_split", (void *)f_split}, {"MPI_Comm_free", (void *)f_free},
		{"PMPI_Initialized", (void *)f_initialized}, {"PMPI_Finalized", (void *)f_finalized},
		{"PMPI_Get_library_version", (void *)f_version}, {"PMPI_Type_size", (void *)f_type_size},
		{"PMPI_Comm_size", (void *)f_comm_size}, {"PMPI_Comm_rank", (void *)f_comm_rank},
		{"PMPI_Comm_group", (void *)f_comm_group},
		{"PMPI_Group_translate_ranks", (void *)f_translate},
		{"PMPI_Group_free", (void *)f_group_free}, {"PMPI_Get_count", (void *)f_get_count},
	};
	for (size_t i = 0; i < sizeof fakes / sizeof fakes[0]; i++)
		ddl_real_set(fakes[i].name, fakes[i].fn);
	int prov = 0;
	if (MPI_Init_thread(NULL, NULL, 3, &prov) != 0)
		return 1;
	int bad = 0;
	for (int r = 0; r < ROUNDS; r++) {
		pthread_t th[NTHREADS];
		pthread_barrier_init(&start, NULL, NTHREADS + 1);
		for (long i = 0; i < NTHREADS; i++)
			if (pthread_create(&th[i], NULL, worker, (void *)(r * NTHREADS + i)))
				return 1;
		pthread_barrier_wait(&start);
		for (int i = 0; i < NTHREADS; i++) {
			void *rv;
			pthread_join(th[i], &rv);
			bad += rv != NULL;
		}
		pthread_barrier_destroy(&start);
	}
	bad += MPI_Finalize() != 0;
	return bad ? 1 : 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Whether the N numbers at V (sorted here) are each given once. */
static int distinct(uint32_t *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_u32);
	for (size_t i = 1; i < n; i++)
		if (v[i] == v[i - 1])
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "run"))
		return run();
	char dir[64];
	static const char *const env[] = {"DDLPROF_BUFFER_EVENTS=64", "DDLPROF_FLUSH_MS=1", NULL};
	if (tsan_run_profiled(argv[0], dir, env, TIMEOUT_S) < 0)
		return 1;
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t nfiles = 0, seen = 0, world_n = 0, sends_n = 0, waits = 0, named = 0;
	uint32_t *world = calloc(1u << 20, sizeof *world), *sends = calloc(1u << 20, sizeof *sends);
	int clean = 1;
	while (d && world && sends && (e = readdir(d))) {
		if (!strstr(e->d_name, ".ddlt"))
			continue;
		char path[4096], err[512];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		struct ddl_trace t;
		if (ddl_trace_read(path, &t, err, sizeof err) < 0) {
			fprintf(stderr, "tsan: %s\n", err);
			clean = 0;
			continue;
		}
		nfiles++;
		clean &= t.ended && !t.truncated && !t.corrupt;
		uint64_t wkey = 0;
		for (size_t c = 1; c < t.ncomms; c++) {
			if (!t.comms[c].id || strcmp(t.comms[c].how, "mpi"))
				continue;
			if (t.comms[c].nranks == 8)
				wkey = t.comms[c].key;
			else if (t.comms[c].parent == 0)
				seen++; /* the shared ones: no parent (the splits' is the world) */
		}
		for (size_t i = 0; i < t.nev; i++) {
			const struct ddl_args *a = ddl_event_args(&t, i);
			const struct ddl_comm_info *ci = a ? ddl_trace_comm(&t, a->comm) : NULL;
			if (!a || !ci)
				continue;
			if (ci->key == wkey && a->aux && (t.ev[i].kind == DDL_EV_MPI_ALLREDUCE ||
			                                  t.ev[i].kind == DDL_EV_MPI_COMM_SPLIT) &&
			    world_n < (1u << 20))
				world[world_n++] = a->aux;
			if (t.ev[i].kind == DDL_EV_MPI_SEND && ci->key == wkey && a->peer == 5 && a->aux &&
			    sends_n < (1u << 20))
				sends[sends_n++] = a->aux;
			if (t.ev[i].kind == DDL_EV_MPI_WAITALL) {
				waits++;
				named += a->op == DDL_EV_MPI_IRECV && a->aux > 0;
			}
		}
		ddl_trace_free(&t);
	}
	if (d)
		closedir(d);
	tsan_check(nfiles == 1 && clean, "one trace, read whole, with its end chunk");
	tsan_check(world_n > 0 && distinct(world, world_n), "no number given twice in the world's sequence");
	tsan_check(sends_n > 0 && distinct(sends, sends_n), "no number given twice to the sends to one peer");
	tsan_check(seen == SHARED, "each communicator met first by several threads at once recorded once");
	tsan_check(waits > 0 && named == waits, "every waitall recorded names the receive it completed");
	fprintf(stderr, "tsan: %zu numbered world collectives, %zu sends to rank 5, %zu shared "
	        "communicators, %zu of %zu waits named\n", world_n, sends_n, seen, named, waits);
	free(world);
	free(sends);
	tsan_remove_dir(dir);
	return tsan_summary();
}
