/*
 * A big run for timing ddlprof-report, figures not pass/fail: writes the
 * traces of a synthetic data-parallel job of RANKS ranks (8 to a host),
 * EVENTS events each, into DIR. Each rank's loop is a step's compute
 * (50 ms, a little jitter), then a ring all-reduce over TCP: 2 (RANKS - 1)
 * exchanges, each a send to the next rank and a receive from the previous
 * one of a chunk, which the kernel splits into 1 to 4 sends and 1 to 8
 * receives of varying sizes with polls between, as tcpring's are. The
 * numbers are drawn from SEED (1), so a run is the same every time.
 * -c BYTES sets the chunk each exchange moves (65536): ten times the
 * chunk and ten times the events make as many steps of ten times the
 * events each (the report's memory against events, iterations the same).
 *
 *   bigtrace [-c BYTES] DIR RANKS EVENTS [SEED]
 *   time ddlprof-report -q --json DIR > /dev/null
 *
 * It prints the steps each rank ran and their mean: what the report's
 * iterations should come back to.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ddlprof/chunk.h"
#include "ddlprof/trace.h"

static uint64_t bt_state;
static int64_t bt_chunk = 65536; /* bytes an exchange moves, -c */

static uint32_t bt_rand(void)
{
	bt_state = bt_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(bt_state >> 33);
}

struct bt_part {
	unsigned type;
	const void *p;
	size_t n;
};

/* Writes the N parts to PATH, each chunk behind its checked header; 0 or -1. */
static int bt_write(const char *path, const struct bt_part *v, size_t n)
{
	FILE *f = fopen(path, "wb");
	int ok = f != NULL;
	for (size_t i = 0; ok && i < n; i++) {
		struct ddl_chunk c = ddl_chunk_make(v[i].type, 0, v[i].p, (uint32_t)v[i].n, (uint32_t)v[i].n);
		ok = (!v[i].type || fwrite(&c, sizeof c, 1, f) == 1) && fwrite(v[i].p, 1, v[i].n, f) == v[i].n;
	}
	if (f && fclose(f))
		ok = 0;
	return ok ? 0 : -1;
}

/* A string record of KIND, ID and VALUE with TEXT, appended at *N of S. */
static void bt_str(unsigned char *s, size_t *n, unsigned kind, uint32_t id, uint32_t value,
                   const char *text)
{
	struct ddl_strrec r = {id, (uint16_t)kind, (uint16_t)strlen(text), value};
	memcpy(s + *n, &r, sizeof r);
	memcpy(s + *n + sizeof r, text, r.len);
	*n += sizeof r + r.len;
}

/* Rank RANK of WORLD into DIR; its steps and their mean into *STEPS, *MEAN. */
static int bt_rank(const char *dir, int rank, int world, size_t nev, int *steps, double *mean)
{
	char host[DDL_HOST_MAX], path[4096];
	snprintf(host, sizeof host, "big%d", rank / 8);
	uint32_t pid = 1000 + (uint32_t)rank;
	struct ddl_file_header h = {.ident = "DDL", .byte_order = DDL_BYTE_ORDER_MAGIC,
	                            .version = DDL_FORMAT_VERSION, .min_reader = 1,
	                            .header_size = sizeof h, .features = DDL_FEAT_SOCKET, .pid = pid,
	                            .ppid = 1, .rank = rank, .world_size = world, .local_rank = rank % 8,
	                            .clock_source = DDL_CLOCK_MONOTONIC, .tick_hz = 1000000000,
	                            .start_ticks = 1000000000, .start_mono_ns = 1000000000,
	                            .start_real_ns = 1767225600000000000, .run_id = "big-1"};
	h.ident[3] = 'T';
	memcpy(h.host, host, strlen(host));
	h.hcrc = ddl_crc32c(&h, offsetof(struct ddl_file_header, hcrc));
	unsigned char str[512];
	size_t ns = 0;
	char next[64], prev[64];
	int nx = (rank + 1) % world, pv = (rank + world - 1) % world;
	snprintf(next, sizeof next, "10.0.%d.%d:29500", nx / 8, nx % 8 + 1);
	snprintf(prev, sizeof prev, "10.0.%d.%d:41%03d", pv / 8, pv % 8 + 1, rank % 1000);
	bt_str(str, &ns, DDL_STR_THREAD, 0, pid, "train");
	bt_str(str, &ns, DDL_STR_PEER, 1, (nx / 8 == rank / 8 ? DDL_PEERF_LOCAL : 0) | 2u << 8, next);
	bt_str(str, &ns, DDL_STR_PEER, 2, (pv / 8 == rank / 8 ? DDL_PEERF_LOCAL : 0) | 2u << 8, prev);
	bt_str(str, &ns, DDL_STR_META, 0, 0, "command=bigtrace");
	struct ddl_event *ev = calloc(nev, sizeof *ev);
	if (!ev)
		return -1;
	uint64_t now = h.start_ticks + 1000000; /* ns ticks */
	size_t n = 0;
	const int64_t chunk = bt_chunk;
	double sum = 0;
	int done = 0;
	while (n + 64 < nev) {
		uint64_t step0 = now;
		now += 50000000 + bt_rand() % 1000000; /* compute */
		for (int x = 0; x < 2 * (world - 1) && n + 32 < nev; x++) {
			int64_t left[2] = {chunk, chunk};
			while ((left[0] > 0 || left[1] > 0) && n + 4 < nev) {
				struct ddl_event *p = &ev[n++];
				*p = (struct ddl_event){.start = now, .dur = 2000 + bt_rand() % 20000,
				                        .kind = DDL_EV_POLL, .flags = DDL_EVF_SOCKWAIT,
				                        .result = 1, .fd = 2};
				now += p->dur + 500;
				int d = left[0] > 0 && (left[1] <= 0 || bt_rand() % 2) ? 0 : 1;
				/* pieces of up to 64 KiB, whatever the chunk */
				int64_t k = d == 0 ? (int64_t)(65536 / 4 * (1 + bt_rand() % 4))
				                   : (int64_t)(65536 / 8 * (1 + bt_rand() % 8));
				k = k < left[d] ? k : left[d];
				left[d] -= k;
				p = &ev[n++];
				*p = (struct ddl_event){.start = now, .dur = 3000 + bt_rand() % 30000,
				                        .kind = d ? DDL_EV_RECV : DDL_EV_SEND, .result = k,
				                        .fd = d ? 5 : 4, .peer = d ? 2u : 1u};
				now += p->dur + 300;
			}
		}
		if (n + 64 >= nev)
			break; /* the last step, cut short: not one the job finished */
		sum += (double)(now - step0) / 1e9;
		done++;
	}
	*steps = done;
	*mean = done ? sum / done : 0;
	/* Events in chunks of 65536, each after a clock sample at its first
	 * event, as the library writes a sample with every flush: a reader
	 * refuses events far from the samples it has read (a run of a million
	 * events a rank lasts 50 minutes). */
	enum { PER_CHUNK = 65536 };
	size_t nchunks = (n + PER_CHUNK - 1) / PER_CHUNK;
	struct ddl_clock_sample *smp = calloc(nchunks + 1, sizeof *smp);
	struct bt_part *parts = calloc(2 * nchunks + 4, sizeof *parts);
	if (!smp || !parts) {
		free(smp);
		free(parts);
		free(ev);
		return -1;
	}
	size_t np = 0;
	parts[np++] = (struct bt_part){0, &h, sizeof h};
	parts[np++] = (struct bt_part){DDL_CHUNK_STRINGS, str, ns};
	for (size_t c = 0; c <= nchunks; c++) {
		uint64_t at = c < nchunks ? ev[c * PER_CHUNK].start : now + 1000;
		smp[c] = (struct ddl_clock_sample){at, (int64_t)at, h.start_real_ns + (int64_t)(at - h.start_ticks)};
		parts[np++] = (struct bt_part){DDL_CHUNK_CLOCK, &smp[c], sizeof smp[c]};
		if (c < nchunks) {
			size_t k = n - c * PER_CHUNK < PER_CHUNK ? n - c * PER_CHUNK : PER_CHUNK;
			parts[np++] = (struct bt_part){DDL_CHUNK_EVENTS, &ev[c * PER_CHUNK], k * sizeof *ev};
		}
	}
	struct ddl_end end = {n, 0, DDL_END_EXIT, 0};
	parts[np++] = (struct bt_part){DDL_CHUNK_END, &end, sizeof end};
	snprintf(path, sizeof path, "%s/%s.%u.ddlt", dir, host, pid);
	int rc = bt_write(path, parts, np);
	free(parts);
	free(smp);
	free(ev);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "-c")) {
		bt_chunk = atoll(argv[2]);
		argc -= 2;
		argv += 2;
	}
	if (argc < 4 || argc > 5 || bt_chunk < 8 || bt_chunk > (1ll << 40)) {
		fprintf(stderr, "usage: bigtrace [-c BYTES] DIR RANKS EVENTS [SEED] (BYTES at least 8)\n");
		return 2;
	}
	int world = atoi(argv[2]);
	long nev = atol(argv[3]);
	bt_state = argc == 5 ? strtoull(argv[4], NULL, 10) : 1;
	if (world < 2 || world > 4096 || nev < 1000 || nev > 2000000) {
		fprintf(stderr, "bigtrace: RANKS 2 to 4096, EVENTS 1000 to 2000000\n");
		return 2;
	}
	if (mkdir(argv[1], 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "bigtrace: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	for (int r = 0; r < world; r++) {
		int steps;
		double mean;
		if (bt_rank(argv[1], r, world, (size_t)nev, &steps, &mean) < 0) {
			fprintf(stderr, "bigtrace: cannot write rank %d into %s\n", r, argv[1]);
			return 1;
		}
		if (r == 0 || r == world - 1)
			printf("bigtrace: rank %d: %d steps, mean step %.3f ms\n", r, steps, mean * 1e3);
	}
	return 0;
}
