/*
 * Room kept from one process to the next. A stage that goes over the
 * processes one a thread at a time makes the same working arrays for each
 * (the training thread's blocked time, its data waits, a sort's buffer);
 * arrays past malloc's mapping threshold are mapped anew each time, and
 * the kernel clears their pages again (340,000 page faults of a report of
 * 128 socket processes of 100,000 events, 246,000 with their room kept).
 * A thread keeps the room of the arrays it is done with, each under a
 * slot of its own, for the next process: DDL_KEEP_BYTES in all at most,
 * freed as the thread ends. It is outside the events' budget
 * (trace_events.c), as the sets themselves are.
 */
#ifndef DDL_KEEP_H
#define DDL_KEEP_H

#include <stddef.h>

enum {
	DDL_KEEP_IVSET = 0,                     /* .. + DDL_IVSET_SLOTS - 1: ddl_ivset_reuse's slots */
	DDL_KEEP_SUBTRACT = 16,                 /* ddl_ivset_subtract's result */
	DDL_KEEP_SORT,                          /* the interval sort's buffer */
	DDL_KEEP_PAUSES,                        /* the socket calls' pauses (iterations.c) */
	DDL_KEEP_SLOTS
};
#define DDL_KEEP_BYTES ((size_t)8 << 20)

/* The array this thread kept under SLOT, its room in *BYTES, when it has
 * NEED bytes at least; else NULL (*BYTES 0), and one too small is freed. */
void *ddl_keep_take(int slot, size_t need, size_t *bytes);
/* P (BYTES of room) kept under SLOT for this thread's next ddl_keep_take:
 * 0; -1 when it is not (the slot taken, or past DDL_KEEP_BYTES), and P is
 * the caller's still. */
int ddl_keep_give(int slot, void *p, size_t bytes);

#endif
