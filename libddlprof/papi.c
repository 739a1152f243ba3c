/*
 * Per-thread counters (ddlprof --papi EVENTS, DDLPROF_PAPI): CPU time,
 * context switches, page faults, and hardware counters where the machine
 * exposes them, read through PAPI, which is loaded with dlopen (no
 * link-time dependency). ddlprof-report turns them into means per
 * iteration.
 *
 * PAPI counts the thread that started an event set, so each thread counts
 * itself: its first marker call (range push or pop, mark, NVTX range; the
 * cold path) creates and starts its event set, and every marker call reads
 * it and appends one DDL_EV_COUNTER event per counter, a running total.
 * Iterations are cut at those same marker events, so a reading stands at
 * each iteration's ends. Threads that never mark are not counted. At
 * thread exit the event set is stopped and freed (its perf_event
 * descriptors closed).
 *
 * At start the constructor tries every event once: those PAPI refuses here
 * (hardware counters in most virtual machines) are written to the trace
 * with PAPI's reason (DDL_STR_COUNTER) and named on stderr, one line,
 * unless the launcher already said so (DDLPROF_PAPI_CHECKED); the others
 * are read. Without libpapi, one line and no counters. In a child of fork
 * the counters are off (the inherited event sets count the parent's
 * threads); after exec the new image starts its own.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "ddl.h"

#define DDL_PAPI_MAX 16  /* counters per thread */
#define DDL_PAPI_OK 0
#define DDL_PAPI_NULL (-1)
#define DDL_PAPI_EINVAL (-1)

int ddl_papi_on;

static struct {
	int (*library_init)(int);
	int (*thread_init)(unsigned long (*)(void));
	int (*create_eventset)(int *);
	int (*add_named_event)(int, const char *);
	int (*start)(int);
	int (*read)(int, long long *);
	int (*stop)(int, long long *);
	int (*cleanup_eventset)(int);
	int (*destroy_eventset)(int *);
	int (*unregister_thread)(void);
	int (*set_domain)(int);
	char *(*strerror)(int);
	int n;                           /* counters PAPI accepted */
	char name[DDL_PAPI_MAX][128];
	uint32_t id[DDL_PAPI_MAX];       /* their DDL_STR_COUNTER ids */
	pthread_key_t key;               /* stops a thread's event set at its exit */
} ddl_papi;

static __thread int ddl_papi_es = DDL_PAPI_NULL;
static __thread int ddl_papi_state; /* 0 not started, 1 counting, 2 off on this thread */

static unsigned long ddl_papi_self(void)
{
	return (unsigned long)pthread_self();
}

static const char *ddl_papi_why(int rc)
{
	const char *s = ddl_papi.strerror ? ddl_papi.strerror(rc) : NULL;
	return s ? s : "refused";
}

/* At thread exit: stop counting and close the event set's descriptors. */
static void ddl_papi_thread_end(void *p)
{
	(void)p;
	if (ddl_papi_state != 1)
		return;
	long long v[DDL_PAPI_MAX];
	ddl_papi.stop(ddl_papi_es, v);
	ddl_papi.cleanup_eventset(ddl_papi_es);
	ddl_papi.destroy_eventset(&ddl_papi_es);
	ddl_papi.unregister_thread();
	ddl_papi_state = 2;
}

/* The cold path: the thread's event set, created and started. 0 or -1. */
static int ddl_papi_thread_start(void)
{
	int es = DDL_PAPI_NULL;
	if (ddl_papi.create_eventset(&es) != DDL_PAPI_OK)
		return -1;
	for (int i = 0; i < ddl_papi.n; i++) {
		if (ddl_papi.add_named_event(es, ddl_papi.name[i]) != DDL_PAPI_OK) {
			ddl_papi.cleanup_eventset(es);
			ddl_papi.destroy_eventset(&es);
			return -1;
		}
	}
	if (ddl_papi.start(es) != DDL_PAPI_OK) {
		ddl_papi.cleanup_eventset(es);
		ddl_papi.destroy_eventset(&es);
		return -1;
	}
	ddl_papi_es = es;
	ddl_papi_state = 1;
	pthread_setspecific(ddl_papi.key, (void *)1);
	return 0;
}

void ddl_papi_sample(struct ddl_thread *t)
{
	if (ddl_papi_state == 2)
		return;
	int saved = errno;
	t->busy = 1; /* PAPI reads through read(): not a call of the program's */
	if (ddl_papi_state == 0 && ddl_papi_thread_start() < 0)
		ddl_papi_state = 2;
	long long v[DDL_PAPI_MAX];
	int rc = ddl_papi_state == 1 ? ddl_papi.read(ddl_papi_es, v) : -1;
	uint64_t now = ddl_clock_now();
	t->busy = 0;
	if (rc == DDL_PAPI_OK) {
		for (int i = 0; i < ddl_papi.n; i++)
			ddl_ring_put(t, DDL_EV_COUNTER, 0, now, now, (int64_t)v[i], (int)ddl_papi.id[i], 0);
	} else if (ddl_papi_state == 1) {
		ddl_papi_state = 2; /* the program closed our descriptors, say: stop on this thread */
	}
	errno = saved;
}

/* Loads libpapi and initialises it for threads; 0, or -1 with WHY set. */
static int ddl_papi_load(char *why, size_t cap)
{
	/* PAPI_library_init wants the version of the header the caller was built
	 * with (major.minor); we have no header, so we offer each in turn */
	static const struct {
		const char *name;
		int ver;
	} libs[] = {
		{"libpapi.so.7.2", 0x07020000}, {"libpapi.so.7.1", 0x07010000},
		{"libpapi.so.7.0", 0x07000000}, {"libpapi.so.6.0", 0x06000000},
		{"libpapi.so.5", 0x05070000},   {"libpapi.so", 0},
	};
	static const int vers[] = {0x07020000, 0x07010000, 0x07000000, 0x06000000, 0x05070000,
	                           0x05060000, 0x05050000};
	void *h = NULL;
	int ver = 0;
	for (size_t i = 0; i < sizeof libs / sizeof libs[0] && !h; i++) {
		h = dlopen(libs[i].name, RTLD_NOW | RTLD_LOCAL);
		ver = libs[i].ver;
	}
	if (!h) {
		snprintf(why, cap, "cannot load libpapi (libpapi.so.7.0 and others)");
		return -1;
	}
	const struct {
		void **slot;
		const char *name;
	} syms[] = {
		{(void **)&ddl_papi.library_init, "PAPI_library_init"},
		{(void **)&ddl_papi.thread_init, "PAPI_thread_init"},
		{(void **)&ddl_papi.create_eventset, "PAPI_create_eventset"},
		{(void **)&ddl_papi.add_named_event, "PAPI_add_named_event"},
		{(void **)&ddl_papi.start, "PAPI_start"},
		{(void **)&ddl_papi.read, "PAPI_read"},
		{(void **)&ddl_papi.stop, "PAPI_stop"},
		{(void **)&ddl_papi.cleanup_eventset, "PAPI_cleanup_eventset"},
		{(void **)&ddl_papi.destroy_eventset, "PAPI_destroy_eventset"},
		{(void **)&ddl_papi.unregister_thread, "PAPI_unregister_thread"},
	};
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
		if (!(*syms[i].slot = dlsym(h, syms[i].name))) {
			snprintf(why, cap, "libpapi has no %s", syms[i].name);
			return -1;
		}
	}
	*(void **)&ddl_papi.strerror = dlsym(h, "PAPI_strerror");
	*(void **)&ddl_papi.set_domain = dlsym(h, "PAPI_set_domain");
	int rc = ver ? ddl_papi.library_init(ver) : DDL_PAPI_EINVAL;
	for (size_t i = 0; rc == DDL_PAPI_EINVAL && i < sizeof vers / sizeof vers[0]; i++)
		rc = ddl_papi.library_init(vers[i]);
	if (rc < 0) {
		snprintf(why, cap, "PAPI_library_init failed (error %d: %s)", rc, ddl_papi_why(rc));
		return -1;
	}
	rc = ddl_papi.thread_init(ddl_papi_self);
	if (rc != DDL_PAPI_OK) {
		snprintf(why, cap, "PAPI_thread_init failed (error %d: %s)", rc, ddl_papi_why(rc));
		return -1;
	}
	return 0;
}

#define DDL_PAPI_DOM_USER 0x1
#define DDL_PAPI_DOM_ALL 0xf

/*
 * Tries each of the N events of NAMES in one trial event set under the
 * current domain; RC gets each one's PAPI result. Returns how many PAPI
 * took, or -1 (with RC[0]) when no event set can be made.
 */
static int ddl_papi_trial(char names[][128], int n, int *rc)
{
	int es = DDL_PAPI_NULL, ok = 0;
	int r = ddl_papi.create_eventset(&es);
	if (r != DDL_PAPI_OK) {
		rc[0] = r;
		return -1;
	}
	for (int i = 0; i < n; i++) {
		rc[i] = ddl_papi.add_named_event(es, names[i]);
		ok += rc[i] == DDL_PAPI_OK;
	}
	ddl_papi.cleanup_eventset(es);
	ddl_papi.destroy_eventset(&es);
	return ok;
}

void ddl_papi_init(void)
{
	const char *list = ddl_g.cfg.papi;
	if (!list[0])
		return;
	const char *checked = getenv("DDLPROF_PAPI_CHECKED"); /* the launcher told the user */
	int quiet = checked && !strcmp(checked, "1");
	char why[256];
	if (ddl_papi_load(why, sizeof why) < 0) {
		if (!quiet)
			ddl_warn("--papi: %s; no counters are read, the program continues", why);
		ddl_meta("papi", why);
		return;
	}
	static char names[DDL_PAPI_MAX][128];
	char buf[sizeof ddl_g.cfg.papi];
	int n = 0, over = 0;
	snprintf(buf, sizeof buf, "%s", list);
	for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == DDL_PAPI_MAX || strlen(tok) >= sizeof names[0])
			over = 1;
		else
			snprintf(names[n++], sizeof names[0], "%s", tok);
	}
	/* Kernel time counts too (context switches happen there) where the
	 * machine lets us count it; else the user's part only. */
	int rc[DDL_PAPI_MAX], rc_user[DDL_PAPI_MAX], dom = DDL_PAPI_DOM_ALL;
	if (ddl_papi.set_domain)
		ddl_papi.set_domain(DDL_PAPI_DOM_ALL);
	int ok = ddl_papi_trial(names, n, rc);
	if (ok >= 0 && ok < n && ddl_papi.set_domain &&
	    ddl_papi.set_domain(DDL_PAPI_DOM_USER) == DDL_PAPI_OK) {
		int ok_user = ddl_papi_trial(names, n, rc_user);
		if (ok_user > ok) {
			ok = ok_user;
			memcpy(rc, rc_user, sizeof rc);
			dom = DDL_PAPI_DOM_USER;
		} else {
			ddl_papi.set_domain(DDL_PAPI_DOM_ALL);
		}
	}
	if (ok < 0) {
		snprintf(why, sizeof why, "PAPI_create_eventset failed (error %d: %s)", rc[0],
		         ddl_papi_why(rc[0]));
		if (!quiet)
			ddl_warn("--papi: %s; no counters are read, the program continues", why);
		ddl_meta("papi", why);
		return;
	}
	ddl_papi.unregister_thread(); /* the constructor's thread registers again if it marks */
	char refused[400] = "";
	size_t nref = 0;
	for (int i = 0; i < n; i++) {
		uint32_t id = (uint32_t)i + 1;
		if (rc[i] == DDL_PAPI_OK) {
			memcpy(ddl_papi.name[ddl_papi.n], names[i], sizeof names[i]);
			ddl_papi.id[ddl_papi.n++] = id;
			ddl_strings_add(DDL_STR_COUNTER, id, 0, names[i], strlen(names[i]));
			continue;
		}
		char text[400];
		const char *reason = ddl_papi_why(rc[i]);
		int k = snprintf(text, sizeof text, "%s\nerror %d: %s", names[i], rc[i], reason);
		ddl_strings_add(DDL_STR_COUNTER, id, (uint32_t)-rc[i], text,
		                k > 0 && (size_t)k < sizeof text ? (size_t)k : sizeof text - 1);
		if (nref < sizeof refused)
			nref += (size_t)snprintf(refused + nref, sizeof refused - nref, "%s%.60s (error %d: %s)",
			                         nref ? ", " : "", names[i], rc[i], reason);
	}
	if (over && !quiet)
		ddl_warn("--papi: at most %d counters of at most 127 characters each: the rest are not "
		         "counted", DDL_PAPI_MAX);
	if (nref && !quiet)
		ddl_warn("--papi: counters not available here, not counted: %s%s", refused,
		         ddl_papi.n ? "" : "; no counters are read");
	ddl_meta("papi", ddl_papi.n ? "on" : "no counter available");
	ddl_meta("papi_domain", dom == DDL_PAPI_DOM_ALL ? "user+kernel" : "user");
	if (!ddl_papi.n || pthread_key_create(&ddl_papi.key, ddl_papi_thread_end) != 0)
		return;
	ddl_papi_on = 1;
}

void ddl_papi_after_fork_child(void)
{
	ddl_papi_on = 0;
}
