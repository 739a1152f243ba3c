/*
 * Builds the report model from a trace set: the traces of one run become
 * processes (host, pid; exec images of one pid merge), and every socket
 * event is added to its process's and thread's network summary. Each
 * process gets its role: a rank, or what serves one (a data loader's
 * worker, as the Python hook says, or another child a rank forked that
 * inherited its rank), or what started one (a shell that ran the rank's
 * program, doing no collective itself), or another process of the job.
 * Only ranks are counted and tabulated as ranks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

static int ddl_cmp_proc(const void *a, const void *b)
{
	const struct ddl_proc *x = a, *y = b;
	if (x->rank != y->rank) /* ranked processes first, in rank order */
		return (unsigned)x->rank < (unsigned)y->rank ? -1 : 1;
	/* then those that recorded something: the launcher's command leaves
	 * a trace even when it only started the job, and the outputs take
	 * the job's GPU source and breakdown kind from the first process */
	if (!x->events != !y->events)
		return x->events ? -1 : 1;
	int c = strcmp(x->host, y->host);
	if (c)
		return c;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static struct ddl_proc *ddl_proc_get(struct ddl_report *r, const struct ddl_trace *t)
{
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].pid == t->hdr.pid && !strcmp(r->procs[i].host, t->hdr.host))
			return &r->procs[i];
	struct ddl_proc *q = realloc(r->procs, (r->nprocs + 1) * sizeof *q);
	if (!q)
		return NULL;
	r->procs = q;
	struct ddl_proc *p = &r->procs[r->nprocs++];
	memset(p, 0, sizeof *p);
	p->host = t->hdr.host;
	p->pid = t->hdr.pid;
	p->ppid = t->hdr.ppid;
	p->rank = t->hdr.rank;
	p->world_size = t->hdr.world_size;
	p->start_real_ns = INT64_MAX;
	p->end_real_ns = INT64_MIN;
	return p;
}

const char *ddl_thread_name(const struct ddl_proc *p, const struct ddl_trace *t, unsigned idx)
{
	const char *name = idx < t->nthreads && t->threads[idx].name ? t->threads[idx].name : "";
	return !strcmp(name, "exe") && p->name[0] ? p->name : name;
}

/* P's program name from its command line: the first word's last component. */
static void ddl_proc_name(struct ddl_proc *p)
{
	const char *c = p->command ? p->command : "";
	size_t n = strcspn(c, " ");
	const char *base = c;
	for (size_t i = 0; i < n; i++)
		if (c[i] == '/' && i + 1 < n)
			base = c + i + 1;
	n -= (size_t)(base - c);
	snprintf(p->name, sizeof p->name, "%.*s", (int)n, base);
}

/* E added to the sums of its process N and its thread M. */
static void ddl_net_add(struct ddl_netsum *n, struct ddl_netsum *m, const struct ddl_trace *t,
                        const struct ddl_event *e)
{
	int cls = ddl_event_class(e->kind);
	if (!ddl_event_is_net(e->kind))
		return; /* markers, waits on threads, and kinds newer than us */
	int64_t d = ddl_trace_dur_ns(t, e);
	int remote = e->peer && e->peer < t->npeers && t->peers[e->peer].text && !t->peers[e->peer].local;
	uint64_t sent = 0, recvd = 0;
	if (cls == DDL_CLASS_TX && e->result > 0)
		sent = (uint64_t)e->result;
	else if (cls == DDL_CLASS_RX && e->result > 0 && !(e->flags & DDL_EVF_PEEK))
		recvd = (uint64_t)e->result;
	int sockwait = cls == DDL_CLASS_WAIT && (e->flags & DDL_EVF_SOCKWAIT);
	struct ddl_netsum *to[] = {n, m};
	for (int i = 0; i < 2; i++) {
		struct ddl_netsum *x = to[i];
		x->calls++;
		x->bytes_sent += sent;
		x->bytes_received += recvd;
		if (remote) {
			x->bytes_sent_remote += sent;
			x->bytes_received_remote += recvd;
		}
		if (sockwait)
			x->blocked_ns = ddl_ns_sat_add(x->blocked_ns, d);
		else if (cls != DDL_CLASS_WAIT)
			x->in_calls_ns = ddl_ns_sat_add(x->in_calls_ns, d);
	}
}

/* Distinct peers (by address text) seen by events of a process or thread,
 * with their local flags, found through a table by text (SLOT: index + 1,
 * 0 empty; twice CAP slots) so a thread of thousands of peers costs no
 * search per event. */
struct ddl_peerset {
	const char **text;
	int *local;
	size_t n, cap;
	size_t *slot;
	struct {
		const struct ddl_trace *t;
		uint32_t id;
	} seen[8]; /* peers of a trace known to be in, by id: most events skip the hash */
};

/* The slot of TEXT in S's table: its own, or the empty one it would take. */
static size_t ddl_peer_slot(const struct ddl_peerset *s, const char *text)
{
	uint64_t h = UINT64_C(14695981039346656037); /* FNV-1a */
	for (const unsigned char *c = (const unsigned char *)text; *c; c++)
		h = (h ^ *c) * UINT64_C(1099511628211);
	size_t mask = 2 * s->cap - 1, i = (size_t)h & mask;
	while (s->slot[i] && strcmp(s->text[s->slot[i] - 1], text))
		i = (i + 1) & mask;
	return i;
}

/* Adds peer ID of T to S; 1 when it was not in S yet, 0 when it was, or
 * -1 without memory (S then lacks it). */
static int ddl_peerset_add(struct ddl_peerset *s, const struct ddl_trace *t, uint32_t id)
{
	if (!id || id >= t->npeers || !t->peers[id].text)
		return 0;
	if (s->seen[id & 7].t == t && s->seen[id & 7].id == id)
		return 0;
	const char *text = t->peers[id].text;
	if (s->cap && s->slot[ddl_peer_slot(s, text)]) {
		s->seen[id & 7].t = t;
		s->seen[id & 7].id = id;
		return 0;
	}
	if (s->n == s->cap) {
		size_t c = s->cap ? 2 * s->cap : 4;
		const char **q = realloc(s->text, c * sizeof *q);
		if (q)
			s->text = q;
		int *l = q ? realloc(s->local, c * sizeof *l) : NULL;
		if (l)
			s->local = l;
		size_t *sl = l ? calloc(2 * c, sizeof *sl) : NULL;
		if (!sl)
			return -1;
		free(s->slot);
		s->slot = sl;
		s->cap = c;
		for (size_t i = 0; i < s->n; i++)
			s->slot[ddl_peer_slot(s, s->text[i])] = i + 1;
	}
	s->text[s->n] = text;
	s->local[s->n] = t->peers[id].local;
	s->slot[ddl_peer_slot(s, text)] = ++s->n;
	s->seen[id & 7].t = t;
	s->seen[id & 7].id = id;
	return 1;
}

static void ddl_peerset_count(struct ddl_peerset *s, struct ddl_netsum *n)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->local[i])
			n->peers_local++;
		else
			n->peers_remote++;
	}
	free(s->text);
	free(s->local);
	free(s->slot);
	memset(s, 0, sizeof *s);
}

/* Whether P did a rank's work: collectives, NCCL, optimizer steps, marker
 * ranges (a program's own iterations); E one of its events. */
static int ddl_event_active(const struct ddl_event *e, int cls)
{
	return cls == DDL_CLASS_COLL || cls == DDL_CLASS_HCOLL || cls == DDL_CLASS_NCCL ||
	       cls == DDL_CLASS_STEP || e->kind == DDL_EV_RANGE_PUSH ||
	       (cls == DDL_CLASS_PHASE && e->fd == DDL_PHASE_COLLECTIVE);
}

static int ddl_proc_active(const struct ddl_proc *p)
{
	for (size_t k = 0; k < p->ntr; k++)
		for (size_t i = 0; i < p->tr[k]->nev; i++)
			if (ddl_event_active(&p->tr[k]->ev[i], ddl_event_class(p->tr[k]->ev[i].kind)))
				return 1;
	return 0;
}

/*
 * P's network summaries, its own and its threads', in one pass over its
 * events; whether P did a rank's work (above). The threads' summaries
 * are one per OS thread id among its traces' threads that made socket
 * calls, in the order of their first such call (the outputs' order among
 * equals), found through a table by id (a process of many threads costs
 * no search per event) and kept by thread index: MAP[idx] of a trace's
 * block is the summary of its thread index idx, the index past its thread
 * table (at nthreads) thread id 0. Where memory runs out P is incomplete.
 */
static int ddl_proc_fill(struct ddl_proc *p)
{
	size_t total = 0;
	for (size_t k = 0; k < p->ntr; k++)
		total += p->tr[k]->nthreads + 1;
	size_t hcap = 16;
	while (hcap < 2 * total)
		hcap *= 2;
	size_t *map = malloc(total * sizeof *map), *hash = calloc(hcap, sizeof *hash);
	struct ddl_threadsum *th = calloc(total, sizeof *th);
	struct ddl_peerset *per = calloc(total + 1, sizeof *per);
	if (!map || !hash || !th || !per) {
		free(map);
		free(hash);
		free(th);
		free(per);
		p->incomplete = 1; /* no traffic summed */
		return ddl_proc_active(p);
	}
	struct ddl_peerset all = {0};
	size_t n = 0, off = 0;
	int active = 0;
	for (size_t k = 0; k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		size_t *m = map + off;
		off += t->nthreads + 1;
		for (size_t i = 0; i <= t->nthreads; i++)
			m[i] = SIZE_MAX;
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			int cls = ddl_event_class(e->kind);
			active |= ddl_event_active(e, cls);
			if (!ddl_event_is_net(e->kind))
				continue;
			size_t idx = e->tid < t->nthreads ? e->tid : t->nthreads;
			if (m[idx] == SIZE_MAX) {
				uint32_t tid = idx < t->nthreads ? t->threads[idx].tid : 0;
				size_t h = (size_t)(tid * UINT32_C(2654435761)) & (hcap - 1);
				while (hash[h] && th[hash[h] - 1].tid != tid)
					h = (h + 1) & (hcap - 1);
				if (!hash[h]) { /* not seen in an earlier image either */
					th[n].tid = tid;
					snprintf(th[n].name, sizeof th[n].name, "%s", ddl_thread_name(p, t, (unsigned)idx));
					hash[h] = ++n;
				}
				m[idx] = hash[h] - 1;
			}
			size_t j = m[idx];
			ddl_net_add(&p->net, &th[j].net, t, e);
			/* a peer its thread has had is in the process's set already */
			int added = ddl_peerset_add(&per[j], t, e->peer);
			if ((added && ddl_peerset_add(&all, t, e->peer) < 0) || added < 0)
				p->incomplete = 1; /* a peer not counted */
		}
	}
	p->threads = th;
	p->nthreads = n;
	ddl_peerset_count(&all, &p->net);
	for (size_t i = 0; i < p->nthreads; i++)
		ddl_peerset_count(&per[i], &p->threads[i].net);
	free(per);
	free(hash);
	free(map);
	return active;
}

const char *ddl_role_name(int role)
{
	static const char *const names[] = {"rank", "dataloader_worker", "child", "launcher", "other"};
	return role >= 0 && role < (int)(sizeof names / sizeof names[0]) ? names[role] : "other";
}

static struct ddl_proc *ddl_proc_by_pid(struct ddl_report *r, const char *host, uint32_t pid)
{
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].pid == pid && !strcmp(r->procs[i].host, host))
			return &r->procs[i];
	return NULL;
}

size_t ddl_proc_iter_near(const struct ddl_proc *p, int64_t at, size_t *last)
{
	size_t k = *last; /* the last iteration starting by the instant asked before */
	if (k >= p->niter || p->iter[k].start_ns > at || (k + 1 < p->niter && p->iter[k + 1].start_ns <= at)) {
		size_t lo = 0, hi = p->niter; /* the last iteration starting by AT */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (p->iter[mid].start_ns <= at)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (!lo)
			return SIZE_MAX;
		*last = k = lo - 1;
	}
	return at < p->iter[k].end_ns ? k : SIZE_MAX;
}

size_t ddl_proc_iter_at(const struct ddl_proc *p, int64_t at)
{
	size_t last = SIZE_MAX;
	return ddl_proc_iter_near(p, at, &last);
}

const struct ddl_proc *ddl_proc_served(const struct ddl_report *r, const struct ddl_proc *p)
{
	if (!p->serves_pid)
		return NULL;
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].pid == p->serves_pid && !strcmp(r->procs[i].host, p->host))
			return &r->procs[i];
	return NULL;
}

const char *ddl_proc_what(const struct ddl_report *r, const struct ddl_proc *p, char *buf, size_t n)
{
	const struct ddl_proc *of = ddl_proc_served(r, p);
	const char *role = p->role == DDL_ROLE_WORKER ? "worker" : "child";
	if (p->rank >= 0)
		snprintf(buf, n, "rank %d", p->rank);
	else if (of && of->rank >= 0)
		snprintf(buf, n, "%s of rank %d", role, of->rank);
	else if (of)
		snprintf(buf, n, "%s of pid %u", role, of->pid);
	else if (p->role == DDL_ROLE_LAUNCHER)
		snprintf(buf, n, "launcher");
	else
		buf[0] = 0;
	return buf;
}

/* The roles (above), by ACTIVE (ddl_proc_fill of each process; NULL
 * when memory ran out); then only ranks keep a rank. */
static void ddl_report_roles(struct ddl_report *r, const char *active)
{
	if (!active)
		r->incomplete = 1; /* a launcher may be taken for a rank */
	for (size_t i = 0; i < r->nprocs; i++) {
		struct ddl_proc *p = &r->procs[i];
		const struct ddl_trace *last = p->tr[p->ntr - 1];
		const char *role = ddl_trace_meta(last, "role");
		p->env_rank = p->rank;
		if (role && !strcmp(role, "dataloader_worker")) {
			const char *sp = ddl_trace_meta(last, "serves_pid");
			p->role = DDL_ROLE_WORKER;
			p->serves_pid = sp ? (uint32_t)strtoul(sp, NULL, 10) : p->ppid;
			continue;
		}
		if (p->rank < 0) {
			p->role = DDL_ROLE_OTHER;
			continue;
		}
		struct ddl_proc *parent = ddl_proc_by_pid(r, p->host, p->ppid);
		if (!parent || parent->rank != p->rank)
			continue; /* a rank */
		if (active && active[i] && !active[parent - r->procs])
			parent->role = DDL_ROLE_LAUNCHER; /* it only started this rank */
		else {
			p->role = DDL_ROLE_CHILD;
			p->serves_pid = parent->pid;
		}
	}
	/*
	 * Processes left with one rank: the one that took part in the job
	 * (collectives, steps, markers, else socket traffic) is the rank, and
	 * one that did none of it is another child of the rank's (pyenv's
	 * shims run their helpers with the rank's environment, from subshells
	 * that leave no trace). Two that both took part stay ranks.
	 */
	for (size_t i = 0; i < r->nprocs; i++) {
		struct ddl_proc *p = &r->procs[i];
		if (p->role != DDL_ROLE_RANK || p->rank < 0 || (active && active[i]) || p->net.calls)
			continue;
		for (size_t k = 0; k < r->nprocs; k++) {
			const struct ddl_proc *q = &r->procs[k];
			if (k != i && q->role == DDL_ROLE_RANK && q->rank == p->rank && !strcmp(q->host, p->host) &&
			    ((active && active[k]) || q->net.calls)) {
				p->role = DDL_ROLE_CHILD;
				p->serves_pid = q->pid;
				break;
			}
		}
	}
	r->nranks = 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		struct ddl_proc *p = &r->procs[i];
		if (p->role != DDL_ROLE_RANK)
			p->rank = -1;
		int seen = p->rank < 0;
		for (size_t k = 0; k < i && !seen; k++)
			seen = r->procs[k].rank == p->rank;
		r->nranks += !seen;
	}
}

/* Each process's name, network summaries and whether it did a rank's work
 * (ddl_parallel_procs: each writes only its own). */
struct ddl_fill {
	struct ddl_report *r;
	char *active; /* NULL without memory */
};

static void ddl_fill_one(void *arg, size_t i)
{
	struct ddl_fill *j = arg;
	struct ddl_proc *p = &j->r->procs[i];
	p->command = ddl_trace_meta(p->tr[p->ntr - 1], "cmdline");
	ddl_proc_name(p);
	int active = ddl_proc_fill(p);
	if (j->active)
		j->active[i] = (char)active;
}

int ddl_report_build(struct ddl_report *r, const struct ddl_traceset *s, const struct ddl_run *run)
{
	memset(r, 0, sizeof *r);
	r->chrome_it_a = r->chrome_it_b = -1; /* --chrome's window: all of it */
	r->set = s;
	r->run = run;
	r->incomplete = s->incomplete; /* files of the set left out */
	r->start_real_ns = INT64_MAX;
	r->end_real_ns = INT64_MIN;
	for (size_t i = 0; i < s->n; i++) {
		struct ddl_trace *t = &s->t[i];
		/* one not read in full may lack the times that put it in this run */
		for (size_t k = 0; t->incomplete && !ddl_run_has(s, run, t) && k < s->n; k++)
			if (ddl_run_has(s, run, &s->t[k]) && !strcmp(s->t[k].hdr.run_id, t->hdr.run_id)) {
				r->incomplete = 1;
				break;
			}
		if (!ddl_run_has(s, run, t))
			continue;
		struct ddl_proc *p = ddl_proc_get(r, t);
		if (!p)
			return -1;
		struct ddl_trace **q = realloc(p->tr, (p->ntr + 1) * sizeof *q);
		if (!q)
			return -1;
		p->tr = q;
		/* exec images in order of their generation */
		size_t at = p->ntr;
		while (at > 0 && p->tr[at - 1]->hdr.exec_gen > t->hdr.exec_gen) {
			p->tr[at] = p->tr[at - 1];
			at--;
		}
		p->tr[at] = t;
		p->ntr++;
		p->images++;
		p->events += t->nev;
		p->dropped += t->end.dropped;
		const char *lost = ddl_trace_meta(t, "threads_unrecorded"); /* the last count said */
		p->threads_unrecorded += lost ? (unsigned)strtoul(lost, NULL, 10) : 0;
		p->truncated |= t->truncated;
		p->corrupt |= t->corrupt;
		p->incomplete |= t->incomplete;
		if (t->hdr.rank >= 0)
			p->rank = t->hdr.rank;
		if (t->hdr.world_size >= 0)
			p->world_size = t->hdr.world_size;
		int64_t st = t->hdr.start_real_ns;
		int64_t en = t->nclk ? ddl_trace_real_ns(t, t->clk[t->nclk - 1].ticks) : st;
		if (st < p->start_real_ns)
			p->start_real_ns = st;
		if (en > p->end_real_ns)
			p->end_real_ns = en;
	}
	char *active = calloc(r->nprocs + 1, 1);
	struct ddl_fill fj = {r, active};
	ddl_parallel_procs(r, ddl_fill_one, &fj);
	for (size_t i = 0; i < r->nprocs; i++) {
		struct ddl_proc *p = &r->procs[i];
		r->truncated |= p->truncated;
		r->corrupt |= p->corrupt;
		if (p->start_real_ns < r->start_real_ns)
			r->start_real_ns = p->start_real_ns;
		if (p->end_real_ns > r->end_real_ns)
			r->end_real_ns = p->end_real_ns;
	}
	/* The job's hosts are those where it recorded something: the
	 * launcher's command leaves a trace even when it only started ranks
	 * that name hosts of their own (DDLPROF_HOST). */
	int any = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		any |= r->procs[i].events > 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		int seen = any && !p->events;
		for (size_t k = 0; k < i && !seen; k++)
			seen = (!any || r->procs[k].events) && !strcmp(r->procs[k].host, p->host);
		r->nhosts += !seen;
	}
	ddl_report_roles(r, active);
	free(active);
	qsort(r->procs, r->nprocs, sizeof *r->procs, ddl_cmp_proc);
	return 0;
}

void ddl_report_free(struct ddl_report *r)
{
	ddl_callsites_free(r);
	ddl_counters_free(r);
	ddl_kernels_free(r);
	ddl_hang_free(&r->hang);
	ddl_report_correlate_free(r);
	for (size_t i = 0; i < r->nprocs; i++) {
		free(r->procs[i].threads);
		free(r->procs[i].tr);
		free(r->procs[i].iter_s);
		free(r->procs[i].iter);
		free(r->procs[i].iter_parts);
		free(r->procs[i].slow);
		free(r->procs[i].pieces);
	}
	free(r->procs);
	free(r->comms);
	memset(r, 0, sizeof *r);
}
