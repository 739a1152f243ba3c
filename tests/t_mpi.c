/*
 * An MPI job under ddlprof: Debian's Open MPI launching
 * examples/mpi_allreduce, its ranks talking over the TCP BTL, with
 * ddlprof as the outer launcher (`ddlprof -o DIR -- mpirun ...`). The
 * program says what each rank handed to MPI (a point-to-point payload each
 * way, and the all-reduce buffer times the steps); with two ranks Open
 * MPI's all-reduce algorithms each send a rank's whole buffer once per step
 * (recursive doubling all of it, the ring two halves), so the report's
 * socket bytes per rank must be that plus the BTL's and the runtime's own
 * messages (a fraction of a percent here: 2% and 256 KiB allowed).
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
 * Both skip without mpirun or without the example (built only where mpicc
 * is found); the second also where namespaces cannot be made.
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
 * point to point, markers on; as argv entries and as shell words. */
#define MPI_ARGS "-n", "10", "-m", "2", "-c", "5", "-x", "4", "-k"
#define MPI_ARGS_SH "-n 10 -m 2 -c 5 -x 4 -k"

/* What one rank says it handed to MPI. */
struct mpi_said {
	long long p2p_sent, p2p_received, allreduce;
	int seen;
};

static const char *mpi_mpirun(void)
{
	static const char *const where[] = {"/usr/bin/mpirun", "/usr/local/bin/mpirun"};
	for (size_t i = 0; i < sizeof where / sizeof where[0]; i++)
		if (access(where[i], X_OK) == 0)
			return where[i];
	return NULL;
}

/* mpirun and the example, or a line saying why not. */
static int mpi_ready(void)
{
	if (!mpi_mpirun()) {
		fprintf(stderr, "    needs Open MPI's mpirun (openmpi-bin): skipped\n");
		return 0;
	}
	if (access(tbuild("examples/mpi_allreduce"), X_OK) != 0) {
		fprintf(stderr, "    examples/mpi_allreduce not built (no mpicc): skipped\n");
		return 0;
	}
	return 1;
}

/* Reads the program's per-rank lines; 0 when both ranks spoke. */
static int mpi_parse(const char *out, struct mpi_said said[2])
{
	memset(said, 0, 2 * sizeof *said);
	for (const char *p = out; (p = strstr(p, "mpi_allreduce: rank ")); p++) {
		int r, n;
		long long s, rcv, ar;
		if (sscanf(p, "mpi_allreduce: rank %d of %d: p2p_sent %lld p2p_received %lld "
		              "allreduce_bytes %lld", &r, &n, &s, &rcv, &ar) == 5 && r >= 0 && r < 2) {
			said[r] = (struct mpi_said){s, rcv, ar, 1};
		}
	}
	return said[0].seen && said[1].seen ? 0 : -1;
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

int test_mpi_loopback(void)
{
	if (!mpi_ready())
		return DDL_SKIP;
	char *dir = tmpdir(), t[PATH_MAX];
	snprintf(t, sizeof t, "%s/t", dir);
	char *argv[] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", t, "--", (char *)mpi_mpirun(),
	                "--allow-run-as-root", "--oversubscribe", "-np", "2", "--mca", "btl", "tcp,self",
	                "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo",
	                (char *)tbuild("examples/mpi_allreduce"), MPI_ARGS, NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 60, &r) == 0, "mpirun did not finish in 60 s: %s", r.err);
	CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "mpirun: status %d: %s %s", r.status,
	      r.out, r.err);
	struct mpi_said said[2];
	CHECK(mpi_parse(r.out, said) == 0, "the ranks' lines: %s", r.out);
	trun_free(&r);
	json_t *rep = treport(t, NULL);
	CHECK(rep, "no report");
	json_t *job = json_object_get(rep, "job");
	CHECK(json_integer_value(json_object_get(job, "ranks")) == 2, "job.ranks %lld",
	      (long long)json_integer_value(json_object_get(job, "ranks")));
	const char *host[2] = {NULL, NULL};
	if (mpi_check_ranks(rep, said, 0, host) != DDL_PASS)
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

int test_mpi_two_hosts(void)
{
	if (!mpi_ready())
		return DDL_SKIP;
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
	char *dir = tmpdir(), agent[PATH_MAX], hosts[PATH_MAX], t[PATH_MAX], text[PATH_MAX + 512];
	snprintf(agent, sizeof agent, "%s/agent", dir);
	snprintf(hosts, sizeof hosts, "%s/hosts", dir);
	snprintf(t, sizeof t, "%s/t", dir);
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
	struct ddl_run_result r, d;
	trun(down, env, 30, &d);
	trun_free(&d);
	char *up[] = {script, "up", "2", NULL};
	CHECK(trun(up, env, 30, &r) == 0, "netns-hosts up");
	if (r.status != 0) {
		trun(down, env, 30, &d);
		trun_free(&d);
		fprintf(stderr, "    cannot make network namespaces: skipped (%s)\n", r.err);
		trun_free(&r);
		return DDL_SKIP;
	}
	trun_free(&r);

	snprintf(cmd, sizeof cmd,
	         "exec '%s' run 0 '%s' -q -o '%s' -- '%s' --allow-run-as-root --hostfile '%s' "
	         "--mca plm_rsh_agent '%s' -np 2 --map-by node --mca btl tcp,self "
	         "--mca btl_tcp_if_include 10.99.0.0/24 --mca oob_tcp_if_include 10.99.0.0/24 "
	         "-x LD_PRELOAD -x DDLPROF_DIR -x DDLPROF_RUN_ID '%s' %s",
	         script, tbuild("bin/ddlprof"), t, mpi_mpirun(), hosts, agent,
	         tbuild("examples/mpi_allreduce"), MPI_ARGS_SH);
	char *run[] = {"/bin/sh", "-c", cmd, NULL};
	int rc = trun(run, env, 90, &r);
	long long tx[2], rx[2];
	char hname[2][64];
	for (int h = 0; h < 2; h++) {
		char ns[64], dev[64];
		snprintf(ns, sizeof ns, "%s-h%d", prefix, h);
		snprintf(dev, sizeof dev, "%s%d", prefix, h);
		snprintf(hname[h], sizeof hname[h], "%s-h%d", prefix, h);
		tx[h] = mpi_counter(ns, dev, "tx_bytes");
		rx[h] = mpi_counter(ns, dev, "rx_bytes");
	}
	trun(down, env, 30, &d);
	trun_free(&d);
	CHECK(rc == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "mpirun: %s %s", r.out,
	      r.err);
	struct mpi_said said[2];
	CHECK(mpi_parse(r.out, said) == 0, "the ranks' lines: %s", r.out);
	trun_free(&r);

	json_t *rep = treport(t, NULL);
	CHECK(rep, "no report");
	json_t *job = json_object_get(rep, "job");
	CHECK(json_integer_value(json_object_get(job, "hosts")) == 2 &&
	              json_integer_value(json_object_get(job, "ranks")) == 2,
	      "hosts %lld, ranks %lld", (long long)json_integer_value(json_object_get(job, "hosts")),
	      (long long)json_integer_value(json_object_get(job, "ranks")));
	const char *host[2] = {NULL, NULL};
	if (mpi_check_ranks(rep, said, 1, host) != DDL_PASS)
		return DDL_FAIL;
	CHECK(host[0] && host[1] && !strcmp(host[0], hname[0]) && !strcmp(host[1], hname[1]),
	      "rank 0 on %s, rank 1 on %s", host[0] ? host[0] : "?", host[1] ? host[1] : "?");
	/* Every process of a host (mpirun and orted too) against its interface. */
	for (int h = 0; h < 2; h++) {
		long long sent = 0, recv = 0;
		size_t i;
		json_t *p;
		json_array_foreach(json_object_get(rep, "processes"), i, p) {
			const char *ph = json_string_value(json_object_get(p, "host"));
			if (!ph || strcmp(ph, hname[h]))
				continue;
			json_t *net = json_object_get(p, "network");
			sent += json_integer_value(json_object_get(net, "bytes_sent_remote"));
			recv += json_integer_value(json_object_get(net, "bytes_received_remote"));
		}
		fprintf(stderr, "    %s: remote sent %lld (interface tx %lld), received %lld (rx %lld)\n",
		        hname[h], sent, tx[h], recv, rx[h]);
		CHECK(tx[h] >= sent && tx[h] <= sent + sent / 10 + 262144, "%s: sent %lld, interface tx %lld",
		      hname[h], sent, tx[h]);
		CHECK(rx[h] >= recv && rx[h] <= recv + recv / 10 + 262144,
		      "%s: received %lld, interface rx %lld", hname[h], recv, rx[h]);
	}
	json_decref(rep);
	trm(dir);
	free(dir);
	return DDL_PASS;
}
