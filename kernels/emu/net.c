/*
 * The emulated interconnect and network: real sockets between rank
 * processes, with the sending side paced to the emulated bandwidth.
 *
 * Every communicator rank listens on TCP (DDLEMU_ADDR, default 127.0.0.1,
 * port chosen by the kernel) and on an abstract Unix socket. Two ranks with
 * the same host identity (DDLPROF_HOST, else the hostname) are on the same
 * emulated host: they talk over the Unix socket, paced at DDLEMU_INTRA_GBPS;
 * ranks on different host identities talk over TCP, paced at
 * DDLEMU_NET_GBPS. The lower rank of a pair connects, the higher accepts,
 * so each pair has one connection, used in both directions; connections
 * are made on first use (ring neighbours at communicator creation).
 *
 * Pacing: one token bucket per emulated device and link class, as a
 * virtual clock `next` (when the link is next free). A send reserves a
 * slot of about half a millisecond of wire time and writes its piece when
 * the slot begins; the operation is not over before its last slot ends
 * (coll.c), so a transfer of B bytes takes B / bandwidth, and the receiver
 * has the slot's time to take the piece in and reduce it. Within one
 * operation the sender keeps to its schedule (a late wake-up is caught
 * up); a new operation starts from its start on the device (c->op_start,
 * which may be a little before now: the time this thread took to get to
 * it is caught up too), never from earlier, so an idle link saves up no
 * burst.
 *
 * emu_xfer_run moves a set of transfers concurrently with non-blocking
 * sockets and ppoll (sleeping until the next piece is due, never
 * spinning): all the sends and receives of a ring step, or of a group of
 * ncclSend/ncclRecv, progress together, so no rank waits on another's
 * send buffer. Each transfer starts with a header (operation tag and
 * length) so that mismatched operations fail instead of mixing bytes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "emu.h"

#define EMU_CONN_MAGIC 0x636f6e6eu
#define EMU_XFER_MAGIC 0x78666572u
#define EMU_PACE_CATCHUP 10000000u /* ns */
#define EMU_PACE_PIECE_NS 500000u  /* wire time of one paced write */
#define EMU_HELLO_TIMEOUT_MS 10000

struct emu_conn_hello {
	uint32_t magic, zero;
	uint64_t nonce;
	int32_t from, to;
};

struct emu_xfer_hdr {
	uint32_t magic, zero;
	uint64_t tag;
	uint64_t len;
};

struct emu_pacer {
	pthread_mutex_t mu;
	uint64_t next;
	const struct ncclComm *owner; /* the operation that reserved last */
	uint64_t tag;
};

static struct emu_pacer emu_pacers[EMU_MAX_DEVICES][2];
static pthread_once_t emu_pacer_once = PTHREAD_ONCE_INIT;

static void emu_pacer_init(void)
{
	for (int d = 0; d < EMU_MAX_DEVICES; d++)
		for (int k = 0; k < 2; k++)
			pthread_mutex_init(&emu_pacers[d][k].mu, NULL);
}

/*
 * Reserves a slot of k bytes on the link for operation (c, tag); returns
 * when it begins (when the piece may be written) and sets *slot_end. The
 * link is busy until `next`. When the same operation reserved last, it
 * continues on its own schedule, up to EMU_PACE_CATCHUP behind now: a
 * sender that woke late, or waited for its data, catches up, but never gets
 * ahead of start + bytes / bandwidth. Another operation starts no earlier
 * than its device start (and than EMU_PACE_CATCHUP before now).
 */
static uint64_t emu_pace(struct emu_pacer *p, double bps, size_t k, uint64_t now, const struct ncclComm *c,
                         uint64_t tag, uint64_t *slot_end)
{
	pthread_mutex_lock(&p->mu);
	uint64_t floor = now > EMU_PACE_CATCHUP ? now - EMU_PACE_CATCHUP : 0;
	if ((p->owner != c || p->tag != tag) && c->op_start > floor)
		floor = c->op_start;
	uint64_t start = p->next > floor ? p->next : floor;
	p->next = start + emu_wire_ns(k, bps);
	p->owner = c;
	p->tag = tag;
	*slot_end = p->next;
	pthread_mutex_unlock(&p->mu);
	return start;
}

/* ---- sockets ---- */

static void emu_sock_opts(int fd, int tcp)
{
	int one = 1;
	if (tcp)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int emu_listen_tcp(struct in_addr ip, uint16_t *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr = ip};
	socklen_t len = sizeof a;
	if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 1024) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
		close(fd);
		return -1;
	}
	*port = a.sin_port;
	return fd;
}

static socklen_t emu_unix_addr(struct sockaddr_un *a, const char *name)
{
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	size_t n = strnlen(name, EMU_UNAME_MAX - 1);
	memcpy(a->sun_path + 1, name, n); /* abstract namespace: leading NUL */
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

uint64_t emu_random64(void)
{
	uint64_t r = 0;
	if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
		r = emu_now() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&r;
	return r;
}

int emu_listen_unix(char name[EMU_UNAME_MAX])
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_un a;
	snprintf(name, EMU_UNAME_MAX, "ddlemu.%d.%016llx", (int)getpid(), (unsigned long long)emu_random64());
	socklen_t len = emu_unix_addr(&a, name);
	if (bind(fd, (struct sockaddr *)&a, len) != 0 || listen(fd, 1024) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int emu_connect_addr(int family, const struct sockaddr *a, socklen_t len)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int rc;
	do
		rc = connect(fd, a, len);
	while (rc != 0 && errno == EINTR);
	if (rc != 0) {
		close(fd);
		return -1;
	}
	emu_sock_opts(fd, family == AF_INET);
	return fd;
}

int emu_connect_tcp(struct in_addr ip, uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr = ip, .sin_port = port};
	return emu_connect_addr(AF_INET, (struct sockaddr *)&a, sizeof a);
}

int emu_connect_unix(const char *name)
{
	struct sockaddr_un a;
	socklen_t len = emu_unix_addr(&a, name);
	return emu_connect_addr(AF_UNIX, (struct sockaddr *)&a, len);
}

int emu_write_full(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Reads exactly n bytes, waiting at most timeout_ms in all (-1: forever). */
int emu_read_full_timeout(int fd, void *buf, size_t n, int timeout_ms)
{
	char *p = buf;
	uint64_t end = timeout_ms < 0 ? UINT64_MAX : emu_now() + (uint64_t)timeout_ms * 1000000u;
	while (n > 0) {
		if (timeout_ms >= 0) {
			uint64_t now = emu_now();
			if (now >= end)
				return -1;
			struct pollfd pf = {fd, POLLIN, 0};
			int r = poll(&pf, 1, (int)((end - now) / 1000000u) + 1);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				return -1;
		}
		ssize_t k = recv(fd, p, n, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

int emu_read_full(int fd, void *buf, size_t n)
{
	return emu_read_full_timeout(fd, buf, n, -1);
}

static void emu_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* ---- connections of a communicator ---- */

static int emu_same_host(const struct ncclComm *c, int peer)
{
	return !strcmp(c->peers[peer].host, c->peers[c->rank].host);
}

static int emu_conn_open(struct ncclComm *c, int peer)
{
	int fd = -1;
	if (emu_same_host(c, peer))
		fd = emu_connect_unix(c->peers[peer].uname);
	/* a host identity shared across network namespaces has no common abstract socket: use TCP */
	if (fd < 0)
		fd = emu_connect_tcp(c->peers[peer].ip, c->peers[peer].port);
	if (fd < 0)
		return -1;
	struct emu_conn_hello h = {EMU_CONN_MAGIC, 0, c->nonce, c->rank, peer};
	if (emu_write_full(fd, &h, sizeof h) < 0) {
		close(fd);
		return -1;
	}
	emu_nonblock(fd);
	c->conns[peer].fd = fd;
	c->conns[peer].intra = emu_same_host(c, peer);
	return 0;
}

/* Accepts one connection from a lower rank of this communicator; 0, or -1 on failure or abort. */
static int emu_conn_accept(struct ncclComm *c)
{
	struct pollfd pf[2] = {{c->lfd_tcp, POLLIN, 0}, {c->lfd_unix, POLLIN, 0}};
	for (;;) {
		if (c->aborting)
			return -1;
		int r = poll(pf, 2, 200);
		if (r < 0 && errno != EINTR)
			return -1;
		for (int i = 0; i < 2 && r > 0; i++) {
			if (!(pf[i].revents & POLLIN))
				continue;
			int fd = accept4(pf[i].fd, NULL, NULL, SOCK_CLOEXEC);
			if (fd < 0)
				continue;
			struct emu_conn_hello h;
			if (emu_read_full_timeout(fd, &h, sizeof h, EMU_HELLO_TIMEOUT_MS) < 0 ||
			    h.magic != EMU_CONN_MAGIC || h.nonce != c->nonce || h.to != c->rank || h.from < 0 ||
			    h.from >= c->rank || c->conns[h.from].fd >= 0) {
				close(fd);
				continue;
			}
			emu_sock_opts(fd, i == 0);
			emu_nonblock(fd);
			c->conns[h.from].fd = fd;
			c->conns[h.from].intra = emu_same_host(c, h.from);
			return 0;
		}
	}
}

int emu_comm_connect(struct ncclComm *c, const int *peers, int n)
{
	/* connect to every higher peer first: connects never wait, so no cycle of accepts can form */
	for (int i = 0; i < n; i++) {
		int p = peers[i];
		if (p > c->rank && c->conns[p].fd < 0 && emu_conn_open(c, p) < 0) {
			emu_comm_fail(c, ncclSystemError, "rank %d: cannot connect to rank %d: %s", c->rank, p,
			              strerror(errno));
			return -1;
		}
	}
	for (int i = 0; i < n; i++) {
		int p = peers[i];
		while (p < c->rank && c->conns[p].fd < 0)
			if (emu_conn_accept(c) < 0) {
				emu_comm_fail(c, c->aborting ? ncclInvalidUsage : ncclSystemError,
				              "rank %d: no connection from rank %d", c->rank, p);
				return -1;
			}
	}
	return 0;
}

/* ---- the transfer engine ---- */

/*
 * Links each transfer to the previous one with the same peer and direction,
 * which goes first (x[i].prev, -1 for none); 0, or -1 without memory.
 */
static int emu_xfer_order(struct emu_xfer *x, int n, int nranks)
{
	int *last = malloc(2 * (size_t)nranks * sizeof *last);
	if (!last)
		return -1;
	for (int i = 0; i < 2 * nranks; i++)
		last[i] = -1;
	for (int i = 0; i < n; i++) {
		int key = 2 * x[i].peer + (x[i].send != 0);
		x[i].prev = last[key];
		last[key] = i;
	}
	free(last);
	return 0;
}

/* A transfer waits for the one before it on its connection, and for the one it comes after. */
static int emu_xfer_blocked(const struct emu_xfer *x, int i)
{
	return (x[i].prev >= 0 && !x[x[i].prev].fin) || (x[i].after && !x[x[i].after - 1].fin);
}

static size_t emu_piece(double bps)
{
	double b = bps / 8 * EMU_PACE_PIECE_NS / 1e9;
	return b < 16384 ? 16384 : b > (1 << 20) ? (1 << 20) : (size_t)b;
}

/* Progress on a send; 0, or -1 with errno on a socket error. */
static int emu_xfer_send(struct ncclComm *c, struct emu_xfer *t, int paced)
{
	int fd = c->conns[t->peer].fd;
	while (t->hdr_done < sizeof(struct emu_xfer_hdr)) {
		ssize_t k = send(fd, t->hdr + t->hdr_done, sizeof(struct emu_xfer_hdr) - t->hdr_done,
		                 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		t->hdr_done += (size_t)k;
	}
	if (t->done == t->len) {
		t->fin = 1;
		return 0;
	}
	if (paced && !t->budget) /* the engine reserves the next piece first */
		return 0;
	size_t want = paced ? t->budget : t->len - t->done;
	while (want > 0) {
		ssize_t k = send(fd, t->buf + t->done, want, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		t->done += (size_t)k;
		want -= (size_t)k;
		if (paced)
			t->budget -= (size_t)k;
	}
	if (t->done == t->len)
		t->fin = 1;
	return 0;
}

/* Progress on a receive; 0, -1 with errno on a socket error, -2 on a bad header, -3 at EOF. */
static int emu_xfer_recv(struct ncclComm *c, struct emu_xfer *t, uint64_t tag)
{
	int fd = c->conns[t->peer].fd;
	while (t->hdr_done < sizeof(struct emu_xfer_hdr)) {
		ssize_t k = recv(fd, t->hdr + t->hdr_done, sizeof(struct emu_xfer_hdr) - t->hdr_done, MSG_DONTWAIT);
		if (k == 0)
			return -3;
		if (k < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		t->hdr_done += (size_t)k;
		if (t->hdr_done == sizeof(struct emu_xfer_hdr)) {
			struct emu_xfer_hdr h;
			memcpy(&h, t->hdr, sizeof h);
			if (h.magic != EMU_XFER_MAGIC || h.tag != tag || h.len != t->len)
				return -2;
		}
	}
	while (t->done < t->len) {
		ssize_t k = recv(fd, t->buf + t->done, t->len - t->done, MSG_DONTWAIT);
		if (k == 0)
			return -3;
		if (k < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		t->done += (size_t)k;
	}
	t->fin = 1;
	return 0;
}

static double emu_link_bps(const struct ncclComm *c, int peer)
{
	return c->conns[peer].intra ? emu_cfg.intra_bps : emu_cfg.net_bps;
}

/* Plans a paced send's next piece; returns when it may be written. */
static uint64_t emu_xfer_plan(struct ncclComm *c, struct emu_xfer *t, uint64_t now, uint64_t tag)
{
	if (t->budget || t->done == t->len)
		return t->ready_at;
	double bps = emu_link_bps(c, t->peer);
	size_t k = emu_piece(bps);
	if (k > t->len - t->done)
		k = t->len - t->done;
	struct emu_pacer *p = &emu_pacers[c->dev][c->conns[t->peer].intra ? 0 : 1];
	uint64_t slot_end;
	t->ready_at = emu_pace(p, bps, k, now, c, tag, &slot_end);
	t->budget = k;
	if (slot_end > c->sched_end)
		c->sched_end = slot_end;
	return t->ready_at;
}

static int emu_xfer_fail(struct ncclComm *c, int peer, int send, int rc)
{
	if (c->aborting)
		emu_comm_fail(c, ncclInvalidUsage, "rank %d: communicator aborted", c->rank);
	else if (rc == -2)
		emu_comm_fail(c, ncclInvalidUsage, "rank %d: rank %d sent a different operation or size",
		              c->rank, peer);
	else if (rc == -3)
		emu_comm_fail(c, ncclRemoteError, "rank %d: rank %d closed the connection", c->rank, peer);
	else
		emu_comm_fail(c, ncclRemoteError, "rank %d: %s rank %d: %s", c->rank, send ? "send to" : "receive from",
		              peer, strerror(errno));
	return c->async_err ? c->async_err : ncclRemoteError;
}

static int emu_oom_fail(struct ncclComm *c)
{
	emu_comm_fail(c, ncclSystemError, "rank %d: out of memory", c->rank);
	return ncclSystemError;
}

int emu_xfer_run(struct ncclComm *c, struct emu_xfer *x, int n, uint64_t tag)
{
	pthread_once(&emu_pacer_once, emu_pacer_init);
	int *peers = calloc((size_t)(n > 0 ? n : 1), sizeof *peers);
	struct pollfd *pf = malloc((size_t)(n > 0 ? n : 1) * sizeof *pf);
	int *idx = malloc((size_t)(n > 0 ? n : 1) * sizeof *idx);
	int rc = 0;
	if (!peers || !pf || !idx) {
		rc = emu_oom_fail(c);
		goto out;
	}
	for (int i = 0; i < n; i++) {
		peers[i] = x[i].peer;
		struct emu_xfer_hdr h = {EMU_XFER_MAGIC, 0, tag, x[i].len};
		memset(&x[i].hdr, 0, sizeof x[i].hdr);
		if (x[i].send)
			memcpy(x[i].hdr, &h, sizeof h);
		x[i].hdr_done = x[i].done = x[i].budget = 0;
		x[i].fin = 0;
	}
	if (emu_xfer_order(x, n, c->nranks) < 0) {
		rc = emu_oom_fail(c);
		goto out;
	}

	if (emu_comm_connect(c, peers, n) < 0) {
		rc = c->async_err ? c->async_err : ncclSystemError;
		goto out;
	}
	for (;;) {
		uint64_t now = emu_now(), wake = UINT64_MAX;
		int np = 0, active = 0;
		for (int i = 0; i < n; i++) {
			struct emu_xfer *t = &x[i];
			if (t->fin)
				continue;
			active++;
			if (emu_xfer_blocked(x, i))
				continue;
			int paced = t->send && emu_link_bps(c, t->peer) > 0;
			if (paced && t->hdr_done == sizeof(struct emu_xfer_hdr) && t->done < t->len) {
				uint64_t at = emu_xfer_plan(c, t, now, tag);
				if (at > now) {
					wake = at < wake ? at : wake;
					continue;
				}
			}
			pf[np] = (struct pollfd){c->conns[t->peer].fd, (short)(t->send ? POLLOUT : POLLIN), 0};
			idx[np++] = i;
		}
		if (!active)
			break;
		if (c->aborting) {
			rc = emu_xfer_fail(c, x[0].peer, x[0].send, -1);
			goto out;
		}
		/* wake at the next piece, and at least every 200 ms to notice an abort */
		uint64_t limit = now + 200000000u;
		if (wake > limit)
			wake = limit;
		struct timespec ts = {(time_t)((wake - now) / 1000000000u), (long)((wake - now) % 1000000000u)};
		int r = ppoll(pf, (nfds_t)np, &ts, NULL);
		if (r < 0 && errno != EINTR) {
			rc = emu_xfer_fail(c, x[0].peer, x[0].send, -1);
			goto out;
		}
		for (int j = 0; j < np && r > 0; j++) {
			if (!pf[j].revents)
				continue;
			struct emu_xfer *t = &x[idx[j]];
			int paced = t->send && emu_link_bps(c, t->peer) > 0;
			int e = t->send ? emu_xfer_send(c, t, paced) : emu_xfer_recv(c, t, tag);
			if (e < 0) {
				rc = emu_xfer_fail(c, t->peer, t->send, e);
				goto out;
			}
			if (t->fin && t->red_dst) {
				size_t cnt = t->len / emu_type_size(t->red_type);
				emu_reduce(t->red_dst, t->buf, cnt, t->red_type, t->red_op);
				if (t->red_div)
					emu_divide(t->red_dst, cnt, t->red_type, t->red_div);
			}
		}
	}
out:
	free(peers);
	free(pf);
	free(idx);
	return rc;
}
