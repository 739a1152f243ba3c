/*
 * The trace reader used by every tool: loads one trace file into memory,
 * checking every chunk, and says what it could not read and where.
 */
#ifndef DDL_TRACE_READ_H
#define DDL_TRACE_READ_H

#include <stddef.h>
#include <stdint.h>

#include "ddlprof/trace.h"

struct ddl_peer_info {
	uint32_t id;
	int family;
	int local;
	char *text;
};

struct ddl_thread_info {
	uint32_t idx;
	uint32_t tid;
	char *name;
};

/* A communicator as one member recorded it at creation (DDL_STR_COMM). */
struct ddl_comm_info {
	uint32_t id;        /* 0: unseen */
	uint64_t key;       /* shared by every member */
	uint64_t parent;    /* the parent's key for split and shrink, else 0 */
	int rank, nranks, dev, color;
	char host[64];
	char how[16];       /* init, split, shrink, all, unknown; gloo, torch, mpi */
	char *ranks;        /* the members' global ranks as recorded ("0-3,8", "0-6:2", a
	                     * trailing ",+" when cut short), or NULL: not listed */
};

struct ddl_stream_info {
	int dev;            /* -1: unseen */
	char *text;         /* the handle */
};

/* A string record kept as written: call stacks, modules, counters. */
struct ddl_idtext {
	char *text;         /* NULL: unseen */
	uint32_t value;
};

struct ddl_trace;
/* Streaming: called with each events chunk, in file order; non-zero stops. */
typedef int (*ddl_events_fn)(void *ctx, const struct ddl_trace *t, const struct ddl_event *ev,
                             size_t n);

#define DDL_READ_MAX_PROBLEMS 8

struct ddl_trace {
	char *path;
	struct ddl_file_header hdr;
	struct ddl_event *ev;
	size_t nev, cap_ev;
	struct ddl_clock_sample *clk;
	size_t nclk, cap_clk;
	struct ddl_peer_info *peers; /* indexed by id; text NULL when unseen */
	size_t npeers;
	struct ddl_thread_info *threads; /* indexed by thread index */
	size_t nthreads;
	char **meta;               /* "key=value" */
	size_t nmeta;
	char **names;              /* marker and kernel names, indexed by id; NULL when unseen */
	size_t nnames;
	struct ddl_comm_info *comms; /* indexed by communicator id */
	size_t ncomms;
	struct ddl_stream_info *streams; /* indexed by stream id */
	size_t nstreams;
	struct ddl_idtext *stacks;  /* DDL_STR_STACK, by stack id (ddlprof-trace(5)) */
	size_t nstacks;
	struct ddl_idtext *modules; /* DDL_STR_MODULE, by module id */
	size_t nmodules;
	struct ddl_idtext *counters; /* DDL_STR_COUNTER, by counter id */
	size_t ncounters;
	struct ddl_event *open;    /* the calls its threads were blocked in at the last
	                            * DDL_CHUNK_OPEN: nopen events, each followed by its
	                            * args record; dur runs to that flush */
	size_t nopen;
	int ended;                 /* an end (or exec) chunk closes the file */
	struct ddl_end end;
	int exec_end;              /* the image ended by exec */
	int truncated;             /* cut short: no end chunk, or a partial chunk */
	int corrupt;               /* chunks failed their checks and were skipped */
	int incomplete;            /* not all of it held: memory ran out while reading */
	int shrunk;                /* the file was cut shorter while it was read */
	int nproblems;
	char *problems[DDL_READ_MAX_PROBLEMS]; /* "FILE: offset N: what" */
	double ns_per_tick;        /* from the clock samples */
	uint64_t base_ticks;       /* ticks of the first clock sample */
	int64_t base_mono_ns, base_real_ns;
	ddl_events_fn on_events;   /* streaming reads: events go here, not to ev */
	void *on_events_ctx;
	uint64_t nstreamed;        /* events handed to on_events */
	int stream_stopped;        /* on_events asked to stop (the rest is skipped) */
	int64_t align_ns;          /* added to real-time readings: the host's clock
	                            * offset found by aligning the run (0 as read) */
	int run;                   /* its run in a trace set (trace_set.c), -1 none */
	/* events on demand (trace_events.c): a trace read lazily keeps only
	 * their count, nev, and reads them again from the file while held */
	int lazy;
	unsigned pins;             /* holds outstanding */
	int loading;               /* a thread is reading them */
	int ev_lost;               /* its events could not be read again, and it has none
	                            * from then on (1: the file changed, 2: memory ran out) */
	uint64_t used;             /* when last released, for eviction */
	uint32_t classes;          /* a lazy read: 1 << class of each event class it holds */
	size_t file_size;          /* the bytes of the file the first read covered */
	uint64_t file_dev, file_ino;
	int64_t file_mtime_ns, file_ctime_ns; /* its modification and change times then */
	int64_t read_real_ns;      /* CLOCK_REALTIME as that read opened it */
	unsigned checks_failed;    /* chunks a payload checksum or the clock window kept out */
	int checked_before;        /* a read again of the file unchanged (ddl_trace_read_again):
	                            * those two checks, passed before, not made again */
	int rare_kept;             /* a lazy read: RARE holds the places of the events that
	                            * are neither socket calls nor argument records, in
	                            * order (they are few; ddl_trace_next_rare) */
	uint32_t *rare;
	size_t nrare;
	size_t rare_nev;           /* the count of events they are places among */
};

/*
 * Reads PATH into T. Returns 0 when the file is a trace (possibly truncated
 * or with corrupt chunks, which T records with their offsets), or -1 when it
 * cannot be read at all, with the reason, naming the file, in ERR.
 */
int ddl_trace_read(const char *path, struct ddl_trace *t, char *err, size_t errlen);
/*
 * Streaming read: like ddl_trace_read, but each events chunk goes to CB (in
 * file order, zero-copy where the chunk is stored raw) and is not kept:
 * memory stays that of the strings and clock samples however long the
 * trace. The events of one chunk are valid only during the call. An event
 * and its args record may straddle two calls.
 */
int ddl_trace_stream(const char *path, struct ddl_trace *t, ddl_events_fn cb, void *ctx, char *err,
                     size_t errlen);
/* The same for SIZE bytes at BUF, named NAME in messages (fuzzing, tests). */
int ddl_trace_parse(const void *buf, size_t size, const char *name, struct ddl_trace *t, char *err,
                    size_t errlen);
void ddl_trace_free(struct ddl_trace *t);

/*
 * Events on demand (trace_events.c). A lazy trace (ddl_traceset_lazy) holds
 * its events in t->ev only between ddl_trace_hold and the matching
 * ddl_trace_release (holds nest, from any thread); t->nev is always
 * there. Released traces stay in memory until the events of all of them
 * pass ddl_events_budget bytes, then the least recently used go, to be
 * read again from their files when next held (the first read's bytes only:
 * a file that grew is read as it was). A trace whose events cannot be read
 * again (the file gone or changed, no memory) has none from then on (nev
 * 0), and is marked incomplete with the reason among its problems. For a
 * trace that is not lazy both are nothing.
 */
void ddl_trace_hold(const struct ddl_trace *t);
void ddl_trace_release(const struct ddl_trace *t);
/* Whether T's events are in memory now (a hold would not read them again). */
int ddl_trace_in_memory(const struct ddl_trace *t);
/* The classes of events T may hold, 1 << class each: all for a trace not
 * lazy (its first read did not note them); and whether it may hold CLS. */
static inline uint32_t ddl_trace_classes(const struct ddl_trace *t)
{
	return t->lazy ? t->classes : UINT32_MAX;
}
static inline int ddl_trace_has_class(const struct ddl_trace *t, int cls)
{
	return ddl_trace_classes(t) >> cls & 1u;
}
/* The classes of the events a socket job has most of, and the records
 * that are not events: those the places in ddl_trace.rare leave out. */
#define DDL_CLASSES_COMMON \
	(1u << DDL_CLASS_TX | 1u << DDL_CLASS_RX | 1u << DDL_CLASS_WAIT | 1u << DDL_CLASS_CONN | \
	 1u << DDL_CLASS_ARGS)
/*
 * For a stage that looks at none of the events of DDL_CLASSES_COMMON
 * (collectives, steps, markers, GPU calls): the next place I of T's
 * events to look at, X the loop's count (from 0); 0 past the last. The
 * first read's places of the others (ddl_trace.rare) where it kept them
 * and they are places among the events held, else every event in turn:
 *	for (size_t x = 0, i; ddl_trace_next_rare(t, &x, &i);)
 * A job of socket calls so skips them, where a pass over them would cost
 * each such stage as much as the stages that use them.
 */
static inline int ddl_trace_next_rare(const struct ddl_trace *t, size_t *x, size_t *i)
{
	if (t->rare_kept && t->rare_nev == t->nev) {
		if (*x >= t->nrare)
			return 0;
		*i = t->rare[(*x)++];
		return 1;
	}
	if (*x >= t->nev)
		return 0;
	*i = (*x)++;
	return 1;
}
extern size_t ddl_events_budget;    /* bytes; default DDL_EVENTS_BUDGET */
#define DDL_EVENTS_BUDGET ((size_t)256 << 20)
extern _Atomic unsigned long ddl_events_rereads; /* events read again, for tests and benchmarks */
extern _Atomic unsigned long ddl_events_rereads_unchecked; /* of those, the files unchanged
                                                             * (ddl_trace_read_again) */
/* Lazy traces T[0..N) take part in eviction (once loaded: the array no
 * longer moves), and leave it before they are freed. */
void ddl_events_register(struct ddl_trace *t, size_t n);
void ddl_events_unregister(struct ddl_trace *t, size_t n);
/* The working arrays of a stage that grow with the events of the process
 * it works on count against the same budget: BYTES charged before they
 * are taken (released events go first, to make room) and given back
 * when they are freed. ddl_grow_charged is ddl_grow charging what it
 * adds (from empty, into a pooled array where one has room); the
 * array's owner gives back CAP * ELEM when it frees it, or gives the
 * array itself back (ddl_events_give). */
void ddl_events_charge(size_t bytes);
void ddl_events_uncharge(size_t bytes);
int ddl_grow_charged(void **p, size_t *cap, size_t need, size_t elem);
/* A working array of BYTES charged, given back: kept in the pool of
 * arrays the next reads and working arrays take (ddl_grow_charged from
 * empty takes one with room) while it fits the budget, else freed. */
void ddl_events_give(void *p, size_t bytes);
/* Bytes the budget holds now: events in memory, arrays kept for the next
 * reads, working arrays charged (for tests and benchmarks). */
size_t ddl_events_in_memory(void);
/*
 * Reads FIRST's file again into T, as far as FIRST's read covered, as
 * ddl_trace_read does (every read notes the bytes it covered and the file
 * in T: file_size, file_dev, file_ino, its times), the events into BUF
 * (CAP events of room, from malloc; NULL: none), which T owns from then on
 * however the read ends. Where the file is the one FIRST read and has not
 * changed since (device, inode, size, modification and change times the
 * same, the change more than a second before FIRST's read, so that a
 * filesystem's coarse clock cannot hide a change made just after it), and
 * FIRST's read went over all of it (not stopped, nor short of memory)
 * and kept no chunk out by its payload checksum or clock window, those
 * two checks are not made again (T->checked_before): they passed on
 * the same bytes. Either way the caller compares T with FIRST.
 */
int ddl_trace_read_again(const struct ddl_trace *first, struct ddl_trace *t, struct ddl_event *buf,
                         size_t cap, char *err, size_t errlen);

/*
 * Bounds on what the reader hands out, whatever the file says: the header's
 * and every clock sample's times lie in [0, DDL_NS_MAX] (1970 to 2116;
 * others are refused), converted times in [DDL_NS_MIN, DDL_NS_MAX] and
 * durations in [0, DDL_DUR_MAX]. So a time minus a time plus a duration
 * fits in int64_t; sums over many events do not, and saturate
 * (ddl_ns_sat_add) or are taken in double.
 */
#define DDL_NS_MIN (-(INT64_C(1) << 60))
#define DDL_NS_MAX (INT64_C(1) << 62)
#define DDL_DUR_MAX (INT64_C(1) << 61)

/* NS (a time or a difference of times, in double) brought into
 * [DDL_NS_MIN, DDL_NS_MAX]; NaN gives 0. */
static inline int64_t ddl_ns_clamp(double ns)
{
	if (ns != ns)
		return 0;
	if (ns <= (double)DDL_NS_MIN)
		return DDL_NS_MIN;
	if (ns >= (double)DDL_NS_MAX)
		return DDL_NS_MAX;
	return (int64_t)ns;
}

/* base + d, clamped: timestamps from a damaged or hostile file must not
 * overflow where the report subtracts them. Exact in integers where BASE
 * (a checked header or sample time) and D allow. Inline, as the two below:
 * every stage converts every event it reads. */
static inline int64_t ddl_ns_add(int64_t base, double d)
{
	if (!(d > -4e18 && d < 4e18))
		return ddl_ns_clamp((double)base + d);
	int64_t v = base + (int64_t)d;
	return v < DDL_NS_MIN ? DDL_NS_MIN : v > DDL_NS_MAX ? DDL_NS_MAX : v;
}

/* Ticks to nanoseconds on the process's CLOCK_MONOTONIC and CLOCK_REALTIME,
 * in [DDL_NS_MIN, DDL_NS_MAX]. */
static inline int64_t ddl_trace_mono_ns(const struct ddl_trace *t, uint64_t ticks)
{
	return ddl_ns_add(t->base_mono_ns, (double)(int64_t)(ticks - t->base_ticks) * t->ns_per_tick);
}

static inline int64_t ddl_trace_real_ns(const struct ddl_trace *t, uint64_t ticks)
{
	return ddl_ns_add(t->base_real_ns,
	                  (double)t->align_ns + (double)(int64_t)(ticks - t->base_ticks) * t->ns_per_tick);
}

/* An event's duration in nanoseconds, in [0, DDL_DUR_MAX]. */
static inline int64_t ddl_trace_dur_ns(const struct ddl_trace *t, const struct ddl_event *e)
{
	double d = (double)e->dur;
	if (e->flags & DDL_EVF_LONG)
		d *= (double)(1u << DDL_DUR_LONG_SHIFT);
	d *= t->ns_per_tick;
	/* at most 2^61 ns (73 years): a start plus a duration cannot overflow */
	return d < (double)DDL_DUR_MAX ? (int64_t)d : DDL_DUR_MAX;
}

/* A + B, saturating at the ends of int64_t (sums of durations). */
static inline int64_t ddl_ns_sat_add(int64_t a, int64_t b)
{
	int64_t s;
	if (__builtin_add_overflow(a, b, &s))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return s;
}
/* The value of a meta key (the last given, when it was given more than once), or NULL. */
const char *ddl_trace_meta(const struct ddl_trace *t, const char *key);

/*
 * The args record of event I (DDL_EVF_ARGS), or NULL when it has none or
 * the record that should follow is missing (a lost chunk).
 */
const struct ddl_args *ddl_event_args(const struct ddl_trace *t, size_t i);
/*
 * The stack id of event I (DDL_EVF_STACK: its stack record follows, after
 * its args record if any), or 0 when it has none or the record is missing.
 */
uint32_t ddl_event_stack(const struct ddl_trace *t, size_t i);
/* A name by id (markers, kernels), or NULL. */
const char *ddl_trace_name(const struct ddl_trace *t, uint64_t id);
/* A communicator by id, or NULL when this trace never described it. */
const struct ddl_comm_info *ddl_trace_comm(const struct ddl_trace *t, uint32_t id);

/* Room in *P (*CAP elements of ELEM bytes) for NEED, doubling from 1024; 0, or -1
 * without memory (*P as it was). */
int ddl_grow(void **p, size_t *cap, size_t need, size_t elem);
/* The room ddl_grow makes for NEED from CAP: CAP (1024 from none) doubled until it fits. */
size_t ddl_grow_cap(size_t cap, size_t need);

/* Names and classes of event kinds; "unknown" / 0 for kinds newer than us. */
const char *ddl_event_name(unsigned kind);
/* Inline, from a table of the kinds' classes in each file that asks: every
 * stage asks it of every event it reads. */
static inline int ddl_event_class(unsigned kind)
{
	static const unsigned char cls[] = {
		0,
#define DDL_X_KIND(n, s, c) c,
		DDL_EVENT_KINDS(DDL_X_KIND)
#undef DDL_X_KIND
	};
	return kind < DDL_EV_COUNT ? cls[kind] : 0;
}
/* Whether a kind is a socket call (send, receive, wait, connection). */
static inline int ddl_event_is_net(unsigned kind)
{
	int c = ddl_event_class(kind);
	return c == DDL_CLASS_TX || c == DDL_CLASS_RX || c == DDL_CLASS_WAIT || c == DDL_CLASS_CONN;
}

#endif
