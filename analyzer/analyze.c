/*
 * The analysis pipeline: the one sequence of stages every entry point runs
 * (ddlprof-report, its --compare runs, the baseline of a --perturb-net run,
 * the report fuzzer), so that none of them sees a different analysis:
 *
 *   model (report_model.c: processes, roles)  -> GPU calls and communicators
 *   (gpu.c, correlate.c) -> clock alignment (align.c) -> iterations
 *   (iterations.c) -> stall attribution (breakdown.c, breakdown_gpu.c,
 *   inputs.c) -> stragglers (stragglers.c) -> measured against predicted
 *   (breakdown.c) -> call sites, counters, kernels.
 *
 * The per-process parts of the iterations and the breakdown run on every
 * core (parallel.c), each writing only its own process; what joins the
 * processes comes after, in order. Outputs (out_*.c) only read what this
 * leaves in the report, and the device-call model (devcalls.c).
 *
 * Memory. The traces are read once to check them and learn all but their
 * events (trace_set.c: strings, clock samples, how many events of which
 * classes), keeping the events while they fit the budget below, and every
 * stage and output holds the events of the processes it works on
 * (ddl_proc_hold; ddl_parallel_procs for the parallel ones, those in
 * memory first), which trace_events.c reads again from the files when
 * they are no longer in memory (without the payloads' checksums and
 * clock windows again where the file has not changed since the first
 * read and passed them then: ddl_trace_read_again): released events stay
 * until those in memory pass --memory (ddl_events_budget, 256 MiB), least
 * recently used first. A job whose events fit is read once; a larger one once more by
 * each stage that goes over its processes. The same
 * budget holds the arrays kept for the next reads to fill, the events
 * held, and the working arrays that grow with a process's events (the
 * socket records gathered, the connections read back, the socket calls
 * the iterations are found in: ddl_grow_charged), each made room for
 * before it is taken. The socket records of the traffic in flight
 * (flight.c), one for about every second event of a socket job, go to an
 * unlinked temporary file once those kept pass a budget of the same size,
 * packed as they are made. What stays is the model: per process its
 * iterations, parts and summaries, per connection its totals, per
 * collective its ends, and the traffic's windows (a few an iteration);
 * with --html, each process's pieces of the iteration it draws. So the
 * report's memory is the model (ranks x iterations) plus about twice the
 * budget: it stays so while the events that each thread works on (its
 * process's, and their working arrays) fit the budget, and only past
 * that grows with the events of the largest process, never with the
 * job's. bench/report_scale.sh measures it (128 ranks, 100,000 and
 * 1,000,000 events each in the same 46 steps). Beside the model, the
 * first read keeps, per trace, the places of its events that are not
 * socket calls (collectives, steps, markers, GPU calls: ddl_trace.rare),
 * 4 bytes each while they are at most one event in 16, so that the stages
 * that look for those go over them alone, not over every socket call.
 */
#include <stdio.h>
#include <string.h>

#include "progress.h"
#include "report.h"

int ddl_report_analyze(struct ddl_report *r, const struct ddl_traceset *s,
                       const struct ddl_run *run, const struct ddl_analysis *o, char *err,
                       size_t errlen)
{
	struct ddl_progress quiet, *prog = o->progress;
	if (!prog) {
		ddl_progress_init(&quiet, "", 1);
		prog = &quiet;
	}
	if (ddl_report_build(r, s, run) < 0) {
		snprintf(err, errlen, "out of memory");
		return DDL_ANALYZE_NOMEM;
	}
	if (ddl_report_bw(r->bw, o->bw, err, errlen) < 0)
		return DDL_ANALYZE_USAGE;
	r->iteration_names = o->iteration_names;
	r->iteration_names_given = o->iteration_names_given;
	r->data_names = o->data_names;
	r->warmup = o->warmup;
	r->timelines = o->timelines;
	enum { NPH = 8 };
	ddl_progress_phase(prog, 1, NPH, "GPU calls and communicators");
	ddl_report_gpu(r);
	ddl_report_correlate(r); /* CUPTI: device work tied to its calls */
	ddl_progress_phase(prog, 2, NPH, "clock alignment");
	ddl_report_align(r);
	ddl_progress_phase(prog, 3, NPH, "iterations");
	ddl_report_iterations(r, o->iteration_names, o->warmup);
	ddl_report_slow_iterations(r); /* a change of pace, and iterations that stand out */
	ddl_progress_phase(prog, 4, NPH, "stall breakdown");
	ddl_report_breakdown(r);
	ddl_report_inputs(r); /* the data loaders: fetch against prep */
	ddl_progress_phase(prog, 5, NPH, "stragglers");
	ddl_report_stragglers(r);
	ddl_report_hang(r);      /* a job that did not end cleanly: where it was stuck */
	if (o->measure) {
		ddl_progress_phase(prog, 6, NPH, "perturbation");
		if (ddl_report_measure(r, o->baseline, err, errlen) < 0) {
			ddl_progress_done(prog);
			return DDL_ANALYZE_INPUT;
		}
	}
	ddl_progress_phase(prog, 7, NPH, "call sites");
	ddl_report_callsites(r); /* --backtrace: the stacks that cost the most stall */
	ddl_progress_phase(prog, 8, NPH, "counters and kernels");
	ddl_report_counters(r);  /* --papi: counters per thread and iteration */
	ddl_report_kernels(r);   /* kernels by device time, their names demangled */
	ddl_progress_done(prog); /* before any output: stdout may be the same terminal */
	for (size_t i = 0; i < r->nprocs; i++) {
		struct ddl_proc *p = &r->procs[i];
		for (size_t k = 0; k < p->ntr; k++)
			p->incomplete |= p->tr[k]->incomplete; /* events that could not be read again */
		r->incomplete |= p->incomplete;
	}
	return 0;
}
