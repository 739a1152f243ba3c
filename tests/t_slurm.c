/*
 * A real Slurm (issue 15, item 6): scripts/slurm-local.sh starts munged,
 * slurmctld and three slurmd on this machine (nodes n0 and n1 under leaf
 * switch s0, n2 under s1), and the test
 *
 *   - runs `srun -N 2 -n 4 ddlprof -o DIR -- tcpring` (tcpring takes its
 *     rank from SLURM_PROCID and SLURM_NTASKS, as a training script does):
 *     one run named by Slurm's job id, four ranks placed as Slurm placed
 *     them (each task names its host by its node, DDLPROF_HOST: the nodes
 *     share this machine), iterations against tcpring's own step timer;
 *   - submits with sbatch the options ddlprof-recommend --slurm prints for
 *     that profile (--nodes, --ntasks-per-node, --gres, --switches) and
 *     checks that Slurm ran the job with them: completed, the switch count
 *     and wait Slurm shows are the ones asked for, its two nodes under one
 *     leaf switch, its tasks placed as asked.
 *
 * Skips, saying why, where the daemons cannot be had (not root, Debian's
 * slurmctld, slurmd, slurm-client or munge not installed, or they do not
 * come up), and under the sanitizers (the plain build runs it).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

/* sh -c CMD with SLURM_CONF=CONF; its result in R (free with trun_free). */
static int sl_sh(const char *conf, const char *cmd, int timeout_s, struct ddl_run_result *r)
{
	char env[PATH_MAX + 16];
	snprintf(env, sizeof env, "SLURM_CONF=%s", conf);
	char *e[] = {env, NULL};
	char *argv[] = {"/bin/sh", "-c", (char *)cmd, NULL};
	return trun(argv, e, timeout_s, r);
}

/* The value of KEY= in scontrol's TEXT, up to the next blank, into OUT. */
static const char *sl_field(const char *text, const char *key, char *out, size_t cap)
{
	char k[64];
	snprintf(k, sizeof k, " %s=", key);
	const char *p = strstr(text, k);
	size_t n = 0;
	if (p)
		for (p += strlen(k); *p && *p != ' ' && *p != '\n' && n + 1 < cap; p++)
			out[n++] = *p;
	out[n] = 0;
	return out;
}

static int sl_body(const char *dir, const char *conf)
{
	char t[PATH_MAX], cmd[4 * PATH_MAX];
	struct ddl_run_result r;
	snprintf(t, sizeof t, "%s/t", dir);
	int port = tfreeports(4);
	const int steps = 12;
	snprintf(cmd, sizeof cmd,
	         "cd '%s' && exec srun -N 2 -n 4 --ntasks-per-node=2 sh -c 'echo task $SLURM_PROCID "
	         "$SLURMD_NODENAME $SLURM_JOB_ID; DDLPROF_HOST=$SLURMD_NODENAME exec %s -q -o %s -- %s "
	         "-p %d -n %d -m 4 -c 10 -w 5'",
	         dir, tbuild("bin/ddlprof"), t, tbuild("examples/tcpring"), port, steps);
	CHECK(sl_sh(conf, cmd, 120, &r) == 0 && tstatus(&r) == 0, "srun: status %d\n%s%s", tstatus(&r),
	      r.out, r.err);
	/* where Slurm put each task, as the tasks said */
	char node[4][16] = {{0}};
	long job = -1;
	for (const char *p = r.out; (p = strstr(p, "task ")); p++) {
		int rank;
		long id;
		char n[16];
		if (sscanf(p, "task %d %15s %ld", &rank, n, &id) == 3 && rank >= 0 && rank < 4) {
			snprintf(node[rank], sizeof node[rank], "%s", n);
			job = id;
		}
	}
	/* tcpring's own mean of the steps after the report's warm-up of 5:
	 * its whole run's is longer, by the first steps' fresh pages and the
	 * wait for the ranks' start (up to 13% on this 2-core VM) */
	const char *at = strstr(r.out, "after the first 5: ");
	double own_ms = at ? strtod(at + strlen("after the first 5: "), NULL) : NAN;
	CHECK(job > 0 && *node[0] && *node[1] && *node[2] && *node[3] && own_ms > 0,
	      "the tasks did not say where they ran: %s", r.out);
	trun_free(&r);

	json_t *rep = treport(t, NULL);
	CHECK(rep, "no report of %s", t);
	char want[64];
	snprintf(want, sizeof want, "slurm-%ld", job);
	const char *id = json_string_value(json_object_get(rep, "run_id"));
	CHECK(id && !strcmp(id, want), "run id %s, not Slurm's job %s", id ? id : "(none)", want);
	CHECK(json_array_size(json_object_get(rep, "other_runs")) == 0, "the four tasks split into runs");
	CHECK(json_integer_value(json_object_get(json_object_get(rep, "job"), "ranks")) == 4,
	      "the job has %lld ranks, not 4",
	      (long long)json_integer_value(json_object_get(json_object_get(rep, "job"), "ranks")));
	double mean0 = NAN;
	for (int k = 0; k < 4; k++) {
		json_t *rk = trank_of(rep, k);
		CHECK(rk, "no rank %d", k);
		const char *host = json_string_value(json_object_get(rk, "host"));
		long n = (long)json_integer_value(json_object_get(rk, "iterations"));
		double mean = json_real_value(json_object_get(rk, "iteration_mean_s")) * 1e3;
		if (k == 0)
			mean0 = mean;
		fprintf(stderr, "    rank %d on %s (Slurm: %s): %ld iterations, mean %.2f ms (tcpring: %.2f)\n",
		        k, host ? host : "?", node[k], n, mean, own_ms);
		CHECK(host && !strcmp(host, node[k]), "rank %d on %s, Slurm ran it on %s", k, host ? host : "?",
		      node[k]);
		CHECK(labs(n - (steps - 5)) <= 1, "rank %d: %ld iterations after the warm-up of %d steps", k, n,
		      steps);
		/* tcpring times its steps after the warm-up on rank 0: within a
		 * tenth of that, and the ranks together */
		CHECK(fabs(mean - own_ms) <= 0.1 * own_ms && fabs(mean - mean0) <= 0.1 * mean0,
		      "rank %d: mean %.2f ms, tcpring's %.2f ms, rank 0 %.2f ms", k, mean, own_ms, mean0);
	}
	json_decref(rep);

	/* the options ddlprof-recommend --slurm prints, as sbatch reads them */
	char *rec[] = {(char *)tbuild("bin/ddlprof-recommend"), "--profile", t, "--slurm", "--json", NULL};
	CHECK(trun(rec, NULL, 60, &r) == 0 && tstatus(&r) == 0, "recommend --slurm: %s", r.err);
	json_t *j = json_loads(r.out, 0, NULL);
	trun_free(&r);
	json_t *sl = json_object_get(j, "slurm"), *opts = json_object_get(sl, "sbatch");
	CHECK(json_array_size(opts) >= 4, "recommend --slurm: %zu options", json_array_size(opts));
	char script[PATH_MAX], out[PATH_MAX];
	snprintf(script, sizeof script, "%s/job.sh", dir);
	snprintf(out, sizeof out, "%s/job.out", dir);
	FILE *f = fopen(script, "w");
	CHECK(f, "cannot write %s", script);
	fprintf(f, "#!/bin/sh\n");
	int have_switches = 0;
	for (size_t i = 0; i < json_array_size(opts); i++) {
		const char *o = json_string_value(json_array_get(opts, i));
		fprintf(f, "#SBATCH %s\n", o);
		have_switches |= !strncmp(o, "--switches=", 11);
	}
	fprintf(f, "srun sh -c 'echo task $SLURM_PROCID $SLURMD_NODENAME'\n");
	fclose(f);
	long nodes = (long)json_integer_value(json_object_get(sl, "nodes"));
	long per = (long)json_integer_value(json_object_get(sl, "ntasks_per_node"));
	long swn = (long)json_integer_value(json_object_get(sl, "switches"));
	long wait_s = (long)json_number_value(json_object_get(sl, "max_wait_s"));
	fprintf(stderr, "    recommend --slurm: --nodes=%ld --ntasks-per-node=%ld --switches=%ld, wait %ld s\n",
	        nodes, per, swn, wait_s);
	CHECK(have_switches && nodes == 2 && per == 2 && swn == 1 && wait_s > 0,
	      "recommend --slurm for the two-node job: %zu options, nodes %ld, switches %ld", json_array_size(opts),
	      nodes, swn);
	json_decref(j);
	snprintf(cmd, sizeof cmd, "cd '%s' && sbatch --parsable --wait -o '%s' '%s'", dir, out, script);
	CHECK(sl_sh(conf, cmd, 120, &r) == 0 && tstatus(&r) == 0, "sbatch refused or failed: %d %s%s",
	      tstatus(&r), r.out, r.err);
	long sjob = strtol(r.out, NULL, 10);
	trun_free(&r);
	snprintf(cmd, sizeof cmd, "scontrol show job %ld", sjob);
	CHECK(sl_sh(conf, cmd, 30, &r) == 0 && tstatus(&r) == 0, "scontrol show job %ld: %s", sjob, r.err);
	char state[64], sw[64], nl[64], nn[16], wantsw[64];
	sl_field(r.out, "JobState", state, sizeof state);
	sl_field(r.out, "Switches", sw, sizeof sw);
	sl_field(r.out, "NodeList", nl, sizeof nl);
	sl_field(r.out, "NumNodes", nn, sizeof nn);
	snprintf(wantsw, sizeof wantsw, "%ld@%02ld:%02ld:%02ld", swn, wait_s / 3600, wait_s / 60 % 60, wait_s % 60);
	fprintf(stderr, "    sbatch job %ld: JobState=%s Switches=%s NumNodes=%s NodeList=%s\n", sjob, state, sw,
	        nn, nl);
	/* n0 and n1 are the leaf switch with two nodes */
	CHECK(!strcmp(state, "COMPLETED") && !strcmp(sw, wantsw) && !strcmp(nn, "2") && !strcmp(nl, "n[0-1]"),
	      "Slurm ran job %ld otherwise: JobState=%s Switches=%s (asked %s) NumNodes=%s NodeList=%s", sjob,
	      state, sw, wantsw, nn, nl);
	trun_free(&r);
	char text[4096] = "";
	f = fopen(out, "r");
	size_t got = f ? fread(text, 1, sizeof text - 1, f) : 0;
	text[got] = 0;
	if (f)
		fclose(f);
	int tasks = 0, on_n0 = 0;
	for (const char *p = text; (p = strstr(p, "task ")); p++) {
		tasks++;
		on_n0 += !strncmp(strchr(p + 5, ' ') ? strchr(p + 5, ' ') + 1 : "", "n0", 2);
	}
	CHECK(tasks == nodes * per && on_n0 == per, "the job's %s: %d tasks, %d on n0 (%ld and %ld asked):\n%s",
	      out, tasks, on_n0, nodes * per, per, text);
	return DDL_PASS;
}

int test_slurm_real(void)
{
#if defined(__SANITIZE_ADDRESS__)
	printf("    skipped: Slurm's own programs run the same way in the plain build\n");
	return DDL_SKIP;
#endif
	if (geteuid() != 0) {
		fprintf(stderr, "    needs root (slurmd runs jobs as their users): skipped\n");
		return DDL_SKIP;
	}
	char *dir = tmpdir(), sl[PATH_MAX];
	snprintf(sl, sizeof sl, "%s/slurm", dir);
	char *up[] = {"/bin/sh", (char *)tbuild("../scripts/slurm-local.sh"), "up", sl, "4", NULL};
	struct ddl_run_result r;
	char *down[] = {"/bin/sh", (char *)tbuild("../scripts/slurm-local.sh"), "down", sl, NULL};
	if (trun(up, NULL, 90, &r) != 0) { /* timed out: what it started is stopped all the same */
		fprintf(stderr, "    slurm-local.sh up did not finish: %s\n", r.err);
		trun_free(&r);
		if (trun(down, NULL, 60, &r) == 0)
			trun_free(&r);
		return DDL_FAIL;
	}
	int st = tstatus(&r);
	if (st == 2) {
		fprintf(stderr, "    %.*s: skipped\n", (int)strcspn(r.err, "\n"), r.err);
		trun_free(&r);
		trm(dir);
		free(dir);
		return DDL_SKIP;
	}
	char conf[PATH_MAX];
	snprintf(conf, sizeof conf, "%.*s", (int)strcspn(r.out, "\n"), r.out);
	int ok = st == 0 && *conf;
	if (!ok)
		fprintf(stderr, "    slurm-local.sh up: status %d: %s\n", st, r.err);
	trun_free(&r);
	int rc = ok ? sl_body(dir, conf) : DDL_FAIL;
	if (trun(down, NULL, 60, &r) != 0 || tstatus(&r) != 0) {
		fprintf(stderr, "    slurm-local.sh down: %s\n", r.err);
		rc = DDL_FAIL;
	}
	trun_free(&r);
	trm(dir);
	free(dir);
	return rc;
}
