/*
 * The tables of real functions behind every wrapper. The libc families'
 * (DDL_HOOKS, ddl.h) are resolved once with dlsym(RTLD_NEXT), on the first
 * wrapped call or in the constructor, whichever comes first; the GPU
 * families' (gpu.h) and MPI's (mpi.h) entry by entry on first use. ddl_real_set() lets tests
 * and benchmarks point any entry at a fake so the wrapper's own cost can be
 * measured without the kernel's noise, and the wrappers tested without the
 * library they wrap; ddl_real_entry() lists the entries.
 */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "ddl.h"
#include "mpi.h"
#ifdef DDL_HAVE_CUDA
#include "gpu.h"
#endif

struct ddl_real ddl_real;

#define DDL_X_SOCKET(n, r, p) {#n, "socket", (void **)&ddl_real.n},
#define DDL_X_PROCESS(n, r, p) {#n, "process", (void **)&ddl_real.n},
#define DDL_X_THREAD(n, r, p) {#n, "thread", (void **)&ddl_real.n},
#define DDL_X_FILE(n, r, p) {#n, "file", (void **)&ddl_real.n},
static const struct ddl_hook_entry ddl_libc_hooks[] = {
	DDL_SOCKET_HOOKS(DDL_X_SOCKET)
	DDL_PROCESS_HOOKS(DDL_X_PROCESS)
	DDL_THREAD_HOOKS(DDL_X_THREAD)
	DDL_FILE_HOOKS(DDL_X_FILE)
};
#undef DDL_X_SOCKET
#undef DDL_X_PROCESS
#undef DDL_X_THREAD
#undef DDL_X_FILE
enum { ddl_libc_nhooks = sizeof ddl_libc_hooks / sizeof ddl_libc_hooks[0] };

/* Idempotent and race-free enough: every thread stores the same values. */
void ddl_real_resolve(void)
{
	for (size_t i = 0; i < ddl_libc_nhooks; i++) {
		void **slot = ddl_libc_hooks[i].slot;
		if (*slot)
			continue;
		void *f = dlsym(RTLD_NEXT, ddl_libc_hooks[i].name);
		if (f)
			__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	}
}

/* Entry I of all the tables (libc's first, MPI's last), or NULL past the last. */
static const struct ddl_hook_entry *ddl_real_at(size_t i)
{
	if (i < ddl_libc_nhooks)
		return &ddl_libc_hooks[i];
	i -= ddl_libc_nhooks;
#ifdef DDL_HAVE_CUDA
	if (i < ddl_gpu_nhooks)
		return &ddl_gpu_hooks[i];
	i -= ddl_gpu_nhooks;
#endif
	if (i < ddl_mpi_nhooks)
		return &ddl_mpi_hooks[i];
	return NULL;
}

/*
 * Test hook: replace the real NAME by FN. Returns the previous function
 * (NULL when a GPU entry was not found yet), or NULL when NAME is not a
 * hooked function.
 */
DDL_EXPORT void *ddl_real_set(const char *name, void *fn)
{
	ddl_real_resolve();
	const struct ddl_hook_entry *e;
	for (size_t i = 0; (e = ddl_real_at(i)); i++) {
		if (strcmp(e->name, name) == 0) {
			void *old = __atomic_load_n(e->slot, __ATOMIC_ACQUIRE);
			__atomic_store_n(e->slot, fn, __ATOMIC_RELEASE);
			return old;
		}
	}
	return NULL;
}

/*
 * Test hook: the name of entry I of the tables, NULL past the last; its
 * family in *FAMILY, the function it holds in *CUR (found now, when a GPU
 * entry was not yet: NULL when its library is not loaded).
 */
DDL_EXPORT const char *ddl_real_entry(unsigned i, const char **family, void **cur)
{
	ddl_real_resolve();
	const struct ddl_hook_entry *e = ddl_real_at(i);
	if (!e)
		return NULL;
	*family = e->family;
	*cur = __atomic_load_n(e->slot, __ATOMIC_ACQUIRE);
	if (!*cur && !strcmp(e->family, "mpi"))
		*cur = ddl_mpi_next_slot(e->slot, e->name);
#ifdef DDL_HAVE_CUDA
	else if (!*cur && i >= ddl_libc_nhooks)
		*cur = ddl_gpu_next_slot(e->slot, e->name);
#endif
	return e->name;
}

struct ddl_sym_search {
	const char *name;
	void *self_base;
	void *found;
};

static int ddl_sym_visit(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct ddl_sym_search *q = arg;
	if (q->found || !info->dlpi_name || !info->dlpi_name[0] ||
	    (void *)info->dlpi_addr == q->self_base)
		return 0;
	void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return 0;
	void *f = dlsym(h, q->name);
	Dl_info di;
	if (f && dladdr(f, &di) && di.dli_fbase != q->self_base)
		q->found = f;
	dlclose(h);
	return q->found != NULL;
}

void *ddl_real_find(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);
	if (f)
		return f;
	Dl_info self;
	if (!dladdr((void *)ddl_real_find, &self))
		return NULL;
	struct ddl_sym_search q = {name, self.dli_fbase, NULL};
	dl_iterate_phdr(ddl_sym_visit, &q);
	return q.found;
}
