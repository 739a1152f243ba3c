/*
 * Network sensitivity, predicted against measured: a job profiled as it
 * is and again under ddlprof --perturb-net rate=R, and ddlprof-report's
 * job.sensitivity.measured comparing the slowdown the model predicts at R
 * from the first run with the slowdown the second measured. The model is
 * that of analyzer/breakdown.c; the runs are tcpring (compute, then a
 * ring all-reduce over TCP) and, where the emulation runs, ddlsynth's
 * DDP-like job on two emulated hosts. The tolerance, 25%, is what these
 * runs need on a loaded two-core machine: errors measured while writing
 * them were +7% and -2% (tcpring, 80 Mbit/s) and -14% (ddlsynth,
 * 400 Mbit/s). The baseline report also drives ddlprof-sim as a profile.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define DDL_SENS_TOLERANCE 0.25

static double ddl_sens_num(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/*
 * Profiles ARGS (the program and its arguments) into DIR/NAME, under
 * --perturb-net PERTURB when not NULL; one retry, since a ring that lost
 * a port to a concurrent job hangs until its time limit. 0 or -1.
 */
static int ddl_sens_profile(const char *dir, const char *name, const char *perturb,
                            char *const args[], char *out, size_t n)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		snprintf(out, n, "%s/%s%d", dir, name, attempt);
		char *argv[48] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", out};
		int k = 4;
		if (perturb) {
			argv[k++] = "--perturb-net";
			argv[k++] = (char *)perturb;
		}
		argv[k++] = "--";
		for (int i = 0; args[i] && k < 47; i++)
			argv[k++] = args[i];
		argv[k] = NULL;
		struct ddl_run_result r;
		int ok = trun(argv, NULL, 90, &r) == 0 && tstatus(&r) == 0;
		if (!ok)
			fprintf(stderr, "    %s (%s): status %d: %.300s\n", name, perturb ? perturb : "as it is",
			        tstatus(&r), r.err);
		trun_free(&r);
		if (ok)
			return 0;
	}
	return -1;
}

/* ddlprof-report ARGS (NULL-terminated); the JSON of --json runs, or NULL. */
static json_t *ddl_sens_report(char *const args[], struct ddl_run_result *r)
{
	char *argv[16] = {(char *)tbuild("bin/ddlprof-report")};
	int n = 1;
	for (int i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	if (trun(argv, NULL, 60, r) < 0)
		return NULL;
	return json_loads(r->out, 0, NULL);
}

static json_t *ddl_sens_measured(json_t *rep)
{
	return json_object_get(json_object_get(json_object_get(rep, "job"), "sensitivity"), "measured");
}

/* The measured object's figures are consistent with each other and within the tolerance. */
static int ddl_sens_check(json_t *m, double bps, const char *what)
{
	double t = ddl_sens_num(m, "iteration_s"), base = ddl_sens_num(m, "baseline_iteration_s");
	double sd = ddl_sens_num(m, "slowdown"), psd = ddl_sens_num(m, "predicted_slowdown");
	double err = ddl_sens_num(m, "error"), pred = ddl_sens_num(m, "predicted_iteration_s");
	fprintf(stderr, "    %s: iteration %.1f ms against %.1f ms: slowdown x%.2f measured, x%.2f "
	        "predicted, error %+.1f%%\n", what, t * 1e3, base * 1e3, sd, psd, 100 * err);
	CHECK(json_is_object(m), "%s: no job.sensitivity.measured", what);
	CHECK(ddl_sens_num(m, "bandwidth_bps") == bps, "%s: bandwidth_bps %g", what,
	      ddl_sens_num(m, "bandwidth_bps"));
	CHECK(!strcmp(json_string_value(json_object_get(m, "predicted_from")), "baseline") &&
	      json_is_string(json_object_get(m, "baseline_run")), "%s: predicted_from, baseline_run", what);
	CHECK(fabs(sd - t / base) < 1e-6 * sd && fabs(psd - pred / base) < 1e-6 * psd &&
	      fabs(err - (psd / sd - 1)) < 1e-6, "%s: inconsistent figures", what);
	CHECK(sd > 1.5, "%s: measured slowdown x%.2f: the perturbation did not bite", what, sd);
	CHECK(fabs(err) <= DDL_SENS_TOLERANCE, "%s: predicted x%.3f against measured x%.3f: error %.1f%% "
	      "beyond %.0f%%", what, psd, sd, 100 * err, 100 * DDL_SENS_TOLERANCE);
	return DDL_PASS;
}

/*
 * tcpring: 16 steps of 10 ms of compute and a ring all-reduce of 1 MiB
 * over 4 ranks (1.5 MiB sent a rank a step), as it is and at 80 Mbit/s
 * (+157 ms a step). The report of the perturbed run with --baseline, or
 * given both directories in either order, shows the same comparison; by
 * itself it predicts from its own inputs; a delay= run is predicted from
 * the baseline's sends (and measured only by itself);
 * a --baseline that is not a baseline is refused. The baseline's report
 * then serves as a ddlprof-sim profile.
 */
int test_sens_tcpring(void)
{
	char *dir = tmpdir(), base[PATH_MAX], slow[PATH_MAX], delay[PATH_MAX], port[16];
	snprintf(port, sizeof port, "%d", tfreeports(16));
	char *ring[] = {(char *)tbuild("examples/tcpring"), "-k", "-n", "16", "-m", "1", "-c", "10", "-p", port, NULL};
	CHECK(ddl_sens_profile(dir, "base", NULL, ring, base, sizeof base) == 0, "baseline run");
	CHECK(ddl_sens_profile(dir, "slow", "rate=80mbit", ring, slow, sizeof slow) == 0, "perturbed run");
	struct ddl_run_result r;

	char *with[] = {"--json", "--baseline", base, slow, NULL};
	json_t *rep = ddl_sens_report(with, &r);
	CHECK(rep && tstatus(&r) == 0, "--baseline: status %d: %s", tstatus(&r), r.err);
	trun_free(&r);
	json_t *m = ddl_sens_measured(rep);
	if (ddl_sens_check(m, 80e6, "tcpring at 80 Mbit/s") != DDL_PASS)
		return DDL_FAIL;
	CHECK(!strcmp(json_string_value(json_object_get(m, "perturbation")), "rate=80mbit"), "perturbation");
	double err = ddl_sens_num(m, "error");
	const char *brun = json_string_value(json_object_get(m, "baseline_run"));
	char run[128];
	snprintf(run, sizeof run, "%s", brun);
	json_decref(rep);

	/* two directories, either order: the perturbed run against the other */
	for (int order = 0; order < 2; order++) {
		char *two[] = {"--json", order ? slow : base, order ? base : slow, NULL};
		rep = ddl_sens_report(two, &r);
		CHECK(rep && tstatus(&r) == 0, "two directories: status %d: %s", tstatus(&r), r.err);
		trun_free(&r);
		m = ddl_sens_measured(rep);
		CHECK(json_is_object(m) && ddl_sens_num(m, "error") == err &&
		      !strcmp(json_string_value(json_object_get(m, "baseline_run")), run),
		      "two directories (order %d): not the --baseline comparison", order);
		json_decref(rep);
	}

	/* the text: one line */
	char *text[] = {"--baseline", base, slow, NULL};
	rep = ddl_sens_report(text, &r);
	CHECK(tstatus(&r) == 0, "text: status %d", tstatus(&r));
	const char *line = strstr(r.out, "  under --perturb-net rate=80mbit (80 Mbit/s): iteration ");
	CHECK(line && strstr(line, "predicted from the baseline; slowdown x") && strstr(line, "; error ") &&
	      strchr(line, '\n') && !strstr(strchr(line, '\n'), "under --perturb-net"), "text: %s", r.out);
	trun_free(&r);

	/* by itself: its own inputs, no slowdown */
	char *alone[] = {"--json", slow, NULL};
	rep = ddl_sens_report(alone, &r);
	trun_free(&r);
	m = ddl_sens_measured(rep);
	CHECK(json_is_object(m) && !strcmp(json_string_value(json_object_get(m, "predicted_from")), "run") &&
	      json_is_null(json_object_get(m, "slowdown")) &&
	      json_is_null(json_object_get(m, "baseline_iteration_s")) &&
	      fabs(ddl_sens_num(m, "error")) <= DDL_SENS_TOLERANCE, "perturbed run alone");
	fprintf(stderr, "    from the perturbed run alone: error %+.1f%%\n", 100 * ddl_sens_num(m, "error"));
	json_decref(rep);

	/* an unperturbed run has no measured object */
	char *plain[] = {"--json", base, NULL};
	rep = ddl_sens_report(plain, &r);
	trun_free(&r);
	CHECK(rep && json_is_object(json_object_get(json_object_get(rep, "job"), "sensitivity")) &&
	      !ddl_sens_measured(rep), "the baseline's own report");
	char prof[PATH_MAX];
	snprintf(prof, sizeof prof, "%s/tcpring.json", dir);
	CHECK(json_dump_file(rep, prof, 0) == 0, "write %s", prof);
	double rack = ddl_sens_num(json_object_get(json_object_get(json_object_get(rep, "job"), "sensitivity"),
	                                           "slowdown"), "rack");
	json_decref(rep);

	/* delay=: predicted from the baseline as T0 + n D, n the sends of a
	 * rank's busiest sending thread an iteration (the ring's 6 steps, each
	 * one send call or more), so 5 ms a send adds 30 ms or more to a step
	 * of 11 ms (more on a loaded machine): measured and predicted both,
	 * within the tolerance. The model overpredicts where the baseline's
	 * communication was slow for want of CPU, since a sleeping send gives
	 * the CPU away: +17% at 2 ms a send on a loaded two-core machine, when
	 * the baseline step took 27 ms. By itself the delayed run is measured
	 * only. */
	char *ring8[] = {(char *)tbuild("examples/tcpring"), "-k", "-n", "8", "-m", "1", "-c", "10", "-p", port, NULL};
	CHECK(ddl_sens_profile(dir, "delay", "delay=5000", ring8, delay, sizeof delay) == 0, "delay run");
	char *d[] = {"--json", "--baseline", base, delay, NULL};
	rep = ddl_sens_report(d, &r);
	trun_free(&r);
	m = ddl_sens_measured(rep);
	double dsd = ddl_sens_num(m, "slowdown"), dpsd = ddl_sens_num(m, "predicted_slowdown");
	double derr = ddl_sens_num(m, "error");
	CHECK(json_is_object(m) && json_is_null(json_object_get(m, "bandwidth_bps")) &&
	      !strcmp(json_string_value(json_object_get(m, "predicted_from")), "baseline") &&
	      dsd > 1.3 && dpsd > 1.3 && fabs(derr - (dpsd / dsd - 1)) < 1e-6,
	      "delay=5000: %s", json_dumps(m, 0));
	CHECK(fabs(derr) <= DDL_SENS_TOLERANCE, "delay=5000: predicted x%.3f against measured x%.3f: "
	      "error %.1f%% beyond %.0f%%", dpsd, dsd, 100 * derr, 100 * DDL_SENS_TOLERANCE);
	fprintf(stderr, "    delay=5000: predicted x%.2f, measured x%.2f, error %+.1f%%\n", dpsd, dsd,
	        100 * derr);
	json_decref(rep);
	char *dalone[] = {"--json", delay, NULL};
	rep = ddl_sens_report(dalone, &r);
	trun_free(&r);
	m = ddl_sens_measured(rep);
	CHECK(json_is_object(m) && json_is_null(json_object_get(m, "predicted_iteration_s")) &&
	      json_is_null(json_object_get(m, "error")), "delay run alone: %s", json_dumps(m, 0));
	json_decref(rep);

	/* --baseline that is not one */
	struct {
		char *args[6];
		const char *says;
	} bad[] = {
		{{"--baseline", slow, base, NULL}, "was not made under ddlprof --perturb-net"},
		{{"--baseline", slow, delay, NULL}, "no run without --perturb-net there"},
		{{"--baseline", "/no/such/dir", slow, NULL}, "--baseline: /no/such/dir"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		rep = ddl_sens_report(bad[i].args, &r);
		CHECK(tstatus(&r) == 1 && strstr(r.err, bad[i].says), "case %zu: status %d: %s", i,
		      tstatus(&r), r.err);
		trun_free(&r);
		json_decref(rep);
	}

	/* The baseline's report as a ddlprof-sim profile: on 1x2x4 under fifo, x
	 * and y leave one GPU on each machine, so ring spans the rack and runs
	 * at 1 / slowdown.rack of its speed: 200 s of work end at 200 x rack. */
	char trace[PATH_MAX], jobs[PATH_MAX];
	snprintf(trace, sizeof trace, "%s/trace.csv", dir);
	snprintf(jobs, sizeof jobs, "%s/jobs.csv", dir);
	FILE *f = fopen(trace, "w");
	CHECK(f, "write %s", trace);
	fprintf(f, "id,arrival_s,gpus,duration_s,model,profile\nx,0,3,50,resnet50,\ny,0,3,1000,resnet50,\n"
	        "ring,0,2,200,,tcpring.json\n");
	fclose(f);
	char *sim[] = {(char *)tbuild("bin/ddlprof-sim"), "--trace", trace, "--cluster", "1x2x4", "--jobs-out", jobs,
	               NULL};
	CHECK(trun(sim, NULL, 30, &r) == 0 && tstatus(&r) == 0, "ddlprof-sim: %s", r.err);
	trun_free(&r);
	char buf[1024] = "";
	double finish = 0;
	CHECK((f = fopen(jobs, "r")), "read %s", jobs);
	while (fgets(buf, sizeof buf, f) && strncmp(buf, "ring,", 5))
		;
	fclose(f);
	CHECK(sscanf(buf, "ring,default,2,%*f,%*f,%lf", &finish) == 1 && strstr(buf, ",rack,") &&
	      fabs(finish - 200 * rack) < 2e-3 && strstr(buf, ",profile\n"),
	      "job record (slowdown.rack %.6f): %s", rack, buf);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * ddlsynth on the CPU emulation: 4 ranks on 2 emulated hosts, 4 layers of
 * 1M gradients (16 MB all-reduced a step, 24 MB sent a rank by the ring),
 * no overlap, its network at 10 Gbit/s; then every send of every process
 * held to 400 Mbit/s (about +480 ms a step). Skipped where the emulation
 * is not built or cannot run.
 */
int test_sens_synth(void)
{
	if (access(tbuild("examples/ddlsynth"), X_OK)) {
		fprintf(stderr, "    ddlsynth on the emulation not built here\n");
		return DDL_SKIP;
	}
	char *dir = tmpdir(), base[PATH_MAX], slow[PATH_MAX];
	char *synth[] = {(char *)tbuild("examples/ddlsynth"), "-q", "--ranks", "4", "--ranks-per-host", "2",
	                 "--layers", "4", "--params-per-layer", "1M", "--compute-ms", "5", "--bucket-mb", "1",
	                 "--overlap", "off", "--iterations", "12", "--warmup", "3", "--markers",
	                 "--intra-gbps", "4", "--net-gbps", "10", NULL};
	if (ddl_sens_profile(dir, "base", NULL, synth, base, sizeof base) < 0) {
		trm(dir);
		free(dir);
		return DDL_SKIP; /* the emulation cannot run here */
	}
	/* the paced sends' own sleeps overshoot now and then on a loaded VM (one
	 * run read x8.5 where the others read x6.5): once more on a miss */
	int rc = DDL_FAIL;
	for (int k = 0; k < 2 && rc != DDL_PASS; k++) {
		if (k)
			fprintf(stderr, "    again\n");
		CHECK(ddl_sens_profile(dir, k ? "slow2" : "slow", "rate=400mbit", synth, slow, sizeof slow) == 0,
		      "perturbed run");
		struct ddl_run_result r;
		char *with[] = {"--json", "--baseline", base, slow, NULL};
		json_t *rep = ddl_sens_report(with, &r);
		CHECK(rep && tstatus(&r) == 0, "--baseline: status %d: %s", tstatus(&r), r.err);
		trun_free(&r);
		rc = ddl_sens_check(ddl_sens_measured(rep), 400e6, "ddlsynth at 400 Mbit/s");
		json_decref(rep);
	}
	trm(dir);
	free(dir);
	return rc;
}
