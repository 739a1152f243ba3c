/*
 * --dump: every event of the selected run as one line of text, in each
 * process's order, times in seconds since the run started.
 */
#include <inttypes.h>

#include "report.h"

int ddl_out_dump(const struct ddl_report *r, FILE *f)
{
	fprintf(f, "# host pid tid time_s event fd result dur_us peer_or_name\n");
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		for (size_t k = 0; k < p->ntr; k++) {
			const struct ddl_trace *t = p->tr[k];
			for (size_t j = 0; j < t->nev; j++) {
				const struct ddl_event *e = &t->ev[j];
				uint32_t tid = e->tid < t->nthreads ? t->threads[e->tid].tid : 0;
				const char *peer = e->peer && e->peer < t->npeers && t->peers[e->peer].text
				                       ? t->peers[e->peer].text : "-";
				if (ddl_event_class(e->kind) == DDL_CLASS_MARK)
					peer = e->result > 0 && (size_t)e->result < t->nnames && t->names[e->result]
					           ? t->names[e->result] : "-"; /* markers: the name */
				double ts = (double)(ddl_trace_real_ns(t, e->start) - r->start_real_ns) / 1e9;
				fprintf(f, "%s %u %u %.9f %s%s %d %" PRId64 " %.3f %s\n", p->host, p->pid, tid, ts,
				        ddl_event_name(e->kind),
				        e->flags & DDL_EVF_SOCKWAIT ? "[sock]" : e->flags & DDL_EVF_PEEK ? "[peek]" : "",
				        e->fd, e->result, (double)ddl_trace_dur_ns(t, e) / 1e3, peer);
			}
		}
	}
	return ferror(f) ? -1 : 0;
}
