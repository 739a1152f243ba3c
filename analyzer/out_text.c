/*
 * The readable report: run, processes and threads with their network
 * activity, then anything the reader could not read.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report.h"

static const char *ddl_human_bytes(uint64_t b, char *buf, size_t n)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	int u = 0;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, n, "%" PRIu64 " B", b);
	else
		snprintf(buf, n, "%.2f %s", v, unit[u]);
	return buf;
}

/* A process as the tables name it: "host:pid rank N", "host:pid worker of rank N", ... */
static const char *ddl_label(const struct ddl_report *r, const struct ddl_proc *p, char *buf,
                             size_t n)
{
	char what[64];
	ddl_proc_what(r, p, what, sizeof what);
	snprintf(buf, n, "%s:%u%s%s", p->host, p->pid, *what ? " " : "", what);
	return buf;
}

static const char *ddl_span_word(int span)
{
	return span == DDL_SPAN_INTRA ? "inside one machine"
	       : span == DDL_SPAN_INTER ? "across machines" : "span unknown (members missing)";
}

/* CUDA and NCCL: communicators, then per rank what went through them. */
/*
 * Which processes' rows the text shows (SHOWN[i]): with --ranks, those
 * ranks and the processes that serve them (all: every process); else
 * every process of a job of DDL_TEXT_RANKS ranks or fewer; else, where
 * one line a rank would bury the rest, the DDL_TEXT_ENDS slowest and
 * fastest ranks by their mean iteration, the others summed up (the
 * distribution of each part, the extremes). NULL: every row (also
 * without memory).
 */
#define DDL_TEXT_RANKS 16
#define DDL_TEXT_ENDS 3

static int ddl_iter_mean_cmp(const void *a, const void *b, void *ctx)
{
	const struct ddl_report *r = ctx;
	double x = r->procs[*(const size_t *)a].iter_mean_s, y = r->procs[*(const size_t *)b].iter_mean_s;
	return x < y ? -1 : x > y ? 1 : (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

static unsigned char *ddl_text_view(const struct ddl_report *r)
{
	const char *list = r->text_ranks;
	if (list ? !strcmp(list, "all") : r->nranks <= DDL_TEXT_RANKS)
		return NULL;
	unsigned char *shown = calloc(r->nprocs + 1, 1);
	size_t *v = shown ? malloc((r->nprocs + 1) * sizeof *v) : NULL;
	if (!v) {
		free(shown);
		return NULL;
	}
	size_t n = 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		if (list)
			shown[i] = (unsigned char)ddl_proc_listed(r, i, list);
		else if (r->procs[i].rank >= 0 && r->procs[i].niter)
			v[n++] = i;
	}
	if (!list) {
		qsort_r(v, n, sizeof *v, ddl_iter_mean_cmp, (void *)r);
		for (size_t k = 0; k < n; k++)
			if (k < DDL_TEXT_ENDS || k + DDL_TEXT_ENDS >= n)
				shown[v[k]] = 1;
	}
	free(v);
	return shown;
}

/* Ranks with iterations the view leaves out; 0 when it leaves none. */
static size_t ddl_text_hidden(const struct ddl_report *r, const unsigned char *shown)
{
	size_t n = 0;
	for (size_t i = 0; shown && i < r->nprocs; i++)
		n += !shown[i] && r->procs[i].rank >= 0;
	return n;
}

/* The ranks' mean ms of part OFF (a struct ddl_parts field's offset) in
 * per_iter: the least, the median and the most, into OUT[3]. */
static void ddl_part_spread(const struct ddl_report *r, size_t off, double *tmp, double out[3])
{
	size_t n = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].rank >= 0 && r->procs[i].niter)
			tmp[n++] = *(const double *)((const char *)&r->procs[i].per_iter + off) * 1e3;
	out[0] = out[1] = out[2] = 0;
	if (!n)
		return;
	qsort(tmp, n, sizeof *tmp, ddl_cmp_double);
	out[0] = tmp[0];
	out[1] = ddl_sorted_median(tmp, n);
	out[2] = tmp[n - 1];
}

static void ddl_gpu_section(const struct ddl_report *r, const unsigned char *shown, FILE *f)
{
	char b1[32], b2[32], b3[32];
	fprintf(f, "\nCommunicators\n");
	for (size_t i = 0; i < r->ncomms; i++) {
		const struct ddl_commjob *c = &r->comms[i];
		fprintf(f, "  %016llx  %d ranks (%d traced) on %d host%s, %s (%s)\n",
		        (unsigned long long)c->key, c->nranks, c->members, c->nhosts,
		        c->nhosts == 1 ? "" : "s", ddl_span_word(c->span), c->how);
	}
	if (!r->ncomms)
		fprintf(f, "  none created under ddlprof\n");
	fprintf(f, "\nGPU work by process (device time from %s)\n",
	        r->nprocs && r->procs[0].gpu.backend ? r->procs[0].gpu.backend : "no timed intervals");
	fprintf(f, "  %-28s %9s %9s %10s %8s %12s %12s %12s %10s\n", "process", "launches", "kernels",
	        "kernel s", "colls", "coll bytes", "intra", "inter", "coll dev s");
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!p->has_gpu || (shown && !shown[i]))
			continue;
		char label[96];
		ddl_label(r, p, label, sizeof label);
		fprintf(f, "  %-28s %9" PRIu64 " %9" PRIu64 " %10.4f %8" PRIu64 " %12s %12s %12s %10.4f\n",
		        label, p->gpu.launches, p->gpu.kernels_timed, p->gpu.kernel_s, p->coll.count,
		        ddl_human_bytes(p->coll.bytes, b1, sizeof b1),
		        ddl_human_bytes(p->coll.intra_bytes, b2, sizeof b2),
		        ddl_human_bytes(p->coll.inter_bytes, b3, sizeof b3), p->coll.device_s);
	}
	const struct ddl_corrsum *c = &r->corr;
	if (c->api) {
		fprintf(f, "  CUPTI: %" PRIu64 " of %" PRIu64 " device intervals tied to the call that issued them "
		           "(%" PRIu64 " through calls wrapped here, %" PRIu64 " through calls not seen: a static "
		           "runtime or a library's own)\n",
		        c->joined, c->device, c->wrapped, c->unwrapped);
		if (c->nwaits)
			fprintf(f, "  waiting on the device after the call returned: p50 %.3f ms, p99 %.3f ms, "
			           "max %.3f ms%s\n",
			        c->wait_p50_s * 1e3, c->wait_p99_s * 1e3, c->wait_max_s * 1e3,
			        c->wait_p50_s < 20e-6 ? " (the device keeps up: the host is the bottleneck)" : "");
	}
}

/* The job's kernels by device time (kernels.c), when some were timed; 0,
 * or -1 without memory to shorten their names. */
static int ddl_kernels_section(const struct ddl_report *r, FILE *f)
{
	int rc = 0;
	if (r->kernel_s <= 0 && !r->nkernels_timed && !r->kernel_runs)
		return 0;
	uint64_t n = r->kernel_runs;
	for (size_t i = 0; i < r->nkernels_timed; i++)
		n += r->kernels[i].count;
	fprintf(f, "\nTop kernels by device time (all processes: %" PRIu64 " kernel interval%s, %.3f ms)\n",
	        n, n == 1 ? "" : "s", r->kernel_s * 1e3);
	if (r->nkernels_timed)
		fprintf(f, "  %-60s %9s %10s %10s %6s\n", "kernel", "count", "total ms", "mean us", "share");
	for (size_t i = 0; i < r->nkernels_timed && i < 10; i++) {
		const struct ddl_kernel *k = &r->kernels[i];
		char name[64];
		if (!ddl_kernel_shorten(k->name, name, sizeof name, 60))
			rc = -1;
		fprintf(f, "  %-60s %9" PRIu64 " %10.3f %10.3f %5.1f%%\n", name, k->count, k->total_s * 1e3,
		        k->total_s / (double)k->count * 1e6,
		        r->kernel_s > 0 ? 100 * k->total_s / r->kernel_s : 0.0);
	}
	if (r->nkernels_timed > 10)
		fprintf(f, "  (%zu more kernel%s; all of them, with full names, in --json)\n",
		        r->nkernels_timed - 10, r->nkernels_timed == 11 ? "" : "s");
	if (r->kernel_runs)
		fprintf(f, "  %" PRIu64 " interval%s (%.3f ms, %.1f%%) time%s a run of launches as one, not "
		        "split by kernel:\n  --kernel-sample 1 (or CUPTI) times each kernel\n", r->kernel_runs,
		        r->kernel_runs == 1 ? "" : "s", r->kernel_runs_s * 1e3,
		        r->kernel_s > 0 ? 100 * r->kernel_runs_s / r->kernel_s : 0.0,
		        r->kernel_runs == 1 ? "s" : "");
	return rc;
}

/* The network table's width: a row of ddl_net_row. */
#define DDL_NET_WIDTH 100

/* Columns the UTF-8 text of N bytes at S takes: one for each character. */
static size_t ddl_cols(const char *s, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

/*
 * LEAD then TEXT, wrapped at its spaces to DDL_NET_WIDTH columns, every
 * line after the first indented as far as LEAD; a word longer than a line
 * is cut at the line's end (between characters).
 */
static void ddl_wrap(FILE *f, const char *lead, const char *text)
{
	size_t indent = ddl_cols(lead, strlen(lead)), col = indent, room = DDL_NET_WIDTH - indent;
	int words = 0;
	fputs(lead, f);
	for (const char *w = text; *w;) {
		if (*w == ' ') {
			w++;
			continue;
		}
		size_t n = strcspn(w, " "), cols = ddl_cols(w, n);
		if (words && col + 1 + cols > DDL_NET_WIDTH) {
			fprintf(f, "\n%*s", (int)indent, "");
			col = indent;
			words = 0;
		}
		if (words) {
			fputc(' ', f);
			col++;
		}
		while (cols > room) { /* longer than a line: a line's worth at a time */
			size_t take = 0;
			for (size_t c = 0; take < n && (c < room || ((unsigned char)w[take] & 0xc0) == 0x80); take++)
				c += ((unsigned char)w[take] & 0xc0) != 0x80;
			fprintf(f, "%.*s\n%*s", (int)take, w, (int)indent, "");
			w += take;
			n -= take;
			cols = ddl_cols(w, n);
		}
		fwrite(w, 1, n, f);
		col += cols;
		words = 1;
		w += n;
	}
	fputc('\n', f);
}

static void ddl_net_row(FILE *f, const char *label, const struct ddl_netsum *n)
{
	char s[32], r[32];
	fprintf(f, "  %-28s %9" PRIu64 " %12s %12s %10.4f %10.4f %5u/%-5u\n", label, n->calls,
	        ddl_human_bytes(n->bytes_sent, s, sizeof s),
	        ddl_human_bytes(n->bytes_received, r, sizeof r), (double)n->in_calls_ns / 1e9,
	        (double)n->blocked_ns / 1e9, n->peers_local, n->peers_remote);
}

/* job.sensitivity.measured (breakdown.c) in one line. */
static void ddl_measured_line(const struct ddl_report *r, FILE *f)
{
	double t = r->measured.iteration_s, pred = r->measured.predicted_s, base = r->measured.baseline_s;
	char rate[64] = "", p[160] = "", b[200] = "";
	if (r->measured.bandwidth > 0)
		snprintf(rate, sizeof rate, " (%.4g Mbit/s)", r->measured.bandwidth * 8 / 1e6);
	if (pred > 0)
		snprintf(p, sizeof p, ", %.1f ms predicted from %s", pred * 1e3,
		         r->measured.from_baseline ? "the baseline" : "this run");
	if (base > 0 && pred > 0)
		snprintf(b, sizeof b, "; slowdown x%.2f measured, x%.2f predicted, against %.1f ms (run %s)",
		         t / base, pred / base, base * 1e3, r->measured.baseline_run);
	else if (base > 0)
		snprintf(b, sizeof b, "; slowdown x%.2f measured against %.1f ms (run %s)", t / base,
		         base * 1e3, r->measured.baseline_run);
	fprintf(f, "  under --perturb-net %s%s: iteration %.1f ms measured%s%s", r->measured.perturb, rate,
	        t * 1e3, p, b);
	if (pred > 0)
		fprintf(f, "; error %+.1f%%\n", 100 * (pred / t - 1));
	else
		fprintf(f, "; not predicted (%s)\n", r->measured.bandwidth > 0
		                                       ? "no bytes per iteration to predict from"
		                                       : "delay= needs a baseline run: --baseline DIR");
}

/* The Python hook's phases of the training loop, per rank. */
static void ddl_loop_section(const struct ddl_report *r, const unsigned char *shown, FILE *f)
{
	int any = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		any |= r->procs[i].niter && r->procs[i].phases.have;
	if (!any)
		return;
	fprintf(f, "\nTraining loop (Python hook; mean ms per iteration)\n");
	fprintf(f, "  %-28s %10s %10s %10s %10s %10s\n", "rank", "data wait", "forward", "backward",
	        "optimizer", "other");
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!p->niter || !p->phases.have || (shown && !shown[i]))
			continue;
		char label[96], fwd[32] = "-";
		double other = p->iter_mean_s - p->phases.data_wait_s - p->phases.forward_s -
		               p->phases.backward_s - p->phases.optimizer_s;
		if (p->phases.forward_s > 0)
			snprintf(fwd, sizeof fwd, "%.2f", p->phases.forward_s * 1e3);
		fprintf(f, "  %-28s %10.2f %10s %10.2f %10.2f %10.2f\n", ddl_label(r, p, label, sizeof label),
		        p->phases.data_wait_s * 1e3, fwd, p->phases.backward_s * 1e3,
		        p->phases.optimizer_s * 1e3, other * 1e3);
	}
	fprintf(f, "  (forward: DistributedDataParallel's; otherwise in other)\n");
}

/* The input pipeline (inputs.c): data stall split into fetch and prep. */
static void ddl_inputs_section(const struct ddl_report *r, const unsigned char *shown, FILE *f)
{
	int any = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		any |= r->procs[i].in.have && r->procs[i].in.batches;
	if (!any)
		return;
	fprintf(f, "\nInput pipeline (data stall split by what the loader did while making batches)\n");
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!p->in.have || !p->in.batches || (shown && !shown[i]))
			continue;
		char label[96], who[64];
		if (p->in.workers)
			snprintf(who, sizeof who, "%d worker%s", p->in.workers, p->in.workers == 1 ? "" : "s");
		else
			snprintf(who, sizeof who, "no workers (the training thread loads)");
		fprintf(f, "  %s: data stall %.2f ms = fetch %.2f + prep %.2f (%s-bound); %s, %" PRIu64
		        " batches of %.2f ms (%.2f reading), busy %.0f%%\n",
		        ddl_label(r, p, label, sizeof label), p->per_iter.data_stall * 1e3,
		        p->in.fetch_s * 1e3, p->in.prep_s * 1e3, p->in.bound, who, p->in.batches,
		        p->in.batch_s * 1e3, p->in.batch_fetch_s * 1e3, p->in.busy * 100);
		if (p->per_iter.data_stall < 0.05 * p->iter_mean_s)
			continue;
		if (!strcmp(p->in.bound, "fetch"))
			fprintf(f, "    reading the data holds training up: faster storage, or more reads "
			        "in parallel (more workers), caching, fewer and larger files\n");
		else if (p->in.busy > 0.9 || !p->in.workers)
			fprintf(f, "    preparing batches holds training up and the loader is busy: more "
			        "DataLoader workers (num_workers), or cheaper transforms\n");
		else
			fprintf(f, "    preparing batches holds training up: more prefetching (prefetch_factor) "
			        "or workers, or cheaper transforms\n");
	}
}

/* Collectives of CPU jobs (gloo, MPI, torch.distributed), per rank and
 * iteration; for MPI's, the whole run's too, by operation, exactly as the
 * program made them (calls, and bytes as ddlprof-trace(5) counts them). */
static void ddl_coll_section(const struct ddl_report *r, const unsigned char *shown, FILE *f)
{
	int any = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		any |= r->procs[i].niter && !r->procs[i].gpu_breakdown && r->procs[i].coll.count;
	if (!any)
		return;
	char b1[32], b2[32];
	fprintf(f, "\nCollectives per iteration, and the stall put down to them (ms)\n");
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!p->niter || p->gpu_breakdown || !p->coll.count || (shown && !shown[i]))
			continue;
		char label[96];
		fprintf(f, "  %s (%s): %.1f calls, %s (%s across machines)", ddl_label(r, p, label, sizeof label),
		        p->coll.source, p->coll_calls, ddl_human_bytes((uint64_t)p->coll_bytes, b1, sizeof b1),
		        ddl_human_bytes((uint64_t)p->coll_inter_bytes, b2, sizeof b2));
		for (unsigned op = 0; op < DDL_COLL_OPS; op++)
			if (p->coll_stall_s[op] >= 5e-6)
				fprintf(f, "; %s %.2f", ddl_coll_op_name(op), p->coll_stall_s[op] * 1e3);
		/* always: the stall no collective explains, 0.00 as well */
		fprintf(f, "; no collective %.2f", p->coll_stall_other_s * 1e3);
		fputc('\n', f);
		if (!p->coll.mpi)
			continue;
		fprintf(f, "    whole run: %" PRIu64 " calls, %" PRIu64 " B", p->coll.count, p->coll.bytes);
		const char *sep = ": ";
		for (unsigned op = 0; op < DDL_COLL_OPS; op++) {
			if (!p->coll.op_count[op])
				continue;
			fprintf(f, "%s%s %" PRIu64 " (%" PRIu64 " B)", sep, ddl_coll_op_name(op),
			        p->coll.op_count[op], p->coll.op_bytes[op]);
			sep = ", ";
		}
		fputc('\n', f);
	}
}

/* A stack's frames, a line each after INDENT: "function (module+0xoffset)". */
static void ddl_frames_out(const struct ddl_frame *fr, size_t n, const char *indent, FILE *f)
{
	for (size_t k = 0; k < n; k++) {
		const char *m = fr[k].module ? strrchr(fr[k].module, '/') : NULL;
		m = m ? m + 1 : fr[k].module ? fr[k].module : "?";
		fprintf(f, "%s%s (%s+%#" PRIx64 ")\n", indent, fr[k].function ? fr[k].function : "??", m, fr[k].offset);
	}
}

/* --backtrace (callsites.c): the stacks whose calls cost the most stall. */
static void ddl_callsites_section(const struct ddl_report *r, FILE *f)
{
	if (!r->ncallsites_all) {
		if (r->backtrace_off)
			fprintf(f, "\nCall sites: not recorded (--backtrace: %s)\n", r->backtrace_off);
		return;
	}
	char depth[32] = "";
	if (r->backtrace > 0)
		snprintf(depth, sizeof depth, " of up to %d frames", r->backtrace);
	fprintf(f, "\nTop call sites by stall time (%zu distinct stack%s%s; functions from the "
	        "modules' symbol tables)\n", r->ncallsites_all, r->ncallsites_all == 1 ? "" : "s", depth);
	for (size_t i = 0; i < r->ncallsites; i++) {
		const struct ddl_callsite *c = &r->callsites[i];
		fprintf(f, "  %zu. %.3f ms stall (network %.3f, interconnect %.3f) of %.3f ms in %" PRIu64
		        " call%s (mostly %s)\n", i + 1, c->stall_s * 1e3, c->network_s * 1e3,
		        c->interconnect_s * 1e3, c->time_s * 1e3, c->calls, c->calls == 1 ? "" : "s", c->call);
		ddl_frames_out(c->frames, c->nframes, "       ", f);
	}
	if (r->symbols_stale)
		fprintf(f, "  (some modules changed since the run: their frames are left unnamed)\n");
}

/* --papi (counters.c): counters per thread, mean per iteration. */
static void ddl_counters_section(const struct ddl_report *r, FILE *f)
{
	int any = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		any |= r->procs[i].ctr != NULL;
	if (!any)
		return;
	fprintf(f, "\nCounters (--papi; read at each marker event; mean per iteration of the thread)\n");
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		const struct ddl_ctrsum *c = p->ctr;
		if (!c)
			continue;
		char label[96];
		fprintf(f, "  %s%s%s\n", ddl_label(r, p, label, sizeof label),
		        c->domain ? ", counting " : "", c->domain ? c->domain : "");
		if (c->error)
			fprintf(f, "    no counters: %s\n", c->error);
		for (size_t k = 0; k < c->nthreads; k++) {
			const struct ddl_ctrthread *th = &c->threads[k];
			fprintf(f, "    thread %u %s (%zu iteration%s):", th->tid, th->name ? th->name : "",
			        th->iterations, th->iterations == 1 ? "" : "s");
			for (size_t n = 0; n < c->ncounters; n++) {
				if (th->iterations)
					fprintf(f, " %s %.6g%s", c->names[n], th->per_iter[n],
					        n + 1 < c->ncounters ? "," : "");
				else
					fprintf(f, " %s %.6g in all%s", c->names[n], th->total[n],
					        n + 1 < c->ncounters ? "," : "");
			}
			fputc('\n', f);
		}
		if (!c->nthreads && c->ncounters)
			fprintf(f, "    no readings (counters are read at marker events: this process made none)\n");
		if (c->nrefused) {
			fprintf(f, "    not available here, not counted:");
			for (size_t n = 0; n < c->nrefused; n++)
				fprintf(f, " %s (%s)%s", c->refused[n], c->refused_why[n],
				        n + 1 < c->nrefused ? "," : "");
			fprintf(f, "; hardware counters are often not exposed in virtual machines\n");
		}
	}
}

/* Events recorded by all the run's processes. */
static uint64_t ddl_events_total(const struct ddl_report *r)
{
	uint64_t n = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		n += r->procs[i].events;
	return n;
}


/* The stragglers' verdict (stragglers.c): the culprit, why, who waits on it, its victims. */
static void ddl_straggler_section(const struct ddl_report *r, const unsigned char *shown, FILE *f)
{
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!p->straggler)
			continue;
		char label[96];
		fprintf(f, "\nStraggler: %s: late to its collectives in %.0f%% of the iterations by its own "
		        "doing, it makes the others wait %.3f ms an iteration\n", ddl_label(r, p, label, sizeof label),
		        p->late_fraction * 100, p->imposed_wait_s * 1e3);
		if (!strcmp(p->straggler_cause, "compute"))
			fprintf(f, "  slow in its own compute: %.3f ms an iteration (the other ranks' median %.3f)\n",
			        p->cause_s * 1e3, p->cause_others_s * 1e3);
		else if (!strcmp(p->straggler_cause, "data"))
			fprintf(f, "  it waits %.3f ms an iteration for its data (the other ranks' median %.3f; see "
			        "Input pipeline)\n", p->cause_s * 1e3, p->cause_others_s * 1e3);
		else
			fprintf(f, "  neither its compute nor its data stall is what makes it late\n");
		int n = 0;
		double sum = 0;
		for (size_t k = 0; k < r->nprocs; k++)
			if (k != i && r->procs[k].waits_on == (int)i) {
				n++;
				sum += r->procs[k].waits_on_s;
			}
		if (n) {
			fprintf(f, "  waiting on it (%.3f ms an iteration, mean):", sum / n * 1e3);
			int c = 0;
			for (size_t k = 0; k < r->nprocs; k++)
				if (k != i && r->procs[k].waits_on == (int)i && (!shown || c < 8))
					fprintf(f, "%s%s", c++ ? ", " : " ", ddl_label(r, &r->procs[k], label, sizeof label));
			if (c < n)
				fprintf(f, ", and %d more (--ranks all)", n - c);
			fputc('\n', f);
		}
	}
	size_t victims = 0, said = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		victims += r->procs[i].victim != 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!p->victim)
			continue;
		if (shown && said == 8) {
			fprintf(f, "  and %zu more victims (--ranks all)\n", victims - said);
			break;
		}
		said++;
		char label[96], of[96];
		fprintf(f, "%s%s, late to its collectives in %.0f%% of the iterations because it waits on "
		        "%s, makes the others wait %.3f ms an iteration\n", r->nstragglers ? "  victim: " :
		        "\nLate, a victim: ", ddl_label(r, p, label, sizeof label), p->late_fraction * 100,
		        ddl_label(r, &r->procs[p->victim_of], of, sizeof of), p->imposed_wait_s * 1e3);
	}
}


/* What rank HR was doing at the job's end, as a phrase. */
static void ddl_hang_doing(const struct ddl_report *r, const struct ddl_hangrank *hr, char *buf, size_t n)
{
	const struct ddl_hang *h = &r->hang;
	if (hr->call && hr->comm_key && !hr->last)
		snprintf(buf, n, "in %s (collective %u of communicator %016llx) for %.1f s", hr->call, hr->seq,
		         (unsigned long long)hr->comm_key, hr->in_s);
	else if (hr->call && hr->comm_key)
		snprintf(buf, n, "in %s for %.1f s, after issuing %s (collective %u of communicator %016llx)",
		         hr->call, hr->in_s, hr->last_call ? hr->last_call : "a collective", hr->seq,
		         (unsigned long long)hr->comm_key);
	else if (hr->call && hr->fd >= 0)
		snprintf(buf, n, "in %s (descriptor %d) for %.1f s", hr->call, hr->fd, hr->in_s);
	else if (hr->call)
		snprintf(buf, n, "in %s for %.1f s", hr->call, hr->in_s);
	else if (!hr->clean && (double)(h->end_ns - hr->end_ns) / 1e9 >= 1)
		snprintf(buf, n, "gone: its trace ends %.1f s before the job's", (double)(h->end_ns - hr->end_ns) / 1e9);
	else if (hr->last_event)
		snprintf(buf, n, "in no blocking call ddlprof records (computing, or blocked elsewhere) since its "
		         "last recorded call, %s, %.1f s before the end", hr->last_event, hr->last_ago_s);
	else
		snprintf(buf, n, "in no blocking call ddlprof records (computing, or blocked elsewhere)");
	size_t len = strlen(buf);
	if (hr->phase && len < n)
		snprintf(buf + len, n - len, "; in Python, in %s for %.1f s", hr->phase, hr->phase_s);
}

/* The ranks of process indices V[0..N), "rank 0, rank 2". */
static void ddl_rank_list(const struct ddl_report *r, const int *v, size_t n, FILE *f)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%srank %d", i ? ", " : "", r->procs[v[i]].rank);
	if (!n)
		fputs("none", f);
}

/* The Hang section (hang.c): the stuck collectives, the rank to blame, where each rank was. */
static void ddl_hang_section(const struct ddl_report *r, FILE *f)
{
	const struct ddl_hang *h = &r->hang;
	if (!h->found)
		return;
	char b[32], doing[512], label[96];
	if (h->calls_only) {
		fprintf(f, "\nHang: no collective is stuck, but at the end processes had been blocked in one call "
		        "for a second or more:\n");
		for (size_t k = 0; k < h->nranks; k++) {
			ddl_hang_doing(r, &h->ranks[k], doing, sizeof doing);
			fprintf(f, "    %s: %s%s\n", ddl_label(r, &r->procs[h->ranks[k].proc], label, sizeof label),
			        doing, h->ranks[k].clean ? " (then exited)" : "");
			ddl_frames_out(h->ranks[k].frames, h->ranks[k].nframes, "        called from ", f);
		}
		if (h->blame >= 0)
			fprintf(f, "  most likely to blame: %s, in no blocking call while the others wait (computing, "
			        "or stopped in a call ddlprof does not record)\n",
			        ddl_label(r, &r->procs[h->blame], label, sizeof label));
		return;
	}
	const struct ddl_hangpt *p = &h->pts[h->first];
	fprintf(f, "\nHang: the job is stuck in %s (collective %u of communicator %016llx, %d ranks, %s); the "
	        "first rank entered it %.1f s before the end; missing: ", p->op ? p->op : "a collective", p->seq,
	        (unsigned long long)p->key, p->nranks, ddl_human_bytes(p->bytes, b, sizeof b), p->waiting_s);
	ddl_rank_list(r, p->missing, p->nmissing, f);
	fputc('\n', f);
	if (h->blame >= 0) {
		const struct ddl_hangrank *hr = NULL;
		for (size_t k = 0; k < h->nranks; k++)
			if (h->ranks[k].proc == h->blame)
				hr = &h->ranks[k];
		ddl_hang_doing(r, hr, doing, sizeof doing);
		if (!strcmp(h->blame_why, "missing"))
			fprintf(f, "  most likely to blame: rank %d, which never entered it and waits in no stuck "
			        "collective itself; at the end it was %s\n", r->procs[h->blame].rank, doing);
		else
			fprintf(f, "  most likely to blame: rank %d, whose trace ended first (%s)\n",
			        r->procs[h->blame].rank, doing);
	} else {
		fprintf(f, "  every member entered it and none left: the collective itself does not complete "
		        "(its transport, or a peer outside the traced ranks)\n");
	}
	fprintf(f, "  stuck collectives, the first cause first:\n");
	for (size_t k = 0; k < h->npts; k++) {
		const struct ddl_hangpt *q = &h->pts[(k + (size_t)h->first) % h->npts];
		if (k && q == p)
			continue;
		fprintf(f, "    communicator %016llx (%d of %d ranks traced): %s #%u, %s, waited %.1f s; entered by ",
		        (unsigned long long)q->key, q->members, q->nranks, q->op ? q->op : "?", q->seq,
		        ddl_human_bytes(q->bytes, b, sizeof b), q->waiting_s);
		ddl_rank_list(r, q->inside, q->ninside, f);
		fputs("; missing ", f);
		ddl_rank_list(r, q->missing, q->nmissing, f);
		fputc('\n', f);
	}
	fprintf(f, "  at the end:\n");
	for (size_t k = 0; k < h->nranks; k++) {
		ddl_hang_doing(r, &h->ranks[k], doing, sizeof doing);
		fprintf(f, "    %s: %s%s\n", ddl_label(r, &r->procs[h->ranks[k].proc], label, sizeof label), doing,
		        h->ranks[k].clean ? " (then exited)" : "");
		ddl_frames_out(h->ranks[k].frames, h->ranks[k].nframes, "        called from ", f);
	}
	fprintf(f, "  last collective entered / left, per communicator and member:\n");
	for (size_t a = 0; a < h->nmembers;) {
		size_t z = a;
		fprintf(f, "    %016llx:", (unsigned long long)h->members[a].key);
		while (z < h->nmembers && h->members[z].key == h->members[a].key) {
			const struct ddl_hmember *m = &h->members[z++];
			if (m->left)
				fprintf(f, " rank %d %u/%u", r->procs[m->proc].rank, m->entered, m->left);
			else
				fprintf(f, " rank %d %u/-", r->procs[m->proc].rank, m->entered);
		}
		fputc('\n', f);
		a = z;
	}
}
/* The ranks' iterations in one go, when their lines are left out: the
 * spread of their means, and which have slow iterations or a change of
 * pace (the first eight named). */
static void ddl_iter_summary(const struct ddl_report *r, size_t hidden, FILE *f)
{
	const struct ddl_proc *lo = NULL, *hi = NULL;
	size_t n = 0, nslow = 0, nshift = 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (p->rank < 0 || !p->niter)
			continue;
		n++;
		nslow += p->nslow > 0;
		nshift += p->shift_at >= 0;
		if (!lo || p->iter_mean_s < lo->iter_mean_s)
			lo = p;
		if (!hi || p->iter_mean_s > hi->iter_mean_s)
			hi = p;
	}
	if (!n)
		return;
	char a[96], b[96];
	fprintf(f, "  %zu ranks: a mean iteration from %.3f ms (%s) to %.3f ms (%s); %zu with slow iterations, "
	        "%zu with a change of pace\n", n, lo->iter_mean_s * 1e3, ddl_label(r, lo, a, sizeof a),
	        hi->iter_mean_s * 1e3, ddl_label(r, hi, b, sizeof b), nslow, nshift);
	for (int kind = 0; kind < 2; kind++) {
		if (!(kind ? nshift : nslow))
			continue;
		fprintf(f, "    %s:", kind ? "a change of pace" : "slow iterations");
		size_t c = 0;
		for (size_t i = 0; i < r->nprocs; i++) {
			const struct ddl_proc *p = &r->procs[i];
			if (p->rank < 0 || !p->niter || !(kind ? p->shift_at >= 0 : p->nslow > 0))
				continue;
			if (c++ < 8)
				fprintf(f, "%s rank %d", c > 1 ? "," : "", p->rank);
		}
		if (c > 8)
			fprintf(f, ", and %zu more", c - 8);
		fputc('\n', f);
	}
	if (r->text_ranks)
		fprintf(f, "  below: the ranks of --ranks %s (%zu more: --ranks all)\n", r->text_ranks, hidden);
	else
		fprintf(f, "  below: the %d slowest and %d fastest ranks (%zu more: --ranks all, or --ranks LIST)\n",
		        DDL_TEXT_ENDS, DDL_TEXT_ENDS, hidden);
}

/* What the library could not record: events lost to full buffers, and
 * threads that found no room for one (ulimit -v), with the processes. */
static void ddl_text_unrecorded(const struct ddl_report *r, FILE *f)
{
	uint64_t ev = 0;
	unsigned long th = 0;
	size_t pev = 0, pth = 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		ev += r->procs[i].dropped;
		pev += r->procs[i].dropped > 0;
		th += r->procs[i].threads_unrecorded;
		pth += r->procs[i].threads_unrecorded > 0;
	}
	if (ev)
		fprintf(f, "  NOT RECORDED: %" PRIu64 " event%s lost to full buffers (%zu process%s; "
		        "DDLPROF_BUFFER_EVENTS in ddlprof(1))\n", ev, ev == 1 ? "" : "s", pev,
		        pev == 1 ? "" : "es");
	if (th)
		fprintf(f, "  NOT RECORDED: %lu thread%s found no room for a buffer under ulimit -v (%zu "
		        "process%s); their calls are not in the figures\n", th, th == 1 ? "" : "s", pth,
		        pth == 1 ? "" : "es");
}

int ddl_out_text(const struct ddl_report *r, FILE *f)
{
	int nomem = 0;
	unsigned char *shown = ddl_text_view(r);
	size_t hidden = ddl_text_hidden(r, shown);
	char when[64] = "?";
	time_t sec = (time_t)(r->start_real_ns / 1000000000);
	struct tm tm;
	if (r->nprocs && gmtime_r(&sec, &tm))
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
	double wall = r->nprocs ? (double)(r->end_real_ns - r->start_real_ns) / 1e9 : 0;
	fprintf(f, "ddlprof report: run %s\n", r->run->id);
	int nworkers = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		nworkers += r->procs[i].role == DDL_ROLE_WORKER;
	char wk[64] = "";
	if (nworkers)
		snprintf(wk, sizeof wk, " and %d data loader worker%s", nworkers, nworkers == 1 ? "" : "s");
	fprintf(f, "  %zu process%s on %d host%s: %d rank%s%s; started %s; %.3f s\n", r->nprocs,
	        r->nprocs == 1 ? "" : "es", r->nhosts, r->nhosts == 1 ? "" : "s", r->nranks,
	        r->nranks == 1 ? "" : "s", wk, when, wall);
	for (size_t k = 0; k < r->set->nruns; k++)
		if (&r->set->runs[k] != r->run)
			fprintf(f, "  also in these traces: run %s (%zu file%s; --run %s)\n",
			        r->set->runs[k].id, r->set->runs[k].ntraces,
			        r->set->runs[k].ntraces == 1 ? "" : "s", r->set->runs[k].id);
	if (r->nclock && r->clock_residual_s >= 0) {
		fprintf(f, "  host clocks checked on the ends of shared collectives (residual %.1f us):",
		        r->clock_residual_s * 1e6);
		for (int h = 0; h < r->nclock; h++)
			fprintf(f, " %s %+.3f ms%s%s", r->clock[h].host, r->clock[h].offset_s * 1e3,
			        r->clock[h].applied ? " (corrected)" : "", h + 1 < r->nclock ? "," : "\n");
	}
	if (r->incomplete)
		fprintf(f, "  INCOMPLETE: memory ran out; not every trace was read or analysed in full, and "
		           "figures miss what was not\n");
	if (r->truncated)
		fprintf(f, "  TRUNCATED: some traces were cut short; figures cover what was written\n");
	ddl_text_unrecorded(r, f);
	const char *pert = r->nprocs ? ddl_trace_meta(r->procs[0].tr[0], "DDLPROF_PERTURB_NET") : NULL;
	if (pert)
		fprintf(f, "  PERTURBED: the job's sends were slowed on purpose (--perturb-net %s)\n", pert);
	ddl_hang_section(r, f);
	if (r->iterations > 0) {
		char how[160];
		if (!strcmp(r->iteration_method, "steps"))
			snprintf(how, sizeof how, "optimizer steps, from the Python hook");
		else if (!strcmp(r->iteration_method, "markers"))
			snprintf(how, sizeof how, "markers matching %s", r->iteration_names);
		else if (!strcmp(r->iteration_method, "collectives"))
			snprintf(how, sizeof how, "from the repeating sequence of collectives");
		else if (!strcmp(r->iteration_method, "socket"))
			snprintf(how, sizeof how, "from the repeating sequence of socket calls");
		else
			snprintf(how, sizeof how, "from the repeating sequence of long waits");
		if (r->iter_disagree)
			fprintf(f, "\nIterations (%s): the ranks disagree, so the job has no count\n", how);
		else
			fprintf(f, "\nIterations (%s): %ld per rank after warm-up\n", how, r->iterations);
		for (size_t i = 0; r->iter_disagree && i < r->nprocs; i++) {
			const struct ddl_proc *p = &r->procs[i];
			char label[96];
			if (!p->iter_disagrees)
				continue;
			if (p->niter_found)
				fprintf(f, "  %s: %zu found, of %.3f ms, where the ranks' median is %ld of "
				        "%.3f ms\n", ddl_label(r, p, label, sizeof label), p->niter_found,
				        p->iter_period_s * 1e3, r->iter_found_median, r->iter_period_s * 1e3);
			else
				fprintf(f, "  %s: none found, where the ranks' median is %ld of %.3f ms\n",
				        ddl_label(r, p, label, sizeof label), r->iter_found_median,
				        r->iter_period_s * 1e3);
		}
		fprintf(f, "  mean %.3f ms, p50 %.3f ms, p99 %.3f ms\n", r->iter_mean_s * 1e3,
		        r->iter_p50_s * 1e3, r->iter_p99_s * 1e3);
		if (hidden)
			ddl_iter_summary(r, hidden, f);
		for (size_t i = 0; i < r->nprocs; i++) {
			const struct ddl_proc *p = &r->procs[i];
			char label[96], run[48] = "";
			if (!p->niter || (shown && !shown[i]))
				continue;
			if (p->steps_run >= 0)
				snprintf(run, sizeof run, " of %ld run", p->steps_run);
			fprintf(f, "  %s: %zu iterations (%s; %zu found%s, %d warm-up skipped), mean %.3f ms%s\n",
			        ddl_label(r, p, label, sizeof label), p->niter, p->iteration_method,
			        p->niter_found, run, p->warmup_skipped, p->iter_mean_s * 1e3,
			        p->iter_disagrees ? " (disagrees)" : "");
			if (p->shift_at >= 0)
				fprintf(f, "    from iteration %ld on: %.3f ms an iteration, %.3f ms before (%+.0f%%)\n",
				        p->shift_at, p->shift_after_s * 1e3, p->shift_before_s * 1e3,
				        (p->shift_after_s / p->shift_before_s - 1) * 100);
			if (p->nslow) {
				fprintf(f, "    slow:");
				for (size_t k = 0; k < p->nslow && k < 8; k++)
					fprintf(f, "%s iteration %zu %.3f ms (%+.0f%%)", k ? "," : "", p->slow[k].iteration,
					        p->slow[k].s * 1e3, (p->slow[k].s / p->slow[k].median_s - 1) * 100);
				if (p->nslow > 8)
					fprintf(f, ", and %zu more", p->nslow - 8);
				fputc('\n', f);
			}
		}
		fprintf(f, "\nWhere an iteration's time goes (%s; mean ms per iteration)\n",
		        r->nprocs && r->procs[0].gpu_breakdown ? "device timeline" : "training thread");
		fprintf(f, "  %-28s %10s %10s %12s %10s %10s\n", "rank", "compute", "data", "interconnect",
		        "network", "idle");
		for (size_t i = 0; i < r->nprocs; i++) {
			const struct ddl_proc *p = &r->procs[i];
			if (!p->niter || (shown && !shown[i]))
				continue;
			char label[96];
			fprintf(f, "  %-28s %10.2f %10.2f %12.2f %10.2f %10.2f\n", ddl_label(r, p, label, sizeof label),
			        p->per_iter.compute * 1e3, p->per_iter.data_stall * 1e3,
			        p->per_iter.interconnect_stall * 1e3, p->per_iter.network_stall * 1e3,
			        p->per_iter.idle * 1e3);
		}
		double *tmp = hidden ? malloc((r->nprocs + 1) * sizeof *tmp) : NULL;
		nomem |= hidden && !tmp;
		if (tmp) { /* the parts across every rank: least, median, most */
			static const char *const rows[3] = {"least of the ranks", "median", "most"};
			static const size_t off[5] = {offsetof(struct ddl_parts, compute), offsetof(struct ddl_parts, data_stall),
			                              offsetof(struct ddl_parts, interconnect_stall),
			                              offsetof(struct ddl_parts, network_stall), offsetof(struct ddl_parts, idle)};
			double v[5][3];
			for (int c = 0; c < 5; c++)
				ddl_part_spread(r, off[c], tmp, v[c]);
			for (int k = 0; k < 3; k++)
				fprintf(f, "  %-28s %10.2f %10.2f %12.2f %10.2f %10.2f\n", rows[k], v[0][k], v[1][k], v[2][k],
				        v[3][k], v[4][k]);
			free(tmp);
		}
		fprintf(f, "  %-28s %9.1f%% %9.1f%% %11.1f%% %9.1f%% %9.1f%%\n", "job (share of time)",
		        r->pct.compute, r->pct.data_stall, r->pct.interconnect_stall, r->pct.network_stall,
		        r->pct.idle);
		ddl_loop_section(r, shown, f);
		ddl_inputs_section(r, shown, f);
		ddl_coll_section(r, shown, f);
		if (r->have_sensitivity)
			fprintf(f, "\nNetwork sensitivity %.2f: predicted iteration %.1f ms in one machine, "
			        "%.1f ms in a rack (x%.2f), %.1f ms across racks (x%.2f)\n"
			        "  at %.3g, %.3g and %.3g Gbit/s (--bw)\n",
			        r->sensitivity, r->predicted_s[0] * 1e3, r->predicted_s[1] * 1e3, r->slowdown[1],
			        r->predicted_s[2] * 1e3, r->slowdown[2], r->bw[0] * 8 / 1e9, r->bw[1] * 8 / 1e9,
			        r->bw[2] * 8 / 1e9);
		if (r->have_measured)
			ddl_measured_line(r, f);
	} else if (ddl_events_total(r) == 0) {
		/* the launcher's command leaves a trace even so (writer.c): say
		 * plainly that it ran and did nothing we record */
		fprintf(f, "\n%zu process%s, no communication or GPU work recorded (no call of the "
		        "families traced: --trace in ddlprof(1))\n", r->nprocs, r->nprocs == 1 ? "" : "es");
	} else {
		fprintf(f, "\nIterations: no iterations found (no optimizer steps from the Python hook, no "
		        "marker ranges matching %s, and no period in the sequence of collectives, of socket "
		        "calls or of long waits)\n", r->iteration_names);
	}

	ddl_straggler_section(r, shown, f);
	if (r->has_gpu) {
		ddl_gpu_section(r, shown, f);
		nomem |= ddl_kernels_section(r, f) < 0;
	}
	ddl_callsites_section(r, f);
	ddl_counters_section(r, f);

	fprintf(f, "\nNetwork activity by process and thread\n");
	fprintf(f, "  %-28s %9s %12s %12s %10s %10s %11s\n", "process / thread", "calls", "sent",
	        "received", "in calls s", "blocked s", "peers l/r");
	if (shown) { /* every process's together, then the ones shown */
		struct ddl_netsum all = {0};
		for (size_t i = 0; i < r->nprocs; i++) {
			const struct ddl_netsum *n = &r->procs[i].net;
			all.calls += n->calls;
			all.bytes_sent += n->bytes_sent;
			all.bytes_received += n->bytes_received;
			all.in_calls_ns = ddl_ns_sat_add(all.in_calls_ns, n->in_calls_ns);
			all.blocked_ns = ddl_ns_sat_add(all.blocked_ns, n->blocked_ns);
		}
		char label[96], sb[32], rb[32];
		snprintf(label, sizeof label, "all %zu processes", r->nprocs);
		fprintf(f, "  %-28s %9" PRIu64 " %12s %12s %10.4f %10.4f\n", label, all.calls,
		        ddl_human_bytes(all.bytes_sent, sb, sizeof sb), ddl_human_bytes(all.bytes_received, rb, sizeof rb),
		        (double)all.in_calls_ns / 1e9, (double)all.blocked_ns / 1e9);
	}
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		char label[96];
		if (shown && !shown[i])
			continue;
		ddl_net_row(f, ddl_label(r, p, label, sizeof label), &p->net);
		if (p->command) {
			char *cmd = NULL;
			size_t len = 0;
			FILE *m = open_memstream(&cmd, &len);
			if (m) {
				fprintf(m, "%s%s%s", p->command, p->images > 1 ? " (after exec)" : "",
				        p->incomplete ? " [incomplete]" : p->truncated ? " [truncated]" : "");
				fclose(m);
			}
			ddl_wrap(f, "      command: ", cmd ? cmd : p->command);
			free(cmd);
		}
		for (size_t k = 0; k < p->nthreads; k++) {
			snprintf(label, sizeof label, "  thread %u %s", p->threads[k].tid, p->threads[k].name);
			ddl_net_row(f, label, &p->threads[k].net);
		}
	}
	int problems = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		for (size_t k = 0; k < r->procs[i].ntr; k++)
			problems += r->procs[i].tr[k]->nproblems;
	if (problems) {
		fprintf(f, "\nTrace problems\n");
		for (size_t i = 0; i < r->nprocs; i++)
			for (size_t k = 0; k < r->procs[i].ntr; k++)
				for (int j = 0; j < r->procs[i].tr[k]->nproblems; j++)
					fprintf(f, "  %s\n", r->procs[i].tr[k]->problems[j]);
	}
	free(shown);
	if (nomem) {
		errno = ENOMEM;
		return -1;
	}
	return ferror(f) ? -1 : 0;
}
