/*
 * CRC32C (Castagnoli), used by the trace writer and reader to check chunk
 * headers and payloads. The SSE4.2 instruction does 8 bytes a step where the
 * CPU has it, three chains of it at once on long runs; a table does one
 * byte a step elsewhere. Header-only so both the
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
/*
 * The register after N zero bytes, which is C times x^(8N) modulo the
 * polynomial: with the bits reflected (x^0 is the top bit), multiplying by
 * x is a shift right that folds the polynomial back in. ddl_crc32c_mul is
 * the product of two such residues; ddl_crc32c_xpow8 is x^(8N).
 */
static uint32_t ddl_crc32c_mul(uint32_t a, uint32_t b)
{
	uint32_t p = 0;
	for (uint32_t m = 0x80000000u; m; m >>= 1) {
		p ^= b & (0u - (uint32_t)((a & m) != 0));
		b = (b >> 1) ^ (0x82F63B78u & (0u - (b & 1)));
	}
	return p;
}

static uint32_t ddl_crc32c_xpow8(size_t n)
{
	uint32_t r = 0x80000000u, x = 0x00800000u; /* x^0; x^8 */
	for (; n; n >>= 1, x = ddl_crc32c_mul(x, x))
		if (n & 1)
			r = ddl_crc32c_mul(r, x);
	return r;
}

/*
 * The instruction takes 3 cycles to give its result and can start one a
 * cycle, so one chain of it runs at a third of its pace: blocks of three
 * lanes of DDL_CRC32C_LANE bytes each are run together, the lanes after
 * the first from 0, and joined by the zero-byte shift above (the register
 * is linear: the CRC of A then B is A's shifted past B's length, plus B's
 * from 0).
 */
#define DDL_CRC32C_LANE 4096

__attribute__((target("sse4.2"))) static uint32_t ddl_crc32c_hw(uint32_t crc,
                                                                 const unsigned char *p, size_t n)
{
	uint64_t c = crc;
	if (n >= 3 * DDL_CRC32C_LANE) {
		static uint32_t lane_shift; /* x^(8 LANE); threads that find it 0 compute the same */
		uint32_t k = __atomic_load_n(&lane_shift, __ATOMIC_RELAXED);
		if (!k) {
			k = ddl_crc32c_xpow8(DDL_CRC32C_LANE);
			__atomic_store_n(&lane_shift, k, __ATOMIC_RELAXED);
		}
		for (; n >= 3 * DDL_CRC32C_LANE; n -= 3 * DDL_CRC32C_LANE, p += 3 * DDL_CRC32C_LANE) {
			uint64_t c1 = 0, c2 = 0;
			for (size_t i = 0; i < DDL_CRC32C_LANE; i += 8) {
				uint64_t v0, v1, v2;
				memcpy(&v0, p + i, 8);
				memcpy(&v1, p + DDL_CRC32C_LANE + i, 8);
				memcpy(&v2, p + 2 * DDL_CRC32C_LANE + i, 8);
				c = __builtin_ia32_crc32di(c, v0);
				c1 = __builtin_ia32_crc32di(c1, v1);
				c2 = __builtin_ia32_crc32di(c2, v2);
			}
			uint32_t ab = ddl_crc32c_mul(k, (uint32_t)c) ^ (uint32_t)c1;
			c = ddl_crc32c_mul(k, ab) ^ (uint32_t)c2;
		}
	}
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
