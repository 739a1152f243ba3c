/*
 * gloo's collectives, the ones PyTorch's gloo backend runs for every
 * torch.distributed call and every gradient bucket DistributedDataParallel
 * reduces (on the process group's worker threads, out of reach of any
 * Python wrapper). libtorch calls gloo::allreduce(const AllreduceOptions&)
 * and its siblings through the PLT of libgloo.so, so they are interposed
 * like libc's functions, by their C++ (mangled) names. Each records one
 * event of class HCOLL spanning the whole operation on the thread that
 * ran it, with an args record: this rank's bytes, bytes per element, the
 * communicator and the root.
 *
 * The sizes come from the options object gloo was given, read at the
 * offsets its layout has under the x86-64 C++ ABI (gloo/allreduce.h and
 * siblings, unchanged since 2018): a shared_ptr<Context> first (gloo's
 * Context holds rank and size after its vtable), then the unbound buffers
 * (each holding ptr and size after its vtable), element counts and sizes.
 * Every read goes through process_vm_readv, so a gloo of another layout can
 * only make a read fail, never fault; and every size is checked against
 * another (elements x element size against the buffer's size), so such a
 * gloo records the call without bytes rather than with wrong ones, and
 * says so once (meta gloo_layout=unknown).
 *
 * Communicators: each gloo context is recorded when connectFullMesh builds
 * it, with a key its peers compute alike: from the process group the Python
 * hook says is being created on this thread (ddlprof_py_group), else from
 * the context's size and how many contexts of that size came before.
 * C++ exceptions (a peer gone, a timeout) pass through these frames: the
 * file is built with unwind tables (-fexceptions), and nothing of ours is
 * held across the real call.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ddl.h"

/* X(kind suffix, symbol): the interposed functions. */
#define DDL_GLOO_OPS(X) \
	X(ALLREDUCE, "_ZN4gloo9allreduceERKNS_16AllreduceOptionsE") \
	X(BROADCAST, "_ZN4gloo9broadcastERNS_16BroadcastOptionsE") \
	X(REDUCE, "_ZN4gloo6reduceERNS_13ReduceOptionsE") \
	X(ALLGATHER, "_ZN4gloo9allgatherERNS_16AllgatherOptionsE") \
	X(ALLGATHERV, "_ZN4gloo10allgathervERNS_17AllgathervOptionsE") \
	X(GATHER, "_ZN4gloo6gatherERNS_13GatherOptionsE") \
	X(SCATTER, "_ZN4gloo7scatterERNS_14ScatterOptionsE") \
	X(ALLTOALL, "_ZN4gloo8alltoallERNS_15AlltoallOptionsE") \
	X(ALLTOALLV, "_ZN4gloo9alltoallvERNS_16AlltoallvOptionsE") \
	X(BARRIER, "_ZN4gloo7barrierERNS_14BarrierOptionsE")

enum {
#define DDL_X_OP(n, s) DDL_GLOO_##n,
	DDL_GLOO_OPS(DDL_X_OP)
#undef DDL_X_OP
	DDL_GLOO_MESH, /* gloo::rendezvous::Context::connectFullMesh */
	DDL_GLOO_NFN
};

static const char *const ddl_gloo_sym[DDL_GLOO_NFN] = {
#define DDL_X_SYM(n, s) s,
	DDL_GLOO_OPS(DDL_X_SYM)
#undef DDL_X_SYM
	"_ZN4gloo10rendezvous7Context15connectFullMeshERNS0_5StoreERSt10shared_ptrINS_9transport6DeviceEE",
};

/*
 * The real functions, per calling object: the definition the caller would
 * have bound to without us (its own, or its dependencies': libtorch's
 * libgloo), so that two copies of gloo in one process (another framework
 * bundling its own) each get their own. Keyed by the call's return
 * address (a handful of call sites), with the object's base to share one
 * lookup between sites of one object. Entries are added under a lock and
 * read without one; a full table still answers, by lookup.
 */
#define DDL_GLOO_SITES 32
static struct {
	const void *site[DDL_GLOO_SITES];
	void *base[DDL_GLOO_SITES];
	void *fn[DDL_GLOO_SITES];
	_Atomic unsigned n;
} ddl_gloo_real[DDL_GLOO_NFN];
static pthread_mutex_t ddl_gloo_real_lock = PTHREAD_MUTEX_INITIALIZER;

/* What the object holding CALLER has for SYM, or NULL (then the process's first). */
static void *ddl_gloo_lookup(const char *sym, const void *caller, void **base)
{
	Dl_info di, self;
	*base = NULL;
	if (!dladdr(caller, &di) || !dladdr((void *)ddl_gloo_lookup, &self))
		return NULL;
	*base = di.dli_fbase;
	void *h = di.dli_fname && di.dli_fname[0] ? dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD) : NULL;
	void *f = h ? dlsym(h, sym) : NULL;
	if (h)
		dlclose(h);
	Dl_info fi;
	if (f && dladdr(f, &fi) && fi.dli_fbase == self.dli_fbase)
		f = NULL; /* ours, found through the global scope */
	return f;
}

/*
 * The real function of OP for a call returning to CALLER; found once per
 * calling object. It cannot be missing (the caller bound to our export
 * because a gloo was loaded that has it); if it were, no call could go
 * on, and the process stops with a line saying why.
 */
static void *ddl_gloo_next(int op, const void *caller)
{
	unsigned n = atomic_load_explicit(&ddl_gloo_real[op].n, memory_order_acquire);
	for (unsigned i = 0; i < n; i++)
		if (ddl_gloo_real[op].site[i] == caller)
			return ddl_gloo_real[op].fn[i];
	if (ddl_unlikely(!ddl_g.initialised))
		ddl_init();
	void *base;
	void *f = ddl_gloo_lookup(ddl_gloo_sym[op], caller, &base);
	for (unsigned i = 0; i < n && !f && base; i++)
		if (ddl_gloo_real[op].base[i] == base)
			f = ddl_gloo_real[op].fn[i];
	if (!f)
		f = ddl_real_find(ddl_gloo_sym[op]);
	if (!f) {
		ddl_warn("cannot find gloo's %s past libddlprof; the program cannot go on",
		         ddl_gloo_sym[op]);
		ddl_real_resolve();
		ddl_real._exit(127);
	}
	pthread_mutex_lock(&ddl_gloo_real_lock);
	n = atomic_load_explicit(&ddl_gloo_real[op].n, memory_order_relaxed);
	if (n < DDL_GLOO_SITES) {
		ddl_gloo_real[op].site[n] = caller;
		ddl_gloo_real[op].base[n] = base;
		ddl_gloo_real[op].fn[n] = f;
		atomic_store_explicit(&ddl_gloo_real[op].n, n + 1, memory_order_release);
	}
	pthread_mutex_unlock(&ddl_gloo_real_lock);
	return f;
}

/* ---- safe reads of gloo's objects ---- */

static _Atomic int ddl_gloo_noread; /* process_vm_readv refused here: no sizes */

/* N bytes at ADDR into OUT without faulting; 0, or -1. Keeps errno. */
static int ddl_peek(uintptr_t addr, void *out, size_t n)
{
	if (!addr || atomic_load_explicit(&ddl_gloo_noread, memory_order_relaxed))
		return -1;
	int saved = errno;
	struct iovec local = {out, n}, remote = {(void *)addr, n};
	ssize_t r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	if (r < 0 && errno != EFAULT && errno != ESRCH)
		atomic_store(&ddl_gloo_noread, 1); /* seccomp, say: stop trying */
	errno = saved;
	return r == (ssize_t)n ? 0 : -1;
}

/* An UnboundBuffer's size (after its vtable and ptr), or -1. */
static int64_t ddl_ub_size(uintptr_t ub)
{
	uint64_t v[3];
	if (ddl_peek(ub, v, sizeof v) < 0 || !v[0] || v[2] > (1ull << 46))
		return -1;
	return (int64_t)v[2];
}

/* The first buffer of a std::vector<unique_ptr<UnboundBuffer>> at V. */
static int64_t ddl_ubv_size(const uint64_t *v)
{
	uint64_t first;
	if (!v[0] || v[1] <= v[0] || ddl_peek(v[0], &first, sizeof first) < 0)
		return -1;
	return ddl_ub_size(first);
}

static int ddl_esz_ok(uint64_t e)
{
	return e == 1 || e == 2 || e == 4 || e == 8 || e == 16;
}

/* gloo::Context's rank and size (after its vtable); 0, or -1. */
static int ddl_ctx_read(uintptr_t ctx, int *rank, int *size)
{
	int32_t v[4];
	if (ddl_peek(ctx, v, sizeof v) < 0 || v[3] < 1 || v[3] > (1 << 20) || v[2] < 0 ||
	    v[2] >= v[3])
		return -1;
	*rank = v[2];
	*size = v[3];
	return 0;
}

/* ---- communicators: gloo contexts ---- */

#define DDL_GLOO_CTX_MAX 1024
static pthread_mutex_t ddl_gloo_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uintptr_t ctx[DDL_GLOO_CTX_MAX];
	uint32_t id[DDL_GLOO_CTX_MAX];
	unsigned n;
	unsigned by_size[64]; /* contexts made so far of size 1..64 (more: the last) */
} ddl_gctx;
static _Atomic int ddl_gloo_layout_said;

void ddl_gloo_after_fork_child(void)
{
	pthread_mutex_init(&ddl_gloo_lock, NULL);
	pthread_mutex_init(&ddl_gloo_real_lock, NULL);
}


/*
 * The communicator id of context CTX, recorded on first sight, or anew
 * with FRESH (a context being made: its address may be a freed one's);
 * KEY 0: a key from its size and order. Newest first: addresses are
 * reused. Called with the thread marked busy (the string table's lock).
 */
static uint32_t ddl_gloo_comm(uintptr_t ctx, uint64_t key, int fresh)
{
	int rank, size;
	if (!ctx || ddl_ctx_read(ctx, &rank, &size) < 0)
		return 0;
	uint32_t id = 0;
	pthread_mutex_lock(&ddl_gloo_lock);
	for (unsigned i = ddl_gctx.n; i >= 1 && !id && !fresh; i--)
		if (ddl_gctx.ctx[i - 1] == ctx)
			id = ddl_gctx.id[i - 1];
	unsigned seq = 0;
	if (!id) {
		unsigned s = size <= 64 ? (unsigned)size - 1 : 63;
		seq = ++ddl_gctx.by_size[s];
		id = ddl_comm_id_new();
		unsigned slot = ddl_gctx.n < DDL_GLOO_CTX_MAX ? ddl_gctx.n++ : DDL_GLOO_CTX_MAX - 1;
		ddl_gctx.ctx[slot] = ctx;
		ddl_gctx.id[slot] = id;
	} else {
		pthread_mutex_unlock(&ddl_gloo_lock);
		return id;
	}
	pthread_mutex_unlock(&ddl_gloo_lock);
	if (!key) {
		key = ddl_fnv(DDL_FNV0, "gloo", 4);
		key = ddl_fnv(ddl_fnv(key, &size, sizeof size), &seq, sizeof seq);
	}
	char text[256];
	int n = snprintf(text, sizeof text,
	                 "key=%016llx rank=%d nranks=%d dev=-1 host=%s how=gloo parent=%016llx color=-1",
	                 (unsigned long long)key, rank, size, ddl_g.host, 0ull);
	if (n > 0)
		ddl_strings_add(DDL_STR_COMM, id, (uint32_t)-1, text,
		                n < (int)sizeof text ? (size_t)n : sizeof text - 1);
	return id;
}

/*
 * What the call of OP with options at OPTS moves, into A; 0, or -1 when the
 * options do not look like the layout we know (A then holds the
 * communicator only, or nothing).
 */
static int ddl_gloo_describe(int op, uintptr_t opts, struct ddl_args *a)
{
	uint64_t o[17]; /* the options' first 136 bytes, as words */
	size_t need = op == DDL_GLOO_ALLREDUCE ? 96 : op == DDL_GLOO_ALLTOALLV ? 136
	              : op == DDL_GLOO_SCATTER || op == DDL_GLOO_ALLGATHERV ? 64
	              : op == DDL_GLOO_BARRIER ? 8 : 56;
	if (ddl_peek(opts, o, need) < 0)
		return -1;
	a->comm = ddl_gloo_comm(o[0], 0, 0);
	int rank, size;
	if (!a->comm || ddl_ctx_read(o[0], &rank, &size) < 0)
		return -1;
	int64_t b = -1;
	uint64_t esz = 0;
	int root = -1;
	switch (op) {
	case DDL_GLOO_ALLREDUCE: { /* context, timeout, algorithm, in, out, elements, elementSize */
		uint64_t elems = o[10];
		esz = o[11];
		int64_t ub = ddl_ubv_size(&o[7]);
		if (ub < 0)
			ub = ddl_ubv_size(&o[4]);
		if (ddl_esz_ok(esz) && elems < (1ull << 42) && ub == (int64_t)(elems * esz))
			b = ub;
		break;
	}
	case DDL_GLOO_BROADCAST: /* context, in, out, elements, elementSize, root */
	case DDL_GLOO_REDUCE: {
		esz = o[5];
		root = (int)(int32_t)o[6];
		int64_t ub = ddl_ub_size(o[3]);
		if (ub < 0)
			ub = ddl_ub_size(o[2]);
		if (ddl_esz_ok(esz) && o[4] < (1ull << 42) && ub == (int64_t)(o[4] * esz) && root >= 0 &&
		    root < size)
			b = ub;
		break;
	}
	case DDL_GLOO_ALLGATHER: { /* context, in, out, elementSize: this rank's part of out */
		esz = o[4];
		int64_t out = ddl_ub_size(o[3]), in = o[2] ? ddl_ub_size(o[2]) : -2;
		if (ddl_esz_ok(esz) && out >= 0 && out % (int64_t)(esz * (uint64_t)size) == 0 &&
		    (in == -2 || in * size == out))
			b = out / size;
		break;
	}
	case DDL_GLOO_ALLGATHERV: /* context, in, out, elements (vector), elementSize */
		esz = o[7];
		if (ddl_esz_ok(esz))
			b = ddl_ub_size(o[2]);
		break;
	case DDL_GLOO_GATHER: /* context, in, out, elementSize, root */
		esz = o[4];
		root = (int)(int32_t)o[5];
		if (ddl_esz_ok(esz) && root >= 0 && root < size)
			b = ddl_ub_size(o[2]);
		break;
	case DDL_GLOO_SCATTER: /* context, in (vector), out, elementSize, root */
		esz = o[6];
		root = (int)(int32_t)o[7];
		if (ddl_esz_ok(esz) && root >= 0 && root < size)
			b = ddl_ub_size(o[5]);
		break;
	case DDL_GLOO_ALLTOALL: /* context, in, out, elementSize */
		esz = o[4];
		b = ddl_ub_size(o[2]);
		if (!ddl_esz_ok(esz) || b != ddl_ub_size(o[3]))
			b = -1;
		break;
	case DDL_GLOO_ALLTOALLV: /* context, in, out, four offset/length vectors, elementSize */
		esz = o[16];
		b = ddl_esz_ok(esz) ? ddl_ub_size(o[2]) : -1;
		break;
	case DDL_GLOO_BARRIER:
		b = 0;
		break;
	}
	a->peer = root;
	if (b < 0)
		return -1;
	a->bytes = (uint64_t)b;
	a->dtype = (uint8_t)esz;
	return 0;
}

struct ddl_gloo_open {
	struct ddl_thread *t;
	int mine;
};

static void ddl_gloo_left(struct ddl_gloo_open *o)
{
	ddl_open_leave(o->t, o->mine);
}

/* The wrappers' one body: OP's real function (CALLER's) run on OPTS, timed and recorded. */
static void ddl_gloo_call(int op, unsigned kind, void *opts, const void *caller)
{
	void (*real)(void *) = (void (*)(void *))ddl_gloo_next(op, caller);
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_GLOO);
	if (!t) {
		real(opts);
		return;
	}
	struct ddl_args a;
	memset(&a, 0, sizeof a);
	a.kind = DDL_EV_ARGS;
	a.peer = -1;
	t->busy = 1; /* a first sight writes the communicator's string */
	int ok = ddl_gloo_describe(op, (uintptr_t)opts, &a);
	t->busy = 0;
	if (ok < 0 && !atomic_exchange(&ddl_gloo_layout_said, 1)) {
		t->busy = 1;
		ddl_meta("gloo_layout", "unknown");
		t->busy = 0;
	}
	a.aux = ddl_comm_seq_next(a.comm);
	uint64_t t0 = ddl_clock_now();
	/* open while it runs; closed also when it throws (the cleanup runs as
	 * the exception unwinds this frame) */
	struct ddl_gloo_open open __attribute__((cleanup(ddl_gloo_left))) = {
		t, ddl_open_enter_coll(t, kind, t0, a.comm, a.aux, a.bytes)};
	real(opts); /* may throw: then nothing is recorded */
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put_args_call(t, kind, 0, t0, t1, 0, -1, 0, &a);
}

/* gloo::OP(OpOptions&): one wrapper each, by its mangled name; each names
 * where it was called from (taken in the export itself). */
DDL_EXPORT void ddl_gloo_allreduce(void *opts) __asm__("_ZN4gloo9allreduceERKNS_16AllreduceOptionsE");
void ddl_gloo_allreduce(void *opts)
{
	ddl_gloo_call(DDL_GLOO_ALLREDUCE, DDL_EV_GLOO_ALLREDUCE, opts,
	              __builtin_extract_return_addr(__builtin_return_address(0)));
}

DDL_EXPORT void ddl_gloo_broadcast(void *opts) __asm__("_ZN4gloo9broadcastERNS_16BroadcastOptionsE");
void ddl_gloo_broadcast(void *opts)
{
	ddl_gloo_call(DDL_GLOO_BROADCAST, DDL_EV_GLOO_BROADCAST, opts,
	              __builtin_extract_return_addr(__builtin_return_address(0)));
}

DDL_EXPORT void ddl_gloo_reduce(void *opts) __asm__("_ZN4gloo6reduceERNS_13ReduceOptionsE");
void ddl_gloo_reduce(void *opts)
{
	ddl_gloo_call(DDL_GLOO_REDUCE, DDL_EV_GLOO_REDUCE, opts,
	              __builtin_extract_return_addr(__builtin_return_address(0)));
}

DDL_EXPORT void ddl_gloo_allgather(void *opts) __asm__("_ZN4gloo9allgatherERNS_16AllgatherOptionsE");
void ddl_gloo_allgather(void *opts)
{
	ddl_gloo_call(DDL_GLOO_ALLGATHER, DDL_EV_GLOO_ALLGATHER, opts,
	              __builtin_extract_return_addr(__builtin_return_address(0)));
}

DDL_EXPORT void ddl_gloo_allgatherv(void *opts) __asm__("_ZN4gloo10allgathervERNS_17AllgathervOptionsE");
void ddl_gloo_allgatherv(void *opts)
{
	ddl_gloo_call(DDL_GLOO_ALLGATHERV, DDL_EV_GLOO_ALLGATHERV, opts,
	              __builtin_extract_return_addr(__builtin_return_address(0)));
}

DDL_EXPORT void ddl_gloo_gather(void *opts) __asm__("_ZN4gloo6gatherERNS_13GatherOptionsE");
void ddl_gloo_gather(void *opts)
{
	ddl_gloo_call(DDL_GLOO_GATHER, DDL_EV_GLOO_GATHER, opts,
	              __builtin_extract_return_addr(__builtin_return_address(0)));
}

DDL_EXPORT void ddl_gloo_scatter(void *opts) __asm__("_ZN4gloo7scatterERNS_14ScatterOptionsE");
void ddl_gloo_scatter(void *opts)
{
	ddl_gloo_call(DDL_GLOO_SCATTER, DDL_EV_GLOO_SCATTER, opts,
	              __builtin_extract_return_addr(__builtin_return_address(0)));
}

DDL_EXPORT void ddl_gloo_alltoall(void *opts) __asm__("_ZN4gloo8alltoallERNS_15AlltoallOptionsE");
void ddl_gloo_alltoall(void *opts)
{
	ddl_gloo_call(DDL_GLOO_ALLTOALL, DDL_EV_GLOO_ALLTOALL, opts,
	              __builtin_extract_return_addr(__builtin_return_address(0)));
}

DDL_EXPORT void ddl_gloo_alltoallv(void *opts) __asm__("_ZN4gloo9alltoallvERNS_16AlltoallvOptionsE");
void ddl_gloo_alltoallv(void *opts)
{
	ddl_gloo_call(DDL_GLOO_ALLTOALLV, DDL_EV_GLOO_ALLTOALLV, opts,
	              __builtin_extract_return_addr(__builtin_return_address(0)));
}

DDL_EXPORT void ddl_gloo_barrier(void *opts) __asm__("_ZN4gloo7barrierERNS_14BarrierOptionsE");
void ddl_gloo_barrier(void *opts)
{
	ddl_gloo_call(DDL_GLOO_BARRIER, DDL_EV_GLOO_BARRIER, opts,
	              __builtin_extract_return_addr(__builtin_return_address(0)));
}

/*
 * gloo::rendezvous::Context::connectFullMesh(Store&, shared_ptr<Device>&):
 * a context is made; its communicator is recorded first, keyed from the
 * process group the Python hook named on this thread, if any.
 */
DDL_EXPORT void ddl_gloo_mesh(void *self, void *store, void *dev) __asm__(
	"_ZN4gloo10rendezvous7Context15connectFullMeshERNS0_5StoreERSt10shared_ptrINS_9transport6DeviceEE");
void ddl_gloo_mesh(void *self, void *store, void *dev)
{
	void *caller = __builtin_extract_return_addr(__builtin_return_address(0));
	void (*real)(void *, void *, void *) = (void (*)(void *, void *, void *))ddl_gloo_next(DDL_GLOO_MESH, caller);
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_GLOO);
	if (t) {
		uint64_t key = 0;
		if (t->gloo_key) {
			unsigned n = t->gloo_key_n++;
			key = ddl_fnv(ddl_fnv(t->gloo_key, "ctx", 3), &n, sizeof n);
		}
		t->busy = 1;
		ddl_gloo_comm((uintptr_t)self, key, 1);
		t->busy = 0;
	}
	real(self, store, dev);
}
