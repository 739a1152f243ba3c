/*
 * A set of traces: every *.ddlt file of the directories and files named on a
 * command line, grouped by run id.
 */
#ifndef DDL_TRACE_SET_H
#define DDL_TRACE_SET_H

#include "trace_read.h"

struct ddl_run {
	char id[DDL_RUNID_MAX];
	size_t ntraces;
	int64_t newest_real_ns; /* latest process start in the run */
};

struct ddl_traceset {
	struct ddl_trace *t;
	size_t n;
	struct ddl_run *runs;
	size_t nruns;
	char **errors; /* files that could not be read at all, with the reason */
	size_t nerrors;
};

/*
 * Loads every path: a directory contributes its *.ddlt files, a file itself.
 * Returns 0, or -1 when a path does not exist or is neither (ERR says which).
 * Unreadable traces are listed in s->errors and skipped.
 */
int ddl_traceset_load(struct ddl_traceset *s, char *const *paths, int npaths, char *err,
                      size_t errlen);
/* The newest run, or the run named ID; NULL when there is no such run. */
const struct ddl_run *ddl_traceset_run(const struct ddl_traceset *s, const char *id);
void ddl_traceset_free(struct ddl_traceset *s);
/* When set, loading shows its progress there (progress.h). */
struct ddl_progress;
extern struct ddl_progress *ddl_traceset_progress;

#endif
