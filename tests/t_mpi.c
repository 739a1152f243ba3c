/*
 * MPI jobs under ddlprof: Debian's Open MPI launching examples/mpi_allreduce
 * (and tests/mpi/mpicheck), its ranks talking over the TCP BTL, with
 * ddlprof as the outer launcher (`ddlprof -o DIR -- mpirun ...`). The
 * program says what each rank handed to MPI: by operation, the calls and
 * the bytes it put in (its -a makes every step the other calls of a
 * training job too), and a point-to-point payload each way and the
 * all-reduce buffer times the steps. The report's ranks[].collectives must
 * have those calls and bytes exactly, by operation; and, as before, its
 * socket bytes per rank must be the wire's: with two ranks Open MPI's
 * all-reduce algorithms each send a rank's whole buffer once per step
 * (recursive doubling all of it, the ring two halves), so the bytes are
 * what the program handed to MPI plus the BTL's and the runtime's own
 * messages (a fraction of a percent here: 2% and 256 KiB allowed), never
 * the collectives' bytes counted again.
 *
 * mpi_loopback: two ranks on this host over lo. mpirun hands its own
 * environment to the ranks it starts here, so LD_PRELOAD and DDLPROF_DIR
 * reach them without -x. Each rank's steps, named with the marker API,
 * are its iterations.
 *
 * mpi_two_hosts: one rank in each of two network namespaces
 * (scripts/netns-hosts.sh). mpirun runs on the first "host" and starts its
 * daemon (orted) on the second through a launch agent, the role ssh plays
 * on a cluster: a script written here that runs the command in that
 * host's namespace and hostname (--mca plm_rsh_agent). LD_PRELOAD and the
 * DDLPROF_* variables go along with -x, as on a real cluster. The ranks'
 * cross-host bytes must match the interface counters within the size of
 * the TCP/IP headers.
 *
 * mpi_collectives_loopback, mpi_collectives_two_hosts: -a, with 2 and 4
 * ranks on this host and 2 across the namespaces: every operation's calls
 * and bytes exact on every rank, each communicator's members and span,
 * and the calls' numbers in their communicators' sequences alike on every
 * member (a send's number the same as its receive's).
 *
 * mpi_iterations: without markers, 12 and 20 steps (after 17 calls of
 * set-up: the point-to-point exchange and a barrier): the iterations come
 * from the sequence of MPI's calls, steps less the warm-up (5) give or take
 * one, their mean within 3% of the program's own time per step (which
 * counts the warm-up's steps too: three tries, for a busy machine).
 *
 * mpi_hang: rank 1 stopped (SIGSTOP) while rank 0 waits in MPI_Allreduce,
 * then the job killed (SIGKILL): the report's hang names an all-reduce
 * and its number on MPI_COMM_WORLD, rank 1 missing and to blame, and rank
 * 0 in an all-reduce (its open call, with its number: MPI's blocking calls
 * are open calls while they run) at that number or past it (the stopped
 * rank's last flush's worth of records never reached its trace).
 *
 * mpi_transparent: mpicheck's every line and exit status the same with
 * ddlprof and without (statuses, counts, errno, failing calls' codes,
 * receives with and without a status); a call before MPI_Init or after
 * MPI_Finalize aborts as MPI makes it, naming the program's call.
 *
 * All skip without mpirun or without the programs (built only where mpicc
 * is found); the two-host ones also where namespaces cannot be made.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

/* 10 steps of 2 MiB all-reduces, 5 ms of compute each, 4 MiB each way
 * point to point, markers on. */
#define MPI_ARGS "-n", "10", "-m", "2", "-c", "5", "-x", "4", "-k"
/* Across two hosts, as shell words: 20 steps of 15 ms, so that an even
 * job has 15 analysed iterations of more than the few milliseconds a rank
 * loses now and then to mpirun's daemons on two shared cores (with 5 of
 * 5 ms, three such in one rank made it a straggler by its compute). */
#define MPI_TWO_HOSTS_SH "-n 20 -m 2 -c 15 -x 4 -k"
/* -a: 6 steps of every call, 1 MiB all-reduces, 1 MiB each way */
#define MPI_ALL_SH "-n 6 -m 1 -c 2 -x 1 -a"

#define MPI_RANKS 4 /* the most a test runs */

/* The operations the program counts, as the report names them. */
static const char *const mpi_ops[] = {"allreduce", "broadcast", "reduce", "allgather", "reducescatter",
                                      "alltoall", "send", "recv", "barrier"};
#define MPI_NOPS (sizeof mpi_ops / sizeof mpi_ops[0])

/* What one rank says it handed to MPI. */
struct mpi_said {
	long long p2p_sent, p2p_received, allreduce;
	long long calls[MPI_NOPS], bytes[MPI_NOPS];
	int seen, ops_seen;
};

static const char *mpi_mpirun(void)
{
	static const char *const where[] = {"/usr/bin/mpirun", "/usr/local/bin/mpirun"};
	for (size_t i = 0; i < sizeof where / sizeof where[0]; i++)
		if (access(where[i], X_OK) == 0)
			return where[i];
	return NULL;
}

/* mpirun and the program PROG (in the build tree), or a line saying why not. */
static int mpi_ready_for(const char *prog)
{
	if (!mpi_mpirun()) {
		fprintf(stderr, "    needs Open MPI's mpirun (openmpi-bin): skipped\n");
		return 0;
	}
	if (access(tbuild(prog), X_OK) != 0) {
		fprintf(stderr, "    %s not built (no mpicc): skipped\n", prog);
		return 0;
	}
	return 1;
}

static int mpi_ready(void)
{
	return mpi_ready_for("examples/mpi_allreduce");
}

/* Reads the lines of the program's N ranks; 0 when every one spoke. */
static int mpi_parse(const char *out, struct mpi_said *said, int n)
{
	memset(said, 0, (size_t)n * sizeof *said);
	for (const char *p = out; (p = strstr(p, "mpi_allreduce: rank ")); p++) {
		int r, nr, used = 0;
		long long s, rcv, ar;
		if (sscanf(p, "mpi_allreduce: rank %d of %d: p2p_sent %lld p2p_received %lld "
		              "allreduce_bytes %lld", &r, &nr, &s, &rcv, &ar) == 5 && r >= 0 && r < n) {
			said[r].p2p_sent = s;
			said[r].p2p_received = rcv;
			said[r].allreduce = ar;
			said[r].seen = 1;
		} else if (sscanf(p, "mpi_allreduce: rank %d ops%n", &r, &used) == 1 && used && r >= 0 &&
		           r < n) {
			const char *q = p + used;
			size_t k = 0;
			for (; k < MPI_NOPS; k++) {
				char name[32];
				int m = 0;
				if (sscanf(q, " %31s %lld %lld%n", name, &said[r].calls[k], &said[r].bytes[k], &m) != 3 ||
				    strcmp(name, mpi_ops[k]))
					break;
				q += m;
			}
			said[r].ops_seen = k == MPI_NOPS;
		}
	}
	for (int r = 0; r < n; r++)
		if (!said[r].seen || !said[r].ops_seen)
			return -1;
	return 0;
}

/* BYTES counts what WANT says went, plus at most 2% and 256 KiB of protocol. */
static int mpi_close(long long bytes, long long want)
{
	return bytes >= want && bytes <= want + want / 50 + 262144;
}

/*
 * The report's processes with ranks 0 and 1: each present once, and their
 * bytes (cross-host ones when REMOTE) as the program said. Fills host[r].
 */
static int mpi_check_ranks(json_t *rep, const struct mpi_said said[2], int remote,
                           const char *host[2])
{
	size_t i;
	json_t *p;
	int n[2] = {0, 0};
	json_array_foreach(json_object_get(rep, "processes"), i, p) {
		json_int_t r = json_integer_value(json_object_get(p, "rank"));
		if (!json_is_integer(json_object_get(p, "rank")) || r < 0)
			continue; /* mpirun, orted */
		CHECK(r < 2, "a process with rank %lld", (long long)r);
		n[r]++;
		host[r] = json_string_value(json_object_get(p, "host"));
		json_t *net = json_object_get(p, "network");
		long long sent = json_integer_value(
			json_object_get(net, remote ? "bytes_sent_remote" : "bytes_sent"));
		long long recv = json_integer_value(
			json_object_get(net, remote ? "bytes_received_remote" : "bytes_received"));
		long long want_s = said[r].p2p_sent + said[r].allreduce;
		long long want_r = said[r].p2p_received + said[r].allreduce;
		fprintf(stderr, "    rank %lld on %s: sent %lld (handed to MPI %lld), received %lld (%lld)\n",
		        (long long)r, host[r] ? host[r] : "?", sent, want_s, recv, want_r);
		CHECK(mpi_close(sent, want_s), "rank %lld: sent %lld bytes, the program %lld", (long long)r,
		      sent, want_s);
		CHECK(mpi_close(recv, want_r), "rank %lld: received %lld bytes, the program %lld",
		      (long long)r, recv, want_r);
	}
	CHECK(n[0] == 1 && n[1] == 1, "traces of rank 0: %d, rank 1: %d", n[0], n[1]);
	return DDL_PASS;
}

static long long mpi_int(json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

/*
 * The report's ranks[].collectives of ranks 0 .. N-1: MPI's, each
 * operation's calls and bytes as the program said, nothing else, their
 * sums, and every byte of a known span (across machines when REMOTE, the
 * world's at least; inside one otherwise).
 */
static int mpi_check_ops(json_t *rep, const struct mpi_said *said, int n, int remote)
{
	size_t i;
	json_t *rk;
	int seen[MPI_RANKS] = {0};
	json_array_foreach(json_object_get(rep, "ranks"), i, rk) {
		long long r = mpi_int(rk, "rank");
		if (r < 0)
			continue;
		CHECK(r < n, "a rank %lld in a job of %d", r, n);
		seen[r]++;
		json_t *c = json_object_get(rk, "collectives"), *by = json_object_get(c, "by_op");
		const char *src = json_string_value(json_object_get(c, "source"));
		CHECK(src && !strcmp(src, "mpi"), "rank %lld: collectives from %s", r, src ? src : "nothing");
		long long calls = 0, bytes = 0;
		size_t ops = 0;
		for (size_t k = 0; k < MPI_NOPS; k++) {
			json_t *o = json_object_get(by, mpi_ops[k]);
			long long gc = o ? mpi_int(o, "count") : 0, gb = o ? mpi_int(o, "bytes") : 0;
			CHECK(gc == said[r].calls[k] && gb == said[r].bytes[k],
			      "rank %lld: %s: %lld calls, %lld bytes in the report; the program made %lld, %lld", r,
			      mpi_ops[k], gc, gb, said[r].calls[k], said[r].bytes[k]);
			calls += gc;
			bytes += gb;
			ops += o != NULL;
		}
		CHECK(json_object_size(by) == ops, "rank %lld: %zu operations in the report, %zu known", r,
		      json_object_size(by), ops);
		long long in = mpi_int(c, "intra_bytes"), out = mpi_int(c, "inter_bytes");
		CHECK(mpi_int(c, "count") == calls && mpi_int(c, "bytes") == bytes,
		      "rank %lld: %lld calls, %lld bytes; by operation %lld, %lld", r, mpi_int(c, "count"),
		      mpi_int(c, "bytes"), calls, bytes);
		CHECK(mpi_int(c, "unknown_span_bytes") == 0 && in + out == bytes,
		      "rank %lld: %lld bytes inside a machine, %lld across, %lld of unknown span, of %lld", r, in,
		      out, mpi_int(c, "unknown_span_bytes"), bytes);
		CHECK(remote ? out >= said[r].allreduce : out == 0, "rank %lld: %lld bytes across machines", r,
		      out);
		fprintf(stderr, "    rank %lld: %lld calls, %lld bytes (%lld across machines) in %zu operations, "
		        "as the program made them\n", r, calls, bytes, out, ops);
	}
	for (int r = 0; r < n; r++)
		CHECK(seen[r] == 1, "rank %d in ranks[] %d times", r, seen[r]);
	return DDL_PASS;
}

/* One MPI call of --dump's: its process, communicator, number, and the rest. */
struct mpi_numbered {
	long pid;
	char key[20];
	unsigned seq;
	int rank, peer, dir; /* point-to-point: 0 send, 1 receive; -1 a collective */
	long long bytes;
	char name[40];
};

static int mpi_numbered_cmp(const void *a, const void *b)
{
	const struct mpi_numbered *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	if (c)
		return c;
	if (x->dir != y->dir)
		return x->dir - y->dir;
	if (x->dir >= 0) {
		/* sends by (sender, receiver), receives by (sender, receiver) too */
		int xs = x->dir ? x->peer : x->rank, ys = y->dir ? y->peer : y->rank;
		int xr = x->dir ? x->rank : x->peer, yr = y->dir ? y->rank : y->peer;
		if (xs != ys)
			return xs - ys;
		if (xr != yr)
			return xr - yr;
	} else if (x->pid != y->pid) {
		return x->pid < y->pid ? -1 : 1;
	}
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static const char *mpi_field(const char *extra, const char *key, char *out, size_t n)
{
	char k[32];
	snprintf(k, sizeof k, ",%s=", key);
	const char *p = strstr(extra, k);
	if (!p)
		return NULL;
	p += strlen(k);
	size_t len = strcspn(p, ",");
	snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), p);
	return out;
}

/*
 * The calls' numbers (ddlprof-trace(5): aux) in DIR's trace, as --dump
 * shows them: on each communicator, every member's collectives numbered 1,
 * 2, ... and alike (the same call at each number); every send to a peer
 * numbered as that peer's receive of it, with the same bytes; on a
 * communicator of N members, N processes' calls.
 */
static int mpi_check_numbers(const char *dir)
{
	char cmd[PATH_MAX * 2];
	snprintf(cmd, sizeof cmd, "'%s' --dump '%s'", tbuild("bin/ddlprof-report"), dir);
	FILE *p = popen(cmd, "r");
	CHECK(p, "cannot run %s", cmd);
	size_t n = 0, cap = 65536;
	struct mpi_numbered *v = malloc(cap * sizeof *v);
	CHECK(v, "out of memory");
	char line[4096];
	while (fgets(line, sizeof line, p) && n < cap) {
		struct mpi_numbered c = {0};
		char extra[2048], val[64];
		if (sscanf(line, "%*s %ld %*s %*s %39s %*s %*s %*s %2047s", &c.pid, c.name, extra) != 3 ||
		    strncmp(c.name, "MPI_", 4) || !mpi_field(extra, "seq", val, sizeof val))
			continue;
		c.seq = (unsigned)atol(val);
		if (!strncmp(c.name, "MPI_Wait", 8) || !strncmp(c.name, "MPI_Test", 8))
			continue; /* the numbers of their starts */
		if (!mpi_field(extra, "comm_key", c.key, sizeof c.key))
			continue;
		c.rank = mpi_field(extra, "comm_rank", val, sizeof val) ? atoi(val) : -1;
		c.peer = mpi_field(extra, "peer", val, sizeof val) ? atoi(val) : -1;
		c.bytes = mpi_field(extra, "bytes", val, sizeof val) ? atoll(val) : 0;
		int send = !strcmp(c.name, "MPI_Send") || !strcmp(c.name, "MPI_Isend");
		int recv = !strcmp(c.name, "MPI_Recv") || !strcmp(c.name, "MPI_Irecv");
		c.dir = send ? 0 : recv ? 1 : -1;
		v[n++] = c;
	}
	pclose(p);
	qsort(v, n, sizeof *v, mpi_numbered_cmp);
	size_t colls = 0, pairs = 0, comms = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && !strcmp(v[j].key, v[i].key) && v[j].dir < 0)
			j++;
		if (j > i)
			comms++;
		/* the collectives of communicator key: each member's run, alike */
		size_t len = 0;
		while (i + len < j && v[i + len].pid == v[i].pid)
			len++;
		for (size_t k = i; k < j;) {
			size_t end = k;
			while (end < j && v[end].pid == v[k].pid)
				end++;
			CHECK(end - k == len, "communicator %s: %zu collectives in pid %ld, %zu in pid %ld", v[k].key,
			      end - k, v[k].pid, len, v[i].pid);
			for (size_t m = 0; m < len; m++) {
				const struct mpi_numbered *c = &v[k + m];
				CHECK(c->seq == m + 1 && !strcmp(c->name, v[i + m].name),
				      "communicator %s, pid %ld: %s numbered %u, the %zu-th (pid %ld's: %s)", c->key, c->pid,
				      c->name, c->seq, m + 1, v[i].pid, v[i + m].name);
				colls++;
			}
			k = end;
		}
		/* then its sends, then its receives: the same (sender, receiver, number, bytes) */
		size_t s = j;
		while (s < n && !strcmp(v[s].key, v[i].key) && v[s].dir == 0)
			s++;
		size_t e = s;
		while (e < n && !strcmp(v[e].key, v[i].key) && v[e].dir == 1)
			e++;
		CHECK(s - j == e - s, "communicator %s: %zu sends, %zu receives", v[i].key, s - j, e - s);
		for (size_t k = 0; k < s - j; k++) {
			const struct mpi_numbered *a = &v[j + k], *b = &v[s + k];
			CHECK(a->rank == b->peer && a->peer == b->rank && a->seq == b->seq && a->bytes == b->bytes,
			      "communicator %s: %s %d -> %d number %u of %lld bytes, but %s %d <- %d number %u of "
			      "%lld", a->key, a->name, a->rank, a->peer, a->seq, a->bytes, b->name, b->rank, b->peer,
			      b->seq, b->bytes);
			pairs++;
		}
		i = e; /* past v[i]: it is a collective, a send or a receive */
	}
	free(v);
	fprintf(stderr, "    %zu collective calls on %zu communicators numbered alike on their members, "
	        "%zu sends numbered as their receives\n", colls, comms, pairs);
	CHECK(colls > 0, "no numbered collectives in --dump");
	return DDL_PASS;
}

/* Runs ddlprof -o T -- mpirun with NP ranks over lo: the example with
 * ARGS (NULL-terminated); R gets its result. 0, or -1 (said). */
static int mpi_run_loopback(const char *t, int np, char *const *args, struct ddl_run_result *r)
{
	char nps[16];
	snprintf(nps, sizeof nps, "%d", np);
	char *argv[64] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", (char *)t, "--", (char *)mpi_mpirun(),
	                  "--allow-run-as-root", "--oversubscribe", "-np", nps, "--mca", "btl", "tcp,self",
	                  "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo",
	                  (char *)tbuild("examples/mpi_allreduce")};
	size_t k = 20;
	for (size_t i = 0; args[i] && k < 63; i++)
		argv[k++] = args[i];
	argv[k] = NULL;
	if (trun(argv, NULL, 90, r) != 0) {
		fprintf(stderr, "    mpirun did not finish in 90 s: %s\n", r->err);
		return -1;
	}
	if (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0) {
		fprintf(stderr, "    mpirun: status %d: %s %s\n", r->status, r->out, r->err);
		return -1;
	}
	return 0;
}

int test_mpi_loopback(void)
{
	if (!mpi_ready())
		return DDL_SKIP;
	char *dir = tmpdir(), t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	char *args[] = {MPI_ARGS, NULL};
	struct ddl_run_result r;
	CHECK(mpi_run_loopback(t, 2, args, &r) == 0, "mpirun");
	struct mpi_said said[2];
	CHECK(mpi_parse(r.out, said, 2) == 0, "the ranks' lines: %s", r.out);
	trun_free(&r);
	json_t *rep = treport(t, NULL);
	CHECK(rep, "no report");
	json_t *job = json_object_get(rep, "job");
	CHECK(json_integer_value(json_object_get(job, "ranks")) == 2, "job.ranks %lld",
	      (long long)json_integer_value(json_object_get(job, "ranks")));
	const char *host[2] = {NULL, NULL};
	if (mpi_check_ranks(rep, said, 0, host) != DDL_PASS || mpi_check_ops(rep, said, 2, 0) != DDL_PASS)
		return DDL_FAIL;
	/* -k: each step named with the marker API; 10 steps less 5 of warm-up.
	 * (Per rank: mpirun is in the job too, with rank -1 and no markers.) */
	size_t i;
	json_t *rk;
	int found = 0;
	json_array_foreach(json_object_get(rep, "ranks"), i, rk) {
		json_int_t n = json_integer_value(json_object_get(rk, "rank"));
		if (n != 0 && n != 1)
			continue;
		found++;
		CHECK(json_integer_value(json_object_get(rk, "iterations")) == 5,
		      "rank %lld: %lld iterations from the markers, expected 5", (long long)n,
		      (long long)json_integer_value(json_object_get(rk, "iterations")));
	}
	CHECK(found == 2, "%d ranks in the report's ranks", found);
	json_decref(rep);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* The communicators of REP: the world of N members (on NHOSTS hosts), and
 * -a's two halves (the even ranks, the odd), each on one host. */
static int mpi_check_comms(json_t *rep, int n, int nhosts)
{
	size_t i;
	json_t *c;
	int world = 0, halves = 0;
	char even[64] = "", odd[64] = "";
	for (int r = 0; r < n; r++) {
		char *s = r % 2 ? odd : even;
		snprintf(s + strlen(s), 64 - strlen(s), "%s%d", *s ? "," : "", r);
	}
	json_array_foreach(tjget(rep, "job.communicators"), i, c) {
		const char *how = json_string_value(json_object_get(c, "created_by"));
		const char *wr = json_string_value(json_object_get(c, "world_ranks"));
		const char *span = json_string_value(json_object_get(c, "span"));
		long long nr = mpi_int(c, "nranks"), traced = mpi_int(c, "members_traced"),
		          hosts = mpi_int(c, "hosts");
		if (!how || strcmp(how, "mpi"))
			continue;
		fprintf(stderr, "    communicator %s: %lld ranks (%lld traced), world ranks %s, on %lld "
		        "host%s, %s\n", json_string_value(json_object_get(c, "key")), nr, traced, wr ? wr : "?",
		        hosts, hosts == 1 ? "" : "s", span ? span : "?");
		CHECK(wr && span && traced == nr, "communicator: members traced %lld of %lld", traced, nr);
		if (nr == n) {
			char all[16];
			snprintf(all, sizeof all, "0-%d", n - 1);
			CHECK(!strcmp(wr, all) && hosts == nhosts && !strcmp(span, nhosts > 1 ? "inter" : "intra"),
			      "the world: ranks %s on %lld hosts, %s", wr, hosts, span);
			world++;
		} else {
			CHECK((!strcmp(wr, even) || !strcmp(wr, odd)) && nr == (n + !strcmp(wr, even)) / 2 &&
			          hosts == 1 && !strcmp(span, "intra"),
			      "a half of %lld ranks %s on %lld hosts, %s", nr, wr, hosts, span);
			halves++;
		}
	}
	CHECK(world == 1 && halves == (n > 1 ? 2 : 1), "%d worlds and %d halves among the communicators",
	      world, halves);
	return DDL_PASS;
}

int test_mpi_collectives_loopback(void)
{
	if (!mpi_ready())
		return DDL_SKIP;
	for (int np = 2; np <= 4; np += 2) {
		char *dir = tmpdir(), t[PATH_MAX];
		snprintf(t, sizeof t, "%s/t", dir);
		char *args[] = {"-n", "6", "-m", "1", "-c", "2", "-x", "1", "-a", NULL};
		struct ddl_run_result r;
		fprintf(stderr, "    %d ranks:\n", np);
		CHECK(mpi_run_loopback(t, np, args, &r) == 0, "mpirun");
		struct mpi_said said[MPI_RANKS];
		CHECK(mpi_parse(r.out, said, np) == 0, "the ranks' lines: %s", r.out);
		trun_free(&r);
		json_t *rep = treport(t, NULL);
		CHECK(rep, "no report");
		if (mpi_check_ops(rep, said, np, 0) != DDL_PASS || mpi_check_comms(rep, np, 1) != DDL_PASS ||
		    mpi_check_numbers(t) != DDL_PASS)
			return DDL_FAIL;
		json_decref(rep);
		trm(dir);
		free(dir);
	}
	return DDL_PASS;
}

static long long mpi_counter(const char *ns, const char *dev, const char *what)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "ip netns exec %s cat /sys/class/net/%s/statistics/%s", ns, dev, what);
	FILE *f = popen(cmd, "r");
	long long v = -1;
	if (f && fscanf(f, "%lld", &v) != 1)
		v = -1;
	if (f)
		pclose(f);
	return v;
}

/* Writes TEXT to PATH with MODE; 0 or -1. */
static int mpi_write(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	int ok = fputs(text, f) >= 0;
	ok &= fclose(f) == 0;
	return ok && chmod(path, mode) == 0 ? 0 : -1;
}

/* Two namespace hosts' names and interface counters after a run. */
struct mpi_hosts {
	char name[2][64];
	long long tx[2], rx[2];
};

/*
 * Runs the example with ARGS (shell words), one rank in each of two
 * network namespaces, under ddlprof into T (DIR holds the agent and the
 * host file); R gets its result, H the hosts' names and counters after it.
 * DDL_PASS, DDL_SKIP where namespaces cannot be made, or DDL_FAIL (said).
 */
static int mpi_two_hosts_run(const char *dir, const char *t, const char *args, struct ddl_run_result *r,
                             struct mpi_hosts *h)
{
	if (geteuid() != 0) {
		fprintf(stderr, "    needs root for network namespaces: skipped\n");
		return DDL_SKIP;
	}
	const char *prefix = "ddlmpi"; /* fixed: a killed run's leftovers go first */
	char env_prefix[64], script[PATH_MAX], cmd[8192];
	snprintf(env_prefix, sizeof env_prefix, "DDL_NETNS_PREFIX=%s", prefix);
	snprintf(script, sizeof script, "%s/../scripts/netns-hosts.sh", tbuild(""));
	/* The launch agent (what ssh is on a cluster): HOST COMMAND, the
	 * command a shell string, run in HOST's namespace under its name. */
	char agent[PATH_MAX], hosts[PATH_MAX], text[PATH_MAX + 512];
	snprintf(agent, sizeof agent, "%s/agent", dir);
	snprintf(hosts, sizeof hosts, "%s/hosts", dir);
	snprintf(text, sizeof text,
	         "#!/bin/sh\n"
	         "case \"$1\" in\n"
	         "10.99.0.1) i=0 ;;\n"
	         "10.99.0.2) i=1 ;;\n"
	         "*) echo \"agent: unknown host $1\" >&2; exit 1 ;;\n"
	         "esac\n"
	         "shift\n"
	         "DDL_NETNS_PREFIX=%s exec '%s' run \"$i\" /bin/sh -c \"$*\"\n",
	         prefix, script);
	CHECK(mpi_write(agent, text, 0755) == 0 &&
	              mpi_write(hosts, "10.99.0.1 slots=1\n10.99.0.2 slots=1\n", 0644) == 0,
	      "writing the agent and the host file");

	char *env[] = {env_prefix, NULL};
	char *down[] = {script, "down", NULL};
	struct ddl_run_result d;
	trun(down, env, 30, &d);
	trun_free(&d);
	char *up[] = {script, "up", "2", NULL};
	CHECK(trun(up, env, 30, r) == 0, "netns-hosts up");
	if (r->status != 0) {
		trun(down, env, 30, &d);
		trun_free(&d);
		fprintf(stderr, "    cannot make network namespaces: skipped (%s)\n", r->err);
		trun_free(r);
		return DDL_SKIP;
	}
	trun_free(r);

	snprintf(cmd, sizeof cmd,
	         "exec '%s' run 0 '%s' -q -o '%s' -- '%s' --allow-run-as-root --hostfile '%s' "
	         "--mca plm_rsh_agent '%s' -np 2 --map-by node --mca btl tcp,self "
	         "--mca btl_tcp_if_include 10.99.0.0/24 --mca oob_tcp_if_include 10.99.0.0/24 "
	         "-x LD_PRELOAD -x DDLPROF_DIR -x DDLPROF_RUN_ID '%s' %s",
	         script, tbuild("bin/ddlprof"), t, mpi_mpirun(), hosts, agent,
	         tbuild("examples/mpi_allreduce"), args);
	char *run[] = {"/bin/sh", "-c", cmd, NULL};
	int rc = trun(run, env, 90, r);
	for (int i = 0; i < 2; i++) {
		char ns[64], dev[64];
		snprintf(ns, sizeof ns, "%s-h%d", prefix, i);
		snprintf(dev, sizeof dev, "%s%d", prefix, i);
		snprintf(h->name[i], sizeof h->name[i], "%s-h%d", prefix, i);
		h->tx[i] = mpi_counter(ns, dev, "tx_bytes");
		h->rx[i] = mpi_counter(ns, dev, "rx_bytes");
	}
	trun(down, env, 30, &d);
	trun_free(&d);
	CHECK(rc == 0 && WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0, "mpirun: %s %s", r->out,
	      r->err);
	return DDL_PASS;
}

int test_mpi_two_hosts(void)
{
	if (!mpi_ready())
		return DDL_SKIP;
	char *dir = tmpdir(), t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	struct ddl_run_result r;
	struct mpi_hosts h;
	int rc = mpi_two_hosts_run(dir, t, MPI_TWO_HOSTS_SH, &r, &h);
	if (rc != DDL_PASS)
		return rc;
	struct mpi_said said[2];
	CHECK(mpi_parse(r.out, said, 2) == 0, "the ranks' lines: %s", r.out);
	trun_free(&r);

	json_t *rep = treport(t, NULL);
	CHECK(rep, "no report");
	json_t *job = json_object_get(rep, "job");
	CHECK(json_integer_value(json_object_get(job, "hosts")) == 2 &&
	              json_integer_value(json_object_get(job, "ranks")) == 2,
	      "hosts %lld, ranks %lld", (long long)json_integer_value(json_object_get(job, "hosts")),
	      (long long)json_integer_value(json_object_get(job, "ranks")));
	const char *host[2] = {NULL, NULL};
	if (mpi_check_ranks(rep, said, 1, host) != DDL_PASS || mpi_check_ops(rep, said, 2, 1) != DDL_PASS)
		return DDL_FAIL;
	CHECK(host[0] && host[1] && !strcmp(host[0], h.name[0]) && !strcmp(host[1], h.name[1]),
	      "rank 0 on %s, rank 1 on %s", host[0] ? host[0] : "?", host[1] ? host[1] : "?");
	/* an even job on a slow link: the rank whose all-reduce returns later
	 * (its last bytes still arriving) starts the next one later, through
	 * no doing of its own: no straggler */
	CHECK(json_array_size(json_object_get(job, "stragglers")) == 0, "an even job across a slow link has a "
	      "straggler, rank %lld", (long long)json_integer_value(json_array_get(json_object_get(job, "stragglers"), 0)));
	/* Every process of a host (mpirun and orted too) against its interface. */
	for (int k = 0; k < 2; k++) {
		long long sent = 0, recv = 0;
		size_t i;
		json_t *p;
		json_array_foreach(json_object_get(rep, "processes"), i, p) {
			const char *ph = json_string_value(json_object_get(p, "host"));
			if (!ph || strcmp(ph, h.name[k]))
				continue;
			json_t *net = json_object_get(p, "network");
			sent += json_integer_value(json_object_get(net, "bytes_sent_remote"));
			recv += json_integer_value(json_object_get(net, "bytes_received_remote"));
		}
		fprintf(stderr, "    %s: remote sent %lld (interface tx %lld), received %lld (rx %lld)\n",
		        h.name[k], sent, h.tx[k], recv, h.rx[k]);
		CHECK(h.tx[k] >= sent && h.tx[k] <= sent + sent / 10 + 262144,
		      "%s: sent %lld, interface tx %lld", h.name[k], sent, h.tx[k]);
		CHECK(h.rx[k] >= recv && h.rx[k] <= recv + recv / 10 + 262144,
		      "%s: received %lld, interface rx %lld", h.name[k], recv, h.rx[k]);
	}
	json_decref(rep);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

int test_mpi_collectives_two_hosts(void)
{
	if (!mpi_ready())
		return DDL_SKIP;
	char *dir = tmpdir(), t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	struct ddl_run_result r;
	struct mpi_hosts h;
	int rc = mpi_two_hosts_run(dir, t, MPI_ALL_SH, &r, &h);
	if (rc != DDL_PASS)
		return rc;
	struct mpi_said said[2];
	CHECK(mpi_parse(r.out, said, 2) == 0, "the ranks' lines: %s", r.out);
	trun_free(&r);
	json_t *rep = treport(t, NULL);
	CHECK(rep, "no report");
	if (mpi_check_ops(rep, said, 2, 1) != DDL_PASS || mpi_check_comms(rep, 2, 2) != DDL_PASS ||
	    mpi_check_numbers(t) != DDL_PASS)
		return DDL_FAIL;
	/* the time in MPI's calls with traffic in flight is stall, and the
	 * traffic goes to the other host: network, not interconnect */
	size_t i;
	json_t *rk;
	json_array_foreach(json_object_get(rep, "ranks"), i, rk) {
		if (mpi_int(rk, "rank") < 0)
			continue;
		double net = json_number_value(tjget(rk, "breakdown_s.network_stall"));
		double ic = json_number_value(tjget(rk, "breakdown_s.interconnect_stall"));
		fprintf(stderr, "    rank %lld: network stall %.3f ms, interconnect %.3f ms an iteration\n",
		        mpi_int(rk, "rank"), net * 1e3, ic * 1e3);
		CHECK(net > 0 && ic == 0, "rank %lld: network stall %g s, interconnect %g s", mpi_int(rk, "rank"),
		      net, ic);
	}
	json_decref(rep);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/* The program's own time per step, from rank 0's line; < 0 when missing. */
static double mpi_step_s(const char *out)
{
	const char *p = strstr(out, " steps, ");
	double s = -1;
	if (p && sscanf(p, " steps, %lf s/step", &s) != 1)
		s = -1;
	return s;
}

int test_mpi_iterations(void)
{
	if (!mpi_ready())
		return DDL_SKIP;
	static const char *const steps[] = {"12", "20"};
	for (size_t k = 0; k < 2; k++) {
		int want = atoi(steps[k]) - 5, ok = 0;
		/* the count is the calls' own; the mean is a time, on a machine that
		 * may be busy: three tries to be within 3% */
		for (int attempt = 0; attempt < 3 && !ok; attempt++) {
			char *dir = tmpdir(), t[PATH_MAX];
			snprintf(t, sizeof t, "%s/t", dir);
			/* 50 ms of compute a step (the program's busy loop runs by the
			 * clock: a busy machine stretches only its 1 MiB all-reduce) */
			char *args[] = {"-n", (char *)steps[k], "-c", "50", "-m", "1", NULL};
			struct ddl_run_result r;
			CHECK(mpi_run_loopback(t, 2, args, &r) == 0, "mpirun");
			double step = mpi_step_s(r.out);
			CHECK(step > 0, "no time per step in: %s", r.out);
			trun_free(&r);
			json_t *rep = treport(t, NULL);
			CHECK(rep, "no report");
			const char *method = json_string_value(tjget(rep, "job.iteration_method"));
			CHECK(method && !strcmp(method, "collectives"), "%s steps: iterations by %s", steps[k],
			      method ? method : "nothing");
			size_t i;
			json_t *rk;
			int ranks = 0, close = 1;
			json_array_foreach(json_object_get(rep, "ranks"), i, rk) {
				long long rank = mpi_int(rk, "rank"), n = mpi_int(rk, "iterations");
				if (rank < 0)
					continue;
				double mean = json_number_value(json_object_get(rk, "iteration_mean_s"));
				fprintf(stderr, "    %s steps (try %d): rank %lld: %lld iterations, mean %.2f ms; the "
				        "program %.2f ms a step (%+.1f%%)\n", steps[k], attempt + 1, rank, n, mean * 1e3,
				        step * 1e3, (mean / step - 1) * 100);
				CHECK(n >= want - 1 && n <= want + 1, "%s steps: rank %lld: %lld iterations, want %d", steps[k],
				      rank, n, want);
				close &= mean > step * 0.97 && mean < step * 1.03;
				ranks++;
			}
			CHECK(ranks == 2, "%d ranks", ranks);
			ok = close;
			json_decref(rep);
			trm(dir);
			free(dir);
		}
		CHECK(ok, "%s steps: the mean iteration not within 3%% of the program's step in 3 tries", steps[k]);
	}
	return DDL_PASS;
}

/* LINES sorted, as one string (malloc'd): ranks print in any order. */
static char *mpi_sorted(const char *text)
{
	char *copy = strdup(text), **v = NULL, *save;
	size_t n = 0;
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char **q = realloc(v, (n + 1) * sizeof *v);
		if (!q)
			break;
		v = q;
		v[n++] = l;
	}
	for (size_t i = 1; i < n; i++) /* insertion sort: a few hundred lines */
		for (size_t j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
			char *x = v[j];
			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	char *out = calloc(1, strlen(text) + 2);
	for (size_t i = 0; out && i < n; i++) {
		strcat(out, v[i]);
		strcat(out, "\n");
	}
	free(v);
	free(copy);
	return out;
}

/* How many lines of TEXT hold WHAT. */
static int mpi_lines_with(const char *text, const char *what)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, what)); p++)
		n++;
	return n;
}

/* mpicheck MODE with two ranks over lo, under ddlprof into T when T is
 * not NULL; R its result. 0, or -1 when it did not finish. */
static int mpi_check_run(const char *mode, const char *t, struct ddl_run_result *r)
{
	char *argv[32];
	size_t k = 0;
	if (t) {
		argv[k++] = (char *)tbuild("bin/ddlprof");
		argv[k++] = "-q";
		argv[k++] = "-o";
		argv[k++] = (char *)t;
		argv[k++] = "--";
	}
	char *rest[] = {(char *)mpi_mpirun(), "--allow-run-as-root", "--oversubscribe", "-np", "2",
	                "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "lo", "--mca",
	                "oob_tcp_if_include", "lo", (char *)tbuild("tests/mpi/mpicheck"), (char *)mode, NULL};
	for (size_t i = 0; rest[i]; i++)
		argv[k++] = rest[i];
	argv[k] = NULL;
	return trun(argv, NULL, 60, r);
}

int test_mpi_transparent(void)
{
	if (!mpi_ready_for("tests/mpi/mpicheck"))
		return DDL_SKIP;
	char *dir = tmpdir(), t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	struct ddl_run_result a, b;
	CHECK(mpi_check_run("calls", NULL, &a) == 0 && mpi_check_run("calls", t, &b) == 0,
	      "mpicheck did not finish");
	CHECK(WIFEXITED(a.status) && WEXITSTATUS(a.status) == 0, "mpicheck alone: status %d: %s", a.status,
	      a.err);
	char *sa = mpi_sorted(a.out), *sb = mpi_sorted(b.out);
	CHECK(sa && sb, "out of memory");
	fprintf(stderr, "    %d lines of results, status %d with ddlprof and without\n",
	        mpi_lines_with(sa, "\n"), WEXITSTATUS(a.status));
	CHECK(a.status == b.status, "status %d alone, %d under ddlprof: %s", a.status, b.status, b.err);
	CHECK(!strcmp(sa, sb), "the results differ:\n--- alone\n%s--- under ddlprof\n%s", sa, sb);
	free(sa);
	free(sb);
	trun_free(&a);
	trun_free(&b);
	/* what the trace says of the calls that failed, and of the receives
	 * without a status: the bytes that came */
	char cmd[PATH_MAX * 2], line[4096];
	snprintf(cmd, sizeof cmd, "'%s' --dump '%s'", tbuild("bin/ddlprof-report"), t);
	FILE *p = popen(cmd, "r");
	CHECK(p, "cannot run %s", cmd);
	int failed = 0, failed_bytes = 0, short_recv = 0, any = 0;
	while (fgets(line, sizeof line, p)) {
		char ev[64], extra[2048] = "";
		long long res;
		if (sscanf(line, "%*s %*s %*s %*s %63s %*s %lld %*s %2047s", ev, &res, extra) < 2 ||
		    strncmp(ev, "MPI_", 4))
			continue;
		if (res != 0) {
			failed++;
			failed_bytes += strstr(extra, ",bytes=") != NULL; /* (a number it may have: taken
			                                                  * as it began) */
		}
		short_recv += !strcmp(ev, "MPI_Recv") && strstr(extra, "bytes=1000,") != NULL;
		any += !strcmp(ev, "MPI_Recv") && strstr(extra, "bytes=100,") && strstr(extra, ",peer=1,");
	}
	CHECK(pclose(p) == 0, "%s failed", cmd);
	fprintf(stderr, "    %d failed calls recorded with their codes, %d received 1000 bytes into 4096, "
	        "%d from any source\n", failed, short_recv, any);
	CHECK(failed == 12 && !failed_bytes, "%d failed calls recorded (%d with bytes), want 12", failed,
	      failed_bytes);
	CHECK(short_recv == 4 && any == 1, "%d receives of 1000 bytes (want 4: two each, with a status and "
	      "without), %d of 100 from any source (want 1)", short_recv, any);
	/* before MPI_Init, after MPI_Finalize: MPI aborts, naming the program's call */
	static const struct {
		const char *mode, *said;
	} abort_modes[] = {{"preinit", "The MPI_Barrier() function was called before MPI_INIT"},
	                   {"postfinalize", "The MPI_Allreduce() function was called after MPI_FINALIZE"}};
	for (size_t k = 0; k < 2; k++) {
		char t2[PATH_MAX];
		snprintf(t2, sizeof t2, "%s/%s", dir, abort_modes[k].mode);
		CHECK(mpi_check_run(abort_modes[k].mode, NULL, &a) == 0 &&
		      mpi_check_run(abort_modes[k].mode, t2, &b) == 0, "mpicheck %s did not finish",
		      abort_modes[k].mode);
		int na = mpi_lines_with(a.err, abort_modes[k].said), nb = mpi_lines_with(b.err, abort_modes[k].said);
		int oa = mpi_lines_with(a.err, "function was called"), ob = mpi_lines_with(b.err, "function was called");
		fprintf(stderr, "    %s: status %d alone, %d under ddlprof; MPI said so %d and %d times\n",
		        abort_modes[k].mode, a.status, b.status, na, nb);
		CHECK(a.status == b.status && a.status != 0, "%s: status %d alone, %d under ddlprof",
		      abort_modes[k].mode, a.status, b.status);
		/* each rank says it as it aborts, unless mpirun has killed it first
		 * for the other's abort (alone, on a loaded machine, one of the two
		 * now and then): one or two, each naming the program's call */
		CHECK(na >= 1 && na <= 2 && nb >= 1 && nb <= 2 && oa == na && ob == nb,
		      "%s: MPI's complaints: alone\n%s\nunder ddlprof\n%s",
		      abort_modes[k].mode, a.err, b.err);
		trun_free(&a);
		trun_free(&b);
	}
	trm(dir);
	free(dir);
	return DDL_PASS;
}

int test_mpi_hang(void)
{
	if (!mpi_ready())
		return DDL_SKIP;
	char *dir = tmpdir(), t[PATH_MAX], cmd[8192];
	snprintf(t, sizeof t, "%s/t", dir);
	/* mpirun (the launcher execs it: $!) starts the ranks as its children;
	 * rank 1 is the one whose environment says so. Every process ended by
	 * its id. */
	snprintf(cmd, sizeof cmd,
	         "'%s' -q -o '%s' -- '%s' --allow-run-as-root --oversubscribe -np 2 --mca btl tcp,self "
	         "--mca btl_tcp_if_include lo --mca oob_tcp_if_include lo '%s' -n 1000 -m 1 -c 20 -x 1 "
	         ">/dev/null 2>&1 & run=$!\n"
	         "sleep 2\n"
	         "ranks=$(pgrep -P $run)\n"
	         "one=\n"
	         "for p in $ranks; do tr '\\0' '\\n' < /proc/$p/environ | grep -qx OMPI_COMM_WORLD_RANK=1 "
	         "&& one=$p; done\n"
	         "[ -n \"$one\" ] || { kill -9 $ranks $run; echo no rank 1; exit 1; }\n"
	         "kill -STOP $one\n"
	         "sleep 3\n"
	         "kill -9 $ranks $run\n"
	         "wait $run\n"
	         "exit 0\n",
	         tbuild("bin/ddlprof"), t, mpi_mpirun(), tbuild("examples/mpi_allreduce"));
	char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 60, &r) == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "the stopped and killed job: %s %s", r.out, r.err);
	trun_free(&r);
	json_t *rep = treport(t, NULL);
	CHECK(rep, "no report");
	json_t *h = tjget(rep, "job.hang");
	const char *op = json_string_value(tjget(h, "collective.op"));
	long long seq = (long long)json_integer_value(tjget(h, "collective.seq"));
	json_t *missing = json_object_get(h, "missing_ranks");
	fprintf(stderr, "    hang: %s #%lld, missing %lld of %zu, blame rank %lld (%s)\n", op ? op : "none",
	        seq, (long long)json_integer_value(json_array_get(missing, 0)), json_array_size(missing),
	        (long long)json_integer_value(tjget(h, "blame.rank")),
	        json_string_value(tjget(h, "blame.why")) ? json_string_value(tjget(h, "blame.why")) : "?");
	/* (named by the call when an open call says it, else by its operation) */
	CHECK(op && (!strcmp(op, "MPI_Allreduce") || !strcmp(op, "allreduce")) && seq > 1,
	      "the hang: %s #%lld", op ? op : "none", seq);
	CHECK(json_array_size(missing) == 1 && json_integer_value(json_array_get(missing, 0)) == 1 &&
	          json_integer_value(tjget(h, "blame.rank")) == 1,
	      "missing %zu ranks, blame rank %lld", json_array_size(missing),
	      (long long)json_integer_value(tjget(h, "blame.rank")));
	size_t i;
	json_t *rk;
	int in = 0;
	json_array_foreach(json_object_get(h, "ranks"), i, rk) {
		const char *call = json_string_value(json_object_get(rk, "call"));
		/* at the stuck one or past it: the stopped rank's last records
		 * (a flush's worth) never reached its trace */
		if (json_integer_value(json_object_get(rk, "rank")) == 0)
			in = call && !strcmp(call, "MPI_Allreduce") &&
			     json_integer_value(tjget(rk, "collective.seq")) >= seq;
	}
	CHECK(in, "rank 0 not seen in an MPI_Allreduce from #%lld on", seq);
	json_decref(rep);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * Four ranks on loopback, rank 2 computing twice as long (-s 2): the
 * straggler, by its own compute, in the JSON, the text and the page; every
 * other rank waits on it most. The same job without a slow rank has none.
 */
int test_mpi_straggler(void)
{
	if (!mpi_ready())
		return DDL_SKIP;
	for (int k = 0; k < 2; k++) {
		char *dir = tmpdir(), t[PATH_MAX];
		snprintf(t, sizeof t, "%s/t", dir);
		char *slow[] = {"-n", "20", "-c", "20", "-m", "1", "-x", "1", "-s", "2", NULL};
		char *even[] = {"-n", "20", "-c", "20", "-m", "1", "-x", "1", NULL};
		struct ddl_run_result r;
		CHECK(mpi_run_loopback(t, 4, k ? even : slow, &r) == 0, "mpirun");
		trun_free(&r);
		json_t *rep = treport(t, NULL);
		CHECK(rep, "no report");
		json_t *st = tjget(rep, "job.stragglers");
		size_t i;
		json_t *rk;
		json_array_foreach(json_object_get(rep, "ranks"), i, rk) {
			long long rank = mpi_int(rk, "rank");
			if (rank < 0)
				continue;
			const char *kind = json_string_value(json_object_get(rk, "straggler_kind"));
			long long on = mpi_int(json_object_get(rk, "waits_on"), "rank");
			fprintf(stderr, "    %s: rank %lld: %s, waits most on rank %lld\n", k ? "even" : "slow rank 2", rank,
			        kind ? kind : "on time", on);
			if (!k && rank == 2) {
				const char *part = json_string_value(tjget(rk, "straggler_cause.part"));
				CHECK(kind && !strcmp(kind, "culprit") && part && !strcmp(part, "compute"), "rank 2: %s, %s",
				      kind ? kind : "on time", part ? part : "?");
			} else {
				CHECK(!kind, "rank %lld is %s", rank, kind);
				if (!k)
					CHECK(on == 2, "rank %lld waits most on rank %lld", rank, on);
			}
		}
		CHECK(json_array_size(st) == (size_t)(k ? 0 : 1) &&
		      (k || json_integer_value(json_array_get(st, 0)) == 2), "stragglers: %zu", json_array_size(st));
		json_decref(rep);
		if (!k) {
			char *const ta[] = {(char *)tbuild("bin/ddlprof-report"), t, NULL};
			char *const ha[] = {(char *)tbuild("bin/ddlprof-report"), "--html", t, NULL};
			struct ddl_run_result tr, hr;
			CHECK(trun(ta, NULL, 60, &tr) == 0 && strstr(tr.out, " rank 2: late to its collectives") &&
			      strstr(tr.out, "slow in its own compute"), "text: %s", tr.out);
			CHECK(trun(ha, NULL, 60, &hr) == 0 && strstr(hr.out, "<b>Straggler: "), "no straggler on the page");
			trun_free(&tr);
			trun_free(&hr);
		}
		trm(dir);
		free(dir);
	}
	return DDL_PASS;
}
