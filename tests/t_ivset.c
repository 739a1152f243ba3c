/*
 * The analyzer's interval sets (analyzer/ivset.c), against the plainest
 * model there is: a bitmap of the instants 0..N-1, for random sets; and
 * the cuts that split a span where what covers it may change; and the
 * sort by start, stable, against a reference; and merging as a set fills
 * up against merging once.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ivset.h"
#include "keep.h"
#include "test.h"

#define DDL_N 2000

static void ddl_fill(struct ddl_ivset *s, unsigned char *map, int tag, unsigned *seed, int count)
{
	for (int i = 0; i < count; i++) {
		int a = (int)(rand_r(seed) % DDL_N), len = (int)(rand_r(seed) % 60);
		int b = a + len > DDL_N ? DDL_N : a + len;
		ddl_ivset_push(s, a, b, tag);
		for (int x = a; x < b; x++)
			map[x] |= (unsigned char)(1 << tag);
	}
}

int test_ivset_against_bitmap(void)
{
	unsigned seed = 12345;
	for (int round = 0; round < 200; round++) {
		struct ddl_ivset s = {0}, t = {0};
		unsigned char ms[DDL_N] = {0}, mt[DDL_N] = {0};
		ddl_fill(&s, ms, 0, &seed, (int)(rand_r(&seed) % 40));
		ddl_fill(&s, ms, 1, &seed, (int)(rand_r(&seed) % 10));
		ddl_fill(&t, mt, 0, &seed, (int)(rand_r(&seed) % 40));
		ddl_ivset_merge(&s, 0);
		ddl_ivset_merge(&t, 0);
		for (size_t i = 1; i < s.n; i++)
			CHECK(s.v[i - 1].b < s.v[i].a, "round %d: merged set not disjoint", round);
		int64_t len = 0;
		for (int x = 0; x < DDL_N; x++) {
			len += ms[x] != 0;
			CHECK(ddl_ivset_covers(&s, x) == (ms[x] != 0), "round %d: covers(%d)", round, x);
		}
		CHECK(ddl_ivset_length(&s) == len, "round %d: length", round);
		/* overlap of random spans, in order (resuming) and not, by tag */
		size_t from = 0;
		int a = 0;
		for (int k = 0; k < 30; k++) {
			a += (int)(rand_r(&seed) % 80);
			int b = a + (int)(rand_r(&seed) % 200);
			int64_t want = 0;
			for (int x = a; x < b && x < DDL_N; x++)
				want += ms[x] != 0;
			int64_t by[4] = {0};
			int64_t got = ddl_ivset_overlap(&s, &from, a, b, by, 4);
			CHECK(got == want, "round %d: overlap [%d,%d) %lld, want %lld", round, a, b,
			      (long long)got, (long long)want);
			CHECK(ddl_ivset_overlap(&s, NULL, a, b, NULL, 0) == want, "round %d: overlap anew", round);
			/* a merged interval's tag is the OR of its parts' (0 to 3 here) */
			CHECK(by[0] + by[1] + by[2] + by[3] == got, "round %d: tags add up", round);
		}
		/* cuts of a span by both sets: its ends, and every instant inside where one of
		 * them starts or ends (there, and only there, what covers it may change) */
		int64_t *cut = NULL;
		size_t cap = 0;
		const struct ddl_ivset *both[] = {&s, &t};
		for (int k = 0; k < 20; k++) {
			int a = (int)(rand_r(&seed) % DDL_N), b = a + (int)(rand_r(&seed) % 400);
			b = b > DDL_N ? DDL_N : b;
			long n = ddl_ivset_cuts(both, 2, a, b, &cut, &cap);
			CHECK(n >= 2 && cut[0] == a && cut[n - 1] == b, "round %d: cuts of [%d,%d): %ld", round, a,
			      b, n);
			for (long j = 1; j < n; j++)
				CHECK(cut[j - 1] <= cut[j], "round %d: cuts not sorted", round);
			for (int x = a + 1; x < b; x++) {
				int change = (ms[x] != 0) != (ms[x - 1] != 0) || mt[x] != mt[x - 1], found = 0;
				for (long j = 1; j + 1 < n; j++)
					found |= cut[j] == x;
				CHECK(!change || found, "round %d: no cut at %d in [%d,%d)", round, x, a, b);
			}
			for (long j = 1; j + 1 < n; j++) {
				int x = (int)cut[j], edge = 0;
				for (size_t i = 0; i < s.n; i++)
					edge |= s.v[i].a == x || s.v[i].b == x;
				for (size_t i = 0; i < t.n; i++)
					edge |= t.v[i].a == x || t.v[i].b == x;
				CHECK(edge && x > a && x < b, "round %d: cut at %d is no interval's end", round, x);
			}
		}
		free(cut);
		/* subtract */
		CHECK(ddl_ivset_subtract(&s, &t) == 0, "subtract");
		for (int x = 0; x < DDL_N; x++)
			CHECK(ddl_ivset_covers(&s, x) == (ms[x] && !mt[x]), "round %d: s - t at %d", round, x);
		ddl_ivset_free(&s);
		ddl_ivset_free(&t);
	}
	/* merging with a gap joins what is closer than it */
	struct ddl_ivset g = {0};
	ddl_ivset_push(&g, 10, 20, 1);
	ddl_ivset_push(&g, 25, 30, 2);
	ddl_ivset_push(&g, 40, 50, 0);
	ddl_ivset_push(&g, 5, 5, 0); /* empty: not kept */
	ddl_ivset_merge(&g, 5);
	CHECK(g.n == 2 && g.v[0].a == 10 && g.v[0].b == 30 && g.v[0].tag == 3 && g.v[1].a == 40,
	      "gap merge: %zu intervals", g.n);
	ddl_ivset_free(&g);
	return DDL_PASS;
}

/* (a, then the order pushed): what a stable sort by start gives. */
static int iv_ref_cmp(const void *x, const void *y)
{
	const struct ddl_iv *p = x, *q = y;
	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	return p->tag < q->tag ? -1 : p->tag > q->tag; /* the tag holds the push order here */
}

/*
 * ddl_ivset_sort: by start, equal starts in the order pushed, for sets in
 * order already, reversed, of few distinct starts (many ties), of starts
 * spread over hours (four radix passes), with negative starts, small ones
 * (qsort's side), and runs in order one after another (2 to 9 of them,
 * each with ties inside and with the others: merged, past 8 sorted),
 * against a reference sort.
 */
int test_ivset_sort_stable(void)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	static const size_t sizes[] = {0, 1, 2, 63, 64, 65, 1000, 100000};
	static const int64_t spreads[] = {1, 7, 2048, 1000000, INT64_C(10000000000), INT64_C(4000000000000),
	                                  INT64_MAX / 2};
	for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
		for (size_t sp = 0; sp < sizeof spreads / sizeof spreads[0]; sp++)
			for (int shape = 0; shape < 6; shape++) {
				size_t n = sizes[si];
				/* shapes 4 and 5: NR runs, each in order */
				size_t nr = shape == 4 ? 2 + sp % 7 : 3 + sp, run = n / nr + 1;
				struct ddl_ivset s = {0};
				for (size_t i = 0; i < n; i++) {
					seed = seed * 6364136223846793005ull + 1442695040888963407ull;
					int64_t a = (int64_t)((seed >> 11) % (uint64_t)spreads[sp]);
					if (shape == 1)
						a = (int64_t)i * (spreads[sp] / (int64_t)(n ? n : 1) + 1); /* in order */
					if (shape == 2)
						a = (int64_t)(n - i) * 3; /* reversed */
					if (shape == 3)
						a -= spreads[sp] / 2; /* negative starts too */
					if (shape >= 4) /* every second start repeated; the runs' starts alike */
						a = (int64_t)(i % run / 2) * (spreads[sp] / (int64_t)run + 1) - (int64_t)(i / run);
					if (shape == 3 && spreads[sp] == INT64_MAX / 2 && i % 7 == 0)
						a = i % 2 ? INT64_MIN / 2 + (int64_t)i : INT64_MAX / 2 - 64; /* a span near 2^63 */
					CHECK(ddl_ivset_push(&s, a, a + 1 + (int64_t)(i % 5), (int)i) == 0, "push");
				}
				struct ddl_iv *ref = malloc((n ? n : 1) * sizeof *ref);
				CHECK(ref, "malloc");
				for (size_t i = 0; i < n; i++)
					ref[i] = s.v[i];
				qsort(ref, n, sizeof *ref, iv_ref_cmp);
				ddl_ivset_sort(&s);
				for (size_t i = 0; i < n; i++)
					CHECK(s.v[i].a == ref[i].a && s.v[i].b == ref[i].b && s.v[i].tag == ref[i].tag,
					      "n %zu, spread %lld, shape %d: at %zu (%lld, %d), not (%lld, %d)", n,
					      (long long)spreads[sp], shape, i, (long long)s.v[i].a, s.v[i].tag,
					      (long long)ref[i].a, ref[i].tag);
				free(ref);
				ddl_ivset_free(&s);
			}
	return DDL_PASS;
}

/* ddl_ivset_push_merging gives what pushing everything and merging once
 * does, for gaps of 0 and more, with tags OR'ed alike. */
int test_ivset_push_merging(void)
{
	unsigned seed = 7;
	static const int64_t gaps[] = {0, 3, 50, 1000};
	for (size_t g = 0; g < sizeof gaps / sizeof gaps[0]; g++)
		for (int round = 0; round < 4; round++) {
			struct ddl_ivset all = {0}, inc = {0};
			int count = 5000 + round * 9000; /* past the 4096 a set merges from, every round */
			for (int i = 0; i < count; i++) {
				/* sparse sets, and dense ones that merge into few */
				int64_t a = rand_r(&seed) % (round < 2 ? 400000 : 20000), len = 1 + rand_r(&seed) % 40;
				int tag = 1 << (rand_r(&seed) % 3);
				CHECK(ddl_ivset_push(&all, a, a + len, tag) == 0, "push");
				CHECK(ddl_ivset_push_merging(&inc, a, a + len, tag, gaps[g]) == 0, "push_merging");
			}
			ddl_ivset_merge(&all, gaps[g]);
			ddl_ivset_merge(&inc, gaps[g]);
			CHECK(all.n == inc.n, "gap %lld, %d intervals: %zu merged, %zu merged along the way",
			      (long long)gaps[g], count, all.n, inc.n);
			for (size_t i = 0; i < all.n; i++)
				CHECK(all.v[i].a == inc.v[i].a && all.v[i].b == inc.v[i].b && all.v[i].tag == inc.v[i].tag,
				      "gap %lld: interval %zu differs", (long long)gaps[g], i);
			CHECK(inc.cap < all.cap || count < 8192 || all.n * 4 > (size_t)count,
			      "gap %lld: merging along the way kept room for %zu, as many as %zu", (long long)gaps[g],
			      inc.cap, all.cap);
			ddl_ivset_free(&all);
			ddl_ivset_free(&inc);
		}
	return DDL_PASS;
}

/*
 * ddl_ivset_add gives what ddl_ivset_push does once merged, for any gap:
 * calls recorded after the calls made inside them (each inner run, then
 * the call around it), with tags the outer call has and one it lacks
 * (kept: its tag joins the merged interval's), and random sets; and the
 * nested pushes leave the set in order, one interval per outer call.
 */
int test_ivset_add(void)
{
	unsigned seed = 99;
	static const int64_t gaps[] = {0, 2, 100};
	for (size_t g = 0; g < sizeof gaps / sizeof gaps[0]; g++)
		for (int round = 0; round < 6; round++) {
			struct ddl_ivset all = {0}, add = {0};
			int64_t t = 0;
			size_t outer = 0;
			for (int k = 0; k < 3000; k++) {
				if (round < 3) { /* an outer call and the calls made inside it */
					int64_t a = t, b = a + 1000;
					int inner = rand_r(&seed) % 8, lacks = round == 2 && k % 5 == 0;
					for (int i = 0; i < inner; i++) {
						int64_t x = a + 1 + i * 100, y = x + 1 + rand_r(&seed) % 99;
						int tag = lacks && i == inner - 1 ? 2 : 1;
						CHECK(ddl_ivset_push(&all, x, y, tag) == 0, "push");
						CHECK(ddl_ivset_add(&add, x, y, tag) == 0, "add");
					}
					if (round == 1 && k % 3 == 0) /* a call that ends past the outer one: not inside */
						CHECK(ddl_ivset_add(&add, b - 10, b + 20, 1) == 0 &&
						      ddl_ivset_push(&all, b - 10, b + 20, 1) == 0, "past the end");
					CHECK(ddl_ivset_push(&all, a, b, 1) == 0, "push");
					CHECK(ddl_ivset_add(&add, a, b, 1) == 0, "add");
					outer++;
					t = b + 50 + rand_r(&seed) % 200;
				} else { /* random: few contain the last ones */
					int64_t a = rand_r(&seed) % (round == 3 ? 300000 : 5000);
					int64_t b = a + 1 + rand_r(&seed) % (round == 5 ? 2000 : 40);
					int tag = 1 << (rand_r(&seed) % 3);
					CHECK(ddl_ivset_push(&all, a, b, tag) == 0, "push");
					CHECK(ddl_ivset_add(&add, a, b, tag) == 0, "add");
				}
			}
			if (round == 0) {
				CHECK(add.n == outer, "nested calls: %zu intervals kept, %zu outer calls", add.n, outer);
				for (size_t i = 1; i < add.n; i++)
					CHECK(add.v[i - 1].a < add.v[i].a, "nested calls: out of order at %zu", i);
			}
			ddl_ivset_merge(&all, gaps[g]);
			ddl_ivset_merge(&add, gaps[g]);
			CHECK(all.n == add.n, "gap %lld, round %d: %zu merged, %zu added", (long long)gaps[g], round,
			      all.n, add.n);
			for (size_t i = 0; i < all.n; i++)
				CHECK(all.v[i].a == add.v[i].a && all.v[i].b == add.v[i].b && all.v[i].tag == add.v[i].tag,
				      "gap %lld, round %d: interval %zu differs", (long long)gaps[g], round, i);
			ddl_ivset_free(&all);
			ddl_ivset_free(&add);
		}
	return DDL_PASS;
}

/*
 * Room kept from one process to the next (keep.h, ddl_ivset_keep): a set
 * given back under a slot comes back empty with its array and room, on
 * the same thread only, once; a slot holds one array; past
 * DDL_KEEP_BYTES in all a thread keeps nothing more; a set built in
 * kept room (and subtracted, which swaps its array with the one kept for
 * that) is the same set.
 */
static void *ddl_keep_other_thread(void *arg)
{
	struct ddl_ivset *s = arg;
	ddl_ivset_reuse(s, 3); /* another thread's room: none kept here */
	return NULL;
}

int test_ivset_kept_room(void)
{
	struct ddl_ivset s = {0}, t = {0}, u;
	for (int i = 0; i < 5000; i++)
		ddl_ivset_push(&s, 10 * i, 10 * i + 5, 0);
	struct ddl_iv *v = s.v;
	size_t cap = s.cap;
	ddl_ivset_keep(&s, 3);
	CHECK(!s.v && !s.n && !s.cap, "kept set not emptied");
	pthread_t th;
	CHECK(pthread_create(&th, NULL, ddl_keep_other_thread, &u) == 0, "thread");
	pthread_join(th, NULL);
	CHECK(!u.v && !u.cap, "another thread got this one's room");
	ddl_ivset_reuse(&u, 3);
	CHECK(u.v == v && u.cap == cap && u.n == 0 && !u.nomem, "room back: %p/%zu of %p/%zu", (void *)u.v,
	      u.cap, (void *)v, cap);
	ddl_ivset_reuse(&t, 3);
	CHECK(!t.v, "the slot's room given twice");
	/* in kept room, pushed, merged and subtracted: as in a new set */
	unsigned seed = 7;
	unsigned char ms[DDL_N] = {0}, mt[DDL_N] = {0};
	ddl_fill(&u, ms, 0, &seed, 50);
	ddl_fill(&t, mt, 0, &seed, 30);
	ddl_ivset_merge(&u, 0);
	ddl_ivset_merge(&t, 0);
	for (int round = 0; round < 2; round++) { /* the second: the subtraction's kept room */
		struct ddl_ivset w;
		ddl_ivset_reuse(&w, 4);
		for (size_t i = 0; i < u.n; i++)
			ddl_ivset_push(&w, u.v[i].a, u.v[i].b, 0);
		CHECK(ddl_ivset_subtract(&w, &t) == 0, "subtract");
		for (int x = 0; x < DDL_N; x++)
			CHECK(ddl_ivset_covers(&w, x) == (ms[x] && !mt[x]), "round %d: w - t at %d", round, x);
		ddl_ivset_keep(&w, 4);
	}
	/* a thread keeps DDL_KEEP_BYTES at most: a set larger than that is freed */
	struct ddl_ivset big = {0};
	while (big.cap * sizeof *big.v <= DDL_KEEP_BYTES)
		CHECK(ddl_ivset_push(&big, (int64_t)big.n, (int64_t)big.n + 1, 0) == 0, "push");
	ddl_ivset_keep(&big, 5);
	ddl_ivset_reuse(&big, 5);
	CHECK(!big.v, "%zu bytes kept, past %zu", big.cap * sizeof *big.v, (size_t)DDL_KEEP_BYTES);
	ddl_ivset_free(&u);
	ddl_ivset_free(&t);
	ddl_ivset_reuse(&s, 4); /* the room the rounds kept, given back */
	ddl_ivset_free(&s);
	return DDL_PASS;
}
