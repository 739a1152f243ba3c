/*
 * libFuzzer target for ddlprof-recommend --slurm (recommender/slurm.c):
 * the --wait-history file, and the report whose job.sensitivity it reads.
 * The first input byte sets the job's shape (ranks, hosts), its length and
 * the switch threshold; the rest is the history, or a report and a history
 * split at the first "\n%%\n". Both go through memfds as /proc/self/fd/N.
 * The loader must never crash, leak or read out of bounds; a refusal must
 * name the report or the history file; a plan must keep MAX_WAIT within
 * its bounds, and its text and JSON outputs must be written (the JSON
 * parsing again). Seeds in tests/fuzz/slurm_seeds. Built by `make fuzz`
 * with clang's -fsanitize=fuzzer,address,undefined.
 */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char fs_report[] =
	"{\"schema\": \"ddlprof-report/1\", \"job\": {\"sensitivity\": {\"score\": 0.4, "
	"\"slowdown\": {\"machine\": 1, \"rack\": 1.1, \"cluster\": 1.6}, "
	"\"iteration_s\": {\"machine\": 0.2, \"rack\": 0.22, \"cluster\": 0.32}}}}\n";

/* A memfd holding N bytes at P, as a path in PATH. */
static void fs_file(int *fd, const void *p, size_t n, char path[32])
{
	if (*fd < 0 && (*fd = memfd_create("fuzz_slurm", 0)) < 0)
		abort();
	if (ftruncate(*fd, 0) < 0 || (n && pwrite(*fd, p, n, 0) != (ssize_t)n))
		abort();
	snprintf(path, 32, "/proc/self/fd/%d", *fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int rfd = -1, hfd = -1;
	if (size < 1)
		return 0;
	unsigned shape = data[0];
	const char *rest = (const char *)data + 1, *report = fs_report, *hist = rest;
	size_t nrest = size - 1, nreport = sizeof fs_report - 1, nhist = nrest;
	const char *sep = memmem(rest, nrest, "\n%%\n", 4);
	if (sep) {
		report = rest;
		nreport = (size_t)(sep - rest) + 1;
		hist = sep + 4;
		nhist = nrest - nreport - 3;
	}
	char rpath[32], hpath[32];
	fs_file(&rfd, report, nreport, rpath);
	fs_file(&hfd, hist, nhist, hpath);

	struct ddl_profile p = {0};
	p.file = rpath;
	p.hosts = 1 + (shape & 7);
	p.gpus_per_host = 1 << ((shape >> 3) & 3);
	p.ranks = p.hosts * p.gpus_per_host * (shape & 0x80 ? 64 : 1);
	struct ddl_slurm_opts o = {.threshold = (shape & 0x20) ? 0.1 : 0,
	                           .nodes_per_switch = (shape >> 6) & 1 ? 2 : 0,
	                           .history = (shape & 0x40) && !sep ? NULL : hpath,
	                           .iterations = (shape & 0x10) ? 1000 : 0};
	struct ddl_slurm s;
	char err[8192] = "";
	if (ddl_slurm_plan(&p, rpath, "/nonexistent/ddlprof-report", &o, &s, err, sizeof err) < 0) {
		/* "FILE: ...", "FILE:LINE: ..." or "--wait-history FILE: ..." */
		const char *e = !strncmp(err, "--wait-history ", 15) ? err + 15 : err;
		if ((strncmp(e, rpath, strlen(rpath)) || e[strlen(rpath)] != ':') &&
		    (strncmp(e, hpath, strlen(hpath)) || e[strlen(hpath)] != ':'))
			abort();
		return 0;
	}
	if (s.switches < 0 || (s.switches && !(s.wait_s >= DDL_SLURM_WAIT_MIN &&
	                                       s.wait_s <= DDL_SLURM_WAIT_MAX)) ||
	    !isfinite(s.mean_s) || !isfinite(s.sd_s) || s.mean_s < 0 || s.sd_s < 0 || s.samples < 0 ||
	    s.samples > 32 || !memchr(s.reason, 0, sizeof s.reason))
		abort();
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f || ddl_slurm_text(&s, rpath, f) < 0 || fclose(f))
		abort();
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &len);
	int rc = f ? ddl_slurm_json(&s, report, nreport, f) : -1;
	if (!f || fclose(f))
		abort();
	if (rc == 0) {
		json_t *j = json_loadb(buf, len, 0, NULL);
		if (!j)
			abort(); /* what it writes is JSON */
		json_decref(j);
	}
	free(buf);
	return 0;
}
