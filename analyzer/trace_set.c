/*
 * Loading a trace directory: lists the *.ddlt files of each directory named
 * (in name order, so output is stable), reads each with the trace reader,
 * and groups them by the run id in their headers. Several directories, as
 * gathered from several hosts, merge into one set.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "progress.h"
#include "trace_set.h"

static int ddl_add_error(struct ddl_traceset *s, const char *msg)
{
	char **e = realloc(s->errors, (s->nerrors + 1) * sizeof *e);
	if (!e)
		return -1;
	s->errors = e;
	s->errors[s->nerrors] = strdup(msg);
	if (s->errors[s->nerrors])
		s->nerrors++;
	return 0;
}

struct ddl_progress *ddl_traceset_progress;
static uint64_t ddl_progress_events;

static int ddl_add_file(struct ddl_traceset *s, const char *path)
{
	char err[512];
	struct ddl_trace *t = realloc(s->t, (s->n + 1) * sizeof *t);
	if (!t)
		return -1;
	s->t = t;
	if (ddl_trace_read(path, &s->t[s->n], err, sizeof err) < 0) {
		ddl_trace_free(&s->t[s->n]);
		return ddl_add_error(s, err);
	}
	ddl_progress_events += s->t[s->n].nev;
	s->n++;
	if (ddl_traceset_progress)
		ddl_progress_update(ddl_traceset_progress, (double)ddl_progress_events, 0,
		                    "events read");
	return 0;
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
		if (!q)
			break;
		names = q;
		size_t pl = strlen(dir) + l + 2;
		names[n] = malloc(pl);
		if (!names[n])
			break;
		snprintf(names[n++], pl, "%s/%s", dir, e->d_name);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof *names, ddl_cmp_str);
	for (size_t i = 0; i < n; i++) {
		ddl_add_file(s, names[i]);
		free(names[i]);
	}
	free(names);
	return 0;
}

static void ddl_group_runs(struct ddl_traceset *s)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct ddl_file_header *h = &s->t[i].hdr;
		struct ddl_run *r = NULL;
		for (size_t k = 0; k < s->nruns; k++)
			if (!strcmp(s->runs[k].id, h->run_id))
				r = &s->runs[k];
		if (!r) {
			struct ddl_run *q = realloc(s->runs, (s->nruns + 1) * sizeof *q);
			if (!q)
				return;
			s->runs = q;
			r = &s->runs[s->nruns++];
			memset(r, 0, sizeof *r);
			memcpy(r->id, h->run_id, sizeof r->id);
			r->newest_real_ns = h->start_real_ns;
		}
		r->ntraces++;
		if (h->start_real_ns > r->newest_real_ns)
			r->newest_real_ns = h->start_real_ns;
	}
}

int ddl_traceset_load(struct ddl_traceset *s, char *const *paths, int npaths, char *err,
                      size_t errlen)
{
	memset(s, 0, sizeof *s);
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
			ddl_add_file(s, paths[i]);
		} else {
			snprintf(err, errlen, "%s: neither a trace file nor a directory", paths[i]);
			return -1;
		}
	}
	ddl_group_runs(s);
	return 0;
}

const struct ddl_run *ddl_traceset_run(const struct ddl_traceset *s, const char *id)
{
	const struct ddl_run *best = NULL;
	for (size_t k = 0; k < s->nruns; k++) {
		if (id && !strcmp(s->runs[k].id, id))
			return &s->runs[k];
		if (!id && (!best || s->runs[k].newest_real_ns > best->newest_real_ns))
			best = &s->runs[k];
	}
	return id ? NULL : best;
}

void ddl_traceset_free(struct ddl_traceset *s)
{
	for (size_t i = 0; i < s->n; i++)
		ddl_trace_free(&s->t[i]);
	for (size_t i = 0; i < s->nerrors; i++)
		free(s->errors[i]);
	free(s->t);
	free(s->runs);
	free(s->errors);
	memset(s, 0, sizeof *s);
}
