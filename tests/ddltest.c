/*
 * The test runner: runs each test in its own child with a time limit,
 * prints one line per test and "N passed, N failed, N skipped" at the end,
 * then the names of those that failed (the last lines are what a CI log
 * keeps), and exits non-zero when any failed. Arguments select tests by substring.
 * DDLTEST_KEEP set in the environment leaves the tests' temporary
 * directories (/tmp/ddltest.*) in place, what a test removes moved aside
 * (PATH.keptN) so that it still finds it gone: their traces are a corpus
 * to hold two builds' reports against each other.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

static const struct {
	const char *name;
	int (*fn)(void);
} ddl_tests[] = {
#define DDL_X_ENTRY(n) {#n, test_##n},
	DDL_TESTS(DDL_X_ENTRY)
#undef DDL_X_ENTRY
};

static int ddl_selected(const char *name, int argc, char **argv)
{
	if (argc < 2)
		return 1;
	for (int i = 1; i < argc; i++)
		if (strstr(name, argv[i]))
			return 1;
	return 0;
}

int ddl_test_child(int argc, char **argv);

int main(int argc, char **argv)
{
	int pass = 0, fail = 0, skip = 0;
	char failed[2048] = "";
	if (argc > 1 && !strcmp(argv[1], "--child"))
		return ddl_test_child(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* make check inside a job (an sbatch script's step, an srun task, an
	 * mpirun rank): the programs the tests start (tcpring reads Slurm's
	 * rank) are the tests' own jobs, not ranks of that one */
	static const char *const job_env[] = {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_JOB_ID", "RANK",
	                                      "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
	                                      "PMI_RANK", "PMI_SIZE"};
	for (size_t i = 0; i < sizeof job_env / sizeof job_env[0]; i++)
		unsetenv(job_env[i]);
	for (size_t i = 0; i < sizeof ddl_tests / sizeof ddl_tests[0]; i++) {
		if (!ddl_selected(ddl_tests[i].name, argc, argv))
			continue;
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		fflush(NULL);
		pid_t pid = fork();
		if (pid == 0) {
			setpgid(0, 0);
			alarm(240);
			_exit(ddl_tests[i].fn());
		}
		int st = 0;
		waitpid(pid, &st, 0);
		kill(-pid, SIGKILL); /* anything the test left behind */
		clock_gettime(CLOCK_MONOTONIC, &b);
		double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
		int rc = WIFEXITED(st) ? WEXITSTATUS(st) : DDL_FAIL;
		const char *word = rc == DDL_PASS ? "ok" : rc == DDL_SKIP ? "skip" : "FAIL";
		if (WIFSIGNALED(st))
			printf("FAIL %s (killed by signal %d%s)\n", ddl_tests[i].name, WTERMSIG(st),
			       WTERMSIG(st) == SIGALRM ? ": time limit" : "");
		else
			printf("%-4s %s (%.0f ms)\n", word, ddl_tests[i].name, ms);
		if (rc == DDL_PASS)
			pass++;
		else if (rc == DDL_SKIP)
			skip++;
		else {
			fail++;
			size_t n = strlen(failed);
			snprintf(failed + n, sizeof failed - n, " %s", ddl_tests[i].name);
		}
	}
	printf("%d passed, %d failed, %d skipped\n", pass, fail, skip);
	if (fail)
		printf("failed:%s\n", failed);
	return fail ? 1 : 0;
}
