/* Room kept from one process to the next, by thread (keep.h). */
#include <pthread.h>
#include <stdlib.h>

#include "keep.h"

struct ddl_keep {
	void *p[DDL_KEEP_SLOTS];
	size_t bytes[DDL_KEEP_SLOTS];
	size_t total;
};
static pthread_key_t ddl_keep_key;
static pthread_once_t ddl_keep_once = PTHREAD_ONCE_INIT;
static int ddl_keep_keyed;

static void ddl_keep_free(void *v)
{
	struct ddl_keep *k = v;
	for (int i = 0; i < DDL_KEEP_SLOTS; i++)
		free(k->p[i]);
	free(k);
}

static void ddl_keep_key_make(void)
{
	ddl_keep_keyed = pthread_key_create(&ddl_keep_key, ddl_keep_free) == 0;
}

/* This thread's kept room, made the first time; NULL when it cannot be had. */
static struct ddl_keep *ddl_keep_mine(void)
{
	pthread_once(&ddl_keep_once, ddl_keep_key_make);
	if (!ddl_keep_keyed)
		return NULL;
	struct ddl_keep *k = pthread_getspecific(ddl_keep_key);
	if (!k && (k = calloc(1, sizeof *k)) && pthread_setspecific(ddl_keep_key, k)) {
		free(k);
		k = NULL;
	}
	return k;
}

void *ddl_keep_take(int slot, size_t need, size_t *bytes)
{
	struct ddl_keep *k = slot >= 0 && slot < DDL_KEEP_SLOTS ? ddl_keep_mine() : NULL;
	void *p = k ? k->p[slot] : NULL;
	*bytes = 0;
	if (!p)
		return NULL;
	size_t b = k->bytes[slot];
	k->p[slot] = NULL;
	k->bytes[slot] = 0;
	k->total -= b;
	if (b < need) {
		free(p);
		return NULL;
	}
	*bytes = b;
	return p;
}

int ddl_keep_give(int slot, void *p, size_t bytes)
{
	struct ddl_keep *k = p && slot >= 0 && slot < DDL_KEEP_SLOTS ? ddl_keep_mine() : NULL;
	if (!k || k->p[slot] || bytes > DDL_KEEP_BYTES - k->total)
		return -1;
	k->p[slot] = p;
	k->bytes[slot] = bytes;
	k->total += bytes;
	return 0;
}
