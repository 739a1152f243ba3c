/*
 * Where a thread blocks on another: condition-variable waits. A CPU
 * training thread whose gradients go over gloo or MPI waits here (C++
 * std::condition_variable is pthread_cond_*) while other threads move the
 * bytes; the analyzer sets these waits against the network traffic in
 * flight to tell network stall from compute. result is the return value
 * (0 or an error number), fd is -1. With --backtrace the caller's stack
 * goes with each wait (unwind.c): where in the program it blocked.
 */
#include "ddl.h"

DDL_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SYNC);
	if (!t) {
		if (ddl_unlikely(!ddl_real.pthread_cond_wait))
			ddl_real_resolve();
		return ddl_real.pthread_cond_wait(c, m);
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_COND_WAIT, t0, -1, 0);
	int r = ddl_real.pthread_cond_wait(c, m);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put_call(t, DDL_EV_COND_WAIT, 0, t0, t1, r, -1, 0);
	return r;
}

DDL_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                      const struct timespec *abstime)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SYNC);
	if (!t) {
		if (ddl_unlikely(!ddl_real.pthread_cond_timedwait))
			ddl_real_resolve();
		return ddl_real.pthread_cond_timedwait(c, m, abstime);
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_COND_TIMEDWAIT, t0, -1, 0);
	int r = ddl_real.pthread_cond_timedwait(c, m, abstime);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put_call(t, DDL_EV_COND_TIMEDWAIT, 0, t0, t1, r, -1, 0);
	return r;
}

DDL_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
                                      const struct timespec *abstime)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SYNC);
	if (!t) {
		if (ddl_unlikely(!ddl_real.pthread_cond_clockwait))
			ddl_real_resolve();
		if (!ddl_real.pthread_cond_clockwait)
			return ENOSYS;
		return ddl_real.pthread_cond_clockwait(c, m, clock, abstime);
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_COND_CLOCKWAIT, t0, -1, 0);
	int r = ddl_real.pthread_cond_clockwait(c, m, clock, abstime);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put_call(t, DDL_EV_COND_CLOCKWAIT, 0, t0, t1, r, -1, 0);
	return r;
}
