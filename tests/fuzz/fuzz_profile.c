/*
 * libFuzzer target for ddlprof-sim's profile loader (scheduler/
 * load_profile.c): any bytes as a ddlprof-report/1 JSON report named by a
 * job (its CSV profile column, or --profiles DIR), handed over through a
 * memfd as /proc/self/fd/N. The loader must never crash, leak or read out
 * of bounds; a report it cannot use must say why (the field, or the
 * system's error); one it uses must give slowdowns the engine can run
 * (1 at the machine, 1 <= rack <= cluster <= 1e6) and bandwidths of 0 (not
 * given) or above 0; the same path asked again is the same entry. Seeds in
 * tests/fuzz/profile_seeds. Built by `make fuzz` with clang's
 * -fsanitize=fuzzer,address,undefined.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	if (fd < 0 && (fd = memfd_create("fuzz_profile", 0)) < 0)
		abort();
	if (ftruncate(fd, 0) < 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		abort();
	char path[32];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);

	struct ddl_sim_profiles cache = {0};
	const struct ddl_sim_profile *p = ddl_sim_profile_get(&cache, path);
	if (!p)
		abort(); /* memory only */
	if (ddl_sim_profile_get(&cache, path) != p || cache.n != 1)
		abort();
	if (!p->ok) {
		if (!p->why[0] || !memchr(p->why, 0, sizeof p->why) || p->missing)
			abort();
	} else {
		if (p->slow[DDL_SIM_MACHINE] != 1 || !(p->slow[DDL_SIM_RACK] >= 1) ||
		    !(p->slow[DDL_SIM_CLUSTER] >= p->slow[DDL_SIM_RACK]) ||
		    !(p->slow[DDL_SIM_CLUSTER] <= 1e6))
			abort();
		for (int l = 0; l < DDL_SIM_LEVELS; l++)
			if (!(p->bw[l] >= 0) || !isfinite(p->bw[l]))
				abort();
		struct ddl_sim_job j;
		memset(&j, 0, sizeof j);
		ddl_sim_profile_apply(&j, p);
		if (j.slow_from != DDL_SIM_SLOW_PROFILE || j.slow[DDL_SIM_CLUSTER] != p->slow[DDL_SIM_CLUSTER])
			abort();
	}
	ddl_sim_profiles_free(&cache);
	return 0;
}
