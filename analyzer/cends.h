/*
 * The collectives of the job as instances: a communicator's n-th call on
 * each member, with where it started and ended on the aligned clocks.
 * Clock alignment (align.c) matches their ends across hosts; stragglers
 * (stragglers.c) compare their starts.
 */
#ifndef DDL_CENDS_H
#define DDL_CENDS_H

#include <stddef.h>
#include <stdint.h>

struct ddl_proc;

struct ddl_cend {
	uint64_t key;   /* communicator */
	uint64_t seq;   /* its n-th timed, ungrouped collective in this process */
	int64_t start_ns, end_ns; /* on the device (NCCL) or the calling thread (host
	                           * collectives), as the trace's clock reads it */
	int host;       /* index into the caller's host list */
	int proc;       /* index into the report's processes */
	int by_start;   /* numbered by start time (gloo's: run from several threads) */
	/* stragglers.c: queued when it started as an earlier collective of the
	 * process ended (behind it on the stream or the worker thread), so that
	 * its start says when that one ended, not when it was called; behind
	 * is that one (its id), id this one's */
	int queued;
	size_t id, behind;
	size_t prev;    /* stragglers.c: the process's collective that ended last before
	                 * this one started (its id), SIZE_MAX none */
	/* its end is the same instant on every member (ddl_coll_ends_together):
	 * align.c's clocks go by those alone */
	int end_sync;
};

/* By communicator, then sequence, then host: one instance's members together. */
int ddl_cend_cmp(const void *a, const void *b);

/* Appends P's collective instances to *V (*N used, *CAP room; grown as
 * needed), tagged HOST and PROC. 0, or -1 when memory ran out (then some
 * are missing). */
int ddl_proc_ends(const struct ddl_proc *p, int host, int proc, struct ddl_cend **v, size_t *n,
                  size_t *cap);

#endif
