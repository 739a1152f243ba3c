/*
 * Allocation failures injected into a program (tests/t_nomem.c preloads
 * this into ddlprof-report): malloc, calloc, realloc, strdup and strndup
 * called from the program's own code (not from the libraries it uses, nor
 * the loader) are counted, and the one numbered DDLT_FAIL_ALLOC returns
 * NULL with errno ENOMEM; "N+" fails that one and every one after it, as
 * memory that has run out stays out. The rest go to glibc's allocator.
 * Each failure is said on stderr with where it was called from, as an
 * offset in the program (addr2line -e PROGRAM OFFSET names the line).
 * With DDLT_ALLOC_COUNT naming a file, the count is written there at exit.
 * Built by the test with cc -shared; glibc only.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t k, size_t n);
void *__libc_realloc(void *p, size_t n);

static uintptr_t fa_lo, fa_hi, fa_bias; /* the program's code, where it is loaded */
static unsigned long fa_count, fa_at;
static int fa_ready, fa_after;

/* The program's executable segments, from its program headers (no allocation). */
static void fa_init(void)
{
	const ElfW(Phdr) *ph = (const void *)getauxval(AT_PHDR);
	size_t n = getauxval(AT_PHNUM);
	for (size_t i = 0; ph && i < n; i++)
		if (ph[i].p_type == PT_PHDR)
			fa_bias = (uintptr_t)ph - ph[i].p_vaddr;
	fa_lo = UINTPTR_MAX;
	for (size_t i = 0; ph && i < n; i++)
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X)) {
			uintptr_t a = fa_bias + ph[i].p_vaddr, b = a + ph[i].p_memsz;
			fa_lo = a < fa_lo ? a : fa_lo;
			fa_hi = b > fa_hi ? b : fa_hi;
		}
	const char *at = getenv("DDLT_FAIL_ALLOC");
	if (at) {
		char *end;
		fa_at = strtoul(at, &end, 10);
		fa_after = *end == '+';
	}
	fa_ready = 1;
}

/* Whether the allocation called from RA fails. */
static int fa_fails(void *ra)
{
	if (!fa_ready)
		fa_init();
	if ((uintptr_t)ra < fa_lo || (uintptr_t)ra >= fa_hi)
		return 0;
	/* the report's threads allocate side by side (analyzer/parallel.c) */
	unsigned long count = __atomic_add_fetch(&fa_count, 1, __ATOMIC_RELAXED);
	if (!fa_at || (count != fa_at && !(fa_after && count > fa_at)))
		return 0;
	if (count == fa_at) {
		char msg[96];
		int n = snprintf(msg, sizeof msg, "failalloc: allocation %lu fails (called from 0x%lx)\n",
		                 count, (unsigned long)((uintptr_t)ra - fa_bias));
		if (write(2, msg, (size_t)n) != n)
			n = -1;
	}
	errno = ENOMEM;
	return 1;
}

void *malloc(size_t n)
{
	return fa_fails(__builtin_return_address(0)) ? NULL : __libc_malloc(n);
}

void *calloc(size_t k, size_t n)
{
	return fa_fails(__builtin_return_address(0)) ? NULL : __libc_calloc(k, n);
}

void *realloc(void *p, size_t n)
{
	return fa_fails(__builtin_return_address(0)) ? NULL : __libc_realloc(p, n);
}

char *strndup(const char *s, size_t max)
{
	if (fa_fails(__builtin_return_address(0)))
		return NULL;
	size_t n = strnlen(s, max);
	char *p = __libc_malloc(n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = 0;
	}
	return p;
}

char *strdup(const char *s)
{
	if (fa_fails(__builtin_return_address(0)))
		return NULL;
	size_t n = strlen(s);
	char *p = __libc_malloc(n + 1);
	if (p)
		memcpy(p, s, n + 1);
	return p;
}

__attribute__((destructor)) static void fa_report(void)
{
	const char *path = getenv("DDLT_ALLOC_COUNT");
	if (!path)
		return;
	char buf[32];
	int n = snprintf(buf, sizeof buf, "%lu\n", fa_count);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0) {
		if (write(fd, buf, (size_t)n) != n)
			n = -1;
		close(fd);
	}
}
