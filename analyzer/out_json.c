/*
 * The JSON report, schema "ddlprof-report/1" (documented in
 * ddlprof-report(1)): fields are added, never renamed, within the version.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* Whether an allocation failed since ddl_json_watch: jansson's calls fail
 * quietly (a value not made, a key not set), so a tree built short of
 * memory would pass for whole. */
static int ddl_json_short;

static void *ddl_json_malloc(size_t n)
{
	void *p = malloc(n);
	if (!p)
		ddl_json_short = 1;
	return p;
}

void ddl_json_watch(void)
{
	json_set_alloc_funcs(ddl_json_malloc, free);
	ddl_json_short = 0;
}

int ddl_json_failed(void)
{
	return ddl_json_short;
}

/* A JSON string of any bytes: invalid UTF-8 (a cut command line) becomes '?'. */
static json_t *ddl_jstr(const char *s)
{
	if (!s)
		return json_null();
	json_t *j = json_string(s);
	if (j)
		return j;
	char *c = strdup(s);
	if (!c) {
		ddl_json_short = 1;
		return json_null();
	}
	for (char *p = c; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	j = json_string(c);
	free(c);
	return j ? j : json_null();
}

/* job.sensitivity.measured (breakdown.c): null where a figure needs what is missing. */
static json_t *ddl_json_measured(const struct ddl_report *r)
{
	double t = r->measured.iteration_s, pred = r->measured.predicted_s, base = r->measured.baseline_s;
	json_t *m = json_object();
	json_object_set_new(m, "perturbation", ddl_jstr(r->measured.perturb));
	json_object_set_new(m, "bandwidth_bps",
	                    r->measured.bandwidth > 0 ? json_real(r->measured.bandwidth * 8) : json_null());
	json_object_set_new(m, "iteration_s", json_real(t));
	json_object_set_new(m, "baseline_iteration_s", base > 0 ? json_real(base) : json_null());
	json_object_set_new(m, "slowdown", base > 0 ? json_real(t / base) : json_null());
	json_object_set_new(m, "predicted_slowdown", base > 0 && pred > 0 ? json_real(pred / base) : json_null());
	json_object_set_new(m, "error", pred > 0 && t > 0 ? json_real(pred / t - 1) : json_null());
	json_object_set_new(m, "predicted_iteration_s", pred > 0 ? json_real(pred) : json_null());
	json_object_set_new(m, "predicted_from",
	                    pred > 0 ? json_string(r->measured.from_baseline ? "baseline" : "run") : json_null());
	json_object_set_new(m, "baseline_run", base > 0 ? ddl_jstr(r->measured.baseline_run) : json_null());
	return m;
}

static json_t *ddl_json_parts(const struct ddl_parts *p)
{
	json_t *j = json_object();
#define DDL_X_JSON(f) json_object_set_new(j, #f, json_real(p->f));
	DDL_PARTS(DDL_X_JSON)
#undef DDL_X_JSON
	return j;
}

static json_t *ddl_json_net(const struct ddl_netsum *n)
{
	json_t *j = json_pack("{s:I, s:I, s:I, s:f, s:f, s:i, s:i}", "calls", (json_int_t)n->calls,
	                      "bytes_sent", (json_int_t)n->bytes_sent, "bytes_received",
	                      (json_int_t)n->bytes_received, "time_in_calls_s",
	                      (double)n->in_calls_ns / 1e9, "time_blocked_s", (double)n->blocked_ns / 1e9,
	                      "peers_local", (int)n->peers_local, "peers_remote", (int)n->peers_remote);
	json_object_set_new(j, "bytes_sent_remote", json_integer((json_int_t)n->bytes_sent_remote));
	json_object_set_new(j, "bytes_received_remote",
	                    json_integer((json_int_t)n->bytes_received_remote));
	return j;
}

static json_t *ddl_json_coll(const struct ddl_collsum *c)
{
	json_t *j = json_pack("{s:I, s:I, s:I, s:I}", "count", (json_int_t)c->count, "bytes",
	                      (json_int_t)c->bytes, "intra_bytes", (json_int_t)c->intra_bytes,
	                      "inter_bytes", (json_int_t)c->inter_bytes);
	json_object_set_new(j, "unknown_span_bytes", json_integer((json_int_t)c->unknown_bytes));
	json_object_set_new(j, "timed", json_integer((json_int_t)c->timed));
	json_object_set_new(j, "device_s", json_real(c->device_s));
	json_object_set_new(j, "host_s", json_real(c->host_s));
	json_t *ops = json_object();
	for (unsigned k = 0; k < DDL_COLL_OPS; k++)
		if (c->op_count[k])
			json_object_set_new(ops, ddl_coll_op_name(k),
			                    json_pack("{s:I, s:I}", "count", (json_int_t)c->op_count[k],
			                              "bytes", (json_int_t)c->op_bytes[k]));
	json_object_set_new(j, "by_op", ops);
	json_object_set_new(j, "source", ddl_jstr(c->source));
	json_object_set_new(j, "torch_calls", json_integer((json_int_t)c->py_calls));
	return j;
}

/* ranks[].collectives_per_iteration: calls, bytes and the stall put down to each operation. */
static json_t *ddl_json_coll_iter(const struct ddl_proc *p)
{
	if (!p->niter)
		return json_null();
	json_t *j = json_pack("{s:f, s:f, s:f, s:f}", "calls", p->coll_calls, "bytes", p->coll_bytes,
	                      "intra_bytes", p->coll_intra_bytes, "inter_bytes", p->coll_inter_bytes);
	json_t *ops = json_object();
	for (unsigned op = 0; op < DDL_COLL_OPS; op++)
		if (p->coll_op_calls[op] > 0)
			json_object_set_new(ops, ddl_coll_op_name(op),
			                    json_pack("{s:f, s:f}", "calls", p->coll_op_calls[op], "bytes",
			                              p->coll_op_bytes[op]));
	json_object_set_new(j, "by_op", ops);
	if (!p->gpu_breakdown) {
		json_t *st = json_object();
		for (unsigned op = 0; op < DDL_COLL_OPS; op++)
			if (p->coll_stall_s[op] > 0)
				json_object_set_new(st, ddl_coll_op_name(op), json_real(p->coll_stall_s[op]));
		json_object_set_new(st, "none", json_real(p->coll_stall_other_s));
		json_object_set_new(j, "stall_s", st);
	}
	return j;
}

/* ranks[].input (inputs.c): the data stall split into fetch and prep; null without the hook. */
static json_t *ddl_json_input(const struct ddl_proc *p)
{
	if (!p->in.have)
		return json_null();
	json_t *j = json_pack("{s:f, s:f, s:f, s:i, s:I}", "data_stall_s", p->per_iter.data_stall,
	                      "fetch_s", p->in.fetch_s, "prep_s", p->in.prep_s, "workers", p->in.workers,
	                      "batches", (json_int_t)p->in.batches);
	json_object_set_new(j, "batch_s", json_real(p->in.batch_s));
	json_object_set_new(j, "batch_fetch_s", json_real(p->in.batch_fetch_s));
	json_object_set_new(j, "workers_busy", json_real(p->in.busy));
	json_object_set_new(j, "bound", ddl_jstr(p->in.bound));
	return j;
}

/* ranks[].phases: the Python hook's phases, mean seconds per iteration; null without it. */
static json_t *ddl_json_phases(const struct ddl_proc *p)
{
	if (!p->niter || !p->phases.have)
		return json_null();
	return json_pack("{s:f, s:f, s:f, s:f}", "data_wait_s", p->phases.data_wait_s, "forward_s",
	                 p->phases.forward_s, "backward_s", p->phases.backward_s, "optimizer_s",
	                 p->phases.optimizer_s);
}

/* gpu.correlation (correlate.c): null without CUPTI's call records. */
static json_t *ddl_json_corr(const struct ddl_corrsum *c)
{
	if (!c->api)
		return json_null();
	json_t *j = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "api_calls", (json_int_t)c->api,
	                      "driver_calls", (json_int_t)c->api_driver, "failed_calls",
	                      (json_int_t)c->api_failed, "device_intervals", (json_int_t)c->device, "joined",
	                      (json_int_t)c->joined, "through_wrapped_calls", (json_int_t)c->wrapped,
	                      "through_other_calls", (json_int_t)c->unwrapped);
	json_object_set_new(j, "queue_wait_s",
	                    c->nwaits ? json_pack("{s:f, s:f, s:f}", "p50", c->wait_p50_s, "p99", c->wait_p99_s,
	                                          "max", c->wait_max_s)
	                              : json_null());
	return j;
}

static json_t *ddl_json_gpu(const struct ddl_gpusum *g)
{
	json_t *j = json_pack("{s:I, s:I, s:f, s:I, s:I, s:f, s:I}", "launches",
	                      (json_int_t)g->launches, "kernels_timed", (json_int_t)g->kernels_timed,
	                      "kernel_s", g->kernel_s, "memcpys", (json_int_t)g->memcpys,
	                      "memcpy_bytes", (json_int_t)g->memcpy_bytes, "memcpy_s", g->memcpy_s,
	                      "memsets", (json_int_t)g->memsets);
	json_object_set_new(j, "syncs", json_integer((json_int_t)g->syncs));
	json_object_set_new(j, "sync_host_s", json_real(g->sync_host_s));
	json_object_set_new(j, "launch_host_s", json_real(g->launch_host_s));
	json_object_set_new(j, "device_intervals", json_integer((json_int_t)g->device_intervals));
	json_object_set_new(j, "devices", json_integer(g->devices));
	json_object_set_new(j, "timing", g->backend ? json_string(g->backend) : json_null());
	json_object_set_new(j, "correlation", ddl_json_corr(&g->corr));
	return j;
}

/* processes[].counters (counters.c); null when --papi was not used. */
static json_t *ddl_json_counters(const struct ddl_ctrsum *c)
{
	if (!c)
		return json_null();
	json_t *j = json_object(), *names = json_array(), *refused = json_array(), *th = json_array();
	json_object_set_new(j, "error", ddl_jstr(c->error));
	json_object_set_new(j, "domain", ddl_jstr(c->domain));
	for (size_t n = 0; n < c->ncounters; n++)
		json_array_append_new(names, ddl_jstr(c->names[n]));
	for (size_t n = 0; n < c->nrefused; n++)
		json_array_append_new(refused, json_pack("{s:o, s:o}", "name", ddl_jstr(c->refused[n]),
		                                         "error", ddl_jstr(c->refused_why[n])));
	for (size_t k = 0; k < c->nthreads; k++) {
		const struct ddl_ctrthread *t = &c->threads[k];
		json_t *per = json_object(), *tot = json_object();
		for (size_t n = 0; n < c->ncounters; n++) {
			json_object_set_new(per, c->names[n], t->iterations ? json_real(t->per_iter[n]) : json_null());
			json_object_set_new(tot, c->names[n], json_real(t->total[n]));
		}
		json_t *o = json_pack("{s:i, s:o, s:I, s:I}", "tid", (int)t->tid, "name", ddl_jstr(t->name),
		                      "iterations", (json_int_t)t->iterations, "readings",
		                      (json_int_t)t->readings);
		json_object_set_new(o, "per_iteration", per);
		json_object_set_new(o, "total", tot);
		json_array_append_new(th, o);
	}
	json_object_set_new(j, "counted", names);
	json_object_set_new(j, "unavailable", refused);
	json_object_set_new(j, "threads", th);
	return j;
}

/* A stack's frames, innermost first. */
static json_t *ddl_json_frames(const struct ddl_frame *f, size_t n)
{
	json_t *fr = json_array();
	for (size_t k = 0; k < n; k++)
		json_array_append_new(fr, json_pack("{s:o, s:o, s:I}", "function", ddl_jstr(f[k].function), "module",
		                                    ddl_jstr(f[k].module), "offset", (json_int_t)f[k].offset));
	return fr;
}

/* callsites[] (callsites.c): the top stacks by stall. */
static json_t *ddl_json_callsites(const struct ddl_report *r)
{
	json_t *a = json_array();
	for (size_t i = 0; i < r->ncallsites; i++) {
		const struct ddl_callsite *c = &r->callsites[i];
		json_t *fr = ddl_json_frames(c->frames, c->nframes);
		json_t *o = json_pack("{s:f, s:f, s:f, s:f, s:I, s:o}", "stall_s", c->stall_s,
		                      "network_stall_s", c->network_s, "interconnect_stall_s",
		                      c->interconnect_s, "time_s", c->time_s, "calls", (json_int_t)c->calls,
		                      "call", ddl_jstr(c->call));
		json_object_set_new(o, "frames", fr);
		json_array_append_new(a, o);
	}
	return a;
}

/* job.kernels[] (kernels.c): the top 50 by device time. */
static json_t *ddl_json_kernels(const struct ddl_report *r)
{
	json_t *a = json_array();
	for (size_t i = 0; i < r->nkernels_timed && i < 50; i++) {
		const struct ddl_kernel *k = &r->kernels[i];
		json_t *o = json_pack("{s:o, s:o, s:I, s:f, s:f, s:f}", "name", ddl_jstr(k->name), "mangled",
		                      ddl_jstr(k->mangled), "count", (json_int_t)k->count, "total_s",
		                      k->total_s, "mean_s", k->total_s / (double)k->count, "share",
		                      r->kernel_s > 0 ? k->total_s / r->kernel_s : 0.0);
		json_array_append_new(a, o);
	}
	return a;
}

static const char *ddl_span_name(int span)
{
	return span == DDL_SPAN_INTRA ? "intra" : span == DDL_SPAN_INTER ? "inter" : "unknown";
}


/* Process indices V[0..N) as their ranks. */
static json_t *ddl_json_rank_list(const struct ddl_report *r, const int *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer(r->procs[v[i]].rank));
	return a;
}

static json_t *ddl_json_key(uint64_t key)
{
	char k[24];
	snprintf(k, sizeof k, "%016llx", (unsigned long long)key);
	return json_string(k);
}

/* job.hang (hang.c): null when the job ended cleanly or was stuck nowhere. */
static json_t *ddl_json_hang(const struct ddl_report *r)
{
	const struct ddl_hang *h = &r->hang;
	if (!h->found)
		return json_null();
	json_t *pts = json_array();
	for (size_t k = 0; k < h->npts; k++) {
		const struct ddl_hangpt *q = &h->pts[k];
		json_array_append_new(pts, json_pack("{s:o, s:i, s:i, s:s, s:I, s:I, s:f, s:o, s:o, s:b}",
		                                     "communicator", ddl_json_key(q->key), "ranks", q->nranks,
		                                     "traced", q->members, "op", q->op ? q->op : "?", "seq",
		                                     (json_int_t)q->seq, "bytes", (json_int_t)q->bytes,
		                                     "waiting_s", q->waiting_s, "entered",
		                                     ddl_json_rank_list(r, q->inside, q->ninside), "missing",
		                                     ddl_json_rank_list(r, q->missing, q->nmissing), "first_cause",
		                                     (int)k == h->first));
	}
	json_t *ranks = json_array();
	for (size_t k = 0; k < h->nranks; k++) {
		const struct ddl_hangrank *hr = &h->ranks[k];
		json_t *o = json_pack("{s:i, s:i, s:b, s:o, s:o}", "rank", r->procs[hr->proc].rank, "pid",
		                      (int)r->procs[hr->proc].pid, "clean_exit",
		                      hr->clean, "call", hr->call ? json_string(hr->call) : json_null(), "in_s",
		                      hr->call ? json_real(hr->in_s) : json_null());
		if (hr->call && hr->comm_key)
			json_object_set_new(o, hr->last ? "last_collective" : "collective",
			                    json_pack("{s:o, s:I, s:o}", "communicator", ddl_json_key(hr->comm_key),
			                              "seq", (json_int_t)hr->seq, "call",
			                              hr->last_call ? json_string(hr->last_call) : json_null()));
		if (hr->call && hr->fd >= 0 && !hr->comm_key)
			json_object_set_new(o, "fd", json_integer(hr->fd));
		json_object_set_new(o, "last_recorded", hr->last_event ? json_string(hr->last_event) : json_null());
		json_object_set_new(o, "last_recorded_ago_s", hr->last_event ? json_real(hr->last_ago_s) : json_null());
		json_object_set_new(o, "python_phase", hr->phase ? json_pack("{s:s, s:f}", "phase", hr->phase, "in_s",
		                                                             hr->phase_s) : json_null());
		json_object_set_new(o, "stack", hr->nframes ? ddl_json_frames(hr->frames, hr->nframes) : json_null());
		json_array_append_new(ranks, o);
	}
	json_t *comms = json_array();
	for (size_t a = 0; a < h->nmembers;) {
		size_t z = a;
		json_t *mem = json_array();
		while (z < h->nmembers && h->members[z].key == h->members[a].key) {
			const struct ddl_hmember *m = &h->members[z++];
			json_array_append_new(mem, json_pack("{s:i, s:i, s:I, s:o}", "rank", r->procs[m->proc].rank,
			                                     "comm_rank", m->comm_rank, "entered", (json_int_t)m->entered,
			                                     "left", m->left ? json_integer(m->left) : json_null()));
		}
		json_array_append_new(comms, json_pack("{s:o, s:o}", "communicator", ddl_json_key(h->members[a].key),
		                                       "members", mem));
		a = z;
	}
	json_t *blame = json_null();
	if (h->blame >= 0)
		blame = json_pack("{s:i, s:i, s:s}", "rank", r->procs[h->blame].rank, "pid",
		                  (int)r->procs[h->blame].pid, "why", h->blame_why);
	if (h->calls_only)
		return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "collective", json_null(), "missing_ranks",
		                 json_array(), "blame", blame, "stuck", pts, "ranks", ranks, "communicators", comms);
	const struct ddl_hangpt *f = &h->pts[h->first];
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "collective",
	                 json_pack("{s:o, s:s, s:I, s:I, s:f}", "communicator", ddl_json_key(f->key), "op",
	                           f->op ? f->op : "?", "seq", (json_int_t)f->seq, "bytes", (json_int_t)f->bytes,
	                           "waiting_s", f->waiting_s),
	                 "missing_ranks", ddl_json_rank_list(r, f->missing, f->nmissing), "blame", blame, "stuck",
	                 pts, "ranks", ranks, "communicators", comms);
}
int ddl_out_json(const struct ddl_report *r, FILE *f)
{
	ddl_json_watch();
	json_t *root = json_object();
	json_t *procs = json_array();
	json_t *problems = json_array();
	json_t *others = json_array();
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		json_t *threads = json_array();
		for (size_t k = 0; k < p->nthreads; k++)
			json_array_append_new(threads,
			                      json_pack("{s:i, s:o, s:o}", "tid", (int)p->threads[k].tid,
			                                "name", ddl_jstr(p->threads[k].name), "network",
			                                ddl_json_net(&p->threads[k].net)));
		json_t *jp = json_pack("{s:o, s:i, s:i, s:i, s:i, s:b, s:b, s:f, s:o, s:o}", "host",
		                       ddl_jstr(p->host), "pid", (int)p->pid, "rank", p->rank, "world_size",
		                       p->world_size, "images", p->images, "truncated", p->truncated,
		                       "corrupt", p->corrupt,
		                       "wall_s", (double)(p->end_real_ns - p->start_real_ns) / 1e9,
		                       "network", ddl_json_net(&p->net), "threads", threads);
		json_object_set_new(jp, "command", ddl_jstr(p->command));
		json_object_set_new(jp, "name", p->name[0] ? ddl_jstr(p->name) : json_null());
		json_object_set_new(jp, "role", json_string(ddl_role_name(p->role)));
		const struct ddl_proc *of = ddl_proc_served(r, p);
		json_object_set_new(jp, "serves_rank", of && of->rank >= 0 ? json_integer(of->rank)
		                                                           : json_null());
		json_object_set_new(jp, "serves_pid", of ? json_integer(of->pid) : json_null());
		json_object_set_new(jp, "events", json_integer((json_int_t)p->events));
		json_object_set_new(jp, "incomplete", json_boolean(p->incomplete));
		json_object_set_new(jp, "events_dropped", json_integer((json_int_t)p->dropped));
		json_object_set_new(jp, "threads_unrecorded", json_integer((json_int_t)p->threads_unrecorded));
		json_object_set_new(jp, "counters", ddl_json_counters(p->ctr));
		if (p->has_gpu)
			json_object_set_new(jp, "gpu", ddl_json_gpu(&p->gpu));
		if (p->has_gpu || p->coll.count || p->coll.py_calls)
			json_object_set_new(jp, "collectives", ddl_json_coll(&p->coll));
		json_array_append_new(procs, jp);
		for (size_t k = 0; k < p->ntr; k++)
			for (int j = 0; j < p->tr[k]->nproblems; j++)
				json_array_append_new(problems, ddl_jstr(p->tr[k]->problems[j]));
	}
	for (size_t i = 0; i < r->set->nerrors; i++)
		json_array_append_new(problems, ddl_jstr(r->set->errors[i]));
	for (size_t k = 0; k < r->set->nruns; k++)
		if (&r->set->runs[k] != r->run)
			json_array_append_new(others, ddl_jstr(r->set->runs[k].id));
	json_object_set_new(root, "schema", json_string("ddlprof-report/1"));
	json_object_set_new(root, "run_id", ddl_jstr(r->run->id));
	json_object_set_new(root, "other_runs", others);
	json_object_set_new(root, "truncated", json_boolean(r->truncated));
	json_object_set_new(root, "corrupt", json_boolean(r->corrupt));
	json_object_set_new(root, "incomplete", json_boolean(r->incomplete));
	json_t *job = json_pack("{s:i, s:i, s:i, s:f}", "ranks", r->nranks, "hosts", r->nhosts,
	                        "processes", (int)r->nprocs, "wall_s",
	                        r->nprocs ? (double)(r->end_real_ns - r->start_real_ns) / 1e9 : 0.0);
	int nworkers = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		nworkers += r->procs[i].role == DDL_ROLE_WORKER;
	json_object_set_new(job, "dataloader_workers", json_integer(nworkers));
	const char *hook = NULL, *skipped = NULL, *data = NULL;
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_trace *t = r->procs[i].tr[r->procs[i].ntr - 1];
		if (r->nranks && r->procs[i].rank < 0)
			continue; /* a rank's, where there are ranks */
		hook = hook ? hook : ddl_trace_meta(t, "python_hook");
		skipped = skipped ? skipped : ddl_trace_meta(t, "python_hook_skipped");
		data = data ? data : ddl_trace_meta(t, "data");
	}
	json_object_set_new(job, "python_hook", ddl_jstr(hook));
	json_object_set_new(job, "python_hook_skipped", ddl_jstr(skipped));
	json_object_set_new(job, "data", json_string(data ? data : "real"));
	int have = r->iterations > 0;
	json_object_set_new(job, "iterations", json_integer(r->iterations));
	json_object_set_new(job, "iteration_method", json_string(r->iteration_method));
	json_object_set_new(job, "iteration_status",
	                    json_string(r->iteration_status ? r->iteration_status : "none"));
	json_object_set_new(job, "iterations_found",
	                    json_integer(r->iterations_found > 0 ? r->iterations_found : 0));
	json_object_set_new(job, "steps_run", r->steps_run >= 0 ? json_integer(r->steps_run) : json_null());
	json_t *dis = json_array();
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].iter_disagrees)
			json_array_append_new(dis, json_integer(r->procs[i].rank));
	json_object_set_new(job, "iteration_disagreeing_ranks", dis);
	json_object_set_new(job, "iteration_names", ddl_jstr(r->iteration_names));
	json_object_set_new(job, "warmup", json_integer(r->warmup));
	json_object_set_new(job, "iteration_mean_s", have ? json_real(r->iter_mean_s) : json_null());
	json_object_set_new(job, "iteration_p50_s", have ? json_real(r->iter_p50_s) : json_null());
	json_object_set_new(job, "iteration_p99_s", have ? json_real(r->iter_p99_s) : json_null());
	json_object_set_new(job, "breakdown_pct", have ? ddl_json_parts(&r->pct) : json_null());
	if (r->have_sensitivity) {
		json_t *sd = json_pack("{s:f, s:f, s:f}", "machine", r->slowdown[DDL_LEVEL_MACHINE], "rack",
		                       r->slowdown[DDL_LEVEL_RACK], "cluster", r->slowdown[DDL_LEVEL_CLUSTER]);
		json_t *pr = json_pack("{s:f, s:f, s:f}", "machine", r->predicted_s[DDL_LEVEL_MACHINE],
		                       "rack", r->predicted_s[DDL_LEVEL_RACK], "cluster",
		                       r->predicted_s[DDL_LEVEL_CLUSTER]);
		json_t *bwj = json_pack("{s:f, s:f, s:f}", "machine", r->bw[DDL_LEVEL_MACHINE] * 8, "rack",
		                        r->bw[DDL_LEVEL_RACK] * 8, "cluster", r->bw[DDL_LEVEL_CLUSTER] * 8);
		json_t *sens = json_pack("{s:f, s:o, s:o, s:o}", "score", r->sensitivity, "slowdown", sd,
		                         "iteration_s", pr, "bandwidth_bps", bwj);
		if (r->have_measured)
			json_object_set_new(sens, "measured", ddl_json_measured(r));
		json_object_set_new(job, "sensitivity", sens);
	} else {
		json_object_set_new(job, "sensitivity", json_null());
	}
	const char *pert = r->nprocs ? ddl_trace_meta(r->procs[0].tr[0], "DDLPROF_PERTURB_NET") : NULL;
	json_object_set_new(job, "perturb_net", ddl_jstr(pert));
	json_t *comms = json_array();
	struct ddl_collsum tot = {0};
	for (size_t i = 0; i < r->ncomms; i++) {
		const struct ddl_commjob *c = &r->comms[i];
		char key[24];
		snprintf(key, sizeof key, "%016llx", (unsigned long long)c->key);
		json_t *jc = json_pack("{s:s, s:i, s:i, s:i, s:s, s:o, s:s}", "key", key, "nranks", c->nranks,
		                       "members_traced", c->members, "hosts", c->nhosts, "span",
		                       ddl_span_name(c->span), "host_names", ddl_jstr(c->hosts), "created_by",
		                       c->how);
		json_object_set_new(jc, "world_ranks", ddl_jstr(c->ranks));
		json_array_append_new(comms, jc);
	}
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_collsum *c = &r->procs[i].coll;
		tot.count += c->count;
		tot.bytes += c->bytes;
		tot.intra_bytes += c->intra_bytes;
		tot.inter_bytes += c->inter_bytes;
		tot.unknown_bytes += c->unknown_bytes;
		tot.timed += c->timed;
		tot.device_s += c->device_s;
		tot.host_s += c->host_s;
		for (unsigned k = 0; k < DDL_COLL_OPS; k++) {
			tot.op_count[k] += c->op_count[k];
			tot.op_bytes[k] += c->op_bytes[k];
		}
	}
	if (r->has_gpu) {
		/* the model the first rank reports, and devices per host in use */
		const char *model = NULL;
		for (size_t i = 0; i < r->nprocs && !model; i++)
			for (size_t k = 0; k < r->procs[i].ntr && !model; k++)
				model = ddl_trace_meta(r->procs[i].tr[k], "gpu_model");
		int per_host = 0;
		for (size_t i = 0; i < r->nprocs; i++) {
			int n = 0;
			for (size_t k = 0; k < r->nprocs; k++)
				if (!strcmp(r->procs[k].host, r->procs[i].host) && r->procs[k].has_gpu)
					n++;
			if (n > per_host)
				per_host = n;
		}
		json_object_set_new(job, "gpu", json_pack("{s:o, s:i, s:i, s:o}", "model", ddl_jstr(model),
		                                          "count_per_host", per_host, "count",
		                                          (int)r->nranks, "correlation", ddl_json_corr(&r->corr)));
	} else {
		json_object_set_new(job, "gpu", json_null());
	}
	/* Means over the ranks whose iterations were split on the device timeline:
	 * what ddlprof-recommend projects from. */
	double pi[10] = {0};
	int npi = 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!p->gpu_breakdown || !p->niter)
			continue;
		double v[10] = {p->per_iter.compute, p->per_iter.data_stall, p->per_iter.interconnect_stall,
		                p->per_iter.network_stall, p->per_iter.idle, p->coll_bytes,
		                p->coll_intra_bytes, p->coll_inter_bytes, p->overlap_s, p->coll_calls};
		for (int k = 0; k < 10; k++)
			pi[k] += v[k];
		npi++;
	}
	if (npi) {
		for (int k = 0; k < 10; k++)
			pi[k] /= npi;
		json_t *j = json_pack("{s:f, s:f, s:f, s:f, s:f}", "compute_s", pi[0], "data_stall_s", pi[1],
		                      "interconnect_stall_s", pi[2], "network_stall_s", pi[3], "idle_s",
		                      pi[4]);
		json_object_set_new(j, "collective_bytes", json_real(pi[5]));
		json_object_set_new(j, "intra_bytes", json_real(pi[6]));
		json_object_set_new(j, "inter_bytes", json_real(pi[7]));
		json_object_set_new(j, "overlap_s", json_real(pi[8]));
		json_object_set_new(j, "collectives", json_real(pi[9]));
		json_object_set_new(job, "per_iteration", j);
	} else {
		json_object_set_new(job, "per_iteration", json_null());
	}
	json_object_set_new(job, "breakdown_source", json_string(npi ? "device" : "host"));
	json_object_set_new(job, "communicators", comms);
	json_object_set_new(job, "kernel_s", json_real(r->kernel_s));
	json_object_set_new(job, "kernel_runs", json_pack("{s:I, s:f}", "count", (json_int_t)r->kernel_runs,
	                                                  "total_s", r->kernel_runs_s));
	json_object_set_new(job, "kernels_distinct", json_integer((json_int_t)r->nkernels_timed));
	json_object_set_new(job, "kernels", ddl_json_kernels(r));
	json_t *strag = json_array(), *vict = json_array();
	for (size_t i = 0; i < r->nprocs; i++) {
		if (r->procs[i].straggler)
			json_array_append_new(strag, json_integer(r->procs[i].rank));
		if (r->procs[i].victim)
			json_array_append_new(vict, json_integer(r->procs[i].rank));
	}
	json_object_set_new(job, "slow_iterations", json_integer((json_int_t)r->nslow));
	json_object_set_new(job, "stragglers", strag);
	json_object_set_new(job, "hang", ddl_json_hang(r));
	json_object_set_new(job, "straggler_victims", vict);
	json_object_set_new(job, "stragglers_measured", json_boolean(r->stragglers_measured));
	json_t *clk = json_object();
	json_object_set_new(clk, "method", json_string(r->clock_method ? r->clock_method : "realtime"));
	json_object_set_new(clk, "residual_s",
	                    r->clock_residual_s >= 0 ? json_real(r->clock_residual_s) : json_null());
	json_t *offs = json_array();
	for (int h = 0; h < r->nclock; h++)
		json_array_append_new(offs, json_pack("{s:o, s:f, s:b}", "host", ddl_jstr(r->clock[h].host),
		                                      "offset_s", r->clock[h].offset_s, "applied",
		                                      r->clock[h].applied));
	json_object_set_new(clk, "hosts", offs);
	json_object_set_new(job, "clock", clk);
	json_object_set_new(job, "collectives", ddl_json_coll(&tot));
	if (r->backtrace || r->backtrace_off)
		json_object_set_new(job, "backtrace",
		                    json_pack("{s:i, s:I, s:o, s:b}", "depth", r->backtrace, "stacks",
		                              (json_int_t)r->ncallsites_all, "off", ddl_jstr(r->backtrace_off),
		                              "symbols_stale", r->symbols_stale));
	else
		json_object_set_new(job, "backtrace", json_null());
	json_object_set_new(root, "job", job);
	json_t *ranks = json_array();
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (p->rank < 0 && !p->niter)
			continue;
		json_t *jr = json_pack("{s:i, s:o, s:i, s:i}", "rank", p->rank, "host", ddl_jstr(p->host),
		                       "pid", (int)p->pid, "iterations", (int)p->niter);
		json_object_set_new(jr, "iteration_mean_s", p->niter ? json_real(p->iter_mean_s) : json_null());
		json_t *slow = json_array();
		for (size_t k = 0; k < p->nslow; k++)
			json_array_append_new(slow, json_pack("{s:I, s:f, s:f}", "iteration",
			                                      (json_int_t)p->slow[k].iteration, "duration_s",
			                                      p->slow[k].s, "median_s", p->slow[k].median_s));
		json_object_set_new(jr, "slow_iterations", slow);
		json_object_set_new(jr, "iteration_shift",
		                    p->shift_at >= 0 ? json_pack("{s:I, s:f, s:f}", "at", (json_int_t)p->shift_at,
		                                                 "before_s", p->shift_before_s, "after_s",
		                                                 p->shift_after_s)
		                                     : json_null());
		json_object_set_new(jr, "iteration_method",
		                    json_string(p->iteration_method ? p->iteration_method : "none"));
		json_object_set_new(jr, "iterations_found", json_integer((json_int_t)p->niter_found));
		json_object_set_new(jr, "warmup_skipped", json_integer(p->warmup_skipped));
		json_object_set_new(jr, "steps_run", p->steps_run >= 0 ? json_integer(p->steps_run) : json_null());
		json_object_set_new(jr, "iteration_period_s",
		                    p->niter_found ? json_real(p->iter_period_s) : json_null());
		json_object_set_new(jr, "iteration_disagrees", json_boolean(p->iter_disagrees));
		json_object_set_new(jr, "breakdown_s", p->niter ? ddl_json_parts(&p->per_iter) : json_null());
		json_object_set_new(jr, "collectives", ddl_json_coll(&p->coll));
		json_object_set_new(jr, "collectives_per_iteration", ddl_json_coll_iter(p));
		json_object_set_new(jr, "phases", ddl_json_phases(p));
		json_object_set_new(jr, "input", ddl_json_input(p));
		if (p->coll_instances) {
			json_object_set_new(jr, "imposed_wait_s", json_real(p->imposed_wait_s));
			json_object_set_new(jr, "late_fraction", json_real(p->late_fraction));
			json_object_set_new(jr, "waits_on",
			                    p->waits_on >= 0 ? json_pack("{s:i, s:f}", "rank",
			                                                 r->procs[p->waits_on].rank, "wait_s",
			                                                 p->waits_on_s)
			                                     : json_null());
		}
		json_object_set_new(jr, "straggler", json_boolean(p->straggler));
		json_object_set_new(jr, "straggler_kind", p->straggler ? json_string("culprit")
		                                          : p->victim  ? json_string("victim")
		                                                       : json_null());
		if (p->straggler)
			json_object_set_new(jr, "straggler_cause",
			                    json_pack("{s:s, s:f, s:f}", "part", p->straggler_cause, "own_s",
			                              p->cause_s, "others_s", p->cause_others_s));
		if (p->victim)
			json_object_set_new(jr, "victim_of", json_integer(r->procs[p->victim_of].rank));
		json_array_append_new(ranks, jr);
	}
	json_object_set_new(root, "ranks", ranks);
	json_object_set_new(root, "callsites", ddl_json_callsites(r));
	json_object_set_new(root, "processes", procs);
	json_object_set_new(root, "problems", problems);
	int rc = ddl_json_failed() ? -1 : json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
	                                                      JSON_REAL_PRECISION(9));
	if (rc == 0)
		fputc('\n', f);
	json_decref(root);
	if (ddl_json_failed()) {
		errno = ENOMEM; /* the tree (or its writing) short of memory: nothing written */
		return -1;
	}
	return rc < 0 || ferror(f) ? -1 : 0;
}
