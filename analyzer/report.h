/*
 * ddlprof-report's model: the selected run's traces summarised per process
 * and per thread, and the output formats that print it.
 */
#ifndef DDL_REPORT_H
#define DDL_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "ivset.h"
#include "trace_set.h"

struct ddl_netsum {
	uint64_t calls;
	uint64_t bytes_sent, bytes_received;
	uint64_t bytes_sent_remote, bytes_received_remote; /* to and from other hosts */
	int64_t in_calls_ns;  /* inside send/recv/connect/accept family calls */
	int64_t blocked_ns;   /* inside poll/select/epoll waits on sockets */
	uint32_t peers_local, peers_remote;
};

/* One iteration: its span on the real-time clock, and the thread that ran
 * it (its OS thread id; 0 when found from traffic, meaning the main thread). */
struct ddl_iter {
	int64_t start_ns, end_ns;
	uint32_t tid;
};

/* Where an iteration's time went (DESIGN.md section 7); parts sum to it. */
#define DDL_PARTS(X) \
	X(compute) \
	X(data_stall) \
	X(interconnect_stall) \
	X(network_stall) \
	X(idle)

struct ddl_parts {
#define DDL_X_PART(n) double n;
	DDL_PARTS(DDL_X_PART)
#undef DDL_X_PART
};

/*
 * Collectives of one process (gpu.c): NCCL's, gloo's and MPI's (host
 * collectives), or, where no library's calls were seen, the program's own
 * torch.distributed calls. Bytes are this rank's (count x type size, as
 * the call gave them); intra and inter by the span of the communicator.
 */
enum ddl_op { DDL_OP_ALLREDUCE, DDL_OP_BROADCAST, DDL_OP_BCAST, DDL_OP_REDUCE, DDL_OP_ALLGATHER,
              DDL_OP_REDUCESCATTER, DDL_OP_ALLTOALL, DDL_OP_GATHER, DDL_OP_SCATTER, DDL_OP_SEND,
              DDL_OP_RECV, DDL_OP_BARRIER, DDL_COLL_OPS /* allreduce .. recv in NCCL's order,
                                                           then barrier */ };
struct ddl_collsum {
	uint64_t count, bytes, intra_bytes, inter_bytes, unknown_bytes;
	uint64_t op_count[DDL_COLL_OPS], op_bytes[DDL_COLL_OPS];
	uint64_t timed;      /* with a device interval */
	double device_s;     /* device time of collectives (or groups of them) */
	double host_s;       /* time inside the calls on the host (gloo, MPI: the whole operation) */
	uint64_t nccl, hcoll; /* of count: NCCL's and host collectives (gloo's and MPI's) */
	uint64_t mpi;        /* of hcoll: MPI's */
	uint64_t py_calls, py_bytes; /* torch.distributed calls the Python hook saw */
	const char *source;  /* "nccl", "gloo", "mpi", joined with "+" ("nccl+gloo"), "torch"
	                      * or NULL (none) */
};
/* An operation's name ("allreduce"), by its index; NULL past the last. */
const char *ddl_coll_op_name(unsigned op);
/* The operation index of event I of T (an NCCL, gloo, MPI or
 * torch.distributed call; an MPI wait: its start's), or DDL_COLL_OPS when
 * it is none. */
unsigned ddl_coll_op_of(const struct ddl_trace *t, size_t i);
/* The same from an event kind alone (not the Python hook's phases, not MPI's
 * waits). */
unsigned ddl_coll_op_kind(unsigned kind);
/* The name of a phase of the Python hook's (enum ddl_phase): "forward". */
const char *ddl_phase_name(int phase);
/* Whether KIND is one of MPI's calls. */
int ddl_kind_is_mpi(unsigned kind);
/* Whether every member of the communicator makes a call of KIND alike,
 * starting it when it is ready (a collective; not a point-to-point call,
 * not a nonblocking start): what stragglers are found by. */
int ddl_coll_matched(unsigned kind);
/* ... and whether it also ends at nearly the same moment on all of them
 * (gloo's; of MPI's only a barrier: a rank returns from MPI's others once
 * its own part is done): what clocks align by, with every NCCL call's
 * device interval. */
int ddl_coll_ends_together(unsigned kind);
/* Bytes per element of collective I of T: by NCCL's data type, or as gloo
 * and the Python hook record it; 0 when unknown (no args, a newer type). */
size_t ddl_coll_elem_size(const struct ddl_trace *t, size_t i);
/* The reduction ("sum") of an NCCL call of KIND that reduces (all-reduce,
 * reduce, reduce-scatter), by its recorded OP; NULL for the others. */
const char *ddl_nccl_redop_name(unsigned kind, unsigned op);

/* CUDA work of one process. */
/*
 * CUPTI's correlation (correlate.c): its records of the calls that put work
 * on the device, each device interval it timed tied to the call that issued
 * it, and how long that work waited on the device after the call returned.
 */
struct ddl_corrsum {
	uint64_t api, api_driver, api_failed; /* CUPTI runtime/driver records */
	uint64_t device;                      /* CUPTI device intervals */
	uint64_t joined;                      /* ... with their call's record */
	uint64_t wrapped, unwrapped;          /* ... the call one of ours, or not */
	double wait_p50_s, wait_p99_s, wait_max_s; /* device start - call end */
	double *waits;                        /* the joined ones' waits (correlate.c) */
	size_t nwaits, capwaits;
};

struct ddl_gpusum {
	uint64_t launches, kernels_timed, memcpys, memcpy_bytes, memsets;
	uint64_t syncs, device_intervals;
	double kernel_s, memcpy_s;      /* device time, from the timed ones */
	double launch_host_s, sync_host_s;
	int devices;                    /* distinct devices used */
	const char *backend;            /* "cupti", "events", "cupti+events" or NULL */
	struct ddl_corrsum corr;        /* corr.api == 0: no CUPTI call records */
};

/* A communicator across the run: every member's records, merged. */
struct ddl_commjob {
	uint64_t key;
	int nranks;          /* as the members said */
	int members;         /* members whose traces we have */
	int nhosts;          /* distinct hosts among them */
	int span;            /* DDL_SPAN_* */
	const char *how;
	const char *ranks;   /* MPI's: the members' MPI_COMM_WORLD ranks, as a record lists
	                      * them (ddlprof-trace(5)); NULL when none does */
	char hosts[256];     /* comma-separated */
};
enum { DDL_SPAN_UNKNOWN = 0, DDL_SPAN_INTRA = 1, DDL_SPAN_INTER = 2 };

struct ddl_threadsum {
	uint32_t tid;
	char name[64]; /* as ddl_thread_name gives it */
	struct ddl_netsum net;
};

/* A stretch of an iteration that the breakdown gives to one part: [a, b)
 * on the real-time clock, PART an index in DDL_PARTS order (0 compute ..
 * 4 idle). */
struct ddl_piece {
	int64_t a, b;
	int part;
};

/* What a process is to the job (report_model.c). */
enum ddl_role {
	DDL_ROLE_RANK = 0,    /* a rank: counted and tabulated as one */
	DDL_ROLE_WORKER,      /* a data loader's worker process, under the rank it serves */
	DDL_ROLE_CHILD,       /* another process a rank started (fork), under that rank */
	DDL_ROLE_LAUNCHER,    /* a process that started a rank and did none of its work */
	DDL_ROLE_OTHER,       /* no rank: mpirun, orted, an agent, a helper of the job */
};
const char *ddl_role_name(int role);
struct ddl_report;
struct ddl_proc;
/* Whether event I of T, a trace of P, is one of the collectives P's
 * summary (p->coll) counts (gpu.c), after ddl_report_gpu. */
int ddl_proc_coll_counted(const struct ddl_proc *p, const struct ddl_trace *t, size_t i);
/* The iteration of P (in time order) that instant AT falls in, or SIZE_MAX. */
size_t ddl_proc_iter_at(const struct ddl_proc *p, int64_t at);
/* The same, looked for first where the instant asked before was (*LAST,
 * SIZE_MAX at first, kept up to date): for instants that come about in
 * time order, no search for most. */
size_t ddl_proc_iter_near(const struct ddl_proc *p, int64_t at, size_t *last);
/* What P is, as the outputs name it: "rank N", "worker of rank N" (of pid
 * N, in a job without ranks), "child of rank N", "launcher", or "" for
 * another process; into BUF (N bytes). */
const char *ddl_proc_what(const struct ddl_report *r, const struct ddl_proc *p, char *buf, size_t n);
/* The rank process a worker or child serves, or NULL. */
const struct ddl_proc *ddl_proc_served(const struct ddl_report *r, const struct ddl_proc *p);
/* The name every output shows for thread IDX of T, a trace of P: the name
 * it recorded, but P's program name where that is "exe", the name Linux
 * gives a program that runs itself again through /proc/self/exe (whose
 * threads all inherit it); "" when it has none. */
const char *ddl_thread_name(const struct ddl_proc *p, const struct ddl_trace *t, unsigned idx);

/* An iteration that ran slow (slowiters.c): its number (counting the
 * warm-up's), its duration, and the median of its pace. */
struct ddl_slowiter {
	size_t iteration;
	double s, median_s;
};

struct ddl_proc {
	const char *host;
	uint32_t pid, ppid;
	int rank, world_size;
	int role;             /* enum ddl_role */
	int env_rank;         /* the rank its environment gave (-1 none); rank is -1
	                       * for every process that is not a rank */
	uint32_t serves_pid;  /* workers and children: the rank process's pid (same host) */
	int images;           /* trace files: one per exec image */
	uint64_t events, dropped; /* recorded, and lost to full buffers */
	unsigned threads_unrecorded; /* threads that found no room for a buffer (ulimit -v) */
	int truncated, corrupt;
	int incomplete;       /* memory ran out: not all read, or not all analysed */
	const char *command;
	char name[64];        /* the program's name: its command line's first word, less
	                       * the directory; "" when the trace holds no command line */
	int64_t start_real_ns, end_real_ns;
	struct ddl_netsum net;
	struct ddl_threadsum *threads;
	size_t nthreads;
	struct ddl_trace **tr; /* this process's traces, in exec order */
	size_t ntr;
	double *iter_s;       /* iteration durations after warm-up, in order */
	struct ddl_iter *iter; /* the same iterations' spans */
	struct ddl_parts per_iter; /* mean seconds per iteration of each part */
	struct ddl_parts *iter_parts; /* each iteration's parts (niter); NULL if not split */
	double traffic_s;     /* mean seconds per iteration with traffic in flight */
	double bytes_sent;    /* mean bytes sent per iteration */
	size_t niter;
	size_t iter_cap;      /* iter and iter_s have room for this many */
	int warmup_skipped;
	size_t niter_found;   /* iterations found, before the warm-up was skipped */
	long steps_run;       /* steps the process ran, as the Python hook counted them or
	                       * as many as its marker ranges; -1 when nothing says */
	double iter_period_s; /* the iterations found (warm-up included), their mean
	                       * less the longest and shortest tenth: what the ranks
	                       * of a job are held against one another by */
	int iter_disagrees;   /* a rank whose iterations (or none) disagree with the
	                       * other ranks' (iterations.c) */
	/* the iteration the timelines show (breakdown.c): the first whose
	 * length is the rank's median, as an index into iter; and its instants
	 * by the part the breakdown gave them, in time order, end to end
	 * (NULL when it was not split) */
	size_t shown;
	struct ddl_piece *pieces;   /* only with r->timelines: they grow with the events of
	                             * an iteration, which a long ring has many of */
	size_t npieces;
	uint32_t train_tid;   /* the thread the iterations are on (the main thread when not known) */
	double iter_mean_s;
	/* slowiters.c: the iterations that ran slow; where the pace changed
	 * for good (an iteration number, -1 none), and the means before and after */
	struct ddl_slowiter *slow;
	size_t nslow;
	long shift_at;
	double shift_before_s, shift_after_s;
	const char *iteration_method; /* "steps", "markers", "collectives", "socket", "waits"
	                               * or "none" */
	struct ddl_collsum coll;
	struct ddl_gpusum gpu;
	int has_gpu;          /* made CUDA or NCCL calls */
	int gpu_breakdown;    /* per_iter from the device timeline (breakdown_gpu.c) */
	/* stragglers (stragglers.c), over the analysed iterations of the job's
	 * reference rank (the lowest with iterations): the collective instances
	 * it took part in; the time per iteration the others waited at those it
	 * came last to; the share of iterations in which it was late (it kept
	 * the others waiting most, standing out, or was waited on by the one
	 * that did); the verdict: the culprit (late mostly by its own doing), or
	 * a victim (late mostly because it waited on VICTIM_OF) */
	size_t coll_instances;
	double imposed_wait_s, late_fraction;
	int straggler, victim;
	int victim_of;        /* process index, -1 */
	int waits_on;         /* the process it waits on most at collectives, -1 none */
	double waits_on_s;    /* ... per iteration */
	const char *straggler_cause; /* culprits: "compute", "data" or "other" */
	double cause_s, cause_others_s; /* culprits: that part per iteration, its own and the
	                                 * other ranks' median */
	double comm_s;        /* per iteration: time collectives ran on the device; without
	                       * device intervals, time the process's traffic was in flight */
	double overlap_s;     /* ... of which hidden under compute */
	double coll_bytes, coll_intra_bytes, coll_inter_bytes; /* per iteration */
	double coll_calls;    /* per iteration */
	double coll_op_calls[DDL_COLL_OPS], coll_op_bytes[DDL_COLL_OPS]; /* per iteration, by operation */
	/* CPU jobs, per iteration (breakdown.c): the network and interconnect
	 * stall by the collective operation running then, and the rest */
	double coll_stall_s[DDL_COLL_OPS], coll_stall_other_s;
	/* the Python hook's phases on the training thread, mean per iteration
	 * (inputs.c); have: seen */
	struct {
		int have;
		double data_wait_s, forward_s, backward_s, optimizer_s;
	} phases;
	/* the input pipeline (inputs.c): this rank's data stall split into
	 * fetch (its loader reading: files, sockets) and prep (the rest of
	 * making a batch: decoding, transforms, collation), by what its
	 * loader did; per iteration */
	struct {
		int have;           /* batch waits were seen */
		double fetch_s, prep_s;
		int workers;        /* loader worker processes serving this rank */
		uint64_t batches;   /* batches they (or this rank, without workers) made */
		double batch_s;     /* mean time a batch took them */
		double batch_fetch_s; /* ... of which reading */
		double busy;        /* their busy share of the span of the iterations */
		const char *bound;  /* "fetch" or "prep": what the data stall waits on */
	} in;
	struct ddl_ctrsum *ctr; /* counters (--papi, counters.c); NULL when none were asked for */
};

/* Call sites (callsites.c): a distinct call stack and what its calls cost. */
struct ddl_frame {
	const char *function; /* from the module's symbols; NULL when they do not say */
	const char *module;   /* the module's path; NULL when unknown */
	uint64_t offset;      /* the return address within the module (its ELF address) */
};

struct ddl_callsite {
	double stall_s;       /* time in these calls that the breakdown counts as stall */
	double network_s, interconnect_s; /* ... split as the breakdown splits it */
	double time_s;        /* all time in these calls, the whole run */
	uint64_t calls;
	const char *call;     /* the intercepted function most of them were ("recv") */
	struct ddl_frame *frames; /* innermost (the caller of the call) first */
	size_t nframes;
};

/* Counters of one process (counters.c). */
struct ddl_ctrthread {
	uint32_t tid;
	const char *name;
	size_t iterations;    /* iterations of this thread with readings at both ends */
	double *per_iter;     /* mean per iteration of each counter (ncounters) */
	double *total;        /* first to last reading of each counter */
	size_t readings;
};

struct ddl_ctrsum {
	const char *error;    /* PAPI could not be used: why; NULL when it could */
	const char *domain;   /* what was counted: "user+kernel" or "user" (NULL: not said) */
	size_t ncounters;     /* counted */
	char **names;
	size_t nrefused;      /* asked for, refused here (hardware counters in a VM) */
	char **refused, **refused_why;
	struct ddl_ctrthread *threads;
	size_t nthreads;
};

/* A kernel of the job (kernels.c): its device intervals summed over every
 * process, by the name recorded. */
struct ddl_kernel {
	const char *name;     /* demangled; the name as recorded when it does not demangle */
	const char *mangled;  /* as recorded (a trace's string); NULL: intervals without a name */
	uint64_t count;       /* device intervals of this kernel alone */
	double total_s;       /* their device time */
	char *demangled;      /* kernels.c's memory behind name, or NULL */
};

/* Hangs (hang.c): where a job that did not end cleanly stood at its end. */
struct ddl_hangpt {        /* a communicator stuck in one collective */
	uint64_t key;
	int nranks, members;   /* as its members said; members traced */
	uint32_t seq;          /* the collective's number in its sequence */
	const char *op;
	uint64_t bytes;        /* as the first member to enter it gave them */
	int64_t since_ns;      /* when the first member entered it */
	double waiting_s;      /* from then to the job's end */
	int *inside, *missing; /* process indices: members that entered it, and that never did */
	size_t ninside, nmissing;
};
struct ddl_hangrank {      /* a rank at the end */
	int proc;
	int clean;             /* its trace ended with a clean exit */
	int64_t end_ns;        /* where its trace ends */
	const char *call;      /* the blocking call it was in longest; NULL none */
	double in_s;           /* ... for this long at the job's end */
	int fd;
	uint64_t comm_key;     /* the collective it is in, or (last) the last it issued */
	uint32_t seq;
	int last;
	const char *last_call;
	const char *last_event; /* its training thread's last recorded call, NULL none */
	double last_ago_s;     /* ... ended this long before the job's end */
	const char *phase;     /* the Python hook's phase it was in ("backward"), NULL none */
	double phase_s;        /* ... for this long at the job's end */
	struct ddl_frame *frames; /* --backtrace: where the call was made from, innermost first */
	size_t nframes;
};
struct ddl_hmember;
struct ddl_hang {
	int found;
	int calls_only;        /* no collective stuck: processes blocked in one call each */
	int64_t end_ns;        /* the job's end: the latest of the ranks' */
	struct ddl_hangpt *pts;
	size_t npts;
	int first;             /* the stuck point entered first: the first cause */
	int blame;             /* process index of the rank most likely to blame, -1 */
	const char *blame_why; /* "missing": never entered the first cause's collective;
	                        * "ended": its trace ended first; "not blocked": in no
	                        * blocking call while the others were (calls_only) */
	struct ddl_hangrank *ranks;
	size_t nranks;
	struct ddl_hmember *members; /* every member's last collective entered and left */
	size_t nmembers;
};

struct ddl_report {
	const struct ddl_traceset *set;
	const struct ddl_run *run;
	struct ddl_proc *procs;
	size_t nprocs;
	int nhosts, nranks;
	int truncated, corrupt;
	int incomplete; /* some process's (ddl_proc.incomplete): exit status 4 */
	int64_t start_real_ns, end_real_ns;
	const char *iteration_method; /* the least sure method any rank's iterations came
	                               * from ("waits", "socket", "collectives", "steps",
	                               * "markers"), or "none" */
	const char *iteration_status; /* "found"; "disagree": some ranks' iterations (or
	                               * their lack of any) disagree with the others', each
	                               * flagged (ddl_proc.iter_disagrees), and the job has
	                               * no count; "none": no process has any */
	int iter_disagree;            /* ranks that disagree */
	double iter_period_s;         /* the ranks' median of their periods ... */
	long iter_found_median;       /* ... and of their counts found (0: no rank has any) */
	long iterations_found;        /* per rank, the fewest found before warm-up */
	long steps_run;               /* per rank, the most steps the hook or markers
	                               * counted; -1 when nothing counted them */
	const char *iteration_names;  /* the patterns used */
	int iteration_names_given;    /* by --iteration-name: markers before steps */
	const char *data_names;       /* marker ranges that are data loading */
	int warmup;
	int timelines;                /* ddl_analysis.timelines: pieces are kept */
	/* --chrome's window (report.c): --ranks LIST (NULL all), --iterations
	 * A:B (A -1: all), as ddl_chrome_window checked them */
	const char *chrome_ranks;
	long chrome_it_a, chrome_it_b;
	/* the text's --ranks (NULL: every rank's rows up to 16 ranks, else a
	 * summary and the slowest and fastest; "all"; a list) */
	const char *text_ranks;
	long iterations;              /* per rank, the fewest after warm-up */
	double iter_mean_s, iter_p50_s, iter_p99_s;
	struct ddl_parts pct;          /* share of all iteration time, percent */
	/* network sensitivity (breakdown.c): link bandwidth per placement level
	 * in bytes/s, and the predicted iteration time and slowdown at each */
	double bw[3];
	double predicted_s[3], slowdown[3];
	double sensitivity;            /* 1 - T(one machine) / T(several racks) */
	int have_sensitivity;
	/* measured against predicted (breakdown.c): a run made under ddlprof
	 * --perturb-net, its iteration beside the prediction at the rate it
	 * was held to, and with a baseline run both slowdowns */
	struct {
		const char *perturb;       /* DDLPROF_PERTURB_NET as recorded */
		double bandwidth;          /* rate=R in bytes/s; 0 for delay= */
		double iteration_s;        /* measured under the perturbation */
		double predicted_s;        /* predicted at that bandwidth; 0 when not */
		int from_baseline;         /* ... from the baseline's inputs, else this run's */
		char baseline_run[DDL_RUNID_MAX]; /* "" without a baseline */
		double baseline_s;         /* the baseline's iteration */
	} measured;
	int have_measured;
	/* clock alignment (align.c): "realtime" (the hosts' clocks as read) or
	 * "collectives" (some host's clock corrected); per host the offset
	 * estimated; the residual error, -1 when it could not be measured */
	const char *clock_method;
	double clock_residual_s;
	struct ddl_corrsum corr;       /* every process's, together (correlate.c) */
	struct ddl_clock_host {
		char host[64];
		double offset_s; /* as estimated */
		int applied;     /* it stood out of the residual, and was applied */
	} clock[256];       /* the hosts that had collectives to align by */
	int nclock;
	struct ddl_commjob *comms;     /* gpu.c */
	size_t ncomms;
	int has_gpu;                   /* some process made CUDA or NCCL calls */
	struct ddl_hang hang;          /* hang.c */
	double hang_count;             /* 1 when a hang was found, for --fail-if */
	size_t nslow;                  /* slowiters.c: slow iterations, all ranks */
	int nstragglers, nvictims;     /* stragglers.c: culprits and victims */
	int stragglers_measured;       /* collectives of several ranks in analysed iterations */
	double straggler_count;        /* nstragglers, for --fail-if */
	/* call sites (callsites.c): top DDL_CALLSITES_TOP by stall, then time */
	struct ddl_callsite *callsites;
	size_t ncallsites;
	size_t ncallsites_all;         /* distinct stacks in the run */
	int backtrace;                 /* frames the traces were recorded with; 0 none */
	const char *backtrace_off;     /* asked for, but not taken: why */
	int symbols_stale;             /* a module changed since the run: some names unknown */
	void *callsites_mem;           /* callsites.c's own memory */
	/* kernels (kernels.c): every kernel name the run recorded, most device
	 * time first; the first nkernels_timed have device intervals, the rest
	 * (launched, never timed) only give names their demangled form */
	struct ddl_kernel *kernels;
	size_t nkernels, nkernels_timed;
	const struct ddl_kernel **kernels_by_name; /* the named ones, by mangled name */
	size_t nkernels_by_name;
	double kernel_s;               /* every kernel interval of the job, runs included */
	uint64_t kernel_runs;          /* intervals timing a run of kernels as one (DDL_EVF_RUN) */
	double kernel_runs_s;
};

#define DDL_CALLSITES_TOP 10

enum { DDL_LEVEL_MACHINE, DDL_LEVEL_RACK, DDL_LEVEL_CLUSTER };

int ddl_report_build(struct ddl_report *r, const struct ddl_traceset *s, const struct ddl_run *run);
/* Frees the report and what every stage of the analysis made. */
void ddl_report_free(struct ddl_report *r);

/* The settings of one analysis (analyze.c). */
struct ddl_progress;
struct ddl_analysis {
	const char *bw;               /* --bw, NULL for the defaults */
	const char *iteration_names;  /* --iteration-name globs */
	int iteration_names_given;    /* ... given by the user */
	const char *data_names;       /* --data-names globs */
	int warmup;                   /* --warmup */
	int measure;                  /* measured against predicted (--perturb-net runs) */
	const char *baseline;         /* --baseline, NULL: the run's own traces */
	struct ddl_progress *progress; /* NULL: none shown */
	int timelines;                /* the HTML's timelines will be drawn: keep each
	                               * process's pieces of its shown iteration */
};
enum {
	DDL_ANALYZE_NOMEM = -1, /* out of memory */
	DDL_ANALYZE_USAGE = -2, /* a setting is wrong (--bw) */
	DDL_ANALYZE_INPUT = -3, /* an input is (the baseline) */
};
/*
 * The pipeline (analyze.c): builds R from run RUN of S and runs every stage
 * of the analysis in order. Returns 0, or DDL_ANALYZE_* with ERR saying
 * why; R is to be freed with ddl_report_free either way.
 */
int ddl_report_analyze(struct ddl_report *r, const struct ddl_traceset *s,
                       const struct ddl_run *run, const struct ddl_analysis *o, char *err,
                       size_t errlen);
/* The data loaders (inputs.c), after the breakdown: each rank's data stall
 * split into fetch and prep by what its loader's workers did. */
void ddl_report_inputs(struct ddl_report *r);
/* Finds iterations (iterations.c); PATTERNS are comma-separated globs. */
void ddl_report_iterations(struct ddl_report *r, const char *patterns, int warmup);
/* Splits every iteration into the parts of DDL_PARTS (breakdown.c). */
/* Whether calls of class CLS block the thread that makes them (socket
 * calls and waits, condition variables, file reads, host collectives and
 * MPI's calls): what a CPU job's training thread stalls in (breakdown.c). */
int ddl_class_blocks(int cls);
void ddl_report_breakdown(struct ddl_report *r);
/* The per-process stages on several threads (parallel.c): FN(ARG, i) for
 * each i below N, each i once, on up to ddl_parallel_threads() threads;
 * FN writes only what is i's, so the order never shows. */
#define DDL_THREADS_MAX 256
extern int ddl_report_threads; /* --threads; 0: the CPUs this process may run on */
int ddl_parallel_threads(void);
void ddl_parallel(size_t n, void (*fn)(void *arg, size_t i), void *arg);
/* The same over R's processes, each process's events held (ddl_proc_hold)
 * while FN runs on it. */
void ddl_parallel_procs(const struct ddl_report *r, void (*fn)(void *arg, size_t i), void *arg);
/* The same over the processes I with WANT[I] (all with WANT NULL; all,
 * too, without memory for the order: FN then passes over the others). */
void ddl_parallel_procs_some(const struct ddl_report *r, const unsigned char *want,
                             void (*fn)(void *arg, size_t i), void *arg);
/* Holds (and releases) the events of every trace of P (trace_read.h): a
 * stage reads a process's events only between the two. */
void ddl_proc_hold(const struct ddl_proc *p);
void ddl_proc_release(const struct ddl_proc *p);
/* Whether some trace of P may hold events of class CLS (ddl_trace_has_class):
 * a stage that looks only at some classes need not hold P without them. */
int ddl_proc_has_class(const struct ddl_proc *p, int cls);
/* The classes P may hold, 1 << class each (all for a trace not lazy). */
uint32_t ddl_proc_classes(const struct ddl_proc *p);
/* Appends [A, B) of part PART to P's pieces of its shown iteration,
 * joining it to the last when that is of the same part and ends at A
 * (breakdown.c); 0, or -1 without memory (the pieces are then dropped and P
 * is incomplete). */
int ddl_proc_piece(struct ddl_proc *p, int64_t a, int64_t b, int part);
/* When each process's socket traffic is in flight, seen from both ends of
 * its connections (flight.c): *OUT gets r->nprocs interval sets, each
 * merged, tagged 1 where the traffic is with another host; 0, or -1
 * without memory (*OUT NULL). */
int ddl_report_flights(const struct ddl_report *r, struct ddl_ivset **out);
void ddl_flights_free(struct ddl_ivset *f, size_t n);
/* Differential mode (compare.c): SPECS are LABEL=DIR[@SAMPLES], LABEL one of
 * single, node, multi, real, synthetic; returns the exit status. */
#define DDL_CMP_RUNS 5
struct ddl_cmp_opts {
	const char *bw, *iter_names, *data_names;
	int iter_names_given, warmup, json;
};
int ddl_compare(char *const *specs, int nspecs, const struct ddl_cmp_opts *o, FILE *f);
/* Aligns the hosts' clocks on the ends of shared collectives (align.c). */
void ddl_report_align(struct ddl_report *r);
/* Ranks that keep the others waiting at collectives, and why (stragglers.c); after the
 * iterations and the breakdown. */
void ddl_report_stragglers(struct ddl_report *r);
/* Each rank's iterations that ran slow, and a lasting change of pace (slowiters.c). */
void ddl_report_slow_iterations(struct ddl_report *r);
/* Where a job that did not end cleanly was stuck, and who to blame (hang.c). */
void ddl_report_hang(struct ddl_report *r);
void ddl_hang_free(struct ddl_hang *h);
/* One member of a communicator at the end (hang.c): the last collective it
 * entered and left (0: none; left is known for host collectives only). */
struct ddl_hmember {
	uint64_t key;
	int proc;
	int comm_rank, nranks;
	uint32_t entered, left;
	int64_t entered_ns;
};
/* CUDA and NCCL summaries, communicators and their spans (gpu.c). */
void ddl_report_gpu(struct ddl_report *r);
/*
 * The calls of a trace that CUPTI's call records can fall in (launches,
 * copies, memsets), sorted by start (correlate.c): ddl_hostcalls_find gives
 * the event index of the one holding call record API (an event of class
 * DDL_CLASS_API), on its thread where CUPTI's thread ids name the trace's
 * threads, or SIZE_MAX: a call the wrappers did not see.
 */
struct ddl_hostcall {
	int64_t start, end;
	uint32_t os_tid;
	size_t ev;
};
struct ddl_hostcalls {
	struct ddl_hostcall *v;
	size_t n;
	int tids_known;
};
int ddl_hostcalls_build(const struct ddl_trace *t, struct ddl_hostcalls *h);
size_t ddl_hostcalls_find(const struct ddl_hostcalls *h, const struct ddl_trace *t, size_t api);
void ddl_hostcalls_free(struct ddl_hostcalls *h);
/* CUPTI's device intervals tied to their calls (correlate.c), after ddl_report_gpu. */
void ddl_report_correlate(struct ddl_report *r);
void ddl_report_correlate_free(struct ddl_report *r);
/* The span of communicator ID in trace T: DDL_SPAN_*. */
int ddl_comm_span(const struct ddl_report *r, const struct ddl_trace *t, uint32_t id);
/* Short name of an NCCL collective kind ("allreduce"), or NULL. */
const char *ddl_nccl_op_name(unsigned kind);
/* Collective calls and bytes per analysed iteration (p->coll_calls ...), by
 * the span of their communicator (gpu.c), after the iterations. */
void ddl_proc_coll_per_iter(const struct ddl_report *r, struct ddl_proc *p);
/* The device-timeline breakdown of one process; -1 when it has no device
 * intervals (then the host-side one of breakdown.c applies). */
int ddl_proc_breakdown_gpu(const struct ddl_report *r, struct ddl_proc *p);
/* Parses --bw's "machine=100gbit,rack=25gbit,cluster=10gbit" (any subset;
 * rates by ddlprof/rate.h) into BW, bytes/s per level, the defaults where
 * SPEC (NULL: none) names none; 0, or -1 with the reason, naming --bw and
 * the value, in ERR. */
int ddl_report_bw(double bw[3], const char *spec, char *err, size_t errlen);
/* The run to report: run ID, else the newest; but when the traces hold
 * runs both with and without --perturb-net, the newest perturbed one
 * (its baseline is then the newest other). NULL when there is none. */
const struct ddl_run *ddl_report_run(const struct ddl_traceset *s, const char *id);
/* Measured against predicted (breakdown.c), after ddl_report_breakdown:
 * when the run was perturbed, fills r->measured, against the newest
 * unperturbed run of BASELINE (a trace directory or file) or, BASELINE
 * NULL, of r's own traces when there is one, reported with r's settings.
 * Returns 0, also when there is nothing to compare, or -1 with ERR (a
 * baseline that cannot be read or has no iterations, or BASELINE given
 * for a run that was not perturbed). */
int ddl_report_measure(struct ddl_report *r, const char *baseline, char *err, size_t errlen);
/* --fail-if (failif.c): checks a condition's form (0, or -1 with ERR), and
 * evaluates it: 1 when it holds or cannot be measured (one line on F). */
int ddl_failif_check(const char *cond, char *err, size_t errlen);
int ddl_failif_eval(const struct ddl_report *r, const char *cond, FILE *f);

/* The call sites that cost the most stall (callsites.c), after the breakdown. */
void ddl_report_callsites(struct ddl_report *r);
/* The frames of stack ID of trace T (ddlprof --backtrace), named as the
 * call sites' are: *FRAMES (each module and the array the caller's to
 * free; the functions live as long as the report's call sites), *N.
 * 0, or -1 without memory (frames, or their names, left out). */
int ddl_report_stack(struct ddl_report *r, const struct ddl_trace *t, uint32_t id, struct ddl_frame **frames,
                     size_t *n);
/* Counters per thread and iteration (counters.c), after the iterations. */
void ddl_report_counters(struct ddl_report *r);
/* Kernels by device time across the job (kernels.c), after ddl_report_gpu. */
void ddl_report_kernels(struct ddl_report *r);
/* Frees what the three above made. */
void ddl_callsites_free(struct ddl_report *r);
void ddl_counters_free(struct ddl_report *r);
void ddl_kernels_free(struct ddl_report *r);
/* The kernel recorded as MANGLED, or NULL when the report has none by that name. */
const struct ddl_kernel *ddl_kernel_find(const struct ddl_report *r, const char *mangled);
/*
 * NAME (demangled) shortened for a table column of WIDTH bytes, into OUT
 * (N bytes, N > WIDTH): the return type dropped, then the parameter list
 * written "(...)", then inside the template arguments namespaces dropped
 * and nested argument lists written "<...>", then the function's own
 * namespaces dropped, then the nested argument lists, until it fits; else
 * cut in the middle with "...". Returns OUT, or NULL without memory (OUT
 * then holds NAME cut, not shortened).
 */
char *ddl_kernel_shorten(const char *name, char *out, size_t n, size_t width);

/* qsort's order of doubles, ascending; and the median of N sorted ones
 * (the mean of the middle two of an even count; 0 of none). */
static inline int ddl_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static inline double ddl_sorted_median(const double *v, size_t n)
{
	return !n ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Output formats; each returns 0, or -1 on a write error or without memory
 * (errno ENOMEM: what was written lacks something). */
int ddl_out_text(const struct ddl_report *r, FILE *f);
int ddl_out_json(const struct ddl_report *r, FILE *f);
int ddl_out_dump(const struct ddl_report *r, FILE *f);
int ddl_out_chrome(const struct ddl_report *r, FILE *f);
/* --ranks LIST (0,2,4-7): 0 when well formed, else -1 with ERR. */
int ddl_rank_list_check(const char *list, char *err, size_t n);
/* Whether RANK is in LIST (checked; "all" holds every rank). */
int ddl_rank_list_has(const char *list, int rank);
/* Whether process I of R is LIST's: a listed rank, or one that serves one
 * (through the processes between). */
int ddl_proc_listed(const struct ddl_report *r, size_t i, const char *list);
/* 0 when LIST names a rank of R, else -1 with ERR saying so. */
int ddl_rank_list_names(const struct ddl_report *r, const char *list, char *err, size_t n);
/* --chrome's window of R (its chrome_* fields) in *A, *B (the real-time
 * clock; INT64_MIN, INT64_MAX: all); 0, or -1 with ERR when it selects
 * nothing (no such rank, no such iterations). */
int ddl_chrome_window(const struct ddl_report *r, int64_t *a, int64_t *b, char *err, size_t n);
int ddl_out_html(const struct ddl_report *r, FILE *f);
int ddl_out_csv(const struct ddl_report *r, FILE *f);
/* --sqlite (out_sqlite.c): the report as an SQLite database at PATH (a new
 * or empty file, or ":memory:"); 0, or -1 with ERR saying why. */
int ddl_out_sqlite(const struct ddl_report *r, const char *path, char *err, size_t errlen);

/* JSON trees (out_json.c, compare.c): from ddl_json_watch on, whether
 * jansson (or the tree's builder) lacked memory, which its calls do not
 * say themselves. */
void ddl_json_watch(void);
int ddl_json_failed(void);
/* The length of the well-formed UTF-8 sequence at S (1 to 4), or 0 when
 * S starts none (or is at its NUL); the outputs share it (out_chrome.c). */
size_t ddl_utf8_len(const unsigned char *s);

/* ---- devcalls.c: the device-call model ---- */
/* A cudaMemcpyKind as its name ("HtoD"), or "unknown". */
const char *ddl_copy_kind(unsigned op);
/* Host calls that event-pair device intervals refer to, by (thread, corr). */
struct ddl_devcall {
	uint64_t key;
	size_t ev;  /* the call's event index */
	int span;   /* collectives and groups: DDL_SPAN_* */
};
struct ddl_devcalls {
	struct ddl_devcall *v;
	size_t n;
	struct ddl_devcall *api; /* CUPTI's call records, keyed by correlation id */
	size_t napi;
	struct ddl_hostcalls host; /* the wrapped calls those records fall in */
	const char **names; /* by name id: the demangled kernel name (the report's), or NULL */
	size_t nnames;
};
/* The calls, and (once ddl_report_kernels has run) the demangled names of
 * T's kernels; 0, or -1 without memory (C is then empty). */
int ddl_devcalls_build(const struct ddl_report *r, const struct ddl_trace *t, struct ddl_devcalls *c);
void ddl_devcalls_free(struct ddl_devcalls *c);
/* Name ID of T as the report shows it: demangled when it is a C++ kernel's. */
const char *ddl_devcalls_name(const struct ddl_devcalls *c, const struct ddl_trace *t, uint32_t id);
const struct ddl_devcall *ddl_devcalls_find(const struct ddl_devcalls *c, unsigned tid, uint32_t corr);
/* What device interval I of T was, and the part of the breakdown it feeds. */
enum { DDL_DEV_COMPUTE, DDL_DEV_INTRA, DDL_DEV_INTER, DDL_DEV_COPY };
struct ddl_devinfo {
	const char *name;            /* kernel name (demangled), "allreduce", "memcpy HtoD", ... */
	const char *mangled;         /* kernels: the name as recorded, when NAME is its demangled form */
	int part;                    /* DDL_DEV_* */
	int span;                    /* collectives: DDL_SPAN_* */
	const struct ddl_args *args; /* the issuing call's (or CUPTI's), or NULL */
	size_t call;                 /* the issuing call's event index, or SIZE_MAX */
	size_t api;                  /* CUPTI intervals: CUPTI's record of that call, or SIZE_MAX */
	char buf[48];
};
void ddl_device_info(const struct ddl_trace *t, size_t i, const struct ddl_devcalls *c,
                     struct ddl_devinfo *d);

#endif
