/*
 * libFuzzer target for ddlprof-report's pipeline after the reader: the
 * input is one trace file, or two one after the other (split where the
 * second "DDLT" header starts), handed to the trace set loader through
 * memfds as /proc/self/fd/N, lazily as the report reads them (and on
 * every other input with no budget: every hold reads the events again);
 * then what analyzer/report.c's main() does
 * with a run (build the model, GPU, alignment, iterations, breakdown,
 * stragglers, measures, call sites, counters, kernels, --fail-if) and
 * every output format (--sqlite into a database in memory; --chrome also
 * with a window of ranks and iterations). Nothing may
 * crash, leak, read out of bounds or overflow; the JSON and Chrome outputs
 * must be JSON that parses, the database must be written whole; a file
 * the loader refuses must be named in its message. The mutator is
 * trace_mutator.h's, as for fuzz_trace.c; seeds in tests/fuzz/report_seeds
 * and tests/fuzz/seeds. Built by `make fuzz` with clang's
 * -fsanitize=fuzzer,address,undefined.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "report.h"
#include "trace_mutator.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Output of format OUT, to memory; NULL on failure. */
static char *fr_out(int (*out)(const struct ddl_report *, FILE *), const struct ddl_report *r,
                    size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		abort();
	int rc = out(r, f);
	if (fclose(f) != 0)
		abort();
	if (rc != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The output parses as JSON (a failure to write is not the input's fault). */
static void fr_json(int (*out)(const struct ddl_report *, FILE *), const struct ddl_report *r)
{
	size_t len = 0;
	char *buf = fr_out(out, r, &len);
	if (!buf)
		return;
	json_error_t je;
	json_t *j = json_loadb(buf, len, 0, &je);
	if (!j) {
		fprintf(stderr, "fuzz_report: output is not JSON: line %d: %s\n", je.line, je.text);
		abort();
	}
	json_decref(j);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd[2] = {-1, -1};
	static const uint8_t magic[8] = {'D', 'D', 'L', 'T', 0x0d, 0x0c, 0x0b, 0x0a};
	size_t cut = size;
	if (size > 8)
		for (size_t i = 1; i + 8 <= size; i++)
			if (data[i] == 'D' && !memcmp(data + i, magic, 8)) {
				cut = i;
				break;
			}
	size_t off[2] = {0, cut}, len[2] = {cut, size - cut};
	int nfiles = cut < size ? 2 : 1;
	char path[2][32], *paths[2] = {path[0], path[1]};
	for (int k = 0; k < nfiles; k++) {
		if (fd[k] < 0 && (fd[k] = memfd_create("fuzz_report", 0)) < 0)
			abort();
		if (ftruncate(fd[k], 0) < 0 ||
		    (len[k] && pwrite(fd[k], data + off[k], len[k], 0) != (ssize_t)len[k]))
			abort();
		snprintf(path[k], sizeof path[k], "/proc/self/fd/%d", fd[k]);
	}

	struct ddl_traceset set;
	char err[1024];
	/* as ddlprof-report reads them: events on demand, and with no budget
	 * on every other input, so that every hold reads them again */
	ddl_traceset_lazy = 1;
	ddl_events_budget = size & 2 ? 0 : DDL_EVENTS_BUDGET;
	if (ddl_traceset_load(&set, paths, nfiles, err, sizeof err) < 0)
		abort(); /* memfds are regular files: only a file's own trouble is expected */
	for (size_t i = 0; i < set.nerrors; i++)
		if (strncmp(set.errors[i], "/proc/self/fd/", 14))
			abort(); /* a refusal names the file */
	const struct ddl_run *run = ddl_report_run(&set, NULL);
	if (run) {
		struct ddl_report rep;
		struct ddl_analysis an = {size & 1 ? "machine=100,rack=25,cluster=10" : NULL,
		                          "*step*,*iter*", 0, "data*", (int)(size % 3), 1, NULL, NULL, 1};
		int rc = ddl_report_analyze(&rep, &set, run, &an, err, sizeof err);
		if (rc == DDL_ANALYZE_NOMEM || rc == DDL_ANALYZE_USAGE)
			abort();
		if (rc == 0) {
			fr_json(ddl_out_json, &rep);
			fr_json(ddl_out_chrome, &rep);
			/* and a window of it (--ranks, --iterations), from the input's size */
			static const char *const lists[] = {"0", "1,3", "0-2,5", "2-1000000"};
			rep.chrome_ranks = lists[size % 4];
			rep.chrome_it_a = (long)(size % 9);
			rep.chrome_it_b = rep.chrome_it_a + (long)(size / 9 % 4);
			int64_t wa, wb;
			if (ddl_chrome_window(&rep, &wa, &wb, err, sizeof err) == 0)
				fr_json(ddl_out_chrome, &rep);
			rep.chrome_ranks = NULL;
			rep.chrome_it_a = rep.chrome_it_b = -1;
			int (*const other[])(const struct ddl_report *, FILE *) = {
				ddl_out_text, ddl_out_dump, ddl_out_html, ddl_out_csv};
			for (size_t k = 0; k < sizeof other / sizeof *other; k++) {
				size_t n;
				free(fr_out(other[k], &rep, &n));
			}
			if (ddl_out_sqlite(&rep, ":memory:", err, sizeof err) != 0)
				abort(); /* no constraint of the schema may refuse what a trace holds */
			static const char *const conds[] = {"network_stall_pct>50", "iteration_p99_ms<=1",
			                                    "slowdown_cluster!=1.5"};
			FILE *devnull = fopen("/dev/null", "w");
			for (size_t k = 0; devnull && k < sizeof conds / sizeof *conds; k++) {
				if (ddl_failif_check(conds[k], err, sizeof err) < 0)
					abort();
				(void)ddl_failif_eval(&rep, conds[k], devnull);
			}
			if (devnull)
				fclose(devnull);
		}
		ddl_report_free(&rep);
	}
	ddl_traceset_free(&set);
	return 0;
}
