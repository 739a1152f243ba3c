/*
 * Running ddlprof-report for a trace directory, for the two readers of a
 * profile that take one: profile.c (--profile DIR) and slurm.c (--slurm
 * reads the same report again for job.sensitivity). The report runs as a
 * child, `BIN --json [-q] -- DIR`, its standard output read whole through a
 * pipe. Each caller words its own messages and judges the exit status;
 * what is here only says which step failed. The whole-descriptor read is
 * also what both use for report files.
 */
#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rec.h"

extern char **environ;

int ddl_spawn_quiet;

char *ddl_slurp_fd(int fd, size_t *len, size_t max)
{
	char *buf = NULL;
	size_t cap = 0;
	*len = 0;
	for (;;) {
		if (*len >= max) {
			free(buf);
			errno = EFBIG;
			return NULL;
		}
		if (*len == cap) {
			char *q = realloc(buf, cap = cap ? cap * 2 : 65536);
			if (!q) {
				free(buf);
				return NULL;
			}
			buf = q;
		}
		ssize_t k = read(fd, buf + *len, cap - *len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			free(buf);
			return NULL;
		}
		if (k == 0)
			return buf;
		*len += (size_t)k;
	}
}

int ddl_spawn_report(const char *bin, const char *dir, size_t max, char **out, size_t *len,
                     int *status, int *errnum)
{
	*out = NULL;
	*len = 0;
	*status = 0;
	*errnum = 0;
	int fd[2];
	if (pipe(fd) < 0) {
		*errnum = errno;
		return DDL_SPAWN_PIPE;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
	posix_spawn_file_actions_addclose(&fa, fd[0]);
	posix_spawn_file_actions_addclose(&fa, fd[1]);
	char *argv[6];
	int n = 0;
	argv[n++] = (char *)bin;
	argv[n++] = "--json";
	if (ddl_spawn_quiet)
		argv[n++] = "-q";
	argv[n++] = "--";
	argv[n++] = (char *)dir;
	argv[n] = NULL;
	pid_t pid;
	int rc = strchr(bin, '/') ? posix_spawn(&pid, bin, &fa, NULL, argv, environ)
	                          : posix_spawnp(&pid, bin, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fd[1]);
	if (rc) {
		close(fd[0]);
		*errnum = rc;
		return DDL_SPAWN_START;
	}
	*out = ddl_slurp_fd(fd[0], len, max);
	int e = errno;
	close(fd[0]);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	if (!*out) {
		*errnum = e;
		return DDL_SPAWN_READ;
	}
	return DDL_SPAWN_OK;
}
