/*
 * The trace's string table: every name an event refers to by number (peers,
 * threads, communicators, kernel and marker names, call stacks, counters)
 * and the process's key=value facts, as records appended from any thread,
 * signal handlers' included, into one growing buffer. The writer (writer.c)
 * writes what is new into the file at each flush, and the whole table again
 * into a forked child's file, so every file is read alone.
 * Communicator ids, the numbers DDL_STR_COMM records name, are handed out
 * here too.
 */
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#include "ddl.h"

struct ddl_strtab ddl_str;

/* Records a string for the trace. Never allocates with malloc (signal paths). */
void ddl_strings_add(uint16_t kind, uint32_t id, uint32_t value, const char *text, size_t len)
{
	if (len > 1024)
		len = 1024;
	size_t need = sizeof(struct ddl_strrec) + len;
	int saved = errno;
	/* No signal handler may run on this thread while it holds the lock:
	 * one that called _exit would wait on a writer that waits on us. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ddl_spin_try(&ddl_str.lock, -1);
	if (ddl_str.len + need > ddl_str.cap) {
		size_t ncap = ddl_str.cap ? ddl_str.cap * 2 : 65536;
		while (ncap < ddl_str.len + need)
			ncap *= 2;
		void *n = ddl_str.buf ? mremap(ddl_str.buf, ddl_str.cap, ncap, MREMAP_MAYMOVE)
		                      : mmap(NULL, ncap, PROT_READ | PROT_WRITE,
		                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (n == MAP_FAILED) {
			ddl_spin_unlock(&ddl_str.lock);
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			errno = saved;
			return;
		}
		ddl_str.buf = n;
		ddl_str.cap = ncap;
	}
	struct ddl_strrec r = {id, kind, (uint16_t)len, value};
	memcpy(ddl_str.buf + ddl_str.len, &r, sizeof r);
	memcpy(ddl_str.buf + ddl_str.len + sizeof r, text, len);
	/* len is also read without the lock, to see whether there is news */
	__atomic_store_n(&ddl_str.len, ddl_str.len + need, __ATOMIC_RELAXED);
	ddl_spin_unlock(&ddl_str.lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = saved;
}

/*
 * Another thread claimed an interning table's slot (a peer's, a name's)
 * and is writing its string: wait for the id it publishes at *ID, briefly
 * (it holds no lock of ours while it waits for the string lock, which the
 * writer releases within one write); 0 if it takes too long, as it would
 * in a forked child whose parent was mid-write when it forked.
 */
uint32_t ddl_id_wait(_Atomic uint32_t *id)
{
	for (int i = 0; i < 100000; i++) {
		uint32_t v = atomic_load_explicit(id, memory_order_acquire);
		if (v)
			return v;
		if (i > 100)
			sched_yield();
	}
	return 0;
}

uint32_t ddl_comm_id_new(void)
{
	static _Atomic uint32_t last;
	return atomic_fetch_add(&last, 1) + 1;
}