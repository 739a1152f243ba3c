/*
 * The GPU path: CUDA and NCCL wrappers on the real libraries (here, with
 * no GPU, every call fails: the failures must come back unchanged), and on
 * the CPU emulation through ddlsynth (collectives, communicators, device
 * intervals against the plan).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "trace_read.h"
#include "trace_set.h"

static int ddl_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* Finds the first event of KIND in any trace of DIR; its result through RES. */
static int ddl_find_result(const char *dir, unsigned kind, int64_t *res)
{
	struct ddl_traceset s;
	char err[512];
	char *p[] = {(char *)dir};
	if (ddl_traceset_load(&s, p, 1, err, sizeof err) < 0)
		return -1;
	int found = -1;
	for (size_t i = 0; i < s.n && found < 0; i++)
		for (size_t k = 0; k < s.t[i].nev && found < 0; k++)
			if (s.t[i].ev[k].kind == kind && ddl_event_args(&s.t[i], k)) {
				*res = s.t[i].ev[k].result;
				found = 0;
			}
	ddl_traceset_free(&s);
	return found;
}

/*
 * The real CUDA runtime and NCCL: the program prints every return code,
 * the runtime's last error and errno; with and without ddlprof the output
 * and status are identical, and the trace holds the codes it returned.
 */
int test_gpu_real_runtime_unchanged(void)
{
	const char *prog = tbuild("tests/gpu/realcuda");
	if (!ddl_exists(prog))
		return DDL_SKIP; /* built without the CUDA headers */
	char *dir = tmpdir(), tdir[PATH_MAX];
	snprintf(tdir, sizeof tdir, "%s/t", dir);
	struct ddl_run_result plain, prof;
	char *a1[] = {(char *)prog, NULL};
	char *a2[] = {(char *)tbuild("bin/ddlprof"), "-q", "-o", tdir, "--", (char *)prog, NULL};
	CHECK(trun(a1, NULL, 60, &plain) == 0, "realcuda did not run");
	CHECK(trun(a2, NULL, 60, &prof) == 0, "realcuda under ddlprof did not run");
	CHECK(plain.status == prof.status, "status %d vs %d", plain.status, prof.status);
	CHECK(plain.out && prof.out && !strcmp(plain.out, prof.out),
	      "output differs:\n--- plain\n%s--- ddlprof\n%s", plain.out, prof.out);
	/* The code cudaMalloc returned, as the program saw it and as recorded. */
	const char *m = strstr(plain.out, "cudaMalloc ");
	CHECK(m, "no cudaMalloc line in\n%s", plain.out);
	long want = strtol(strstr(m, "rc=") + 3, NULL, 10);
	int64_t got = -1;
	CHECK(ddl_find_result(tdir, DDL_EV_CUDA_MALLOC, &got) == 0, "no cudaMalloc event in the trace");
	CHECK(got == want, "trace says cudaMalloc returned %lld, the program saw %ld", (long long)got,
	      want);
	CHECK(ddl_find_result(tdir, DDL_EV_NCCL_ALLREDUCE, &got) == 0, "no ncclAllReduce event");
	m = strstr(plain.out, "ncclAllReduce(null)");
	CHECK(m && got == strtol(strstr(m, "rc=") + 3, NULL, 10), "ncclAllReduce code %lld",
	      (long long)got);
	trun_free(&plain);
	trun_free(&prof);
	trm(dir);
	free(dir);
	return DDL_PASS;
}
