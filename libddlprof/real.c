/*
 * The table of real functions behind every wrapper. Resolved once with
 * dlsym(RTLD_NEXT), on the first wrapped call or in the constructor,
 * whichever comes first. ddl_real_set() lets tests and benchmarks point an
 * entry at a fake so the wrapper's own cost can be measured without the
 * kernel's noise.
 */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "ddl.h"

struct ddl_real ddl_real;

static const struct {
	const char *name;
	size_t off;
} ddl_hook_names[] = {
#define DDL_X_NAME(n, r, p) {#n, offsetof(struct ddl_real, n)},
	DDL_HOOKS(DDL_X_NAME)
#undef DDL_X_NAME
};

/* Idempotent and race-free enough: every thread stores the same values. */
void ddl_real_resolve(void)
{
	for (size_t i = 0; i < sizeof ddl_hook_names / sizeof ddl_hook_names[0]; i++) {
		void **slot = (void **)((char *)&ddl_real + ddl_hook_names[i].off);
		if (*slot)
			continue;
		void *f = dlsym(RTLD_NEXT, ddl_hook_names[i].name);
		if (f)
			__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	}
}

/*
 * Test hook: replace the real NAME by FN. Returns the previous function, or
 * NULL when NAME is not a hooked function.
 */
DDL_EXPORT void *ddl_real_set(const char *name, void *fn)
{
	ddl_real_resolve();
	for (size_t i = 0; i < sizeof ddl_hook_names / sizeof ddl_hook_names[0]; i++) {
		if (strcmp(ddl_hook_names[i].name, name) == 0) {
			void **slot = (void **)((char *)&ddl_real + ddl_hook_names[i].off);
			void *old = *slot;
			__atomic_store_n(slot, fn, __ATOMIC_RELEASE);
			return old;
		}
	}
	return NULL;
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
