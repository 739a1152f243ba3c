/*
 * ddlprof --perturb-net: the job's network made slower on purpose, which
 * the report turns into its measured network sensitivity (DESIGN.md
 * section 8). The setting (DDLPROF_PERTURB_NET, read with the others in
 * core.c) is parsed here; the wrappers of the calls that send on a socket
 * (socket.c) call ddl_perturb after each send that moved bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "ddl.h"

/*
 * ddlprof --perturb-net: the job's own sends made slower on purpose, so its
 * sensitivity to the network can be measured. delay=USEC adds that much to
 * every send; rate=RATE lets the process's sends through at RATE bytes per
 * second at most (a token bucket shared by its threads). The time spent is
 * inside the call, as a slower network's would be. Keeps errno.
 */
int ddl_perturb_on;
static int64_t ddl_perturb_delay_ns;
static double ddl_perturb_ns_per_byte;
static _Atomic int64_t ddl_perturb_free_ns; /* when the bucket is next empty */

static int64_t ddl_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void ddl_sleep_until(int64_t when)
{
	struct timespec ts = {(time_t)(when / 1000000000), (long)(when % 1000000000)};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

void ddl_perturb(uint64_t bytes)
{
	int saved = errno;
	int64_t now = ddl_mono_ns();
	if (ddl_perturb_delay_ns) {
		ddl_sleep_until(now + ddl_perturb_delay_ns);
	} else {
		int64_t need = (int64_t)((double)bytes * ddl_perturb_ns_per_byte);
		int64_t free_at = atomic_load(&ddl_perturb_free_ns), done;
		do {
			int64_t start = free_at > now ? free_at : now;
			done = start + need;
		} while (!atomic_compare_exchange_weak(&ddl_perturb_free_ns, &free_at, done));
		if (done > now)
			ddl_sleep_until(done);
	}
	errno = saved;
}

/* Parses "delay=USEC" or "rate=N[kbit|mbit|gbit|KB|MB|GB]"; 0 or -EINVAL. */
int ddl_perturb_parse(const char *spec)
{
	char *end;
	if (!strncmp(spec, "delay=", 6)) {
		long us = strtol(spec + 6, &end, 10);
		if (*end || end == spec + 6 || us < 1 || us > 10000000)
			return -EINVAL;
		ddl_perturb_delay_ns = (int64_t)us * 1000;
	} else if (!strncmp(spec, "rate=", 5)) {
		double v = strtod(spec + 5, &end);
		double mult = 1;
		if (!strcmp(end, "kbit"))
			mult = 1e3 / 8;
		else if (!strcmp(end, "mbit"))
			mult = 1e6 / 8;
		else if (!strcmp(end, "gbit"))
			mult = 1e9 / 8;
		else if (!strcmp(end, "KB"))
			mult = 1e3;
		else if (!strcmp(end, "MB"))
			mult = 1e6;
		else if (!strcmp(end, "GB"))
			mult = 1e9;
		else if (*end)
			return -EINVAL;
		if (end == spec + 5 || !(v * mult >= 1000) || v * mult > 1e12)
			return -EINVAL;
		ddl_perturb_ns_per_byte = 1e9 / (v * mult);
	} else {
		return -EINVAL;
	}
	ddl_perturb_on = 1;
	return 0;
}
