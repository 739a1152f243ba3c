/*
 * Interval sets (ivset.h): push, sort-and-merge, subtract, and the
 * questions the stall attribution asks of them (what covers an instant,
 * how much of a span is covered, by tag). Merged sets answer by binary
 * search or, asked in time order, by resuming where the last answer ended.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ivset.h"
#include "keep.h"

_Static_assert(DDL_KEEP_IVSET + DDL_IVSET_SLOTS <= DDL_KEEP_SUBTRACT, "the sets' slots are their own");

static void ddl_ivset_reuse_at(struct ddl_ivset *s, int slot)
{
	size_t bytes;
	*s = (struct ddl_ivset){0};
	s->v = ddl_keep_take(slot, 0, &bytes);
	s->cap = bytes / sizeof *s->v;
}

static void ddl_ivset_keep_at(struct ddl_ivset *s, int slot)
{
	if (ddl_keep_give(slot, s->v, s->cap * sizeof *s->v) < 0)
		free(s->v);
	*s = (struct ddl_ivset){0};
}

void ddl_ivset_reuse(struct ddl_ivset *s, int slot)
{
	if (slot >= 0 && slot < DDL_IVSET_SLOTS)
		ddl_ivset_reuse_at(s, DDL_KEEP_IVSET + slot);
	else
		*s = (struct ddl_ivset){0};
}

void ddl_ivset_keep(struct ddl_ivset *s, int slot)
{
	if (slot >= 0 && slot < DDL_IVSET_SLOTS)
		ddl_ivset_keep_at(s, DDL_KEEP_IVSET + slot);
	else
		ddl_ivset_free(s);
}

/* A buffer for N intervals for the sort, its room into *CAP: the one the
 * thread kept where it is large enough, else a new one. */
static struct ddl_iv *ddl_iv_sort_buf(size_t n, size_t *cap)
{
	size_t bytes;
	struct ddl_iv *b = ddl_keep_take(DDL_KEEP_SORT, n * sizeof *b, &bytes);
	if (b) {
		*cap = bytes / sizeof *b;
		return b;
	}
	*cap = n;
	return malloc(n * sizeof *b);
}

/* The sort's buffer B (room for CAP) kept for the next, where it fits. */
static void ddl_iv_sort_done(struct ddl_iv *b, size_t cap)
{
	if (ddl_keep_give(DDL_KEEP_SORT, b, cap * sizeof *b) < 0)
		free(b);
}

int ddl_ivset_push(struct ddl_ivset *s, int64_t a, int64_t b, int tag)
{
	if (b <= a)
		return 0;
	if (s->n == s->cap) {
		size_t c = s->cap ? s->cap * 2 : 256;
		struct ddl_iv *q = realloc(s->v, c * sizeof *q);
		if (!q) {
			s->nomem = 1;
			return -1;
		}
		s->v = q;
		s->cap = c;
	}
	s->v[s->n++] = (struct ddl_iv){a, b, tag};
	return 0;
}

int ddl_ivset_add(struct ddl_ivset *s, int64_t a, int64_t b, int tag)
{
	if (b <= a)
		return 0;
	while (s->n && s->v[s->n - 1].a >= a && s->v[s->n - 1].b <= b && (s->v[s->n - 1].tag | tag) == tag)
		s->n--;
	return ddl_ivset_push(s, a, b, tag);
}

int ddl_ivset_push_merging(struct ddl_ivset *s, int64_t a, int64_t b, int tag, int64_t gap)
{
	/* merged now and again, what it holds as it fills up is what merging all
	 * of it once would give: merging is a closure */
	if (s->n == s->cap && s->cap >= 4096) {
		ddl_ivset_merge(s, gap);
		if (s->n > s->cap / 2) { /* still more than half full: room to double, as a push would */
			struct ddl_iv *q = realloc(s->v, 2 * s->cap * sizeof *q);
			if (!q) {
				s->nomem = 1;
				return -1;
			}
			s->v = q;
			s->cap *= 2;
		}
	}
	return ddl_ivset_add(s, a, b, tag);
}

static int ddl_iv_cmp(const void *x, const void *y)
{
	const struct ddl_iv *p = x, *q = y;
	return p->a < q->a ? -1 : p->a > q->a;
}

static int ddl_i64_cmp(const void *x, const void *y)
{
	int64_t p = *(const int64_t *)x, q = *(const int64_t *)y;
	return p < q ? -1 : p > q;
}

/* Appends X to *OUT (N used, *CAP room); -1 without memory. */
static int ddl_cut_add(int64_t **out, size_t *n, size_t *cap, int64_t x)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		int64_t *q = realloc(*out, c * sizeof *q);
		if (!q)
			return -1;
		*out = q;
		*cap = c;
	}
	(*out)[(*n)++] = x;
	return 0;
}

long ddl_ivset_cuts(const struct ddl_ivset *const *sets, int n, int64_t a, int64_t b, int64_t **out,
                    size_t *cap)
{
	size_t m = 0;
	if (ddl_cut_add(out, &m, cap, a) < 0 || ddl_cut_add(out, &m, cap, b) < 0)
		return -1;
	for (int k = 0; k < n; k++) {
		const struct ddl_ivset *s = sets[k];
		for (size_t i = ddl_ivset_find(s, a); i < s->n && s->v[i].a < b; i++) {
			if (s->v[i].a > a && ddl_cut_add(out, &m, cap, s->v[i].a) < 0)
				return -1;
			if (s->v[i].b < b && ddl_cut_add(out, &m, cap, s->v[i].b) < 0)
				return -1;
		}
	}
	qsort(*out, m, sizeof **out, ddl_i64_cmp);
	return (long)m;
}

enum { DDL_IV_RUNS = 8 };

/* Where the runs of V[0..N) in order of start begin, the second at
 * SECOND (V[0..SECOND) is in order), into AT (DDL_IV_RUNS of them at
 * most), then N; their count, or DDL_IV_RUNS + 1 past that. */
static size_t ddl_iv_runs(const struct ddl_iv *v, size_t n, size_t second, size_t at[DDL_IV_RUNS + 1])
{
	size_t k = 0;
	at[k++] = 0;
	at[k++] = second;
	for (size_t i = second + 1; i < n; i++)
		if (v[i].a < v[i - 1].a) {
			if (k == DDL_IV_RUNS)
				return DDL_IV_RUNS + 1;
			at[k++] = i;
		}
	at[k] = n;
	return k;
}

/* The K runs of FROM (starting at AT[0..K), AT[K] its end) merged pairwise
 * into TO, stably (of equal starts, the earlier run's first); AT becomes
 * the merged runs' starts, and their count is returned. */
static size_t ddl_iv_merge_runs(const struct ddl_iv *from, struct ddl_iv *to, size_t *at, size_t k)
{
	size_t m = 0;
	for (size_t r = 0; r < k; r += 2) {
		/* the second run, [j, je): none for the odd run out, copied as it is */
		size_t i = at[r], ie = at[r + 1], j = ie, je = r + 1 < k ? at[r + 2] : ie;
		size_t o = at[r];
		while (i < ie && j < je)
			to[o++] = from[j].a < from[i].a ? from[j++] : from[i++];
		while (i < ie)
			to[o++] = from[i++];
		while (j < je)
			to[o++] = from[j++];
		at[m++] = at[r];
	}
	at[m] = at[k];
	return m;
}

/*
 * Sorts V (N of them) by start, stably, as qsort's merge sort did with
 * ddl_iv_cmp (equal starts keep the order they were pushed in): nothing
 * to do when they came in order; a few runs in order (the sends and the
 * receives of a connection, each in time order) merged pairwise; else a
 * radix sort of the starts less the least, 11 bits a pass (three passes
 * for a run of 8.8 s, four up to 73 minutes); with qsort where the
 * buffer cannot be had.
 */
static void ddl_iv_sort(struct ddl_iv *v, size_t n)
{
	size_t i = 1;
	while (i < n && v[i - 1].a <= v[i].a)
		i++;
	if (i >= n)
		return;
	size_t at[DDL_IV_RUNS + 1], k = ddl_iv_runs(v, n, i, at);
	if (k <= DDL_IV_RUNS) {
		size_t bcap;
		struct ddl_iv *buf = ddl_iv_sort_buf(n, &bcap), *from = v, *to = buf;
		if (buf) {
			while (k > 1) {
				k = ddl_iv_merge_runs(from, to, at, k);
				struct ddl_iv *x = from;
				from = to;
				to = x;
			}
			if (from != v)
				memcpy(v, from, n * sizeof *v);
			ddl_iv_sort_done(buf, bcap);
			return;
		}
	}
	int64_t lo = v[0].a, hi = v[0].a;
	for (size_t k = 1; k < n; k++) {
		lo = v[k].a < lo ? v[k].a : lo;
		hi = v[k].a > hi ? v[k].a : hi;
	}
	uint64_t span = (uint64_t)hi - (uint64_t)lo;
	size_t tcap = 0;
	struct ddl_iv *tmp = n >= 64 ? ddl_iv_sort_buf(n, &tcap) : NULL;
	if (!tmp) {
		qsort(v, n, sizeof *v, ddl_iv_cmp); /* glibc's is a stable merge sort where it can be */
		return;
	}
	enum { BITS = 11, BINS = 1 << BITS };
	size_t count[BINS];
	struct ddl_iv *from = v, *to = tmp;
	for (unsigned shift = 0; shift < 64 && (shift == 0 || span >> shift); shift += BITS) {
		for (size_t b = 0; b < BINS; b++)
			count[b] = 0;
		for (size_t k = 0; k < n; k++)
			count[((uint64_t)from[k].a - (uint64_t)lo) >> shift & (BINS - 1)]++;
		size_t at = 0;
		for (size_t b = 0; b < BINS; b++) {
			size_t c = count[b];
			count[b] = at;
			at += c;
		}
		for (size_t k = 0; k < n; k++)
			to[count[((uint64_t)from[k].a - (uint64_t)lo) >> shift & (BINS - 1)]++] = from[k];
		struct ddl_iv *x = from;
		from = to;
		to = x;
	}
	if (from != v)
		for (size_t k = 0; k < n; k++)
			v[k] = from[k];
	ddl_iv_sort_done(tmp, tcap);
}

void ddl_ivset_sort(struct ddl_ivset *s)
{
	if (s->n)
		ddl_iv_sort(s->v, s->n);
}

void ddl_ivset_merge(struct ddl_ivset *s, int64_t gap)
{
	if (!s->n)
		return;
	ddl_ivset_sort(s);
	size_t m = 0;
	for (size_t i = 1; i < s->n; i++) {
		if (s->v[i].a <= s->v[m].b + gap) {
			if (s->v[i].b > s->v[m].b)
				s->v[m].b = s->v[i].b;
			s->v[m].tag |= s->v[i].tag;
		} else {
			s->v[++m] = s->v[i];
		}
	}
	s->n = m + 1;
}

int ddl_ivset_minus(const struct ddl_ivset *s, const struct ddl_ivset *t, struct ddl_ivset *out)
{
	size_t j = 0;
	for (size_t i = 0; i < s->n; i++) {
		int64_t a = s->v[i].a, b = s->v[i].b;
		while (j < t->n && t->v[j].b <= a)
			j++;
		for (size_t k = j; k < t->n && t->v[k].a < b && a < b; k++) {
			if (t->v[k].a > a && ddl_ivset_push(out, a, t->v[k].a, s->v[i].tag) < 0)
				return -1;
			if (t->v[k].b > a)
				a = t->v[k].b;
		}
		if (a < b && ddl_ivset_push(out, a, b, s->v[i].tag) < 0)
			return -1;
	}
	return 0;
}

int ddl_ivset_subtract(struct ddl_ivset *s, const struct ddl_ivset *t)
{
	if (!s->n || !t->n)
		return 0;
	struct ddl_ivset out;
	ddl_ivset_reuse_at(&out, DDL_KEEP_SUBTRACT); /* the room of the last one's S */
	if (ddl_ivset_minus(s, t, &out) < 0) {
		ddl_ivset_keep_at(&out, DDL_KEEP_SUBTRACT);
		return -1;
	}
	struct ddl_ivset was = *s;
	*s = out;
	ddl_ivset_keep_at(&was, DDL_KEEP_SUBTRACT);
	return 0;
}

size_t ddl_ivset_find(const struct ddl_ivset *s, int64_t x)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->v[mid].b <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int ddl_ivset_covers(const struct ddl_ivset *s, int64_t x)
{
	size_t i = ddl_ivset_find(s, x);
	return i < s->n && s->v[i].a <= x;
}

int64_t ddl_ivset_overlap(const struct ddl_ivset *s, size_t *from, int64_t a, int64_t b,
                          int64_t *by_tag, int ntags)
{
	size_t i = from ? *from : ddl_ivset_find(s, a);
	while (i < s->n && s->v[i].b <= a)
		i++;
	if (from)
		*from = i;
	int64_t sum = 0;
	for (; i < s->n && s->v[i].a < b; i++) {
		int64_t lo = s->v[i].a > a ? s->v[i].a : a, hi = s->v[i].b < b ? s->v[i].b : b;
		if (hi <= lo)
			continue;
		sum += hi - lo;
		if (by_tag && s->v[i].tag >= 0 && s->v[i].tag < ntags)
			by_tag[s->v[i].tag] += hi - lo;
	}
	return sum;
}

int64_t ddl_ivset_length(const struct ddl_ivset *s)
{
	int64_t sum = 0;
	for (size_t i = 0; i < s->n; i++)
		sum += s->v[i].b - s->v[i].a;
	return sum;
}

void ddl_ivset_free(struct ddl_ivset *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
	s->nomem = 0;
}
