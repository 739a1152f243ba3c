/*
 * libFuzzer custom mutator and crossover for ddlprof trace files, shared
 * by fuzz_trace.c and fuzz_report.c (include it once per target). Every
 * chunk and the header carry a CRC32C, so plain byte mutations would stop
 * at the checksums. This mutator knows the layout (include/ddlprof/trace.h):
 * it mutates one chunk's decoded payload and stores it back raw, LZ4 or
 * zstd; or mutates the header, the chunk headers or the whole file as
 * bytes, or sets its clock fields to edge values; or adds, drops, repeats
 * and swaps chunks, or inserts hostile clock samples and events; then sets
 * every checksum right again, except now and then, so that damaged files
 * are still tried. The crossover splices the chunks of two inputs. An
 * input may hold two trace files one after the other (fuzz_report.c reads
 * them as two ranks): the second file's header is then carried as bytes
 * and its chunks fixed like the first's.
 */
#ifndef DDL_FUZZ_TRACE_MUTATOR_H
#define DDL_FUZZ_TRACE_MUTATOR_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>
#include <zstd.h>

#include "ddlprof/crc32c.h"
#include "ddlprof/trace.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
size_t LLVMFuzzerCustomCrossOver(const uint8_t *d1, size_t s1, const uint8_t *d2, size_t s2,
                                 uint8_t *out, size_t max_out, unsigned int seed);

#define FZ_CHUNK sizeof(struct ddl_chunk)
#define FZ_MAX_CHUNKS 256
#define FZ_RAW_MAX (1u << 20) /* decoded payloads the mutator works on */

static unsigned fz_rand(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 8;
}

struct fz_chunk {
	size_t off;      /* of the chunk header in the input */
	struct ddl_chunk c;
	int fits;        /* the whole payload is in the input */
};

/* The header's size, or 0 when the input has no usable header. */
static size_t fz_header_size(const uint8_t *d, size_t size)
{
	uint32_t hs;
	if (size < 16 || memcmp(d, DDL_IDENT, 4))
		return 0;
	memcpy(&hs, d + 12, 4);
	return hs >= 16 && hs <= 65536 && hs <= size ? hs : 0;
}

/* The chunks of D after the header (resynchronising on the magic). */
static size_t fz_chunks(const uint8_t *d, size_t size, size_t hs, struct fz_chunk *v)
{
	size_t n = 0, off = hs;
	while (off + FZ_CHUNK <= size && n < FZ_MAX_CHUNKS) {
		uint32_t magic;
		memcpy(&magic, d + off, 4);
		if (magic != DDL_CHUNK_MAGIC) {
			off++;
			continue;
		}
		v[n].off = off;
		memcpy(&v[n].c, d + off, FZ_CHUNK);
		v[n].fits = v[n].c.size <= size - off - FZ_CHUNK;
		off = v[n].fits ? off + FZ_CHUNK + v[n].c.size : size;
		n++;
	}
	return n;
}

/*
 * Sets the header's and every chunk's checksums right. CLAMP: a chunk
 * whose size runs past the end is cut to what is there.
 */
static void fz_fix(uint8_t *d, size_t size, int clamp)
{
	size_t hs = fz_header_size(d, size);
	if (!hs)
		return;
	uint32_t crc = ddl_crc32c(d, hs - 4);
	memcpy(d + hs - 4, &crc, 4);
	static struct fz_chunk v[FZ_MAX_CHUNKS];
	size_t n = fz_chunks(d, size, hs, v);
	for (size_t i = 0; i < n; i++) {
		struct ddl_chunk c = v[i].c;
		size_t room = size - v[i].off - FZ_CHUNK;
		if (!v[i].fits) {
			if (!clamp)
				continue;
			c.size = (uint32_t)room;
		}
		if (!c.flags)
			c.raw_size = c.size;
		c.crc = ddl_crc32c(d + v[i].off + FZ_CHUNK, c.size);
		c.hcrc = ddl_crc32c(&c, offsetof(struct ddl_chunk, hcrc));
		memcpy(d + v[i].off, &c, FZ_CHUNK);
	}
}

/* Appends a chunk of TYPE around RAW (N bytes), stored as CODEC picks. */
static size_t fz_put_chunk(uint8_t *out, size_t at, size_t max, uint16_t type, const uint8_t *raw,
                           size_t n, unsigned codec)
{
	struct ddl_chunk c = {DDL_CHUNK_MAGIC, type, 0, (uint32_t)n, (uint32_t)n, 0, 0};
	if (at + FZ_CHUNK > max)
		return 0;
	size_t room = max - at - FZ_CHUNK;
	uint8_t *p = out + at + FZ_CHUNK;
	if (codec == 1 && n && (size_t)LZ4_compressBound((int)n) <= room) {
		int k = LZ4_compress_default((const char *)raw, (char *)p, (int)n, (int)room);
		if (k <= 0)
			return 0;
		c.flags = DDL_CHUNKF_LZ4;
		c.size = (uint32_t)k;
	} else if (codec == 2 && n && ZSTD_compressBound(n) <= room) {
		size_t k = ZSTD_compress(p, room, raw, n, 1);
		if (ZSTD_isError(k))
			return 0;
		c.flags = DDL_CHUNKF_ZSTD;
		c.size = (uint32_t)k;
	} else {
		if (n > room)
			return 0;
		memmove(p, raw, n);
	}
	c.crc = ddl_crc32c(p, c.size);
	c.hcrc = ddl_crc32c(&c, offsetof(struct ddl_chunk, hcrc));
	memcpy(out + at, &c, FZ_CHUNK);
	return at + FZ_CHUNK + c.size;
}

/* The decoded payload of chunk C at D into RAW; its length, or -1. */
static long fz_decode(const uint8_t *d, const struct fz_chunk *c, uint8_t *raw)
{
	const uint8_t *p = d + c->off + FZ_CHUNK;
	if (!c->fits)
		return -1;
	if (c->c.flags == DDL_CHUNKF_LZ4) {
		if (c->c.raw_size > FZ_RAW_MAX)
			return -1;
		int k = LZ4_decompress_safe((const char *)p, (char *)raw, (int)c->c.size,
		                            (int)c->c.raw_size);
		return k < 0 ? -1 : k;
	}
	if (c->c.flags == DDL_CHUNKF_ZSTD) {
		if (c->c.raw_size > FZ_RAW_MAX)
			return -1;
		size_t k = ZSTD_decompress(raw, c->c.raw_size, p, c->c.size);
		return ZSTD_isError(k) ? -1 : (long)k;
	}
	if (c->c.size > FZ_RAW_MAX)
		return -1;
	memcpy(raw, p, c->c.size);
	return (long)c->c.size;
}

/* Hostile records to insert: clock samples at the edges, odd events. */
static size_t fz_hostile(uint8_t *raw, unsigned r, const struct ddl_file_header *h, uint16_t *type)
{
	static const int64_t edge[] = {INT64_MIN, INT64_MIN + 1, -1, 0, 1, INT64_MAX - 1, INT64_MAX,
	                               (int64_t)1 << 62, -((int64_t)1 << 62)};
	static const uint64_t tick[] = {0, 1, UINT64_MAX, UINT64_MAX - 1, (uint64_t)1 << 63,
	                                (uint64_t)1 << 32};
	const size_t ne = sizeof edge / sizeof *edge, nt = sizeof tick / sizeof *tick;
	if (r & 1) {
		struct ddl_clock_sample s[2];
		for (int i = 0; i < 2; i++) {
			r = r * 1103515245u + 12345u;
			s[i].ticks = (r >> 4) & 1 ? tick[(r >> 8) % nt] : h->start_ticks + (r >> 8);
			/* wrapping: the header's own start may be anything */
			s[i].mono_ns = (r >> 5) & 1 ? edge[(r >> 12) % ne]
			                            : (int64_t)((uint64_t)h->start_mono_ns - (r >> 12));
			s[i].real_ns = (r >> 6) & 1 ? edge[(r >> 16) % ne] : h->start_real_ns;
		}
		memcpy(raw, s, sizeof s);
		*type = DDL_CHUNK_CLOCK;
		return sizeof s;
	}
	struct ddl_event e[3];
	memset(e, 0, sizeof e);
	for (int i = 0; i < 3; i++) {
		r = r * 1103515245u + 12345u;
		e[i].start = (r >> 4) & 1 ? tick[(r >> 8) % nt] : h->start_ticks + (r >> 8);
		e[i].dur = (r >> 5) & 1 ? UINT32_MAX : r >> 16;
		e[i].kind = (uint8_t)((r >> 9) % (DDL_EV_COUNT + 2));
		e[i].flags = (uint8_t)(r >> 17);
		e[i].tid = (uint16_t)((r >> 6) & 1 ? r >> 20 : 0);
		e[i].result = (r >> 7) & 1 ? edge[(r >> 10) % ne] : (int64_t)(r >> 24);
		e[i].fd = (int32_t)((r >> 3) & 1 ? r : 1);
		e[i].peer = (r >> 2) & 1 ? r : 1;
	}
	memcpy(raw, e, sizeof e);
	*type = DDL_CHUNK_EVENTS;
	return sizeof e;
}

/*
 * Rebuilds D (header HS bytes, chunks V[0..N)) into OUT with one
 * structural change; the new size, or 0 when it did not fit.
 */
static size_t fz_restructure(const uint8_t *d, size_t hs, const struct fz_chunk *v, size_t n,
                             uint8_t *out, size_t max, unsigned *seed)
{
	static uint8_t raw[FZ_RAW_MAX + 64];
	unsigned op = fz_rand(seed) % 6, pick = n ? fz_rand(seed) % (unsigned)n : 0;
	unsigned other = n ? fz_rand(seed) % (unsigned)n : 0;
	if (hs > max)
		return 0;
	memcpy(out, d, hs);
	size_t at = hs;
	struct ddl_file_header h = {0};
	memcpy(&h, d, hs < sizeof h ? hs : sizeof h);
	for (size_t i = 0; i <= n; i++) {
		if (i == pick && (op == 4 || op == 5)) {
			/* insert hostile records before chunk PICK */
			uint16_t type;
			size_t k = fz_hostile(raw, fz_rand(seed) | (op == 4), &h, &type);
			if (!(at = fz_put_chunk(out, at, max, type, raw, k, fz_rand(seed) % 3)))
				return 0;
		}
		if (i == n)
			break;
		size_t src = i;
		if (op == 0 && i == pick)
			continue; /* drop */
		if (op == 2 && (i == pick || i == other))
			src = i == pick ? other : pick; /* swap */
		if (!v[src].fits)
			break;
		size_t len = FZ_CHUNK + v[src].c.size;
		if (at + len > max)
			return 0;
		memcpy(out + at, d + v[src].off, len);
		if (op == 3 && i == pick) {
			/* another type, or a different codec for the same payload */
			long k = fz_decode(d, &v[src], raw);
			if (k < 0)
				return 0;
			uint16_t type = fz_rand(seed) & 1 ? (uint16_t)(1 + fz_rand(seed) % 6) : v[src].c.type;
			if (!(at = fz_put_chunk(out, at, max, type, raw, (size_t)k, fz_rand(seed) % 3)))
				return 0;
			continue;
		}
		at += len;
		if (op == 1 && i == pick) {
			/* repeat */
			if (at + len > max)
				return 0;
			memcpy(out + at, d + v[src].off, len);
			at += len;
		}
	}
	return at;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	static struct fz_chunk v[FZ_MAX_CHUNKS];
	static uint8_t raw[FZ_RAW_MAX + 64];
	unsigned r = fz_rand(&seed) % 100;
	size_t hs = fz_header_size(data, size);
	size_t n = hs ? fz_chunks(data, size, hs, v) : 0;

	if (r < 5 || !hs) {
		/* plain bytes, checksums left as they fall: damaged files */
		return LLVMFuzzerMutate(data, size, max_size);
	}
	if (r < 40 && n) {
		/* one chunk's decoded payload, stored back with some codec */
		size_t k = fz_rand(&seed) % n;
		long len = fz_decode(data, &v[k], raw);
		size_t room0 = FZ_RAW_MAX < max_size ? FZ_RAW_MAX : max_size;
		if (len >= 0 && (size_t)len <= room0) {
			size_t room = FZ_RAW_MAX < max_size ? FZ_RAW_MAX : max_size;
			size_t nl = LLVMFuzzerMutate(raw, (size_t)len, room);
			static uint8_t out[FZ_RAW_MAX * 2 + 65536];
			size_t tail = v[k].off + FZ_CHUNK + v[k].c.size;
			if (v[k].off <= sizeof out) {
				memcpy(out, data, v[k].off);
				size_t at = fz_put_chunk(out, v[k].off, sizeof out, v[k].c.type, raw, nl,
				                         fz_rand(&seed) % 3);
				if (at && at + (size - tail) <= max_size && at + (size - tail) <= sizeof out) {
					memcpy(out + at, data + tail, size - tail);
					memcpy(data, out, at + (size - tail));
					return at + (size - tail);
				}
			}
		}
	}
	if (r < 60 && n) {
		static uint8_t out[4 << 20];
		size_t max = max_size < sizeof out ? max_size : sizeof out;
		size_t k = fz_restructure(data, hs, v, n, out, max, &seed);
		if (k) {
			memcpy(data, out, k);
			return k;
		}
	}
	if (r < 65 && hs >= sizeof(struct ddl_file_header)) {
		/* the header's clock at the edges of what the reader accepts
		 * (0 and 2^62 ns) and beyond, ticks anywhere */
		static const int64_t ns[] = {0, 1, (int64_t)1 << 62, ((int64_t)1 << 62) - 1,
		                             ((int64_t)1 << 62) + 1, -1, INT64_MAX, INT64_MIN,
		                             (int64_t)1767225600 * 1000000000};
		static const uint64_t tk[] = {0, 1, UINT64_MAX, (uint64_t)1 << 63, (uint64_t)1 << 62};
		struct ddl_file_header h;
		memcpy(&h, data, sizeof h);
		unsigned w = fz_rand(&seed);
		int64_t x = ns[(w >> 3) % (sizeof ns / sizeof *ns)];
		switch (w % 5) {
		case 0:
			h.start_mono_ns = x;
			break;
		case 1:
			h.start_real_ns = x;
			break;
		case 2:
			h.start_ticks = tk[(w >> 3) % (sizeof tk / sizeof *tk)];
			break;
		case 3:
			h.tick_hz = (uint64_t)x;
			break;
		default:
			h.clock_source = (w >> 3) % 3;
			break;
		}
		memcpy(data, &h, sizeof h);
		fz_fix(data, size, 0);
		return size;
	}
	if (r < 75) {
		/* the header's fields (its size included) */
		uint8_t h[65536];
		memcpy(h, data, hs);
		size_t nh = LLVMFuzzerMutate(h, hs, hs);
		if (nh == hs) {
			memcpy(data, h, hs);
			fz_fix(data, size, 0);
			return size;
		}
	}
	if (r < 85 && n) {
		/* a chunk header's fields: type, flags, sizes */
		size_t k = fz_rand(&seed) % n;
		uint8_t *c = data + v[k].off;
		size_t f = 4 + fz_rand(&seed) % 12; /* type .. raw_size */
		c[f] ^= (uint8_t)(1u << (fz_rand(&seed) % 8));
		fz_fix(data, size, fz_rand(&seed) & 1);
		return size;
	}
	/* bytes anywhere, then the checksums made right */
	size = LLVMFuzzerMutate(data, size, max_size);
	fz_fix(data, size, fz_rand(&seed) & 1);
	return size;
}

size_t LLVMFuzzerCustomCrossOver(const uint8_t *d1, size_t s1, const uint8_t *d2, size_t s2,
                                 uint8_t *out, size_t max_out, unsigned int seed)
{
	static struct fz_chunk v1[FZ_MAX_CHUNKS], v2[FZ_MAX_CHUNKS];
	size_t h1 = fz_header_size(d1, s1), h2 = fz_header_size(d2, s2);
	if (!h1 || !h2 || h1 > max_out)
		return 0;
	size_t n1 = fz_chunks(d1, s1, h1, v1), n2 = fz_chunks(d2, s2, h2, v2);
	/* d1's header and first chunks, then d2's chunks from one on */
	size_t cut1 = n1 ? fz_rand(&seed) % (n1 + 1) : 0, from2 = n2 ? fz_rand(&seed) % n2 : 0;
	size_t at = h1;
	memcpy(out, d1, h1);
	for (size_t i = 0; i < cut1 && v1[i].fits; i++) {
		size_t len = FZ_CHUNK + v1[i].c.size;
		if (at + len > max_out)
			return at;
		memcpy(out + at, d1 + v1[i].off, len);
		at += len;
	}
	for (size_t i = from2; i < n2 && v2[i].fits; i++) {
		size_t len = FZ_CHUNK + v2[i].c.size;
		if (at + len > max_out)
			break;
		memcpy(out + at, d2 + v2[i].off, len);
		at += len;
	}
	return at;
}

#endif
