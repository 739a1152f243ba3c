/*
 * The marker API of include/ddlprof/ddlprof.h: ranges and marks the program
 * names itself (a training step, a data load), recorded as events on the
 * calling thread so ddlprof-report can cut the run into iterations. Names
 * are interned once into the trace's string table by content, lock-free,
 * like socket peers.
 */
#include <string.h>

#include "ddl.h"
#include "ddlprof/ddlprof.h"

#define DDL_NAME_SLOTS 65536 /* kernel names too: a framework registers thousands */
#define DDL_NAME_MAX 255

struct ddl_name_tab {
	_Atomic uint64_t key[DDL_NAME_SLOTS];
	_Atomic uint32_t idx[DDL_NAME_SLOTS];
	_Atomic uint32_t next;
};
static void *_Atomic ddl_names; /* a struct ddl_name_tab, mapped on the first name */

/* Returns the name's id (>= 1), or 0 when the table is full. Keeps errno. */
uint32_t ddl_name_intern(const char *name)
{
	size_t len = strnlen(name, DDL_NAME_MAX);
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 0x100000001b3ull;
	h |= 1;
	struct ddl_name_tab *nt = ddl_lazy(&ddl_names, sizeof *nt);
	if (!nt)
		return 0;
	for (unsigned i = 0; i < DDL_NAME_SLOTS; i++) {
		unsigned s = (unsigned)(h + i) & (DDL_NAME_SLOTS - 1);
		uint64_t k = atomic_load_explicit(&nt->key[s], memory_order_acquire);
		if (k == h)
			return ddl_id_wait(&nt->idx[s]); /* another thread is writing its string */
		if (k)
			continue;
		uint64_t expect = 0;
		if (!atomic_compare_exchange_strong(&nt->key[s], &expect, h)) {
			if (expect != h)
				continue;
			return ddl_id_wait(&nt->idx[s]); /* another thread is writing its string */
		}
		uint32_t id = atomic_fetch_add(&nt->next, 1) + 1;
		ddl_strings_add(DDL_STR_NAME, id, 0, name, len);
		atomic_store_explicit(&nt->idx[s], id, memory_order_release);
		return id;
	}
	return 0;
}

static void ddl_marker(unsigned kind, const char *name)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_MARK);
	if (!t)
		return;
	uint64_t now = ddl_clock_now();
	t->busy = 1; /* interning may take the string lock */
	uint32_t id = name ? ddl_name_intern(name) : 0;
	t->busy = 0;
	ddl_ring_put(t, kind, 0, now, now, id, -1, 0);
}

DDL_EXPORT void ddlprof_range_push(const char *name)
{
	ddl_marker(DDL_EV_RANGE_PUSH, name ? name : "");
}

DDL_EXPORT void ddlprof_range_pop(void)
{
	ddl_marker(DDL_EV_RANGE_POP, NULL);
}

DDL_EXPORT void ddlprof_mark(const char *name)
{
	ddl_marker(DDL_EV_MARK, name ? name : "");
}
