/*
 * Live handles: the streams, events and communicators the emulation has
 * handed out and not yet destroyed. A handle is checked here before it is
 * dereferenced, so a stale or made-up handle gets
 * cudaErrorInvalidResourceHandle (or ncclInvalidArgument) instead of a
 * crash. An open-addressing hash set of pointers under a mutex: a lookup
 * costs a few tens of nanoseconds.
 */
#include <stdlib.h>

#include "emu.h"

#define EMU_SLOT_FREE 0u
#define EMU_SLOT_GONE 1u /* a deleted entry; pointers are never 1 */

static size_t emu_hash(uintptr_t p, size_t cap)
{
	uint64_t x = (uint64_t)p * 0x9e3779b97f4a7c15ull;
	return (size_t)(x >> 17) & (cap - 1);
}

/* Rebuilds the table with cap slots; 0 or -1. Caller holds the lock. */
static int emu_handles_grow(struct emu_handles *h, size_t cap)
{
	uintptr_t *slots = calloc(cap, sizeof *slots);
	if (!slots)
		return -1;
	for (size_t i = 0; i < h->cap; i++) {
		uintptr_t p = h->slots[i];
		if (p == EMU_SLOT_FREE || p == EMU_SLOT_GONE)
			continue;
		size_t j = emu_hash(p, cap);
		while (slots[j] != EMU_SLOT_FREE)
			j = (j + 1) & (cap - 1);
		slots[j] = p;
	}
	free(h->slots);
	h->slots = slots;
	h->cap = cap;
	h->used = h->live;
	return 0;
}

int emu_handles_add(struct emu_handles *h, const void *p)
{
	int rc = 0;
	pthread_mutex_lock(&h->mu);
	if ((h->used + 1) * 2 > h->cap)
		rc = emu_handles_grow(h, h->cap && h->live * 4 < h->cap ? h->cap : (h->cap ? h->cap * 2 : 64));
	if (rc == 0) {
		size_t j = emu_hash((uintptr_t)p, h->cap);
		while (h->slots[j] != EMU_SLOT_FREE && h->slots[j] != EMU_SLOT_GONE)
			j = (j + 1) & (h->cap - 1);
		h->used += h->slots[j] == EMU_SLOT_FREE;
		h->slots[j] = (uintptr_t)p;
		h->live++;
	}
	pthread_mutex_unlock(&h->mu);
	return rc;
}

/* The slot holding p, or -1. Caller holds the lock. */
static long emu_handles_find(const struct emu_handles *h, const void *p)
{
	if (!h->cap || (uintptr_t)p <= EMU_SLOT_GONE)
		return -1;
	for (size_t j = emu_hash((uintptr_t)p, h->cap);; j = (j + 1) & (h->cap - 1)) {
		if (h->slots[j] == (uintptr_t)p)
			return (long)j;
		if (h->slots[j] == EMU_SLOT_FREE)
			return -1;
	}
}

int emu_handles_has(struct emu_handles *h, const void *p)
{
	pthread_mutex_lock(&h->mu);
	long j = emu_handles_find(h, p);
	pthread_mutex_unlock(&h->mu);
	return j >= 0;
}

int emu_handles_del(struct emu_handles *h, const void *p)
{
	pthread_mutex_lock(&h->mu);
	long j = emu_handles_find(h, p);
	if (j >= 0) {
		h->slots[j] = EMU_SLOT_GONE;
		h->live--;
	}
	pthread_mutex_unlock(&h->mu);
	return j >= 0 ? 0 : -1;
}
