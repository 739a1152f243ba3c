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
/* Communicators' keys by id, as their strings gave them (ddl_comm_key). */
#define DDL_KEY_COMMS 16384
static void *_Atomic ddl_comm_keys; /* _Atomic uint64_t[DDL_KEY_COMMS] */

static void ddl_comm_key_note(uint32_t id, const char *text, size_t len)
{
	if (id >= DDL_KEY_COMMS || len < 20 || memcmp(text, "key=", 4))
		return;
	uint64_t key = 0;
	for (size_t i = 4; i < 20; i++) {
		char c = text[i];
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;
		if (d > 15)
			return;
		key = key << 4 | d;
	}
	_Atomic uint64_t *v = ddl_lazy(&ddl_comm_keys, DDL_KEY_COMMS * sizeof *v);
	if (v)
		atomic_store_explicit(&v[id], key, memory_order_relaxed);
}

uint64_t ddl_comm_key_of(uint32_t id)
{
	_Atomic uint64_t *v = atomic_load_explicit(&ddl_comm_keys, memory_order_acquire);
	return v && id < DDL_KEY_COMMS ? atomic_load_explicit(&v[id], memory_order_relaxed) : 0;
}

void ddl_strings_add(uint16_t kind, uint32_t id, uint32_t value, const char *text, size_t len)
{
	ddl_strings_try_add(kind, id, value, text, len, -1);
}

int ddl_strings_try_add(uint16_t kind, uint32_t id, uint32_t value, const char *text, size_t len,
                        int tries)
{
	if (len > 1024)
		len = 1024;
	if (kind == DDL_STR_COMM)
		ddl_comm_key_note(id, text, len);
	size_t need = sizeof(struct ddl_strrec) + len;
	int saved = errno;
	/* No signal handler may run on this thread while it holds the lock:
	 * one that called _exit would wait on a writer that waits on us. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (!ddl_spin_try(&ddl_str.lock, tries)) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		errno = saved;
		return -1;
	}
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
			return -1;
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
	return 0;
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
/*
 * Sequence numbers (args.aux): a communicator's collectives are numbered
 * 1, 2, ... in the order this process issues them, which every member
 * shares (the libraries require it); point-to-point calls apart, per
 * communicator, peer and direction, so that a send's number is the
 * matching receive's. 0 where the tables are full or cannot be mapped.
 */
#define DDL_SEQ_COMMS 16384
#define DDL_SEQ_P2P   4096
static void *_Atomic ddl_seq_coll;  /* _Atomic uint32_t[DDL_SEQ_COMMS], by communicator id */
static void *_Atomic ddl_seq_p2p;   /* struct ddl_p2pseq[DDL_SEQ_P2P], open addressing */
struct ddl_p2pseq {
	_Atomic uint64_t key; /* comm id << 33 | peer << 1 | receive; 0 free */
	_Atomic uint32_t n;
};

uint32_t ddl_comm_seq_next(uint32_t comm)
{
	_Atomic uint32_t *v = ddl_lazy(&ddl_seq_coll, DDL_SEQ_COMMS * sizeof *v);
	if (!v || !comm || comm >= DDL_SEQ_COMMS)
		return 0;
	return atomic_fetch_add_explicit(&v[comm], 1, memory_order_relaxed) + 1;
}

uint32_t ddl_p2p_seq_next(uint32_t comm, int peer, int recv)
{
	struct ddl_p2pseq *v = ddl_lazy(&ddl_seq_p2p, DDL_SEQ_P2P * sizeof *v);
	if (!v || !comm || peer < 0)
		return 0;
	uint64_t key = (uint64_t)comm << 33 | (uint64_t)(uint32_t)peer << 1 | (recv != 0);
	uint64_t h = key * 0x9e3779b97f4a7c15ull;
	for (unsigned i = 0; i < DDL_SEQ_P2P; i++) {
		struct ddl_p2pseq *e = &v[(h + i) & (DDL_SEQ_P2P - 1)];
		uint64_t k = atomic_load_explicit(&e->key, memory_order_acquire);
		if (!k) {
			uint64_t free = 0;
			if (atomic_compare_exchange_strong(&e->key, &free, key))
				k = key;
			else
				k = free; /* another thread took it: for which key? */
		}
		if (k == key)
			return atomic_fetch_add_explicit(&e->n, 1, memory_order_relaxed) + 1;
	}
	return 0;
}
