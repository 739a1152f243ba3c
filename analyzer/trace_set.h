/*
 * A set of traces: every *.ddlt file of the directories and files named on a
 * command line (each file once, however often it is named), grouped into
 * runs: by the run id in their headers, and, among traces of one id, by
 * their times (a later job that reused the id, as ranks started by hand on
 * the same rendezvous do, is a run of its own).
 */
#ifndef DDL_TRACE_SET_H
#define DDL_TRACE_SET_H

#include <sys/types.h>

#include "trace_read.h"

struct ddl_run {
	char id[DDL_RUNID_MAX + 12]; /* the header's id; "ID#N" (N from 1, oldest first)
	                              * when several runs share it */
	size_t ntraces;
	int64_t oldest_real_ns; /* earliest process start in the run */
	int64_t newest_real_ns; /* latest process start in the run */
	int64_t end_real_ns;    /* latest end of its processes */
	int shared;             /* other runs have the same header id */
};

struct ddl_seen {
	dev_t dev;
	ino_t ino;
};

struct ddl_traceset {
	struct ddl_trace *t;
	size_t n;
	struct ddl_run *runs;
	size_t nruns;
	char **errors; /* files that could not be read at all, with the reason */
	size_t nerrors;
	struct ddl_seen *seen; /* the files read, so each is read once */
	size_t nseen;
	int incomplete; /* memory ran out: a file, or an error about one, left out */
};

/*
 * Loads every path: a directory contributes its *.ddlt files, a file itself.
 * Returns 0, or -1 when a path does not exist or is neither, or memory ran
 * out grouping the traces into runs (ERR says which). Unreadable traces are
 * listed in s->errors and skipped; a file left out for want of memory sets
 * s->incomplete (a report of the set is incomplete).
 */
int ddl_traceset_load(struct ddl_traceset *s, char *const *paths, int npaths, char *err,
                      size_t errlen);
/* The newest run, or the run named ID (a header's id alone names the newest
 * of the runs that share it); NULL when there is no such run. */
const struct ddl_run *ddl_traceset_run(const struct ddl_traceset *s, const char *id);
/* Whether trace T of S belongs to RUN. */
static inline int ddl_run_has(const struct ddl_traceset *s, const struct ddl_run *run,
                              const struct ddl_trace *t)
{
	return t->run >= 0 && (size_t)t->run < s->nruns && &s->runs[t->run] == run;
}
void ddl_traceset_free(struct ddl_traceset *s);
/* When set, traces are loaded lazily: their events are read again when
 * held (ddl_trace_hold), not kept (trace_events.c). */
extern int ddl_traceset_lazy;
/* When set, a directory's files are read on several threads by it
 * (ddlprof-report's ddl_parallel: FN(ARG, i) for each i below N). */
extern void (*ddl_traceset_parallel)(size_t n, void (*fn)(void *arg, size_t i), void *arg);
/* When set, loading shows its progress there (progress.h). */
struct ddl_progress;
extern struct ddl_progress *ddl_traceset_progress;

#endif
