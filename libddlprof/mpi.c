/*
 * MPI's calls, the ones training jobs make: the collectives (all-reduce,
 * its nonblocking start, reduce, broadcast, all-gather(v), reduce-scatter,
 * all-to-all(v), barrier), point-to-point sends and receives, blocking and
 * nonblocking, the waits that complete them, and the making and freeing of
 * communicators. Like mpiP's PMPI wrappers, but found at run time instead
 * of linked: libmpi's MPI_* are weak aliases of its PMPI_*, so the preloaded
 * library's MPI_* come first, and the real ones are dlsym(RTLD_NEXT)'s on
 * first use. A program without MPI never reaches any of this.
 *
 * Each call is one event of class HCOLL (collectives, point-to-point,
 * nonblocking starts), HWAIT (waits) or HCOMM (MPI_Init, communicators)
 * spanning the call on the calling thread, with an args record: this
 * rank's bytes (count x MPI_Type_size), bytes per element, the
 * communicator, root or peer, and the call's number in its communicator's
 * sequence, counted alike on every member (include/ddlprof/trace.h says
 * how). The TCP transport's own socket calls inside an MPI call are
 * recorded too, as socket calls; the report counts their bytes as network
 * traffic and the call's as the collective's, never one as the other.
 *
 * Communicators are recorded (DDL_STR_COMM, how=mpi) with their size, this
 * rank, the MPI_COMM_WORLD ranks of their members (the report finds their
 * hosts from the traces' headers) and a key every member computes alike:
 * from "world", or from the member list and how many communicators of
 * that list this process made before (or saw first used, for those made
 * by calls not wrapped here, such as MPI_Cart_create).
 *
 * Nothing here includes mpi.h (see mpi.h). The implementation is
 * recognised at MPI_Init: Open MPI by its ompi_mpi_comm_world symbol,
 * MPICH and its derivatives by MPI_Get_library_version; their constants
 * (MPI_COMM_WORLD, MPI_IN_PLACE, MPI_STATUS_IGNORE, ...) are theirs. An MPI
 * not recognised has its calls recorded without communicators or sequence
 * numbers rather than guessed at.
 *
 * A wrapper never changes what the call does: the same arguments reach
 * MPI, its return value and errno come back unchanged, and its status is
 * the program's; a receive given MPI_STATUS_IGNORE is given a status of
 * ours instead, read through MPI_Get_count, which the program never sees.
 * The library asks MPI about a call's communicator and datatypes only
 * after the call succeeded with them (so never about a bad handle, which
 * would run the program's error handler), never before MPI_Init or after
 * MPI_Finalize, and never dereferences what the program passes but
 * through MPI's own functions, beyond the request and count arrays the
 * call itself reads.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ddl.h"
#include "mpi.h"

struct ddl_mpi_real ddl_mpi_real;

#define DDL_X_ENTRY(n, r, p) {#n, "mpi", (void **)&ddl_mpi_real.n},
const struct ddl_hook_entry ddl_mpi_hooks[] = {DDL_MPI_HOOKS(DDL_X_ENTRY)};
#undef DDL_X_ENTRY
const size_t ddl_mpi_nhooks = sizeof ddl_mpi_hooks / sizeof ddl_mpi_hooks[0];

/*
 * The store is made under a lock, as ddl_gpu_next_slot's (gpu.c): once
 * filled a slot never changes (but for ddl_real_set), so wrappers read it
 * plainly. No signal handler of this thread comes in while it is held.
 */
static pthread_mutex_t ddl_mpi_next_lock = PTHREAD_MUTEX_INITIALIZER;

void *ddl_mpi_next_slot(void **slot, const char *name)
{
	int saved = errno;
	if (ddl_unlikely(!ddl_g.initialised))
		ddl_init();
	void *f = ddl_real_find(name); /* not under our lock: dlsym takes the loader's */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_mutex_lock(&ddl_mpi_next_lock);
	void *cur = __atomic_load_n(slot, __ATOMIC_RELAXED);
	if (!cur && f)
		__atomic_store_n(slot, cur = f, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ddl_mpi_next_lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = saved;
	return cur;
}

/*
 * The real function of a wrapper. It cannot be missing: the program
 * called MPI_X, so an MPI that has it is loaded. Were it not found, no
 * call could go on, and the process stops with a line saying why.
 */
/* What a wrapper calls where no MPI is loaded (a program that found our
 * MPI_ symbol with dlsym and calls it, probing for MPI): MPI_ERR_OTHER,
 * as an MPI without that function would fail it; every MPI function
 * returns an int, and the arguments are the caller's to clean up. */
static int ddl_mpi_missing(void)
{
	return 16; /* MPI_ERR_OTHER in Open MPI and MPICH */
}

static void *ddl_mpi_need(void **slot, const char *name)
{
	void *f = ddl_mpi_next_slot(slot, name);
	if (!f) {
		static _Atomic int said;
		if (!atomic_exchange(&said, 1))
			ddl_warn("no MPI's %s past libddlprof (no libmpi loaded): the call fails with MPI_ERR_OTHER",
			         name);
		return (void *)ddl_mpi_missing;
	}
	return f;
}

#define DDL_MPI_REAL(n) \
	__extension__({ \
		__typeof__(ddl_mpi_real.n) ddl_r_ = __atomic_load_n(&ddl_mpi_real.n, __ATOMIC_ACQUIRE); \
		if (ddl_unlikely(!ddl_r_)) \
			ddl_r_ = (__typeof__(ddl_r_))ddl_mpi_need((void **)&ddl_mpi_real.n, #n); \
		ddl_r_; \
	})
/* One of the library's own calls: NULL when this MPI lacks it. */
#define DDL_MPI_OWN(n) \
	__extension__({ \
		__typeof__(ddl_mpi_real.n) ddl_r_ = __atomic_load_n(&ddl_mpi_real.n, __ATOMIC_ACQUIRE); \
		if (ddl_unlikely(!ddl_r_)) \
			ddl_r_ = (__typeof__(ddl_r_))ddl_mpi_next_slot((void **)&ddl_mpi_real.n, #n); \
		ddl_r_; \
	})

/* ---- the implementation and its constants ---- */

enum { DDL_MPI_NEW = 0, DDL_MPI_RUNNING = 1, DDL_MPI_DONE = 2 };
enum { DDL_MPI_UNKNOWN = 0, DDL_MPI_OMPI = 1, DDL_MPI_MPICH = 2 };
#define DDL_MPI_SUCCESS 0
#define DDL_MPI_UNDEFINED (-32766) /* the same in Open MPI and MPICH */

static struct {
	_Atomic int state;      /* DDL_MPI_NEW until MPI_Init, DONE from MPI_Finalize on */
	int impl;
	unsigned hsize;         /* bytes of a handle in an array: 8, 4; 0 unknown */
	uintptr_t world, comm_null, request_null, in_place, status_ignore;
	int any_source, proc_null;
	unsigned src_off;       /* of MPI_SOURCE in an MPI_Status */
	uint64_t world_group;   /* MPI_COMM_WORLD's group, ours */
	pthread_mutex_t lock;   /* the communicator table's writers, the lists' counts */
} ddl_mpi = {.lock = PTHREAD_MUTEX_INITIALIZER};

void ddl_mpi_after_fork_child(void)
{
	pthread_mutex_init(&ddl_mpi.lock, NULL);
	pthread_mutex_init(&ddl_mpi_next_lock, NULL);
}

/* H as this implementation's handles are: MPICH's are ints (the caller
 * may have left anything in the register's upper half). */
static inline uintptr_t ddl_mpi_norm(ddl_mpi_h h)
{
	return ddl_mpi.hsize == 4 ? (uint32_t)h : h;
}

/* Handle I of the array (or output) at P. */
static inline uintptr_t ddl_mpi_handle_at(const void *p, int i)
{
	if (ddl_mpi.hsize == 8) {
		uint64_t v;
		memcpy(&v, (const char *)p + (size_t)i * 8, 8);
		return (uintptr_t)v;
	}
	uint32_t v;
	memcpy(&v, (const char *)p + (size_t)i * 4, 4);
	return v;
}


/* ---- communicators ---- */

#define DDL_MPI_COMMS 4096 /* live at once; a power of 2 */
#define DDL_MPI_BUSY UINTPTR_MAX /* a slot being filled */

struct ddl_mpi_comm {
	_Atomic uintptr_t handle;  /* 0 empty, DDL_MPI_BUSY being filled */
	_Atomic int dead;          /* freed: its handle may come back for another */
	uint32_t id;               /* the DDL_STR_COMM record's */
	int size, rank;
	uint64_t key;
	_Atomic uint32_t seq;      /* its collective calls so far */
	/* point-to-point calls so far: sends to each rank, receives from each,
	 * receives from any source; mapped on the first */
	_Atomic uint32_t *_Atomic p2p;
	size_t p2p_bytes;
};
static void *_Atomic ddl_mpi_comms; /* struct ddl_mpi_comm[DDL_MPI_COMMS] */

/* Member lists made so far (created, or seen first), and how many of each. */
#define DDL_MPI_LISTS 1024
static struct {
	uint64_t list[DDL_MPI_LISTS];
	uint32_t n[DDL_MPI_LISTS];
	unsigned used;
} ddl_mpi_lists;

static inline unsigned ddl_mpi_slot(uintptr_t h)
{
	return (unsigned)(((uint64_t)h * 0x9E3779B97F4A7C15ull) >> 52) & (DDL_MPI_COMMS - 1);
}

/* The live entry of communicator H (normalised), or NULL. No lock. */
static struct ddl_mpi_comm *ddl_mpi_comm_find(uintptr_t h)
{
	struct ddl_mpi_comm *tab = atomic_load_explicit(&ddl_mpi_comms, memory_order_acquire);
	if (!tab || !h)
		return NULL;
	for (unsigned i = ddl_mpi_slot(h), n = 0; n < DDL_MPI_COMMS; n++, i = (i + 1) & (DDL_MPI_COMMS - 1)) {
		uintptr_t v = atomic_load_explicit(&tab[i].handle, memory_order_acquire);
		if (!v)
			return NULL;
		if (v == h && !atomic_load_explicit(&tab[i].dead, memory_order_acquire))
			return &tab[i];
	}
	return NULL;
}

/* Appends the list of world ranks R[0..N) to OUT (room N bytes) as
 * "0-3,8,16-48:8" (runs of 1 apart as a-b, of another step s as a-b:s);
 * "...,+" when it does not fit. */
static void ddl_mpi_ranks_text(const int *r, int n, char *out, size_t room)
{
	size_t len = 0;
	out[0] = 0;
	for (int i = 0; i < n;) {
		int j = i + 1, step = j < n ? r[j] - r[i] : 1;
		while (j < n && r[j] - r[j - 1] == step)
			j++;
		if (j - i < 3 && step != 1)
			j = i + 1; /* two alike are two items */
		char item[48];
		if (j - i == 1)
			snprintf(item, sizeof item, "%s%d", i ? "," : "", r[i]);
		else if (step == 1)
			snprintf(item, sizeof item, "%s%d-%d", i ? "," : "", r[i], r[j - 1]);
		else
			snprintf(item, sizeof item, "%s%d-%d:%d", i ? "," : "", r[i], r[j - 1], step);
		size_t k = strlen(item);
		if (len + k + 3 >= room) {
			snprintf(out + len, room - len, ",+");
			return;
		}
		memcpy(out + len, item, k + 1);
		len += k;
		i = j;
	}
}

enum { DDL_MPI_MADE_WORLD, DDL_MPI_MADE_SEEN, DDL_MPI_MADE_SPLIT, DDL_MPI_MADE_SPLIT_TYPE,
       DDL_MPI_MADE_DUP, DDL_MPI_MADE_CREATE };
static const char *const ddl_mpi_made[] = {"world", "seen", "split", "split_type", "dup", "create"};

/*
 * Records communicator H (normalised, valid: a call just succeeded with
 * it, or made it), made as MADE says from the one of key PARENT; returns
 * its entry, or NULL when MPI would not say what it is or the table is
 * full (the call is then recorded without it). Called with the thread
 * marked busy; cold: once per communicator.
 */
static struct ddl_mpi_comm *ddl_mpi_comm_add(uintptr_t h, int made, uint64_t parent, int color)
{
	__typeof__(ddl_mpi_real.PMPI_Comm_size) csize = DDL_MPI_OWN(PMPI_Comm_size);
	__typeof__(ddl_mpi_real.PMPI_Comm_rank) crank = DDL_MPI_OWN(PMPI_Comm_rank);
	__typeof__(ddl_mpi_real.PMPI_Comm_group) cgroup = DDL_MPI_OWN(PMPI_Comm_group);
	__typeof__(ddl_mpi_real.PMPI_Group_translate_ranks) translate = DDL_MPI_OWN(PMPI_Group_translate_ranks);
	__typeof__(ddl_mpi_real.PMPI_Group_free) gfree = DDL_MPI_OWN(PMPI_Group_free);
	struct ddl_mpi_comm *tab = atomic_load_explicit(&ddl_mpi_comms, memory_order_acquire);
	int size = -1, rank = -1;
	if (!tab || !csize || !crank || csize(h, &size) != DDL_MPI_SUCCESS ||
	    crank(h, &rank) != DDL_MPI_SUCCESS || size < 1 || size > (1 << 24))
		return NULL;
	/* the members' world ranks, in this communicator's rank order */
	int *in = malloc(2 * (size_t)size * sizeof *in), *wr = in ? in + size : NULL;
	int have = 0;
	if (in) {
		for (int i = 0; i < size; i++)
			in[i] = i;
		uint64_t g = 0;
		if (h == ddl_mpi.world) {
			for (int i = 0; i < size; i++)
				wr[i] = i;
			have = 1;
		} else if (cgroup && translate && ddl_mpi.world_group &&
		           cgroup(h, &g) == DDL_MPI_SUCCESS) {
			uintptr_t gh = ddl_mpi.hsize == 4 ? (uint32_t)g : (uintptr_t)g;
			have = translate(gh, size, in, (ddl_mpi_h)ddl_mpi.world_group, wr) == DDL_MPI_SUCCESS;
			if (gfree)
				gfree(&g);
		}
	}
	uint64_t list = DDL_FNV0;
	if (have)
		list = ddl_fnv(list, wr, (size_t)size * sizeof *wr);
	else
		list = ddl_fnv(ddl_fnv(list, &size, sizeof size), &parent, sizeof parent);
	int seen = made == DDL_MPI_MADE_SEEN;
	uint64_t ns = ddl_fnv(list, seen ? "seen" : "made", 4); /* two counts per list */
	pthread_mutex_lock(&ddl_mpi.lock);
	/* a live entry of H made meanwhile (another thread met it first at the
	 * same moment: it is counted once), else the first free or freed slot
	 * of its chain */
	struct ddl_mpi_comm *c = NULL, *spot = NULL;
	for (unsigned i = ddl_mpi_slot(h), n = 0; n < DDL_MPI_COMMS && !c; n++, i = (i + 1) & (DDL_MPI_COMMS - 1)) {
		uintptr_t v = atomic_load_explicit(&tab[i].handle, memory_order_relaxed);
		int dead = atomic_load_explicit(&tab[i].dead, memory_order_relaxed);
		if (v == h && !dead && made == DDL_MPI_MADE_SEEN)
			c = &tab[i];
		else if (v == h && !dead)
			atomic_store_explicit(&tab[i].dead, 1, memory_order_release); /* a stale one */
		if (!spot && (!v || atomic_load_explicit(&tab[i].dead, memory_order_relaxed)))
			spot = &tab[i];
		if (!v)
			break;
	}
	if (c || !spot) {
		pthread_mutex_unlock(&ddl_mpi.lock);
		free(in);
		return c;
	}
	uint32_t nth = 0;
	if (made != DDL_MPI_MADE_WORLD) {
		unsigned k = 0;
		while (k < ddl_mpi_lists.used && ddl_mpi_lists.list[k] != ns)
			k++;
		if (k == ddl_mpi_lists.used && k < DDL_MPI_LISTS) {
			ddl_mpi_lists.list[k] = ns;
			ddl_mpi_lists.n[k] = 0;
			ddl_mpi_lists.used++;
		}
		nth = k < DDL_MPI_LISTS ? ++ddl_mpi_lists.n[k] : 0;
	}
	uint64_t key = made == DDL_MPI_MADE_WORLD ? ddl_fnv(DDL_FNV0, "mpi:world", 9)
	                                          : ddl_fnv(ns, &nth, sizeof nth);
	/* a freed slot taken again: readers passing see it busy, not as the old one */
	atomic_store_explicit(&spot->handle, DDL_MPI_BUSY, memory_order_release);
	_Atomic uint32_t *old = atomic_load_explicit(&spot->p2p, memory_order_relaxed);
	if (old)
		munmap((void *)old, spot->p2p_bytes);
	atomic_store_explicit(&spot->p2p, NULL, memory_order_relaxed);
	spot->p2p_bytes = 0;
	spot->id = ddl_comm_id_new();
	spot->size = size;
	spot->rank = rank;
	spot->key = key;
	atomic_store_explicit(&spot->seq, 0, memory_order_relaxed);
	atomic_store_explicit(&spot->dead, 0, memory_order_relaxed);
	atomic_store_explicit(&spot->handle, h, memory_order_release);
	pthread_mutex_unlock(&ddl_mpi.lock);

	char ranks[800], id[64], text[1024];
	if (have)
		ddl_mpi_ranks_text(wr, size, ranks, sizeof ranks);
	else
		snprintf(ranks, sizeof ranks, "+");
	if (made == DDL_MPI_MADE_WORLD)
		snprintf(id, sizeof id, "world");
	else
		snprintf(id, sizeof id, "%016llx:%s%u", (unsigned long long)list, seen ? "seen" : "", nth);
	int n = snprintf(text, sizeof text,
	                 "key=%016llx rank=%d nranks=%d dev=-1 host=%s how=mpi parent=%016llx color=%d "
	                 "made=%s id=%s ranks=%s",
	                 (unsigned long long)key, rank, size, ddl_g.host, (unsigned long long)parent, color,
	                 ddl_mpi_made[made], id, ranks);
	if (n > 0)
		ddl_strings_add(DDL_STR_COMM, spot->id, (uint32_t)-1, text,
		                n < (int)sizeof text ? (size_t)n : sizeof text - 1);
	free(in);
	return spot;
}

/* The entry of communicator H that a call just used successfully: found,
 * or recorded now (first seen); NULL when it cannot be. */
static struct ddl_mpi_comm *ddl_mpi_comm_of(struct ddl_thread *t, ddl_mpi_h comm)
{
	if (ddl_mpi.impl == DDL_MPI_UNKNOWN)
		return NULL;
	uintptr_t h = ddl_mpi_norm(comm);
	struct ddl_mpi_comm *c = ddl_mpi_comm_find(h);
	if (ddl_likely(c != NULL))
		return c;
	t->busy = 1;
	c = ddl_mpi_comm_add(h, DDL_MPI_MADE_SEEN, 0, -1);
	t->busy = 0;
	return c;
}

/* The next number of DIR's (0 send, 1 receive) point-to-point calls with
 * PEER on C; 0 when the counters cannot be had. */
static uint32_t ddl_mpi_p2p_next(struct ddl_mpi_comm *c, int peer, int dir)
{
	_Atomic uint32_t *v = atomic_load_explicit(&c->p2p, memory_order_acquire);
	size_t bytes = (2 * (size_t)c->size + 1) * sizeof *v;
	if (ddl_unlikely(!v)) {
		void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return 0;
		_Atomic uint32_t *expect = NULL;
		pthread_mutex_lock(&ddl_mpi.lock); /* under it: a slot taken again unmaps */
		if (atomic_compare_exchange_strong(&c->p2p, &expect, (_Atomic uint32_t *)m)) {
			c->p2p_bytes = bytes;
			v = m;
		} else {
			munmap(m, bytes);
			v = expect;
		}
		pthread_mutex_unlock(&ddl_mpi.lock);
	}
	size_t i = peer < 0 ? 2 * (size_t)c->size : (size_t)dir * (size_t)c->size + (size_t)peer;
	return atomic_fetch_add_explicit(&v[i], 1, memory_order_relaxed) + 1;
}

/* ---- start and end ---- */

/*
 * The address of MPI's object NAME as the program uses it: a program
 * built as PIE holds a copy of it (a copy relocation) that libmpi's own
 * code binds to, so the global scope's definition first, the library's
 * past ours only where the global scope has none (MPI loaded RTLD_LOCAL).
 */
static uintptr_t ddl_mpi_object(const char *name)
{
	void *p = dlsym(RTLD_DEFAULT, name);
	return (uintptr_t)(p ? p : ddl_real_find(name));
}

/*
 * MPI is up: which one it is, its constants, MPI_COMM_WORLD. Once, with
 * the thread busy. Keeps errno.
 */
static void ddl_mpi_start(void)
{
	int saved = errno;
	pthread_mutex_lock(&ddl_mpi.lock);
	if (atomic_load_explicit(&ddl_mpi.state, memory_order_relaxed) != DDL_MPI_NEW) {
		pthread_mutex_unlock(&ddl_mpi.lock);
		errno = saved;
		return;
	}
	char version[256] = "";
	int vlen = 0;
	__typeof__(ddl_mpi_real.PMPI_Get_library_version) getv = DDL_MPI_OWN(PMPI_Get_library_version);
	if (getv && getv(version, &vlen) == DDL_MPI_SUCCESS && vlen > 0 && vlen < (int)sizeof version)
		version[vlen] = 0;
	else
		version[0] = 0;
	version[strcspn(version, "\n")] = 0;
	uintptr_t ompi_world = ddl_mpi_object("ompi_mpi_comm_world");
	if (ompi_world) {
		ddl_mpi.impl = DDL_MPI_OMPI;
		ddl_mpi.hsize = sizeof(void *);
		ddl_mpi.world = ompi_world;
		ddl_mpi.comm_null = ddl_mpi_object("ompi_mpi_comm_null");
		ddl_mpi.request_null = ddl_mpi_object("ompi_request_null");
		ddl_mpi.in_place = 1;
		ddl_mpi.status_ignore = 0;
		ddl_mpi.any_source = -1;
		ddl_mpi.proc_null = -2;
		ddl_mpi.src_off = 0;
	} else if ((strstr(version, "MPICH") || strstr(version, "Intel(R) MPI") ||
	            strstr(version, "MVAPICH")) && !ddl_real_find("MPI_Abi_get_version")) {
		/* MPICH's ABI (Intel MPI's, MVAPICH's, Cray's): handles are ints;
		 * not the standard ABI of MPI 5, whose handles are pointers */
		ddl_mpi.impl = DDL_MPI_MPICH;
		ddl_mpi.hsize = 4;
		ddl_mpi.world = 0x44000000;
		ddl_mpi.comm_null = 0x04000000;
		ddl_mpi.request_null = 0x2c000000;
		ddl_mpi.in_place = (uintptr_t)-1;
		ddl_mpi.status_ignore = 1;
		ddl_mpi.any_source = -2;
		ddl_mpi.proc_null = -1;
		ddl_mpi.src_off = 8;
	} else {
		ddl_mpi.impl = DDL_MPI_UNKNOWN;
	}
	if (ddl_mpi.impl != DDL_MPI_UNKNOWN && ddl_lazy(&ddl_mpi_comms, DDL_MPI_COMMS * sizeof(struct ddl_mpi_comm))) {
		__typeof__(ddl_mpi_real.PMPI_Comm_group) cgroup = DDL_MPI_OWN(PMPI_Comm_group);
		uint64_t g = 0;
		if (cgroup && cgroup((ddl_mpi_h)ddl_mpi.world, &g) == DDL_MPI_SUCCESS)
			ddl_mpi.world_group = ddl_mpi.hsize == 4 ? (uint32_t)g : g;
	}
	pthread_mutex_unlock(&ddl_mpi.lock);
	ddl_meta("mpi", ddl_mpi.impl == DDL_MPI_OMPI ? "openmpi" : ddl_mpi.impl == DDL_MPI_MPICH ? "mpich"
	                                                                                           : "unknown");
	if (version[0])
		ddl_meta("mpi_version", version);
	if (ddl_mpi.impl != DDL_MPI_UNKNOWN)
		ddl_mpi_comm_add(ddl_mpi.world, DDL_MPI_MADE_WORLD, 0, -1);
	atomic_store_explicit(&ddl_mpi.state, DDL_MPI_RUNNING, memory_order_release);
	errno = saved;
}

/* ddl_mpi_enter's slow path: MPI not seen started (by a call not wrapped
 * here, PMPI_Init or a session), or finished. Keeps errno. */
static struct ddl_thread *ddl_mpi_enter_slow(struct ddl_thread *t)
{
	if (atomic_load_explicit(&ddl_mpi.state, memory_order_acquire) == DDL_MPI_DONE)
		return NULL;
	int saved = errno, init = 0, fin = 1;
	__typeof__(ddl_mpi_real.PMPI_Initialized) initialized = DDL_MPI_OWN(PMPI_Initialized);
	__typeof__(ddl_mpi_real.PMPI_Finalized) finalized = DDL_MPI_OWN(PMPI_Finalized);
	/* the two calls the standard allows at any time */
	if (initialized && finalized && initialized(&init) == DDL_MPI_SUCCESS && init &&
	    finalized(&fin) == DDL_MPI_SUCCESS && !fin) {
		t->busy = 1;
		ddl_mpi_start();
		t->busy = 0;
	}
	errno = saved;
	return atomic_load_explicit(&ddl_mpi.state, memory_order_acquire) == DDL_MPI_RUNNING ? t : NULL;
}

/* The calling thread's ring, or NULL when this MPI call passes through
 * unrecorded: recording is off, or MPI is not running (before MPI_Init,
 * from MPI_Finalize on), when the library asks MPI nothing. */
static inline struct ddl_thread *ddl_mpi_enter(void)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_MPI);
	if (ddl_unlikely(!t))
		return NULL;
	if (ddl_likely(atomic_load_explicit(&ddl_mpi.state, memory_order_acquire) == DDL_MPI_RUNNING))
		return t;
	return ddl_mpi_enter_slow(t);
}

/* ---- what a call moved ---- */

/* The bytes of one element of DT (a call just succeeded with it), into
 * A's dtype (0 past 255); 0 when MPI will not say. */
static inline uint64_t ddl_mpi_type_size(struct ddl_args *a, ddl_mpi_h dt)
{
	__typeof__(ddl_mpi_real.PMPI_Type_size) tsize = DDL_MPI_OWN(PMPI_Type_size);
	int sz = 0;
	if (!tsize || tsize(dt, &sz) != DDL_MPI_SUCCESS || sz <= 0)
		return 0;
	a->dtype = sz <= 255 ? (uint8_t)sz : 0;
	return (uint64_t)sz;
}

/* COUNT elements of DT; 0 for none (whose type MPI may not even check). */
static inline uint64_t ddl_mpi_bytes(struct ddl_args *a, int64_t count, ddl_mpi_h dt)
{
	return count > 0 ? (uint64_t)count * ddl_mpi_type_size(a, dt) : 0;
}

/* The sum of the N counts at V (the program's array, which the call read). */
static int64_t ddl_mpi_sum(const int *v, int n)
{
	int64_t s = 0;
	for (int i = 0; v && i < n; i++)
		s += v[i] > 0 ? v[i] : 0;
	return s;
}

/* The size of communicator C, or of COMM when it has no entry; 0 unknown. */
static int ddl_mpi_size(const struct ddl_mpi_comm *c, ddl_mpi_h comm)
{
	if (c)
		return c->size;
	__typeof__(ddl_mpi_real.PMPI_Comm_size) csize = DDL_MPI_OWN(PMPI_Comm_size);
	int n = 0;
	return csize && csize(comm, &n) == DDL_MPI_SUCCESS && n > 0 ? n : 0;
}

/*
 * A call's number is taken as it begins, so that a call that never
 * returns (a hang) is known by it: its open call (ddl_open_enter_coll)
 * names the communicator and the number while it runs (not its bytes:
 * they take MPI_Type_size). Nothing is asked of MPI before a call, so
 * only a communicator already known can be named then; one first met in use is recorded, and its call numbered, once the
 * call succeeded with it (every member meets it first at the same call).
 * A call that fails keeps its number.
 */
struct ddl_mpi_call {
	struct ddl_args a;
	struct ddl_mpi_comm *c; /* COMM's entry, NULL while not known */
	ddl_mpi_h comm;
	int numbered;           /* a.aux taken */
};

/* Before a call on COMM with PEER (a root; -1 none): A's communicator
 * when it is known, and for a collective (COLL) its number. */
static inline void ddl_mpi_begin(struct ddl_mpi_call *m, ddl_mpi_h comm, int peer, int coll)
{
	memset(&m->a, 0, sizeof m->a);
	m->a.kind = DDL_EV_ARGS;
	m->a.peer = peer;
	m->comm = comm;
	m->numbered = 0;
	m->c = ddl_mpi.impl != DDL_MPI_UNKNOWN ? ddl_mpi_comm_find(ddl_mpi_norm(comm)) : NULL;
	if (!m->c)
		return;
	m->a.comm = m->c->id;
	if (coll) {
		m->a.aux = atomic_fetch_add_explicit(&m->c->seq, 1, memory_order_relaxed) + 1;
		m->numbered = 1;
	}
}

/* After the call, which returned RC: a communicator first met, recorded
 * now that the call succeeded with it, and for a collective (COLL) the
 * call's number on it. */
static inline void ddl_mpi_end(struct ddl_thread *t, struct ddl_mpi_call *m, int rc, int coll)
{
	if (m->c || rc != DDL_MPI_SUCCESS || ddl_mpi.impl == DDL_MPI_UNKNOWN)
		return;
	m->c = ddl_mpi_comm_of(t, m->comm);
	if (!m->c)
		return;
	m->a.comm = m->c->id;
	if (coll && !m->numbered) {
		m->a.aux = atomic_fetch_add_explicit(&m->c->seq, 1, memory_order_relaxed) + 1;
		m->numbered = 1;
	}
}

/* A point-to-point call's peer PEER as the call gave it (or the status
 * said), in direction DIR (0 send, 1 receive), into M: normalised, and
 * numbered among DIR's calls with it when the communicator is known and
 * the peer a rank of it (MPI_ANY_SOURCE: the receives from any source, as
 * peer -1). MPI_PROC_NULL moves nothing: peer -2, no number. */
static inline void ddl_mpi_peer(struct ddl_mpi_call *m, int peer, int dir)
{
	if (ddl_mpi.impl == DDL_MPI_UNKNOWN) {
		m->a.peer = peer >= 0 ? peer : -1;
	} else if (peer == ddl_mpi.proc_null) {
		m->a.peer = -2;
	} else if (peer == ddl_mpi.any_source) {
		m->a.peer = -1;
		if (m->c && !m->numbered) {
			m->a.aux = ddl_mpi_p2p_next(m->c, -1, dir);
			m->numbered = 1;
		}
	} else if (peer >= 0) {
		m->a.peer = peer;
		if (m->c && !m->numbered && peer < m->c->size) {
			m->a.aux = ddl_mpi_p2p_next(m->c, peer, dir);
			m->numbered = 1;
		}
	}
}

static inline void ddl_mpi_put(struct ddl_thread *t, unsigned kind, uint64_t t0, uint64_t t1, int rc,
                               int fd, const struct ddl_args *a)
{
	/* with --backtrace, the call's stack too (unwind.c) */
	ddl_ring_put_args_call(t, kind, 0, t0, t1, rc, fd, 0, a);
}

/* ---- requests: nonblocking starts, and the waits that complete them ---- */

/* A thread's nonblocking operations in flight, by request handle (open
 * addressing): what their waits say they waited for. Requests a thread
 * completes that another started are not in its table (their waits name
 * no start); more in flight than fit are not kept. */
#define DDL_MPI_REQS 1024 /* a power of 2 */
struct ddl_mpi_req {
	uintptr_t req;
	uint32_t comm, seq;
	int32_t peer;
	uint8_t kind;
};
struct ddl_mpi_reqtab {
	pid_t tid;             /* the thread it is for: a ring taken again starts it anew */
	unsigned n;
	struct ddl_mpi_req v[DDL_MPI_REQS];
};

static struct ddl_mpi_reqtab *ddl_mpi_reqs(struct ddl_thread *t)
{
	struct ddl_mpi_reqtab *r = ddl_lazy(&t->mpi_reqs, sizeof *r);
	if (r && r->tid != t->tid) {
		memset(r, 0, sizeof *r);
		r->tid = t->tid;
	}
	return r;
}

static inline unsigned ddl_mpi_req_slot(uintptr_t h)
{
	return (unsigned)(((uint64_t)h * 0x9E3779B97F4A7C15ull) >> 40) & (DDL_MPI_REQS - 1);
}

/* Remembers the start A of KIND made request REQ. */
static void ddl_mpi_req_put(struct ddl_thread *t, uintptr_t req, unsigned kind, const struct ddl_args *a)
{
	struct ddl_mpi_reqtab *r = req && req != ddl_mpi.request_null ? ddl_mpi_reqs(t) : NULL;
	if (!r)
		return;
	unsigned i = ddl_mpi_req_slot(req);
	while (r->v[i].req && r->v[i].req != req)
		i = (i + 1) & (DDL_MPI_REQS - 1);
	if (!r->v[i].req) {
		if (r->n >= DDL_MPI_REQS * 3 / 4)
			return;
		r->n++;
	}
	r->v[i] = (struct ddl_mpi_req){req, a->comm, a->aux, a->peer, (uint8_t)kind};
}

/* The start of REQ, or NULL. */
static struct ddl_mpi_req *ddl_mpi_req_find(struct ddl_mpi_reqtab *r, uintptr_t req)
{
	if (!r || !req || !r->n)
		return NULL;
	for (unsigned i = ddl_mpi_req_slot(req); r->v[i].req; i = (i + 1) & (DDL_MPI_REQS - 1))
		if (r->v[i].req == req)
			return &r->v[i];
	return NULL;
}

/* Forgets E (backward-shift deletion: later entries of its run move up). */
static void ddl_mpi_req_drop(struct ddl_mpi_reqtab *r, struct ddl_mpi_req *e)
{
	unsigned i = (unsigned)(e - r->v), j = i;
	for (;;) {
		j = (j + 1) & (DDL_MPI_REQS - 1);
		if (!r->v[j].req)
			break;
		unsigned home = ddl_mpi_req_slot(r->v[j].req);
		/* j's entry may fill the hole at i when i lies cyclically in [home, j) */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			r->v[i] = r->v[j];
			i = j;
		}
	}
	memset(&r->v[i], 0, sizeof r->v[i]);
	r->n--;
}

/* Up to this many requests of a wait are looked at one by one. */
#define DDL_MPI_WAIT_MAX 64

/* A wait in the making: the requests it was given, as they were before. */
struct ddl_mpi_wait {
	struct ddl_mpi_reqtab *tab;
	int n;                            /* of them, kept in h */
	uintptr_t h[DDL_MPI_WAIT_MAX];
};

/* Before a wait on the COUNT requests at REQS: keeps their handles. */
static inline void ddl_mpi_wait_begin(struct ddl_thread *t, struct ddl_mpi_wait *w, const void *reqs,
                                      int count)
{
	w->n = 0;
	w->tab = NULL;
	if (!reqs || count <= 0 || !ddl_mpi.hsize || !atomic_load_explicit(&t->mpi_reqs, memory_order_relaxed))
		return; /* no start of this thread's is in flight */
	w->tab = ddl_mpi_reqs(t);
	w->n = count < DDL_MPI_WAIT_MAX ? count : DDL_MPI_WAIT_MAX;
	for (int i = 0; i < w->n; i++)
		w->h[i] = ddl_mpi_handle_at(reqs, i);
}

/*
 * After the wait: the requests at indices IDX[0..NDONE) of W (IDX NULL:
 * 0, 1, ...) completed; forgets them, and records the wait with the first
 * one whose start is known.
 */
static void ddl_mpi_wait_end(struct ddl_thread *t, struct ddl_mpi_wait *w, unsigned kind, uint64_t t0,
                             uint64_t t1, int rc, int count, const int *idx, int ndone)
{
	struct ddl_args a;
	memset(&a, 0, sizeof a);
	a.kind = DDL_EV_ARGS;
	a.peer = -1;
	a.corr = ndone > 0 ? (uint32_t)ndone : 0;
	for (int k = 0; k < ndone && w->tab; k++) {
		int i = idx ? idx[k] : k;
		struct ddl_mpi_req *e = i >= 0 && i < w->n ? ddl_mpi_req_find(w->tab, w->h[i]) : NULL;
		if (!e)
			continue;
		if (!a.op) {
			a.op = e->kind;
			a.comm = e->comm;
			a.aux = e->seq;
			a.peer = e->peer;
		}
		ddl_mpi_req_drop(w->tab, e);
	}
	ddl_mpi_put(t, kind, t0, t1, rc, count, &a);
}

/* The open call of a wait on W's requests (of KIND, from T0): the first
 * whose start this thread recorded, its communicator, and, for a
 * collective's (MPI_Iallreduce's), its number. */
static inline int ddl_mpi_wait_open(struct ddl_thread *t, const struct ddl_mpi_wait *w, unsigned kind,
                                    uint64_t t0)
{
	for (int i = 0; w->tab && i < w->n; i++) {
		const struct ddl_mpi_req *e = ddl_mpi_req_find(w->tab, w->h[i]);
		if (e)
			return ddl_open_enter_coll(t, kind, t0, e->comm,
			                           e->kind == DDL_EV_MPI_IALLREDUCE ? e->seq : 0, 0);
	}
	return ddl_open_enter(t, kind, t0, -1, 0);
}

/* ---- the wrappers ---- */

/* MPI_Init and MPI_Init_thread: MPI starts, MPI_COMM_WORLD is recorded. */
static int ddl_mpi_inited(struct ddl_thread *t, unsigned kind, uint64_t t0, int open, int rc)
{
	uint64_t t1 = ddl_clock_now();
	ddl_open_leave(t, open);
	int saved = errno;
	if (rc == DDL_MPI_SUCCESS) {
		t->busy = 1;
		ddl_mpi_start();
		t->busy = 0;
	}
	struct ddl_args a;
	memset(&a, 0, sizeof a);
	a.kind = DDL_EV_ARGS;
	a.peer = -1;
	struct ddl_mpi_comm *w = rc == DDL_MPI_SUCCESS ? ddl_mpi_comm_find(ddl_mpi.world) : NULL;
	if (w) {
		a.comm = a.name = w->id;
		a.peer = w->rank;
	}
	ddl_mpi_put(t, kind, t0, t1, rc, -1, &a);
	errno = saved;
	return rc;
}

DDL_EXPORT int MPI_Init(int *argc, char ***argv)
{
	__typeof__(ddl_mpi_real.MPI_Init) real = DDL_MPI_REAL(MPI_Init);
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_MPI);
	if (!t)
		return real(argc, argv);
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_MPI_INIT, t0, -1, 0);
	int rc = real(argc, argv);
	return ddl_mpi_inited(t, DDL_EV_MPI_INIT, t0, open, rc);
}

DDL_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	__typeof__(ddl_mpi_real.MPI_Init_thread) real = DDL_MPI_REAL(MPI_Init_thread);
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_MPI);
	if (!t)
		return real(argc, argv, required, provided);
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_MPI_INIT_THREAD, t0, -1, 0);
	int rc = real(argc, argv, required, provided);
	return ddl_mpi_inited(t, DDL_EV_MPI_INIT_THREAD, t0, open, rc);
}

DDL_EXPORT int MPI_Finalize(void)
{
	__typeof__(ddl_mpi_real.MPI_Finalize) real = DDL_MPI_REAL(MPI_Finalize);
	/* from here on the library asks MPI nothing */
	int was = atomic_exchange(&ddl_mpi.state, DDL_MPI_DONE);
	struct ddl_thread *t = was == DDL_MPI_RUNNING ? ddl_thread_enter(DDL_FAM_MPI) : NULL;
	if (!t)
		return real();
	struct ddl_args a;
	memset(&a, 0, sizeof a);
	a.kind = DDL_EV_ARGS;
	a.peer = -1;
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_MPI_FINALIZE, t0, -1, 0);
	int rc = real();
	uint64_t t1 = ddl_clock_now();
	ddl_open_leave(t, open);
	int saved = errno;
	ddl_mpi_put(t, DDL_EV_MPI_FINALIZE, t0, t1, rc, -1, &a);
	errno = saved;
	return rc;
}

/*
 * The collectives' one shape: the call numbered (M, as ddl_mpi_begin) and
 * open (T0, OPEN) while it runs; after it, ddl_mpi_coll_done, then the
 * bytes, then ddl_mpi_put.
 */
static inline int ddl_mpi_coll_open(struct ddl_thread *t, struct ddl_mpi_call *m, unsigned kind,
                                    ddl_mpi_h comm, int root, uint64_t *t0)
{
	ddl_mpi_begin(m, comm, root, 1);
	*t0 = ddl_clock_now();
	return ddl_open_enter_coll(t, kind, *t0, m->a.comm, m->a.aux, 0);
}

DDL_EXPORT int MPI_Allreduce(const void *sb, void *rb, int count, ddl_mpi_h dt, ddl_mpi_h op,
                             ddl_mpi_h comm)
{
	__typeof__(ddl_mpi_real.MPI_Allreduce) real = DDL_MPI_REAL(MPI_Allreduce);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(sb, rb, count, dt, op, comm);
	struct ddl_mpi_call m;
	uint64_t t0;
	int open = ddl_mpi_coll_open(t, &m, DDL_EV_MPI_ALLREDUCE, comm, -1, &t0);
	int rc = real(sb, rb, count, dt, op, comm);
	uint64_t t1 = ddl_clock_now();
	ddl_open_leave(t, open);
	int saved = errno;
	ddl_mpi_end(t, &m, rc, 1);
	if (rc == DDL_MPI_SUCCESS)
		m.a.bytes = ddl_mpi_bytes(&m.a, count, dt);
	ddl_mpi_put(t, DDL_EV_MPI_ALLREDUCE, t0, t1, rc, -1, &m.a);
	errno = saved;
	return rc;
}

/* A nonblocking start: numbered with the collectives; its wait is open. */
DDL_EXPORT int MPI_Iallreduce(const void *sb, void *rb, int count, ddl_mpi_h dt, ddl_mpi_h op,
                              ddl_mpi_h comm, void *req)
{
	__typeof__(ddl_mpi_real.MPI_Iallreduce) real = DDL_MPI_REAL(MPI_Iallreduce);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(sb, rb, count, dt, op, comm, req);
	struct ddl_mpi_call m;
	ddl_mpi_begin(&m, comm, -1, 1);
	uint64_t t0 = ddl_clock_now();
	int rc = real(sb, rb, count, dt, op, comm, req);
	uint64_t t1 = ddl_clock_now();
	int saved = errno;
	ddl_mpi_end(t, &m, rc, 1);
	if (rc == DDL_MPI_SUCCESS) {
		m.a.bytes = ddl_mpi_bytes(&m.a, count, dt);
		if (req && ddl_mpi.hsize)
			ddl_mpi_req_put(t, ddl_mpi_handle_at(req, 0), DDL_EV_MPI_IALLREDUCE, &m.a);
	}
	ddl_mpi_put(t, DDL_EV_MPI_IALLREDUCE, t0, t1, rc, -1, &m.a);
	errno = saved;
	return rc;
}

DDL_EXPORT int MPI_Reduce(const void *sb, void *rb, int count, ddl_mpi_h dt, ddl_mpi_h op, int root,
                          ddl_mpi_h comm)
{
	__typeof__(ddl_mpi_real.MPI_Reduce) real = DDL_MPI_REAL(MPI_Reduce);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(sb, rb, count, dt, op, root, comm);
	struct ddl_mpi_call m;
	uint64_t t0;
	int open = ddl_mpi_coll_open(t, &m, DDL_EV_MPI_REDUCE, comm, root, &t0);
	int rc = real(sb, rb, count, dt, op, root, comm);
	uint64_t t1 = ddl_clock_now();
	ddl_open_leave(t, open);
	int saved = errno;
	ddl_mpi_end(t, &m, rc, 1);
	if (rc == DDL_MPI_SUCCESS)
		m.a.bytes = ddl_mpi_bytes(&m.a, count, dt);
	ddl_mpi_put(t, DDL_EV_MPI_REDUCE, t0, t1, rc, -1, &m.a);
	errno = saved;
	return rc;
}

DDL_EXPORT int MPI_Bcast(void *buf, int count, ddl_mpi_h dt, int root, ddl_mpi_h comm)
{
	__typeof__(ddl_mpi_real.MPI_Bcast) real = DDL_MPI_REAL(MPI_Bcast);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(buf, count, dt, root, comm);
	struct ddl_mpi_call m;
	uint64_t t0;
	int open = ddl_mpi_coll_open(t, &m, DDL_EV_MPI_BCAST, comm, root, &t0);
	int rc = real(buf, count, dt, root, comm);
	uint64_t t1 = ddl_clock_now();
	ddl_open_leave(t, open);
	int saved = errno;
	ddl_mpi_end(t, &m, rc, 1);
	if (rc == DDL_MPI_SUCCESS)
		m.a.bytes = ddl_mpi_bytes(&m.a, count, dt);
	ddl_mpi_put(t, DDL_EV_MPI_BCAST, t0, t1, rc, -1, &m.a);
	errno = saved;
	return rc;
}

/* All-gather: this rank's block, as the receive side describes it (the
 * send side is ignored with MPI_IN_PLACE; the two describe the same bytes). */
DDL_EXPORT int MPI_Allgather(const void *sb, int scount, ddl_mpi_h stype, void *rb, int rcount,
                             ddl_mpi_h rtype, ddl_mpi_h comm)
{
	__typeof__(ddl_mpi_real.MPI_Allgather) real = DDL_MPI_REAL(MPI_Allgather);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(sb, scount, stype, rb, rcount, rtype, comm);
	struct ddl_mpi_call m;
	uint64_t t0;
	int open = ddl_mpi_coll_open(t, &m, DDL_EV_MPI_ALLGATHER, comm, -1, &t0);
	int rc = real(sb, scount, stype, rb, rcount, rtype, comm);
	uint64_t t1 = ddl_clock_now();
	ddl_open_leave(t, open);
	int saved = errno;
	ddl_mpi_end(t, &m, rc, 1);
	if (rc == DDL_MPI_SUCCESS)
		m.a.bytes = ddl_mpi_bytes(&m.a, rcount, rtype);
	ddl_mpi_put(t, DDL_EV_MPI_ALLGATHER, t0, t1, rc, -1, &m.a);
	errno = saved;
	return rc;
}

DDL_EXPORT int MPI_Allgatherv(const void *sb, int scount, ddl_mpi_h stype, void *rb, const int *rcounts,
                              const int *displs, ddl_mpi_h rtype, ddl_mpi_h comm)
{
	__typeof__(ddl_mpi_real.MPI_Allgatherv) real = DDL_MPI_REAL(MPI_Allgatherv);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(sb, scount, stype, rb, rcounts, displs, rtype, comm);
	struct ddl_mpi_call m;
	uint64_t t0;
	int open = ddl_mpi_coll_open(t, &m, DDL_EV_MPI_ALLGATHERV, comm, -1, &t0);
	int rc = real(sb, scount, stype, rb, rcounts, displs, rtype, comm);
	uint64_t t1 = ddl_clock_now();
	ddl_open_leave(t, open);
	int saved = errno;
	ddl_mpi_end(t, &m, rc, 1);
	if (rc == DDL_MPI_SUCCESS && m.c && rcounts && m.c->rank >= 0 && m.c->rank < m.c->size)
		m.a.bytes = ddl_mpi_bytes(&m.a, rcounts[m.c->rank], rtype);
	ddl_mpi_put(t, DDL_EV_MPI_ALLGATHERV, t0, t1, rc, -1, &m.a);
	errno = saved;
	return rc;
}

/* Reduce-scatter: the whole buffer this rank puts in, every rank's block. */
DDL_EXPORT int MPI_Reduce_scatter(const void *sb, void *rb, const int *rcounts, ddl_mpi_h dt,
                                  ddl_mpi_h op, ddl_mpi_h comm)
{
	__typeof__(ddl_mpi_real.MPI_Reduce_scatter) real = DDL_MPI_REAL(MPI_Reduce_scatter);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(sb, rb, rcounts, dt, op, comm);
	struct ddl_mpi_call m;
	uint64_t t0;
	int open = ddl_mpi_coll_open(t, &m, DDL_EV_MPI_REDUCE_SCATTER, comm, -1, &t0);
	int rc = real(sb, rb, rcounts, dt, op, comm);
	uint64_t t1 = ddl_clock_now();
	ddl_open_leave(t, open);
	int saved = errno;
	ddl_mpi_end(t, &m, rc, 1);
	if (rc == DDL_MPI_SUCCESS)
		m.a.bytes = ddl_mpi_bytes(&m.a, ddl_mpi_sum(rcounts, ddl_mpi_size(m.c, comm)), dt);
	ddl_mpi_put(t, DDL_EV_MPI_REDUCE_SCATTER, t0, t1, rc, -1, &m.a);
	errno = saved;
	return rc;
}

DDL_EXPORT int MPI_Reduce_scatter_block(const void *sb, void *rb, int rcount, ddl_mpi_h dt, ddl_mpi_h op,
                                        ddl_mpi_h comm)
{
	__typeof__(ddl_mpi_real.MPI_Reduce_scatter_block) real = DDL_MPI_REAL(MPI_Reduce_scatter_block);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(sb, rb, rcount, dt, op, comm);
	struct ddl_mpi_call m;
	uint64_t t0;
	int open = ddl_mpi_coll_open(t, &m, DDL_EV_MPI_REDUCE_SCATTER_BLOCK, comm, -1, &t0);
	int rc = real(sb, rb, rcount, dt, op, comm);
	uint64_t t1 = ddl_clock_now();
	ddl_open_leave(t, open);
	int saved = errno;
	ddl_mpi_end(t, &m, rc, 1);
	if (rc == DDL_MPI_SUCCESS)
		m.a.bytes = ddl_mpi_bytes(&m.a, (int64_t)rcount * ddl_mpi_size(m.c, comm), dt);
	ddl_mpi_put(t, DDL_EV_MPI_REDUCE_SCATTER_BLOCK, t0, t1, rc, -1, &m.a);
	errno = saved;
	return rc;
}

/* All-to-all: the whole buffer this rank sends, as the receive side
 * describes it (the send side is ignored with MPI_IN_PLACE). */
DDL_EXPORT int MPI_Alltoall(const void *sb, int scount, ddl_mpi_h stype, void *rb, int rcount,
                            ddl_mpi_h rtype, ddl_mpi_h comm)
{
	__typeof__(ddl_mpi_real.MPI_Alltoall) real = DDL_MPI_REAL(MPI_Alltoall);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(sb, scount, stype, rb, rcount, rtype, comm);
	struct ddl_mpi_call m;
	uint64_t t0;
	int open = ddl_mpi_coll_open(t, &m, DDL_EV_MPI_ALLTOALL, comm, -1, &t0);
	int rc = real(sb, scount, stype, rb, rcount, rtype, comm);
	uint64_t t1 = ddl_clock_now();
	ddl_open_leave(t, open);
	int saved = errno;
	ddl_mpi_end(t, &m, rc, 1);
	if (rc == DDL_MPI_SUCCESS)
		m.a.bytes = ddl_mpi_bytes(&m.a, (int64_t)rcount * ddl_mpi_size(m.c, comm), rtype);
	ddl_mpi_put(t, DDL_EV_MPI_ALLTOALL, t0, t1, rc, -1, &m.a);
	errno = saved;
	return rc;
}

/* All-to-all-v: what this rank sends; with MPI_IN_PLACE what it receives
 * (it sends from the same buffer). An MPI not recognised: not known. */
DDL_EXPORT int MPI_Alltoallv(const void *sb, const int *scounts, const int *sdispls, ddl_mpi_h stype,
                             void *rb, const int *rcounts, const int *rdispls, ddl_mpi_h rtype,
                             ddl_mpi_h comm)
{
	__typeof__(ddl_mpi_real.MPI_Alltoallv) real = DDL_MPI_REAL(MPI_Alltoallv);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(sb, scounts, sdispls, stype, rb, rcounts, rdispls, rtype, comm);
	struct ddl_mpi_call m;
	uint64_t t0;
	int open = ddl_mpi_coll_open(t, &m, DDL_EV_MPI_ALLTOALLV, comm, -1, &t0);
	int rc = real(sb, scounts, sdispls, stype, rb, rcounts, rdispls, rtype, comm);
	uint64_t t1 = ddl_clock_now();
	ddl_open_leave(t, open);
	int saved = errno;
	ddl_mpi_end(t, &m, rc, 1);
	if (rc == DDL_MPI_SUCCESS && ddl_mpi.impl != DDL_MPI_UNKNOWN) {
		int n = ddl_mpi_size(m.c, comm);
		m.a.bytes = (uintptr_t)sb == ddl_mpi.in_place
		                ? ddl_mpi_bytes(&m.a, ddl_mpi_sum(rcounts, n), rtype)
		                : ddl_mpi_bytes(&m.a, ddl_mpi_sum(scounts, n), stype);
	}
	ddl_mpi_put(t, DDL_EV_MPI_ALLTOALLV, t0, t1, rc, -1, &m.a);
	errno = saved;
	return rc;
}

DDL_EXPORT int MPI_Barrier(ddl_mpi_h comm)
{
	__typeof__(ddl_mpi_real.MPI_Barrier) real = DDL_MPI_REAL(MPI_Barrier);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(comm);
	struct ddl_mpi_call m;
	uint64_t t0;
	int open = ddl_mpi_coll_open(t, &m, DDL_EV_MPI_BARRIER, comm, -1, &t0);
	int rc = real(comm);
	uint64_t t1 = ddl_clock_now();
	ddl_open_leave(t, open);
	int saved = errno;
	ddl_mpi_end(t, &m, rc, 1);
	ddl_mpi_put(t, DDL_EV_MPI_BARRIER, t0, t1, rc, -1, &m.a);
	errno = saved;
	return rc;
}

/* Point to point: open while a blocking one runs, naming its communicator
 * (its number counts in another sequence than the collectives'). */
DDL_EXPORT int MPI_Send(const void *buf, int count, ddl_mpi_h dt, int dest, int tag, ddl_mpi_h comm)
{
	__typeof__(ddl_mpi_real.MPI_Send) real = DDL_MPI_REAL(MPI_Send);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(buf, count, dt, dest, tag, comm);
	struct ddl_mpi_call m;
	ddl_mpi_begin(&m, comm, -1, 0);
	ddl_mpi_peer(&m, dest, 0);
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter_coll(t, DDL_EV_MPI_SEND, t0, m.a.comm, 0, 0);
	int rc = real(buf, count, dt, dest, tag, comm);
	uint64_t t1 = ddl_clock_now();
	ddl_open_leave(t, open);
	int saved = errno;
	ddl_mpi_end(t, &m, rc, 0);
	ddl_mpi_peer(&m, dest, 0); /* numbered now when its communicator was first met */
	if (rc == DDL_MPI_SUCCESS && m.a.peer != -2)
		m.a.bytes = ddl_mpi_bytes(&m.a, count, dt);
	ddl_mpi_put(t, DDL_EV_MPI_SEND, t0, t1, rc, -1, &m.a);
	errno = saved;
	return rc;
}

/*
 * A receive: what arrived, from whom, through the status (the program's,
 * or ours when it gave MPI_STATUS_IGNORE: MPI fills one in either way).
 * From MPI_ANY_SOURCE it is numbered once the status names the sender.
 */
DDL_EXPORT int MPI_Recv(void *buf, int count, ddl_mpi_h dt, int src, int tag, ddl_mpi_h comm,
                        void *status)
{
	__typeof__(ddl_mpi_real.MPI_Recv) real = DDL_MPI_REAL(MPI_Recv);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(buf, count, dt, src, tag, comm, status);
	_Alignas(16) char own[64]; /* larger than any MPI_Status */
	void *st = status;
	if (ddl_mpi.impl != DDL_MPI_UNKNOWN && (uintptr_t)status == ddl_mpi.status_ignore) {
		memset(own, 0, sizeof own);
		st = own;
	}
	struct ddl_mpi_call m;
	ddl_mpi_begin(&m, comm, -1, 0);
	int any = ddl_mpi.impl != DDL_MPI_UNKNOWN && src == ddl_mpi.any_source;
	if (!any)
		ddl_mpi_peer(&m, src, 1);
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter_coll(t, DDL_EV_MPI_RECV, t0, m.a.comm, 0, 0);
	int rc = real(buf, count, dt, src, tag, comm, st);
	uint64_t t1 = ddl_clock_now();
	ddl_open_leave(t, open);
	int saved = errno;
	int from = src;
	if (rc == DDL_MPI_SUCCESS && ddl_mpi.impl != DDL_MPI_UNKNOWN)
		memcpy(&from, (const char *)st + ddl_mpi.src_off, sizeof from);
	ddl_mpi_end(t, &m, rc, 0);
	if (rc == DDL_MPI_SUCCESS || !any)
		ddl_mpi_peer(&m, from, 1);
	if (rc == DDL_MPI_SUCCESS && m.a.peer != -2) {
		__typeof__(ddl_mpi_real.PMPI_Get_count) getc = DDL_MPI_OWN(PMPI_Get_count);
		int got = DDL_MPI_UNDEFINED;
		if (ddl_mpi.impl == DDL_MPI_UNKNOWN || !getc || getc(st, dt, &got) != DDL_MPI_SUCCESS ||
		    got == DDL_MPI_UNDEFINED)
			got = count; /* what it could take */
		m.a.bytes = ddl_mpi_bytes(&m.a, got, dt);
	}
	ddl_mpi_put(t, DDL_EV_MPI_RECV, t0, t1, rc, -1, &m.a);
	errno = saved;
	return rc;
}

DDL_EXPORT int MPI_Isend(const void *buf, int count, ddl_mpi_h dt, int dest, int tag, ddl_mpi_h comm,
                         void *req)
{
	__typeof__(ddl_mpi_real.MPI_Isend) real = DDL_MPI_REAL(MPI_Isend);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(buf, count, dt, dest, tag, comm, req);
	struct ddl_mpi_call m;
	ddl_mpi_begin(&m, comm, -1, 0);
	ddl_mpi_peer(&m, dest, 0);
	uint64_t t0 = ddl_clock_now();
	int rc = real(buf, count, dt, dest, tag, comm, req);
	uint64_t t1 = ddl_clock_now();
	int saved = errno;
	ddl_mpi_end(t, &m, rc, 0);
	ddl_mpi_peer(&m, dest, 0);
	if (rc == DDL_MPI_SUCCESS) {
		if (m.a.peer != -2)
			m.a.bytes = ddl_mpi_bytes(&m.a, count, dt);
		if (req && ddl_mpi.hsize)
			ddl_mpi_req_put(t, ddl_mpi_handle_at(req, 0), DDL_EV_MPI_ISEND, &m.a);
	}
	ddl_mpi_put(t, DDL_EV_MPI_ISEND, t0, t1, rc, -1, &m.a);
	errno = saved;
	return rc;
}

/* A nonblocking receive: what it can take (what arrives is known only to
 * its wait's status, which is the program's). */
DDL_EXPORT int MPI_Irecv(void *buf, int count, ddl_mpi_h dt, int src, int tag, ddl_mpi_h comm,
                         void *req)
{
	__typeof__(ddl_mpi_real.MPI_Irecv) real = DDL_MPI_REAL(MPI_Irecv);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(buf, count, dt, src, tag, comm, req);
	struct ddl_mpi_call m;
	ddl_mpi_begin(&m, comm, -1, 0);
	ddl_mpi_peer(&m, src, 1);
	uint64_t t0 = ddl_clock_now();
	int rc = real(buf, count, dt, src, tag, comm, req);
	uint64_t t1 = ddl_clock_now();
	int saved = errno;
	ddl_mpi_end(t, &m, rc, 0);
	ddl_mpi_peer(&m, src, 1);
	if (rc == DDL_MPI_SUCCESS) {
		if (m.a.peer != -2)
			m.a.bytes = ddl_mpi_bytes(&m.a, count, dt);
		if (req && ddl_mpi.hsize)
			ddl_mpi_req_put(t, ddl_mpi_handle_at(req, 0), DDL_EV_MPI_IRECV, &m.a);
	}
	ddl_mpi_put(t, DDL_EV_MPI_IRECV, t0, t1, rc, -1, &m.a);
	errno = saved;
	return rc;
}

DDL_EXPORT int MPI_Wait(void *req, void *status)
{
	__typeof__(ddl_mpi_real.MPI_Wait) real = DDL_MPI_REAL(MPI_Wait);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(req, status);
	struct ddl_mpi_wait w;
	ddl_mpi_wait_begin(t, &w, req, 1);
	uint64_t t0 = ddl_clock_now();
	int open = ddl_mpi_wait_open(t, &w, DDL_EV_MPI_WAIT, t0);
	int rc = real(req, status);
	uint64_t t1 = ddl_clock_now();
	ddl_open_leave(t, open);
	int saved = errno;
	ddl_mpi_wait_end(t, &w, DDL_EV_MPI_WAIT, t0, t1, rc, 1, NULL, rc == DDL_MPI_SUCCESS);
	errno = saved;
	return rc;
}

DDL_EXPORT int MPI_Waitall(int count, void *reqs, void *statuses)
{
	__typeof__(ddl_mpi_real.MPI_Waitall) real = DDL_MPI_REAL(MPI_Waitall);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(count, reqs, statuses);
	struct ddl_mpi_wait w;
	ddl_mpi_wait_begin(t, &w, reqs, count);
	uint64_t t0 = ddl_clock_now();
	int open = ddl_mpi_wait_open(t, &w, DDL_EV_MPI_WAITALL, t0);
	int rc = real(count, reqs, statuses);
	uint64_t t1 = ddl_clock_now();
	ddl_open_leave(t, open);
	int saved = errno;
	/* with an error, which ones completed is in the statuses: none taken */
	ddl_mpi_wait_end(t, &w, DDL_EV_MPI_WAITALL, t0, t1, rc, count, NULL,
	                 rc == DDL_MPI_SUCCESS ? count : 0);
	errno = saved;
	return rc;
}

DDL_EXPORT int MPI_Waitany(int count, void *reqs, int *index, void *status)
{
	__typeof__(ddl_mpi_real.MPI_Waitany) real = DDL_MPI_REAL(MPI_Waitany);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(count, reqs, index, status);
	struct ddl_mpi_wait w;
	ddl_mpi_wait_begin(t, &w, reqs, count);
	uint64_t t0 = ddl_clock_now();
	int open = ddl_mpi_wait_open(t, &w, DDL_EV_MPI_WAITANY, t0);
	int rc = real(count, reqs, index, status);
	uint64_t t1 = ddl_clock_now();
	ddl_open_leave(t, open);
	int saved = errno;
	int done = rc == DDL_MPI_SUCCESS && index && *index != DDL_MPI_UNDEFINED;
	ddl_mpi_wait_end(t, &w, DDL_EV_MPI_WAITANY, t0, t1, rc, count, done ? index : NULL, done);
	errno = saved;
	return rc;
}

DDL_EXPORT int MPI_Waitsome(int count, void *reqs, int *outcount, int *indices, void *statuses)
{
	__typeof__(ddl_mpi_real.MPI_Waitsome) real = DDL_MPI_REAL(MPI_Waitsome);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(count, reqs, outcount, indices, statuses);
	struct ddl_mpi_wait w;
	ddl_mpi_wait_begin(t, &w, reqs, count);
	uint64_t t0 = ddl_clock_now();
	int open = ddl_mpi_wait_open(t, &w, DDL_EV_MPI_WAITSOME, t0);
	int rc = real(count, reqs, outcount, indices, statuses);
	uint64_t t1 = ddl_clock_now();
	ddl_open_leave(t, open);
	int saved = errno;
	int done = rc == DDL_MPI_SUCCESS && outcount && indices && *outcount != DDL_MPI_UNDEFINED &&
	           *outcount > 0 ? *outcount : 0;
	ddl_mpi_wait_end(t, &w, DDL_EV_MPI_WAITSOME, t0, t1, rc, count, indices, done);
	errno = saved;
	return rc;
}

/* A test is recorded when it completes (a wait that did not have to);
 * one that does not is a program polling, and passes unrecorded. It does
 * not block: no open call. */
DDL_EXPORT int MPI_Test(void *req, int *flag, void *status)
{
	__typeof__(ddl_mpi_real.MPI_Test) real = DDL_MPI_REAL(MPI_Test);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(req, flag, status);
	struct ddl_mpi_wait w;
	ddl_mpi_wait_begin(t, &w, req, 1);
	uint64_t t0 = ddl_clock_now();
	int rc = real(req, flag, status);
	uint64_t t1 = ddl_clock_now();
	int saved = errno;
	if (rc != DDL_MPI_SUCCESS || (flag && *flag))
		ddl_mpi_wait_end(t, &w, DDL_EV_MPI_TEST, t0, t1, rc, 1, NULL, rc == DDL_MPI_SUCCESS);
	errno = saved;
	return rc;
}

DDL_EXPORT int MPI_Testall(int count, void *reqs, int *flag, void *statuses)
{
	__typeof__(ddl_mpi_real.MPI_Testall) real = DDL_MPI_REAL(MPI_Testall);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(count, reqs, flag, statuses);
	struct ddl_mpi_wait w;
	ddl_mpi_wait_begin(t, &w, reqs, count);
	uint64_t t0 = ddl_clock_now();
	int rc = real(count, reqs, flag, statuses);
	uint64_t t1 = ddl_clock_now();
	int saved = errno;
	if (rc != DDL_MPI_SUCCESS || (flag && *flag))
		ddl_mpi_wait_end(t, &w, DDL_EV_MPI_TESTALL, t0, t1, rc, count, NULL,
		                 rc == DDL_MPI_SUCCESS ? count : 0);
	errno = saved;
	return rc;
}

/*
 * After a call of KIND on M's communicator that made *NEWCOMM (MADE,
 * with COLOR), opened with OPEN, from T0, and returned RC: the call is one
 * of the communicator's collectives; the one it made (none:
 * MPI_COMM_NULL) is recorded; returns RC.
 */
static int ddl_mpi_made_comm(struct ddl_thread *t, struct ddl_mpi_call *m, unsigned kind, uint64_t t0,
                             int open, int rc, const void *newcomm, int made, int color)
{
	uint64_t t1 = ddl_clock_now();
	ddl_open_leave(t, open);
	int saved = errno;
	ddl_mpi_end(t, m, rc, 1);
	if (rc == DDL_MPI_SUCCESS && newcomm && ddl_mpi.hsize) {
		uintptr_t h = ddl_mpi_handle_at(newcomm, 0);
		if (h && h != ddl_mpi.comm_null) {
			t->busy = 1;
			struct ddl_mpi_comm *n = ddl_mpi_comm_add(h, made, m->c ? m->c->key : 0, color);
			t->busy = 0;
			if (n) {
				m->a.name = n->id;
				m->a.peer = n->rank;
			}
		}
	}
	ddl_mpi_put(t, kind, t0, t1, rc, -1, &m->a);
	errno = saved;
	return rc;
}

DDL_EXPORT int MPI_Comm_split(ddl_mpi_h comm, int color, int key, void *newcomm)
{
	__typeof__(ddl_mpi_real.MPI_Comm_split) real = DDL_MPI_REAL(MPI_Comm_split);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(comm, color, key, newcomm);
	struct ddl_mpi_call m;
	uint64_t t0;
	int open = ddl_mpi_coll_open(t, &m, DDL_EV_MPI_COMM_SPLIT, comm, -1, &t0);
	int rc = real(comm, color, key, newcomm);
	return ddl_mpi_made_comm(t, &m, DDL_EV_MPI_COMM_SPLIT, t0, open, rc, newcomm, DDL_MPI_MADE_SPLIT,
	                         color);
}

DDL_EXPORT int MPI_Comm_split_type(ddl_mpi_h comm, int type, int key, ddl_mpi_h info, void *newcomm)
{
	__typeof__(ddl_mpi_real.MPI_Comm_split_type) real = DDL_MPI_REAL(MPI_Comm_split_type);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(comm, type, key, info, newcomm);
	struct ddl_mpi_call m;
	uint64_t t0;
	int open = ddl_mpi_coll_open(t, &m, DDL_EV_MPI_COMM_SPLIT_TYPE, comm, -1, &t0);
	int rc = real(comm, type, key, info, newcomm);
	return ddl_mpi_made_comm(t, &m, DDL_EV_MPI_COMM_SPLIT_TYPE, t0, open, rc, newcomm,
	                         DDL_MPI_MADE_SPLIT_TYPE, type);
}

DDL_EXPORT int MPI_Comm_dup(ddl_mpi_h comm, void *newcomm)
{
	__typeof__(ddl_mpi_real.MPI_Comm_dup) real = DDL_MPI_REAL(MPI_Comm_dup);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(comm, newcomm);
	struct ddl_mpi_call m;
	uint64_t t0;
	int open = ddl_mpi_coll_open(t, &m, DDL_EV_MPI_COMM_DUP, comm, -1, &t0);
	int rc = real(comm, newcomm);
	return ddl_mpi_made_comm(t, &m, DDL_EV_MPI_COMM_DUP, t0, open, rc, newcomm, DDL_MPI_MADE_DUP, -1);
}

DDL_EXPORT int MPI_Comm_create(ddl_mpi_h comm, ddl_mpi_h group, void *newcomm)
{
	__typeof__(ddl_mpi_real.MPI_Comm_create) real = DDL_MPI_REAL(MPI_Comm_create);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(comm, group, newcomm);
	struct ddl_mpi_call m;
	uint64_t t0;
	int open = ddl_mpi_coll_open(t, &m, DDL_EV_MPI_COMM_CREATE, comm, -1, &t0);
	int rc = real(comm, group, newcomm);
	return ddl_mpi_made_comm(t, &m, DDL_EV_MPI_COMM_CREATE, t0, open, rc, newcomm, DDL_MPI_MADE_CREATE,
	                         -1);
}

/* Freeing: the last of the communicator's collective calls; its handle
 * may name another one next. */
DDL_EXPORT int MPI_Comm_free(void *comm)
{
	__typeof__(ddl_mpi_real.MPI_Comm_free) real = DDL_MPI_REAL(MPI_Comm_free);
	struct ddl_thread *t = ddl_mpi_enter();
	if (!t)
		return real(comm);
	struct ddl_mpi_call m;
	uint64_t t0;
	ddl_mpi_h h = comm && ddl_mpi.hsize ? (ddl_mpi_h)ddl_mpi_handle_at(comm, 0) : 0;
	int open = ddl_mpi_coll_open(t, &m, DDL_EV_MPI_COMM_FREE, h, -1, &t0);
	int rc = real(comm);
	uint64_t t1 = ddl_clock_now();
	ddl_open_leave(t, open);
	int saved = errno;
	if (m.c && rc == DDL_MPI_SUCCESS)
		atomic_store_explicit(&m.c->dead, 1, memory_order_release);
	ddl_mpi_put(t, DDL_EV_MPI_COMM_FREE, t0, t1, rc, -1, &m.a);
	errno = saved;
	return rc;
}
