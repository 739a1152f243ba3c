/*
 * The synthetic trace generator behind ddlprof-sim --generate: N jobs in
 * our CSV format (load_csv.c), for benchmarks and tests. GPU demand is
 * mostly small (1: 50%, 2: 15%, 4: 15%, 8: 14%, 16: 4%, 32: 2%, capped at
 * the cluster), run times log-uniform between one minute and ten hours,
 * models drawn from the table's common names, and Poisson arrivals paced
 * so the offered GPU time is LOAD of the cluster's. A fixed-seed
 * splitmix64 makes the same seed give the same bytes everywhere.
 *
 * With PHILLY set the same jobs come out as a Philly cluster_job_log
 * (load_philly.c): one record a line, submitted from 2017-10-01 00:00:00
 * UTC at whole seconds, one attempt that starts on submission and lists the
 * job's GPUs over as few machines of GPM GPUs as hold them, status Pass,
 * and our optional model field; before every tenth job comes one more
 * that never ran (status Killed, no attempts), as the real log has them.
 */
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "sim.h"

static uint64_t ddl_sim_rand(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static double ddl_sim_unit(uint64_t *x)
{
	return ((double)(ddl_sim_rand(x) >> 11) + 0.5) / 9007199254740992.0;
}

/* "YYYY-MM-DD HH:MM:SS" of T seconds after 2017-10-01 00:00:00 UTC. */
static void ddl_sim_gen_date(char *buf, size_t n, double t)
{
	time_t at = (time_t)1506816000 + (time_t)t;
	struct tm tm;
	gmtime_r(&at, &tm);
	strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
}

/* Job I as a Philly record: G GPUs on machines of GPM, submitted at T, D s. */
static void ddl_sim_gen_philly(FILE *f, long i, long n, int g, int gpm, double t, double d,
                               const char *model)
{
	char sub[32], end[32];
	ddl_sim_gen_date(sub, sizeof sub, floor(t));
	if (i % 10 == 9)
		fprintf(f, "{\"status\": \"Killed\", \"vc\": \"vc%ld\", \"jobid\": \"k%ld\", "
		           "\"user\": \"u%ld\", \"submitted_time\": \"%s\", \"attempts\": []},\n",
		        i % 7, i, i % 97, sub);
	ddl_sim_gen_date(end, sizeof end, floor(t) + d);
	fprintf(f, "{\"status\": \"Pass\", \"vc\": \"vc%ld\", \"jobid\": \"j%ld\", \"user\": \"u%ld\", "
	           "\"submitted_time\": \"%s\", \"model\": \"%s\", \"attempts\": [{\"start_time\": "
	           "\"%s\", \"end_time\": \"%s\", \"detail\": [",
	        i % 7, i, i % 97, sub, model, sub, end);
	for (int m = 0, left = g; left > 0; m++) {
		int k = left < gpm ? left : gpm;
		fprintf(f, "%s{\"ip\": \"m%ld\", \"gpus\": [", m ? ", " : "", (i + m) % 4096);
		for (int x = 0; x < k; x++)
			fprintf(f, "%s\"gpu%d\"", x ? ", " : "", x);
		fprintf(f, "]}");
		left -= k;
	}
	fprintf(f, "]}]}%s\n", i + 1 < n ? "," : "");
}

int ddl_sim_generate(FILE *f, long n, uint64_t seed, int gpus, int gpm, double load, int philly)
{
	static const char *const models[] = {"resnet50", "vgg16", "inception3", "bert", "gpt2",
	                                     "transformer", "lstm", "alexnet", "googlenet", "resnet101"};
	static const struct {
		int gpus;
		double p;
	} demand[] = {{1, .50}, {2, .15}, {4, .15}, {8, .14}, {16, .04}, {32, .02}};
	int *g = malloc(sizeof *g * (size_t)(n + 1));
	double *d = malloc(sizeof *d * (size_t)(n + 1));
	int *mi = malloc(sizeof *mi * (size_t)(n + 1));
	if (!g || !d || !mi) {
		free(g);
		free(d);
		free(mi);
		return -1;
	}
	uint64_t x = seed;
	double gpu_s = 0;
	for (long i = 0; i < n; i++) {
		double u = ddl_sim_unit(&x), acc = 0;
		g[i] = 1;
		for (size_t k = 0; k < sizeof demand / sizeof demand[0]; k++) {
			acc += demand[k].p;
			g[i] = demand[k].gpus;
			if (u < acc)
				break;
		}
		if (g[i] > gpus)
			g[i] = gpus;
		d[i] = round(exp(log(60) + ddl_sim_unit(&x) * (log(36000) - log(60))));
		mi[i] = (int)(ddl_sim_rand(&x) % (sizeof models / sizeof models[0]));
		gpu_s += g[i] * d[i];
	}
	double gap = n ? gpu_s / (load * gpus) / (double)n : 0, t = 0;
	fprintf(f, philly ? "[\n" : "id,arrival_s,gpus,duration_s,model\n");
	for (long i = 0; i < n; i++) {
		if (philly)
			ddl_sim_gen_philly(f, i, n, g[i], gpm, t, d[i], models[mi[i]]);
		else
			fprintf(f, "j%ld,%.3f,%d,%.0f,%s\n", i, t, g[i], d[i], models[mi[i]]);
		t += -log(ddl_sim_unit(&x)) * gap;
	}
	if (philly)
		fprintf(f, "]\n");
	free(g);
	free(d);
	free(mi);
	return ferror(f) ? -1 : 0;
}
