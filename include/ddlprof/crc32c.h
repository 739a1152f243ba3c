/*
 * CRC32C (Castagnoli), used by the trace writer and reader to check chunk
 * headers and payloads. The SSE4.2 instruction does 8 bytes a step where the
 * CPU has it; a table does one byte a step elsewhere. Header-only so both the
 * preload library (libc only) and the tools use the same code.
 */
#ifndef DDLPROF_CRC32C_H
#define DDLPROF_CRC32C_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static uint32_t ddl_crc32c_table[256];

static void ddl_crc32c_table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
		ddl_crc32c_table[i] = c;
	}
}

static uint32_t ddl_crc32c_sw(uint32_t crc, const unsigned char *p, size_t n)
{
	if (!ddl_crc32c_table[1])
		ddl_crc32c_table_init();
	while (n--)
		crc = (crc >> 8) ^ ddl_crc32c_table[(crc ^ *p++) & 0xff];
	return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t ddl_crc32c_hw(uint32_t crc,
                                                                 const unsigned char *p, size_t n)
{
	uint64_t c = crc;
	while (n >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		n -= 8;
	}
	uint32_t c32 = (uint32_t)c;
	while (n--)
		c32 = __builtin_ia32_crc32qi(c32, *p++);
	return c32;
}
#endif

/* CRC32C of n bytes at p, with the usual all-ones pre- and post-inversion. */
static uint32_t ddl_crc32c(const void *p, size_t n)
{
#if defined(__x86_64__)
	static int hw = -1; /* threads may ask first together: each finds the same */
	int h = __atomic_load_n(&hw, __ATOMIC_RELAXED);
	if (h < 0) {
		__builtin_cpu_init();
		h = __builtin_cpu_supports("sse4.2") ? 1 : 0;
		__atomic_store_n(&hw, h, __ATOMIC_RELAXED);
	}
	if (h)
		return ~ddl_crc32c_hw(~0u, p, n);
#endif
	return ~ddl_crc32c_sw(~0u, p, n);
}

#endif
