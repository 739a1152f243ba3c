/*
 * Trace reader: maps a trace file, checks the header, then walks the chunks.
 * Every chunk header and payload is checked (magic, CRC32C, bounds) before
 * any of it is used. A chunk that fails is recorded as a problem with its
 * byte offset and skipped; after a damaged chunk header the reader scans
 * forward for the next valid one. A file that ends inside a chunk, or
 * without an end chunk, is marked truncated and everything before is kept.
 * Nothing in the file can make the reader read out of bounds, nor hand
 * out times that overflow where the report subtracts them: a header or a
 * clock sample reading before 1970 or after 2116 is refused, events far
 * outside the clock samples are damage, and conversions are clamped
 * (trace_read.h).
 * Compressed chunks (zstd or LZ4) are decoded into one buffer kept for the
 * whole file, with the decoders' bounds-checked calls: a payload that does
 * not decode to exactly raw_size bytes is damage, like a bad checksum.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <lz4.h>
#include <zstd.h>

#include "ddlprof/crc32c.h"
#include "trace_read.h"

static const char *const ddl_kind_names[] = {
	"none",
#define DDL_X_KIND(n, s, c) s,
	DDL_EVENT_KINDS(DDL_X_KIND)
#undef DDL_X_KIND
};

const char *ddl_event_name(unsigned kind)
{
	return kind < DDL_EV_COUNT ? ddl_kind_names[kind] : "unknown";
}

static void ddl_problem(struct ddl_trace *t, size_t off, const char *fmt, ...)
{
	if (t->nproblems >= DDL_READ_MAX_PROBLEMS)
		return;
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	size_t n = strlen(t->path) + strlen(msg) + 48;
	char *p = malloc(n);
	if (!p) {
		t->incomplete = 1; /* not all it should say is said */
		return;
	}
	snprintf(p, n, "%s: offset %zu: %s", t->path, off, msg);
	t->problems[t->nproblems++] = p;
}

size_t ddl_grow_cap(size_t cap, size_t need)
{
	size_t n = cap ? cap : 1024;
	while (n < need)
		n *= 2;
	return n;
}

int ddl_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = ddl_grow_cap(*cap, need);
	void *q = realloc(*p, n * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

static char *ddl_strndup(const char *s, size_t n)
{
	char *p = malloc(n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = 0;
	}
	return p;
}

/* Memory ran out: what the chunk at OFF holds is not all kept, and the
 * report must say it is incomplete (never as if complete). */
static void ddl_nomem(struct ddl_trace *t, size_t off)
{
	if (!t->incomplete)
		ddl_problem(t, off, "out of memory: the trace is not read in full");
	t->incomplete = 1;
}

/* The entries allocated behind a table of N entries indexed up to MAX: a
 * power of two, so a table grown an id at a time (a thread's, a name's) is
 * copied a few times, not once per id. */
static size_t ddl_table_cap(size_t n, size_t max)
{
	size_t c = 16;
	while (c < n)
		c *= 2;
	return c < max + 1 ? c : max + 1;
}

/*
 * Makes room for entry ID (at most MAX) in the table *V of *N entries of
 * ELEM bytes, new entries zeroed, *N then past it. 0, or -1 without memory
 * (the table as it was). Every table grown here has ddl_table_cap(*N)
 * entries allocated, or more.
 */
static int ddl_table_fit(void **v, size_t *n, size_t id, size_t max, size_t elem)
{
	if (id < *n)
		return 0;
	size_t nn = id + 1;
	if (!*v || ddl_table_cap(nn, max) > ddl_table_cap(*n, max)) {
		void *q = realloc(*v, ddl_table_cap(nn, max) * elem);
		if (!q)
			return -1;
		*v = q;
	}
	memset((char *)*v + *n * elem, 0, (nn - *n) * elem);
	*n = nn;
	return 0;
}

/* Keeps TEXT as entry ID of an id-indexed table of T (the first one seen
 * wins); without memory, T is incomplete (the chunk at OFF). */
static void ddl_idtext_set(struct ddl_trace *t, size_t off, struct ddl_idtext **v, size_t *n,
                           uint32_t id, uint32_t value, const char *text, size_t len)
{
	if (id == 0 || id > (1u << 20))
		return;
	if (ddl_table_fit((void **)v, n, id, 1u << 20, sizeof **v) < 0) {
		ddl_nomem(t, off);
		return;
	}
	if (!(*v)[id].text) {
		if (!((*v)[id].text = ddl_strndup(text, len)))
			ddl_nomem(t, off);
		(*v)[id].value = value;
	}
}

static void ddl_read_strings(struct ddl_trace *t, const unsigned char *p, size_t n, size_t off)
{
	size_t i = 0;
	while (i + sizeof(struct ddl_strrec) <= n) {
		struct ddl_strrec r;
		memcpy(&r, p + i, sizeof r);
		i += sizeof r;
		if (r.len > n - i) {
			ddl_problem(t, off, "string record overruns its chunk");
			t->corrupt = 1;
			return;
		}
		const char *text = (const char *)p + i;
		i += r.len;
		if (r.kind == DDL_STR_PEER) {
			/* the library interns at most 8192 peers: a larger id is
			 * damage, and would cost a 24-byte entry per id below it */
			if (r.id > (1u << 20))
				continue;
			if (ddl_table_fit((void **)&t->peers, &t->npeers, r.id, 1u << 20,
			                  sizeof *t->peers) < 0) {
				ddl_nomem(t, off);
				return;
			}
			struct ddl_peer_info *pi = &t->peers[r.id];
			if (pi->text)
				continue; /* re-emitted after fork: same peer */
			pi->id = r.id;
			pi->local = (r.value & DDL_PEERF_LOCAL) != 0;
			pi->family = (int)(r.value >> 8);
			if (!(pi->text = ddl_strndup(text, r.len)))
				ddl_nomem(t, off); /* the peer unseen */
		} else if (r.kind == DDL_STR_THREAD) {
			if (r.id > 0xffff)
				continue;
			if (ddl_table_fit((void **)&t->threads, &t->nthreads, r.id, 0xffff,
			                  sizeof *t->threads) < 0) {
				ddl_nomem(t, off);
				return;
			}
			struct ddl_thread_info *ti = &t->threads[r.id];
			free(ti->name);
			ti->idx = r.id;
			ti->tid = r.value;
			if (!(ti->name = ddl_strndup(text, r.len)))
				ddl_nomem(t, off); /* the thread unnamed */
		} else if (r.kind == DDL_STR_NAME) {
			if (r.id > (1u << 20))
				continue;
			if (ddl_table_fit((void **)&t->names, &t->nnames, r.id, 1u << 20,
			                  sizeof *t->names) < 0) {
				ddl_nomem(t, off);
				return;
			}
			if (!t->names[r.id] && !(t->names[r.id] = ddl_strndup(text, r.len)))
				ddl_nomem(t, off);
		} else if (r.kind == DDL_STR_COMM) {
			if (r.id == 0 || r.id > (1u << 16))
				continue;
			if (ddl_table_fit((void **)&t->comms, &t->ncomms, r.id, 1u << 16,
			                  sizeof *t->comms) < 0) {
				ddl_nomem(t, off);
				return;
			}
			struct ddl_comm_info *ci = &t->comms[r.id];
			char buf[1100]; /* the writer cuts text to 1024 bytes */
			size_t len = r.len < sizeof buf - 1 ? r.len : sizeof buf - 1;
			memcpy(buf, text, len);
			buf[len] = 0;
			unsigned long long key = 0, parent = 0;
			int rank = -1, nranks = -1, dev = -1, color = -1;
			char host[64] = "", how[16] = "";
			if (sscanf(buf, "key=%llx rank=%d nranks=%d dev=%d host=%63s how=%15s parent=%llx color=%d",
			           &key, &rank, &nranks, &dev, host, how, &parent, &color) < 5)
				continue; /* not a record we understand: the communicator stays unknown */
			ci->id = r.id;
			ci->key = key;
			ci->parent = parent;
			ci->rank = rank;
			ci->nranks = nranks;
			ci->dev = dev;
			ci->color = color;
			snprintf(ci->host, sizeof ci->host, "%s", host);
			snprintf(ci->how, sizeof ci->how, "%s", how[0] ? how : "init");
			/* the members' global ranks, where the record lists them (MPI's, torch's) */
			const char *rk = strstr(buf, " ranks=");
			free(ci->ranks);
			ci->ranks = NULL;
			if (rk && !(ci->ranks = ddl_strndup(rk + 7, strcspn(rk + 7, " "))))
				ddl_nomem(t, off); /* its hosts from its members' records alone */
		} else if (r.kind == DDL_STR_STREAM) {
			if (r.id > (1u << 20))
				continue;
			size_t had = t->nstreams;
			if (ddl_table_fit((void **)&t->streams, &t->nstreams, r.id, 1u << 20,
			                  sizeof *t->streams) < 0) {
				ddl_nomem(t, off);
				return;
			}
			for (size_t k = had; k < t->nstreams; k++)
				t->streams[k].dev = -1; /* unseen */
			if (!t->streams[r.id].text) {
				t->streams[r.id].dev = (int)r.value;
				if (!(t->streams[r.id].text = ddl_strndup(text, r.len)))
					ddl_nomem(t, off);
			}
		} else if (r.kind == DDL_STR_STACK) {
			ddl_idtext_set(t, off, &t->stacks, &t->nstacks, r.id, r.value, text, r.len);
		} else if (r.kind == DDL_STR_MODULE) {
			ddl_idtext_set(t, off, &t->modules, &t->nmodules, r.id, r.value, text, r.len);
		} else if (r.kind == DDL_STR_COUNTER) {
			ddl_idtext_set(t, off, &t->counters, &t->ncounters, r.id, r.value, text, r.len);
		} else if (r.kind == DDL_STR_META) {
			if (ddl_table_fit((void **)&t->meta, &t->nmeta, t->nmeta, SIZE_MAX / 2,
			                  sizeof *t->meta) < 0) {
				ddl_nomem(t, off);
				return;
			}
			if (!(t->meta[t->nmeta - 1] = ddl_strndup(text, r.len))) {
				t->nmeta--; /* as if never given */
				ddl_nomem(t, off);
			}
		}
	}
}

static int ddl_chunk_header_ok(const unsigned char *p, struct ddl_chunk *c)
{
	memcpy(c, p, sizeof *c);
	return c->magic == DDL_CHUNK_MAGIC &&
	       c->hcrc == ddl_crc32c(c, offsetof(struct ddl_chunk, hcrc));
}

/*
 * The writer takes a clock sample at the start and before every batch of
 * events, which all began before it: an event far before the start or
 * after the last sample, or a sample far before the one before it or off
 * the header's tick rate, is damage or a forgery that passed the
 * checksums, and would stretch the run to years. Its chunk is skipped, as
 * one that fails its checksum. (A later sample may be hours after the
 * last: a stopped process.) DDL_WINDOW_S of slack, for device clocks
 * converted to ours over a long run, on the header's nominal tick rate
 * (the fastest clock when it names none).
 */
#define DDL_WINDOW_S 600

static uint64_t ddl_window_hz(const struct ddl_trace *t)
{
	uint64_t hz = t->hdr.clock_source == DDL_CLOCK_MONOTONIC ? 1000000000u : t->hdr.tick_hz;
	return hz < 1000 || hz > 1000000000000ull ? 0 : hz;
}

/* Ticks of the last sample read so far (the header's, before any). */
static uint64_t ddl_window_last(const struct ddl_trace *t)
{
	uint64_t last = t->hdr.start_ticks;
	if (t->nclk && t->clk[t->nclk - 1].ticks > last)
		last = t->clk[t->nclk - 1].ticks;
	return last;
}

/* NS is a clock reading a real clock can give (trace_read.h): no
 * monotonic clock is negative or has run for 146 years, no real-time
 * clock reads before 1970 or after 2116 */
static int ddl_ns_sane(int64_t ns)
{
	return ns >= 0 && ns <= DDL_NS_MAX;
}

/* The sample S may follow those read so far; else a problem at OFF. */
static int ddl_window_sample(struct ddl_trace *t, const struct ddl_clock_sample *s, size_t off)
{
	if (!ddl_ns_sane(s->mono_ns) || !ddl_ns_sane(s->real_ns)) {
		ddl_problem(t, off, "clock sample at tick %llu reads %s %lld ns, not a time a clock "
		            "gives (damaged or forged times; chunk skipped)",
		            (unsigned long long)s->ticks,
		            ddl_ns_sane(s->mono_ns) ? "realtime" : "monotonic",
		            (long long)(ddl_ns_sane(s->mono_ns) ? s->real_ns : s->mono_ns));
		return -1;
	}
	uint64_t hz = ddl_window_hz(t), slack = DDL_WINDOW_S * (hz ? hz : 1000000000000ull);
	uint64_t last = ddl_window_last(t);
	int ok = s->ticks >= (last > slack ? last - slack : 0);
	if (ok && hz) {
		/* against the start sample at the nominal rate, within 2% */
		double want = ((double)s->ticks - (double)t->hdr.start_ticks) * 1e9 / (double)hz;
		double got = (double)s->mono_ns - (double)t->hdr.start_mono_ns;
		double tol = 0.02 * (want < 0 ? -want : want) + DDL_WINDOW_S * 1e9;
		ok = got >= want - tol && got <= want + tol;
	}
	if (!ok)
		ddl_problem(t, off, "clock sample at tick %llu is more than %d s off the samples before "
		            "it (damaged or forged times; chunk skipped)",
		            (unsigned long long)s->ticks, DDL_WINDOW_S);
	return ok ? 0 : -1;
}

/* The N events at EV lie within the samples read so far; else a problem at OFF. */
static int ddl_window_events(struct ddl_trace *t, const struct ddl_event *ev, size_t n, size_t off)
{
	uint64_t hz = ddl_window_hz(t), slack = DDL_WINDOW_S * (hz ? hz : 1000000000000ull);
	uint64_t lo = t->hdr.start_ticks, hi = ddl_window_last(t);
	lo = lo > slack ? lo - slack : 0;
	hi = hi < UINT64_MAX - slack ? hi + slack : UINT64_MAX;
	/* the streaming reader's hot loop: one pass without branches, and a
	 * second to name the event only when some is out (records without a
	 * start time, args and stacks, do not count) */
	uint64_t span = hi - lo, out = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned k = ev[i].kind;
		out |= (uint64_t)((k - 1u < DDL_EV_COUNT - 1u) & (k != DDL_EV_ARGS) & (k != DDL_EV_STACK)) &
		       (uint64_t)(ev[i].start - lo > span);
	}
	if (!out)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned k = ev[i].kind;
		if (k == DDL_EV_ARGS || k == DDL_EV_STACK || k >= DDL_EV_COUNT)
			continue; /* no start time in these records */
		if (ev[i].start < lo || ev[i].start > hi) {
			ddl_problem(t, off, "event %zu (%s) at tick %llu is more than %d s outside the "
			            "file's clock samples (damaged or forged times; chunk skipped)",
			            i, ddl_event_name(k), (unsigned long long)ev[i].start, DDL_WINDOW_S);
			return -1;
		}
	}
	return 0;
}

/*
 * The first good chunk header at or after FROM (SIZE when none), past
 * damage: the magic found with memmem (memory speed through a run of
 * zeros, not a check at every byte), and the holes of a sparse file FD
 * (-1: none) stepped over with SEEK_DATA, never read.
 */
static size_t ddl_next_header(const unsigned char *m, size_t size, size_t from, int fd,
                              struct ddl_chunk *c)
{
	uint32_t magic = DDL_CHUNK_MAGIC;
	size_t at = from;
	while (at + sizeof *c <= size) {
		if (fd >= 0) {
			off_t d = lseek(fd, (off_t)at, SEEK_DATA);
			if (d < 0 && errno == ENXIO)
				return size; /* only a hole to the end */
			if (d > (off_t)at)
				at = (size_t)d;
			if (at + sizeof *c > size)
				return size;
		}
		/* a window at a time, so that a hole further on is stepped over too */
		size_t end = size - at > (64u << 20) ? at + (64u << 20) : size;
		const unsigned char *p = memmem(m + at, end - at, &magic, sizeof magic);
		if (!p) {
			at = end > at + sizeof magic ? end - sizeof magic + 1 : end;
			if (end == size)
				return size;
			continue;
		}
		at = (size_t)(p - m);
		if (at + sizeof *c <= size && ddl_chunk_header_ok(m + at, c))
			return at;
		at++;
	}
	return size;
}

/* Handles one checked chunk payload. */
static void ddl_read_chunk(struct ddl_trace *t, const struct ddl_chunk *c,
                           const unsigned char *p, size_t n, size_t off)
{
	switch (c->type) {
	case DDL_CHUNK_EVENTS:
		if (n % sizeof(struct ddl_event)) {
			ddl_problem(t, off, "event chunk of %zu bytes is not whole events", n);
			t->corrupt = 1;
			return;
		}
		if (t->on_events) {
			/* streaming: the caller sees the chunk's events where they
			 * lie, 8-byte aligned (the parse copies those that are not) */
			if (!t->checked_before &&
			    ddl_window_events(t, (const struct ddl_event *)p, n / sizeof(struct ddl_event), off) < 0) {
				t->corrupt = 1;
				t->checks_failed++;
				return;
			}
			t->nstreamed += n / sizeof(struct ddl_event);
			if (t->on_events(t->on_events_ctx, t, (const struct ddl_event *)p,
			                 n / sizeof(struct ddl_event)) != 0)
				t->stream_stopped = 1;
			t->ended = 0;
			t->exec_end = 0;
			break;
		}
		if (n && ddl_grow((void **)&t->ev, &t->cap_ev, t->nev + n / sizeof(struct ddl_event),
		                  sizeof(struct ddl_event)) < 0) {
			ddl_nomem(t, off);
			return;
		}
		if (n) { /* an empty chunk first: t->ev is still NULL */
			memcpy(t->ev + t->nev, p, n);
			if (!t->checked_before && ddl_window_events(t, t->ev + t->nev, n / sizeof(struct ddl_event), off) < 0) {
				t->corrupt = 1;
				t->checks_failed++;
				return;
			}
		}
		t->nev += n / sizeof(struct ddl_event);
		t->ended = 0; /* events after an exec chunk: that exec failed */
		t->exec_end = 0;
		break;
	case DDL_CHUNK_STRINGS:
		ddl_read_strings(t, p, n, off);
		break;
	case DDL_CHUNK_CLOCK:
		if (n % sizeof(struct ddl_clock_sample)) {
			ddl_problem(t, off, "clock chunk of %zu bytes is not whole samples", n);
			t->corrupt = 1;
			return;
		}
		if (!n)
			break; /* t->clk may still be NULL */
		if (ddl_grow((void **)&t->clk, &t->cap_clk, t->nclk + n / sizeof(struct ddl_clock_sample),
		             sizeof(struct ddl_clock_sample)) < 0) {
			ddl_nomem(t, off);
			return;
		}
		for (size_t k = 0; k < n / sizeof(struct ddl_clock_sample); k++) {
			/* each checked against the chunks before */
			memcpy(&t->clk[t->nclk + k], p + k * sizeof *t->clk, sizeof *t->clk);
			if (ddl_window_sample(t, &t->clk[t->nclk + k], off) < 0) {
				t->corrupt = 1;
				return; /* none of the chunk's samples kept */
			}
		}
		t->nclk += n / sizeof(struct ddl_clock_sample);
		break;
	case DDL_CHUNK_END:
	case DDL_CHUNK_EXEC:
		if (n < sizeof(struct ddl_end)) {
			ddl_problem(t, off, "end chunk too short");
			t->corrupt = 1;
			return;
		}
		memcpy(&t->end, p, sizeof t->end);
		t->ended = 1;
		t->exec_end = c->type == DDL_CHUNK_EXEC;
		break;
	case DDL_CHUNK_OPEN:
	case DDL_CHUNK_OPEN_PHASES: {
		/* the calls open as of this flush: the newest replaces the one
		 * before; the Python hook's phases, written right after, join them */
		int phases = c->type == DDL_CHUNK_OPEN_PHASES;
		if (n % (2 * sizeof(struct ddl_event)) || n > 4096 * 2 * sizeof(struct ddl_event)) {
			ddl_problem(t, off, "open-calls chunk of %zu bytes is not whole calls", n);
			t->corrupt = 1;
			return;
		}
		if (!phases) {
			free(t->open);
			t->open = NULL;
			t->nopen = 0;
		}
		if (!n)
			break;
		struct ddl_event *v = malloc(n);
		if (!v) {
			ddl_nomem(t, off);
			return;
		}
		memcpy(v, p, n);
		for (size_t k = 0; k < n / sizeof(struct ddl_event); k += 2) {
			const struct ddl_event *e = &v[k];
			if (!e->kind || e->kind >= DDL_EV_COUNT || e->kind == DDL_EV_ARGS || !(e->flags & DDL_EVF_ARGS) ||
			    v[k + 1].kind != DDL_EV_ARGS) {
				ddl_problem(t, off, "open-calls chunk: record %zu is not a call and its args", k / 2);
				t->corrupt = 1;
				free(v);
				return;
			}
		}
		if (ddl_window_events(t, v, n / sizeof(struct ddl_event), off) < 0) {
			t->corrupt = 1;
			free(v);
			return;
		}
		size_t had = 2 * t->nopen, more = n / sizeof(struct ddl_event);
		struct ddl_event *all = had ? realloc(t->open, (had + more) * sizeof *all) : v;
		if (!all) {
			free(v);
			ddl_nomem(t, off);
			return;
		}
		if (had) {
			memcpy(all + had, v, n);
			free(v);
		}
		t->open = all;
		t->nopen = (had + more) / 2;
		break;
	}
	default:
		break; /* a newer writer's chunk: skip */
	}
}

static int ddl_cmp_clk(const void *a, const void *b)
{
	const struct ddl_clock_sample *x = a, *y = b;
	return x->ticks < y->ticks ? -1 : x->ticks > y->ticks;
}

/* Fits ticks to nanoseconds from the first to the last sample (the
 * header's start among them). */
static void ddl_clock_fit(struct ddl_trace *t)
{
	struct ddl_clock_sample s0 = {t->hdr.start_ticks, t->hdr.start_mono_ns, t->hdr.start_real_ns};
	if (!ddl_grow((void **)&t->clk, &t->cap_clk, t->nclk + 1, sizeof s0))
		t->clk[t->nclk++] = s0;
	else
		ddl_nomem(t, t->hdr.header_size); /* the start sample not kept: not fitted on it */
	if (t->nclk)
		qsort(t->clk, t->nclk, sizeof *t->clk, ddl_cmp_clk);
	/* without a sample kept, the header's start alone */
	const struct ddl_clock_sample *a = t->nclk ? &t->clk[0] : &s0;
	const struct ddl_clock_sample *b = t->nclk ? &t->clk[t->nclk - 1] : &s0;
	t->base_ticks = a->ticks;
	t->base_mono_ns = a->mono_ns;
	t->base_real_ns = a->real_ns;
	/* in double: a hostile file's samples may be anywhere in int64 */
	double dns = (double)b->mono_ns - (double)a->mono_ns;
	if (t->hdr.clock_source == DDL_CLOCK_MONOTONIC)
		t->ns_per_tick = 1.0;
	else if (b->ticks > a->ticks + 1000 && dns > 0)
		t->ns_per_tick = dns / (double)(b->ticks - a->ticks);
	else if (t->hdr.tick_hz)
		t->ns_per_tick = 1e9 / (double)t->hdr.tick_hz;
	else
		t->ns_per_tick = 1.0;
	/* no clock ticks slower than 1 ms or faster than 1 THz */
	if (!(t->ns_per_tick >= 1e-3 && t->ns_per_tick <= 1e6))
		t->ns_per_tick = 1.0;
}

const struct ddl_args *ddl_event_args(const struct ddl_trace *t, size_t i)
{
	if (i + 1 >= t->nev || !(t->ev[i].flags & DDL_EVF_ARGS) ||
	    ddl_event_class(t->ev[i].kind) == DDL_CLASS_ARGS || t->ev[i + 1].kind != DDL_EV_ARGS)
		return NULL;
	return (const struct ddl_args *)&t->ev[i + 1];
}

uint32_t ddl_event_stack(const struct ddl_trace *t, size_t i)
{
	if (i >= t->nev || !(t->ev[i].flags & DDL_EVF_STACK) ||
	    ddl_event_class(t->ev[i].kind) == DDL_CLASS_ARGS)
		return 0;
	size_t j = i + 1 + (ddl_event_args(t, i) != NULL);
	if (j >= t->nev || t->ev[j].kind != DDL_EV_STACK)
		return 0;
	struct ddl_stackrec r;
	memcpy(&r, &t->ev[j], sizeof r);
	return r.stack;
}

const char *ddl_trace_name(const struct ddl_trace *t, uint64_t id)
{
	return id && id < t->nnames ? t->names[id] : NULL;
}

const struct ddl_comm_info *ddl_trace_comm(const struct ddl_trace *t, uint32_t id)
{
	return id && id < t->ncomms && t->comms[id].id ? &t->comms[id] : NULL;
}

const char *ddl_trace_meta(const struct ddl_trace *t, const char *key)
{
	size_t k = strlen(key);
	/* the last one said: a forked child's trace holds its parent's facts
	 * first, then its own (a loader worker's role) */
	for (size_t i = t->nmeta; i-- > 0;)
		if (!strncmp(t->meta[i], key, k) && t->meta[i][k] == '=')
			return t->meta[i] + k + 1;
	return NULL;
}

static int ddl_fail(char *err, size_t errlen, const char *path, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "%s: %s", path, msg);
	return -1;
}

static int ddl_header_check(struct ddl_trace *t, const unsigned char *m, size_t size, char *err,
                            size_t errlen)
{
	struct ddl_file_header h;
	const char *path = t->path;
	if (size < 8 || memcmp(m, DDL_IDENT, 4) != 0)
		return ddl_fail(err, errlen, path, "not a ddlprof trace (bad magic)");
	uint32_t bo;
	memcpy(&bo, m + 4, 4);
	if (bo == __builtin_bswap32(DDL_BYTE_ORDER_MAGIC))
		return ddl_fail(err, errlen, path,
		                "written on a machine of the other byte order, which this reader does not convert");
	if (bo != DDL_BYTE_ORDER_MAGIC)
		return ddl_fail(err, errlen, path, "not a ddlprof trace (bad byte-order mark)");
	if (size < offsetof(struct ddl_file_header, header_size) + 4)
		return ddl_fail(err, errlen, path, "truncated inside the file header");
	memcpy(&h, m, offsetof(struct ddl_file_header, header_size) + 4);
	if (h.header_size < sizeof h || h.header_size > 65536)
		return ddl_fail(err, errlen, path, "header size %u is not valid (damaged header)",
		                h.header_size);
	if (size < h.header_size)
		return ddl_fail(err, errlen, path, "truncated inside the file header");
	/* The checksum first: a damaged header must not pass for a newer one. */
	uint32_t hcrc;
	memcpy(&hcrc, m + h.header_size - 4, 4);
	if (hcrc != ddl_crc32c(m, h.header_size - 4))
		return ddl_fail(err, errlen, path, "file header checksum mismatch (damaged header)");
	if (h.min_reader > DDL_FORMAT_VERSION)
		return ddl_fail(err, errlen, path,
		                "format version %u needs a reader of version %u or later; this one reads "
		                "up to %u: upgrade ddlprof",
		                h.version, h.min_reader, DDL_FORMAT_VERSION);
	memcpy(&t->hdr, m, sizeof t->hdr);
	/* every time in the file is read relative to these (trace_read.h) */
	if (!ddl_ns_sane(t->hdr.start_mono_ns))
		return ddl_fail(err, errlen, path,
		                "header start_mono_ns %lld is not a CLOCK_MONOTONIC reading (below 0 or "
		                "above 2^62 ns; damaged or forged header)",
		                (long long)t->hdr.start_mono_ns);
	if (!ddl_ns_sane(t->hdr.start_real_ns))
		return ddl_fail(err, errlen, path,
		                "header start_real_ns %lld is not a time between 1970 and 2116 (damaged "
		                "or forged header)",
		                (long long)t->hdr.start_real_ns);
	t->hdr.header_size = h.header_size;
	t->hdr.host[DDL_HOST_MAX - 1] = 0;
	t->hdr.run_id[DDL_RUNID_MAX - 1] = 0;
	return 0;
}

static int ddl_trace_parse_cb(const void *buf, size_t size, const char *name, struct ddl_trace *t,
                              ddl_events_fn cb, void *ctx, int fd, int checked, char *err,
                              size_t errlen);
static int ddl_trace_open_parse(const char *path, const struct ddl_trace *first, struct ddl_trace *t,
                                ddl_events_fn cb, void *ctx, struct ddl_event *seed, size_t seedcap,
                                char *err, size_t errlen);

int ddl_trace_read(const char *path, struct ddl_trace *t, char *err, size_t errlen)
{
	return ddl_trace_stream(path, t, NULL, NULL, err, errlen);
}

int ddl_trace_stream(const char *path, struct ddl_trace *t, ddl_events_fn cb, void *ctx, char *err,
                     size_t errlen)
{
	return ddl_trace_open_parse(path, NULL, t, cb, ctx, NULL, 0, err, errlen);
}

int ddl_trace_read_again(const struct ddl_trace *first, struct ddl_trace *t, struct ddl_event *buf,
                         size_t cap, char *err, size_t errlen)
{
	return ddl_trace_open_parse(first->path, first, t, NULL, NULL, buf, cap, err, errlen);
}

/*
 * A file cut shorter while it is mapped and read (a trace truncated or
 * rewritten meanwhile, which the report's reads again make likelier) raises
 * SIGBUS on the pages past its new end: within a read, the thread's guard
 * turns it into the end of the file; anywhere else the action before ours
 * takes it, as if we were not there.
 */
static __thread sigjmp_buf *ddl_bus_jmp;
static struct sigaction ddl_bus_old;
static pthread_once_t ddl_bus_once = PTHREAD_ONCE_INIT;

static void ddl_bus_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	if (ddl_bus_jmp)
		siglongjmp(*ddl_bus_jmp, 1);
	sigaction(SIGBUS, &ddl_bus_old, NULL); /* the access, made again, meets it */
}

static void ddl_bus_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = ddl_bus_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &ddl_bus_old);
}

/*
 * The parse's buffer (decompressed chunks, raw events copied to be
 * aligned): each thread keeps one from file to file, up to
 * DDL_ZBUF_KEEP bytes, so that reading a directory does not map and
 * clear new pages for every file; a parse that starts while its thread's
 * is in use (a stream's consumer reading another trace) takes its own.
 * With it, zstd's decompression context, made once (ZSTD_decompress
 * makes and frees one for every chunk). Freed as the thread ends.
 */
#define DDL_ZBUF_KEEP ((size_t)4 << 20)
struct ddl_zbuf {
	unsigned char *p;
	size_t cap;
	int busy;
	ZSTD_DCtx *zd; /* zstd's context, made once for the thread's chunks, not for each */
};
static pthread_key_t ddl_zbuf_key;
static pthread_once_t ddl_zbuf_once = PTHREAD_ONCE_INIT;
static int ddl_zbuf_keyed;

static void ddl_zbuf_free(void *v)
{
	struct ddl_zbuf *z = v;
	free(z->p);
	ZSTD_freeDCtx(z->zd);
	free(z);
}

static void ddl_zbuf_key_make(void)
{
	ddl_zbuf_keyed = pthread_key_create(&ddl_zbuf_key, ddl_zbuf_free) == 0;
}

/* The thread's buffer, marked busy, or LOCAL (empty) when it is in use or cannot be had. */
static struct ddl_zbuf *ddl_zbuf_take(struct ddl_zbuf *local)
{
	pthread_once(&ddl_zbuf_once, ddl_zbuf_key_make);
	struct ddl_zbuf *z = ddl_zbuf_keyed ? pthread_getspecific(ddl_zbuf_key) : NULL;
	if (!z && ddl_zbuf_keyed && (z = calloc(1, sizeof *z)) && pthread_setspecific(ddl_zbuf_key, z)) {
		free(z);
		z = NULL;
	}
	if (!z || z->busy)
		z = local;
	z->busy = 1;
	return z;
}

static void ddl_zbuf_give(struct ddl_zbuf *z, struct ddl_zbuf *local)
{
	z->busy = 0;
	if (z == local || z->cap > DDL_ZBUF_KEEP) {
		free(z->p);
		z->p = NULL;
		z->cap = 0;
	}
	if (z == local) {
		ZSTD_freeDCtx(z->zd);
		z->zd = NULL;
	}
}

/* Room for N bytes in Z (64 KiB at least); -1 without memory. */
static int ddl_zbuf_fit(struct ddl_zbuf *z, size_t n)
{
	if (n <= z->cap && z->p)
		return 0;
	size_t ncap = n > 65536 ? n : 65536;
	unsigned char *nb = realloc(z->p, ncap);
	if (!nb)
		return -1;
	z->p = nb;
	z->cap = ncap;
	return 0;
}

/* ddl_trace_parse_cb within the guard: a mapping that loses its pages
 * (the file cut shorter) ends the trace there. */
static int ddl_parse_guarded(const void *buf, size_t size, const char *name, struct ddl_trace *t,
                             ddl_events_fn cb, void *ctx, int fd, int checked, char *err,
                             size_t errlen)
{
	pthread_once(&ddl_bus_once, ddl_bus_install);
	sigjmp_buf jb;
	int rc = 0;
	if (sigsetjmp(jb, 1) == 0) {
		ddl_bus_jmp = &jb;
		rc = ddl_trace_parse_cb(buf, size, name, t, cb, ctx, fd, checked, err, errlen);
	} else {
		/* cut shorter while being read: what was read stands, as for a
		 * file that ended there */
		t->shrunk = 1;
		t->truncated = 1;
		ddl_problem(t, size, "the file was cut shorter while it was read");
		ddl_clock_fit(t);
		struct ddl_zbuf *z = ddl_zbuf_keyed ? pthread_getspecific(ddl_zbuf_key) : NULL;
		if (z) /* the parse that had it ended here */
			z->busy = 0;
	}
	ddl_bus_jmp = NULL;
	return rc;
}

static int64_t ddl_ts_ns(struct timespec ts)
{
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The file's parse, the events read into SEED (SEEDCAP of room, malloc's,
 * grown if need be) when it is not NULL; a read again of FIRST's file (as
 * far as FIRST's covered) when FIRST is not NULL (ddl_trace_read_again). */
static int ddl_trace_open_parse(const char *path, const struct ddl_trace *first, struct ddl_trace *t,
                                ddl_events_fn cb, void *ctx, struct ddl_event *seed, size_t seedcap,
                                char *err, size_t errlen)
{
	size_t limit = first ? first->file_size : SIZE_MAX;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	memset(t, 0, sizeof *t);
	t->ev = seed; /* T's from here, however the read ends */
	t->cap_ev = seedcap;
	/* O_NONBLOCK: a FIFO named like a trace must not hang the open (it is
	 * refused below, as anything but a regular file is) */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		t->path = strdup(path);
		return ddl_fail(err, errlen, path, "%s", strerror(errno));
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		t->path = strdup(path);
		return ddl_fail(err, errlen, path, "not a regular file");
	}
	size_t size = (size_t)st.st_size < limit ? (size_t)st.st_size : limit;
	if (size == 0) {
		close(fd);
		t->path = strdup(path);
		return ddl_fail(err, errlen, path, "empty file, not a ddlprof trace");
	}
	const unsigned char *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		t->path = strdup(path);
		return ddl_fail(err, errlen, path, "cannot map: %s", strerror(errno));
	}
	/* the kernel reads ahead: the chunks are visited once, in order */
	madvise((void *)m, size, MADV_SEQUENTIAL);
	int64_t mtime = ddl_ts_ns(st.st_mtim), ctime = ddl_ts_ns(st.st_ctim);
	int checked = first && !first->checks_failed && !first->stream_stopped && !first->incomplete &&
	              (uint64_t)st.st_dev == first->file_dev &&
	              (uint64_t)st.st_ino == first->file_ino && (size_t)st.st_size == first->file_size &&
	              mtime == first->file_mtime_ns && ctime == first->file_ctime_ns &&
	              ctime < first->read_real_ns - 1000000000;
	int rc = ddl_parse_guarded(m, size, path, t, cb, ctx, fd, checked, err, errlen); /* fd: to skip holes */
	t->file_size = size;
	t->file_dev = (uint64_t)st.st_dev;
	t->file_ino = (uint64_t)st.st_ino;
	t->file_mtime_ns = mtime;
	t->file_ctime_ns = ctime;
	t->read_real_ns = ddl_ts_ns(now);
	munmap((void *)m, size);
	close(fd);
	return rc;
}

int ddl_trace_parse(const void *buf, size_t size, const char *name, struct ddl_trace *t, char *err,
                    size_t errlen)
{
	memset(t, 0, sizeof *t);
	return ddl_parse_guarded(buf, size, name, t, NULL, NULL, -1, 0, err, errlen);
}

/*
 * The 16 MiB of mapping M (SIZE bytes) from OFF's page mapped in one call,
 * not a page fault at a time (MADV_POPULATE_READ, Linux 5.14; older
 * kernels refuse it and the pages fault in as they are read); where that
 * ends.
 */
static size_t ddl_populate(const unsigned char *m, size_t size, size_t off)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), from = pg ? off / pg * pg : off;
	size_t to = size - from > (16u << 20) ? from + (16u << 20) : size;
#ifdef MADV_POPULATE_READ
	madvise((void *)(m + from), to - from, MADV_POPULATE_READ);
#endif
	return to;
}

/*
 * FD >= 0: BUF is a private read-only mapping of the file FD, whose pages
 * already read are given back every 16 MiB (they read back from the file
 * if touched again), so that memory does not grow with the file's length.
 */
static int ddl_trace_parse_cb(const void *buf, size_t size, const char *name, struct ddl_trace *t,
                              ddl_events_fn cb, void *ctx, int fd, int checked, char *err,
                              size_t errlen)
{
	const unsigned char *m = buf;
	const char *path = name;
	struct ddl_event *seed = t->ev;
	size_t seedcap = t->cap_ev;
	memset(t, 0, sizeof *t);
	t->ev = seed;
	t->cap_ev = seedcap;
	t->on_events = cb;
	t->on_events_ctx = ctx;
	t->checked_before = checked;
	t->path = strdup(name);
	if (!t->path)
		return ddl_fail(err, errlen, name, "out of memory");
	if (size == 0)
		return ddl_fail(err, errlen, path, "empty file, not a ddlprof trace");
	if (ddl_header_check(t, m, size, err, errlen) < 0)
		return -1;
	struct ddl_zbuf local = {0}, *zb = ddl_zbuf_take(&local);
	size_t released = 0, populated = 0;
	size_t off = t->hdr.header_size;
	while (off < size && !t->stream_stopped) {
		struct ddl_chunk c;
		if (fd >= 0 && off >= populated)
			populated = ddl_populate(m, size, off);
		if (size - off < sizeof c) {
			ddl_problem(t, off, "file ends inside a chunk header");
			t->truncated = 1;
			break;
		}
		if (!ddl_chunk_header_ok(m + off, &c) || c.size > DDL_CHUNK_MAX ||
		    c.raw_size > DDL_CHUNK_MAX) {
			ddl_problem(t, off, "damaged chunk header");
			t->corrupt = 1;
			size_t next = ddl_next_header(m, size, off + 1, fd, &c);
			if (next + sizeof c > size)
				break;
			off = next;
			continue;
		}
		size_t body = off + sizeof c;
		if (c.size > size - body) {
			ddl_problem(t, off, "file ends inside a chunk (%u of its bytes missing)",
			            (unsigned)(c.size - (size - body)));
			t->truncated = 1;
			break;
		}
		if (!t->checked_before && ddl_crc32c(m + body, c.size) != c.crc) {
			ddl_problem(t, off, "chunk payload checksum mismatch (chunk skipped)");
			t->corrupt = 1;
			t->checks_failed++;
		} else if (c.flags & ~(DDL_CHUNKF_ZSTD | DDL_CHUNKF_LZ4)) {
			ddl_problem(t, off, "chunk flags 0x%x unknown to this reader (chunk skipped)", c.flags);
			t->corrupt = 1;
		} else if (c.flags == (DDL_CHUNKF_ZSTD | DDL_CHUNKF_LZ4)) {
			ddl_problem(t, off, "chunk flags 0x%x name two codecs (chunk skipped)", c.flags);
			t->corrupt = 1;
		} else if (c.flags && (uint64_t)c.size * DDL_CHUNK_RATIO_MAX < c.raw_size) {
			ddl_problem(t, off, "compressed chunk claims %u bytes from %u, more than %u to 1, which "
			            "no writer makes (chunk skipped unread)", c.raw_size, c.size, DDL_CHUNK_RATIO_MAX);
			t->corrupt = 1;
		} else if (c.flags) {
			/* raw_size is at most DDL_CHUNK_MAX (checked with the header) */
			if (ddl_zbuf_fit(zb, c.raw_size) < 0) {
				ddl_nomem(t, off);
				break;
			}
			size_t r;
			if (c.flags == DDL_CHUNKF_LZ4) {
				int n = LZ4_decompress_safe((const char *)m + body, (char *)zb->p, (int)c.size,
				                            (int)c.raw_size);
				r = n < 0 ? (size_t)-1 : (size_t)n;
			} else {
				if (!zb->zd)
					zb->zd = ZSTD_createDCtx();
				r = zb->zd ? ZSTD_decompressDCtx(zb->zd, zb->p, c.raw_size, m + body, c.size)
				           : ZSTD_decompress(zb->p, c.raw_size, m + body, c.size);
				if (ZSTD_isError(r))
					r = (size_t)-1;
			}
			if (r != c.raw_size) {
				ddl_problem(t, off, "compressed chunk (%s) does not decompress to %u bytes",
				            c.flags == DDL_CHUNKF_LZ4 ? "lz4" : "zstd", c.raw_size);
				t->corrupt = 1;
			} else {
				ddl_read_chunk(t, &c, zb->p, r, off);
			}
		} else if (c.raw_size != c.size) {
			ddl_problem(t, off, "uncompressed chunk with two sizes");
			t->corrupt = 1;
		} else if (t->on_events && c.type == DDL_CHUNK_EVENTS &&
		           (uintptr_t)(m + body) % _Alignof(struct ddl_event)) {
			/* streaming, events not 8-byte aligned where they lie (a raw
			 * chunk after a strings or compressed chunk of odd length):
			 * the caller sees them copied into the decompression buffer,
			 * grown once, not into an array allocated every chunk */
			if (ddl_zbuf_fit(zb, c.size) < 0) {
				ddl_nomem(t, off);
				break;
			}
			memcpy(zb->p, m + body, c.size);
			ddl_read_chunk(t, &c, zb->p, c.size, off);
		} else {
			ddl_read_chunk(t, &c, m + body, c.size, off);
		}
		off = body + c.size;
		if (fd >= 0 && off - released >= (16u << 20)) {
			size_t pg = (size_t)sysconf(_SC_PAGESIZE);
			size_t upto = pg ? off / pg * pg : released;
			madvise((void *)(m + released), upto - released, MADV_DONTNEED);
			released = upto;
		}
	}
	ddl_zbuf_give(zb, &local);
	if (!t->ended && !t->truncated && !t->incomplete) {
		ddl_problem(t, size, "no end record: the process did not exit cleanly (killed?)");
		t->truncated = 1;
	} else if (!t->ended) {
		t->truncated = 1;
	}
	/* the doubling's room given back: a run's traces are held together */
	if (t->nev && t->nev < t->cap_ev) {
		struct ddl_event *fit = realloc(t->ev, t->nev * sizeof *fit);
		if (fit) {
			t->ev = fit;
			t->cap_ev = t->nev;
		}
	}
	ddl_clock_fit(t);
	return 0;
}

void ddl_trace_free(struct ddl_trace *t)
{
	free(t->rare);
	for (size_t i = 0; i < t->npeers; i++)
		free(t->peers[i].text);
	for (size_t i = 0; i < t->nthreads; i++)
		free(t->threads[i].name);
	for (size_t i = 0; i < t->nmeta; i++)
		free(t->meta[i]);
	for (size_t i = 0; i < t->nnames; i++)
		free(t->names[i]);
	free(t->names);
	for (size_t i = 0; i < t->nstreams; i++)
		free(t->streams[i].text);
	free(t->streams);
	struct ddl_idtext *tabs[3] = {t->stacks, t->modules, t->counters};
	size_t ntabs[3] = {t->nstacks, t->nmodules, t->ncounters};
	for (int k = 0; k < 3; k++) {
		for (size_t i = 0; i < ntabs[k]; i++)
			free(tabs[k][i].text);
		free(tabs[k]);
	}
	for (size_t i = 0; i < t->ncomms; i++)
		free(t->comms[i].ranks);
	free(t->comms);
	for (int i = 0; i < t->nproblems; i++)
		free(t->problems[i]);
	free(t->peers);
	free(t->threads);
	free(t->meta);
	free(t->ev);
	free(t->open);
	free(t->clk);
	free(t->path);
	memset(t, 0, sizeof *t);
}
