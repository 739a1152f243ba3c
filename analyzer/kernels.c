/*
 * The job's kernels by device time, the first table a GPU profiler's
 * summary shows. After gpu.c, every kernel interval of every process is
 * charged to the kernel it timed (CUPTI records name it; an event pair is
 * named by the launch it was timed for) and summed by name across the job.
 * Intervals that time a run of launches as one (DDL_EVF_RUN) belong to no
 * one kernel: they are counted apart, never shared out. Launches without a
 * device interval (sampled out) add nothing: no time is guessed for them.
 *
 * Names are recorded mangled; each distinct one is demangled once, by the
 * C++ runtime's __cxa_demangle, and the outputs take the demangled names
 * from here: the tables (text, JSON, HTML) and, by name id through
 * ddl_devcalls_build, the timelines (Chrome, HTML). This file also
 * shortens a demangled name for a table column.
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* The Itanium C++ ABI's demangler (libstdc++, libc++abi); C has no header for it. */
char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

/* NAME demangled into malloc'd memory, or NULL when it is not a mangled C++
 * name (a C kernel, "kernel@0x..."), the demangler refuses it, or memory
 * ran out (*NOMEM set). */
static char *ddl_kernel_demangle(const char *name, int *nomem)
{
	/* only "_Z" names: __cxa_demangle also reads bare type codes ("i" is "int") */
	if (strncmp(name, "_Z", 2) != 0)
		return NULL;
	int status = -2;
	char *d = __cxa_demangle(name, NULL, NULL, &status);
	if (status == -1)
		*nomem = 1; /* the demangler's "memory allocation failure" */
	if (status != 0 || !d || !*d) {
		free(d);
		return NULL;
	}
	return d;
}

static int ddl_strp_cmp(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static int ddl_kernel_name_cmp(const void *x, const void *y)
{
	const struct ddl_kernel *a = x, *b = y;
	return strcmp(a->mangled, b->mangled);
}

static int ddl_kernel_byname_cmp(const void *x, const void *y)
{
	const struct ddl_kernel *a = *(const struct ddl_kernel *const *)x;
	const struct ddl_kernel *b = *(const struct ddl_kernel *const *)y;
	return strcmp(a->mangled, b->mangled);
}

/* Most device time first; then most intervals; then by name, for a stable order. */
static int ddl_kernel_time_cmp(const void *x, const void *y)
{
	const struct ddl_kernel *a = x, *b = y;
	if (a->total_s != b->total_s)
		return a->total_s > b->total_s ? -1 : 1;
	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	if (!a->mangled || !b->mangled)
		return !a->mangled - !b->mangled;
	return strcmp(a->name, b->name);
}

/* The kernel name of event I of T (a launch, or a CUPTI kernel record), or NULL. */
static const char *ddl_event_kname(const struct ddl_trace *t, size_t i, uint32_t *id)
{
	const struct ddl_event *e = &t->ev[i];
	int cls = ddl_event_class(e->kind);
	if (cls != DDL_CLASS_LAUNCH && !(e->kind == DDL_EV_DEV_KERNEL && (e->flags & DDL_EVF_CUPTI)))
		return NULL;
	const struct ddl_args *a = ddl_event_args(t, i);
	if (!a)
		return NULL;
	*id = a->name;
	return ddl_trace_name(t, a->name);
}

/* Every distinct kernel name of the run, sorted, into R->kernels (demangled). */
static int ddl_kernels_names(struct ddl_report *r)
{
	const char **v = NULL;
	size_t n = 0, cap = 0;
	for (size_t p = 0; p < r->nprocs; p++)
		for (size_t k = 0; k < r->procs[p].ntr; k++) {
			const struct ddl_trace *t = r->procs[p].tr[k];
			if (!t->nnames || (!ddl_trace_has_class(t, DDL_CLASS_LAUNCH) &&
			                   !ddl_trace_has_class(t, DDL_CLASS_DEVICE)))
				continue; /* no kernel named */
			unsigned char *seen = t->nnames ? calloc(t->nnames, 1) : NULL;
			if (t->nnames && !seen) {
				free(v);
				return -1;
			}
			ddl_trace_hold(t);
			for (size_t i = 0; i < t->nev; i++) {
				uint32_t id = 0;
				const char *s = ddl_event_kname(t, i, &id);
				if (!s || seen[id])
					continue;
				seen[id] = 1;
				if (n == cap) {
					size_t c = cap ? cap * 2 : 64;
					const char **q = realloc(v, c * sizeof *q);
					if (!q) {
						ddl_trace_release(t);
						free(seen);
						free(v);
						return -1;
					}
					v = q;
					cap = c;
				}
				v[n++] = s;
			}
			ddl_trace_release(t);
			free(seen);
		}
	if (n)
		qsort(v, n, sizeof *v, ddl_strp_cmp);
	/* one entry a name, and room for the intervals without one */
	r->kernels = calloc(n + 1, sizeof *r->kernels);
	if (!r->kernels) {
		free(v);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if (r->nkernels && !strcmp(r->kernels[r->nkernels - 1].mangled, v[i]))
			continue;
		struct ddl_kernel *kn = &r->kernels[r->nkernels++];
		kn->mangled = v[i];
		kn->demangled = ddl_kernel_demangle(v[i], &r->incomplete);
		kn->name = kn->demangled ? kn->demangled : v[i];
	}
	free(v);
	return 0;
}

/* Charges every kernel interval of T to its kernel (R->kernels still by name). */
static int ddl_kernels_trace(struct ddl_report *r, const struct ddl_trace *t, struct ddl_kernel *unnamed)
{
	size_t *idx = t->nnames ? malloc(t->nnames * sizeof *idx) : NULL;
	if (t->nnames && !idx)
		return -1;
	for (size_t id = 0; id < t->nnames; id++) {
		struct ddl_kernel key = {.mangled = t->names[id]};
		const struct ddl_kernel *kn =
		    key.mangled ? bsearch(&key, r->kernels, r->nkernels, sizeof key, ddl_kernel_name_cmp) : NULL;
		idx[id] = kn ? (size_t)(kn - r->kernels) : SIZE_MAX;
	}
	struct ddl_devcalls dc;
	if (ddl_devcalls_build(r, t, &dc) < 0) {
		free(idx);
		return -1;
	}
	for (size_t i = 0; i < t->nev; i++) {
		const struct ddl_event *e = &t->ev[i];
		if (e->kind != DDL_EV_DEV_KERNEL)
			continue;
		double s = (double)ddl_trace_dur_ns(t, e) / 1e9;
		r->kernel_s += s;
		if (e->flags & DDL_EVF_RUN) {
			r->kernel_runs++;
			r->kernel_runs_s += s;
			continue;
		}
		struct ddl_devinfo d;
		ddl_device_info(t, i, &dc, &d);
		uint32_t id = d.args ? d.args->name : 0;
		struct ddl_kernel *kn = id < t->nnames && idx[id] != SIZE_MAX ? &r->kernels[idx[id]] : unnamed;
		kn->count++;
		kn->total_s += s;
	}
	ddl_devcalls_free(&dc);
	free(idx);
	return 0;
}

void ddl_report_kernels(struct ddl_report *r)
{
	if (ddl_kernels_names(r) < 0) {
		ddl_kernels_free(r);
		r->incomplete = 1; /* no kernel table */
		return;
	}
	struct ddl_kernel unnamed = {.name = "(kernel not named)"};
	for (size_t p = 0; p < r->nprocs; p++)
		for (size_t k = 0; k < r->procs[p].ntr; k++) {
			const struct ddl_trace *t = r->procs[p].tr[k];
			if (!ddl_trace_has_class(t, DDL_CLASS_DEVICE))
				continue; /* no kernel interval to charge */
			ddl_trace_hold(t);
			int rc = ddl_kernels_trace(r, t, &unnamed);
			ddl_trace_release(t);
			if (rc < 0) {
				ddl_kernels_free(r);
				r->incomplete = 1; /* no kernel table */
				return;
			}
		}
	if (unnamed.count)
		r->kernels[r->nkernels++] = unnamed;
	if (r->nkernels)
		qsort(r->kernels, r->nkernels, sizeof *r->kernels, ddl_kernel_time_cmp);
	while (r->nkernels_timed < r->nkernels && r->kernels[r->nkernels_timed].count)
		r->nkernels_timed++;
	r->kernels_by_name = r->nkernels ? malloc(r->nkernels * sizeof *r->kernels_by_name) : NULL;
	if (!r->kernels_by_name) {
		r->incomplete |= r->nkernels > 0; /* names stay as recorded in the timelines */
		return;
	}
	for (size_t i = 0; i < r->nkernels; i++)
		if (r->kernels[i].mangled)
			r->kernels_by_name[r->nkernels_by_name++] = &r->kernels[i];
	qsort(r->kernels_by_name, r->nkernels_by_name, sizeof *r->kernels_by_name, ddl_kernel_byname_cmp);
}

void ddl_kernels_free(struct ddl_report *r)
{
	for (size_t i = 0; r->kernels && i < r->nkernels; i++)
		free(r->kernels[i].demangled);
	free(r->kernels);
	free(r->kernels_by_name);
	r->kernels = NULL;
	r->kernels_by_name = NULL;
	r->nkernels = r->nkernels_timed = r->nkernels_by_name = 0;
	r->kernel_s = r->kernel_runs_s = 0;
	r->kernel_runs = 0;
}

const struct ddl_kernel *ddl_kernel_find(const struct ddl_report *r, const char *mangled)
{
	if (!mangled || !r->nkernels_by_name)
		return NULL;
	struct ddl_kernel key = {.mangled = mangled};
	const struct ddl_kernel *kp = &key;
	const struct ddl_kernel *const *hit = bsearch(&kp, r->kernels_by_name, r->nkernels_by_name,
	                                              sizeof *r->kernels_by_name, ddl_kernel_byname_cmp);
	return hit ? *hit : NULL;
}

/* ---- shortening a demangled name ---- */

static int ddl_ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The length of an operator's name at S[I] ("operator<<", "operator()"), or
 * 0: its brackets are not brackets. */
static size_t ddl_op_len(const char *s, size_t i)
{
	if (strncmp(s + i, "operator", 8) != 0 || (i > 0 && ddl_ident_char(s[i - 1])))
		return 0;
	const char *p = s + i + 8;
	if (!strncmp(p, "()", 2) || !strncmp(p, "[]", 2))
		return 10;
	size_t k = strspn(p, "<>=!+-*/%^&|~,");
	return k ? 8 + k : 0;
}

static int ddl_opener(char c)
{
	return c == '<' || c == '(' || c == '[' || c == '{';
}

static int ddl_closer(char c)
{
	return c == '>' || c == ')' || c == ']' || c == '}';
}

/* S[I] opens a group: the index just past its closer, or 0 when it has none. */
static size_t ddl_group_end(const char *s, size_t i)
{
	int depth = 0;
	while (s[i]) {
		size_t op = ddl_op_len(s, i);
		if (op) {
			i += op;
			continue;
		}
		if (ddl_opener(s[i]))
			depth++;
		else if (ddl_closer(s[i]) && --depth == 0)
			return i + 1;
		i++;
	}
	return 0;
}

/* The function's parameter list: the last group at depth 0, when it is a
 * parenthesis closing the name (a "const" may follow). 0 when none. */
static size_t ddl_params_at(const char *s, size_t *end)
{
	size_t at = 0;
	for (size_t i = 0; s[i];) {
		size_t op = ddl_op_len(s, i), j;
		if (op) {
			i += op;
		} else if (ddl_opener(s[i]) && (j = ddl_group_end(s, i))) {
			if (s[i] == '(' && (!s[j] || !strcmp(s + j, " const"))) {
				at = i;
				*end = j;
			}
			i = j;
		} else if (ddl_opener(s[i])) {
			return 0; /* unbalanced: leave it alone */
		} else {
			i++;
		}
	}
	return at;
}

/* Appends C to W (room for it is there: the result never outgrows the name). */
static void ddl_put(char *w, size_t *n, const char *c, size_t len)
{
	memcpy(w + *n, c, len);
	*n += len;
	w[*n] = 0;
}

/* S with the parameter list as "(...)" into W (strlen(S) + 1 bytes). */
static void ddl_short_params(const char *s, char *w)
{
	size_t end = 0, at = ddl_params_at(s, &end), n = 0;
	w[0] = 0;
	if (!at || end - at <= 5) {
		ddl_put(w, &n, s, strlen(s));
		return;
	}
	ddl_put(w, &n, s, at);
	ddl_put(w, &n, "(...)", 5);
	ddl_put(w, &n, s + end, strlen(s + end));
}

/* Inside template arguments: namespaces dropped ("at::native::Foo" is
 * "Foo"), nested argument lists written NESTED ("<...>", or "" to drop
 * them) and parameter lists "(...)", where that is shorter. S into W
 * (strlen(S) + 1 bytes: nothing here lengthens it). */
static void ddl_short_targs(const char *s, char *w, const char *nested)
{
	static const char anon[] = "(anonymous namespace)::";
	size_t n = 0;
	int depth = 0; /* template argument lists open */
	w[0] = 0;
	for (size_t i = 0; s[i];) {
		size_t op = ddl_op_len(s, i), j;
		if (op) {
			ddl_put(w, &n, s + i, op);
			i += op;
		} else if (depth >= 1 && !strncmp(s + i, anon, sizeof anon - 1)) {
			i += sizeof anon - 1;
		} else if (s[i] == '<' && depth >= 1 && (j = ddl_group_end(s, i)) && j - i > 5) {
			ddl_put(w, &n, nested, strlen(nested));
			i = j;
		} else if (s[i] == '(' && depth >= 1 && i > 0 && ddl_ident_char(s[i - 1]) &&
		           (j = ddl_group_end(s, i)) && j - i > 5) {
			ddl_put(w, &n, "(...)", 5);
			i = j;
		} else if (s[i] == ':' && s[i + 1] == ':' && depth >= 1 && n > 0 && ddl_ident_char(w[n - 1])) {
			while (n > 0 && ddl_ident_char(w[n - 1]))
				n--; /* the qualifier written just before */
			w[n] = 0;
			i += 2;
		} else {
			depth += s[i] == '<' ? 1 : s[i] == '>' ? -1 : 0;
			if (s[i] == '>' && n > 0 && w[n - 1] == ' ')
				n--; /* "array<char*, 2ul> >": the space only kept ">>" apart */
			ddl_put(w, &n, s + i, 1);
			i++;
		}
	}
}

/* S without the namespaces at depth 0 ("a::b::f<...>" is "f<...>"). */
static void ddl_short_qualifiers(char *s)
{
	size_t cut = 0;
	for (size_t i = 0; s[i];) {
		size_t j;
		if (ddl_op_len(s, i))
			break; /* an operator: keep its class */
		if (ddl_opener(s[i]) && (j = ddl_group_end(s, i))) {
			i = j;
		} else if (ddl_opener(s[i])) {
			break;
		} else if (s[i] == ':' && s[i + 1] == ':') {
			i += 2;
			cut = i;
		} else {
			i++;
		}
	}
	memmove(s, s + cut, strlen(s + cut) + 1);
}

/* Back from byte K of S to the start of a UTF-8 sequence. */
static size_t ddl_utf8_start(const char *s, size_t k)
{
	while (k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80)
		k--;
	return k;
}

/* Whether S fits in WIDTH bytes. */
static int ddl_fits(const char *s, size_t width)
{
	return strlen(s) <= width;
}

char *ddl_kernel_shorten(const char *name, char *out, size_t n, size_t width)
{
	if (width >= n)
		width = n - 1;
	if (!strncmp(name, "void ", 5) && name[5])
		name += 5; /* kernels return nothing: only templates print it */
	size_t len = strlen(name);
	char *a = malloc(len + 1), *b = malloc(len + 1);
	const char *s = name;
	int nomem = !a || !b;
	if (a && b && !ddl_fits(s, width)) {
		ddl_short_params(name, a);
		s = a;
		if (!ddl_fits(s, width)) {
			ddl_short_targs(a, b, "<...>");
			s = b;
		}
		if (!ddl_fits(s, width))
			ddl_short_qualifiers(b);
		if (!ddl_fits(s, width)) {
			/* nested arguments dropped altogether: the outer ones say more */
			ddl_short_targs(a, b, "");
			ddl_short_qualifiers(b);
		}
		size_t bl = s == b ? strlen(b) : 0;
		if (!ddl_fits(s, width) && bl > 5 && !strcmp(b + bl - 5, "(...)"))
			b[bl - 5] = 0; /* to be cut anyway: the arguments matter more */
	}
	len = strlen(s);
	if (len <= width) {
		memcpy(out, s, len + 1);
	} else if (width < 30) {
		size_t k = ddl_utf8_start(s, width);
		memcpy(out, s, k);
		out[k] = 0;
	} else {
		/* cut in the middle, inside the template arguments when there are:
		 * the start names the kernel, the end tells its instances apart */
		size_t head = (width - 3) / 2, lt = strcspn(s, "<(");
		if (s[lt] && lt + 12 > head)
			head = lt + 12 < width - 15 ? lt + 12 : width - 15;
		head = ddl_utf8_start(s, head);
		while (head > 0 && s[head - 1] == '.')
			head--; /* no "......" where the cut meets a "(...)" */
		size_t from = len - (width - 3 - head);
		while (((unsigned char)s[from] & 0xc0) == 0x80 || s[from] == '.')
			from++;
		memcpy(out, s, head);
		memcpy(out + head, "...", 3);
		memcpy(out + head + 3, s + from, len - from + 1);
	}
	free(a);
	free(b);
	return nomem ? NULL : out;
}
