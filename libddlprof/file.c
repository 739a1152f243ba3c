/*
 * File interception: opens of files and positioned reads (pread, preadv),
 * for the input pipeline's side of the breakdown: a data-loader worker's
 * time reading its samples is "fetch", the rest of its batch "prep"
 * (ddlprof-report). Plain read and readv share their wrappers with the
 * socket family (socket.c), which records them on regular files too. Opens
 * under /dev, /proc and /sys (shared memory, devices, the kernel's own
 * files) are not the job's data and go unrecorded. Each event: result =
 * bytes read or the new descriptor, or -errno; fd = the descriptor.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ddl.h"

/* The mode argument open and openat take only when they may create. */
static int ddl_open_has_mode(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

static int ddl_data_path(const char *path)
{
	return path && strncmp(path, "/dev/", 5) && strncmp(path, "/proc/", 6) &&
	       strncmp(path, "/sys/", 5);
}

/* Records an open that gave R (errno as it left it), and forgets what the
 * descriptor table knew of its number. Keeps errno. */
static void ddl_open_done(struct ddl_thread *t, const char *path, uint64_t t0, int r)
{
	uint64_t t1 = ddl_clock_now();
	int err = errno;
	int data = ddl_data_path(path);
	if (r >= 0)
		ddl_fd_opened(r, data);
	if (t && data)
		ddl_ring_put(t, DDL_EV_FILE_OPEN, 0, t0, t1, r < 0 ? -err : r, r, 0);
	errno = err;
}

DDL_EXPORT int open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	if (ddl_open_has_mode(flags)) {
		va_list ap;
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	if (ddl_unlikely(!ddl_real.open))
		ddl_real_resolve();
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_FILE);
	uint64_t t0 = t ? ddl_clock_now() : 0;
	int r = ddl_real.open(path, flags, mode);
	ddl_open_done(t, path, t0, r);
	return r;
}

DDL_EXPORT int open64(const char *path, int flags, ...)
{
	mode_t mode = 0;
	if (ddl_open_has_mode(flags)) {
		va_list ap;
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	if (ddl_unlikely(!ddl_real.open64))
		ddl_real_resolve();
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_FILE);
	uint64_t t0 = t ? ddl_clock_now() : 0;
	int r = ddl_real.open64(path, flags, mode);
	ddl_open_done(t, path, t0, r);
	return r;
}

DDL_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	if (ddl_open_has_mode(flags)) {
		va_list ap;
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	if (ddl_unlikely(!ddl_real.openat))
		ddl_real_resolve();
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_FILE);
	uint64_t t0 = t ? ddl_clock_now() : 0;
	int r = ddl_real.openat(dirfd, path, flags, mode);
	ddl_open_done(t, path, t0, r);
	return r;
}

DDL_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	if (ddl_open_has_mode(flags)) {
		va_list ap;
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	if (ddl_unlikely(!ddl_real.openat64))
		ddl_real_resolve();
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_FILE);
	uint64_t t0 = t ? ddl_clock_now() : 0;
	int r = ddl_real.openat64(dirfd, path, flags, mode);
	ddl_open_done(t, path, t0, r);
	return r;
}

/* ---- positioned reads: only files and block devices take them ---- */

DDL_EXPORT ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_FILE);
	if (!t) {
		if (ddl_unlikely(!ddl_real.pread))
			ddl_real_resolve();
		return ddl_real.pread(fd, buf, len, off);
	}
	uint64_t t0 = ddl_clock_now();
	ssize_t r = ddl_real.pread(fd, buf, len, off);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put(t, DDL_EV_FILE_PREAD, 0, t0, t1, r < 0 ? -errno : r, fd, 0);
	return r;
}

DDL_EXPORT ssize_t pread64(int fd, void *buf, size_t len, off_t off)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_FILE);
	if (!t) {
		if (ddl_unlikely(!ddl_real.pread64))
			ddl_real_resolve();
		return ddl_real.pread64(fd, buf, len, off);
	}
	uint64_t t0 = ddl_clock_now();
	ssize_t r = ddl_real.pread64(fd, buf, len, off);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put(t, DDL_EV_FILE_PREAD, 0, t0, t1, r < 0 ? -errno : r, fd, 0);
	return r;
}

DDL_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int n, off_t off)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_FILE);
	if (!t) {
		if (ddl_unlikely(!ddl_real.preadv))
			ddl_real_resolve();
		return ddl_real.preadv(fd, iov, n, off);
	}
	uint64_t t0 = ddl_clock_now();
	ssize_t r = ddl_real.preadv(fd, iov, n, off);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put(t, DDL_EV_FILE_PREAD, 0, t0, t1, r < 0 ? -errno : r, fd, 0);
	return r;
}

DDL_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int n, off_t off)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_FILE);
	if (!t) {
		if (ddl_unlikely(!ddl_real.preadv64))
			ddl_real_resolve();
		return ddl_real.preadv64(fd, iov, n, off);
	}
	uint64_t t0 = ddl_clock_now();
	ssize_t r = ddl_real.preadv64(fd, iov, n, off);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put(t, DDL_EV_FILE_PREAD, 0, t0, t1, r < 0 ? -errno : r, fd, 0);
	return r;
}

/* _FORTIFY_SOURCE builds call these when the buffer's size is known. */
DDL_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t len, off_t off, size_t buflen)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_FILE);
	if (!t) {
		if (ddl_unlikely(!ddl_real.__pread_chk))
			ddl_real_resolve();
		return ddl_real.__pread_chk(fd, buf, len, off, buflen);
	}
	uint64_t t0 = ddl_clock_now();
	ssize_t r = ddl_real.__pread_chk(fd, buf, len, off, buflen);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put(t, DDL_EV_FILE_PREAD, 0, t0, t1, r < 0 ? -errno : r, fd, 0);
	return r;
}

DDL_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t len, off_t off, size_t buflen)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_FILE);
	if (!t) {
		if (ddl_unlikely(!ddl_real.__pread64_chk))
			ddl_real_resolve();
		return ddl_real.__pread64_chk(fd, buf, len, off, buflen);
	}
	uint64_t t0 = ddl_clock_now();
	ssize_t r = ddl_real.__pread64_chk(fd, buf, len, off, buflen);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put(t, DDL_EV_FILE_PREAD, 0, t0, t1, r < 0 ? -errno : r, fd, 0);
	return r;
}
