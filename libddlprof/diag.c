/*
 * What the library says and keeps about itself: ddl_warn, its one line on
 * the program's standard error (from any thread, the writer's too, whose
 * descriptor table is its own; only while descriptor 2 is the file it was
 * at start-up); ddl_disable, which switches profiling off
 * for good with one such line; and ddl_meta, a key=value fact about the
 * process (its command line and launch variables, its GPUs, what an
 * optional back end could or could not do) in the trace's string table
 * (strings.c), for the report to show.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ddl.h"

/*
 * The program's standard error as it is now. The writer thread has a
 * descriptor table of its own, so it borrows the program's descriptor 2 for
 * the one write (pidfd_getfd), or reopens it for appending; it never keeps
 * it, so a program that closes its stderr still delivers EOF to its reader.
 * Returns a descriptor and sets *own when the caller must close it.
 */
static int ddl_stderr(int *own)
{
	*own = 0;
	if (!ddl_private_fds)
		return 2;
	int pfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (pfd >= 0) {
		int fd = (int)syscall(SYS_pidfd_getfd, pfd, 2, 0);
		syscall(SYS_close, pfd);
		if (fd >= 0) {
			*own = 1;
			return fd;
		}
	}
	int fd = open("/proc/self/fd/2", O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
	*own = fd >= 0;
	return fd;
}

/*
 * Which file the program's standard error was at start-up (device and
 * inode): a line goes to descriptor 2 only while it is still that file. A
 * program that closes its stderr and opens a data file, which gets
 * descriptor 2, must never find our words in its data.
 */
static struct {
	dev_t dev;
	ino_t ino;
	int known;
} ddl_err;

void ddl_diag_init(void)
{
	struct stat st;
	ddl_err.known = fstat(2, &st) == 0;
	if (ddl_err.known) {
		ddl_err.dev = st.st_dev;
		ddl_err.ino = st.st_ino;
	}
}

/* One line on stderr, straight to the descriptor (no stdio state touched). */
void ddl_warn(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n = snprintf(buf, sizeof buf, "ddlprof[%d]: ", (int)getpid());
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof buf - 1)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	int saved = errno, own;
	int fd = ddl_stderr(&own);
	struct stat st;
	if (fd >= 0 && ddl_err.known && fstat(fd, &st) == 0 && st.st_dev == ddl_err.dev &&
	    st.st_ino == ddl_err.ino)
		syscall(SYS_write, fd, buf, (size_t)n);
	if (own)
		syscall(SYS_close, fd);
	errno = saved;
}

void ddl_disable(const char *why, int err)
{
	if (!atomic_exchange(&ddl_g.enabled, 0) && ddl_g.initialised)
		return; /* already off: one line only */
	if (err)
		ddl_warn("%s: %s; profiling is off, the program continues", why, strerror(err));
	else
		ddl_warn("%s; profiling is off, the program continues", why);
}

static _Atomic uint32_t ddl_meta_seq;

void ddl_meta(const char *key, const char *val)
{
	char buf[1100];
	int n = snprintf(buf, sizeof buf, "%s=%s", key, val);
	if (n < 0)
		return;
	ddl_strings_add(DDL_STR_META, atomic_fetch_add(&ddl_meta_seq, 1), 0, buf,
	                (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

void ddl_meta_unrecorded(unsigned n)
{
	char buf[48];
	int k = snprintf(buf, sizeof buf, "threads_unrecorded=%u", n);
	ddl_strings_try_add(DDL_STR_META, atomic_fetch_add(&ddl_meta_seq, 1), 0, buf, (size_t)k, 2000);
}
