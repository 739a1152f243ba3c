/*
 * The arithmetic of the emulated collectives: element sizes of the NCCL
 * data types and the reductions (sum, prod, max, min, avg) for the integer
 * types, float32, float64, float16 and bfloat16. Integer sums and products
 * wrap, as on the GPU (computed in uint64_t: signed overflow would be
 * undefined in C). Half-precision values are reduced in float and rounded
 * back to nearest-even. The fp8 types move but do not reduce.
 *
 * Sums and products, by far the most common, go through GCC vector types
 * (integers as unsigned lanes, which wrap): the reductions run while the
 * next slices are on the wire, and at -O2 the plain loops would not be
 * vectorised, which made them the emulation's largest CPU cost.
 */
#include <string.h>

#include "emu.h"

size_t emu_type_size(ncclDataType_t t)
{
	switch (t) {
	case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
	case ncclFloat16: case ncclBfloat16: return 2;
	case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
	case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
	default: return 0;
	}
}

int emu_reduce_ok(ncclDataType_t t, ncclRedOp_t op)
{
	if ((int)op < 0 || op >= ncclNumOps)
		return 0;
	return emu_type_size(t) && t != ncclFloat8e4m3 && t != ncclFloat8e5m2;
}

static float emu_h2f(uint16_t h)
{
	uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, f;
	if (e == 0 && m == 0) {
		f = s;
	} else if (e == 0) { /* subnormal: normalise */
		e = 127 - 15 + 1;
		while (!(m & 0x400u)) {
			m <<= 1;
			e--;
		}
		f = s | e << 23 | (m & 0x3ffu) << 13;
	} else if (e == 31) {
		f = s | 0x7f800000u | m << 13;
	} else {
		f = s | (e + 127 - 15) << 23 | m << 13;
	}
	float r;
	memcpy(&r, &f, sizeof r);
	return r;
}

static uint16_t emu_f2h(float x)
{
	uint32_t f;
	memcpy(&f, &x, sizeof f);
	uint32_t s = (f >> 16) & 0x8000u, m = f & 0x7fffffu;
	int e = (int)((f >> 23) & 0xffu);
	if (e == 0xff)
		return (uint16_t)(s | 0x7c00u | (m ? 0x200u : 0));
	int he = e - 127 + 15;
	if (he >= 31)
		return (uint16_t)(s | 0x7c00u);
	if (he <= 0) {
		if (he < -10)
			return (uint16_t)s;
		m |= 0x800000u;
		int shift = 14 - he;
		uint32_t hm = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
		if (rem > half || (rem == half && (hm & 1)))
			hm++;
		return (uint16_t)(s | hm);
	}
	uint32_t hm = m >> 13, rem = m & 0x1fffu;
	uint32_t h = s | (uint32_t)he << 10 | hm;
	if (rem > 0x1000u || (rem == 0x1000u && (hm & 1)))
		h++; /* a carry into the exponent is the right rounding */
	return (uint16_t)h;
}

static float emu_bf2f(uint16_t b)
{
	uint32_t f = (uint32_t)b << 16;
	float r;
	memcpy(&r, &f, sizeof r);
	return r;
}

static uint16_t emu_f2bf(float x)
{
	uint32_t f;
	memcpy(&f, &x, sizeof f);
	if ((f & 0x7f800000u) == 0x7f800000u && (f & 0x7fffffu))
		return (uint16_t)((f >> 16) | 0x40u);
	f += 0x7fffu + ((f >> 16) & 1);
	return (uint16_t)(f >> 16);
}

static float emu_fop(float a, float b, ncclRedOp_t op)
{
	switch (op) {
	case ncclProd: return a * b;
	case ncclMax: return a > b ? a : b;
	case ncclMin: return a < b ? a : b;
	default: return a + b;
	}
}

/* One reduction loop per type, declared from a table. */
#define EMU_REDUCE_INT(name, T) \
	static void name(T *d, const T *s, size_t n, ncclRedOp_t op) \
	{ \
		for (size_t i = 0; i < n; i++) \
			switch (op) { \
			case ncclProd: d[i] = (T)((uint64_t)d[i] * (uint64_t)s[i]); break; \
			case ncclMax: d[i] = d[i] > s[i] ? d[i] : s[i]; break; \
			case ncclMin: d[i] = d[i] < s[i] ? d[i] : s[i]; break; \
			default: d[i] = (T)((uint64_t)d[i] + (uint64_t)s[i]); break; \
			} \
	}
#define EMU_REDUCE_FLT(name, T) \
	static void name(T *d, const T *s, size_t n, ncclRedOp_t op) \
	{ \
		for (size_t i = 0; i < n; i++) \
			switch (op) { \
			case ncclProd: d[i] = d[i] * s[i]; break; \
			case ncclMax: d[i] = d[i] > s[i] ? d[i] : s[i]; break; \
			case ncclMin: d[i] = d[i] < s[i] ? d[i] : s[i]; break; \
			default: d[i] = d[i] + s[i]; break; \
			} \
	}
/* d[i] = d[i] OPX s[i] for a sum or a product, a vector of lanes VT at a time. */
#define EMU_VEC_BYTES 32
#define EMU_REDUCE_VEC(name, T, VT, OPX) \
	static void name(T *restrict d, const T *restrict s, size_t n) \
	{ \
		typedef VT emu_vec __attribute__((vector_size(EMU_VEC_BYTES))); \
		const size_t k = EMU_VEC_BYTES / sizeof(T); \
		size_t i = 0; \
		for (; i + k <= n; i += k) { \
			emu_vec a, b; \
			memcpy(&a, d + i, sizeof a); \
			memcpy(&b, s + i, sizeof b); \
			a = a OPX b; \
			memcpy(d + i, &a, sizeof a); \
		} \
		for (; i < n; i++) \
			d[i] = (T)((VT)d[i] OPX (VT)s[i]); \
	}
EMU_REDUCE_VEC(emu_sum_i8, int8_t, uint8_t, +)
EMU_REDUCE_VEC(emu_sum_u8, uint8_t, uint8_t, +)
EMU_REDUCE_VEC(emu_sum_i32, int32_t, uint32_t, +)
EMU_REDUCE_VEC(emu_sum_u32, uint32_t, uint32_t, +)
EMU_REDUCE_VEC(emu_sum_i64, int64_t, uint64_t, +)
EMU_REDUCE_VEC(emu_sum_u64, uint64_t, uint64_t, +)
EMU_REDUCE_VEC(emu_sum_f32, float, float, +)
EMU_REDUCE_VEC(emu_sum_f64, double, double, +)
EMU_REDUCE_VEC(emu_prod_i8, int8_t, uint8_t, *)
EMU_REDUCE_VEC(emu_prod_u8, uint8_t, uint8_t, *)
EMU_REDUCE_VEC(emu_prod_i32, int32_t, uint32_t, *)
EMU_REDUCE_VEC(emu_prod_u32, uint32_t, uint32_t, *)
EMU_REDUCE_VEC(emu_prod_i64, int64_t, uint64_t, *)
EMU_REDUCE_VEC(emu_prod_u64, uint64_t, uint64_t, *)
EMU_REDUCE_VEC(emu_prod_f32, float, float, *)
EMU_REDUCE_VEC(emu_prod_f64, double, double, *)

/* A sum or product (ncclAvg sums) by the vector loops: 0, or -1 for another op or type. */
static int emu_reduce_vec(void *dst, const void *src, size_t n, ncclDataType_t t, ncclRedOp_t op)
{
	int sum = op == ncclSum || op == ncclAvg;
	if (!sum && op != ncclProd)
		return -1;
	switch (t) {
	case ncclInt8: (sum ? emu_sum_i8 : emu_prod_i8)(dst, src, n); return 0;
	case ncclUint8: (sum ? emu_sum_u8 : emu_prod_u8)(dst, src, n); return 0;
	case ncclInt32: (sum ? emu_sum_i32 : emu_prod_i32)(dst, src, n); return 0;
	case ncclUint32: (sum ? emu_sum_u32 : emu_prod_u32)(dst, src, n); return 0;
	case ncclInt64: (sum ? emu_sum_i64 : emu_prod_i64)(dst, src, n); return 0;
	case ncclUint64: (sum ? emu_sum_u64 : emu_prod_u64)(dst, src, n); return 0;
	case ncclFloat32: (sum ? emu_sum_f32 : emu_prod_f32)(dst, src, n); return 0;
	case ncclFloat64: (sum ? emu_sum_f64 : emu_prod_f64)(dst, src, n); return 0;
	default: return -1;
	}
}

EMU_REDUCE_INT(emu_red_i8, int8_t)
EMU_REDUCE_INT(emu_red_u8, uint8_t)
EMU_REDUCE_INT(emu_red_i32, int32_t)
EMU_REDUCE_INT(emu_red_u32, uint32_t)
EMU_REDUCE_INT(emu_red_i64, int64_t)
EMU_REDUCE_INT(emu_red_u64, uint64_t)
EMU_REDUCE_FLT(emu_red_f32, float)
EMU_REDUCE_FLT(emu_red_f64, double)

int emu_reduce(void *dst, const void *src, size_t n, ncclDataType_t t, ncclRedOp_t op)
{
	if (!emu_reduce_ok(t, op))
		return -1;
	if (emu_reduce_vec(dst, src, n, t, op) == 0)
		return 0;
	uint16_t *hd = dst;
	const uint16_t *hs = src;
	switch (t) {
	case ncclInt8: emu_red_i8(dst, src, n, op); break;
	case ncclUint8: emu_red_u8(dst, src, n, op); break;
	case ncclInt32: emu_red_i32(dst, src, n, op); break;
	case ncclUint32: emu_red_u32(dst, src, n, op); break;
	case ncclInt64: emu_red_i64(dst, src, n, op); break;
	case ncclUint64: emu_red_u64(dst, src, n, op); break;
	case ncclFloat32: emu_red_f32(dst, src, n, op); break;
	case ncclFloat64: emu_red_f64(dst, src, n, op); break;
	case ncclFloat16:
		for (size_t i = 0; i < n; i++)
			hd[i] = emu_f2h(emu_fop(emu_h2f(hd[i]), emu_h2f(hs[i]), op));
		break;
	case ncclBfloat16:
		for (size_t i = 0; i < n; i++)
			hd[i] = emu_f2bf(emu_fop(emu_bf2f(hd[i]), emu_bf2f(hs[i]), op));
		break;
	default: return -1;
	}
	return 0;
}

/* Divides in a type W wide enough for nranks. */
#define EMU_DIVIDE(T, W) \
	do { \
		T *d = dst; \
		for (size_t i = 0; i < n; i++) \
			d[i] = (T)((W)d[i] / (W)nranks); \
	} while (0)

void emu_divide(void *dst, size_t n, ncclDataType_t t, int nranks)
{
	uint16_t *h = dst;
	switch (t) {
	case ncclInt8: EMU_DIVIDE(int8_t, int64_t); break;
	case ncclUint8: EMU_DIVIDE(uint8_t, uint64_t); break;
	case ncclInt32: EMU_DIVIDE(int32_t, int64_t); break;
	case ncclUint32: EMU_DIVIDE(uint32_t, uint64_t); break;
	case ncclInt64: EMU_DIVIDE(int64_t, int64_t); break;
	case ncclUint64: EMU_DIVIDE(uint64_t, uint64_t); break;
	case ncclFloat32: EMU_DIVIDE(float, double); break;
	case ncclFloat64: EMU_DIVIDE(double, double); break;
	case ncclFloat16:
		for (size_t i = 0; i < n; i++)
			h[i] = emu_f2h(emu_h2f(h[i]) / (float)nranks);
		break;
	case ncclBfloat16:
		for (size_t i = 0; i < n; i++)
			h[i] = emu_f2bf(emu_bf2f(h[i]) / (float)nranks);
		break;
	default: break;
	}
}
