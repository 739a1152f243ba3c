/*
 * Sets of time intervals, the analyzer's one implementation: the stall
 * attribution (breakdown.c, breakdown_gpu.c) and the input pipeline
 * (inputs.c) build them from events and ask what they cover. An interval
 * is [a, b) in nanoseconds with a tag (what it is: remote traffic, a
 * collective's operation); a merged set is sorted and disjoint.
 */
#ifndef DDL_IVSET_H
#define DDL_IVSET_H

#include <stddef.h>
#include <stdint.h>

struct ddl_iv {
	int64_t a, b;
	int tag;
};

struct ddl_ivset {
	struct ddl_iv *v;
	size_t n, cap;
	int nomem; /* a push failed: the set lacks intervals */
};

/* Appends [A, B) (nothing when B <= A). 0, or -1 without memory (then
 * S->nomem is set and the set stays as it was). */
int ddl_ivset_push(struct ddl_ivset *s, int64_t a, int64_t b, int tag);
/* As ddl_ivset_push into a set that will only be merged (ddl_ivset_merge,
 * any gap): the intervals last pushed that [A, B) contains, with no tag
 * it lacks, are dropped first, since merging gives the same set without
 * them. A call pushed after the calls made inside it (a record is written
 * when its call returns) so leaves the set in order and as short as the
 * outer calls, not one interval out of order after every run of inner ones. */
int ddl_ivset_add(struct ddl_ivset *s, int64_t a, int64_t b, int tag);
/* As ddl_ivset_push into a set that will be merged with GAP: merges it
 * whenever it fills up (from 4096 on), so that it holds about what the
 * merged set does, not every interval pushed. */
int ddl_ivset_push_merging(struct ddl_ivset *s, int64_t a, int64_t b, int tag, int64_t gap);
/* Sorts S and merges intervals that overlap or are less than GAP apart;
 * a merged interval's tag is the OR of its parts' tags. */
void ddl_ivset_merge(struct ddl_ivset *s, int64_t gap);
/* Sorts S by start, as it is (no merging). */
void ddl_ivset_sort(struct ddl_ivset *s);
/* Appends merged A less merged B to OUT (A's tags kept). 0, or -1 without memory. */
int ddl_ivset_minus(const struct ddl_ivset *a, const struct ddl_ivset *b, struct ddl_ivset *out);
/* Merged S less merged T (tags kept), in place. 0, or -1 without memory. */
int ddl_ivset_subtract(struct ddl_ivset *s, const struct ddl_ivset *t);
/* Whether merged S covers instant X. */
int ddl_ivset_covers(const struct ddl_ivset *s, int64_t x);
/* The first interval of merged S that ends after X (S->n when none). */
size_t ddl_ivset_find(const struct ddl_ivset *s, int64_t x);
/*
 * Nanoseconds of [A, B) covered by merged S, in total; with BY_TAG (entries
 * for tags 0 .. NTAGS-1) also by tag, intervals of other tags counted in the
 * total only. *FROM (may be NULL) is where to start looking: ask in order
 * of A and the search resumes where it stopped.
 */
int64_t ddl_ivset_overlap(const struct ddl_ivset *s, size_t *from, int64_t a, int64_t b,
                          int64_t *by_tag, int ntags);
/*
 * The instants where the stretches of [A, B) begin that no interval of the
 * N merged sets SETS starts or ends inside: A, every start and end inside
 * (A, B), and B, sorted, into *OUT (grown as needed; *CAP its room, the
 * caller frees it). Their count, or -1 without memory.
 */
long ddl_ivset_cuts(const struct ddl_ivset *const *sets, int n, int64_t a, int64_t b, int64_t **out,
                    size_t *cap);
/* Length of merged S, in nanoseconds. */
int64_t ddl_ivset_length(const struct ddl_ivset *s);
void ddl_ivset_free(struct ddl_ivset *s);

/* Room kept from one process to the next (keep.h), for the sets a stage
 * makes anew for each: under a slot of the caller's (below DDL_IVSET_SLOTS). */
enum { DDL_IVSET_SLOTS = 16 };
/* Empty S ({0}) given the room this thread kept under SLOT, if any. */
void ddl_ivset_reuse(struct ddl_ivset *s, int slot);
/* S's room kept under SLOT for this thread's next ddl_ivset_reuse, or
 * freed (past keep.h's DDL_KEEP_BYTES, or with the slot taken); S is {0}
 * after. */
void ddl_ivset_keep(struct ddl_ivset *s, int slot);

#endif
