/*
 * Call sites (ddlprof --backtrace): which places in the program its
 * communication and synchronisation time comes from. Every call recorded
 * with a stack (DDL_EVF_STACK) is charged to that stack: its whole
 * duration as time, and the part of it the breakdown counts as stall.
 * Stacks are merged across processes and exec images by their frames
 * (module path and address), so the ranks of one job add up.
 *
 * Stall is what breakdown.c and breakdown_gpu.c call stall, applied to one
 * call. Without device intervals: the call is on the training thread,
 * inside an analysed iteration, while traffic is in flight (network when
 * it goes to another host, interconnect when not). With them: the call
 * overlaps a collective running on the device while no kernel or copy
 * runs (network before interconnect, as there).
 *
 * The top DDL_CALLSITES_TOP stacks, by stall and then by time, are named
 * offline: each frame's module is read from disk (its .symtab, else the
 * .symtab of its separate debug file under /usr/lib/debug/.build-id, else
 * its .dynsym) and the address looked up among its functions. A module
 * whose build id differs from the one recorded at run time was rebuilt
 * since: its frames stay unnamed rather than wrongly named.
 */
#include <elf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ivset.h"
#include "report.h"

/* Nanoseconds of [a,b) covered by W (merged), split into remote (tag 1) and local. */
static void ddl_win_cover(const struct ddl_ivset *w, int64_t a, int64_t b, int64_t *remote,
                          int64_t *local)
{
	int64_t by[2] = {0, 0};
	ddl_ivset_overlap(w, NULL, a, b, by, 2);
	*remote += by[1];
	*local += by[0];
}

/* ---- stacks, merged by their frames ---- */

struct ddl_cs {
	char *key;             /* "PATH\t0xOFF\n..." */
	double time_s, net_s, ic_s;
	uint64_t calls;
	uint32_t kinds[DDL_EV_COUNT];
	struct ddl_frame *frames;
	char **build_ids;      /* per frame, as recorded ("" none) */
	size_t nframes;
};

struct ddl_cstab {
	struct ddl_cs *v;
	size_t n, cap;
	size_t *slot;          /* open addressing: index + 1, 0 empty */
	size_t nslot;
};

static uint64_t ddl_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* The entry for KEY (taken over by the table), or NULL without memory. */
static struct ddl_cs *ddl_cs_get(struct ddl_cstab *tab, char *key, int *fresh)
{
	*fresh = 0;
	if (tab->n * 2 >= tab->nslot) {
		size_t ns = tab->nslot ? tab->nslot * 2 : 1024;
		size_t *q = calloc(ns, sizeof *q);
		if (!q)
			return NULL;
		for (size_t i = 0; i < tab->n; i++) {
			size_t s = ddl_hash(tab->v[i].key) & (ns - 1);
			while (q[s])
				s = (s + 1) & (ns - 1);
			q[s] = i + 1;
		}
		free(tab->slot);
		tab->slot = q;
		tab->nslot = ns;
	}
	size_t s = ddl_hash(key) & (tab->nslot - 1);
	while (tab->slot[s]) {
		struct ddl_cs *c = &tab->v[tab->slot[s] - 1];
		if (!strcmp(c->key, key)) {
			free(key);
			return c;
		}
		s = (s + 1) & (tab->nslot - 1);
	}
	if (tab->n == tab->cap) {
		size_t nc = tab->cap ? tab->cap * 2 : 64;
		struct ddl_cs *q = realloc(tab->v, nc * sizeof *q);
		if (!q)
			return NULL;
		tab->v = q;
		tab->cap = nc;
	}
	struct ddl_cs *c = &tab->v[tab->n];
	memset(c, 0, sizeof *c);
	c->key = key;
	tab->slot[s] = ++tab->n;
	*fresh = 1;
	return c;
}

/* A module's path and build id from its DDL_STR_MODULE text. */
static const char *ddl_mod_path(const struct ddl_trace *t, unsigned id, char *bid, size_t cap)
{
	bid[0] = 0;
	if (!id || id >= t->nmodules || !t->modules[id].text)
		return NULL;
	const char *s = t->modules[id].text, *sp = strchr(s, ' ');
	if (!sp)
		return NULL;
	size_t n = (size_t)(sp - s);
	if (!(n == 1 && s[0] == '-') && n < cap) {
		memcpy(bid, s, n);
		bid[n] = 0;
	}
	return sp + 1;
}

/* The key of stack ID of trace T, or NULL: none (no frames), or without
 * memory (*NOMEM set). */
static char *ddl_stack_key(const struct ddl_trace *t, uint32_t id, int *nomem)
{
	if (!id || id >= t->nstacks || !t->stacks[id].text)
		return NULL;
	size_t cap = 256, len = 0;
	char *key = malloc(cap);
	if (!key) {
		*nomem = 1;
		return NULL;
	}
	key[0] = 0;
	for (const char *line = t->stacks[id].text; *line;) {
		const char *nl = strchr(line, '\n');
		unsigned long long addr, off;
		unsigned mod;
		char bid[64];
		if (sscanf(line, "%llx %u %llx", &addr, &mod, &off) == 3) {
			const char *path = ddl_mod_path(t, mod, bid, sizeof bid);
			size_t need = (path ? strlen(path) : 1) + 40;
			if (len + need >= cap) {
				cap = (len + need) * 2;
				char *q = realloc(key, cap);
				if (!q) {
					free(key);
					*nomem = 1;
					return NULL;
				}
				key = q;
			}
			if (path)
				len += (size_t)snprintf(key + len, cap - len, "%s\t%#llx\n", path, off);
			else /* no module: the address as run */
				len += (size_t)snprintf(key + len, cap - len, "?\t%#llx\n", addr);
		}
		if (!nl)
			break;
		line = nl + 1;
	}
	if (!len) {
		free(key);
		return NULL;
	}
	return key;
}

/* The frames of stack ID of trace T into F[0..CAP) and their modules'
 * build ids (as recorded, "" none) into BIDS, *N of them; 0, or -1
 * without memory (modules or build ids left out). */
static int ddl_frames_read(const struct ddl_trace *t, uint32_t id, struct ddl_frame *f, char **bids, size_t cap,
                           size_t *n)
{
	int rc = 0;
	size_t k = 0;
	for (const char *line = t->stacks[id].text; *line && k < cap;) {
		const char *nl = strchr(line, '\n');
		unsigned long long addr, off;
		unsigned mod;
		char bid[64];
		if (sscanf(line, "%llx %u %llx", &addr, &mod, &off) == 3) {
			const char *path = ddl_mod_path(t, mod, bid, sizeof bid);
			f[k].module = path ? strdup(path) : NULL;
			f[k].offset = path ? off : addr;
			bids[k] = strdup(bid);
			if ((path && !f[k].module) || !bids[k])
				rc = -1;
			k++;
		}
		if (!nl)
			break;
		line = nl + 1;
	}
	*n = k;
	return rc;
}

/* The frames of a new entry, from its key and the trace's module records;
 * 0, or -1 without memory (frames or their modules left out). */
static int ddl_cs_frames(struct ddl_cs *c, const struct ddl_trace *t, uint32_t id)
{
	size_t n = 0;
	for (const char *s = c->key; *s; s++)
		n += *s == '\n';
	c->frames = calloc(n, sizeof *c->frames);
	c->build_ids = calloc(n, sizeof *c->build_ids);
	if (!c->frames || !c->build_ids)
		return -1;
	return ddl_frames_read(t, id, c->frames, c->build_ids, n, &c->nframes);
}

/* ---- where stall is: per process ---- */

struct ddl_stallmap {
	int device;              /* from the device timeline */
	uint32_t train_tid;      /* the training thread: the only one that stalls */
	struct ddl_ivset traffic; /* host: traffic windows; device: exposed network collectives */
	struct ddl_ivset ic;      /* device: exposed interconnect collectives */
	struct ddl_ivset nested;  /* its calls made inside another of its recorded calls */
	int nomem;                /* memory ran out building it: stall left out */
};

/* A call of the host, as opposed to markers, device intervals, records and
 * CUPTI's records of calls (which the wrapped call, when there is one, holds). */
static int ddl_host_call(int cls)
{
	return cls && cls != DDL_CLASS_MARK && cls != DDL_CLASS_DEVICE && cls != DDL_CLASS_ARGS &&
	       cls != DDL_CLASS_API;
}

/*
 * The training thread's calls that lie inside another of its recorded
 * calls (the CUDA runtime waiting on a condition variable inside
 * cudaStreamSynchronize): their stall is the outer call's, charged once,
 * to the outer call's site.
 */
static void ddl_stallmap_nested(const struct ddl_proc *p, struct ddl_stallmap *m)
{
	struct ddl_ivset all = {0};
	for (size_t k = 0; k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			if (!ddl_host_call(ddl_event_class(e->kind)) || e->tid >= t->nthreads ||
			    t->threads[e->tid].tid != m->train_tid)
				continue;
			int64_t a = ddl_trace_real_ns(t, e->start);
			ddl_ivset_push(&all, a, a + ddl_trace_dur_ns(t, e), 0);
		}
	}
	ddl_ivset_sort(&all);
	m->nomem |= all.nomem;
	int64_t reach = INT64_MIN;
	for (size_t i = 0; i < all.n; i++) {
		/* among equal starts the longer one comes first, as the outer call */
		size_t j = i;
		while (j + 1 < all.n && all.v[j + 1].a == all.v[i].a)
			j++;
		for (size_t x = i; x <= j; x++) {
			int64_t b = all.v[x].b;
			int widest = 1;
			for (size_t y = i; y <= j; y++)
				widest &= all.v[y].b < b || (all.v[y].b == b && y >= x);
			if (b <= reach || !widest)
				ddl_ivset_push(&m->nested, all.v[x].a, b, 0);
		}
		for (size_t x = i; x <= j; x++)
			if (all.v[x].b > reach)
				reach = all.v[x].b;
		i = j;
	}
	free(all.v);
	ddl_ivset_sort(&m->nested);
	m->nomem |= m->nested.nomem;
}

static int ddl_is_nested(const struct ddl_stallmap *m, int64_t a, int64_t b)
{
	size_t lo = 0, hi = m->nested.n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->nested.v[mid].a < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < m->nested.n && m->nested.v[i].a == a; i++)
		if (m->nested.v[i].b == b)
			return 1;
	return 0;
}

/* As breakdown.c: the windows when the process's traffic is in flight
 * (flight.c), less the training thread's waits for its next batch, which
 * are data stall. */
static void ddl_stallmap_host(const struct ddl_proc *p, const struct ddl_ivset *fl,
                              struct ddl_stallmap *m)
{
	struct ddl_ivset data = {0};
	const struct ddl_ivset none = {0}, *fly = fl ? fl : &none;
	for (size_t k = 0; k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			if (e->kind == DDL_EV_PY_PHASE && e->fd == DDL_PHASE_DATA_WAIT && e->tid < t->nthreads &&
			    t->threads[e->tid].tid == m->train_tid) {
				int64_t a = ddl_trace_real_ns(t, e->start);
				ddl_ivset_push(&data, a, a + ddl_trace_dur_ns(t, e), 0);
			}
		}
	}
	ddl_ivset_merge(&data, 0);
	m->nomem |= data.nomem;
	if (ddl_ivset_minus(fly, &data, &m->traffic) < 0) { /* both merged: flights come so */
		ddl_ivset_free(&m->traffic);
		m->nomem = 1;
	}
	ddl_ivset_free(&data);
}

static void ddl_stallmap_device(const struct ddl_report *r, const struct ddl_proc *p,
                                struct ddl_stallmap *m)
{
	struct ddl_ivset busy = {0}, net = {0}, ic = {0}, tmp = {0};
	for (size_t k = 0; k < p->ntr; k++) {
		const struct ddl_trace *t = p->tr[k];
		struct ddl_devcalls dc;
		if (ddl_devcalls_build(r, t, &dc) < 0)
			m->nomem = 1; /* spans unknown, counted as network */
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			if (ddl_event_class(e->kind) != DDL_CLASS_DEVICE)
				continue;
			struct ddl_devinfo d;
			ddl_device_info(t, i, &dc, &d);
			int64_t a = ddl_trace_real_ns(t, e->start), b = a + ddl_trace_dur_ns(t, e);
			if (d.part == DDL_DEV_INTER)
				ddl_ivset_add(&net, a, b, 1);
			else if (d.part == DDL_DEV_INTRA)
				ddl_ivset_add(&ic, a, b, 0);
			else
				ddl_ivset_add(&busy, a, b, 0);
		}
		ddl_devcalls_free(&dc);
	}
	ddl_ivset_merge(&busy, 0);
	ddl_ivset_merge(&net, 0);
	ddl_ivset_merge(&ic, 0);
	m->nomem |= busy.nomem || net.nomem || ic.nomem;
	if (ddl_ivset_minus(&net, &busy, &m->traffic) < 0) /* network, where nothing computes */
		m->nomem = 1;
	for (size_t i = 0; i < net.n; i++)
		ddl_ivset_push(&busy, net.v[i].a, net.v[i].b, 0);
	ddl_ivset_merge(&busy, 0);
	if (ddl_ivset_minus(&ic, &busy, &tmp) < 0 || busy.nomem) /* interconnect, where neither does */
		m->nomem = 1;
	m->ic = tmp;
	free(busy.v);
	free(net.v);
	free(ic.v);
}

/* The stall inside one call [a,b) on thread TID: network and interconnect ns. */
static void ddl_call_stall(const struct ddl_proc *p, const struct ddl_stallmap *m, uint32_t tid,
                           int cls, int64_t a, int64_t b, int64_t *net, int64_t *ic)
{
	if (!p->niter || tid != m->train_tid || ddl_is_nested(m, a, b))
		return; /* only the training thread stalls, once in each instant */
	if (!m->device && !ddl_class_blocks(cls))
		return; /* as breakdown.c: the calls it blocks in */
	size_t lo = 0, hi = p->niter; /* the first iteration ending after a */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->iter[mid].end_ns <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = lo; k < p->niter && p->iter[k].start_ns < b; k++) {
		int64_t x = p->iter[k].start_ns > a ? p->iter[k].start_ns : a;
		int64_t y = p->iter[k].end_ns < b ? p->iter[k].end_ns : b;
		if (y <= x)
			continue;
		if (m->device) {
			int64_t dummy = 0;
			ddl_win_cover(&m->traffic, x, y, net, &dummy);
			ddl_win_cover(&m->ic, x, y, &dummy, ic);
		} else {
			ddl_win_cover(&m->traffic, x, y, net, ic);
		}
	}
}

/* ---- symbols ---- */

struct ddl_sym {
	uint64_t addr, size;
	const char *name;
};

struct ddl_symtab {
	char *path;
	char build_id[64];     /* of the file read */
	int loaded;            /* 1 read (syms may be 0), -1 unreadable */
	struct ddl_sym *syms;
	size_t nsyms;
	void *map[2];          /* the module and its debug file, mapped */
	size_t mapsz[2];
	int nomem;             /* memory ran out reading its symbols: some left out */
};

static int ddl_sym_cmp(const void *x, const void *y)
{
	const struct ddl_sym *p = x, *q = y;
	return p->addr < q->addr ? -1 : p->addr > q->addr;
}

/* The ELF header of a whole file at M, when it is one we can read (64-bit, our byte order). */
static const Elf64_Ehdr *ddl_elf(const unsigned char *m, size_t n)
{
	if (n < sizeof(Elf64_Ehdr) || memcmp(m, ELFMAG, SELFMAG) || m[EI_CLASS] != ELFCLASS64)
		return NULL;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (m[EI_DATA] != ELFDATA2LSB)
		return NULL;
#else
	if (m[EI_DATA] != ELFDATA2MSB)
		return NULL;
#endif
	const Elf64_Ehdr *h = (const Elf64_Ehdr *)m;
	if (h->e_shentsize != sizeof(Elf64_Shdr) || h->e_shoff > n ||
	    (n - h->e_shoff) / sizeof(Elf64_Shdr) < h->e_shnum)
		return NULL;
	return h;
}

static const Elf64_Shdr *ddl_shdr(const unsigned char *m, const Elf64_Ehdr *h, size_t i)
{
	return (const Elf64_Shdr *)(m + h->e_shoff) + i;
}

static int ddl_sec_ok(const Elf64_Shdr *s, size_t n)
{
	return s->sh_type != SHT_NOBITS && s->sh_offset <= n && s->sh_size <= n - s->sh_offset;
}

/* The GNU build id of the file, as hex, or "". */
static void ddl_elf_build_id(const unsigned char *m, size_t n, const Elf64_Ehdr *h, char *out,
                             size_t cap)
{
	out[0] = 0;
	for (size_t i = 0; i < h->e_shnum; i++) {
		const Elf64_Shdr *s = ddl_shdr(m, h, i);
		if (s->sh_type != SHT_NOTE || !ddl_sec_ok(s, n))
			continue;
		const unsigned char *p = m + s->sh_offset;
		size_t off = 0;
		while (off + sizeof(Elf64_Nhdr) <= s->sh_size) {
			const Elf64_Nhdr *nh = (const Elf64_Nhdr *)(p + off);
			size_t nsz = ((size_t)nh->n_namesz + 3) & ~(size_t)3;
			size_t dsz = ((size_t)nh->n_descsz + 3) & ~(size_t)3;
			if (nsz > s->sh_size || dsz > s->sh_size ||
			    off + sizeof *nh + nsz + dsz > s->sh_size)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(p + off + sizeof *nh, "GNU", 4) && nh->n_descsz * 2 < cap) {
				const unsigned char *d = p + off + sizeof *nh + nsz;
				for (size_t k = 0; k < nh->n_descsz; k++)
					snprintf(out + 2 * k, cap - 2 * k, "%02x", d[k]);
				return;
			}
			off += sizeof *nh + nsz + dsz;
		}
	}
}

/* Adds the functions of the symbol table of TYPE in the file at M to ST; how many. */
static size_t ddl_elf_funcs(struct ddl_symtab *st, const unsigned char *m, size_t n,
                            const Elf64_Ehdr *h, unsigned type)
{
	size_t added = 0;
	for (size_t i = 0; i < h->e_shnum; i++) {
		const Elf64_Shdr *s = ddl_shdr(m, h, i);
		if (s->sh_type != type || !ddl_sec_ok(s, n) || s->sh_entsize != sizeof(Elf64_Sym) ||
		    s->sh_link >= h->e_shnum)
			continue;
		const Elf64_Shdr *strs = ddl_shdr(m, h, s->sh_link);
		if (!ddl_sec_ok(strs, n) || !strs->sh_size)
			continue;
		const char *str = (const char *)m + strs->sh_offset;
		if (str[strs->sh_size - 1])
			continue; /* names must end inside their table */
		const Elf64_Sym *sym = (const Elf64_Sym *)(m + s->sh_offset);
		size_t count = s->sh_size / sizeof *sym;
		struct ddl_sym *q = realloc(st->syms, (st->nsyms + count) * sizeof *q);
		if (!q) {
			st->nomem = 1;
			return added;
		}
		st->syms = q;
		for (size_t k = 0; k < count; k++) {
			unsigned t = ELF64_ST_TYPE(sym[k].st_info);
			if ((t != STT_FUNC && t != STT_GNU_IFUNC) || sym[k].st_shndx == SHN_UNDEF ||
			    !sym[k].st_value || sym[k].st_name >= strs->sh_size || !str[sym[k].st_name])
				continue;
			st->syms[st->nsyms++] = (struct ddl_sym){sym[k].st_value, sym[k].st_size,
			                                         str + sym[k].st_name};
			added++;
		}
	}
	return added;
}

/* The most of a module mapped to read its symbols: larger is not an ELF
 * file a process loaded (CUDA's largest libraries are about 1 GB). */
#define DDL_MODULE_MAX (16ull << 30)

/*
 * Maps the file PATH that a trace names (a module, its debug file): a
 * regular file only, opened without blocking (a FIFO or a device of that
 * name must not stall the report), of at most DDL_MODULE_MAX bytes.
 */
static const unsigned char *ddl_map(const char *path, size_t *n)
{
	struct stat pre;
	if (stat(path, &pre) != 0 || !S_ISREG(pre.st_mode))
		return NULL; /* not even opened: opening a device can do things */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat sb;
	void *m = MAP_FAILED;
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 &&
	    (unsigned long long)sb.st_size <= DDL_MODULE_MAX)
		m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return NULL;
	*n = (size_t)sb.st_size;
	return m;
}

/*
 * Reads the functions of module PATH: its .symtab, else its debug file's
 * (found by build id), else its .dynsym. -1 when the file cannot be read;
 * then, or when WANT (the build id recorded) is not the file's, no names.
 */
static void ddl_symtab_load(struct ddl_symtab *st, const char *want, int *stale)
{
	st->loaded = -1;
	size_t n;
	const unsigned char *m = ddl_map(st->path, &n);
	if (!m)
		return;
	st->map[0] = (void *)m;
	st->mapsz[0] = n;
	const Elf64_Ehdr *h = ddl_elf(m, n);
	if (!h)
		return;
	ddl_elf_build_id(m, n, h, st->build_id, sizeof st->build_id);
	if (want && want[0] && st->build_id[0] && strcmp(want, st->build_id)) {
		*stale = 1; /* rebuilt since the run: its addresses mean other things now */
		return;
	}
	st->loaded = 1;
	if (!ddl_elf_funcs(st, m, n, h, SHT_SYMTAB) && st->build_id[0]) {
		char dbg[200];
		snprintf(dbg, sizeof dbg, "/usr/lib/debug/.build-id/%.2s/%s.debug", st->build_id,
		         st->build_id + 2);
		size_t dn;
		const unsigned char *d = ddl_map(dbg, &dn);
		const Elf64_Ehdr *dh = d ? ddl_elf(d, dn) : NULL;
		if (d) {
			st->map[1] = (void *)d;
			st->mapsz[1] = dn;
		}
		if (dh)
			ddl_elf_funcs(st, d, dn, dh, SHT_SYMTAB);
	}
	if (!st->nsyms)
		ddl_elf_funcs(st, m, n, h, SHT_DYNSYM);
	if (st->nsyms)
		qsort(st->syms, st->nsyms, sizeof *st->syms, ddl_sym_cmp);
}

/* The function holding ADDR, or NULL. */
static const char *ddl_symtab_find(const struct ddl_symtab *st, uint64_t addr)
{
	size_t lo = 0, hi = st->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (st->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* the nearest symbols at or below; prefer one whose size covers addr */
	for (size_t i = lo; i > 0 && i + 8 > lo; i--) {
		const struct ddl_sym *s = &st->syms[i - 1];
		if (addr < s->addr + s->size)
			return s->name;
	}
	if (lo > 0 && st->syms[lo - 1].size == 0)
		return st->syms[lo - 1].name;
	return NULL;
}

/* ---- the report's part ---- */

struct ddl_csmem {
	struct ddl_cstab tab;
	struct ddl_symtab *syms;
	size_t nsyms;
};

/* The symbols of module PATH, read on first use; NULL without memory. */
static struct ddl_symtab *ddl_symtab_get(struct ddl_csmem *mem, const char *path, const char *want,
                                         int *stale)
{
	for (size_t i = 0; i < mem->nsyms; i++)
		if (!strcmp(mem->syms[i].path, path))
			return &mem->syms[i];
	struct ddl_symtab *q = realloc(mem->syms, (mem->nsyms + 1) * sizeof *q);
	if (!q)
		return NULL;
	mem->syms = q;
	struct ddl_symtab *st = &q[mem->nsyms];
	memset(st, 0, sizeof *st);
	st->path = strdup(path);
	if (!st->path)
		return NULL;
	mem->nsyms++;
	ddl_symtab_load(st, want, stale);
	return st;
}

static int ddl_cs_rank(const void *x, const void *y)
{
	const struct ddl_cs *p = x, *q = y;
	double a = p->net_s + p->ic_s, b = q->net_s + q->ic_s;
	if (a != b)
		return a < b ? 1 : -1;
	if (p->time_s != q->time_s)
		return p->time_s < q->time_s ? 1 : -1;
	return strcmp(p->key, q->key);
}

/* The report's call-site memory, made on first use; NULL without memory. */
static struct ddl_csmem *ddl_csmem_of(struct ddl_report *r)
{
	if (!r->callsites_mem)
		r->callsites_mem = calloc(1, sizeof(struct ddl_csmem));
	return r->callsites_mem;
}

/* Names FR's function from its module's symbols. */
static void ddl_frame_name(struct ddl_report *r, struct ddl_csmem *mem, struct ddl_frame *fr, const char *bid)
{
	if (!fr->module)
		return;
	struct ddl_symtab *st = ddl_symtab_get(mem, fr->module, bid, &r->symbols_stale);
	if (!st || st->nomem)
		r->incomplete = 1; /* functions left unnamed */
	if (st && st->loaded > 0)
		fr->function = ddl_symtab_find(st, fr->offset ? fr->offset - 1 : 0);
}

int ddl_report_stack(struct ddl_report *r, const struct ddl_trace *t, uint32_t id, struct ddl_frame **frames,
                     size_t *n)
{
	*frames = NULL;
	*n = 0;
	if (!id || id >= t->nstacks || !t->stacks[id].text)
		return 0;
	struct ddl_csmem *mem = ddl_csmem_of(r);
	size_t cap = 1;
	for (const char *s = t->stacks[id].text; *s; s++)
		cap += *s == '\n';
	struct ddl_frame *f = mem ? calloc(cap, sizeof *f) : NULL;
	char **bids = f ? calloc(cap, sizeof *bids) : NULL;
	if (!bids) {
		free(f);
		return -1;
	}
	int rc = ddl_frames_read(t, id, f, bids, cap, n);
	for (size_t k = 0; k < *n; k++) {
		ddl_frame_name(r, mem, &f[k], bids[k] ? bids[k] : "");
		free(bids[k]);
	}
	free(bids);
	*frames = f;
	return rc;
}

void ddl_report_callsites(struct ddl_report *r)
{
	struct ddl_csmem *mem = ddl_csmem_of(r);
	if (!mem) {
		r->incomplete = 1; /* no call sites */
		return;
	}
	struct ddl_ivset *fl = NULL;
	int have_fl = 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		struct ddl_stallmap m = {0};
		int have_stacks = 0;
		for (size_t k = 0; k < p->ntr && !have_stacks; k++) {
			const char *bt = ddl_trace_meta(p->tr[k], "backtrace");
			int d = bt ? atoi(bt) : 0;
			if (d > r->backtrace)
				r->backtrace = d;
			if (bt && !d && !r->backtrace_off)
				r->backtrace_off = bt;
			have_stacks = p->tr[k]->nstacks > 0;
		}
		if (!have_stacks)
			continue;
		ddl_proc_hold(p);
		if (p->niter) {
			m.device = p->gpu_breakdown;
			m.train_tid = p->iter[0].tid ? p->iter[0].tid : p->pid;
			ddl_stallmap_nested(p, &m);
			if (m.device) {
				ddl_stallmap_device(r, p, &m);
			} else {
				if (!have_fl)
					have_fl = ddl_report_flights(r, &fl) == 0 ? 1 : -1;
				ddl_stallmap_host(p, fl ? &fl[i] : NULL, &m);
				m.nomem |= have_fl < 0; /* no traffic windows: no stall */
			}
		}
		for (size_t k = 0; k < p->ntr; k++) {
			const struct ddl_trace *t = p->tr[k];
			/* stack id -> entry, filled as met */
			size_t *map = calloc(t->nstacks ? t->nstacks : 1, sizeof *map);
			if (!map) {
				m.nomem = 1;
				break;
			}
			for (size_t e = 0; e < t->nev; e++) {
				uint32_t id = ddl_event_stack(t, e);
				if (!id || id >= t->nstacks)
					continue;
				if (!map[id]) {
					char *key = ddl_stack_key(t, id, &m.nomem);
					int fresh;
					struct ddl_cs *c = key ? ddl_cs_get(&mem->tab, key, &fresh) : NULL;
					if (!c) {
						m.nomem |= key != NULL;
						free(key);
						continue;
					}
					if (fresh && ddl_cs_frames(c, t, id) < 0)
						m.nomem = 1;
					map[id] = (size_t)(c - mem->tab.v) + 1;
				}
				struct ddl_cs *c = &mem->tab.v[map[id] - 1];
				const struct ddl_event *ev = &t->ev[e];
				int64_t a = ddl_trace_real_ns(t, ev->start), b = a + ddl_trace_dur_ns(t, ev);
				uint32_t tid = ev->tid < t->nthreads ? t->threads[ev->tid].tid : 0;
				int64_t net = 0, ic = 0;
				ddl_call_stall(p, &m, tid, ddl_event_class(ev->kind), a, b, &net, &ic);
				c->time_s += (double)(b - a) / 1e9;
				c->net_s += (double)net / 1e9;
				c->ic_s += (double)ic / 1e9;
				c->calls++;
				if (ev->kind < DDL_EV_COUNT)
					c->kinds[ev->kind]++;
			}
			free(map);
		}
		ddl_proc_release(p);
		free(m.traffic.v);
		free(m.ic.v);
		free(m.nested.v);
		if (m.nomem)
			r->incomplete = 1; /* call sites, or their stall, left out */
	}
	ddl_flights_free(fl, r->nprocs);
	struct ddl_cstab *tab = &mem->tab;
	r->ncallsites_all = tab->n;
	if (!tab->n)
		return;
	qsort(tab->v, tab->n, sizeof *tab->v, ddl_cs_rank);
	free(tab->slot); /* the order changed: no more lookups */
	tab->slot = NULL;
	tab->nslot = 0;
	size_t top = tab->n < DDL_CALLSITES_TOP ? tab->n : DDL_CALLSITES_TOP;
	r->callsites = calloc(top, sizeof *r->callsites);
	if (!r->callsites) {
		r->incomplete = 1;
		return;
	}
	for (size_t i = 0; i < top; i++) {
		struct ddl_cs *c = &tab->v[i];
		for (size_t f = 0; f < c->nframes; f++)
			ddl_frame_name(r, mem, &c->frames[f], c->build_ids[f]);
		unsigned best = 0;
		for (unsigned k = 1; k < DDL_EV_COUNT; k++)
			if (c->kinds[k] > c->kinds[best])
				best = k;
		struct ddl_callsite *o = &r->callsites[i];
		o->network_s = c->net_s;
		o->interconnect_s = c->ic_s;
		o->stall_s = c->net_s + c->ic_s;
		o->time_s = c->time_s;
		o->calls = c->calls;
		o->call = ddl_event_name(best);
		o->frames = c->frames;
		o->nframes = c->nframes;
	}
	r->ncallsites = top;
}

void ddl_callsites_free(struct ddl_report *r)
{
	struct ddl_csmem *mem = r->callsites_mem;
	if (mem) {
		for (size_t i = 0; i < mem->tab.n; i++) {
			struct ddl_cs *c = &mem->tab.v[i];
			for (size_t f = 0; f < c->nframes; f++) {
				free((char *)c->frames[f].module);
				free(c->build_ids[f]);
			}
			free(c->frames);
			free(c->build_ids);
			free(c->key);
		}
		free(mem->tab.v);
		free(mem->tab.slot);
		for (size_t i = 0; i < mem->nsyms; i++) {
			struct ddl_symtab *st = &mem->syms[i];
			for (int k = 0; k < 2; k++)
				if (st->map[k])
					munmap(st->map[k], st->mapsz[k]);
			free(st->syms);
			free(st->path);
		}
		free(mem->syms);
		free(mem);
	}
	free(r->callsites);
	r->callsites = NULL;
	r->callsites_mem = NULL;
	r->ncallsites = 0;
}
