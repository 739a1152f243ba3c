/*
 * libFuzzer target for ddlprof-sim's job-trace loaders (scheduler/load_*.c).
 * The first byte of the input picks the loader (its low two bits: csv,
 * tiresias, helios, philly) and --strict (bit 2); the rest is the file,
 * handed to the loader through a memfd as /proc/self/fd/N, since the
 * loaders take a path. A loader must never crash, leak or read out of
 * bounds; what it loads must be a job the engine can run (a count of GPUs,
 * times inside 0..1e10 s, or a run of iterations still to be timed); and every line it writes on stderr must name the
 * file, a skipped record also its line ("PATH:LINE: ") or record ("PATH:
 * record N"). stderr is swapped for a memory stream around the call (the
 * sanitizers write to fd 2 directly, so their reports still show). Built by
 * `make fuzz` with clang's -fsanitize=fuzzer,address,undefined; seeds in
 * tests/fuzz/jobs_seeds, named by format. FUZZ_JOBS_ECHO=1 in the
 * environment echoes the loader's messages.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int (*const ddl_fuzz_loaders[4])(const char *, struct ddl_sim_trace *,
                                        const struct ddl_sim_load_opts *) = {
	ddl_sim_load_csv, ddl_sim_load_tiresias, ddl_sim_load_helios, ddl_sim_load_philly};

/* Digits then SUFFIX at P: where the text after them starts, or NULL. */
static const char *ddl_fuzz_number(const char *p, const char *suffix)
{
	if (!isdigit((unsigned char)*p))
		return NULL;
	while (isdigit((unsigned char)*p))
		p++;
	return strncmp(p, suffix, strlen(suffix)) ? NULL : p + strlen(suffix);
}

/* Every line of MSG names PATH; skipped records also their place. */
static void ddl_fuzz_check_messages(const char *msg, const char *path)
{
	char prefix[64];
	int n = snprintf(prefix, sizeof prefix, "ddlprof-sim: %s", path);
	for (const char *line = msg; *line;) {
		const char *eol = strchr(line, '\n');
		if (!eol)
			abort(); /* every message is a whole line */
		if (strncmp(line, prefix, (size_t)n))
			abort(); /* names the file */
		const char *rest = line + n;
		static const char skipped[] = "; record skipped";
		size_t len = (size_t)(eol - line), k = sizeof skipped - 1;
		if (len >= k && !memcmp(eol - k, skipped, k)) {
			/* "PATH:LINE: why" or "PATH: record N[ id]: why" */
			if (!(*rest == ':' && ddl_fuzz_number(rest + 1, ": ")) &&
			    !(!strncmp(rest, ": record ", 9) && ddl_fuzz_number(rest + 9, "")))
				abort();
		}
		line = eol + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	if (size < 1)
		return 0;
	if (fd < 0 && (fd = memfd_create("fuzz_jobs", 0)) < 0)
		abort();
	if (ftruncate(fd, 0) < 0 || pwrite(fd, data + 1, size - 1, 0) != (ssize_t)(size - 1))
		abort();
	char path[32];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);

	struct ddl_sim_trace t = {0};
	struct ddl_sim_load_opts o = {.strict = (data[0] & 4) != 0};
	char *msg = NULL;
	size_t msglen = 0;
	FILE *err = open_memstream(&msg, &msglen), *saved = stderr;
	if (!err)
		abort();
	stderr = err;
	int rc = ddl_fuzz_loaders[data[0] & 3](path, &t, &o);
	stderr = saved;
	if (fclose(err))
		abort();

	if (getenv("FUZZ_JOBS_ECHO"))
		fputs(msg, stderr); /* to read what an input made the loader say */
	ddl_fuzz_check_messages(msg, path);
	if (rc < 0 && !msglen)
		abort(); /* a refusal says why */
	if (rc == 0 && o.strict && t.skipped)
		abort(); /* --strict: a bad record rejects the file */
	if (rc == 0)
		for (size_t i = 0; i < t.n; i++) {
			const struct ddl_sim_job *j = &t.jobs[i];
			/* work 0: it comes from iterations x the iteration time (sim.c) */
			int run = j->work > 0 ? ddl_sim_time_ok(j->work)
			                      : j->work == 0 && j->iterations > 0 && j->iterations <= 1e15;
			if (j->gpus < 1 || !ddl_sim_time_ok(j->arrival) || !run ||
			    !memchr(j->id, 0, sizeof j->id) ||
			    !memchr(j->model, 0, sizeof j->model) || !(j->slow[DDL_SIM_RACK] >= 1) ||
			    !(j->slow[DDL_SIM_CLUSTER] >= 1))
				abort(); /* every loaded job is one the engine can run */
		}
	free(msg);
	ddl_sim_trace_free(&t);
	return 0;
}
