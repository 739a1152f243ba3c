/*
 * --dump: every event of the selected run as one line of text, in each
 * process's order, times in seconds since the run started.
 */
#include <inttypes.h>

#include "report.h"

/*
 * CUDA, NCCL and device records: their details as one token of
 * key=value pairs joined by commas (the fd column is the device).
 */
static const char *ddl_dump_gpu(const struct ddl_trace *t, size_t i, char *buf, size_t n)
{
	const struct ddl_event *e = &t->ev[i];
	const struct ddl_args *a = ddl_event_args(t, i);
	size_t len = 0;
#define DDL_ADD(...) \
	do { \
		int w = snprintf(buf + len, n - len, __VA_ARGS__); \
		if (w > 0 && (size_t)w < n - len) \
			len += (size_t)w; \
	} while (0)
	DDL_ADD("stream=%u", e->peer);
	if (ddl_event_class(e->kind) == DDL_CLASS_DEVICE)
		DDL_ADD(",src=%s%s", e->flags & DDL_EVF_CUPTI ? "cupti" : "events",
		        e->flags & DDL_EVF_RUN ? ",run" : "");
	if (a && ddl_event_class(e->kind) == DDL_CLASS_API) {
		/* CUPTI's record of a call: its name, callback id and domain, thread, result */
		const char *name = ddl_trace_name(t, a->name);
		DDL_ADD(",src=cupti,api=%s,cbid=%u,domain=%s,cupti_thread=%" PRIu64 ",returned=%d,corr=%u",
		        name ? name : "?", a->aux, a->op == 1 ? "driver" : "runtime", a->bytes, a->peer, a->corr);
		a = NULL;
	}
	if (a) {
		if (a->bytes)
			DDL_ADD(",%s=%" PRIu64, ddl_event_class(e->kind) == DDL_CLASS_LAUNCH ? "blocks" : "bytes",
			        a->bytes);
		if (ddl_event_class(e->kind) == DDL_CLASS_LAUNCH && a->aux)
			DDL_ADD(",threads=%u", a->aux);
		int cls = ddl_event_class(e->kind);
		/* an MPI communicator call's name is the communicator it made */
		const char *name = cls == DDL_CLASS_HCOMM ? NULL : ddl_trace_name(t, a->name);
		if (name)
			DDL_ADD(",name=%s", name);
		if (cls == DDL_CLASS_HCOMM && a->name)
			DDL_ADD(",made_comm=%u", a->name);
		if (cls == DDL_CLASS_HWAIT && a->op)
			DDL_ADD(",started=%s", ddl_event_name(a->op));
		if (a->comm) {
			const struct ddl_comm_info *ci = ddl_trace_comm(t, a->comm);
			DDL_ADD(",comm=%u", a->comm);
			if (ci)
				DDL_ADD(",comm_key=%016llx,comm_rank=%d,comm_size=%d", (unsigned long long)ci->key,
				        ci->rank, ci->nranks);
		}
		if (ddl_event_class(e->kind) == DDL_CLASS_COLL)
			DDL_ADD(",op=%u,dtype=%u", a->op, a->dtype);
		if (ddl_kind_is_mpi(e->kind)) {
			if (a->dtype)
				DDL_ADD(",elem=%u", a->dtype);
			if (a->aux)
				DDL_ADD(",seq=%u", a->aux);
			if (a->peer < -1)
				DDL_ADD(",peer=%s", a->peer == -2 ? "proc_null" : "?");
		}
		if (a->peer >= 0)
			DDL_ADD(",peer=%d", a->peer);
		DDL_ADD(",corr=%u", a->corr);
		if (a->flags & DDL_ARGF_TIMED)
			DDL_ADD(",timed");
		if (a->flags & DDL_ARGF_GROUPED)
			DDL_ADD(",grouped");
	}
#undef DDL_ADD
	for (size_t k = 0; k < len; k++)
		if (buf[k] == ' ' || buf[k] == '\n')
			buf[k] = '_';
	return buf;
}

int ddl_out_dump(const struct ddl_report *r, FILE *f)
{
	fprintf(f, "# host pid tid time_s event fd result dur_us peer_or_name\n");
	if (r->incomplete) /* a comment, as the header is: the lines below are not every event */
		fprintf(f, "# INCOMPLETE: memory ran out; the events below are those that were read\n");
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		for (size_t k = 0; k < p->ntr; k++) {
			const struct ddl_trace *t = p->tr[k];
			ddl_trace_hold(t);
			for (size_t j = 0; j < t->nev; j++) {
				const struct ddl_event *e = &t->ev[j];
				if (ddl_event_class(e->kind) == DDL_CLASS_ARGS)
					continue; /* args, stack and counter records: part of their event */
				uint32_t tid = e->tid < t->nthreads ? t->threads[e->tid].tid : 0;
				const char *peer = e->peer && e->peer < t->npeers && t->peers[e->peer].text
				                       ? t->peers[e->peer].text : "-";
				if (ddl_event_class(e->kind) == DDL_CLASS_MARK)
					peer = e->result > 0 && (size_t)e->result < t->nnames && t->names[e->result]
					           ? t->names[e->result] : "-"; /* markers: the name */
				char gpu[512];
				if (ddl_event_class(e->kind) >= DDL_CLASS_LAUNCH)
					peer = ddl_dump_gpu(t, j, gpu, sizeof gpu);
				double ts = (double)(ddl_trace_real_ns(t, e->start) - r->start_real_ns) / 1e9;
				fprintf(f, "%s %u %u %.9f %s%s %d %" PRId64 " %.3f %s\n", p->host, p->pid, tid, ts,
				        ddl_event_name(e->kind),
				        e->flags & DDL_EVF_SOCKWAIT ? "[sock]" : e->flags & DDL_EVF_PEEK ? "[peek]" : "",
				        e->fd, e->result, (double)ddl_trace_dur_ns(t, e) / 1e3, peer);
			}
			ddl_trace_release(t);
		}
	}
	return ferror(f) ? -1 : 0;
}
