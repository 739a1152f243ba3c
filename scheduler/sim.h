/*
 * ddlprof-sim's shared declarations: the job trace the loaders fill, the
 * cluster's GPU accounting, the event heap, the policy interface and the
 * simulator state the engine and the policies share. Each subsystem lives
 * in its own file (sim.c options, load_*.c readers, trace.c what the
 * readers share, cluster.c, events.c, engine.c, policy_*.c, models.c,
 * output.c, generate.c).
 */
#ifndef DDL_SIM_H
#define DDL_SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "progress.h"

#define DDL_SIM_SCHEMA "ddlprof-sim/1"

/* Placement levels, tightest first: every GPU on one machine, several
 * machines of one rack, several racks. */
enum { DDL_SIM_MACHINE = 0, DDL_SIM_RACK = 1, DDL_SIM_CLUSTER = 2, DDL_SIM_LEVELS = 3 };

enum ddl_sim_state { DDL_SIM_PENDING, DDL_SIM_WAITING, DDL_SIM_RUNNING, DDL_SIM_DONE };

/* Where a job's slowdowns came from: the model table, the trace's own
 * slowdown columns, or a ddlprof profile. */
enum { DDL_SIM_SLOW_TABLE, DDL_SIM_SLOW_TRACE, DDL_SIM_SLOW_PROFILE };

struct ddl_sim_job {
	/* From the trace. */
	char id[48];
	char model[32];
	double arrival;        /* s */
	double work;           /* s of run time at the job's tightest feasible level; 0 while it
	                        * is still to come from iterations x iter_s (sim.c) */
	double iterations;     /* iterations the trace gives, 0 if none */
	double iter_s;         /* s an iteration on one machine, 0 if unknown */
	int gpus;
	double slow[DDL_SIM_LEVELS]; /* slowdown per level, slow[MACHINE] == 1 */
	double ref_bw[DDL_SIM_LEVELS]; /* Gbit/s slow[] holds at; 0: the table's references */
	int slow_from;         /* DDL_SIM_SLOW_*: where slow[] came from */
	int consolidate;       /* the model is consolidation-sensitive (las) */
	/* Derived from the cluster. */
	int min_level;         /* tightest level the job can ever get */
	int idx;               /* position in arrival order */
	/* Simulation state. */
	enum ddl_sim_state state;
	int level;             /* current placement level while running */
	int *gpu_ids;          /* gpus entries while running */
	double rate;           /* ideal seconds of work per second while running */
	double seg_start;      /* GPUs acquired */
	double seg_work_start; /* restart cost paid, progress starts */
	double wait_since;     /* entered the waiting queue */
	double key[2];         /* policy order while waiting, lower first */
	unsigned version;      /* invalidates stale finish events */
	int started;           /* has run before: a restart costs */
	/* Accounting. */
	double progress;       /* s of ideal work done */
	double attained;       /* GPU-seconds held */
	double comm_lost;      /* s spent beyond ideal because of loose placement */
	double queued;         /* s waiting, all waits together */
	double restart_s;      /* s spent restarting */
	double first_start, finish;
	int first_level;
	int preemptions, migrations;
	int slot;              /* position in the running list */
};

struct ddl_sim_trace {
	struct ddl_sim_job *jobs;
	size_t n, cap;
	size_t skipped;        /* bad records skipped */
};

struct ddl_sim_profile;
struct ddl_sim_profiles;

/* Options shared by the loaders. */
struct ddl_sim_load_opts {
	int strict;            /* a bad record rejects the whole file */
	struct ddl_sim_profiles *profiles; /* reports the trace names, read once; NULL: the
	                                    * loader keeps its own while it runs */
};

/*
 * Loaders. Each reads PATH into T, reporting a bad record on stderr as
 * "PATH:LINE: reason" (or "PATH: record N: reason") and skipping it, or
 * with o->strict rejecting the file. Return 0, or -1 after one message
 * naming the file when it cannot be read, is not of the format, or was
 * rejected.
 */
int ddl_sim_load_csv(const char *path, struct ddl_sim_trace *t, const struct ddl_sim_load_opts *o);
int ddl_sim_load_tiresias(const char *path, struct ddl_sim_trace *t,
                          const struct ddl_sim_load_opts *o);
int ddl_sim_load_helios(const char *path, struct ddl_sim_trace *t,
                        const struct ddl_sim_load_opts *o);
int ddl_sim_load_philly(const char *path, struct ddl_sim_trace *t,
                        const struct ddl_sim_load_opts *o);

/*
 * What the loaders share (trace.c).
 *
 * Appends a job, its slowdowns from the model table (models.c; MODEL NULL
 * or empty: the default row). Returns the job, or NULL when memory ran
 * out.
 */
struct ddl_sim_job *ddl_sim_trace_add(struct ddl_sim_trace *t, const char *id, double arrival,
                                      int gpus, double work, const char *model);
void ddl_sim_trace_free(struct ddl_sim_trace *t);
/* Reports a bad record at WHERE ("file:line", "file: record N (...)"), in
 * one line: "...; record skipped", or under --strict "...; the trace is
 * rejected (--strict)" and -1. */
int ddl_sim_bad_record(struct ddl_sim_trace *t, const struct ddl_sim_load_opts *o,
                       const char *path, const char *where, const char *why);
/* A run given as a duration (field DUR) or as iterations (ITERS, with an
 * optional iteration time ITER_S; either NULL where the format has no such
 * column): *WORK (0 when it is to come from iterations), *N, *IT. NULL, or
 * why the record is bad, naming DUR_NAME (not reentrant). */
const char *ddl_sim_record_run(const char *dur, const char *iters, const char *iter_s,
                               const char *dur_name, double *work, double *n, double *it);
/* The profile a record names, NAME relative to TRACE, read through CACHE:
 * 0 with *P (NULL when NAME is empty); 1 when it is unusable, WHY saying
 * so ("profile PATH: reason"); -1 when memory ran out. */
int ddl_sim_record_profile(struct ddl_sim_profiles *cache, const char *trace, const char *name,
                           const struct ddl_sim_profile **p, char *why, size_t n);
/* Gives J the speed its record names: profile P (may be NULL), then its
 * own slowdowns SR, SC (0: not given) over those. */
void ddl_sim_record_speed(struct ddl_sim_job *j, const struct ddl_sim_profile *p, double sr,
                          double sc);
/* NAME as a trace names it: relative to the directory of TRACE unless absolute. */
void ddl_sim_profile_path(const char *trace, const char *name, char *out, size_t n);
/* Parses a double / a positive int, whole field; 0 or -1. */
int ddl_sim_parse_double(const char *s, double *v);
int ddl_sim_parse_int(const char *s, long *v);
/*
 * The largest time a trace may give, as an arrival (absolute or relative)
 * or a duration: 1e10 s, about 317 years. It keeps every simulated time
 * well inside the range where doubles resolve milliseconds (2^52 ms is
 * about 4.5e12 s), so leases and job ends stay distinct instants.
 */
#define DDL_SIM_MAX_TIME 1e10
/* The shortest --lease, s: finer leases only multiply lease ends. */
#define DDL_SIM_MIN_LEASE 1e-3
/* V is finite and 0 <= V <= DDL_SIM_MAX_TIME. */
int ddl_sim_time_ok(double v);
/* "YYYY-MM-DD HH:MM:SS" (UTC; year 1970..9999, each field in range) or
 * seconds, to seconds; 0, or -1 when it is neither or the time is outside
 * 0..DDL_SIM_MAX_TIME. */
int ddl_sim_parse_time(const char *s, double *v);

/*
 * A small CSV reader shared by the CSV loaders (trace.c): no quoting
 * beyond stripping one pair of surrounding double quotes, fields split on
 * commas.
 */
struct ddl_sim_csv {
	FILE *f;
	const char *path;
	char *line;
	size_t cap;
	long lineno;
	char *field[64];
	int nfield;
	char *head[64];        /* header names, owned */
	int nhead;
};
/* Opens PATH and reads the header. Returns 0 or -1 with a message. */
int ddl_sim_csv_open(struct ddl_sim_csv *c, const char *path);
/* Next non-empty record: 1, 0 at the end. */
int ddl_sim_csv_next(struct ddl_sim_csv *c);
/* Column index of NAME in the header, or -1. */
int ddl_sim_csv_col(const struct ddl_sim_csv *c, const char *name);
/* Field I of the current record, "" when the record is short. */
const char *ddl_sim_csv_get(const struct ddl_sim_csv *c, int i);
void ddl_sim_csv_close(struct ddl_sim_csv *c);
/* The header lacks what the format needs: "PATH: not a WHAT" on stderr, C
 * closed, and -1 for the loader to return. */
int ddl_sim_csv_refuse(struct ddl_sim_csv *c, const char *what);
/* The current record is bad: ddl_sim_bad_record at "PATH:LINE"; -1 under
 * --strict, else 0. */
int ddl_sim_csv_bad(struct ddl_sim_trace *t, const struct ddl_sim_load_opts *o,
                    const struct ddl_sim_csv *c, const char *why);
/* The current record's job name into ID (N bytes): field COL (-1: none),
 * or "lineN" when that is empty. */
void ddl_sim_csv_id(const struct ddl_sim_csv *c, int col, char *id, size_t n);

/*
 * Job speeds from ddlprof-report/1 profiles (load_profile.c): a report's
 * job.sensitivity.slowdown {rack, cluster} at the bandwidths of its
 * job.sensitivity.bandwidth_bps, read once per path.
 */
struct ddl_sim_profile {
	char *path;
	int ok;                        /* read and usable */
	int missing;                   /* no such file */
	char why[256];                 /* when not ok: "FIELD: reason" or the system's error */
	double slow[DDL_SIM_LEVELS];
	double bw[DDL_SIM_LEVELS];     /* Gbit/s; 0 where the report gives none */
	double iter_s;                 /* job.sensitivity.iteration_s.machine; 0 if none */
};
struct ddl_sim_profiles {
	struct ddl_sim_profile **v;
	size_t n, cap;
	size_t *slot, nslot;           /* open-addressing index by path */
};
/* The report at PATH, read on first use and kept in C. NULL when memory
 * ran out; else check ->ok (->why says what is wrong, ->missing that the
 * file does not exist). */
const struct ddl_sim_profile *ddl_sim_profile_get(struct ddl_sim_profiles *c, const char *path);
void ddl_sim_profiles_free(struct ddl_sim_profiles *c);
/* Gives J the slowdowns of the usable profile P when J's are still the
 * table's, and P's iteration time when J has iterations and no time. */
void ddl_sim_profile_apply(struct ddl_sim_job *j, const struct ddl_sim_profile *p);

/* The model table (models.c). */
struct ddl_sim_model {
	const char *name;      /* prefix matched against the trace's model name */
	double slow[DDL_SIM_LEVELS];
};
/* Fills slow[] for MODEL, the default row for unknown models. Returns 1
 * when the model was known. */
int ddl_sim_model_slowdown(const char *model, double slow[DDL_SIM_LEVELS]);
const struct ddl_sim_model *ddl_sim_model_table(size_t *n);

/* Bandwidths (Gbit/s); the table's figures hold at the reference values. */
#define DDL_SIM_REF_BW_RACK 100.0
#define DDL_SIM_REF_BW_CLUSTER 40.0

/* The cluster (cluster.c). GPU g sits on machine g / gpm, machine m in rack
 * m / mpr. */
struct ddl_sim_cluster {
	int racks, mpr, gpm;   /* racks, machines per rack, GPUs per machine */
	int machines, gpus;
	double bw[DDL_SIM_LEVELS];
	int *owner;            /* per GPU: job idx or -1 */
	int *mfree;            /* free GPUs per machine */
	int *rfree;            /* free GPUs per rack */
	int *nfree_machines;   /* gpm+1 entries: machines with exactly k free */
	int free;
	int *scratch;          /* machines, for ordering */
};
int ddl_sim_cluster_init(struct ddl_sim_cluster *c, int racks, int mpr, int gpm);
void ddl_sim_cluster_free(struct ddl_sim_cluster *c);
/* The tightest level at which N GPUs fit now, not looser than MAX_LEVEL;
 * -1 when none. Fills ids[] (n entries) without taking them. */
int ddl_sim_cluster_find(struct ddl_sim_cluster *c, int n, int min_level, int max_level, int *ids);
/* Takes / gives back GPUs for job JOB. Taking a GPU some job holds is an
 * invariant violation: returns -1 (with a message), else 0. */
int ddl_sim_cluster_take(struct ddl_sim_cluster *c, int job, int n, const int *ids);
void ddl_sim_cluster_give(struct ddl_sim_cluster *c, int n, const int *ids);
/* The level a set of GPUs spans. */
int ddl_sim_cluster_level(const struct ddl_sim_cluster *c, int n, const int *ids);
/* Tightest level N GPUs can ever have on this cluster. */
int ddl_sim_cluster_min_level(const struct ddl_sim_cluster *c, int n);
/* Recounts the free GPUs from the owners; 0 or -1 (with a message). */
int ddl_sim_cluster_check(const struct ddl_sim_cluster *c);

/* The event heap (events.c): ordered by time, then insertion order. */
enum ddl_sim_event_kind { DDL_SIM_EV_FINISH, DDL_SIM_EV_ROUND };
struct ddl_sim_event {
	double t;
	uint64_t seq;
	int kind;
	int job;
	unsigned version;
};
struct ddl_sim_heap {
	struct ddl_sim_event *ev;
	size_t n, cap;
	uint64_t seq;
};
int ddl_sim_heap_push(struct ddl_sim_heap *h, double t, int kind, int job, unsigned version);
/* Pops the earliest event into *e: 1, or 0 when empty. */
int ddl_sim_heap_pop(struct ddl_sim_heap *h, struct ddl_sim_event *e);
const struct ddl_sim_event *ddl_sim_heap_top(const struct ddl_sim_heap *h);
void ddl_sim_heap_free(struct ddl_sim_heap *h);

struct ddl_sim;

/*
 * A scheduling policy. The engine keeps the waiting queue in key order
 * (lower first; ties by arrival), dispatches from it whenever GPUs free up
 * or jobs arrive, and at every lease end may preempt and migrate.
 */
struct ddl_sim_policy {
	const char *name;
	const char *summary;
	int strict;       /* dispatch stops at the first job that cannot start */
	int preemptive;   /* at lease ends, running jobs outranked by waiting ones yield */
	int migrate;      /* at lease ends, loosely placed jobs move to tighter placements */
	int leases;       /* the policy acts at lease ends at all */
	/* Order key of a job now. */
	void (*key)(const struct ddl_sim *s, const struct ddl_sim_job *j, double now, double key[2]);
	/* The loosest level the job accepts now (>= j->min_level). */
	int (*max_level)(struct ddl_sim *s, const struct ddl_sim_job *j, double now);
	/* Optional: the job started at LEVEL after waiting WAITED seconds. */
	void (*placed)(struct ddl_sim *s, const struct ddl_sim_job *j, int level, double waited);
	/* Optional: order of migration candidates, lower first. */
	double (*migrate_key)(const struct ddl_sim *s, const struct ddl_sim_job *j, double now);
};

extern const struct ddl_sim_policy ddl_sim_policy_fifo;
extern const struct ddl_sim_policy ddl_sim_policy_las;
extern const struct ddl_sim_policy ddl_sim_policy_gandiva;
extern const struct ddl_sim_policy ddl_sim_policy_dally;
extern const struct ddl_sim_policy ddl_sim_policy_sensitivity;

/* dally's auto-tuned timers: per GPU-demand bucket (log2) and level. */
#define DDL_SIM_TIMER_BUCKETS 12
#define DDL_SIM_TIMER_HISTORY 32
#define DDL_SIM_TIMER_MIN 1   /* leases */
#define DDL_SIM_TIMER_MAX 8   /* leases */
struct ddl_sim_timer {
	double wait[DDL_SIM_TIMER_HISTORY];
	int n, next;
	double mean_s, sd_s;   /* of the waits remembered */
	int leases;            /* the timer: mean + 2 sd, in whole leases, in bounds */
};

struct ddl_sim_config {
	double lease;          /* s */
	double restart_cost;   /* s */
	int check;             /* verify invariants while running */
	uint64_t seed;
};

struct ddl_sim {
	struct ddl_progress progress; /* a line on a terminal for long runs */
	const struct ddl_sim_policy *policy;
	struct ddl_sim_config cfg;
	struct ddl_sim_cluster cl;
	struct ddl_sim_job *jobs;
	size_t njobs;
	/* Waiting queue, job idx in key order. */
	int *wait;
	size_t nwait;
	/* Running jobs, job idx, unordered. */
	int *run;
	size_t nrun;
	struct ddl_sim_heap heap;
	int *ids;              /* placement scratch, one entry per GPU */
	int *tmp;              /* job scratch, one entry per job */
	double now;
	struct ddl_sim_timer timers[DDL_SIM_TIMER_BUCKETS][2];
	/* Totals. */
	double busy_gpu_s;
	size_t done, preemptions, migrations, rounds;
};

/* Runs the simulation over JOBS (in arrival order). Returns 0, or -1 when
 * an invariant failed (--check) or memory ran out, with a message. */
int ddl_sim_run(struct ddl_sim *s);
/* Attained service of a job now, GPU-seconds (las, dally, sensitivity). */
double ddl_sim_attained(const struct ddl_sim_job *j, double now);
/* Network lag of a job now: seconds lost to loose placement. */
double ddl_sim_comm_lost(const struct ddl_sim_job *j, double now);
/* Ideal seconds of work left now. */
double ddl_sim_remaining(const struct ddl_sim_job *j, double now);
/* dally's network lag of a job now: (ideal - actual progress) / ideal over
 * the time it ran, 0..1 (policy_dally.c). */
double ddl_sim_dally_lag(const struct ddl_sim_job *j, double now);
/* las queue index from attained service (shared with dally, sensitivity). */
int ddl_sim_las_queue(double attained);

/* Output (output.c). */
struct ddl_sim_summary {
	size_t jobs, completed;
	double makespan, jct_mean, jct_p50, jct_p90, jct_p99, queue_mean, comm_overhead;
	double utilization;
	size_t placed[DDL_SIM_LEVELS];
	size_t profiled;       /* jobs whose slowdowns came from a ddlprof profile */
};
void ddl_sim_summarize(const struct ddl_sim *s, struct ddl_sim_summary *m);
int ddl_sim_print_text(FILE *f, const struct ddl_sim *s, const struct ddl_sim_summary *m,
                       size_t skipped);
int ddl_sim_print_json(FILE *f, const struct ddl_sim *s, const struct ddl_sim_summary *m,
                       size_t skipped);
/* Writes per-job records to F, CSV with CSV, JSON lines otherwise. 0, or -1
 * when F failed. */
int ddl_sim_write_jobs(FILE *f, int csv, const struct ddl_sim *s);

/* The synthetic trace generator (generate.c): N jobs in our CSV format, or
 * with PHILLY a Philly job log for machines of GPM GPUs, sized for roughly
 * LOAD of a cluster of GPUS GPUs. 0, or -1 when memory ran out or F failed. */
int ddl_sim_generate(FILE *f, long n, uint64_t seed, int gpus, int gpm, double load, int philly);

/* jansson's error text quotes the input, raw: one line of it, for a one-line message. */
static inline const char *ddl_sim_one_line(char *text)
{
	for (char *c = text; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = ' ';
	return text;
}

#endif
