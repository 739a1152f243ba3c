/*
 * Configuration and time for the CUDA/NCCL emulation. The environment is
 * read once, on the first call into the library: a bad value costs one line
 * on stderr naming the variable, and the default is used. Time is
 * CLOCK_MONOTONIC in nanoseconds everywhere, and every wait sleeps with an
 * absolute deadline (several emulated ranks share few cores, so nothing may
 * spin).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emu.h"

struct emu_cfg emu_cfg;
int emu_forked;
atomic_int emu_threads_started;

static pthread_once_t emu_once = PTHREAD_ONCE_INIT;

/* Parses a bandwidth in Gbit/s: a finite number >= 0. */
static double emu_env_gbps(const char *name, double def)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def * 1e9;
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (errno || end == v || *end || !isfinite(d) || d < 0 || d > 1e6) {
		fprintf(stderr, "ddlemu: %s=%s is not a bandwidth in Gbit/s (a number >= 0); using %g\n",
		        name, v, def);
		return def * 1e9;
	}
	return d * 1e9;
}

static int emu_env_devices(void)
{
	const char *v = getenv("DDLEMU_DEVICES");
	if (!v || !*v)
		return 8;
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (errno || end == v || *end || n < 1 || n > EMU_MAX_DEVICES) {
		fprintf(stderr, "ddlemu: DDLEMU_DEVICES=%s is not a device count (1..%d); using 8\n", v,
		        EMU_MAX_DEVICES);
		return 8;
	}
	return (int)n;
}

static void emu_env_addr(void)
{
	const char *v = getenv("DDLEMU_ADDR");
	inet_pton(AF_INET, "127.0.0.1", &emu_cfg.addr);
	if (v && *v && inet_pton(AF_INET, v, &emu_cfg.addr) != 1) {
		fprintf(stderr, "ddlemu: DDLEMU_ADDR=%s is not an IPv4 address; using 127.0.0.1\n", v);
		inet_pton(AF_INET, "127.0.0.1", &emu_cfg.addr);
	}
}

/* The host identity, as the profiler names the host in its traces. */
static void emu_env_host(void)
{
	const char *v = getenv("DDLPROF_HOST");
	if (v && *v) {
		snprintf(emu_cfg.host, sizeof emu_cfg.host, "%s", v);
		return;
	}
	if (gethostname(emu_cfg.host, sizeof emu_cfg.host - 1) != 0)
		snprintf(emu_cfg.host, sizeof emu_cfg.host, "localhost");
	emu_cfg.host[sizeof emu_cfg.host - 1] = 0;
}

/*
 * A child forked after worker threads existed has lost them, so its streams
 * would never run: it gets cudaErrorInitializationError, as on a GPU.
 */
static void emu_atfork_child(void)
{
	if (atomic_load(&emu_threads_started))
		emu_forked = 1;
}

static void emu_init_once(void)
{
	emu_cfg.devices = emu_env_devices();
	emu_cfg.pcie_bps = emu_env_gbps("DDLEMU_PCIE_GBPS", 64);
	emu_cfg.hbm_bps = emu_env_gbps("DDLEMU_HBM_GBPS", 8000);
	emu_cfg.p2p_bps = emu_env_gbps("DDLEMU_P2P_GBPS", emu_cfg.hbm_bps / 1e9);
	emu_cfg.intra_bps = emu_env_gbps("DDLEMU_INTRA_GBPS", 4);
	emu_cfg.net_bps = emu_env_gbps("DDLEMU_NET_GBPS", 1);
	emu_env_addr();
	emu_env_host();
	pthread_atfork(NULL, NULL, emu_atfork_child);
}

void emu_init(void)
{
	pthread_once(&emu_once, emu_init_once);
}

uint64_t emu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void emu_sleep_until(uint64_t t)
{
	struct timespec ts = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

uint64_t emu_wire_ns(size_t bytes, double bps)
{
	if (bps <= 0)
		return 0;
	return (uint64_t)((double)bytes * 8e9 / bps + 0.5);
}

int emu_thread_start(void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	pthread_t t;
	sigset_t all, old;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	/* The emulator's threads never take the application's signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&t, &a, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	if (rc == 0)
		atomic_store(&emu_threads_started, 1);
	return rc;
}
