/*
 * Trace format tests through the public reader: a trace written by the
 * library round-trips exactly; every prefix of it reads as truncated without
 * losing complete chunks; damage to any chunk is reported with its offset
 * and the other chunks still read; bad headers get clear errors; ticks map
 * to real time.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

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
	if (!strcmp(mode, "many")) { /* 1,200,000 events */
		for (int i = 0; i < 600000; i++)
			if (send(sv[0], buf, 1, 0) != 1 || recv(sv[1], buf, 1, 0) != 1)
				return 99;
		return 0;
	}
	if (!strcmp(mode, "rare") || !strcmp(mode, "rare-dense")) {
		/* socket calls with a file opened and read among them: every 50th
		 * pair, or with every pair (too many to keep their places) */
		int every = !strcmp(mode, "rare") ? 50 : 1;
		for (int i = 0; i < 6000; i++) {
			if (send(sv[0], buf, 1, 0) != 1 || recv(sv[1], buf, 1, 0) != 1)
				return 99;
			if (i % every == 0) {
				int fd = open("/etc/passwd", O_RDONLY);
				if (fd < 0 || read(fd, buf, 1) != 1)
					return 99;
				close(fd);
			}
		}
		return 0;
	}
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

/* The codecs a trace can be written with: DDLPROF_COMPRESS, the chunk flag
 * its compressed chunks carry and the header's feature bit. */
static const struct ddl_codec {
	const char *env; /* NULL: the default */
	const char *name;
	uint16_t flag;
	uint64_t feat;
} ddl_codecs[] = {
	{"DDLPROF_COMPRESS=lz4", "lz4", DDL_CHUNKF_LZ4, DDL_FEAT_LZ4},
	{"DDLPROF_COMPRESS=zstd", "zstd", DDL_CHUNKF_ZSTD, DDL_FEAT_ZSTD},
	{"DDLPROF_COMPRESS=none", "raw", 0, 0},
	{NULL, "default (lz4)", DDL_CHUNKF_LZ4, DDL_FEAT_LZ4},
	{"DDLPROF_COMPRESS=1", "1 (lz4)", DDL_CHUNKF_LZ4, DDL_FEAT_LZ4},
	{"DDLPROF_COMPRESS=0", "0 (raw)", 0, 0},
};
#define DDL_FIXTURE_CODECS 3 /* the first three: lz4, zstd, raw */

/* The file's chunks carry the codec's flag (at least one events chunk) and
 * no other; its header names the codec. */
static int ddl_check_codec(const char *path, const struct ddl_codec *k)
{
	size_t size, off[4096];
	unsigned char *m = ddl_slurp(path, &size);
	struct ddl_file_header h;
	memcpy(&h, m, sizeof h);
	CHECK((h.features & (DDL_FEAT_LZ4 | DDL_FEAT_ZSTD)) == k->feat, "%s: features 0x%llx",
	      k->name, (unsigned long long)h.features);
	unsigned want_min = k->feat == DDL_FEAT_LZ4 ? DDL_FORMAT_MIN_READER_LZ4 : 1;
	CHECK(h.version == DDL_FORMAT_VERSION && h.min_reader == want_min, "%s: version %u min_reader %u",
	      k->name, h.version, h.min_reader);
	size_t nc = ddl_chunks(m, size, h.header_size, off, 4096), flagged = 0;
	for (size_t i = 0; i < nc; i++) {
		struct ddl_chunk c;
		memcpy(&c, m + off[i], sizeof c);
		CHECK(c.flags == 0 || c.flags == k->flag, "%s: chunk %zu has flags 0x%x", k->name, i,
		      c.flags);
		flagged += c.type == DDL_CHUNK_EVENTS && c.flags == k->flag;
	}
	CHECK(flagged > 0, "%s: no events chunk written with flags 0x%x", k->name, k->flag);
	free(m);
	return DDL_PASS;
}

int test_reader_roundtrip(void)
{
	for (size_t k = 0; k < sizeof ddl_codecs / sizeof ddl_codecs[0]; k++) {
		char *dir = tmpdir();
		char *path = ddl_make_trace(dir, "roundtrip", ddl_codecs[k].env);
		CHECK(path, "no trace written (%s)", ddl_codecs[k].name);
		struct ddl_trace t;
		char err[256];
		CHECK(ddl_trace_read(path, &t, err, sizeof err) == 0, "%s", err);
		CHECK(t.nproblems == 0, "%s: problems: %s", ddl_codecs[k].name, t.problems[0]);
		struct stat st;
		stat(path, &st);
		CHECK((st.st_mode & 0777) == 0600, "trace mode %o", st.st_mode & 0777);
		int rc = ddl_check_roundtrip(&t);
		if (rc == DDL_PASS)
			rc = ddl_check_codec(path, &ddl_codecs[k]);
		ddl_trace_free(&t);
		free(path);
		trm(dir);
		if (rc != DDL_PASS) {
			fprintf(stderr, "    (written with %s)\n", ddl_codecs[k].name);
			return rc;
		}
	}
	return DDL_PASS;
}

/* A trace written by the library with one codec: its bytes, what the
 * reader makes of it, and where each chunk starts. */
struct ddl_fixture {
	char *dir, *path;
	unsigned char *m;
	size_t size;
	struct ddl_trace full;
	size_t off[4096], nc;
};

static int ddl_fixture_make(struct ddl_fixture *f, const struct ddl_codec *k)
{
	char err[256];
	f->dir = tmpdir();
	f->path = ddl_make_trace(f->dir, "roundtrip", k->env);
	CHECK(f->path, "no trace (%s)", k->name);
	f->m = ddl_slurp(f->path, &f->size);
	CHECK(ddl_trace_read(f->path, &f->full, err, sizeof err) == 0, "%s", err);
	CHECK(f->full.nproblems == 0, "%s: %s", k->name, f->full.problems[0]);
	f->nc = ddl_chunks(f->m, f->size, f->full.hdr.header_size, f->off, 4096);
	return DDL_PASS;
}

static void ddl_fixture_free(struct ddl_fixture *f)
{
	ddl_trace_free(&f->full);
	free(f->m);
	free(f->path);
	trm(f->dir);
}

static int ddl_truncation_one(const struct ddl_codec *k)
{
	static struct ddl_fixture fx;
	if (ddl_fixture_make(&fx, k) != DDL_PASS)
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
				expect += c.raw_size / sizeof(struct ddl_event);
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

int test_reader_truncation_every_offset(void)
{
	for (int k = 0; k < DDL_FIXTURE_CODECS; k++)
		if (ddl_truncation_one(&ddl_codecs[k]) != DDL_PASS) {
			fprintf(stderr, "    (written with %s)\n", ddl_codecs[k].name);
			return DDL_FAIL;
		}
	return DDL_PASS;
}

/* Sets a chunk's checksums to match its (changed) header and payload. */
static void ddl_chunk_reseal(unsigned char *x, size_t at)
{
	struct ddl_chunk c;
	memcpy(&c, x + at, sizeof c);
	c.crc = ddl_crc32c(x + at + sizeof c, c.size);
	c.hcrc = ddl_crc32c(&c, offsetof(struct ddl_chunk, hcrc));
	memcpy(x + at, &c, sizeof c);
}

/* Reads X (SIZE bytes) as BAD; the chunk at AT, which held LOST events,
 * must be the first problem, with SAYS, and every other event kept; with
 * DAMAGE, the trace must be marked corrupt. */
static int ddl_expect_problem(const char *bad, const unsigned char *x, size_t size, size_t at,
                              const char *says, int damage, size_t lost, size_t full_nev,
                              const char *what)
{
	char err[256], where[64];
	ddl_spit(bad, x, size);
	struct ddl_trace t;
	CHECK(ddl_trace_read(bad, &t, err, sizeof err) == 0, "%s: %s", what, err);
	snprintf(where, sizeof where, "offset %zu:", at);
	CHECK((t.corrupt || !damage) && t.nproblems >= 1 && strstr(t.problems[0], bad) &&
	      strstr(t.problems[0], where) && strstr(t.problems[0], says),
	      "%s: problem '%s', expected '%s' and '%s'", what, t.nproblems ? t.problems[0] : "none",
	      where, says);
	CHECK(t.nev + lost == full_nev, "%s: %zu events, full %zu, chunk held %zu", what, t.nev,
	      full_nev, lost);
	ddl_trace_free(&t);
	return DDL_PASS;
}

static int ddl_corruption_one(const struct ddl_codec *k)
{
	static struct ddl_fixture fx;
	if (ddl_fixture_make(&fx, k) != DDL_PASS)
		return DDL_FAIL;
	char *dir = fx.dir, err[256], what[128];
	unsigned char *m = fx.m;
	size_t size = fx.size, nc = fx.nc, *off = fx.off;
	struct ddl_trace full = fx.full;
	CHECK(nc >= 3, "only %zu chunks", nc);
	char bad[PATH_MAX];
	snprintf(bad, sizeof bad, "%s/bad.ddlt", dir);
	unsigned char *x = malloc(size + 64);
	/* positions: magic, type, size, crc fields of the header, and the payload */
	static const size_t at[] = {0, 4, 8, 16, 20, 24, 30};
	for (size_t i = 0; i < nc; i++) {
		struct ddl_chunk c;
		memcpy(&c, m + off[i], sizeof c);
		size_t lost = c.type == DDL_CHUNK_EVENTS ? c.raw_size / sizeof(struct ddl_event) : 0;
		for (size_t a = 0; a < sizeof at / sizeof at[0]; a++) {
			if (at[a] >= sizeof c + c.size)
				continue;
			memcpy(x, m, size);
			x[off[i] + at[a]] ^= 0x5a;
			ddl_spit(bad, x, size);
			struct ddl_trace t;
			CHECK(ddl_trace_read(bad, &t, err, sizeof err) == 0, "chunk %zu byte %zu: %s", i,
			      at[a], err);
			char where[64];
			snprintf(where, sizeof where, "offset %zu:", off[i]);
			CHECK(t.corrupt && t.nproblems >= 1 && strstr(t.problems[0], bad) &&
			      strstr(t.problems[0], where),
			      "chunk %zu byte %zu: problem '%s', expected %s", i, at[a],
			      t.nproblems ? t.problems[0] : "none", where);
			CHECK(t.nev + lost == full.nev || (c.type != DDL_CHUNK_EVENTS && t.nev == full.nev),
			      "chunk %zu byte %zu: %zu events, full %zu, chunk held %zu", i, at[a], t.nev,
			      full.nev, lost);
			ddl_trace_free(&t);
		}
		/* Damage that passes the checksums, as a faulty writer or a forger
		 * would make it: the codec itself must catch it. */
		if (c.flags & (DDL_CHUNKF_ZSTD | DDL_CHUNKF_LZ4)) {
			static const int dsize[] = {32, -32, -1};
			for (size_t d = 0; d < sizeof dsize / sizeof dsize[0]; d++) {
				/* raw_size 32 more or less than the payload holds, or the
				 * payload's last byte cut off */
				memcpy(x, m, size);
				struct ddl_chunk y = c;
				size_t n = size;
				if (dsize[d] == -1) {
					memmove(x + off[i] + sizeof c + c.size - 1, m + off[i] + sizeof c + c.size,
					        size - (off[i] + sizeof c + c.size));
					y.size--;
					n--;
				} else {
					y.raw_size = (uint32_t)((int64_t)c.raw_size + dsize[d]);
				}
				memcpy(x + off[i], &y, sizeof y);
				ddl_chunk_reseal(x, off[i]);
				snprintf(what, sizeof what, "%s chunk %zu, %s %+d", k->name, i,
				         dsize[d] == -1 ? "size" : "raw_size", dsize[d]);
				if (ddl_expect_problem(bad, x, n, off[i], "does not decompress", 1, lost,
				                       full.nev, what) != DDL_PASS)
					return DDL_FAIL;
			}
			/* a payload of garbage, and payload bytes flipped one at a time:
			 * refused, or (a flipped literal) decoded to raw_size bytes */
			memcpy(x, m, size);
			for (size_t b = 0; b < c.size; b++)
				x[off[i] + sizeof c + b] = (unsigned char)(b * 151 + 7);
			ddl_chunk_reseal(x, off[i]);
			snprintf(what, sizeof what, "%s chunk %zu, garbage payload", k->name, i);
			if (ddl_expect_problem(bad, x, size, off[i], "does not decompress", 1, lost,
			                       full.nev, what) != DDL_PASS)
				return DDL_FAIL;
			for (size_t b = 0; b < c.size; b += 1 + c.size / 61) {
				memcpy(x, m, size);
				x[off[i] + sizeof c + b] ^= 0xa5;
				ddl_chunk_reseal(x, off[i]);
				ddl_spit(bad, x, size);
				struct ddl_trace t;
				CHECK(ddl_trace_read(bad, &t, err, sizeof err) == 0, "%s", err);
				char where[64];
				snprintf(where, sizeof where, "offset %zu:", off[i]);
				CHECK(t.nproblems == 0 ? t.nev == full.nev
				                       : t.corrupt && strstr(t.problems[0], where) &&
				                                 t.nev + lost == full.nev,
				      "%s chunk %zu, payload byte %zu flipped: %zu events of %zu, '%s'", k->name,
				      i, b, t.nev, full.nev, t.nproblems ? t.problems[0] : "no problem");
				ddl_trace_free(&t);
			}
			/* both codecs named at once */
			memcpy(x, m, size);
			struct ddl_chunk y = c;
			y.flags = DDL_CHUNKF_ZSTD | DDL_CHUNKF_LZ4;
			memcpy(x + off[i], &y, sizeof y);
			ddl_chunk_reseal(x, off[i]);
			snprintf(what, sizeof what, "%s chunk %zu, two codec flags", k->name, i);
			if (ddl_expect_problem(bad, x, size, off[i], "two codecs", 1, lost, full.nev,
			                       what) != DDL_PASS)
				return DDL_FAIL;
		} else if (c.size > 0) {
			/* raw: two sizes */
			memcpy(x, m, size);
			struct ddl_chunk y = c;
			y.raw_size += 32;
			memcpy(x + off[i], &y, sizeof y);
			ddl_chunk_reseal(x, off[i]);
			snprintf(what, sizeof what, "%s chunk %zu, raw_size +32", k->name, i);
			if (ddl_expect_problem(bad, x, size, off[i], "two sizes", 1, lost, full.nev,
			                       what) != DDL_PASS)
				return DDL_FAIL;
		}
		/* a flag from a newer writer: the chunk is skipped, saying so (a
		 * problem; whether it counts as damage is the reader's choice) */
		memcpy(x, m, size);
		struct ddl_chunk y = c;
		y.flags |= 0x8;
		memcpy(x + off[i], &y, sizeof y);
		ddl_chunk_reseal(x, off[i]);
		snprintf(what, sizeof what, "%s chunk %zu, unknown flag", k->name, i);
		if (ddl_expect_problem(bad, x, size, off[i], "unknown to this reader", 0, lost, full.nev,
		                       what) != DDL_PASS)
			return DDL_FAIL;
	}
	free(x);
	ddl_fixture_free(&fx);
	return DDL_PASS;
}

int test_reader_corruption_every_chunk(void)
{
	for (int k = 0; k < DDL_FIXTURE_CODECS; k++)
		if (ddl_corruption_one(&ddl_codecs[k]) != DDL_PASS) {
			fprintf(stderr, "    (written with %s)\n", ddl_codecs[k].name);
			return DDL_FAIL;
		}
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

/*
 * The report short of memory (ulimit -v, at sizes down from where it
 * reads everything): it reads the trace in full, or it says it did not
 * (exit 4, "incomplete": true, a line on stderr), and never reports part
 * of the events as if they were all.
 */
int test_reader_out_of_memory(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return DDL_SKIP; /* AddressSanitizer's shadow memory does not live under ulimit -v */
#endif
	char *dir = tmpdir();
	char *path = ddl_make_trace(dir, "many", "DDLPROF_BUFFER_EVENTS=1048576");
	CHECK(path, "no trace made");
	free(path);
	int st;
	json_t *full = treport(dir, &st);
	CHECK(full && st == 0, "the report with all its memory: status %d", st);
	json_int_t all = json_integer_value(tjget(json_array_get(json_object_get(full, "processes"), 0), "events"));
	CHECK(all >= 1200000 && !json_is_true(json_object_get(full, "incomplete")), "%lld events read in full",
	      (long long)all);
	json_decref(full);
	int said = 0, whole = 0;
	for (int kb = 160000; kb >= 40000; kb -= 10000) {
		char cmd[PATH_MAX * 2];
		snprintf(cmd, sizeof cmd, "ulimit -v %d; exec %s --json %s", kb, tbuild("bin/ddlprof-report"), dir);
		char *argv[] = {"/bin/sh", "-c", cmd, NULL};
		struct ddl_run_result r;
		CHECK(trun(argv, NULL, 60, &r) == 0, "ulimit -v %d: the report did not finish", kb);
		int code = WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1;
		json_t *j = json_loads(r.out, 0, NULL);
		json_int_t got = j ? json_integer_value(tjget(json_array_get(json_object_get(j, "processes"), 0),
		                                              "events")) : -1;
		if (code == 0) {
			CHECK(got == all && !json_is_true(json_object_get(j, "incomplete")),
			      "ulimit -v %d: exit 0 with %lld of %lld events (incomplete %d)", kb, (long long)got,
			      (long long)all, json_is_true(json_object_get(j, "incomplete")));
			whole++;
		} else if (code == 4) {
			CHECK(strstr(r.err, "out of memory") && (!j || json_is_true(json_object_get(j, "incomplete"))),
			      "ulimit -v %d: exit 4 without saying why: %s", kb, r.err);
			said++;
		}
		fprintf(stderr, "    ulimit -v %d: exit %d, %lld of %lld events\n", kb, code, (long long)got,
		        (long long)all);
		json_decref(j);
		trun_free(&r);
	}
	CHECK(said > 0, "no memory limit made the report incomplete (%d read it whole)", whole);
	return DDL_PASS;
}

/*
 * Decompression bombs: ten zstd chunks of 64 MiB of zeros (about 2 KB
 * each stored) after a real trace. They are refused unread, each named
 * with its offset; the rest of the trace is reported, in little memory.
 */
int test_reader_bomb(void)
{
	char *dir = tmpdir();
	char *path = ddl_make_trace(dir, "roundtrip", NULL);
	CHECK(path, "no trace made");
	size_t n;
	unsigned char *m = ddl_slurp(path, &n);
	CHECK(m, "cannot read %s", path);
	size_t raw = 64u << 20, cap = ZSTD_compressBound(raw);
	void *zeros = calloc(1, raw), *z = malloc(cap);
	CHECK(zeros && z, "memory");
	size_t zn = ZSTD_compress(z, cap, zeros, raw, 3);
	CHECK(!ZSTD_isError(zn), "zstd");
	free(zeros);
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite(m, 1, n, f) == n, "rewrite %s", path);
	for (int k = 0; k < 10; k++) {
		struct ddl_chunk c = {DDL_CHUNK_MAGIC, DDL_CHUNK_EVENTS, DDL_CHUNKF_ZSTD, (uint32_t)zn,
		                      (uint32_t)raw, 0, 0};
		c.crc = ddl_crc32c(z, zn);
		c.hcrc = ddl_crc32c(&c, offsetof(struct ddl_chunk, hcrc));
		CHECK(fwrite(&c, sizeof c, 1, f) == 1 && fwrite(z, 1, zn, f) == zn, "append");
	}
	CHECK(fclose(f) == 0, "close");
	free(z);
	free(m);
	fprintf(stderr, "    10 chunks of %zu bytes, each claiming %zu\n", zn, raw);
	char cmd[PATH_MAX * 2];
#if defined(__SANITIZE_ADDRESS__)
	snprintf(cmd, sizeof cmd, "exec %s --json %s", tbuild("bin/ddlprof-report"), path);
#else
	/* 640 MB of events were it unpacked: it must not be */
	snprintf(cmd, sizeof cmd, "ulimit -v 150000; exec %s --json %s", tbuild("bin/ddlprof-report"), path);
#endif
	char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	struct ddl_run_result r;
	CHECK(trun(argv, NULL, 30, &r) == 0, "the report did not finish");
	int code = WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1;
	int said = 0;
	for (const char *at = r.err; (at = strstr(at, "more than 256 to 1")); at++)
		said++;
	json_t *j = json_loads(r.out, 0, NULL);
	json_int_t ev = json_integer_value(tjget(json_array_get(json_object_get(j, "processes"), 0), "events"));
	fprintf(stderr, "    exit %d, %d chunks refused, %lld events reported\n", code, said, (long long)ev);
	/* the first 8 named (a trace keeps 8 problems), every one skipped */
	CHECK(code == 1 && said == 8 && strstr(r.err, path) && strstr(r.err, "offset"),
	      "exit %d, %d refusals: %s", code, said, r.err);
	CHECK(j && json_is_true(json_object_get(j, "corrupt")) && ev > 0 && ev < 10000,
	      "the rest of the trace not reported as damaged: %lld events", (long long)ev);
	json_decref(j);
	trun_free(&r);
	return DDL_PASS;
}

/*
 * A real trace followed by 16 GiB of holes (a sparse file), and one
 * followed by 48 MiB of written zeros: each read, its damage named once,
 * in well under 5 s (a check at every byte took 41.8 s for the holes).
 */
int test_reader_sparse(void)
{
	char *dir = tmpdir();
	char *path = ddl_make_trace(dir, "roundtrip", NULL);
	CHECK(path, "no trace made");
	struct stat st;
	CHECK(stat(path, &st) == 0, "stat");
	for (int zeros = 0; zeros < 2; zeros++) {
		if (zeros) {
			CHECK(truncate(path, st.st_size) == 0, "truncate back");
			FILE *f = fopen(path, "ab");
			static char z[1 << 20];
			for (int i = 0; f && i < 48; i++)
				CHECK(fwrite(z, 1, sizeof z, f) == sizeof z, "write zeros");
			CHECK(f && fclose(f) == 0, "zeros");
		} else {
			CHECK(truncate(path, st.st_size + (16ll << 30)) == 0, "a 16 GiB hole: %s", strerror(errno));
		}
		char *argv[] = {(char *)tbuild("bin/ddlprof-report"), "--json", path, NULL};
		struct ddl_run_result r;
		double t0 = tnow();
		CHECK(trun(argv, NULL, 60, &r) == 0, "the report did not finish");
		double took = tnow() - t0;
		json_t *j = json_loads(r.out, 0, NULL);
		json_int_t ev = json_integer_value(tjget(json_array_get(json_object_get(j, "processes"), 0), "events"));
		fprintf(stderr, "    %s: %.2f s, exit %d, %lld events\n", zeros ? "48 MiB of zeros" : "16 GiB of holes",
		        took, WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1, (long long)ev);
		CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 1 && strstr(r.err, "damaged chunk header"),
		      "status %#x: %s", r.status, r.err);
		CHECK(ev >= 2 * RT_N, "%lld events read before the zeros", (long long)ev);
		CHECK(took < 5, "%.1f s", took);
		json_decref(j);
		trun_free(&r);
	}
	free(path);
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

/* PATHS loaded into S as ddlprof-report loads them: lazily (trace_events.c). */
static int ddl_load_lazy(struct ddl_traceset *s, char *const *paths, int n, char *err, size_t errlen)
{
	ddl_traceset_lazy = 1;
	int rc = ddl_traceset_load(s, paths, n, err, errlen);
	ddl_traceset_lazy = 0;
	return rc;
}

/*
 * What the events' budget holds (trace_events.c): the events of released
 * traces (the first read's among them), the arrays kept for the next
 * reads to fill, and the stages' working arrays charged against it,
 * together never past the budget while nothing is held; a charge makes room by giving back released
 * events, which are then read again, the same.
 */
int test_reader_events_budget(void)
{
	enum { NT = 6 };
	char *dirs[NT], err[256];
	for (int i = 0; i < NT; i++) {
		dirs[i] = tmpdir();
		char *path = ddl_make_trace(dirs[i], "roundtrip", NULL);
		CHECK(path, "no trace %d made", i);
		free(path);
	}
	struct ddl_traceset s;
	int rc = ddl_load_lazy(&s, dirs, NT, err, sizeof err);
	CHECK(rc == 0 && s.n == NT, "load: %s (%zu traces)", err, s.n);
	size_t one = s.t[0].nev * sizeof(struct ddl_event), budget = ddl_events_budget;
	/* the first read kept them all: they fit the default budget */
	CHECK(one > 0 && ddl_events_in_memory() == NT * one, "%zu bytes a trace, %zu in memory", one,
	      ddl_events_in_memory());
	struct ddl_event *first = malloc(one);
	CHECK(first, "no memory");
	ddl_trace_hold(&s.t[0]);
	memcpy(first, s.t[0].ev, one);
	ddl_trace_release(&s.t[0]);
	/* room for two and a half traces' events: never more in memory, with
	 * the arrays kept for reuse, however the traces are held in turn */
	ddl_events_budget = one * 5 / 2;
	size_t most = 0;
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < NT; i++) {
			ddl_trace_hold(&s.t[i]);
			CHECK(s.t[i].ev, "trace %d: no events", i);
			ddl_trace_release(&s.t[i]);
			size_t m = ddl_events_in_memory();
			most = m > most ? m : most;
		}
	CHECK(most <= ddl_events_budget && most >= 2 * one, "%zu bytes in memory, budget %zu, a trace %zu", most,
	      ddl_events_budget, one);
	/* a charge of the whole budget gives everything back */
	ddl_trace_hold(&s.t[0]);
	ddl_trace_release(&s.t[0]);
	CHECK(s.t[0].ev, "just released, gone");
	ddl_events_charge(ddl_events_budget);
	int left = 0;
	for (int i = 0; i < NT; i++)
		left += s.t[i].ev != NULL;
	CHECK(left == 0 && ddl_events_in_memory() == ddl_events_budget, "%d traces still in memory, %zu bytes",
	      left, ddl_events_in_memory());
	ddl_events_uncharge(ddl_events_budget);
	CHECK(ddl_events_in_memory() == 0, "%zu bytes after the charge given back", ddl_events_in_memory());
	/* a charged array grows with room made first, and is read the same */
	void *arr = NULL;
	size_t cap = 0;
	ddl_trace_hold(&s.t[0]);
	CHECK(!memcmp(s.t[0].ev, first, one), "read again: other events");
	ddl_trace_release(&s.t[0]);
	CHECK(ddl_grow_charged(&arr, &cap, 4096, 8) == 0 && cap >= 4096, "grow: cap %zu", cap);
	CHECK(ddl_events_in_memory() <= ddl_events_budget && ddl_events_in_memory() >= cap * 8,
	      "%zu bytes in memory with %zu charged", ddl_events_in_memory(), cap * 8);
	ddl_events_uncharge(cap * 8);
	free(arr);
	ddl_events_budget = budget;
	free(first);
	ddl_traceset_free(&s);
	CHECK(ddl_events_in_memory() == 0, "%zu bytes left after the set is freed", ddl_events_in_memory());
	for (int i = 0; i < NT; i++) {
		trm(dirs[i]);
		free(dirs[i]);
	}
	return 0;
}

/*
 * Events on demand (trace_events.c), what keeps ddlprof-report's memory
 * from growing with the events: a lazy set holds a trace's events only
 * while it is held; with a budget of 0 released events go at once and are
 * read again when held, the same bytes; a file that changed in between
 * (cut shorter, replaced) leaves the trace without events from then on,
 * incomplete, the reason, naming the file, among its problems. A file
 * cut shorter while it is mapped and read ends there (SIGBUS caught),
 * not in a crash.
 */
int test_reader_events_on_demand(void)
{
	char *dir = tmpdir(), *dir2 = tmpdir(), err[256];
	char *path = ddl_make_trace(dir, "roundtrip", NULL);
	char *other = ddl_make_trace(dir2, "roundtrip", NULL);
	CHECK(path && other, "no trace made");
	size_t size;
	unsigned char *m = ddl_slurp(path, &size);
	struct ddl_trace full;
	CHECK(ddl_trace_read(path, &full, err, sizeof err) == 0, "%s", err);
	CHECK(full.nev > RT_N, "%zu events", full.nev);
	size_t budget = ddl_events_budget;
	ddl_events_budget = 0;
	char *paths[] = {dir};
	for (int change = 0; change < 2; change++) {
		struct ddl_traceset s;
		int rc = ddl_load_lazy(&s, paths, 1, err, sizeof err);
		CHECK(rc == 0 && s.n == 1, "load: %s", err);
		struct ddl_trace *t = &s.t[0];
		CHECK(t->lazy && !t->ev && t->nev == full.nev, "lazy: events %p, %zu of %zu", (void *)t->ev, t->nev,
		      full.nev);
		CHECK(ddl_trace_has_class(t, DDL_CLASS_TX) && !ddl_trace_has_class(t, DDL_CLASS_DEVICE),
		      "classes %#x", t->classes);
		unsigned long reads = ddl_events_rereads;
		for (int round = 0; round < 2; round++) {
			ddl_trace_hold(t);
			ddl_trace_hold(t); /* holds nest */
			CHECK(t->ev && !memcmp(t->ev, full.ev, full.nev * sizeof *full.ev), "round %d: other events",
			      round);
			ddl_trace_release(t);
			CHECK(t->ev != NULL, "round %d: gone while still held", round);
			ddl_trace_release(t);
			CHECK(!t->ev, "round %d: kept past a budget of 0", round);
		}
		CHECK(ddl_events_rereads - reads == 2, "%lu reads for 2 holds", ddl_events_rereads - reads);
		if (change == 0) {
			CHECK(truncate(path, (off_t)size / 2) == 0, "truncate: %s", strerror(errno));
		} else {
			CHECK(rename(other, path) == 0, "rename: %s", strerror(errno));
		}
		ddl_trace_hold(t);
		const char *why = change ? "the file was replaced" : "the file was cut shorter";
		CHECK(!t->ev && !t->nev && t->ev_lost == 1 && t->incomplete, "%s: events still read", why);
		CHECK(t->nproblems == 1 && strstr(t->problems[0], path) && strstr(t->problems[0], why),
		      "%d problems: %s", t->nproblems, t->nproblems ? t->problems[0] : "");
		ddl_trace_release(t);
		ddl_trace_hold(t); /* none still: not read again, nor said twice */
		CHECK(!t->nev && t->nproblems == 1, "%zu events, %d problems", t->nev, t->nproblems);
		ddl_trace_release(t);
		ddl_traceset_free(&s);
		ddl_spit(path, m, size); /* as it was */
	}
	ddl_events_budget = budget;
	/* cut shorter while it is read: the mapping's pages past the new end
	 * raise SIGBUS, which ends the trace there */
	int fd = open(path, O_RDWR);
	void *map = fd >= 0 ? mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
	CHECK(map != MAP_FAILED, "map: %s", strerror(errno));
	CHECK(ftruncate(fd, 4096) == 0, "truncate: %s", strerror(errno));
	struct ddl_trace cut;
	CHECK(ddl_trace_parse(map, size, path, &cut, err, sizeof err) == 0, "%s", err);
	CHECK(cut.shrunk && cut.truncated && cut.nev < full.nev && cut.nproblems >= 1 &&
	          strstr(cut.problems[cut.nproblems - 1], "cut shorter while it was read"),
	      "shrunk %d, %zu of %zu events, %d problems", cut.shrunk, cut.nev, full.nev, cut.nproblems);
	ddl_trace_free(&cut);
	munmap(map, size);
	close(fd);
	ddl_trace_free(&full);
	free(m);
	free(path);
	free(other);
	trm(dir);
	trm(dir2);
	return DDL_PASS;
}

/*
 * The first read of a lazy set keeps the events while they fit the
 * budget beside those in memory (trace_set.c): a hold then reads nothing
 * again, the events are those a full read gives, and they count among
 * those in memory; with a budget smaller than the trace none are kept,
 * and the first hold reads them. The same whatever the budget: the
 * events, and (ddl_events_in_memory) none left once the set is freed.
 */
int test_reader_first_read_keeps(void)
{
	char *dir = tmpdir(), err[256];
	char *path = ddl_make_trace(dir, "roundtrip", NULL);
	CHECK(path, "no trace made");
	struct ddl_trace full;
	CHECK(ddl_trace_read(path, &full, err, sizeof err) == 0, "%s", err);
	size_t bytes = full.nev * sizeof *full.ev, budget = ddl_events_budget;
	char *paths[] = {dir};
	for (int fits = 1; fits >= 0; fits--) {
		ddl_events_budget = fits ? bytes + 4096 : bytes / 2;
		struct ddl_traceset s;
		int rc = ddl_load_lazy(&s, paths, 1, err, sizeof err);
		CHECK(rc == 0 && s.n == 1, "load: %s", err);
		struct ddl_trace *t = &s.t[0];
		CHECK(t->lazy && t->nev == full.nev && (t->ev != NULL) == fits, "budget %zu of %zu bytes: events %s",
		      ddl_events_budget, bytes, t->ev ? "kept" : "not kept");
		CHECK(ddl_events_in_memory() == (fits ? bytes : 0), "%zu bytes in memory, %zu kept",
		      ddl_events_in_memory(), fits ? bytes : 0);
		unsigned long reads = ddl_events_rereads;
		ddl_trace_hold(t);
		CHECK(t->ev && !memcmp(t->ev, full.ev, bytes), "budget %zu: other events", ddl_events_budget);
		ddl_trace_release(t);
		CHECK(ddl_events_rereads - reads == (fits ? 0u : 1u), "budget %zu: %lu reads for a hold",
		      ddl_events_budget, ddl_events_rereads - reads);
		ddl_traceset_free(&s);
		CHECK(ddl_events_in_memory() == 0, "%zu bytes left after the set is freed", ddl_events_in_memory());
	}
	ddl_events_budget = budget;
	ddl_trace_free(&full);
	trm(dir);
	free(dir);
	free(path);
	return DDL_PASS;
}

/*
 * The checksum run in three lanes (crc32c.h) is the table's, byte for
 * byte: lengths about the three-lane block (3 x DDL_CRC32C_LANE) and its
 * multiples, every alignment of 8, and a register carried in from before
 * (a chunk checked in pieces). Fails if the lanes are joined wrongly or
 * the tail after the blocks is dropped.
 */
int test_reader_crc32c_lanes(void)
{
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("sse4.2"))
		return DDL_SKIP;
	size_t blk = 3 * DDL_CRC32C_LANE, max = 4 * blk + 64;
	unsigned char *b = malloc(max + 8);
	CHECK(b, "out of memory");
	uint64_t x = 0x9e3779b97f4a7c15u;
	for (size_t i = 0; i < max + 8; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		b[i] = (unsigned char)x;
	}
	size_t lens[] = {0, 1, 7, 8, 4095, blk - 1, blk, blk + 1, blk + 9, 2 * blk, 2 * blk + 4093,
	                 3 * blk - 8, 4 * blk + 63};
	for (size_t a = 0; a < 8; a++)
		for (size_t k = 0; k < sizeof lens / sizeof *lens; k++) {
			size_t n = lens[k];
			uint32_t want = ~ddl_crc32c_sw(~0u, b + a, n), got = ddl_crc32c(b + a, n);
			CHECK(got == want, "length %zu at offset %zu: %08x, the table says %08x", n, a, got, want);
			uint32_t in = ddl_crc32c_sw(~0u, b, a); /* the bytes before, carried in */
			want = ddl_crc32c_sw(in, b + a, n);
			got = ddl_crc32c_hw(in, b + a, n);
			CHECK(got == want, "length %zu after %zu bytes: %08x, the table says %08x", n, a, got, want);
		}
	CHECK(ddl_crc32c("123456789", 9) == 0xe3069283u, "the check value of \"123456789\" is %08x",
	      ddl_crc32c("123456789", 9));
	free(b);
	return DDL_PASS;
#else
	return DDL_SKIP;
#endif
}

/*
 * A read again of a file that has not changed since the first read
 * (ddl_trace_read_again) does not check its payloads' checksums and clock
 * window again: the same events, counted in ddl_events_rereads_unchecked.
 * It does check them when the file changed within a second before the
 * first read (a coarse clock could hide a change made just after), and
 * when one byte of an event chunk changed in place after the first read,
 * same size and all: then that chunk fails its checksum, the trace has
 * other events than the first read found, and it loses them, incomplete.
 */
int test_reader_read_again_unchanged(void)
{
	char *dir = tmpdir(), err[256];
	char *path = ddl_make_trace(dir, "roundtrip", NULL);
	CHECK(path, "no trace made");
	size_t size;
	unsigned char *m = ddl_slurp(path, &size);
	struct ddl_trace full;
	CHECK(m && ddl_trace_read(path, &full, err, sizeof err) == 0, "%s", err);
	/* the middle of the first events chunk's payload */
	size_t off[4096], nc = ddl_chunks(m, size, full.hdr.header_size, off, 4096), payload = 0;
	for (size_t i = 0; i < nc && !payload; i++) {
		struct ddl_chunk c;
		memcpy(&c, m + off[i], sizeof c);
		if (c.type == DDL_CHUNK_EVENTS && c.size > 64)
			payload = off[i] + sizeof c + c.size / 2;
	}
	CHECK(payload, "no events chunk in %s", path);
	size_t budget = ddl_events_budget;
	ddl_events_budget = 0;
	char *paths[] = {dir};
	for (int step = 0; step < 3; step++) {
		if (step == 1) { /* a second on: the file is older than the read by more than a second */
			struct timespec sec = {1, 100000000};
			nanosleep(&sec, NULL);
		}
		struct ddl_traceset s;
		CHECK(ddl_load_lazy(&s, paths, 1, err, sizeof err) == 0 && s.n == 1, "load: %s", err);
		struct ddl_trace *t = &s.t[0];
		CHECK(!t->checks_failed && !t->ev, "first read: %u chunks kept out, events %p", t->checks_failed,
		      (void *)t->ev);
		if (step == 2) { /* one byte of the events, in place, after the first read */
			int fd = open(path, O_WRONLY);
			unsigned char b = m[payload] ^ 0x5a;
			CHECK(fd >= 0 && pwrite(fd, &b, 1, (off_t)payload) == 1, "pwrite: %s", strerror(errno));
			close(fd);
		}
		unsigned long unchecked = ddl_events_rereads_unchecked;
		ddl_trace_hold(t);
		if (step < 2) {
			CHECK(t->ev && t->nev == full.nev && !memcmp(t->ev, full.ev, full.nev * sizeof *full.ev),
			      "step %d: other events", step);
			CHECK(ddl_events_rereads_unchecked - unchecked == (step == 1 ? 1u : 0u),
			      "step %d: %lu reads again without the checks, want %d", step,
			      ddl_events_rereads_unchecked - unchecked, step == 1);
		} else {
			CHECK(!t->ev && t->ev_lost && t->incomplete && ddl_events_rereads_unchecked == unchecked,
			      "a byte changed in place: events %p, lost %d, %lu read without the checks",
			      (void *)t->ev, t->ev_lost, ddl_events_rereads_unchecked - unchecked);
		}
		ddl_trace_release(t);
		ddl_traceset_free(&s);
	}
	ddl_spit(path, m, size);
	ddl_events_budget = budget;
	ddl_trace_free(&full);
	free(m);
	free(path);
	trm(dir);
	free(dir);
	return DDL_PASS;
}

/*
 * The places a lazy read keeps of the events that are neither socket
 * calls nor argument records (ddl_trace.rare, ddl_trace_next_rare): for
 * a trace of socket calls with a file read every 50th pair, exactly those
 * events, in order, whether the events were kept by the first read or
 * read again (a budget of 0); for one with a file read every pair, too
 * many to keep (more than one in 16), so every event is gone over; every
 * event too once the file was written to (its modification time) before a
 * read again; and none at all once the events could not be read again
 * (the file cut shorter), not places past the events there are.
 */
int test_reader_rare_places(void)
{
	static const char *const modes[] = {"rare", "rare-dense"};
	size_t budget = ddl_events_budget;
	for (int m = 0; m < 2; m++)
		for (int b = 0; b < 2; b++) {
			char *dir = tmpdir(), err[256];
			char *path = ddl_make_trace(dir, modes[m], NULL);
			CHECK(path, "%s: no trace made", modes[m]);
			ddl_events_budget = b ? 0 : budget;
			struct ddl_traceset s;
			char *paths[] = {dir};
			CHECK(ddl_load_lazy(&s, paths, 1, err, sizeof err) == 0 && s.n == 1, "load: %s", err);
			struct ddl_trace *t = &s.t[0];
			ddl_trace_hold(t);
			size_t want = 0, socket = 0;
			for (size_t i = 0; i < t->nev; i++) {
				int c = ddl_event_class(t->ev[i].kind);
				want += !(DDL_CLASSES_COMMON >> c & 1);
				socket += c == DDL_CLASS_TX || c == DDL_CLASS_RX;
			}
			CHECK(socket >= 12000 && want >= (m ? 12000u : 240u), "%s: %zu socket calls, %zu others",
			      modes[m], socket, want);
			CHECK(t->rare_kept == !m, "%s, budget %zu: places %s", modes[m], ddl_events_budget,
			      t->rare_kept ? "kept" : "not kept");
			size_t n = 0, prev = 0;
			for (size_t x = 0, i; ddl_trace_next_rare(t, &x, &i); n++) {
				CHECK(i < t->nev && (n == 0 || i > prev), "%s: place %zu (%zu) out of order", modes[m], n, i);
				CHECK(m || !(DDL_CLASSES_COMMON >> ddl_event_class(t->ev[i].kind) & 1),
				      "%s: place %zu is a %s", modes[m], n, ddl_event_name(t->ev[i].kind));
				prev = i;
			}
			CHECK(n == (m ? t->nev : want), "%s: %zu places gone over, want %zu", modes[m], n,
			      m ? t->nev : want);
			ddl_trace_release(t);
			if (b) { /* read again once the file was written to (its times): every event */
				struct timespec tv[2] = {{0, UTIME_OMIT}, {time(NULL) + 7, 0}};
				CHECK(utimensat(AT_FDCWD, path, tv, 0) == 0, "utimensat: %s", strerror(errno));
				ddl_trace_hold(t);
				size_t all = 0;
				for (size_t x = 0, i; ddl_trace_next_rare(t, &x, &i);)
					all++;
				CHECK(t->nev && !t->rare_kept && all == t->nev, "%s: %zu of %zu events gone over after a write",
				      modes[m], all, t->nev);
				ddl_trace_release(t);
			}
			if (b) { /* read again once the file is cut shorter: none */
				CHECK(truncate(path, 4096) == 0, "truncate: %s", strerror(errno));
				ddl_trace_hold(t);
				size_t left = 0;
				for (size_t x = 0, i; ddl_trace_next_rare(t, &x, &i);)
					left++;
				CHECK(!t->nev && !left, "%s: %zu events, %zu places after the file was cut", modes[m], t->nev,
				      left);
				ddl_trace_release(t);
			}
			ddl_traceset_free(&s);
			ddl_events_budget = budget;
			free(path);
			trm(dir);
			free(dir);
		}
	return DDL_PASS;
}
