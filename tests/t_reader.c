/*
 * Trace format tests through the public reader: a trace written by the
 * library round-trips exactly; every prefix of it reads as truncated without
 * losing complete chunks; damage to any chunk is reported with its offset
 * and the other chunks still read; bad headers get clear errors; ticks map
 * to real time.
 */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ddlprof/crc32c.h"
#include "test.h"
#include "trace_read.h"
#include "trace_set.h"

#define RT_N 300

/* Child body, run under the library: known sends, then a timed gap. */
static int ddl_child(const char *mode)
{
	int sv[2];
	char buf[RT_N + 1];
	memset(buf, 'r', sizeof buf);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		return 99;
	if (!strcmp(mode, "roundtrip")) {
		for (int i = 1; i <= RT_N; i++) {
			if (send(sv[0], buf, (size_t)i, 0) != i || recv(sv[1], buf, (size_t)i, MSG_WAITALL) != i)
				return 99;
		}
		return 0;
	}
	/* clock: two sends 200 ms apart, then a 100 ms poll on the socket */
	send(sv[0], buf, 1, 0);
	struct timespec ts = {0, 200000000};
	nanosleep(&ts, NULL);
	send(sv[0], buf, 2, 0);
	struct pollfd p = {sv[0], POLLIN, 0};
	poll(&p, 1, 100);
	return 0;
}

/* Writes a trace with the library in a child; returns its path (malloc'd). */
static char *ddl_make_trace(const char *dir, const char *mode, const char *extra_env)
{
	pid_t pid = fork();
	if (pid == 0) {
		char d[PATH_MAX + 16];
		snprintf(d, sizeof d, "DDLPROF_DIR=%s", dir);
		char lib[PATH_MAX + 16];
		snprintf(lib, sizeof lib, "LD_PRELOAD=%s", tbuild("lib/libddlprof.so"));
		/* the sanitizer build's runner passes its options on */
		char asan[256] = "ASAN_OPTIONS=";
		if (getenv("ASAN_OPTIONS"))
			strncat(asan, getenv("ASAN_OPTIONS"), sizeof asan - strlen(asan) - 1);
		char *env[] = {d, lib, "DDLPROF_RUN_ID=unit", asan, (char *)extra_env, NULL};
		char *argv[] = {(char *)tbuild("tests/ddltest"), "--child", (char *)mode, NULL};
		execve(argv[0], argv, env);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return NULL;
	char *path = malloc(PATH_MAX);
	snprintf(path, PATH_MAX, "%s/", dir);
	struct ddl_traceset s;
	char err[256];
	char *p[] = {(char *)dir};
	if (ddl_traceset_load(&s, p, 1, err, sizeof err) < 0 || s.n != 1) {
		free(path);
		return NULL;
	}
	snprintf(path, PATH_MAX, "%s", s.t[0].path);
	ddl_traceset_free(&s);
	return path;
}

int ddl_test_child(int argc, char **argv);
int ddl_test_child(int argc, char **argv)
{
	return argc > 2 ? ddl_child(argv[2]) : 99;
}

static int ddl_check_roundtrip(const struct ddl_trace *t)
{
	int sends = 0, recvs = 0;
	uint64_t last = 0;
	for (size_t i = 0; i < t->nev; i++) {
		const struct ddl_event *e = &t->ev[i];
		if (e->kind == DDL_EV_SEND) {
			sends++;
			CHECK(e->result == sends, "send %d recorded %lld bytes", sends, (long long)e->result);
		} else if (e->kind == DDL_EV_RECV) {
			recvs++;
			CHECK(e->result == recvs, "recv %d recorded %lld bytes", recvs, (long long)e->result);
		}
		CHECK(e->start >= last, "events out of order at %zu", i);
		last = e->start;
		CHECK(e->peer && e->peer < t->npeers && t->peers[e->peer].text &&
		      !strcmp(t->peers[e->peer].text, "unix") && t->peers[e->peer].local,
		      "event %zu has no local unix peer", i);
		CHECK(e->tid < t->nthreads && t->threads[e->tid].tid == t->hdr.pid, "thread table");
	}
	CHECK(sends == RT_N && recvs == RT_N, "%d sends %d recvs", sends, recvs);
	CHECK(t->ended && !t->truncated && t->end.reason == DDL_END_EXIT && t->end.events == t->nev,
	      "end record: ended %d events %llu of %zu", t->ended, (unsigned long long)t->end.events,
	      t->nev);
	CHECK(!strcmp(t->hdr.run_id, "unit"), "run id %s", t->hdr.run_id);
	CHECK(ddl_trace_meta(t, "cmdline") && strstr(ddl_trace_meta(t, "cmdline"), "--child"),
	      "cmdline meta");
	return DDL_PASS;
}

int test_reader_roundtrip(void)
{
	/* compressed (default) and raw */
	static const char *env[] = {"DDLPROF_COMPRESS=1", "DDLPROF_COMPRESS=0"};
	for (int k = 0; k < 2; k++) {
		char *dir = tmpdir();
		char *path = ddl_make_trace(dir, "roundtrip", env[k]);
		CHECK(path, "no trace written (%s)", env[k]);
		struct ddl_trace t;
		char err[256];
		CHECK(ddl_trace_read(path, &t, err, sizeof err) == 0, "%s", err);
		CHECK(t.nproblems == 0, "problems: %s", t.problems[0]);
		struct stat st;
		stat(path, &st);
		CHECK((st.st_mode & 0777) == 0600, "trace mode %o", st.st_mode & 0777);
		int rc = ddl_check_roundtrip(&t);
		ddl_trace_free(&t);
		trm(dir);
		if (rc != DDL_PASS)
			return rc;
	}
	return DDL_PASS;
}

/* Offsets of every chunk in a trace file. */
static size_t ddl_chunks(const unsigned char *m, size_t size, size_t hsize, size_t *off, size_t max)
{
	size_t n = 0, o = hsize;
	while (o + sizeof(struct ddl_chunk) <= size && n < max) {
		struct ddl_chunk c;
		memcpy(&c, m + o, sizeof c);
		off[n++] = o;
		o += sizeof c + c.size;
	}
	return n;
}

static unsigned char *ddl_slurp(const char *path, size_t *n)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	fstat(fd, &st);
	unsigned char *m = malloc((size_t)st.st_size);
	*n = (size_t)read(fd, m, (size_t)st.st_size);
	close(fd);
	return m;
}

static void ddl_spit(const char *path, const unsigned char *m, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (write(fd, m, n) != (ssize_t)n)
		abort();
	close(fd);
}

/* An uncompressed trace written by the library: its bytes, what the reader
 * makes of it, and where each chunk starts. */
struct ddl_fixture {
	char *dir, *path;
	unsigned char *m;
	size_t size;
	struct ddl_trace full;
	size_t off[4096], nc;
};

static int ddl_fixture_make(struct ddl_fixture *f)
{
	char err[256];
	f->dir = tmpdir();
	f->path = ddl_make_trace(f->dir, "roundtrip", "DDLPROF_COMPRESS=0");
	CHECK(f->path, "no trace");
	f->m = ddl_slurp(f->path, &f->size);
	CHECK(ddl_trace_read(f->path, &f->full, err, sizeof err) == 0, "%s", err);
	f->nc = ddl_chunks(f->m, f->size, f->full.hdr.header_size, f->off, 4096);
	return DDL_PASS;
}

static void ddl_fixture_free(struct ddl_fixture *f)
{
	ddl_trace_free(&f->full);
	free(f->m);
	trm(f->dir);
}

int test_reader_truncation_every_offset(void)
{
	static struct ddl_fixture fx;
	if (ddl_fixture_make(&fx) != DDL_PASS)
		return DDL_FAIL;
	char *dir = fx.dir, *path = fx.path, err[256];
	unsigned char *m = fx.m;
	size_t size = fx.size, nc = fx.nc, *off = fx.off;
	struct ddl_trace full = fx.full;
	char cut[PATH_MAX];
	snprintf(cut, sizeof cut, "%s/cut.ddlt", dir);
	/* every byte near the start, then around every chunk boundary, and a stride */
	for (size_t len = full.hdr.header_size; len < size; len++) {
		int near = len < full.hdr.header_size + 2048 || len % 97 == 0;
		for (size_t k = 0; k < nc && !near; k++)
			near = len + 2 >= off[k] && len <= off[k] + 26;
		if (!near)
			continue;
		ddl_spit(cut, m, len);
		struct ddl_trace t;
		CHECK(ddl_trace_read(cut, &t, err, sizeof err) == 0, "prefix %zu: %s", len, err);
		CHECK(t.truncated && !t.corrupt, "prefix %zu: truncated %d corrupt %d", len, t.truncated,
		      t.corrupt);
		/* every event of every chunk that fits completely must be there */
		size_t expect = 0;
		for (size_t k = 0; k < nc; k++) {
			struct ddl_chunk c;
			memcpy(&c, m + off[k], sizeof c);
			if (off[k] + sizeof c + c.size <= len && c.type == DDL_CHUNK_EVENTS)
				expect += c.size / sizeof(struct ddl_event);
		}
		CHECK(t.nev == expect, "prefix %zu: %zu events, expected %zu", len, t.nev, expect);
		CHECK(t.nproblems >= 1 && strstr(t.problems[0], cut), "prefix %zu: problem names no file",
		      len);
		ddl_trace_free(&t);
	}
	struct ddl_trace t;
	CHECK(ddl_trace_read(path, &t, err, sizeof err) == 0 && !t.truncated, "whole file truncated?");
	ddl_trace_free(&t);
	ddl_fixture_free(&fx);
	return DDL_PASS;
}

int test_reader_corruption_every_chunk(void)
{
	static struct ddl_fixture fx;
	if (ddl_fixture_make(&fx) != DDL_PASS)
		return DDL_FAIL;
	char *dir = fx.dir, err[256];
	unsigned char *m = fx.m;
	size_t size = fx.size, nc = fx.nc, *off = fx.off;
	struct ddl_trace full = fx.full;
	CHECK(nc >= 3, "only %zu chunks", nc);
	char bad[PATH_MAX];
	snprintf(bad, sizeof bad, "%s/bad.ddlt", dir);
	/* positions: magic, type, size, crc fields of the header, and the payload */
	static const size_t at[] = {0, 4, 8, 16, 20, 24, 30};
	for (size_t k = 0; k < nc; k++) {
		struct ddl_chunk c;
		memcpy(&c, m + off[k], sizeof c);
		for (size_t a = 0; a < sizeof at / sizeof at[0]; a++) {
			if (at[a] >= sizeof c + c.size)
				continue;
			unsigned char *x = malloc(size);
			memcpy(x, m, size);
			x[off[k] + at[a]] ^= 0x5a;
			ddl_spit(bad, x, size);
			free(x);
			struct ddl_trace t;
			CHECK(ddl_trace_read(bad, &t, err, sizeof err) == 0, "chunk %zu byte %zu: %s", k,
			      at[a], err);
			char where[64];
			snprintf(where, sizeof where, "offset %zu:", off[k]);
			CHECK(t.corrupt && t.nproblems >= 1 && strstr(t.problems[0], bad) &&
			      strstr(t.problems[0], where),
			      "chunk %zu byte %zu: problem '%s', expected %s", k, at[a],
			      t.nproblems ? t.problems[0] : "none", where);
			size_t lost = c.type == DDL_CHUNK_EVENTS ? c.size / sizeof(struct ddl_event) : 0;
			CHECK(t.nev + lost == full.nev || (c.type != DDL_CHUNK_EVENTS && t.nev == full.nev),
			      "chunk %zu byte %zu: %zu events, full %zu, chunk held %zu", k, at[a], t.nev,
			      full.nev, lost);
			ddl_trace_free(&t);
		}
	}
	ddl_fixture_free(&fx);
	return DDL_PASS;
}

int test_reader_bad_headers(void)
{
	char *dir = tmpdir();
	char *path = ddl_make_trace(dir, "roundtrip", NULL);
	CHECK(path, "no trace");
	size_t size;
	unsigned char *m = ddl_slurp(path, &size);
	char bad[PATH_MAX], err[512];
	snprintf(bad, sizeof bad, "%s/hdr.ddlt", dir);
	struct {
		size_t at;
		unsigned char val;
		const char *says;
	} cases[] = {
		{0, 'X', "not a ddlprof trace"},
		{4, 0x0D, "other byte order"},
		{offsetof(struct ddl_file_header, min_reader), 9, "needs a reader of version 9"},
		{offsetof(struct ddl_file_header, pid), 0x77, "checksum"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		unsigned char *x = malloc(size);
		memcpy(x, m, size);
		if (cases[i].at == 4) { /* byte-swapped byte-order mark */
			uint32_t bo = __builtin_bswap32(DDL_BYTE_ORDER_MAGIC);
			memcpy(x + 4, &bo, 4);
		} else {
			x[cases[i].at] = cases[i].val;
		}
		if (cases[i].at == offsetof(struct ddl_file_header, min_reader)) {
			/* a real newer file: its header checksum is right */
			uint32_t h = ddl_crc32c(x, sizeof(struct ddl_file_header) - 4);
			memcpy(x + sizeof(struct ddl_file_header) - 4, &h, 4);
		}
		ddl_spit(bad, x, size);
		free(x);
		struct ddl_trace t;
		CHECK(ddl_trace_read(bad, &t, err, sizeof err) < 0, "case %zu read", i);
		CHECK(strstr(err, bad) && strstr(err, cases[i].says), "case %zu: '%s'", i, err);
		ddl_trace_free(&t);
	}
	ddl_spit(bad, m, 10);
	struct ddl_trace t;
	CHECK(ddl_trace_read(bad, &t, err, sizeof err) < 0 && strstr(err, "truncated inside the file header"),
	      "short header: %s", err);
	ddl_trace_free(&t);
	free(m);
	trm(dir);
	return DDL_PASS;
}

int test_reader_clock(void)
{
	char *dir = tmpdir();
	char *path = ddl_make_trace(dir, "clock", NULL);
	CHECK(path, "no trace");
	struct ddl_trace t;
	char err[256];
	CHECK(ddl_trace_read(path, &t, err, sizeof err) == 0, "%s", err);
	const struct ddl_event *s1 = NULL, *s2 = NULL, *p = NULL;
	for (size_t i = 0; i < t.nev; i++) {
		if (t.ev[i].kind == DDL_EV_SEND && !s1)
			s1 = &t.ev[i];
		else if (t.ev[i].kind == DDL_EV_SEND)
			s2 = &t.ev[i];
		else if (t.ev[i].kind == DDL_EV_POLL)
			p = &t.ev[i];
	}
	CHECK(s1 && s2 && p, "events missing");
	double gap = (double)(ddl_trace_mono_ns(&t, s2->start) - ddl_trace_mono_ns(&t, s1->start)) / 1e6;
	double pd = (double)ddl_trace_dur_ns(&t, p) / 1e6;
	CHECK(gap >= 199.0 && gap < 240.0, "200 ms sleep measured as %.3f ms", gap);
	CHECK(pd >= 99.0 && pd < 140.0, "100 ms poll measured as %.3f ms", pd);
	CHECK(p->flags & DDL_EVF_SOCKWAIT, "poll on a socket not flagged");
	int64_t real0 = ddl_trace_real_ns(&t, t.hdr.start_ticks);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	int64_t age = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec - real0;
	CHECK(age > 0 && age < 30000000000LL, "realtime anchor off by %lld ns", (long long)age);
	ddl_trace_free(&t);
	trm(dir);
	return DDL_PASS;
}
