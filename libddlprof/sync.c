/*
 * Where a thread blocks on another: condition-variable waits. A CPU
 * training thread whose gradients go over gloo or MPI waits here (C++
 * std::condition_variable is pthread_cond_*) while other threads move the
 * bytes; the analyzer sets these waits against the network traffic in
 * flight to tell network stall from compute. result is the return value
 * (0 or an error number), fd is -1. With --backtrace the caller's stack
 * goes with each wait (unwind.c): where in the program it blocked.
 *
 * Semaphore waits too (sem_wait, sem_timedwait, sem_clockwait): CPython's
 * locks are semaphores, so a Python thread blocked on a queue.Queue, an
 * Event or a lock waits in one. CPython takes every lock with one, free or
 * not, so only those that blocked DDL_SEM_MIN_TICKS or more are recorded
 * (result 0 or -errno); every one is the thread's open call while it runs.
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

/* About 5 to 20 us on TSCs of 1 to 4 GHz, 20 us on the monotonic clock:
 * far above a free lock's taking, far below a wait for a batch. */
#define DDL_SEM_MIN_TICKS 20000

/* The end of a semaphore wait of KIND from T0 that returned R (errno kept). */
static inline void ddl_sem_end(struct ddl_thread *t, unsigned kind, uint64_t t0, int open, int r)
{
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	if (t1 - t0 >= DDL_SEM_MIN_TICKS)
		ddl_ring_put_call(t, kind, 0, t0, t1, r ? -errno : 0, -1, 0);
}

DDL_EXPORT int sem_wait(sem_t *s)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SYNC);
	if (!t) {
		if (ddl_unlikely(!ddl_real.sem_wait))
			ddl_real_resolve();
		return ddl_real.sem_wait(s);
	}
	if (ddl_unlikely(!ddl_real.sem_wait))
		ddl_real_resolve(); /* a libpthread loaded since (glibc before 2.34) */
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_SEM_WAIT, t0, -1, 0);
	int r = ddl_real.sem_wait(s);
	ddl_sem_end(t, DDL_EV_SEM_WAIT, t0, open, r);
	return r;
}

DDL_EXPORT int sem_timedwait(sem_t *s, const struct timespec *abstime)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SYNC);
	if (!t) {
		if (ddl_unlikely(!ddl_real.sem_timedwait))
			ddl_real_resolve();
		return ddl_real.sem_timedwait(s, abstime);
	}
	if (ddl_unlikely(!ddl_real.sem_timedwait))
		ddl_real_resolve();
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_SEM_TIMEDWAIT, t0, -1, 0);
	int r = ddl_real.sem_timedwait(s, abstime);
	ddl_sem_end(t, DDL_EV_SEM_TIMEDWAIT, t0, open, r);
	return r;
}

DDL_EXPORT int sem_clockwait(sem_t *s, clockid_t clock, const struct timespec *abstime)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SYNC);
	if (!t) {
		if (ddl_unlikely(!ddl_real.sem_clockwait))
			ddl_real_resolve();
		if (!ddl_real.sem_clockwait) {
			errno = ENOSYS;
			return -1;
		}
		return ddl_real.sem_clockwait(s, clock, abstime);
	}
	if (ddl_unlikely(!ddl_real.sem_clockwait))
		ddl_real_resolve();
	if (!ddl_real.sem_clockwait) { /* an older C library than the program's */
		errno = ENOSYS;
		return -1;
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_SEM_CLOCKWAIT, t0, -1, 0);
	int r = ddl_real.sem_clockwait(s, clock, abstime);
	ddl_sem_end(t, DDL_EV_SEM_CLOCKWAIT, t0, open, r);
	return r;
}
