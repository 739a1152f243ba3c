/*
 * A chunk's checked header (trace.h's struct ddl_chunk), made one way for
 * the trace writer and for the tests and benches that write traces of
 * their own. Header-only, as crc32c.h.
 */
#ifndef DDLPROF_CHUNK_H
#define DDLPROF_CHUNK_H

#include <stddef.h>

#include "ddlprof/crc32c.h"
#include "ddlprof/trace.h"

/* The header of a chunk of TYPE whose stored payload is the SIZE bytes at
 * P (RAW_SIZE once decompressed, FLAGS its codec), both CRCs filled. */
static inline struct ddl_chunk ddl_chunk_make(unsigned type, unsigned flags, const void *p, uint32_t size,
                                              uint32_t raw_size)
{
	struct ddl_chunk c = {DDL_CHUNK_MAGIC, (uint16_t)type, (uint16_t)flags, size, raw_size, ddl_crc32c(p, size), 0};
	c.hcrc = ddl_crc32c(&c, offsetof(struct ddl_chunk, hcrc));
	return c;
}

#endif
