/*
 * libFuzzer target for the trace reader: any bytes as a trace file, read
 * whole from memory (ddl_trace_parse) and streamed from a file
 * (ddl_trace_stream, through a memfd as /proc/self/fd/N), then every
 * accessor the tools use on what was read: args, stacks, names, streams,
 * communicators, counters, peers, threads, clock conversions and meta.
 * The reader must never crash, leak or read out of bounds, must always
 * name the input and the problem when it refuses it or skips part of it,
 * and the two paths must agree on what the file holds.
 * Every chunk carries a CRC32C: trace_mutator.h's mutator gets past them.
 * Built by `make fuzz` with clang's -fsanitize=fuzzer,address,undefined;
 * seeds in tests/fuzz/seeds (tests/t_fuzzseeds.c reads them in every
 * build; craft_seeds.py wrote the crafted ones).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "trace_read.h"
#include "trace_mutator.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fz_stream {
	uint64_t events;  /* handed over */
	uint64_t calls;
	uint64_t stop_at; /* stop after this many calls (0: never) */
	uint64_t sink;
};

/* Streaming callback: touches every event as report code does. */
static int fz_on_events(void *ctx, const struct ddl_trace *t, const struct ddl_event *ev, size_t n)
{
	struct fz_stream *s = ctx;
	if (n && (uintptr_t)ev % _Alignof(struct ddl_event))
		abort(); /* the caller may use the records as they are */
	for (size_t i = 0; i < n; i++)
		s->sink += ev[i].start + ev[i].dur + (uint64_t)ev[i].result + ev[i].kind;
	s->sink += (uint64_t)t->npeers;
	s->events += n;
	return ++s->calls == s->stop_at;
}

/* A string of a table, if the id is in it. */
static size_t fz_len(const char *s)
{
	return s ? strlen(s) : 0;
}

/* Uses everything the reader gave, as the report does. */
static uint64_t fz_use(const struct ddl_trace *t)
{
	uint64_t sink = 0; /* unsigned: sums of hostile timestamps may wrap */
	for (size_t i = 0; i < t->nev; i++) {
		const struct ddl_event *e = &t->ev[i];
		sink += (uint64_t)ddl_trace_mono_ns(t, e->start) + (uint64_t)ddl_trace_real_ns(t, e->start) +
		        (uint64_t)ddl_trace_dur_ns(t, e);
		int cls = ddl_event_class(e->kind);
		sink += strlen(ddl_event_name(e->kind)) + (unsigned)ddl_event_is_net(e->kind);
		if (e->tid < t->nthreads)
			sink += fz_len(t->threads[e->tid].name);
		if (cls >= DDL_CLASS_LAUNCH && cls <= DDL_CLASS_DEVICE) {
			if (e->peer < t->nstreams)
				sink += fz_len(t->streams[e->peer].text) + (uint64_t)t->streams[e->peer].dev;
		} else if (e->peer < t->npeers) {
			sink += fz_len(t->peers[e->peer].text) + (uint64_t)t->peers[e->peer].local;
		}
		if (e->kind == DDL_EV_COUNTER && e->fd >= 0 && (size_t)e->fd < t->ncounters)
			sink += fz_len(t->counters[e->fd].text);
		if (cls == DDL_CLASS_MARK && e->result > 0)
			sink += fz_len(ddl_trace_name(t, (uint64_t)e->result));
		const struct ddl_args *a = ddl_event_args(t, i);
		if (a) {
			if ((const struct ddl_event *)a != e + 1 || a->kind != DDL_EV_ARGS)
				abort(); /* the record right after, of kind args */
			sink += a->bytes + fz_len(ddl_trace_name(t, a->name));
			const struct ddl_comm_info *c = ddl_trace_comm(t, a->comm);
			if (c) {
				if (c->id != a->comm || !memchr(c->host, 0, sizeof c->host) ||
				    !memchr(c->how, 0, sizeof c->how))
					abort();
				sink += c->key + (uint64_t)c->nranks + strlen(c->host) + strlen(c->how);
			}
		}
		uint32_t st = ddl_event_stack(t, i);
		if (st) {
			if (!(e->flags & DDL_EVF_STACK))
				abort();
			if (st < t->nstacks)
				sink += fz_len(t->stacks[st].text);
		}
	}
	for (size_t i = 1; i < t->nmodules; i++)
		sink += fz_len(t->modules[i].text);
	for (size_t i = 0; i < t->nclk; i++)
		sink += (uint64_t)ddl_trace_mono_ns(t, t->clk[i].ticks);
	if (!(t->ns_per_tick >= 1e-3 && t->ns_per_tick <= 1e6))
		abort(); /* the clock fit stays within the bounds it promises */
	sink += fz_len(ddl_trace_meta(t, "cmdline")) + fz_len(ddl_trace_meta(t, ""));
	if (t->hdr.host[DDL_HOST_MAX - 1] || t->hdr.run_id[DDL_RUNID_MAX - 1])
		abort(); /* header strings are terminated */
	return sink;
}

/* Every problem names the file and the offset. */
static void fz_check_problems(const struct ddl_trace *t, const char *name)
{
	char prefix[64];
	int n = snprintf(prefix, sizeof prefix, "%s: offset ", name);
	for (int i = 0; i < t->nproblems; i++)
		if (strncmp(t->problems[i], prefix, (size_t)n))
			abort();
	if ((t->corrupt || t->truncated) && !t->nproblems)
		abort(); /* damage is never silent */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct ddl_trace t;
	char err[512] = "";
	int rc = ddl_trace_parse(data, size, "fuzz.ddlt", &t, err, sizeof err);
	if (rc < 0) {
		if (strncmp(err, "fuzz.ddlt: ", 11))
			abort(); /* every refusal names the file */
	} else {
		fz_check_problems(&t, "fuzz.ddlt");
		volatile uint64_t sink = fz_use(&t);
		(void)sink;
	}

	/* The same bytes streamed from a file. */
	if (fd < 0 && (fd = memfd_create("fuzz_trace", 0)) < 0)
		abort();
	if (ftruncate(fd, 0) < 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		abort();
	char path[32];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	struct fz_stream s = {0, 0, size ? data[size - 1] % 4 : 0, 0}; /* some stop early */
	struct ddl_trace ts;
	char serr[512] = "";
	int src = ddl_trace_stream(path, &ts, fz_on_events, &s, serr, sizeof serr);
	if (src != rc)
		abort(); /* both readers take or refuse the file */
	if (src < 0) {
		size_t k = strlen(path);
		if (strncmp(serr, path, k) || strncmp(serr + k, ": ", 2) || strcmp(serr + k, err + 9))
			abort(); /* the same refusal, naming the file */
	} else {
		fz_check_problems(&ts, path);
		if (ts.nev || ts.nstreamed != s.events)
			abort(); /* streamed events are handed over, not kept */
		if (!ts.stream_stopped &&
		    (s.events != t.nev || ts.nproblems != t.nproblems || ts.corrupt != t.corrupt ||
		     ts.truncated != t.truncated || ts.ended != t.ended || ts.nclk != t.nclk ||
		     ts.npeers != t.npeers || ts.nnames != t.nnames))
			abort(); /* a whole stream sees what a whole read sees */
		if (ts.stream_stopped && s.events > t.nev)
			abort();
		volatile uint64_t sink = fz_use(&ts) + s.sink;
		(void)sink;
	}
	ddl_trace_free(&ts);
	ddl_trace_free(&t);
	return 0;
}
