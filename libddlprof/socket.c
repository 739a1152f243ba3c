/*
 * Socket interception: the send and receive families, read/write/readv/
 * writev on sockets, connect/accept, and the poll/select/epoll waits.
 * Each wrapper records one event: bytes (or -errno), duration, descriptor
 * and peer (with --backtrace, and the caller's stack: unwind.c). Nothing on the recording path changes errno (the rare slow
 * paths save and restore it), so the wrappers read errno only when the real
 * call failed and never write it. A descriptor table, filled by socket/accept/connect and on first
 * sight with one fstat, tells sockets from other descriptors without a
 * syscall on the hot path, and maps each connected socket to its peer.
 * Peers are interned once into the trace's string table with whether they
 * are on this host. Under ddlprof --perturb-net the sends are slowed by
 * perturb.c.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdlib.h>
#include <ifaddrs.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>


#include "ddl.h"

/*
 * Descriptor table entry: low two bits are the state, bits 2..30 the peer
 * index, bit 31 marks an epoll instance that watches a socket.
 */
#define DDL_FD_MAX      (1u << 20)
#define DDL_FD_UNKNOWN  0u
#define DDL_FD_NOTSOCK  1u
#define DDL_FD_SOCK     2u /* socket, peer not looked up yet */
#define DDL_FD_PEERED   3u /* socket, peer index final (may be 0) */
#define DDL_FD_EPSOCK   (1u << 31)
#define DDL_FD_REG      (1u << 2)  /* NOTSOCK entries: a regular file (file reads are recorded) */
#define DDL_FD_STATE(v) ((v) & 3u)
#define DDL_FD_PEER(v)  ((v) >> 2) /* PEERED entries never carry DDL_FD_EPSOCK */

/* In pages of 1024 descriptors, mapped when a descriptor in one is first
 * set (ddl_lazy): a missing page reads as DDL_FD_UNKNOWN throughout. */
#define DDL_FD_PAGE 1024u
static void *_Atomic ddl_fdtab[DDL_FD_MAX / DDL_FD_PAGE];
static _Atomic unsigned ddl_fd_hi; /* one past the highest descriptor set */

/*
 * Cold paths mark the thread busy, so a signal handler's wrapped call on the
 * same thread passes through instead of re-entering the string table.
 */
static int ddl_guard_on(void)
{
	struct ddl_thread *t = ddl_self;
	if (!t)
		return -1;
	int was = t->busy;
	t->busy = 1;
	return was;
}

static void ddl_guard_off(int was)
{
	if (was >= 0 && ddl_self)
		ddl_self->busy = was;
}

/* ---- host addresses, to class peers as local or remote ---- */

#define DDL_ADDR_MAX 64
static struct {
	int n;
	int family[DDL_ADDR_MAX];
	unsigned char addr[DDL_ADDR_MAX][16];
	time_t loaded;
} ddl_host;

static void ddl_host_load(void)
{
	struct ifaddrs *ifa = NULL;
	ddl_host.loaded = time(NULL);
	if (getifaddrs(&ifa) != 0)
		return;
	int n = 0;
	for (struct ifaddrs *i = ifa; i && n < DDL_ADDR_MAX; i = i->ifa_next) {
		if (!i->ifa_addr)
			continue;
		if (i->ifa_addr->sa_family == AF_INET) {
			ddl_host.family[n] = AF_INET;
			memcpy(ddl_host.addr[n++], &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			ddl_host.family[n] = AF_INET6;
			memcpy(ddl_host.addr[n++], &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, 16);
		}
	}
	ddl_host.n = n;
	freeifaddrs(ifa);
}

/*
 * Threads meeting new peers at once would reread the table while others
 * read it: one flag serialises them (only a peer's first sight comes here).
 * Never a wait for ever: a thread that cannot have it within about 0.1 s
 * (fork left it held; the child's handler frees it) classes the peer remote.
 */
static _Atomic int ddl_host_lock;

static void ddl_host_after_fork_child(void)
{
	atomic_store(&ddl_host_lock, 0);
}

static int ddl_host_has(int family, const void *a)
{
	size_t len = family == AF_INET ? 4 : 16;
	int found = 0, expect = 0;
	for (int tries = 0; !atomic_compare_exchange_weak(&ddl_host_lock, &expect, 1); tries++) {
		expect = 0;
		if (tries >= 1000)
			return 0;
		if (tries >= 64) {
			struct timespec ts = {0, 100000};
			nanosleep(&ts, NULL);
		}
	}
	for (int pass = 0; pass < 2 && !found; pass++) {
		for (int i = 0; i < ddl_host.n && !found; i++)
			found = ddl_host.family[i] == family && memcmp(ddl_host.addr[i], a, len) == 0;
		/* Addresses can be added after start (a namespace set up late). */
		if (found || pass > 0 || time(NULL) == ddl_host.loaded)
			break;
		ddl_host_load();
	}
	atomic_store_explicit(&ddl_host_lock, 0, memory_order_release);
	return found;
}

/* ---- peers ---- */

#define DDL_PEER_SLOTS 8192
struct ddl_peer_tab {
	_Atomic uint64_t key[DDL_PEER_SLOTS];
	_Atomic uint32_t idx[DDL_PEER_SLOTS];
	_Atomic uint32_t next;
};
static void *_Atomic ddl_peers; /* a struct ddl_peer_tab, mapped on the first peer */


/* Describes a socket address as text and whether it is on this host. */
static int ddl_peer_text(const struct sockaddr *sa, char *out, size_t cap, int *local)
{
	char ip[INET6_ADDRSTRLEN];
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)sa;
		inet_ntop(AF_INET, &s->sin_addr, ip, sizeof ip);
		*local = (ntohl(s->sin_addr.s_addr) >> 24) == 127 || ddl_host_has(AF_INET, &s->sin_addr);
		return snprintf(out, cap, "%s:%u", ip, ntohs(s->sin_port));
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)sa;
		inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof ip);
		if (IN6_IS_ADDR_V4MAPPED(&s->sin6_addr))
			*local = s->sin6_addr.s6_addr[12] == 127 ||
			         ddl_host_has(AF_INET, &s->sin6_addr.s6_addr[12]);
		else
			*local = IN6_IS_ADDR_LOOPBACK(&s->sin6_addr) || ddl_host_has(AF_INET6, &s->sin6_addr);
		return snprintf(out, cap, "[%s]:%u", ip, ntohs(s->sin6_port));
	}
	*local = 1;
	if (sa->sa_family == AF_UNIX) {
		const struct sockaddr_un *s = (const void *)sa;
		if (s->sun_path[0])
			return snprintf(out, cap, "unix:%.100s", s->sun_path);
		if (s->sun_path[1])
			return snprintf(out, cap, "unix:@%.100s", s->sun_path + 1);
		return snprintf(out, cap, "unix");
	}
	return snprintf(out, cap, "family-%d", sa->sa_family);
}

/*
 * Interns a peer address; returns its index (>= 1) or 0 when the address is
 * unusable or the table is full. Lock-free: first inserter writes the string.
 */
static uint32_t ddl_peer_intern(const struct sockaddr *sa, socklen_t len)
{
	if (!sa || len < sizeof(sa_family_t))
		return 0;
	uint64_t h = ddl_fnv(DDL_FNV0, &sa->sa_family, sizeof sa->sa_family);
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *s = (const void *)sa;
		h = ddl_fnv(ddl_fnv(h, &s->sin_port, 2), &s->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *s = (const void *)sa;
		h = ddl_fnv(ddl_fnv(h, &s->sin6_port, 2), &s->sin6_addr, 16);
	} else if (sa->sa_family == AF_UNIX) {
		size_t n = len > offsetof(struct sockaddr_un, sun_path)
		               ? len - offsetof(struct sockaddr_un, sun_path) : 0;
		h = ddl_fnv(h, ((const struct sockaddr_un *)sa)->sun_path, n);
	} else if (sa->sa_family == AF_INET || sa->sa_family == AF_INET6) {
		return 0;
	}
	h |= 1;
	struct ddl_peer_tab *pt = ddl_lazy(&ddl_peers, sizeof *pt);
	if (!pt)
		return 0;
	for (unsigned i = 0; i < DDL_PEER_SLOTS; i++) {
		unsigned s = (unsigned)(h + i) & (DDL_PEER_SLOTS - 1);
		uint64_t k = atomic_load_explicit(&pt->key[s], memory_order_acquire);
		if (k == h)
			return ddl_id_wait(&pt->idx[s]);
		if (k != 0)
			continue;
		uint64_t expect = 0;
		if (!atomic_compare_exchange_strong(&pt->key[s], &expect, h)) {
			if (expect == h)
				return ddl_id_wait(&pt->idx[s]);
			continue;
		}
		int saved = errno;
		int g = ddl_guard_on();
		uint32_t idx = atomic_fetch_add(&pt->next, 1) + 1;
		char text[160];
		int local = 0;
		struct sockaddr_storage ss;
		memset(&ss, 0, sizeof ss);
		memcpy(&ss, sa, len < sizeof ss ? len : sizeof ss);
		int n = ddl_peer_text((struct sockaddr *)&ss, text, sizeof text, &local);
		if (n < 0)
			n = 0;
		if ((size_t)n >= sizeof text)
			n = sizeof text - 1;
		ddl_strings_add(DDL_STR_PEER, idx, (local ? DDL_PEERF_LOCAL : 0) | (uint32_t)sa->sa_family << 8,
		                text, (size_t)n);
		atomic_store_explicit(&pt->idx[s], idx, memory_order_release);
		ddl_guard_off(g);
		errno = saved;
		return idx;
	}
	return 0;
}

/* ---- descriptor table ---- */

/* FD's entry, or NULL when its page was never mapped (fd < DDL_FD_MAX). */
static inline _Atomic uint32_t *ddl_fd_slot(unsigned fd)
{
	_Atomic uint32_t *p = atomic_load_explicit(&ddl_fdtab[fd / DDL_FD_PAGE], memory_order_acquire);
	return p ? &p[fd % DDL_FD_PAGE] : NULL;
}

static inline uint32_t ddl_fd_load(unsigned fd)
{
	_Atomic uint32_t *e = ddl_fd_slot(fd);
	return e ? atomic_load_explicit(e, memory_order_relaxed) : DDL_FD_UNKNOWN;
}

/* FD's entry, its page mapped first if need be; NULL when it cannot be. */
static _Atomic uint32_t *ddl_fd_slot_map(unsigned fd)
{
	_Atomic uint32_t *p = ddl_lazy(&ddl_fdtab[fd / DDL_FD_PAGE], DDL_FD_PAGE * sizeof *p);
	return p ? &p[fd % DDL_FD_PAGE] : NULL;
}

static void ddl_fd_set(int fd, uint32_t v)
{
	_Atomic uint32_t *e = fd >= 0 && (unsigned)fd < DDL_FD_MAX ? ddl_fd_slot_map((unsigned)fd) : NULL;
	if (!e)
		return; /* unmapped: looked at again next time */
	atomic_store_explicit(e, v, memory_order_relaxed);
	unsigned hi = atomic_load_explicit(&ddl_fd_hi, memory_order_relaxed);
	while ((unsigned)fd >= hi &&
	       !atomic_compare_exchange_weak(&ddl_fd_hi, &hi, (unsigned)fd + 1))
		;
}

/* EPFD, an epoll instance, watches a socket. */
static void ddl_fd_mark_epoll(int epfd)
{
	_Atomic uint32_t *e = ddl_fd_slot_map((unsigned)epfd);
	if (e)
		atomic_fetch_or(e, DDL_FD_EPSOCK | DDL_FD_NOTSOCK);
}

static uint32_t ddl_fd_peered(int fd, uint32_t peer)
{
	uint32_t v = (peer << 2) | DDL_FD_PEERED;
	ddl_fd_set(fd, v);
	return v;
}

/* First sight of a descriptor, or of a socket's peer. Keeps errno. */
static uint32_t ddl_fd_probe(int fd, uint32_t v)
{
	int saved = errno;
	int g = ddl_guard_on();
	if (DDL_FD_STATE(v) == DDL_FD_UNKNOWN) {
		struct stat st;
		if (fstat(fd, &st) != 0) {
			ddl_guard_off(g);
			errno = saved;
			return DDL_FD_UNKNOWN; /* bad descriptor: ask again next time */
		}
		if (!S_ISSOCK(st.st_mode)) {
			uint32_t nv = DDL_FD_NOTSOCK | (S_ISREG(st.st_mode) ? DDL_FD_REG : 0);
			ddl_fd_set(fd, nv | (v & DDL_FD_EPSOCK));
			ddl_guard_off(g);
			errno = saved;
			return nv;
		}
	}
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	uint32_t peer = 0;
	if (getpeername(fd, (struct sockaddr *)&ss, &len) == 0)
		peer = ddl_peer_intern((struct sockaddr *)&ss, len < sizeof ss ? len : sizeof ss);
	ddl_guard_off(g);
	errno = saved;
	return ddl_fd_peered(fd, peer);
}

static uint32_t ddl_fd_get_slow(int fd, uint32_t v)
{
	if (DDL_FD_STATE(v) == DDL_FD_NOTSOCK)
		return v;
	return ddl_fd_probe(fd, v);
}

/* The descriptor's entry, looked up on first sight. */
static inline uint32_t ddl_fd_get(int fd)
{
	if (ddl_unlikely((unsigned)fd >= DDL_FD_MAX))
		return DDL_FD_NOTSOCK;
	uint32_t v = ddl_fd_load((unsigned)fd);
	if (ddl_likely(DDL_FD_STATE(v) == DDL_FD_PEERED))
		return v;
	return ddl_fd_get_slow(fd, v);
}

__attribute__((noinline)) static uint32_t ddl_fd_peer_slow(int fd)
{
	uint32_t v = ddl_fd_get(fd);
	return DDL_FD_STATE(v) == DDL_FD_PEERED ? DDL_FD_PEER(v) : 0;
}

/* Peer index of a socket descriptor (0 when unknown or not a socket). */
static inline uint32_t ddl_fd_peer(int fd)
{
	if (ddl_likely((unsigned)fd < DDL_FD_MAX)) {
		uint32_t v = ddl_fd_load((unsigned)fd);
		if (ddl_likely(DDL_FD_STATE(v) == DDL_FD_PEERED))
			return DDL_FD_PEER(v);
	}
	return ddl_fd_peer_slow(fd);
}

static inline int ddl_fd_is_sock(int fd)
{
	return DDL_FD_STATE(ddl_fd_get(fd)) == DDL_FD_PEERED;
}

/* What a read or write on FD is, for recording: DDL_FAM_SOCKET, DDL_FAM_FILE
 * (reads of a regular file), or 0 (a pipe, a terminal: not recorded); and
 * only when that family is being recorded. */
static inline unsigned ddl_fd_family(int fd, int reading)
{
	uint32_t v = ddl_fd_get(fd);
	unsigned f = DDL_FD_STATE(v) == DDL_FD_PEERED ? DDL_FAM_SOCKET
	             : reading && DDL_FD_STATE(v) == DDL_FD_NOTSOCK && (v & DDL_FD_REG) ? DDL_FAM_FILE
	                                                                                 : 0;
	return f & atomic_load_explicit(&ddl_g.enabled, memory_order_relaxed);
}

/* The descriptor was closed or replaced: forget what we knew. */
static void ddl_fd_forget(int fd)
{
	_Atomic uint32_t *e = fd >= 0 && (unsigned)fd < DDL_FD_MAX ? ddl_fd_slot((unsigned)fd) : NULL;
	if (e)
		atomic_store_explicit(e, DDL_FD_UNKNOWN, memory_order_relaxed);
}

void ddl_fd_opened(int fd, int data)
{
	if (data)
		ddl_fd_forget(fd); /* looked at on its first read */
	else /* /proc, /sys, /dev: no data, not recorded */
		ddl_fd_set(fd, DDL_FD_NOTSOCK);
}

void ddl_socket_init(void)
{
	ddl_host_load();
	pthread_atfork(NULL, NULL, ddl_host_after_fork_child);
}

/* The peer named in a message (at most CAP bytes of it are there), or the socket's. */
static uint32_t ddl_msg_peer(int fd, const struct msghdr *m, socklen_t cap)
{
	if (m && m->msg_name && m->msg_namelen && cap)
		return ddl_peer_intern(m->msg_name, m->msg_namelen < cap ? m->msg_namelen : cap);
	return ddl_fd_peer(fd);
}

/* An address the kernel returned: it says the full length, the buffer held CAP. */
static uint32_t ddl_got_peer(int fd, const struct sockaddr *sa, const socklen_t *len, socklen_t cap)
{
	if (sa && len && *len && cap)
		return ddl_peer_intern(sa, *len < cap ? *len : cap);
	return ddl_fd_peer(fd);
}

static int64_t ddl_mmsg_bytes(const struct mmsghdr *v, int r)
{
	int64_t b = 0;
	for (int i = 0; i < r; i++)
		b += v[i].msg_len;
	return b;
}

static inline unsigned ddl_peek(int flags)
{
	return flags & MSG_PEEK ? DDL_EVF_PEEK : 0;
}

/* ---- send family ---- */

DDL_EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.send))
			ddl_real_resolve();
		return ddl_real.send(fd, buf, len, flags);
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_SEND, t0, fd, 0);
	ssize_t r = ddl_real.send(fd, buf, len, flags);
	ddl_open_leave(t, open);
	if (ddl_unlikely(ddl_perturb_on) && r > 0)
		ddl_perturb((uint64_t)r);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put_call(t, DDL_EV_SEND, 0, t0, t1, r < 0 ? -errno : r, fd, ddl_fd_peer(fd));
	return r;
}

DDL_EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags,
                          const struct sockaddr *to, socklen_t tolen)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.sendto))
			ddl_real_resolve();
		return ddl_real.sendto(fd, buf, len, flags, to, tolen);
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_SENDTO, t0, fd, 0);
	ssize_t r = ddl_real.sendto(fd, buf, len, flags, to, tolen);
	ddl_open_leave(t, open);
	if (ddl_unlikely(ddl_perturb_on) && r > 0)
		ddl_perturb((uint64_t)r);
	uint64_t t1 = ddl_clock_now();
	uint32_t peer = r >= 0 && to ? ddl_peer_intern(to, tolen) : ddl_fd_peer(fd);
	ddl_ring_put_call(t, DDL_EV_SENDTO, 0, t0, t1, r < 0 ? -errno : r, fd, peer);
	return r;
}

DDL_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.sendmsg))
			ddl_real_resolve();
		return ddl_real.sendmsg(fd, msg, flags);
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_SENDMSG, t0, fd, 0);
	ssize_t r = ddl_real.sendmsg(fd, msg, flags);
	ddl_open_leave(t, open);
	if (ddl_unlikely(ddl_perturb_on) && r > 0)
		ddl_perturb((uint64_t)r);
	uint64_t t1 = ddl_clock_now();
	uint32_t peer = r >= 0 ? ddl_msg_peer(fd, msg, msg->msg_namelen) : ddl_fd_peer(fd);
	ddl_ring_put_call(t, DDL_EV_SENDMSG, 0, t0, t1, r < 0 ? -errno : r, fd, peer);
	return r;
}

DDL_EXPORT int sendmmsg(int fd, struct mmsghdr *vec, unsigned int n, int flags)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.sendmmsg))
			ddl_real_resolve();
		return ddl_real.sendmmsg(fd, vec, n, flags);
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_SENDMMSG, t0, fd, 0);
	int r = ddl_real.sendmmsg(fd, vec, n, flags);
	ddl_open_leave(t, open);
	if (ddl_unlikely(ddl_perturb_on) && r > 0)
		ddl_perturb((uint64_t)ddl_mmsg_bytes(vec, r));
	uint64_t t1 = ddl_clock_now();
	uint32_t peer = r > 0 ? ddl_msg_peer(fd, &vec[0].msg_hdr, vec[0].msg_hdr.msg_namelen)
	                      : ddl_fd_peer(fd);
	ddl_ring_put_call(t, DDL_EV_SENDMMSG, 0, t0, t1, r < 0 ? -errno : ddl_mmsg_bytes(vec, r), fd, peer);
	return r;
}

/* ---- receive family ---- */

DDL_EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.recv))
			ddl_real_resolve();
		return ddl_real.recv(fd, buf, len, flags);
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_RECV, t0, fd, 0);
	ssize_t r = ddl_real.recv(fd, buf, len, flags);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put_call(t, DDL_EV_RECV, ddl_peek(flags), t0, t1, r < 0 ? -errno : r, fd, ddl_fd_peer(fd));
	return r;
}

DDL_EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from,
                            socklen_t *fromlen)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.recvfrom))
			ddl_real_resolve();
		return ddl_real.recvfrom(fd, buf, len, flags, from, fromlen);
	}
	socklen_t cap = from && fromlen ? *fromlen : 0;
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_RECVFROM, t0, fd, 0);
	ssize_t r = ddl_real.recvfrom(fd, buf, len, flags, from, fromlen);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	uint32_t peer = r >= 0 ? ddl_got_peer(fd, from, fromlen, cap) : ddl_fd_peer(fd);
	ddl_ring_put_call(t, DDL_EV_RECVFROM, ddl_peek(flags), t0, t1, r < 0 ? -errno : r, fd, peer);
	return r;
}

DDL_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.recvmsg))
			ddl_real_resolve();
		return ddl_real.recvmsg(fd, msg, flags);
	}
	socklen_t cap = msg ? msg->msg_namelen : 0;
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_RECVMSG, t0, fd, 0);
	ssize_t r = ddl_real.recvmsg(fd, msg, flags);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	uint32_t peer = r >= 0 ? ddl_msg_peer(fd, msg, cap) : ddl_fd_peer(fd);
	ddl_ring_put_call(t, DDL_EV_RECVMSG, ddl_peek(flags), t0, t1, r < 0 ? -errno : r, fd, peer);
	return r;
}

DDL_EXPORT int recvmmsg(int fd, struct mmsghdr *vec, unsigned int n, int flags,
                        struct timespec *timeout)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.recvmmsg))
			ddl_real_resolve();
		return ddl_real.recvmmsg(fd, vec, n, flags, timeout);
	}
	socklen_t cap = vec && n ? vec[0].msg_hdr.msg_namelen : 0;
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_RECVMMSG, t0, fd, 0);
	int r = ddl_real.recvmmsg(fd, vec, n, flags, timeout);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	uint32_t peer = r > 0 ? ddl_msg_peer(fd, &vec[0].msg_hdr, cap) : ddl_fd_peer(fd);
	ddl_ring_put_call(t, DDL_EV_RECVMMSG, ddl_peek(flags), t0, t1, r < 0 ? -errno : ddl_mmsg_bytes(vec, r), fd, peer);
	return r;
}

/* ---- read/write family, recorded on sockets (and reads on regular files) ---- */

DDL_EXPORT ssize_t read(int fd, void *buf, size_t len)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET | DDL_FAM_FILE);
	if (!t) {
		if (ddl_unlikely(!ddl_real.read))
			ddl_real_resolve();
		return ddl_real.read(fd, buf, len);
	}
	unsigned fam = ddl_fd_family(fd, 1);
	if (!fam) {
		return ddl_real.read(fd, buf, len);
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, fam == DDL_FAM_FILE ? DDL_EV_FILE_READ : DDL_EV_READ, t0, fd, 0);
	ssize_t r = ddl_real.read(fd, buf, len);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	if (fam == DDL_FAM_FILE)
		ddl_ring_put(t, DDL_EV_FILE_READ, 0, t0, t1, r < 0 ? -errno : r, fd, 0);
	else
		ddl_ring_put_call(t, DDL_EV_READ, 0, t0, t1, r < 0 ? -errno : r, fd, ddl_fd_peer(fd));
	return r;
}

DDL_EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.write))
			ddl_real_resolve();
		return ddl_real.write(fd, buf, len);
	}
	if (!ddl_fd_is_sock(fd)) {
		return ddl_real.write(fd, buf, len);
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_WRITE, t0, fd, 0);
	ssize_t r = ddl_real.write(fd, buf, len);
	ddl_open_leave(t, open);
	if (ddl_unlikely(ddl_perturb_on) && r > 0)
		ddl_perturb((uint64_t)r);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put_call(t, DDL_EV_WRITE, 0, t0, t1, r < 0 ? -errno : r, fd, ddl_fd_peer(fd));
	return r;
}

DDL_EXPORT ssize_t readv(int fd, const struct iovec *iov, int n)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET | DDL_FAM_FILE);
	if (!t) {
		if (ddl_unlikely(!ddl_real.readv))
			ddl_real_resolve();
		return ddl_real.readv(fd, iov, n);
	}
	unsigned fam = ddl_fd_family(fd, 1);
	if (!fam) {
		return ddl_real.readv(fd, iov, n);
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, fam == DDL_FAM_FILE ? DDL_EV_FILE_READ : DDL_EV_READV, t0, fd, 0);
	ssize_t r = ddl_real.readv(fd, iov, n);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	if (fam == DDL_FAM_FILE)
		ddl_ring_put(t, DDL_EV_FILE_READ, 0, t0, t1, r < 0 ? -errno : r, fd, 0);
	else
		ddl_ring_put_call(t, DDL_EV_READV, 0, t0, t1, r < 0 ? -errno : r, fd, ddl_fd_peer(fd));
	return r;
}

DDL_EXPORT ssize_t writev(int fd, const struct iovec *iov, int n)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.writev))
			ddl_real_resolve();
		return ddl_real.writev(fd, iov, n);
	}
	if (!ddl_fd_is_sock(fd)) {
		return ddl_real.writev(fd, iov, n);
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_WRITEV, t0, fd, 0);
	ssize_t r = ddl_real.writev(fd, iov, n);
	ddl_open_leave(t, open);
	if (ddl_unlikely(ddl_perturb_on) && r > 0)
		ddl_perturb((uint64_t)r);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put_call(t, DDL_EV_WRITEV, 0, t0, t1, r < 0 ? -errno : r, fd, ddl_fd_peer(fd));
	return r;
}

/*
 * _FORTIFY_SOURCE builds call these instead of read, recv, recvfrom, poll
 * and ppoll when the buffer size is known; the real ones check the size.
 */
DDL_EXPORT ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET | DDL_FAM_FILE);
	if (!t) {
		if (ddl_unlikely(!ddl_real.__read_chk))
			ddl_real_resolve();
		return ddl_real.__read_chk(fd, buf, len, buflen);
	}
	unsigned fam = ddl_fd_family(fd, 1);
	if (!fam) {
		return ddl_real.__read_chk(fd, buf, len, buflen);
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, fam == DDL_FAM_FILE ? DDL_EV_FILE_READ : DDL_EV_READ, t0, fd, 0);
	ssize_t r = ddl_real.__read_chk(fd, buf, len, buflen);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	if (fam == DDL_FAM_FILE)
		ddl_ring_put(t, DDL_EV_FILE_READ, 0, t0, t1, r < 0 ? -errno : r, fd, 0);
	else
		ddl_ring_put_call(t, DDL_EV_READ, 0, t0, t1, r < 0 ? -errno : r, fd, ddl_fd_peer(fd));
	return r;
}

DDL_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.__recv_chk))
			ddl_real_resolve();
		return ddl_real.__recv_chk(fd, buf, len, buflen, flags);
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_RECV, t0, fd, 0);
	ssize_t r = ddl_real.__recv_chk(fd, buf, len, buflen, flags);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put_call(t, DDL_EV_RECV, ddl_peek(flags), t0, t1, r < 0 ? -errno : r, fd, ddl_fd_peer(fd));
	return r;
}

DDL_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
                                  struct sockaddr *from, socklen_t *fromlen)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.__recvfrom_chk))
			ddl_real_resolve();
		return ddl_real.__recvfrom_chk(fd, buf, len, buflen, flags, from, fromlen);
	}
	socklen_t cap = from && fromlen ? *fromlen : 0;
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_RECVFROM, t0, fd, 0);
	ssize_t r = ddl_real.__recvfrom_chk(fd, buf, len, buflen, flags, from, fromlen);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	uint32_t peer = r >= 0 ? ddl_got_peer(fd, from, fromlen, cap) : ddl_fd_peer(fd);
	ddl_ring_put_call(t, DDL_EV_RECVFROM, ddl_peek(flags), t0, t1, r < 0 ? -errno : r, fd, peer);
	return r;
}

/* ---- connections ---- */

DDL_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.connect))
			ddl_real_resolve();
		return ddl_real.connect(fd, addr, len);
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_CONNECT, t0, fd, 0);
	int r = ddl_real.connect(fd, addr, len);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	/* the kernel read the address unless it said EFAULT */
	uint32_t peer = r == 0 || errno != EFAULT ? ddl_peer_intern(addr, len) : 0;
	if (r == 0 || errno == EINPROGRESS)
		ddl_fd_peered(fd, peer);
	ddl_ring_put_call(t, DDL_EV_CONNECT, 0, t0, t1, r < 0 ? -errno : r, fd, peer);
	return r;
}

static uint32_t ddl_accepted(int nfd, const struct sockaddr *addr, const socklen_t *len,
                             socklen_t cap)
{
	if (nfd < 0)
		return 0;
	if (addr && len && *len && cap)
		return DDL_FD_PEER(ddl_fd_peered(nfd, ddl_peer_intern(addr, *len < cap ? *len : cap)));
	ddl_fd_forget(nfd);
	return ddl_fd_peer(nfd);
}

DDL_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.accept))
			ddl_real_resolve();
		return ddl_real.accept(fd, addr, len);
	}
	socklen_t cap = addr && len ? *len : 0;
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_ACCEPT, t0, fd, 0);
	int r = ddl_real.accept(fd, addr, len);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	uint32_t peer = ddl_accepted(r, addr, len, cap);
	ddl_ring_put_call(t, DDL_EV_ACCEPT, 0, t0, t1, r < 0 ? -errno : r, fd, peer);
	return r;
}

DDL_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.accept4))
			ddl_real_resolve();
		return ddl_real.accept4(fd, addr, len, flags);
	}
	socklen_t cap = addr && len ? *len : 0;
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_ACCEPT4, t0, fd, 0);
	int r = ddl_real.accept4(fd, addr, len, flags);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	uint32_t peer = ddl_accepted(r, addr, len, cap);
	ddl_ring_put_call(t, DDL_EV_ACCEPT4, 0, t0, t1, r < 0 ? -errno : r, fd, peer);
	return r;
}

/* ---- waits: time blocked, flagged when a socket is among the waited ---- */

static unsigned ddl_pollfds_flag(const struct pollfd *p, nfds_t n)
{
	for (nfds_t i = 0; i < n; i++)
		if (p[i].fd >= 0 && ddl_fd_is_sock(p[i].fd))
			return DDL_EVF_SOCKWAIT;
	return 0;
}

/*
 * Whether a select waits on a socket: the sets are read before the call
 * (it rewrites them), through process_vm_readv, so a bad pointer gives the
 * program its EFAULT from the real call rather than a crash in ours.
 */
static unsigned ddl_fdset_flag(int nfds, const fd_set *r, const fd_set *w)
{
	if (nfds <= 0)
		return 0;
	if (nfds > FD_SETSIZE)
		nfds = FD_SETSIZE;
	size_t bytes = ((size_t)nfds + 63) / 64 * 8;
	fd_set sets[2];
	const fd_set *user[2] = {r, w};
	for (int k = 0; k < 2; k++) {
		FD_ZERO(&sets[k]);
		if (!user[k])
			continue;
		struct iovec local = {&sets[k], bytes}, remote = {(void *)user[k], bytes};
		int saved = errno;
		ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
		errno = saved;
		if (got != (ssize_t)bytes)
			return 0;
	}
	for (int fd = 0; fd < nfds; fd++)
		if ((FD_ISSET(fd, &sets[0]) || FD_ISSET(fd, &sets[1])) && ddl_fd_is_sock(fd))
			return DDL_EVF_SOCKWAIT;
	return 0;
}

static unsigned ddl_epoll_flag(int epfd)
{
	if ((unsigned)epfd >= DDL_FD_MAX)
		return 0;
	return ddl_fd_load((unsigned)epfd) & DDL_FD_EPSOCK ? DDL_EVF_SOCKWAIT : 0;
}

DDL_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.poll))
			ddl_real_resolve();
		return ddl_real.poll(fds, n, timeout);
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_POLL, t0, (int)n, 0);
	int r = ddl_real.poll(fds, n, timeout);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put_call(t, DDL_EV_POLL, r >= 0 ? ddl_pollfds_flag(fds, n) : 0, t0, t1, r < 0 ? -errno : r, (int)n, 0);
	return r;
}

DDL_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo,
                     const sigset_t *mask)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.ppoll))
			ddl_real_resolve();
		return ddl_real.ppoll(fds, n, tmo, mask);
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_PPOLL, t0, (int)n, 0);
	int r = ddl_real.ppoll(fds, n, tmo, mask);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put_call(t, DDL_EV_PPOLL, r >= 0 ? ddl_pollfds_flag(fds, n) : 0, t0, t1, r < 0 ? -errno : r, (int)n, 0);
	return r;
}

DDL_EXPORT int select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tmo)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.select))
			ddl_real_resolve();
		return ddl_real.select(nfds, rd, wr, ex, tmo);
	}
	unsigned f = ddl_fdset_flag(nfds, rd, wr); /* before: the call rewrites the sets */
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_SELECT, t0, nfds, 0);
	int r = ddl_real.select(nfds, rd, wr, ex, tmo);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put_call(t, DDL_EV_SELECT, f, t0, t1, r < 0 ? -errno : r, nfds, 0);
	return r;
}

DDL_EXPORT int pselect(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *tmo,
                       const sigset_t *mask)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.pselect))
			ddl_real_resolve();
		return ddl_real.pselect(nfds, rd, wr, ex, tmo, mask);
	}
	unsigned f = ddl_fdset_flag(nfds, rd, wr);
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_PSELECT, t0, nfds, 0);
	int r = ddl_real.pselect(nfds, rd, wr, ex, tmo, mask);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put_call(t, DDL_EV_PSELECT, f, t0, t1, r < 0 ? -errno : r, nfds, 0);
	return r;
}

DDL_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.epoll_wait))
			ddl_real_resolve();
		return ddl_real.epoll_wait(epfd, ev, max, timeout);
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_EPOLL_WAIT, t0, epfd, 0);
	int r = ddl_real.epoll_wait(epfd, ev, max, timeout);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put_call(t, DDL_EV_EPOLL_WAIT, ddl_epoll_flag(epfd), t0, t1, r < 0 ? -errno : r, epfd, 0);
	return r;
}

DDL_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout,
                           const sigset_t *mask)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.epoll_pwait))
			ddl_real_resolve();
		return ddl_real.epoll_pwait(epfd, ev, max, timeout, mask);
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_EPOLL_PWAIT, t0, epfd, 0);
	int r = ddl_real.epoll_pwait(epfd, ev, max, timeout, mask);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put_call(t, DDL_EV_EPOLL_PWAIT, ddl_epoll_flag(epfd), t0, t1, r < 0 ? -errno : r, epfd, 0);
	return r;
}

DDL_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.__poll_chk))
			ddl_real_resolve();
		return ddl_real.__poll_chk(fds, n, timeout, fdslen);
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_POLL, t0, (int)n, 0);
	int r = ddl_real.__poll_chk(fds, n, timeout, fdslen);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put_call(t, DDL_EV_POLL, r >= 0 ? ddl_pollfds_flag(fds, n) : 0, t0, t1, r < 0 ? -errno : r, (int)n, 0);
	return r;
}

DDL_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *tmo,
                           const sigset_t *mask, size_t fdslen)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_SOCKET);
	if (!t) {
		if (ddl_unlikely(!ddl_real.__ppoll_chk))
			ddl_real_resolve();
		return ddl_real.__ppoll_chk(fds, n, tmo, mask, fdslen);
	}
	uint64_t t0 = ddl_clock_now();
	int open = ddl_open_enter(t, DDL_EV_PPOLL, t0, (int)n, 0);
	int r = ddl_real.__ppoll_chk(fds, n, tmo, mask, fdslen);
	ddl_open_leave(t, open);
	uint64_t t1 = ddl_clock_now();
	ddl_ring_put_call(t, DDL_EV_PPOLL, r >= 0 ? ddl_pollfds_flag(fds, n) : 0, t0, t1, r < 0 ? -errno : r, (int)n, 0);
	return r;
}

/* ---- descriptor bookkeeping: not recorded, only kept in step ---- */

DDL_EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	if (ddl_unlikely(!ddl_real.epoll_ctl))
		ddl_real_resolve();
	int r = ddl_real.epoll_ctl(epfd, op, fd, ev);
	if (r == 0 && op == EPOLL_CTL_ADD && (unsigned)epfd < DDL_FD_MAX &&
	    (atomic_load_explicit(&ddl_g.enabled, memory_order_relaxed) & DDL_FAM_SOCKET) &&
	    ddl_fd_is_sock(fd))
		ddl_fd_mark_epoll(epfd);
	return r;
}

DDL_EXPORT int socket(int domain, int type, int proto)
{
	if (ddl_unlikely(!ddl_real.socket))
		ddl_real_resolve();
	int r = ddl_real.socket(domain, type, proto);
	if (r >= 0)
		ddl_fd_set(r, DDL_FD_SOCK);
	return r;
}

DDL_EXPORT int socketpair(int domain, int type, int proto, int sv[2])
{
	if (ddl_unlikely(!ddl_real.socketpair))
		ddl_real_resolve();
	int r = ddl_real.socketpair(domain, type, proto, sv);
	if (r == 0) {
		ddl_fd_set(sv[0], DDL_FD_SOCK);
		ddl_fd_set(sv[1], DDL_FD_SOCK);
	}
	return r;
}

DDL_EXPORT int close(int fd)
{
	if (ddl_unlikely(!ddl_real.close))
		ddl_real_resolve();
	ddl_fd_forget(fd);
	return ddl_real.close(fd);
}

DDL_EXPORT int dup2(int oldfd, int newfd)
{
	if (ddl_unlikely(!ddl_real.dup2))
		ddl_real_resolve();
	int r = ddl_real.dup2(oldfd, newfd);
	if (r >= 0 && oldfd != newfd)
		ddl_fd_forget(newfd);
	return r;
}

DDL_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	if (ddl_unlikely(!ddl_real.dup3))
		ddl_real_resolve();
	int r = ddl_real.dup3(oldfd, newfd, flags);
	if (r >= 0)
		ddl_fd_forget(newfd);
	return r;
}

DDL_EXPORT int dup(int fd)
{
	if (ddl_unlikely(!ddl_real.dup))
		ddl_real_resolve();
	int r = ddl_real.dup(fd);
	if (r >= 0)
		ddl_fd_forget(r);
	return r;
}

/* fcntl's third argument is read as a pointer-sized word, as glibc does. */
DDL_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	if (ddl_unlikely(!ddl_real.fcntl))
		ddl_real_resolve();
	int r = ddl_real.fcntl(fd, cmd, arg);
	if (r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))
		ddl_fd_forget(r);
	return r;
}

DDL_EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	if (ddl_unlikely(!ddl_real.fcntl64))
		ddl_real_resolve();
	if (!ddl_real.fcntl64) {
		errno = ENOSYS;
		return -1;
	}
	int r = ddl_real.fcntl64(fd, cmd, arg);
	if (r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))
		ddl_fd_forget(r);
	return r;
}

/* stdio closes through glibc's own close: forget the descriptor here. */
DDL_EXPORT int fclose(FILE *f)
{
	if (ddl_unlikely(!ddl_real.fclose))
		ddl_real_resolve();
	int fd = f ? fileno(f) : -1;
	int r = ddl_real.fclose(f);
	if (fd >= 0)
		ddl_fd_forget(fd);
	return r;
}

DDL_EXPORT void closefrom(int low)
{
	if (ddl_unlikely(!ddl_real.closefrom))
		ddl_real_resolve();
	if (ddl_real.closefrom)
		ddl_real.closefrom(low);
	unsigned hi = atomic_load(&ddl_fd_hi);
	for (unsigned fd = low < 0 ? 0 : (unsigned)low; fd < hi; fd++)
		ddl_fd_forget((int)fd);
}

DDL_EXPORT int close_range(unsigned int first, unsigned int last, int flags)
{
	if (ddl_unlikely(!ddl_real.close_range))
		ddl_real_resolve();
	if (!ddl_real.close_range) {
		errno = ENOSYS;
		return -1;
	}
	int r = ddl_real.close_range(first, last, flags);
	if (r == 0 && !(flags & CLOSE_RANGE_CLOEXEC)) {
		unsigned hi = atomic_load(&ddl_fd_hi);
		for (unsigned fd = first; fd <= last && fd < hi; fd++)
			ddl_fd_forget((int)fd);
	}
	return r;
}
