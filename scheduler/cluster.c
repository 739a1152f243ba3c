/*
 * The simulated cluster: racks of machines of GPUs, who holds each GPU, and
 * free-GPU counts per machine and per rack (plus how many machines have
 * exactly k free) so the engine can ask "where do N GPUs fit, and how
 * tightly" without walking every GPU. The engine (engine.c) finds a
 * placement here, takes it for a job and gives it back when the job stops.
 *
 * Placement rules, tightest level first:
 *   machine  best fit: the machine with the fewest free GPUs that still
 *            holds all N, so whole machines stay whole for big jobs;
 *   rack     best fit among racks, then that rack's machines with the most
 *            free GPUs first, so the job spans as few machines as it can;
 *   cluster  racks with the most free GPUs first, machines likewise.
 * Ties go to the lower index, so placements are deterministic.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

int ddl_sim_cluster_init(struct ddl_sim_cluster *c, int racks, int mpr, int gpm)
{
	memset(c, 0, sizeof *c);
	c->racks = racks;
	c->mpr = mpr;
	c->gpm = gpm;
	c->machines = racks * mpr;
	c->gpus = c->machines * gpm;
	c->free = c->gpus;
	c->owner = malloc(sizeof *c->owner * (size_t)c->gpus);
	c->mfree = malloc(sizeof *c->mfree * (size_t)c->machines);
	c->rfree = malloc(sizeof *c->rfree * (size_t)racks);
	c->nfree_machines = calloc((size_t)gpm + 1, sizeof *c->nfree_machines);
	c->scratch = malloc(sizeof *c->scratch * (size_t)(c->machines + racks));
	if (!c->owner || !c->mfree || !c->rfree || !c->nfree_machines || !c->scratch) {
		ddl_sim_cluster_free(c);
		return -1;
	}
	for (int g = 0; g < c->gpus; g++)
		c->owner[g] = -1;
	for (int m = 0; m < c->machines; m++)
		c->mfree[m] = gpm;
	for (int r = 0; r < racks; r++)
		c->rfree[r] = mpr * gpm;
	c->nfree_machines[gpm] = c->machines;
	return 0;
}

void ddl_sim_cluster_free(struct ddl_sim_cluster *c)
{
	free(c->owner);
	free(c->mfree);
	free(c->rfree);
	free(c->nfree_machines);
	free(c->scratch);
	memset(c, 0, sizeof *c);
}

int ddl_sim_cluster_min_level(const struct ddl_sim_cluster *c, int n)
{
	if (n <= c->gpm)
		return DDL_SIM_MACHINE;
	if (n <= c->mpr * c->gpm)
		return DDL_SIM_RACK;
	return DDL_SIM_CLUSTER;
}

/* Appends up to *left free GPUs of machine m to ids. */
static void ddl_sim_take_from(const struct ddl_sim_cluster *c, int m, int *ids, int *k, int *left)
{
	for (int g = m * c->gpm; g < (m + 1) * c->gpm && *left > 0; g++)
		if (c->owner[g] < 0) {
			ids[(*k)++] = g;
			(*left)--;
		}
}

/* Sorts idx[0..n) by val[] descending, ties by index (insertion sort: n is
 * a rack's machines or the racks, small). */
static void ddl_sim_sort_desc(int *idx, int n, const int *val)
{
	for (int i = 1; i < n; i++) {
		int x = idx[i], j = i - 1;
		while (j >= 0 && (val[idx[j]] < val[x] || (val[idx[j]] == val[x] && idx[j] > x))) {
			idx[j + 1] = idx[j];
			j--;
		}
		idx[j + 1] = x;
	}
}

/* Fills ids from the machines of rack r, most free first. */
static void ddl_sim_fill_rack(struct ddl_sim_cluster *c, int r, int *ids, int *k, int *left)
{
	int *ms = c->scratch + c->racks;
	for (int i = 0; i < c->mpr; i++)
		ms[i] = r * c->mpr + i;
	ddl_sim_sort_desc(ms, c->mpr, c->mfree);
	for (int i = 0; i < c->mpr && *left > 0; i++)
		ddl_sim_take_from(c, ms[i], ids, k, left);
}

int ddl_sim_cluster_find(struct ddl_sim_cluster *c, int n, int min_level, int max_level, int *ids)
{
	if (n <= 0 || n > c->free)
		return -1;
	int k = 0, left = n;
	if (min_level <= DDL_SIM_MACHINE && n <= c->gpm) {
		int want = -1;
		for (int f = n; f <= c->gpm; f++)
			if (c->nfree_machines[f] > 0) {
				want = f;
				break;
			}
		if (want >= 0) {
			for (int m = 0; m < c->machines; m++)
				if (c->mfree[m] == want) {
					ddl_sim_take_from(c, m, ids, &k, &left);
					return DDL_SIM_MACHINE;
				}
		}
	}
	if (max_level < DDL_SIM_RACK)
		return -1;
	if (min_level <= DDL_SIM_RACK && n <= c->mpr * c->gpm) {
		int best = -1;
		for (int r = 0; r < c->racks; r++)
			if (c->rfree[r] >= n && (best < 0 || c->rfree[r] < c->rfree[best]))
				best = r;
		if (best >= 0) {
			ddl_sim_fill_rack(c, best, ids, &k, &left);
			return ddl_sim_cluster_level(c, n, ids);
		}
	}
	if (max_level < DDL_SIM_CLUSTER)
		return -1;
	int *rs = c->scratch;
	for (int r = 0; r < c->racks; r++)
		rs[r] = r;
	ddl_sim_sort_desc(rs, c->racks, c->rfree);
	for (int i = 0; i < c->racks && left > 0; i++)
		ddl_sim_fill_rack(c, rs[i], ids, &k, &left);
	return ddl_sim_cluster_level(c, n, ids);
}

int ddl_sim_cluster_level(const struct ddl_sim_cluster *c, int n, const int *ids)
{
	int level = DDL_SIM_MACHINE;
	for (int i = 1; i < n; i++) {
		int m0 = ids[0] / c->gpm, m = ids[i] / c->gpm;
		if (m / c->mpr != m0 / c->mpr)
			return DDL_SIM_CLUSTER;
		if (m != m0)
			level = DDL_SIM_RACK;
	}
	return level;
}

int ddl_sim_cluster_take(struct ddl_sim_cluster *c, int job, int n, const int *ids)
{
	for (int i = 0; i < n; i++) {
		int g = ids[i];
		if (g < 0 || g >= c->gpus || c->owner[g] >= 0) {
			fprintf(stderr, "ddlprof-sim: check failed: GPU %d given to job %d while job %d holds it\n",
			        g, job, g >= 0 && g < c->gpus ? c->owner[g] : -1);
			return -1;
		}
		int m = g / c->gpm;
		c->owner[g] = job;
		c->nfree_machines[c->mfree[m]]--;
		c->mfree[m]--;
		c->nfree_machines[c->mfree[m]]++;
		c->rfree[m / c->mpr]--;
		c->free--;
	}
	return 0;
}

void ddl_sim_cluster_give(struct ddl_sim_cluster *c, int n, const int *ids)
{
	for (int i = 0; i < n; i++) {
		int g = ids[i], m = g / c->gpm;
		c->owner[g] = -1;
		c->nfree_machines[c->mfree[m]]--;
		c->mfree[m]++;
		c->nfree_machines[c->mfree[m]]++;
		c->rfree[m / c->mpr]++;
		c->free++;
	}
}

int ddl_sim_cluster_check(const struct ddl_sim_cluster *c)
{
	int total = 0;
	for (int r = 0; r < c->racks; r++) {
		int rf = 0;
		for (int m = r * c->mpr; m < (r + 1) * c->mpr; m++) {
			int mf = 0;
			for (int g = m * c->gpm; g < (m + 1) * c->gpm; g++)
				mf += c->owner[g] < 0;
			if (mf != c->mfree[m]) {
				fprintf(stderr, "ddlprof-sim: check failed: machine %d has %d free GPUs, counted %d\n",
				        m, mf, c->mfree[m]);
				return -1;
			}
			rf += mf;
		}
		if (rf != c->rfree[r]) {
			fprintf(stderr, "ddlprof-sim: check failed: rack %d has %d free GPUs, counted %d\n", r,
			        rf, c->rfree[r]);
			return -1;
		}
		total += rf;
	}
	if (total != c->free) {
		fprintf(stderr, "ddlprof-sim: check failed: %d free GPUs, counted %d\n", total, c->free);
		return -1;
	}
	return 0;
}
