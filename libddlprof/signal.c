/*
 * Fatal signals. Where a signal that would kill the process has its default
 * action, our handler writes what is buffered, restores the default and
 * re-raises, so the process dies exactly as it would have, with the trace
 * flushed. Where the program installs its own handler for a synchronous
 * fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT), a trampoline
 * flushes and then calls it with the program's own flags and mask. For the
 * other signals the program's handler goes to the kernel untouched.
 *
 * sigaction() and signal() are interposed so that the program always sees
 * its own dispositions, never ours.
 */
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ddl.h"

#define DDL_NSIG 65

static const int ddl_fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS,
                                SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGXCPU, SIGXFSZ, SIGPIPE,
                                SIGUSR1, SIGUSR2, SIGALRM};

static struct {
	int managed;              /* we watch this signal's disposition */
	struct sigaction user;    /* what the program believes is installed */
} ddl_sig[DDL_NSIG];

/* The stack the thread that starts us (the main thread) gets at once, in a
 * mapping of its own: it may overflow before it records anything, with
 * other threads' events still buffered. */
static void *ddl_alt_main;

static int ddl_sig_sync(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGABRT;
}

static void ddl_sig_handler(int sig, siginfo_t *info, void *uctx)
{
	int saved = errno;
	struct sigaction *u = &ddl_sig[sig].user;
	if (u->sa_handler == SIG_DFL) {
		if (ddl_g.pid == getpid() && atomic_load(&ddl_g.enabled)) {
			ddl_writer_flush_signal(DDL_END_SIGNAL, sig);
			atomic_store(&ddl_g.enabled, 0);
		}
		struct sigaction d;
		memset(&d, 0, sizeof d);
		d.sa_handler = SIG_DFL;
		ddl_real.sigaction(sig, &d, NULL);
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, sig);
		pthread_sigmask(SIG_UNBLOCK, &s, NULL);
		syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
		errno = saved;
		return; /* a synchronous fault re-executes and kills with the default action */
	}
	/* The program's own handler for a synchronous fatal signal. */
	struct sigaction h = *u;
	if (ddl_g.pid == getpid())
		ddl_writer_flush_signal(0, sig);
	if (h.sa_flags & SA_RESETHAND) { /* the kernel has reset it: so do we */
		memset(u, 0, sizeof *u);
		u->sa_handler = SIG_DFL;
	}
	errno = saved;
	if (h.sa_flags & SA_SIGINFO)
		h.sa_sigaction(sig, info, uctx);
	else if (h.sa_handler != SIG_IGN && h.sa_handler != SIG_DFL)
		h.sa_handler(sig);
}

/* What goes to the kernel for the program's disposition ACT of SIG. */
static int ddl_sig_install(int sig, const struct sigaction *act)
{
	struct sigaction k = *act;
	if (act->sa_handler == SIG_DFL) {
		memset(&k, 0, sizeof k);
		sigemptyset(&k.sa_mask);
		k.sa_sigaction = ddl_sig_handler;
		k.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	} else if (act->sa_handler != SIG_IGN && ddl_sig_sync(sig)) {
		k.sa_sigaction = ddl_sig_handler;
		k.sa_flags = act->sa_flags | SA_SIGINFO;
	}
	return ddl_real.sigaction(sig, &k, NULL);
}

void ddl_signal_init(void)
{
	size_t page = (size_t)getpagesize();
	char *m = mmap(NULL, page + DDL_ALTSTACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m != MAP_FAILED && mprotect(m, page, PROT_NONE) == 0) { /* a guard page below */
		ddl_alt_main = m + page;
		ddl_altstack_take(ddl_alt_main);
	}
	for (size_t i = 0; i < sizeof ddl_fatal / sizeof ddl_fatal[0]; i++) {
		int sig = ddl_fatal[i];
		struct sigaction cur;
		if (ddl_real.sigaction(sig, NULL, &cur) != 0)
			continue;
		/* Only where the default action stands: SIG_IGN and handlers set
		 * before us (inherited or by earlier constructors) are left alone. */
		if (cur.sa_handler != SIG_DFL || (cur.sa_flags & SA_SIGINFO))
			continue;
		ddl_sig[sig].user = cur;
		if (ddl_sig_install(sig, &cur) == 0)
			ddl_sig[sig].managed = 1;
	}
}

DDL_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (ddl_unlikely(!ddl_real.sigaction))
		ddl_real_resolve();
	if (sig <= 0 || sig >= DDL_NSIG || !ddl_sig[sig].managed)
		return ddl_real.sigaction(sig, act, old);
	/*
	 * The kernel's disposition is the program's own unless it is our
	 * handler: a handler reset by SA_RESETHAND, or one set through glibc's
	 * internal paths (sigset, bsd_signal), shows as it is.
	 */
	struct sigaction prev;
	if (ddl_real.sigaction(sig, NULL, &prev) != 0)
		return -1;
	if (prev.sa_sigaction == ddl_sig_handler)
		prev = ddl_sig[sig].user;
	if (act) {
		int rc = ddl_sig_install(sig, act);
		if (rc != 0)
			return rc;
		ddl_sig[sig].user = *act;
	}
	if (old)
		*old = prev;
	return 0;
}

/* ---- the alternate stack of our handler ---- */

/* The stack we gave this thread, while it has it (NULL: none, or the
 * program's own). */
static __thread void *ddl_alt_sp __attribute__((tls_model("initial-exec")));

/* Gives the calling thread SP (DDL_ALTSTACK bytes) as its alternate signal
 * stack, unless the program has given it one: after fork the stack this
 * thread had from us belongs to a ring the child hands out afresh, so SP
 * replaces it. Async-signal-safe; keeps errno. */
void ddl_altstack_take(void *sp)
{
	stack_t cur;
	int saved = errno;
	if (sp && ddl_real.sigaltstack && ddl_real.sigaltstack(NULL, &cur) == 0 &&
	    !(cur.ss_flags & SS_ONSTACK) &&
	    ((cur.ss_flags & SS_DISABLE) || (cur.ss_sp == ddl_alt_sp && cur.ss_sp != ddl_alt_main))) {
		stack_t ss = {.ss_sp = sp, .ss_flags = 0, .ss_size = DDL_ALTSTACK};
		if (ddl_real.sigaltstack(&ss, NULL) == 0)
			ddl_alt_sp = sp;
	}
	errno = saved;
}

/* The thread ends: the stack goes back with its ring, unless the thread
 * is still on it (it leaves from a handler). */
int ddl_altstack_drop(void *sp)
{
	stack_t cur, off = {.ss_sp = NULL, .ss_flags = SS_DISABLE, .ss_size = 0};
	int saved = errno, rc = 0;
	if (ddl_alt_sp && ddl_real.sigaltstack(NULL, &cur) == 0 && cur.ss_sp == ddl_alt_sp &&
	    !(cur.ss_flags & SS_DISABLE)) {
		if (!(cur.ss_flags & SS_ONSTACK) && ddl_real.sigaltstack(&off, NULL) == 0)
			ddl_alt_sp = NULL;
		else if (ddl_alt_sp == sp)
			rc = -1;
	}
	errno = saved;
	return rc;
}

void *ddl_altstack_mine(void)
{
	return ddl_alt_sp;
}

/*
 * While the thread has our stack, the program sees none: a query says
 * SS_DISABLE, disabling keeps ours, and a stack of its own replaces ours.
 * The kernel reads and writes the program's pointers (EFAULT, EINVAL and
 * ENOMEM are its own); only the answer in OLD is ours.
 */
/* Not instrumented by ThreadSanitizer, whose own start-up calls it. */
__attribute__((no_sanitize("thread"))) DDL_EXPORT int sigaltstack(const stack_t *ss, stack_t *old)
{
	/* Not ours on this thread: straight to the kernel, resolving nothing (a
	 * runtime such as a sanitizer's calls this before it can run dlsym). */
	if (!ddl_alt_sp)
		return (int)syscall(SYS_sigaltstack, ss, old);
	if (ddl_unlikely(!ddl_real.sigaltstack))
		ddl_real_resolve();
	stack_t cur;
	if (ddl_real.sigaltstack(NULL, &cur) != 0 || cur.ss_sp != ddl_alt_sp || (cur.ss_flags & SS_DISABLE))
		return ddl_real.sigaltstack(ss, old);
	if (ss) {
		void *mine = ddl_alt_sp;
		if (ddl_real.sigaltstack(ss, NULL) != 0)
			return -1; /* and OLD untouched, as the kernel leaves it */
		ddl_alt_sp = NULL; /* the program's own from now on, */
		int saved = errno;
		if (ddl_real.sigaltstack(NULL, &cur) == 0 && (cur.ss_flags & SS_DISABLE))
			ddl_altstack_take(mine); /* unless it disabled what it took for none */
		errno = saved;
	}
	if (old && ddl_real.sigaltstack(NULL, old) != 0)
		return -1; /* EFAULT, the kernel's own */
	if (old) {
		old->ss_sp = NULL;
		old->ss_flags = SS_DISABLE;
		old->ss_size = 0;
	}
	return 0;
}

DDL_EXPORT sighandler_t signal(int sig, sighandler_t h)
{
	if (ddl_unlikely(!ddl_real.signal))
		ddl_real_resolve();
	if (sig <= 0 || sig >= DDL_NSIG || !ddl_sig[sig].managed)
		return ddl_real.signal(sig, h);
	if (h == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	/* glibc's signal() has BSD semantics: restart, and block SIG meanwhile. */
	struct sigaction a, o;
	memset(&a, 0, sizeof a);
	a.sa_handler = h;
	sigemptyset(&a.sa_mask);
	sigaddset(&a.sa_mask, sig);
	a.sa_flags = SA_RESTART;
	if (sigaction(sig, &a, &o) != 0)
		return SIG_ERR;
	return o.sa_handler;
}
