/*
 * Call stacks of communication and synchronisation calls (ddlprof
 * --backtrace DEPTH, DDLPROF_BACKTRACE). The wrappers of socket calls and
 * waits, condition-variable waits, NCCL collectives and CUDA
 * synchronisations record through ddl_ring_put_call (ddl.h); with
 * backtraces on, that lands here: the caller's stack is taken with
 * libunwind's unw_backtrace (loaded with dlopen: no link-time dependency),
 * our own frames are cut off, and the stack is looked up by a hash of its
 * return addresses in a lock-free table. A stack seen for the first time
 * (the cold path) is interned as a DDL_STR_STACK string, each frame as its
 * module (DDL_STR_MODULE: path and build id, once per module) and its
 * address inside that module, so ddlprof-report can name the functions
 * offline whatever address the module was loaded at. The event then goes
 * into the ring with a stack record after it (DDL_EV_STACK), as one unit.
 *
 * The hot path allocates nothing and takes no lock of ours: one unwind, a
 * hash and a probe. The cold path asks the dynamic loader (dl_iterate_phdr)
 * for modules and appends strings. The thread is marked busy throughout, so
 * a signal handler's calls pass through unrecorded, and errno is kept.
 * Without libunwind, one line on stderr and calls are recorded without
 * stacks.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "ddl.h"

#define DDL_BT_MAX 32          /* deepest stack DDLPROF_BACKTRACE may ask for */
#define DDL_BT_OWN 6           /* frames of ours and libunwind's above the caller (3 to 5) */
#define DDL_STACK_SLOTS 16384  /* distinct stacks per process; power of two */
#define DDL_MOD_SLOTS 1024     /* distinct modules; power of two */

unsigned ddl_bt_depth;

static int (*ddl_unw_backtrace)(void **, int);

/* The code of this library and of libunwind: frames to cut off the top. */
static struct {
	uintptr_t lo, hi;
} ddl_own[2];

/*
 * Stacks by hash. A slot's key (the hash, never 0) is published last, with
 * release, after its id; a slot whose key is set but id still 0 is being
 * interned by another thread, and that call goes without a stack.
 */
struct ddl_bt_tabs {
	struct {
		_Atomic uint64_t key[DDL_STACK_SLOTS];
		_Atomic uint32_t id[DDL_STACK_SLOTS];
		_Atomic uint32_t next;
	} stacks;
	/* Modules by the address of their first loaded segment. */
	struct {
		_Atomic uintptr_t key[DDL_MOD_SLOTS];
		_Atomic uint32_t id[DDL_MOD_SLOTS];
		_Atomic uint32_t next;
	} mods;
};
static void *_Atomic ddl_bt; /* a struct ddl_bt_tabs, mapped on the first stack */

/* ---- modules, as the dynamic loader lists them ---- */

struct ddl_mod_find {
	uintptr_t pc;       /* in: an address */
	uintptr_t bias;     /* out: the module's load bias (address - ELF virtual address) */
	uintptr_t start;    /* out: its lowest loaded address (0: no module holds pc) */
	uintptr_t xlo, xhi; /* out: the span of its executable segments */
	const char *name;
	char build_id[41];  /* hex, or "" */
};

static int ddl_mod_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct ddl_mod_find *f = arg;
	uintptr_t start = UINTPTR_MAX, xlo = UINTPTR_MAX, xhi = 0;
	int hit = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
		if (a < start)
			start = a;
		if (ph->p_flags & PF_X) {
			xlo = a < xlo ? a : xlo;
			xhi = b > xhi ? b : xhi;
		}
		if (f->pc >= a && f->pc < b)
			hit = 1;
	}
	if (!hit)
		return 0;
	f->bias = info->dlpi_addr;
	f->start = start;
	f->xlo = xlo;
	f->xhi = xhi;
	f->name = info->dlpi_name;
	f->build_id[0] = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		size_t off = 0;
		while (off + sizeof(ElfW(Nhdr)) <= ph->p_memsz) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)(p + off);
			size_t name_sz = (n->n_namesz + 3) & ~3u, desc_sz = (n->n_descsz + 3) & ~3u;
			const unsigned char *desc = p + off + sizeof *n + name_sz;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    !memcmp(p + off + sizeof *n, "GNU", 4) && n->n_descsz <= 20 &&
			    off + sizeof *n + name_sz + n->n_descsz <= ph->p_memsz) {
				static const char hex[] = "0123456789abcdef";
				for (unsigned k = 0; k < n->n_descsz; k++) {
					f->build_id[2 * k] = hex[desc[k] >> 4];
					f->build_id[2 * k + 1] = hex[desc[k] & 15];
				}
				f->build_id[2 * n->n_descsz] = 0;
				return 1;
			}
			off += sizeof *n + name_sz + desc_sz;
		}
	}
	return 1;
}

/* Finds the module holding PC; 0, or -1 when none does. */
static int ddl_mod_find(uintptr_t pc, struct ddl_mod_find *f)
{
	memset(f, 0, sizeof *f);
	f->pc = pc;
	dl_iterate_phdr(ddl_mod_cb, f);
	return f->start ? 0 : -1;
}

/*
 * The module id of F's module, interned on first sight ("BUILDID PATH");
 * 0 when the table is full or another thread is still interning it.
 */
static uint32_t ddl_mod_id(const struct ddl_mod_find *f)
{
	struct ddl_bt_tabs *bt = ddl_lazy(&ddl_bt, sizeof *bt);
	uintptr_t k = f->start;
	if (!bt)
		return 0;
	for (unsigned i = 0; i < DDL_MOD_SLOTS; i++) {
		unsigned s = (unsigned)((k >> 12) + i) & (DDL_MOD_SLOTS - 1);
		uintptr_t cur = atomic_load_explicit(&bt->mods.key[s], memory_order_acquire);
		if (cur == 0) {
			uintptr_t expect = 0;
			if (atomic_compare_exchange_strong(&bt->mods.key[s], &expect, k)) {
				uint32_t id = atomic_fetch_add(&bt->mods.next, 1) + 1;
				char path[4096], text[4200];
				const char *name = f->name && f->name[0] ? f->name : NULL;
				if (!name) {
					/* the main program: the loader names it "" */
					ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
					path[n > 0 ? n : 0] = 0;
					name = path;
				}
				int n = snprintf(text, sizeof text, "%s %s", f->build_id[0] ? f->build_id : "-", name);
				if (n < 0)
					n = 0;
				ddl_strings_add(DDL_STR_MODULE, id, 0, text,
				                (size_t)n < sizeof text ? (size_t)n : sizeof text - 1);
				atomic_store_explicit(&bt->mods.id[s], id, memory_order_release);
				return id;
			}
			cur = expect;
		}
		if (cur != k)
			continue;
		/* another thread got here first: it is writing one string */
		for (int spin = 0; spin < 1000; spin++) {
			uint32_t id = atomic_load_explicit(&bt->mods.id[s], memory_order_acquire);
			if (id)
				return id;
			sched_yield();
		}
		return 0;
	}
	return 0;
}

/* ---- stacks ---- */

static inline int ddl_own_frame(uintptr_t pc)
{
	return (pc >= ddl_own[0].lo && pc < ddl_own[0].hi) || (pc >= ddl_own[1].lo && pc < ddl_own[1].hi);
}

/* The cold path: a stack not seen before; its id, or 0. */
__attribute__((noinline)) static uint32_t ddl_stack_intern(void *const *pc, int n, uint64_t h,
                                                          unsigned s)
{
	struct ddl_bt_tabs *bt = atomic_load(&ddl_bt); /* mapped by our caller */
	uint64_t expect = 0;
	if (!atomic_compare_exchange_strong(&bt->stacks.key[s], &expect, h))
		return expect == h ? atomic_load_explicit(&bt->stacks.id[s], memory_order_acquire) : 0;
	uint32_t id = atomic_fetch_add(&bt->stacks.next, 1) + 1;
	char text[1024];
	size_t len = 0;
	for (int i = 0; i < n; i++) {
		struct ddl_mod_find f;
		/* return addresses: the call is the byte before, which names the
		 * right function even when the call is a function's last act */
		uintptr_t a = (uintptr_t)pc[i];
		uint32_t mod = 0;
		uintptr_t off = a;
		if (ddl_mod_find(a - 1, &f) == 0) {
			mod = ddl_mod_id(&f);
			off = a - f.bias;
		}
		int k = snprintf(text + len, sizeof text - len, "%#lx %u %#lx\n", (unsigned long)a, mod,
		                 (unsigned long)off);
		if (k < 0 || (size_t)k >= sizeof text - len)
			break; /* the deepest frames do not fit: the stack is cut there */
		len += (size_t)k;
	}
	ddl_strings_add(DDL_STR_STACK, id, (uint32_t)n, text, len);
	atomic_store_explicit(&bt->stacks.id[s], id, memory_order_release);
	return id;
}

/* The calling program's stack, as an interned id; 0 when it cannot be had. */
static uint32_t ddl_stack_take(void)
{
	void *pc[DDL_BT_MAX + DDL_BT_OWN];
	int n = ddl_unw_backtrace(pc, (int)ddl_bt_depth + DDL_BT_OWN);
	int i = 0;
	while (i < n && ddl_own_frame((uintptr_t)pc[i]))
		i++;
	/* A call made inside another wrapped call (a CUDA runtime that waits on
	 * a condition variable in cudaStreamSynchronize) has our wrapper in the
	 * middle of its stack: the program called the real function there. */
	int k = 0;
	for (int j = i; j < n && k < (int)ddl_bt_depth; j++)
		if (!ddl_own_frame((uintptr_t)pc[j]))
			pc[i + k++] = pc[j];
	if (k <= 0)
		return 0;
	uint64_t h = 0xcbf29ce484222325ull;
	for (int j = 0; j < k; j++)
		h = (h ^ (uint64_t)(uintptr_t)pc[i + j]) * 0x100000001b3ull;
	h ^= h >> 29;
	h |= 1;
	struct ddl_bt_tabs *bt = ddl_lazy(&ddl_bt, sizeof *bt);
	if (!bt)
		return 0;
	for (unsigned j = 0; j < DDL_STACK_SLOTS; j++) {
		unsigned s = (unsigned)(h + j) & (DDL_STACK_SLOTS - 1);
		uint64_t cur = atomic_load_explicit(&bt->stacks.key[s], memory_order_acquire);
		if (cur == h)
			return atomic_load_explicit(&bt->stacks.id[s], memory_order_acquire);
		if (cur == 0)
			return ddl_stack_intern(pc + i, k, h, s);
	}
	return 0; /* the table is full */
}

uint32_t ddl_stack_open(struct ddl_thread *t, unsigned kind, uint64_t t0)
{
	int saved = errno, busy = t->busy;
	t->busy = 1;
	uint32_t stack = ddl_stack_take();
	t->bt_stack = stack;
	t->bt_kind = kind;
	t->bt_t0 = t0;
	t->bt_t1 = ddl_clock_now();
	t->busy = busy;
	errno = saved;
	return stack;
}

void ddl_ring_put_stacked(struct ddl_thread *t, unsigned kind, unsigned flags, uint64_t t0,
                          uint64_t t1, int64_t result, int fd, uint32_t peer,
                          const struct ddl_args *a)
{
	int saved = errno;
	t->busy = 1;
	/* the stack the call was opened with, and its start once that was
	 * taken (the unwinding is no time of the call's); else taken now (the
	 * same frames). A call inside the open one leaves it for the outer. */
	uint32_t stack;
	if (t->bt_stack && t->bt_kind == kind && t->bt_t0 == t0) {
		stack = t->bt_stack;
		t0 = t->bt_t1 < t1 ? t->bt_t1 : t1;
		t->bt_stack = 0;
	} else {
		stack = ddl_stack_take();
	}
	unsigned n = 1 + (a != NULL) + (stack != 0);
	uint64_t h = t->head;
	if (ddl_ring_claim(t, h, n, n)) {
		flags |= (a ? DDL_EVF_ARGS : 0) | (stack ? DDL_EVF_STACK : 0);
		ddl_event_fill(&t->ev[h & t->mask], kind, flags, t->tidbits, t0, t1, result, fd, peer);
		uint64_t at = h + 1;
		if (a)
			__builtin_memcpy(&t->ev[at++ & t->mask], a, sizeof *a);
		if (stack) {
			struct ddl_stackrec r = {0, stack, DDL_EV_STACK, 0, t->idx, {0, 0}};
			__builtin_memcpy(&t->ev[at++ & t->mask], &r, sizeof r);
		}
		ddl_ring_publish(t, at);
	}
	t->busy = 0;
	errno = saved;
}

/* The executable span of the module holding ADDR into R. */
static void ddl_own_range(const void *addr, int r)
{
	struct ddl_mod_find f;
	if (ddl_mod_find((uintptr_t)addr, &f) == 0) {
		ddl_own[r].lo = f.xlo;
		ddl_own[r].hi = f.xhi;
	}
}

void ddl_unwind_init(void)
{
	unsigned depth = ddl_g.cfg.backtrace;
	if (!depth)
		return;
	if (depth > DDL_BT_MAX)
		depth = DDL_BT_MAX;
	/* libunwind's own name for its API (libunwind.so.8, the nongnu one);
	 * RTLD_LOCAL keeps its _Unwind_* out of the program's way */
	static const char *const names[] = {"libunwind.so.8", "libunwind.so"};
	void *h = NULL, *sym = NULL;
	for (size_t i = 0; i < sizeof names / sizeof names[0] && !sym; i++) {
		h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (h)
			sym = dlsym(h, "unw_backtrace");
	}
	if (!sym) {
		ddl_warn("--backtrace: cannot load libunwind (libunwind.so.8, with unw_backtrace); calls "
		         "are recorded without their stacks");
		ddl_meta("backtrace", "off (no libunwind)");
		return;
	}
	ddl_unw_backtrace = (int (*)(void **, int))sym;
	ddl_own_range((const void *)ddl_unwind_init, 0);
	ddl_own_range(sym, 1);
	char v[16];
	snprintf(v, sizeof v, "%u", depth);
	ddl_meta("backtrace", v);
	ddl_bt_depth = depth;
}

/*
 * The child of a fork keeps the tables (the strings are written again into
 * its own trace), but not a slot another thread was filling at the fork:
 * that thread is gone, so its half-made entries are cleared.
 */
void ddl_unwind_after_fork_child(void)
{
	struct ddl_bt_tabs *bt = atomic_load(&ddl_bt);
	if (!ddl_bt_depth || !bt)
		return;
	for (unsigned s = 0; s < DDL_STACK_SLOTS; s++)
		if (atomic_load(&bt->stacks.key[s]) && !atomic_load(&bt->stacks.id[s]))
			atomic_store(&bt->stacks.key[s], 0);
	for (unsigned s = 0; s < DDL_MOD_SLOTS; s++)
		if (atomic_load(&bt->mods.key[s]) && !atomic_load(&bt->mods.id[s]))
			atomic_store(&bt->mods.key[s], 0);
}
