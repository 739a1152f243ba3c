/*
 * NVTX injection: the ranges and marks a program (or PyTorch, through
 * torch.cuda.nvtx and emit_nvtx) makes with NVIDIA's Tools Extension,
 * recorded as marker events, so ddlprof-report cuts iterations from them
 * exactly as from the marker API of <ddlprof/ddlprof.h>.
 *
 * NVTX 3 is header-only: every library built with it holds its own table
 * of implementation pointers, which start as "initialise, then call again".
 * On its first call, each such instance dlopens the tool named by
 * NVTX_INJECTION64_PATH (the launcher points it at this library) and calls
 * InitializeInjectionNvtx2 with its export-table getter; we write our
 * functions into the slots of its CORE and CORE2 modules, and NVTX makes
 * every slot we leave empty a no-op. Returning 0 instead leaves all of
 * NVTX a no-op: what we do when profiling or the "nvtx" family is off.
 *
 * Push, pop and marks become RANGE_PUSH, RANGE_POP and MARK events on the
 * calling thread. Start/end ranges are not nested and may end on another
 * thread: they become RANGE_START on the starting thread and RANGE_END on
 * the ending one, with the range's number in fd; the nvtxRangeId_t we hand
 * out carries the name id in its high 32 bits and that number in the low
 * ones, so ending a range needs no table. Names in a domain other than the
 * default one are recorded as "domain:name". Wide strings become UTF-8.
 * Domains live in a fixed table and registered strings are name ids, so
 * neither is ever freed and no handle a program holds can dangle.
 *
 * Push and pop return NVTX_NO_PUSH_POP_TRACKING, as NVTX without a tool
 * does, so a program sees the same values with and without the profiler.
 */
#if defined(DDL_HAVE_CUDA) && __has_include(<nvtx3/nvToolsExt.h>)
#define NVTX_NO_IMPL /* the types only: no loader of our own */
#include <nvtx3/nvToolsExt.h>

#include <dlfcn.h>
#include <string.h>

#include "ddl.h"

#define DDL_NVTX_NAME_MAX 255 /* as ddl_name_intern keeps */
#define DDL_NVTX_DOMAINS 256
#define DDL_NVTX_DOMAIN_MAX 64 /* bytes of a domain name kept, with the ':' */
/*
 * The family for calls that record no event (names, registered strings):
 * on whenever profiling is, like DDL_FAM_MARK, but not that constant, so
 * ddl_thread_enter does not sample counters (--papi) for a marker that
 * never comes.
 */
#define DDL_NVTX_NO_EVENT (~0u)

struct nvtxDomainRegistration_st {
	char prefix[DDL_NVTX_DOMAIN_MAX + 1]; /* "name:" */
	size_t len;
	_Atomic int ready;
};

/* DDL_NVTX_DOMAINS of them, mapped on the first domain made (ddl_lazy) */
static void *_Atomic ddl_domains_map;
static _Atomic unsigned ddl_ndomains;
static _Atomic uint32_t ddl_range_seq;

/* Backs LEN off to the start of a UTF-8 sequence, so a cut never splits one. */
static size_t ddl_utf8_cut(const char *s, size_t len)
{
	while (len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80)
		len--;
	return len;
}

/* Appends S to BUF at N, up to DDL_NVTX_NAME_MAX; returns the new length. */
static size_t ddl_nvtx_cat(char *buf, size_t n, const char *s)
{
	if (!s)
		return n;
	size_t k = strnlen(s, DDL_NVTX_NAME_MAX + 1);
	if (n + k > DDL_NVTX_NAME_MAX) {
		k = DDL_NVTX_NAME_MAX - n;
		k = ddl_utf8_cut(s, k);
	}
	memcpy(buf + n, s, k);
	return n + k;
}

/*
 * Appends the wide string W to BUF at N as UTF-8, whole code points only,
 * up to DDL_NVTX_NAME_MAX; what is not a Unicode scalar value becomes
 * U+FFFD. Returns the new length.
 */
static size_t ddl_nvtx_wcat(char *buf, size_t n, const wchar_t *w)
{
	for (; w && *w; w++) {
		uint32_t c = (uint32_t)*w;
		if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			c = 0xfffd;
		unsigned char u[4];
		size_t k;
		if (c < 0x80) {
			u[0] = (unsigned char)c;
			k = 1;
		} else if (c < 0x800) {
			u[0] = (unsigned char)(0xc0 | c >> 6);
			u[1] = (unsigned char)(0x80 | (c & 0x3f));
			k = 2;
		} else if (c < 0x10000) {
			u[0] = (unsigned char)(0xe0 | c >> 12);
			u[1] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
			u[2] = (unsigned char)(0x80 | (c & 0x3f));
			k = 3;
		} else {
			u[0] = (unsigned char)(0xf0 | c >> 18);
			u[1] = (unsigned char)(0x80 | (c >> 12 & 0x3f));
			u[2] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
			u[3] = (unsigned char)(0x80 | (c & 0x3f));
			k = 4;
		}
		if (n + k > DDL_NVTX_NAME_MAX)
			break;
		memcpy(buf + n, u, k);
		n += k;
	}
	return n;
}

/*
 * The name id of a message in domain D (NULL: the default domain, no
 * prefix); a registered string is already one. The caller holds its ring
 * busy: interning a new name takes the string lock. 0 when the table is full.
 */
static uint32_t ddl_nvtx_name(const struct nvtxDomainRegistration_st *d, int type,
                              nvtxMessageValue_t m)
{
	char buf[DDL_NVTX_NAME_MAX + 1];
	size_t n = 0;
	if (type == NVTX_MESSAGE_TYPE_REGISTERED)
		return (uint32_t)(uintptr_t)m.registered;
	if (!d && type == NVTX_MESSAGE_TYPE_ASCII && m.ascii)
		return ddl_name_intern(m.ascii); /* the common case: no copy */
	if (d) {
		memcpy(buf, d->prefix, d->len);
		n = d->len;
	}
	if (type == NVTX_MESSAGE_TYPE_ASCII)
		n = ddl_nvtx_cat(buf, n, m.ascii);
	else if (type == NVTX_MESSAGE_TYPE_UNICODE)
		n = ddl_nvtx_wcat(buf, n, m.unicode);
	buf[n] = 0;
	return ddl_name_intern(buf);
}

/* An attributes structure too old or too small to hold a message has none. */
static int ddl_nvtx_has_message(const nvtxEventAttributes_t *a)
{
	return a && a->size >= offsetof(nvtxEventAttributes_t, message) + sizeof a->message;
}

/*
 * Records one marker event of KIND named by (TYPE, M) in domain D, with FD,
 * and sets *NAME to the name's id (0 when the name table is full). Returns
 * 0 when nothing was recorded: profiling off, our own thread, or a signal
 * handler that interrupted us.
 */
static int ddl_nvtx_put(unsigned kind, const struct nvtxDomainRegistration_st *d, int type,
                        nvtxMessageValue_t m, int32_t fd, uint32_t *name)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_MARK);
	if (!t)
		return 0;
	uint64_t now = ddl_clock_now();
	t->busy = 1;
	uint32_t id = ddl_nvtx_name(d, type, m);
	t->busy = 0;
	ddl_ring_put(t, kind, 0, now, now, id, fd, 0);
	*name = id;
	return 1;
}

static void ddl_nvtx_put_attr(unsigned kind, const struct nvtxDomainRegistration_st *d,
                              const nvtxEventAttributes_t *a)
{
	nvtxMessageValue_t none = {0};
	uint32_t id;
	if (ddl_nvtx_has_message(a))
		ddl_nvtx_put(kind, d, a->messageType, a->message, -1, &id);
	else
		ddl_nvtx_put(kind, d, NVTX_MESSAGE_UNKNOWN, none, -1, &id);
}

static void ddl_nvtx_put_str(unsigned kind, int type, nvtxMessageValue_t m)
{
	uint32_t id;
	ddl_nvtx_put(kind, NULL, type, m, -1, &id);
}

static void ddl_nvtx_pop(void)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_MARK);
	if (!t)
		return;
	uint64_t now = ddl_clock_now();
	ddl_ring_put(t, DDL_EV_RANGE_POP, 0, now, now, 0, -1, 0);
}

/*
 * Start/end ranges. The id is the name id << 32 | a process-wide number in
 * 1..2^31-1; 0 (what NVTX without a tool returns) when nothing was recorded,
 * and ending range 0 records nothing.
 */
static nvtxRangeId_t ddl_nvtx_start(const struct nvtxDomainRegistration_st *d, int type,
                                    nvtxMessageValue_t m)
{
	uint32_t seq = atomic_fetch_add_explicit(&ddl_range_seq, 1, memory_order_relaxed) % 0x7fffffffu + 1;
	uint32_t id;
	if (!ddl_nvtx_put(DDL_EV_RANGE_START, d, type, m, (int32_t)seq, &id))
		return 0;
	return (nvtxRangeId_t)id << 32 | seq;
}

static nvtxRangeId_t ddl_nvtx_start_attr(const struct nvtxDomainRegistration_st *d,
                                         const nvtxEventAttributes_t *a)
{
	nvtxMessageValue_t none = {0};
	if (ddl_nvtx_has_message(a))
		return ddl_nvtx_start(d, a->messageType, a->message);
	return ddl_nvtx_start(d, NVTX_MESSAGE_UNKNOWN, none);
}

static void ddl_nvtx_end(nvtxRangeId_t r)
{
	uint32_t seq = (uint32_t)r;
	if (!seq || seq > 0x7fffffffu)
		return; /* not one of ours */
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_MARK);
	if (!t)
		return;
	uint64_t now = ddl_clock_now();
	ddl_ring_put(t, DDL_EV_RANGE_END, 0, now, now, (int64_t)(r >> 32), (int32_t)seq, 0);
}

/* ---- the core module: default domain ---- */

static void ddl_nvtxMarkEx(const nvtxEventAttributes_t *a)
{
	ddl_nvtx_put_attr(DDL_EV_MARK, NULL, a);
}

static void ddl_nvtxMarkA(const char *s)
{
	ddl_nvtx_put_str(DDL_EV_MARK, NVTX_MESSAGE_TYPE_ASCII, (nvtxMessageValue_t){.ascii = s});
}

static void ddl_nvtxMarkW(const wchar_t *s)
{
	ddl_nvtx_put_str(DDL_EV_MARK, NVTX_MESSAGE_TYPE_UNICODE, (nvtxMessageValue_t){.unicode = s});
}

static nvtxRangeId_t ddl_nvtxRangeStartEx(const nvtxEventAttributes_t *a)
{
	return ddl_nvtx_start_attr(NULL, a);
}

static nvtxRangeId_t ddl_nvtxRangeStartA(const char *s)
{
	return ddl_nvtx_start(NULL, NVTX_MESSAGE_TYPE_ASCII, (nvtxMessageValue_t){.ascii = s});
}

static nvtxRangeId_t ddl_nvtxRangeStartW(const wchar_t *s)
{
	return ddl_nvtx_start(NULL, NVTX_MESSAGE_TYPE_UNICODE, (nvtxMessageValue_t){.unicode = s});
}

static void ddl_nvtxRangeEnd(nvtxRangeId_t r)
{
	ddl_nvtx_end(r);
}

static int ddl_nvtxRangePushEx(const nvtxEventAttributes_t *a)
{
	ddl_nvtx_put_attr(DDL_EV_RANGE_PUSH, NULL, a);
	return NVTX_NO_PUSH_POP_TRACKING;
}

static int ddl_nvtxRangePushA(const char *s)
{
	ddl_nvtx_put_str(DDL_EV_RANGE_PUSH, NVTX_MESSAGE_TYPE_ASCII, (nvtxMessageValue_t){.ascii = s});
	return NVTX_NO_PUSH_POP_TRACKING;
}

static int ddl_nvtxRangePushW(const wchar_t *s)
{
	ddl_nvtx_put_str(DDL_EV_RANGE_PUSH, NVTX_MESSAGE_TYPE_UNICODE, (nvtxMessageValue_t){.unicode = s});
	return NVTX_NO_PUSH_POP_TRACKING;
}

static int ddl_nvtxRangePop(void)
{
	ddl_nvtx_pop();
	return NVTX_NO_PUSH_POP_TRACKING;
}

/*
 * Thread names: a fact about the process ("nvtx_thread.TID=NAME" in the
 * trace's metadata), not an event; the thread's own name in the trace is
 * still the kernel's. Rare calls: the formatting here is no hot path.
 */
static void ddl_nvtx_thread_name(uint32_t tid, const char *name)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_NVTX_NO_EVENT);
	if (!t || !name)
		return;
	int saved = errno;
	char key[40];
	snprintf(key, sizeof key, "nvtx_thread.%u", tid);
	t->busy = 1;
	ddl_meta(key, name);
	t->busy = 0;
	errno = saved;
}

static void ddl_nvtxNameOsThreadA(uint32_t tid, const char *name)
{
	ddl_nvtx_thread_name(tid, name);
}

static void ddl_nvtxNameOsThreadW(uint32_t tid, const wchar_t *name)
{
	char buf[DDL_NVTX_NAME_MAX + 1];
	size_t n = ddl_nvtx_wcat(buf, 0, name);
	buf[n] = 0;
	ddl_nvtx_thread_name(tid, name ? buf : NULL);
}

/* ---- the core2 module: domains and registered strings ---- */

static void ddl_nvtxDomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	ddl_nvtx_put_attr(DDL_EV_MARK, d, a);
}

static nvtxRangeId_t ddl_nvtxDomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	return ddl_nvtx_start_attr(d, a);
}

static void ddl_nvtxDomainRangeEnd(nvtxDomainHandle_t d, nvtxRangeId_t r)
{
	(void)d;
	ddl_nvtx_end(r);
}

static int ddl_nvtxDomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	ddl_nvtx_put_attr(DDL_EV_RANGE_PUSH, d, a);
	return NVTX_NO_PUSH_POP_TRACKING;
}

/* Every domain's ranges share the thread's one stack of ranges. */
static int ddl_nvtxDomainRangePop(nvtxDomainHandle_t d)
{
	(void)d;
	ddl_nvtx_pop();
	return NVTX_NO_PUSH_POP_TRACKING;
}

/*
 * A registered string is the id of its (domain-prefixed) name, interned
 * now; NULL when nothing can be recorded, which later events show unnamed.
 */
static nvtxStringHandle_t ddl_nvtx_register(nvtxDomainHandle_t d, int type, nvtxMessageValue_t m)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_NVTX_NO_EVENT);
	if (!t)
		return NULL;
	t->busy = 1;
	uint32_t id = ddl_nvtx_name(d, type, m);
	t->busy = 0;
	return (nvtxStringHandle_t)(uintptr_t)id;
}

static nvtxStringHandle_t ddl_nvtxDomainRegisterStringA(nvtxDomainHandle_t d, const char *s)
{
	return ddl_nvtx_register(d, NVTX_MESSAGE_TYPE_ASCII, (nvtxMessageValue_t){.ascii = s});
}

static nvtxStringHandle_t ddl_nvtxDomainRegisterStringW(nvtxDomainHandle_t d, const wchar_t *s)
{
	return ddl_nvtx_register(d, NVTX_MESSAGE_TYPE_UNICODE, (nvtxMessageValue_t){.unicode = s});
}

/*
 * A domain named NAME (UTF-8, at most DDL_NVTX_DOMAIN_MAX - 1 bytes kept):
 * the one already made under that name, else a new slot. NULL, which NVTX
 * takes for the default domain, when the table is full or NAME is NULL.
 */
static nvtxDomainHandle_t ddl_nvtx_domain(const char *name, size_t len)
{
	struct nvtxDomainRegistration_st *ddl_domains =
	    ddl_lazy(&ddl_domains_map, DDL_NVTX_DOMAINS * sizeof *ddl_domains);
	if (!ddl_domains)
		return NULL; /* the default domain */
	unsigned n = atomic_load(&ddl_ndomains);
	for (unsigned i = 0; i < n && i < DDL_NVTX_DOMAINS; i++) {
		struct nvtxDomainRegistration_st *d = &ddl_domains[i];
		if (atomic_load_explicit(&d->ready, memory_order_acquire) && d->len == len + 1 &&
		    !memcmp(d->prefix, name, len))
			return d;
	}
	unsigned i = atomic_fetch_add(&ddl_ndomains, 1);
	if (i >= DDL_NVTX_DOMAINS)
		return NULL;
	struct nvtxDomainRegistration_st *d = &ddl_domains[i];
	memcpy(d->prefix, name, len);
	d->prefix[len] = ':';
	d->prefix[len + 1] = 0;
	d->len = len + 1;
	atomic_store_explicit(&d->ready, 1, memory_order_release);
	return d;
}

static nvtxDomainHandle_t ddl_nvtxDomainCreateA(const char *name)
{
	if (!name)
		return NULL;
	size_t len = strnlen(name, DDL_NVTX_DOMAIN_MAX);
	if (len > DDL_NVTX_DOMAIN_MAX - 1)
		len = ddl_utf8_cut(name, DDL_NVTX_DOMAIN_MAX - 1);
	return ddl_nvtx_domain(name, len);
}

static nvtxDomainHandle_t ddl_nvtxDomainCreateW(const wchar_t *name)
{
	if (!name)
		return NULL;
	char buf[DDL_NVTX_NAME_MAX + 1];
	size_t len = ddl_nvtx_wcat(buf, 0, name);
	buf[len] = 0;
	if (len > DDL_NVTX_DOMAIN_MAX - 1)
		len = ddl_utf8_cut(buf, DDL_NVTX_DOMAIN_MAX - 1);
	return ddl_nvtx_domain(buf, len);
}

/* Kept: ranges of the domain may still end, and a new one of that name reuses it. */
static void ddl_nvtxDomainDestroy(nvtxDomainHandle_t d)
{
	(void)d;
}

/* ---- the entry point ---- */

struct ddl_nvtx_slot {
	unsigned cbid;
	NvtxFunctionPointer fn;
};

#define DDL_NVTX_SLOT(mod, name) {NVTX_CBID_##mod##_##name, (NvtxFunctionPointer)ddl_nvtx##name}

static const struct ddl_nvtx_slot ddl_nvtx_core[] = {
	DDL_NVTX_SLOT(CORE, MarkEx),        DDL_NVTX_SLOT(CORE, MarkA),
	DDL_NVTX_SLOT(CORE, MarkW),         DDL_NVTX_SLOT(CORE, RangeStartEx),
	DDL_NVTX_SLOT(CORE, RangeStartA),   DDL_NVTX_SLOT(CORE, RangeStartW),
	DDL_NVTX_SLOT(CORE, RangeEnd),      DDL_NVTX_SLOT(CORE, RangePushEx),
	DDL_NVTX_SLOT(CORE, RangePushA),    DDL_NVTX_SLOT(CORE, RangePushW),
	DDL_NVTX_SLOT(CORE, RangePop),      DDL_NVTX_SLOT(CORE, NameOsThreadA),
	DDL_NVTX_SLOT(CORE, NameOsThreadW),
};

static const struct ddl_nvtx_slot ddl_nvtx_core2[] = {
	DDL_NVTX_SLOT(CORE2, DomainMarkEx),          DDL_NVTX_SLOT(CORE2, DomainRangeStartEx),
	DDL_NVTX_SLOT(CORE2, DomainRangeEnd),        DDL_NVTX_SLOT(CORE2, DomainRangePushEx),
	DDL_NVTX_SLOT(CORE2, DomainRangePop),        DDL_NVTX_SLOT(CORE2, DomainRegisterStringA),
	DDL_NVTX_SLOT(CORE2, DomainRegisterStringW), DDL_NVTX_SLOT(CORE2, DomainCreateA),
	DDL_NVTX_SLOT(CORE2, DomainCreateW),         DDL_NVTX_SLOT(CORE2, DomainDestroy),
};

#undef DDL_NVTX_SLOT

/*
 * Writes our functions into the slots of module MOD that this NVTX instance
 * has (an older one may have fewer). Returns how many were written.
 */
static int ddl_nvtx_fill(const NvtxExportTableCallbacks *cb, NvtxCallbackModule mod,
                         const struct ddl_nvtx_slot *s, size_t n)
{
	NvtxFunctionTable table = NULL;
	unsigned int size = 0;
	if (!cb->GetModuleFunctionTable(mod, &table, &size) || !table)
		return 0;
	int done = 0;
	for (size_t i = 0; i < n; i++)
		if (s[i].cbid < size && table[s[i].cbid]) {
			*table[s[i].cbid] = s[i].fn;
			done++;
		}
	return done;
}

/*
 * NVTX unloads a tool whose entry point returns 0, and a library that
 * loaded us only for NVTX may unload itself; but once our constructor has
 * run, our writer thread may be running our code. Stay loaded for good.
 */
static void ddl_nvtx_pin(void)
{
	static _Atomic int pinned;
	Dl_info info;
	if (atomic_exchange(&pinned, 1))
		return;
	if (dladdr((void *)ddl_nvtx_pin, &info) && info.dli_fname)
		dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

/*
 * Called once by each NVTX instance in the process (every library built
 * with the NVTX 3 headers has its own) at its first NVTX call. Returns 1
 * when our functions are in place, 0 to leave that instance a no-op.
 */
DDL_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
	int saved = errno;
	ddl_nvtx_pin();
	if (!ddl_g.initialised)
		ddl_init();
	int ok = 0;
	const NvtxExportTableCallbacks *cb = get ? get(NVTX_ETID_CALLBACKS) : NULL;
	if (ddl_g.cfg.trace_nvtx && (atomic_load(&ddl_g.enabled) & DDL_FAM_MARK) && cb &&
	    cb->struct_size >= offsetof(NvtxExportTableCallbacks, GetModuleFunctionTable) +
	                           sizeof cb->GetModuleFunctionTable &&
	    cb->GetModuleFunctionTable) {
		ok = ddl_nvtx_fill(cb, NVTX_CB_MODULE_CORE, ddl_nvtx_core,
		                   sizeof ddl_nvtx_core / sizeof ddl_nvtx_core[0]) > 0;
		ddl_nvtx_fill(cb, NVTX_CB_MODULE_CORE2, ddl_nvtx_core2,
		              sizeof ddl_nvtx_core2 / sizeof ddl_nvtx_core2[0]);
	}
	const NvtxExportTableVersionInfo *vi = ok ? get(NVTX_ETID_VERSIONINFO) : NULL;
	if (vi && vi->struct_size >= offsetof(NvtxExportTableVersionInfo, SetInjectionNvtxVersion) +
	                                 sizeof vi->SetInjectionNvtxVersion &&
	    vi->SetInjectionNvtxVersion)
		vi->SetInjectionNvtxVersion(NVTX_VERSION);
	errno = saved;
	return ok;
}

#endif
