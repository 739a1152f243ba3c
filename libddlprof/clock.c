/*
 * The trace clock. Wrappers stamp events with raw ticks from ddl_clock_now():
 * the x86 invariant TSC where the CPU has one (one instruction, no syscall),
 * otherwise CLOCK_MONOTONIC nanoseconds. The writer records clock samples
 * (ticks, monotonic, realtime taken together) in every flush; readers map
 * ticks to nanoseconds through them, so no calibration happens here.
 */
#include <cpuid.h>
#include <stdint.h>
#include <time.h>

#include "ddl.h"

int ddl_clock_tsc;

static int ddl_tsc_invariant(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return 0;
	__cpuid(0x80000007u, a, b, c, d);
	return (d >> 8) & 1; /* EDX bit 8: TSC runs at a constant rate in all states */
#else
	return 0;
#endif
}

/* want: 0 = best available, DDL_CLOCK_TSC or DDL_CLOCK_MONOTONIC to force. */
void ddl_clock_init(int want)
{
	ddl_clock_tsc = 0;
#if defined(__x86_64__) || defined(__i386__)
	/* DDLPROF_CLOCK=tsc trusts the TSC even where the CPU does not promise
	 * a constant rate (the clock samples still map it to real time). */
	if (want == DDL_CLOCK_TSC || (want != DDL_CLOCK_MONOTONIC && ddl_tsc_invariant()))
		ddl_clock_tsc = 1;
#endif
}

static int64_t ddl_ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

/*
 * One (ticks, monotonic, realtime) triple. The tick reading is the midpoint
 * of two reads around the clock_gettime pair; the narrowest of a few tries
 * is kept so a preemption between the reads does not skew the mapping.
 */
void ddl_clock_sample(struct ddl_clock_sample *s)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 4; i++) {
		struct timespec m, r;
		uint64_t a = ddl_clock_now();
		clock_gettime(CLOCK_MONOTONIC, &m);
		clock_gettime(CLOCK_REALTIME, &r);
		uint64_t b = ddl_clock_now();
		if (b - a < best) {
			best = b - a;
			s->ticks = a + (b - a) / 2;
			s->mono_ns = ddl_ts_ns(&m);
			s->real_ns = ddl_ts_ns(&r) + ddl_clock_skew_ns;
		}
	}
	if (!ddl_clock_tsc)
		s->ticks = (uint64_t)s->mono_ns; /* ticks are monotonic ns exactly */
}

uint64_t ddl_clock_hz(void)
{
	return ddl_clock_tsc ? 0 : 1000000000ull; /* 0: derive from samples */
}

/*
 * Ticks per nanosecond, for the back ends that turn device times into
 * ticks: 1 on the monotonic clock; for the TSC, measured from the start
 * sample to now (waiting until 20 ms have passed, so the rate is good to a
 * few parts per million). Not for the hot path.
 */
/* DDLPROF_CLOCK_SKEW_NS: a test hook that makes this process's real-time
 * clock read late (or early) by that much, as a badly synchronised host's
 * would; the report's clock alignment must find it. */
int64_t ddl_clock_skew_ns;

double ddl_clock_ticks_per_ns(void)
{
	if (!ddl_clock_tsc)
		return 1.0;
	struct ddl_clock_sample now;
	for (;;) {
		ddl_clock_sample(&now);
		int64_t dn = now.mono_ns - ddl_g.start.mono_ns;
		if (dn >= 20 * 1000 * 1000)
			return (double)(now.ticks - ddl_g.start.ticks) / (double)dn;
		struct timespec ts = {0, 20 * 1000 * 1000 - dn};
		nanosleep(&ts, NULL);
	}
}
