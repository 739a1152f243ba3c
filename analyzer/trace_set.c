/*
 * Loading a trace directory: lists the *.ddlt files of each directory named
 * (in name order, so output is stable), reads each with the trace reader
 * (a file named twice, or by two paths, once), and groups them into runs:
 * by the run id in their headers, then, among the traces of one id, by
 * time: a trace that starts after every earlier one of that id has ended
 * starts another run. Several directories, as gathered from several hosts,
 * merge into one set.
 */
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "progress.h"
#include "trace_set.h"

/* Lists MSG among S's errors; without memory, S is incomplete instead. */
static void ddl_add_error(struct ddl_traceset *s, const char *msg)
{
	char **e = realloc(s->errors, (s->nerrors + 1) * sizeof *e);
	if (e)
		s->errors = e;
	if (e && (s->errors[s->nerrors] = strdup(msg)))
		s->nerrors++;
	else
		s->incomplete = 1;
}

struct ddl_progress *ddl_traceset_progress;
int ddl_traceset_lazy;
void (*ddl_traceset_parallel)(size_t n, void (*fn)(void *arg, size_t i), void *arg);

/* A file being read into its own trace, before it joins the set. */
struct ddl_load {
	const char *path;
	struct ddl_trace t;
	int rc, skip;
	char err[512];
	struct ddl_event *kept; /* a lazy read's events, while they fit (ddl_count_only) */
	size_t nkept, capkept;
	int nokeep;             /* they did not: none kept */
	uint32_t *rare;         /* the places of those not of DDL_CLASSES_COMMON, while few */
	size_t nrare, caprare;
	int norare;             /* too many: none kept */
};

/* Rare events are kept while at most one in DDL_RARE_SHARE (past the
 * first DDL_RARE_FREE): 4 bytes for each, a quarter byte an event at most. */
enum { DDL_RARE_SHARE = 16, DDL_RARE_FREE = 4096 };

/* Notes the places of the events of EV[0..N) (the first at AT among the
 * file's) that are not of DDL_CLASSES_COMMON, or stops noting them. */
static void ddl_load_rare(struct ddl_load *l, const struct ddl_event *ev, size_t n, uint64_t at)
{
	for (size_t i = 0; i < n && !l->norare; i++) {
		if (DDL_CLASSES_COMMON >> (ddl_event_class(ev[i].kind) & 31) & 1)
			continue;
		int many = l->nrare >= DDL_RARE_FREE && l->nrare > (at + i) / DDL_RARE_SHARE;
		if (at + i > UINT32_MAX || many ||
		    (l->nrare == l->caprare &&
		     ddl_grow((void **)&l->rare, &l->caprare, l->nrare + 1, sizeof *l->rare) < 0)) {
			free(l->rare);
			l->rare = NULL;
			l->nrare = l->caprare = 0;
			l->norare = 1;
			return;
		}
		l->rare[l->nrare++] = (uint32_t)(at + i);
	}
}

/*
 * A lazy read's events are counted (and checked as a full read checks
 * them), and their classes noted; and kept, as long as the events kept
 * by the reads of the load fit beside those in memory in the events'
 * budget (trace_events.c): the first stage then finds them in memory, and
 * a job whose events all fit is read once, not twice. DDL_LOAD_ROOM is
 * what is left of the budget, reserved by each read as it grows its array.
 */
static _Atomic size_t ddl_load_room;

static void ddl_load_unkeep(struct ddl_load *l)
{
	atomic_fetch_add(&ddl_load_room, l->capkept * sizeof *l->kept);
	free(l->kept);
	l->kept = NULL;
	l->nkept = l->capkept = 0;
}

static int ddl_count_only(void *ctx, const struct ddl_trace *t, const struct ddl_event *ev, size_t n)
{
	struct ddl_load *l = ctx;
	uint32_t c = 0;
	for (size_t i = 0; i < n; i++)
		c |= 1u << (ddl_event_class(ev[i].kind) & 31);
	((struct ddl_trace *)t)->classes |= c; /* the trace being read */
	if (l && (c & ~DDL_CLASSES_COMMON))
		ddl_load_rare(l, ev, n, t->nstreamed - n); /* (counted in before the call) */
	if (!l || l->nokeep || !n)
		return 0;
	if (l->nkept + n > l->capkept) {
		/* twice the room, or where the budget has not that much, just enough */
		size_t need = l->nkept + n, cap = 2 * l->capkept > need ? 2 * l->capkept : need, add;
		size_t room = atomic_load(&ddl_load_room);
		do {
			if (room < (cap - l->capkept) * sizeof *ev)
				cap = need;
			add = (cap - l->capkept) * sizeof *ev;
			if (room < add) {
				ddl_load_unkeep(l);
				l->nokeep = 1;
				return 0;
			}
		} while (!atomic_compare_exchange_weak(&ddl_load_room, &room, room - add));
		struct ddl_event *q = realloc(l->kept, cap * sizeof *q);
		if (!q) {
			atomic_fetch_add(&ddl_load_room, add);
			ddl_load_unkeep(l);
			l->nokeep = 1;
			return 0;
		}
		l->kept = q;
		l->capkept = cap;
	}
	memcpy(l->kept + l->nkept, ev, n * sizeof *ev);
	l->nkept += n;
	return 0;
}
static uint64_t ddl_progress_events;

/* Whether PATH is a file read already (by device and inode); else notes it. */
static int ddl_seen_before(struct ddl_traceset *s, const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return 0; /* the reader says why */
	for (size_t i = 0; i < s->nseen; i++)
		if (s->seen[i].dev == st.st_dev && s->seen[i].ino == st.st_ino)
			return 1;
	struct ddl_seen *q = realloc(s->seen, (s->nseen + 1) * sizeof *q);
	if (q) {
		s->seen = q;
		s->seen[s->nseen++] = (struct ddl_seen){st.st_dev, st.st_ino};
	} else {
		s->incomplete = 1; /* read, though it may be named again */
	}
	return 0;
}

static void ddl_load_one(void *arg, size_t i)
{
	struct ddl_load *l = &((struct ddl_load *)arg)[i];
	if (l->skip)
		return;
	l->rc = ddl_traceset_lazy ? ddl_trace_stream(l->path, &l->t, ddl_count_only, l, l->err, sizeof l->err)
	                          : ddl_trace_read(l->path, &l->t, l->err, sizeof l->err);
}

/* Adds the trace L read (in the order named: the set is the same however
 * the reads were spread); without memory for it, S is incomplete. */
static void ddl_load_add(struct ddl_traceset *s, struct ddl_load *l)
{
	uint32_t *rare = l->rare; /* the trace's, or freed */
	l->rare = NULL;
	/* (not where the file was cut shorter while it was read: the chunk
	 * the mapping lost may have been counted, not noted) */
	int kept = !l->skip && l->rc == 0 && ddl_traceset_lazy && !l->norare && !l->t.shrunk &&
	           l->nrare <= DDL_RARE_FREE + l->t.nstreamed / DDL_RARE_SHARE;
	if (!kept) {
		free(rare);
		rare = NULL;
	} else if (l->nrare && l->nrare < l->caprare) { /* no more room than they take */
		uint32_t *q = realloc(rare, l->nrare * sizeof *q);
		if (q)
			rare = q;
	}
	if (l->skip)
		return;
	if (l->rc < 0 || l->nkept != l->t.nstreamed)
		ddl_load_unkeep(l); /* (a read that stopped short keeps none) */
	if (l->rc < 0) {
		if (!l->t.path)
			s->incomplete = 1; /* memory ran out before the file was looked at */
		ddl_trace_free(&l->t);
		ddl_add_error(s, l->err);
		return;
	}
	struct ddl_trace *t = realloc(s->t, (s->n + 1) * sizeof *t);
	if (!t) {
		ddl_load_unkeep(l);
		ddl_trace_free(&l->t);
		free(rare);
		s->incomplete = 1;
		return;
	}
	s->t = t;
	s->t[s->n] = l->t;
	if (ddl_traceset_lazy) {
		struct ddl_trace *u = &s->t[s->n];
		u->nev = u->nstreamed;
		u->nstreamed = 0;
		u->on_events = NULL;
		u->lazy = 1;
		if (l->kept && l->capkept > l->nkept) { /* no more room than they take */
			struct ddl_event *q = realloc(l->kept, l->nkept * sizeof *q);
			if (q) {
				l->kept = q;
				l->capkept = l->nkept;
			}
		}
		u->ev = l->kept; /* in memory from the start (ddl_events_register counts them) */
		u->cap_ev = l->capkept;
		l->kept = NULL; /* its room stays reserved until the load is over */
		u->rare_kept = kept;
		u->rare = rare;
		u->nrare = rare ? l->nrare : 0;
		u->rare_nev = u->nev;
		rare = NULL;
	}
	free(rare);
	ddl_progress_events += s->t[s->n].nev;
	s->n++;
	if (ddl_traceset_progress)
		ddl_progress_update(ddl_traceset_progress, (double)ddl_progress_events, 0,
		                    "events read");
}

/* Reads the N files PATHS into S, a directory's on several threads where
 * ddl_traceset_parallel says how (each file read once: a second name of
 * one read already is passed over), a batch at a time: the progress moves,
 * and at most a batch of traces waits to join the set. */
static void ddl_add_files(struct ddl_traceset *s, char *const *paths, size_t n)
{
	enum { BATCH = 64 };
	struct ddl_load *l = calloc(n < BATCH ? (n ? n : 1) : BATCH, sizeof *l);
	if (!l) {
		s->incomplete = 1;
		return;
	}
	for (size_t i = 0; i < n; i += BATCH) {
		size_t k = n - i < BATCH ? n - i : BATCH;
		for (size_t j = 0; j < k; j++)
			l[j] = (struct ddl_load){.path = paths[i + j], .skip = ddl_seen_before(s, paths[i + j])};
		if (ddl_traceset_parallel && k > 1)
			ddl_traceset_parallel(k, ddl_load_one, l);
		else
			for (size_t j = 0; j < k; j++)
				ddl_load_one(l, j);
		for (size_t j = 0; j < k; j++)
			ddl_load_add(s, &l[j]);
	}
	free(l);
}

static int ddl_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ddl_add_dir(struct ddl_traceset *s, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	char **names = NULL;
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 6 || strcmp(e->d_name + l - 5, ".ddlt"))
			continue;
		char **q = realloc(names, (n + 1) * sizeof *q);
		if (!q) {
			s->incomplete = 1; /* the directory's other files left out */
			break;
		}
		names = q;
		size_t pl = strlen(dir) + l + 2;
		names[n] = malloc(pl);
		if (!names[n]) {
			s->incomplete = 1;
			break;
		}
		snprintf(names[n++], pl, "%s/%s", dir, e->d_name);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof *names, ddl_cmp_str);
	ddl_add_files(s, names, n);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return 0;
}

/* Where T ends: its last clock sample; for a trace cut short (a crash, a
 * kill: no closing sample), its last event's end past it (records that
 * are not events, such as arguments, carry no time). */
static int64_t ddl_trace_end_real(const struct ddl_trace *t)
{
	int64_t end = t->hdr.start_real_ns;
	if (t->nclk) {
		int64_t e = ddl_trace_real_ns(t, t->clk[t->nclk - 1].ticks);
		if (e > end)
			end = e;
	}
	if (!t->truncated)
		return end;
	ddl_trace_hold(t);
	for (size_t i = 0; i < t->nev; i++) {
		if (ddl_event_class(t->ev[i].kind) == DDL_CLASS_ARGS)
			continue;
		int64_t e = ddl_trace_real_ns(t, t->ev[i].start) + ddl_trace_dur_ns(t, &t->ev[i]);
		if (e > end)
			end = e;
	}
	ddl_trace_release(t);
	return end;
}

/* Trace indices in order of start. */
static const struct ddl_traceset *ddl_sort_set;

static int ddl_cmp_start(const void *a, const void *b)
{
	const struct ddl_trace *x = &ddl_sort_set->t[*(const size_t *)a];
	const struct ddl_trace *y = &ddl_sort_set->t[*(const size_t *)b];
	return x->hdr.start_real_ns < y->hdr.start_real_ns ? -1 : x->hdr.start_real_ns > y->hdr.start_real_ns;
}

static struct ddl_run *ddl_run_new(struct ddl_traceset *s, const char *id)
{
	struct ddl_run *q = realloc(s->runs, (s->nruns + 1) * sizeof *q);
	if (!q)
		return NULL;
	s->runs = q;
	struct ddl_run *r = &s->runs[s->nruns++];
	memset(r, 0, sizeof *r);
	snprintf(r->id, sizeof r->id, "%s", id);
	r->oldest_real_ns = INT64_MAX;
	r->newest_real_ns = INT64_MIN;
	r->end_real_ns = INT64_MIN;
	return r;
}

/* Whether U is a later image of a process of run R whose image before
 * ended in exec, starting within 10 s of that end (a pid used again by a
 * later job, whose file number is after it too, starts later): the same
 * process, so the same run, after the run's other processes have ended. */
static int ddl_exec_continues(const struct ddl_traceset *s, const struct ddl_run *r,
                              const struct ddl_trace *u)
{
	int ri = (int)(r - s->runs);
	if (!u->hdr.exec_gen)
		return 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct ddl_trace *t = &s->t[i];
		if (t->run == ri && t->exec_end && t->hdr.pid == u->hdr.pid &&
		    t->hdr.exec_gen < u->hdr.exec_gen && !strncmp(t->hdr.host, u->hdr.host, DDL_HOST_MAX) &&
		    u->hdr.start_real_ns - ddl_trace_end_real(t) <= INT64_C(10000000000))
			return 1;
	}
	return 0;
}

/* Groups S's traces into runs (the head comment); 0, or -1 without memory. */
static int ddl_group_runs(struct ddl_traceset *s)
{
	size_t *order = malloc((s->n ? s->n : 1) * sizeof *order);
	if (!order)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < s->n; i++) {
		order[i] = i;
		s->t[i].run = -1;
	}
	ddl_sort_set = s;
	qsort(order, s->n, sizeof *order, ddl_cmp_start);
	for (size_t k = 0; k < s->n; k++) {
		struct ddl_trace *t = &s->t[order[k]];
		if (t->run >= 0)
			continue;
		/* the first trace, by start, of an id not grouped yet: its runs in turn */
		size_t first = s->nruns;
		struct ddl_run *r = NULL;
		for (size_t j = k; j < s->n; j++) {
			struct ddl_trace *u = &s->t[order[j]];
			if (u->run >= 0 || strcmp(u->hdr.run_id, t->hdr.run_id))
				continue;
			if (!r || (u->hdr.start_real_ns > r->end_real_ns && !ddl_exec_continues(s, r, u))) {
				if (!(r = ddl_run_new(s, t->hdr.run_id))) {
					rc = -1;
					break;
				}
			}
			u->run = (int)(r - s->runs);
			r->ntraces++;
			if (u->hdr.start_real_ns < r->oldest_real_ns)
				r->oldest_real_ns = u->hdr.start_real_ns;
			if (u->hdr.start_real_ns > r->newest_real_ns)
				r->newest_real_ns = u->hdr.start_real_ns;
			int64_t end = ddl_trace_end_real(u);
			if (end > r->end_real_ns)
				r->end_real_ns = end;
		}
		if (s->nruns - first > 1)
			for (size_t j = first; j < s->nruns; j++) {
				s->runs[j].shared = 1;
				snprintf(s->runs[j].id, sizeof s->runs[j].id, "%s#%zu", t->hdr.run_id,
				         j - first + 1);
			}
		if (rc < 0)
			break;
	}
	free(order);
	return rc;
}

int ddl_traceset_load(struct ddl_traceset *s, char *const *paths, int npaths, char *err,
                      size_t errlen)
{
	memset(s, 0, sizeof *s);
	size_t used = ddl_events_in_memory();
	atomic_store(&ddl_load_room, ddl_traceset_lazy && used < ddl_events_budget ? ddl_events_budget - used : 0);
	for (int i = 0; i < npaths; i++) {
		struct stat st;
		if (stat(paths[i], &st) != 0) {
			snprintf(err, errlen, "%s: %s", paths[i], strerror(errno));
			return -1;
		}
		if (S_ISDIR(st.st_mode)) {
			if (ddl_add_dir(s, paths[i]) < 0) {
				snprintf(err, errlen, "%s: cannot list directory: %s", paths[i], strerror(errno));
				return -1;
			}
		} else if (S_ISREG(st.st_mode)) {
			ddl_add_files(s, &paths[i], 1);
		} else {
			snprintf(err, errlen, "%s: neither a trace file nor a directory", paths[i]);
			return -1;
		}
	}
	ddl_events_register(s->t, s->n); /* the array moves no more */
	atomic_store(&ddl_load_room, 0);
	if (ddl_group_runs(s) < 0) {
		snprintf(err, errlen, "out of memory grouping the traces into runs");
		return -1;
	}
	return 0;
}

const struct ddl_run *ddl_traceset_run(const struct ddl_traceset *s, const char *id)
{
	const struct ddl_run *best = NULL;
	for (size_t k = 0; k < s->nruns; k++) {
		const struct ddl_run *r = &s->runs[k];
		if (id && !strcmp(r->id, id))
			return r;
		/* "ID" names the newest of the runs ID#1, ID#2, ... */
		size_t n = id ? strlen(id) : 0;
		int named = id && r->shared && !strncmp(r->id, id, n) && r->id[n] == '#';
		if ((!id || named) && (!best || r->newest_real_ns > best->newest_real_ns))
			best = r;
	}
	return best;
}

void ddl_traceset_free(struct ddl_traceset *s)
{
	ddl_events_unregister(s->t, s->n);
	for (size_t i = 0; i < s->n; i++)
		ddl_trace_free(&s->t[i]);
	for (size_t i = 0; i < s->nerrors; i++)
		free(s->errors[i]);
	free(s->t);
	free(s->runs);
	free(s->errors);
	free(s->seen);
	memset(s, 0, sizeof *s);
}
