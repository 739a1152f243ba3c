/*
 * What every process of a job agrees on about its traces, one rule each,
 * used by the launcher (launcher/ddlprof.c) and by the preload library
 * (libddlprof/core.c) for the processes the launcher did not start: which
 * run a trace belongs to (the run id in its header), the alphabet of the
 * names that become file names, and when a trace directory is safe to
 * write into. Static inline functions on libc only, since the preload
 * library may depend on nothing else. Internal to ddlprof; not an API.
 */
#ifndef DDLPROF_TRACEDIR_H
#define DDLPROF_TRACEDIR_H

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ddlprof/trace.h"

/* ---- names: run ids and host names become file names ---- */

/* Whether C is of the safe alphabet: A-Z a-z 0-9 - _ . : */
static inline int ddl_runid_char_ok(char c)
{
	return isalnum((unsigned char)c) || (c && strchr("-_.:", c));
}

/* Keeps S to the safe alphabet: any other character becomes '_'. */
static inline void ddl_runid_sanitize(char *s)
{
	for (; *s; s++)
		if (!ddl_runid_char_ok(*s))
			*s = '_';
}

/* Whether S is a run id as given (ddlprof --run-id): 1 to DDL_RUNID_MAX - 1
 * characters of the safe alphabet. */
static inline int ddl_runid_valid(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= DDL_RUNID_MAX)
		return 0;
	for (; *s; s++)
		if (!ddl_runid_char_ok(*s))
			return 0;
	return 1;
}

/*
 * ---- the run id ----
 * In order: DDLPROF_RUN_ID (ddlprof --run-id); the scheduler's job id
 * (Slurm, torchrun's TORCHELASTIC_RUN_ID, Open MPI, PMIx); the rendezvous
 * that ranks started by hand share (MASTER_ADDR, MASTER_PORT and
 * WORLD_SIZE, as torch.distributed reads them); else one of this process
 * alone. The same rendezvous used again by a later job gives the same id:
 * the report tells such runs apart by their times (trace_set.c).
 *
 * Writes the run id into OUT (CAP bytes). ENV returns a variable's value,
 * NULL when unset or empty; HOST, PID and START (seconds, 0 to leave out)
 * name a process's own run.
 */
static inline void ddl_runid_make(char *out, size_t cap, const char *(*env)(const char *),
                                  const char *host, long pid, long start)
{
	const char *v, *port, *world;
	if ((v = env("DDLPROF_RUN_ID")))
		snprintf(out, cap, "%s", v);
	else if ((v = env("SLURM_JOB_ID")))
		snprintf(out, cap, "slurm-%s", v);
	else if ((v = env("TORCHELASTIC_RUN_ID")))
		snprintf(out, cap, "torch-%s", v);
	else if ((v = env("OMPI_MCA_ess_base_jobid")))
		snprintf(out, cap, "ompi-%s", v);
	else if ((v = env("PMIX_NAMESPACE")))
		snprintf(out, cap, "pmix-%s", v);
	else if ((v = env("MASTER_ADDR")) && (port = env("MASTER_PORT")) && (world = env("WORLD_SIZE")))
		snprintf(out, cap, "torch-%.32s-%.8s-w%.8s", v, port, world);
	else if (start)
		snprintf(out, cap, "local-%.30s-%ld-%ld", host, pid, start);
	else
		snprintf(out, cap, "local-%.30s-%ld", host, pid);
	ddl_runid_sanitize(out);
}

/* ---- the trace directory ---- */

/* Why a directory is refused: it looks like a trap, not a mere failure. */
enum ddl_tracedir_trap {
	DDL_TRACEDIR_LINK = 1, /* a symbolic link */
	DDL_TRACEDIR_NOTDIR,   /* not a directory */
	DDL_TRACEDIR_FOREIGN,  /* another user's */
	DDL_TRACEDIR_OPEN,     /* every user may write into it, and it is not sticky */
	DDL_TRACEDIR_PARENT_LINK, /* reached through a link protected_symlinks would not follow */
};

/*
 * Whether a symbolic link on DIR's way (a parent, not DIR itself) is one
 * that the kernel's fs.protected_symlinks would refuse to follow: in a
 * sticky directory every user may write into (/tmp), owned neither by us
 * nor by that directory's owner. Another user's link /tmp/x -> / would
 * otherwise put our traces into /run for -o /tmp/x/run, on a machine with
 * protected_symlinks off. 1 when there is one.
 */
static inline int ddl_tracedir_parent_trap(const char *dir)
{
	char p[4096];
	size_t n = strlen(dir);
	if (n >= sizeof p)
		return 0;
	memcpy(p, dir, n + 1);
	for (size_t i = 1; i < n; i++) {
		if (p[i] != '/' || p[i - 1] == '/')
			continue;
		p[i] = 0;
		struct stat ls, ds;
		if (lstat(p, &ls) == 0 && S_ISLNK(ls.st_mode) && ls.st_uid != geteuid()) {
			char *slash = strrchr(p, '/');
			int ok;
			/* the directory the link lies in, reached as the kernel would */
			if (!slash) {
				ok = stat(".", &ds) == 0;
			} else if (slash == p) {
				ok = stat("/", &ds) == 0;
			} else {
				*slash = 0;
				ok = stat(p, &ds) == 0;
				*slash = '/';
			}
			if (ok && (ds.st_mode & S_ISVTX) && (ds.st_mode & 002) && ls.st_uid != ds.st_uid)
				return 1;
		}
		p[i] = '/';
	}
	return 0;
}

/*
 * Creates DIR, mode 0700, when CREATE is set, then checks it is a real
 * directory of ours that we can write into and that others cannot: one
 * every user may write into (and that is not sticky) would let them replace
 * or remove the traces; group write is the group's business (a umask of
 * 002 gives it). An existing directory is never changed. ST gets what
 * lstat said (for messages), when it was reached.
 *
 * Returns 0: usable, or absent while CREATE is not set (the first write
 * creates it); a negative errno when it cannot be made or written into (no
 * permission, a read-only or full file system), which costs the profile,
 * not the job; or a DDL_TRACEDIR_* trap, refused.
 */
static inline int ddl_tracedir_prepare(const char *dir, int create, struct stat *st)
{
	if (ddl_tracedir_parent_trap(dir))
		return DDL_TRACEDIR_PARENT_LINK;
	if (create && mkdir(dir, 0700) != 0 && errno != EEXIST)
		return -errno;
	if (lstat(dir, st) != 0)
		return errno == ENOENT && !create ? 0 : -errno;
	if (S_ISLNK(st->st_mode))
		return DDL_TRACEDIR_LINK;
	if (!S_ISDIR(st->st_mode))
		return DDL_TRACEDIR_NOTDIR;
	if (st->st_uid != geteuid())
		return DDL_TRACEDIR_FOREIGN;
	if ((st->st_mode & 002) && !(st->st_mode & S_ISVTX))
		return DDL_TRACEDIR_OPEN;
	if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) != 0)
		return -errno;
	return 0;
}

#endif
