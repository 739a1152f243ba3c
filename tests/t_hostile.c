/*
 * Trace files with times at the edges of what a clock can give, through
 * the reader and ddlprof-report: a header starting its clock before 1970
 * or after 2116 is refused, naming the file and the field; a clock sample
 * with such a time is damage; a file at the very edge still reads, its
 * times stay within trace_read.h's bounds, and the report's sums over
 * events saturate instead of wrapping. The sanitizer build (make check)
 * also sees any overflow on the way. A process of 60,000 threads, each
 * with its calls, a marker range and a counter, is reported whole, in
 * bounded time.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "ddlprof/chunk.h"
#include "test.h"
#include "trace_read.h"

#define HT_NSEND 8
#define HT_EDGE (INT64_C(1) << 62) /* 2116-02-20: the latest start accepted */

/* A piece of a trace file: a chunk's type and payload, or (type 0) raw bytes. */
struct ht_part {
	unsigned type;
	const void *p;
	size_t n;
};

/* Writes the N parts to PATH, each chunk behind its checked header; 0 or -1. */
static int ht_write(const char *path, const struct ht_part *v, size_t n)
{
	FILE *f = fopen(path, "wb");
	int ok = f != NULL;
	for (size_t i = 0; ok && i < n; i++) {
		struct ddl_chunk c = ddl_chunk_make(v[i].type, 0, v[i].p, (uint32_t)v[i].n, (uint32_t)v[i].n);
		ok = (!v[i].type || fwrite(&c, sizeof c, 1, f) == 1) && fwrite(v[i].p, 1, v[i].n, f) == v[i].n;
	}
	if (f && fclose(f))
		ok = 0;
	return ok ? 0 : -1;
}

/*
 * A trace on a 1 kHz tick (1 ms a tick, the slowest the reader takes)
 * whose header starts at MONO and REAL, with a second clock sample 500 s
 * later holding SAMPLE_REAL, and HT_NSEND sends each as long as the
 * format can say (2^48 ticks: capped at 2^61 ns). Written to PATH.
 */
static int ht_trace(const char *path, int64_t mono, int64_t real, int64_t sample_real)
{
	struct ddl_file_header h = {.ident = "DDL", .byte_order = DDL_BYTE_ORDER_MAGIC,
	                            .version = DDL_FORMAT_VERSION, .min_reader = 1,
	                            .header_size = sizeof h, .pid = 77, .rank = -1, .world_size = -1,
	                            .local_rank = -1, .clock_source = DDL_CLOCK_TSC, .tick_hz = 1000,
	                            .start_ticks = 1000000, .start_mono_ns = mono,
	                            .start_real_ns = real, .host = "edge", .run_id = "hostile-1"};
	h.ident[3] = 'T'; /* "DDLT" has no room for its NUL in the initializer */
	h.hcrc = ddl_crc32c(&h, offsetof(struct ddl_file_header, hcrc));
	/* wrapping: MONO may be anything */
	struct ddl_clock_sample s = {h.start_ticks + 500000,
	                             (int64_t)((uint64_t)mono + 500000000000u), sample_real};
	struct ddl_event ev[HT_NSEND];
	memset(ev, 0, sizeof ev);
	for (int i = 0; i < HT_NSEND; i++) {
		ev[i].start = h.start_ticks + 1000 * (uint64_t)i;
		ev[i].dur = UINT32_MAX;
		ev[i].kind = DDL_EV_SEND;
		ev[i].flags = DDL_EVF_LONG;
		ev[i].result = 100;
		ev[i].fd = 3;
	}
	struct ddl_end end = {HT_NSEND, 0, DDL_END_EXIT, 0};
	const struct ht_part parts[] = {{0, &h, sizeof h},
	                                {DDL_CHUNK_CLOCK, &s, sizeof s},
	                                {DDL_CHUNK_EVENTS, ev, sizeof ev},
	                                {DDL_CHUNK_END, &end, sizeof end}};
	return ht_write(path, parts, sizeof parts / sizeof *parts);
}

int test_reader_hostile_times(void)
{
	char *dir = tmpdir(), path[PATH_MAX], err[512];
	snprintf(path, sizeof path, "%s/edge.ddlt", dir);
	const int64_t s500 = 500 * INT64_C(1000000000);
	static const struct {
		int64_t mono, real;
		const char *field; /* NULL: accepted */
	} hdr[] = {
		{0, 0, NULL},
		{HT_EDGE - s500, HT_EDGE - s500, NULL},
		{HT_EDGE, HT_EDGE, NULL},
		{1, -1, "start_real_ns -1 is not a time between 1970 and 2116"},
		{1, HT_EDGE + 1, "start_real_ns"},
		{1, INT64_MIN, "start_real_ns"},
		{-1, 1, "start_mono_ns -1 is not a CLOCK_MONOTONIC reading"},
		{INT64_MAX, 1, "start_mono_ns"},
	};
	for (size_t i = 0; i < sizeof hdr / sizeof *hdr; i++) {
		CHECK(ht_trace(path, hdr[i].mono, hdr[i].real, hdr[i].real) == 0, "cannot write %s", path);
		struct ddl_trace t;
		int rc = ddl_trace_read(path, &t, err, sizeof err);
		if (hdr[i].field) {
			CHECK(rc < 0 && !strncmp(err, path, strlen(path)) && strstr(err, hdr[i].field),
			      "header %zu: rc %d, '%s'", i, rc, rc < 0 ? err : "");
		} else {
			CHECK(rc == 0, "header %zu refused: %s", i, err);
			/* the start sample, and the second unless it is past 2^62 */
			CHECK(t.nev == HT_NSEND && t.nclk == (hdr[i].mono + s500 <= HT_EDGE ? 2u : 1u),
			      "header %zu: %zu events, %zu samples", i, t.nev, t.nclk);
			for (size_t k = 0; k < t.nev; k++) {
				int64_t a = ddl_trace_real_ns(&t, t.ev[k].start), d = ddl_trace_dur_ns(&t, &t.ev[k]);
				int64_t m = ddl_trace_mono_ns(&t, t.ev[k].start);
				CHECK(a >= DDL_NS_MIN && a <= DDL_NS_MAX && m >= DDL_NS_MIN && m <= DDL_NS_MAX,
				      "header %zu event %zu at %lld / %lld", i, k, (long long)a, (long long)m);
				CHECK(d == DDL_DUR_MAX, "header %zu event %zu lasts %lld ns", i, k, (long long)d);
			}
			CHECK(ddl_trace_real_ns(&t, UINT64_MAX) <= DDL_NS_MAX &&
			      ddl_trace_real_ns(&t, 0) >= DDL_NS_MIN, "header %zu: unclamped ends", i);
		}
		ddl_trace_free(&t);
	}
	/* a clock sample no clock gives is damage: its chunk is skipped, named */
	static const int64_t bad[] = {-1, HT_EDGE + 1, INT64_MIN, INT64_MAX};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		CHECK(ht_trace(path, 1000000000, 1767225600000000000, bad[i]) == 0, "cannot write");
		struct ddl_trace t;
		CHECK(ddl_trace_read(path, &t, err, sizeof err) == 0, "%s", err);
		int named = 0;
		for (int k = 0; k < t.nproblems; k++)
			named |= strstr(t.problems[k], path) && strstr(t.problems[k], "realtime") &&
			         strstr(t.problems[k], "(damaged or forged times; chunk skipped)");
		CHECK(t.corrupt && t.nclk == 1 && named, "sample real %lld: corrupt %d, %zu samples",
		      (long long)bad[i], t.corrupt, t.nclk);
		ddl_trace_free(&t);
	}
	trm(dir);
	return DDL_PASS;
}

int test_report_hostile_sums(void)
{
	char *dir = tmpdir(), path[PATH_MAX];
	snprintf(path, sizeof path, "%s/edge.ddlt", dir);
	const int64_t s500 = 500 * INT64_C(1000000000);
	CHECK(ht_trace(path, HT_EDGE - s500, HT_EDGE - s500, HT_EDGE) == 0, "cannot write %s", path);
	int status;
	json_t *rep = treport(dir, &status);
	CHECK(rep && status == 0, "ddlprof-report --json status %d", status);
	json_t *p = tproc(rep, 77);
	CHECK(p, "no process 77 in the report");
	json_t *net = json_object_get(p, "network");
	double in_calls = json_number_value(json_object_get(net, "time_in_calls_s"));
	double wall = json_number_value(json_object_get(p, "wall_s"));
	/* 8 sends of 2^61 ns: the sum saturates at INT64_MAX ns, not wraps */
	CHECK(json_integer_value(json_object_get(net, "calls")) == HT_NSEND, "calls");
	CHECK(fabs(in_calls / ((double)INT64_MAX / 1e9) - 1) < 1e-4, "time in calls %g s", in_calls);
	CHECK(wall >= 0 && wall < 1e6, "wall %g s", wall);
	json_decref(rep);
	trm(dir);
	return DDL_PASS;
}

/*
 * A process of HT_THREADS threads, each with its own thread record (OS
 * id HT_TID0 + i, name "w<i>"), a marker range "step" and in it HT_CALLS
 * socket calls on a local peer, sends and receives of 10 + i % 90 bytes
 * in turn, and a counter read at both of the range's markers (--papi);
 * written to PATH. The events lie one microsecond apart on a 1 GHz clock.
 * A third of them under AddressSanitizer, which is there for what the
 * report touches, not for how long it takes.
 */
#if defined(__SANITIZE_ADDRESS__)
#define HT_THREADS 20000
#else
#define HT_THREADS 60000
#endif
#define HT_CALLS 2
#define HT_TID0 100000u

static int ht_threads(const char *path)
{
	struct ddl_file_header h = {.ident = "DDL", .byte_order = DDL_BYTE_ORDER_MAGIC,
	                            .version = DDL_FORMAT_VERSION, .min_reader = 1,
	                            .header_size = sizeof h, .pid = 78, .rank = -1, .world_size = -1,
	                            .local_rank = -1, .clock_source = DDL_CLOCK_MONOTONIC,
	                            .tick_hz = 1000000000, .start_ticks = 1000000000,
	                            .start_mono_ns = 1000000000, .start_real_ns = 1767225600000000000,
	                            .host = "many", .run_id = "threads-1"};
	h.ident[3] = 'T';
	h.hcrc = ddl_crc32c(&h, offsetof(struct ddl_file_header, hcrc));
	size_t per = HT_CALLS + 4, nev = (size_t)HT_THREADS * per, ns = 0;
	struct ddl_event *ev = calloc(nev, sizeof *ev);
	unsigned char *str = malloc((size_t)HT_THREADS * 32 + 64);
	if (!ev || !str)
		return -1;
	struct ddl_strrec peer = {1, DDL_STR_PEER, 4, DDL_PEERF_LOCAL | 1u << 8};
	struct ddl_strrec step = {1, DDL_STR_NAME, 4, 0}, ctr = {1, DDL_STR_COUNTER, 10, 0};
	memcpy(str, &peer, sizeof peer);
	memcpy(str + sizeof peer, "unix", 4);
	memcpy(str + sizeof peer + 4, &step, sizeof step);
	memcpy(str + 2 * sizeof peer + 4, "step", 4);
	memcpy(str + 2 * sizeof peer + 8, &ctr, sizeof ctr);
	memcpy(str + 3 * sizeof peer + 8, "TASK-CLOCK", 10);
	ns = 3 * sizeof peer + 18;
	for (size_t i = 0; i < HT_THREADS; i++) {
		char name[16];
		int len = snprintf(name, sizeof name, "w%zu", i);
		struct ddl_strrec r = {(uint32_t)i, DDL_STR_THREAD, (uint16_t)len, HT_TID0 + (uint32_t)i};
		memcpy(str + ns, &r, sizeof r);
		memcpy(str + ns + sizeof r, name, (size_t)len);
		ns += sizeof r + (size_t)len;
		for (size_t k = 0; k < per; k++) {
			struct ddl_event *e = &ev[i * per + k];
			e->start = h.start_ticks + 1000 * (i * per + k);
			e->tid = (uint16_t)i;
			if (k == 0 || k == per - 2) { /* the counter, read before each marker */
				e->kind = DDL_EV_COUNTER;
				e->result = (int64_t)(k * 1000);
				e->fd = 1;
				continue;
			}
			if (k == 1 || k == per - 1) { /* the range around the calls */
				e->kind = k == 1 ? DDL_EV_RANGE_PUSH : DDL_EV_RANGE_POP;
				e->result = k == 1;
				e->fd = -1;
				continue;
			}
			e->dur = 500;
			e->kind = k % 2 ? DDL_EV_SEND : DDL_EV_RECV;
			e->result = 10 + (int64_t)(i % 90);
			e->fd = 3;
			e->peer = 1;
		}
	}
	uint64_t span = 1000 * (uint64_t)nev + 1000000;
	struct ddl_clock_sample s = {h.start_ticks + span, h.start_mono_ns + (int64_t)span,
	                             h.start_real_ns + (int64_t)span};
	struct ddl_end end = {nev, 0, DDL_END_EXIT, 0};
	const struct ht_part parts[] = {{0, &h, sizeof h},
	                                {DDL_CHUNK_STRINGS, str, ns},
	                                {DDL_CHUNK_EVENTS, ev, nev * sizeof *ev},
	                                {DDL_CHUNK_CLOCK, &s, sizeof s},
	                                {DDL_CHUNK_END, &end, sizeof end}};
	int rc = ht_write(path, parts, sizeof parts / sizeof *parts);
	free(ev);
	free(str);
	return rc;
}

/* Occurrences of WORD in [S, END), one pass (strstr in a loop goes over
 * the rest of S again at each, under AddressSanitizer's interceptor). */
static size_t ht_count(const char *s, const char *end, const char *word)
{
	size_t n = 0, len = strlen(word);
	for (; s && s + len <= end; s++)
		if (*s == *word && !strncmp(s, word, len)) {
			n++;
			s += len - 1;
		}
	return n;
}

/* CPU seconds the children reaped so far have used. */
static double ht_child_cpu(void)
{
	struct rusage u;
	getrusage(RUSAGE_CHILDREN, &u);
	return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
	       (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

/*
 * HT_THREADS threads in one process: every one reported with its calls,
 * bytes and iteration, in JSON and text, and --chrome written, each in
 * well under 5 s of CPU time (CPU, not wall: a loaded machine must not
 * fail it). A search of the threads at every event took 6.5 s for a real
 * trace of 70,000 threads, and of their marker stacks 44 s for this one.
 */
int test_report_many_threads(void)
{
	char *dir = tmpdir(), path[PATH_MAX];
	snprintf(path, sizeof path, "%s/threads.ddlt", dir);
	CHECK(ht_threads(path) == 0, "cannot write %s", path);
	uint64_t bytes = 0;
	for (size_t i = 0; i < HT_THREADS; i++)
		bytes += HT_CALLS / 2 * (10 + i % 90);
	static const char *const how[] = {"--json", "--format=text", "--chrome"};
	for (int f = 0; f < 3; f++) {
		char *argv[] = {(char *)tbuild("bin/ddlprof-report"), "-q", (char *)how[f], dir, NULL};
		struct ddl_run_result r;
		double t0 = tnow(), c0 = ht_child_cpu();
		CHECK(trun(argv, NULL, 300, &r) == 0, "the report did not finish");
		double took = tnow() - t0, cpu = ht_child_cpu() - c0;
		fprintf(stderr, "    %s: %.2f s CPU, %.2f s\n", how[f], cpu, took);
		CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "status %#x: %s", r.status, r.err);
		if (f == 0) {
			json_t *j = json_loads(r.out, 0, NULL), *p = tproc(j, 78);
			json_t *th = json_object_get(p, "threads"), *x;
			CHECK(json_array_size(th) == HT_THREADS, "%zu threads reported", json_array_size(th));
			CHECK(json_integer_value(json_object_get(p, "events")) == HT_THREADS * (HT_CALLS + 4) &&
			      json_integer_value(tjget(p, "network.calls")) == HT_THREADS * HT_CALLS &&
			      (uint64_t)json_integer_value(tjget(p, "network.bytes_sent")) == bytes &&
			      (uint64_t)json_integer_value(tjget(p, "network.bytes_received")) == bytes &&
			      json_integer_value(tjget(p, "network.peers_local")) == 1,
			      "process: %lld events, %lld calls, %lld bytes sent",
			      (long long)json_integer_value(json_object_get(p, "events")),
			      (long long)json_integer_value(tjget(p, "network.calls")),
			      (long long)json_integer_value(tjget(p, "network.bytes_sent")));
			size_t i;
			json_array_foreach(th, i, x) { /* in the order of their first call */
				char name[16];
				snprintf(name, sizeof name, "w%zu", i);
				json_int_t b = 10 + (json_int_t)(i % 90);
				const char *nm = json_string_value(json_object_get(x, "name"));
				CHECK(json_integer_value(json_object_get(x, "tid")) == HT_TID0 + (json_int_t)i &&
				      nm && !strcmp(nm, name) &&
				      json_integer_value(tjget(x, "network.calls")) == HT_CALLS &&
				      json_integer_value(tjget(x, "network.bytes_sent")) == HT_CALLS / 2 * b &&
				      json_integer_value(tjget(x, "network.bytes_received")) == HT_CALLS / 2 * b &&
				      json_integer_value(tjget(x, "network.peers_local")) == 1,
				      "thread %zu as reported: %s", i, json_dumps(x, JSON_COMPACT));
			}
			/* a counter row for each thread */
			json_t *ct = tjget(p, "counters.threads");
			CHECK(json_array_size(ct) == HT_THREADS &&
			      json_integer_value(json_object_get(json_array_get(ct, HT_THREADS - 1), "tid")) ==
			          HT_TID0 + HT_THREADS - 1,
			      "%zu counter rows", json_array_size(ct));
			/* the training thread's one range: the thread whose iteration is longest */
			json_t *rk = json_array_get(json_object_get(j, "ranks"), 0);
			const char *method = json_string_value(tjget(j, "job.iteration_method"));
			CHECK(json_integer_value(json_object_get(rk, "iterations")) == 1 && method &&
			      !strcmp(method, "markers"), "iterations: %lld by %s",
			      (long long)json_integer_value(json_object_get(rk, "iterations")), method);
			json_decref(j);
		} else if (f == 1) {
			/* in the network table (the counters have one each too) */
			const char *net = strstr(r.out, "\nNetwork activity by process and thread\n");
			size_t rows = ht_count(net, r.out + r.nout, "\n    thread ");
			char last[64];
			snprintf(last, sizeof last, "\n    thread %u w%u ", HT_TID0 + HT_THREADS - 1, HT_THREADS - 1);
			CHECK(rows == HT_THREADS && strstr(r.out, last), "%zu thread rows", rows);
		} else {
			size_t named = ht_count(r.out, r.out + r.nout, "\"thread_name\"");
			CHECK(named >= HT_THREADS, "%zu tracks named in --chrome", named);
		}
		trun_free(&r);
		CHECK(cpu < 5, "%.1f s of CPU", cpu);
	}
	trm(dir);
	return DDL_PASS;
}
