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
#include "ddlprof/rate.h"

/*
 * ddlprof --perturb-net: the job's own sends made slower on purpose, so its
 * sensitivity to the network can be measured. delay=USEC adds that much to
 * every send; rate=RATE lets the process's sends through at RATE bits a
 * second at most (ddlprof/rate.h; a token bucket shared by its threads).
 * The time spent is inside the call, as a slower network's would be.
 * Keeps errno.
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

/* Parses DDLPROF_PERTURB_NET by ddlprof/rate.h's rule, the launcher's; 0 or -EINVAL. */
int ddl_perturb_parse(const char *spec)
{
	long us;
	double bps;
	char why[256];
	if (ddl_perturb_spec_parse(spec, &us, &bps, why, sizeof why) < 0)
		return -EINVAL;
	ddl_perturb_delay_ns = (int64_t)us * 1000;
	ddl_perturb_ns_per_byte = bps > 0 ? 8e9 / bps : 0;
	ddl_perturb_on = 1;
	return 0;
}
