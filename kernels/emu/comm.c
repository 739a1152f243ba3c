/*
 * Emulated NCCL communicators: unique ids, the rendezvous, split, and
 * teardown.
 *
 * ncclGetUniqueId starts a small root thread listening on TCP and packs its
 * address (IPv4, port) and a random nonce into the id. Each rank of
 * ncclCommInitRank listens for its peers (net.c), connects to the root,
 * sends {nonce, nranks, rank, its listen addresses, host identity}, and
 * gets the whole table back once every rank has arrived; then it connects
 * to its ring neighbours. ncclCommSplit exchanges {color, key, addresses}
 * by an all-gather over the parent and forms one new ring per color, in
 * (key, parent rank) order. Operations of a communicator run in the order
 * they were issued (issued/executed counters), whatever stream they are on,
 * which is what keeps every rank's sequence of operations in step.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "emu.h"

#define EMU_UID_MAGIC 0x6e756964u
#define EMU_ROOT_MAGIC 0x726f6f74u
#define EMU_PROTO_VERSION 1 /* bump when any wire struct of comm.c or net.c changes */
#define EMU_MAX_RANKS 65536

struct emu_uid {
	uint32_t magic, version;
	struct in_addr ip;
	uint16_t port, pad;
	uint64_t nonce;
};
_Static_assert(sizeof(struct emu_uid) <= NCCL_UNIQUE_ID_BYTES, "unique id too large");

struct emu_root_hello {
	uint32_t magic, version;
	uint64_t nonce;
	int32_t nranks, rank;
	struct emu_peer peer;
};

struct emu_root_reply {
	int32_t status, nranks;
};

struct emu_root {
	int lfd;
	uint64_t nonce;
};

/* ---- turns and errors ---- */

int emu_comm_turn_wait(struct ncclComm *c, uint64_t seq)
{
	pthread_mutex_lock(&c->mu);
	while (c->executed != seq && !c->aborting)
		pthread_cond_wait(&c->cv, &c->mu);
	int ab = c->aborting;
	pthread_mutex_unlock(&c->mu);
	return ab ? -1 : 0;
}

void emu_comm_turn_done(struct ncclComm *c)
{
	pthread_mutex_lock(&c->mu);
	c->executed++;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

uint64_t emu_comm_take_turn(struct ncclComm *c)
{
	pthread_mutex_lock(&c->mu);
	uint64_t seq = c->issued++;
	pthread_mutex_unlock(&c->mu);
	return seq;
}

/* Waits until every operation issued on c has run. */
static void emu_comm_drain(struct ncclComm *c)
{
	pthread_mutex_lock(&c->mu);
	while (c->executed < c->issued)
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
}

void emu_comm_fail(struct ncclComm *c, ncclResult_t r, const char *fmt, ...)
{
	pthread_mutex_lock(&c->mu);
	if (!c->async_err) {
		c->async_err = r;
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->errmsg, sizeof c->errmsg, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&c->mu);
}

/* ---- lifetime ---- */

static struct emu_handles emu_live_comms = EMU_HANDLES_INIT;

int emu_comm_valid(const struct ncclComm *c)
{
	return c && emu_handles_has(&emu_live_comms, c);
}

struct ncclComm *emu_comm_alloc(void)
{
	struct ncclComm *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	if (emu_handles_add(&emu_live_comms, c) < 0) {
		free(c);
		return NULL;
	}
	c->lfd_tcp = c->lfd_unix = -1;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	return c;
}

void emu_comm_free(struct ncclComm *c)
{
	if (!c)
		return;
	for (int i = 0; c->conns && i < c->nranks; i++)
		if (c->conns[i].fd >= 0)
			close(c->conns[i].fd);
	if (c->lfd_tcp >= 0)
		close(c->lfd_tcp);
	if (c->lfd_unix >= 0)
		close(c->lfd_unix);
	free(c->conns);
	free(c->peers);
	free(c->scratch[0]);
	free(c->scratch[1]);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	emu_handles_del(&emu_live_comms, c);
	free(c);
}

/* Opens c's listeners and describes them in *me; 0 or -1. */
static int emu_comm_listen(struct ncclComm *c, struct emu_peer *me)
{
	memset(me, 0, sizeof *me);
	me->ip = emu_cfg.addr;
	snprintf(me->host, sizeof me->host, "%s", emu_cfg.host);
	c->lfd_tcp = emu_listen_tcp(emu_cfg.addr, &me->port);
	c->lfd_unix = emu_listen_unix(me->uname);
	return c->lfd_tcp >= 0 && c->lfd_unix >= 0 ? 0 : -1;
}

static int emu_comm_conns(struct ncclComm *c)
{
	c->conns = calloc((size_t)c->nranks, sizeof *c->conns);
	if (!c->conns)
		return -1;
	for (int i = 0; i < c->nranks; i++)
		c->conns[i].fd = -1;
	return 0;
}

/* Connects c to its ring neighbours; a ncclResult_t. */
static ncclResult_t emu_comm_ring(struct ncclComm *c)
{
	int n = c->nranks, r = c->rank;
	int peers[2] = {(r + 1) % n, (r + n - 1) % n};
	if (n == 1)
		return ncclSuccess;
	if (emu_comm_connect(c, peers, n == 2 ? 1 : 2) < 0)
		return c->async_err ? c->async_err : ncclSystemError;
	return ncclSuccess;
}

/* ---- the root ---- */

static void emu_root_reply(int fd, int status, int nranks, const struct emu_peer *table)
{
	struct emu_root_reply r = {status, nranks};
	if (emu_write_full(fd, &r, sizeof r) == 0 && status == 0)
		emu_write_full(fd, table, (size_t)nranks * sizeof *table);
	close(fd);
}

static void *emu_root_main(void *arg)
{
	struct emu_root root = *(struct emu_root *)arg;
	free(arg);
	int nranks = 0, got = 0, *fds = NULL;
	struct emu_peer *table = NULL;
	while (!nranks || got < nranks) {
		int fd = accept4(root.lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EINTR && errno != ECONNABORTED)
				emu_sleep_until(emu_now() + 10000000u); /* out of descriptors: do not spin */
			continue;
		}
		struct emu_root_hello h;
		if (emu_read_full_timeout(fd, &h, sizeof h, 10000) < 0 || h.magic != EMU_ROOT_MAGIC ||
		    h.nonce != root.nonce) {
			close(fd);
			continue;
		}
		if (!nranks && h.nranks >= 1 && h.nranks <= EMU_MAX_RANKS) {
			fds = malloc((size_t)h.nranks * sizeof *fds);
			table = calloc((size_t)h.nranks, sizeof *table);
			if (!fds || !table) {
				free(fds);
				free(table);
				fds = NULL;
				table = NULL;
				emu_root_reply(fd, ncclSystemError, 0, NULL);
				continue;
			}
			nranks = h.nranks;
			for (int i = 0; i < nranks; i++)
				fds[i] = -1;
		}
		if (h.version != EMU_PROTO_VERSION || h.nranks != nranks || h.rank < 0 || h.rank >= nranks ||
		    fds[h.rank] >= 0) {
			emu_root_reply(fd, ncclInvalidUsage, 0, NULL);
			continue;
		}
		fds[h.rank] = fd;
		table[h.rank] = h.peer;
		table[h.rank].host[EMU_HOST_MAX - 1] = 0;
		table[h.rank].uname[EMU_UNAME_MAX - 1] = 0;
		got++;
	}
	for (int i = 0; i < nranks; i++)
		emu_root_reply(fds[i], 0, nranks, table);
	close(root.lfd);
	free(fds);
	free(table);
	return NULL;
}

ncclResult_t emu_uid_new(ncclUniqueId *uniqueId)
{
	emu_init();
	struct emu_uid id = {EMU_UID_MAGIC, EMU_PROTO_VERSION, emu_cfg.addr, 0, 0, emu_random64()};
	struct emu_root *root = malloc(sizeof *root);
	if (!root)
		return ncclSystemError;
	root->lfd = emu_listen_tcp(emu_cfg.addr, &id.port);
	root->nonce = id.nonce;
	if (root->lfd < 0) {
		free(root);
		return ncclSystemError;
	}
	if (emu_thread_start(emu_root_main, root) != 0) {
		close(root->lfd);
		free(root);
		return ncclSystemError;
	}
	memset(uniqueId, 0, sizeof *uniqueId);
	memcpy(uniqueId->internal, &id, sizeof id);
	return ncclSuccess;
}

/* Checks an id; 0 and *out, or -1. */
static int emu_uid_parse(const ncclUniqueId *uid, struct emu_uid *out)
{
	memcpy(out, uid->internal, sizeof *out);
	return out->magic == EMU_UID_MAGIC && out->version == EMU_PROTO_VERSION ? 0 : -1;
}

/* Takes part in the rendezvous; fills c->peers. */
static ncclResult_t emu_comm_rendezvous(struct ncclComm *c, const struct emu_uid *id, const struct emu_peer *me)
{
	int fd = emu_connect_tcp(id->ip, id->port);
	if (fd < 0) {
		emu_comm_fail(c, ncclSystemError, "rank %d: cannot reach the root of the unique id", c->rank);
		return ncclSystemError;
	}
	struct emu_root_hello h = {EMU_ROOT_MAGIC, EMU_PROTO_VERSION, id->nonce, c->nranks, c->rank, *me};
	struct emu_root_reply r;
	ncclResult_t res = ncclSuccess;
	if (emu_write_full(fd, &h, sizeof h) < 0 || emu_read_full(fd, &r, sizeof r) < 0) {
		res = ncclRemoteError;
	} else if (r.status != 0) {
		res = (ncclResult_t)r.status;
	} else if (r.nranks != c->nranks) {
		res = ncclInternalError;
	} else {
		c->peers = calloc((size_t)c->nranks, sizeof *c->peers);
		if (!c->peers || emu_read_full(fd, c->peers, (size_t)c->nranks * sizeof *c->peers) < 0)
			res = c->peers ? ncclRemoteError : ncclSystemError;
	}
	close(fd);
	if (res)
		emu_comm_fail(c, res, "rank %d of %d: the rendezvous failed (%s)", c->rank, c->nranks,
		              res == ncclInvalidUsage ? "rank given twice or nranks differs" : "root gone");
	return res;
}

ncclResult_t emu_comm_init(struct ncclComm *c, int nranks, const ncclUniqueId *uid, int rank, int dev)
{
	struct emu_uid id;
	struct emu_peer me;
	emu_init();
	if (emu_uid_parse(uid, &id) < 0)
		return ncclInvalidArgument;
	c->nranks = nranks;
	c->rank = rank;
	c->dev = dev;
	c->nonce = id.nonce;
	if (emu_comm_listen(c, &me) < 0 || emu_comm_conns(c) < 0)
		return ncclSystemError;
	ncclResult_t r = emu_comm_rendezvous(c, &id, &me);
	if (!r)
		r = emu_comm_ring(c);
	return r;
}

/* ---- split ---- */

struct emu_split_rec {
	int32_t color, key;
	struct emu_peer peer;
};

static uint64_t emu_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The members of color, in (key, parent rank) order; returns how many. */
static int emu_split_members(const struct emu_split_rec *recs, int n, int color, int *members)
{
	int m = 0;
	for (int i = 0; i < n; i++) {
		if (recs[i].color != color)
			continue;
		int j = m++;
		while (j > 0 && recs[members[j - 1]].key > recs[i].key) {
			members[j] = members[j - 1];
			j--;
		}
		members[j] = i;
	}
	return m;
}

ncclResult_t emu_comm_split(struct ncclComm *c, int color, int key, struct ncclComm **out)
{
	struct emu_split_rec *recs = calloc((size_t)c->nranks, sizeof *recs);
	int *members = calloc((size_t)c->nranks, sizeof *members);
	struct ncclComm *nc = color == NCCL_SPLIT_NOCOLOR ? NULL : emu_comm_alloc();
	ncclResult_t r = ncclSuccess;
	*out = NULL;
	if (!recs || !members || (color != NCCL_SPLIT_NOCOLOR && !nc)) {
		r = ncclSystemError;
		goto out;
	}
	recs[c->rank].color = color;
	recs[c->rank].key = key;
	if (nc && emu_comm_listen(nc, &recs[c->rank].peer) < 0)
		r = ncclSystemError; /* still take part, so the others are not left waiting */
	uint64_t seq = emu_comm_take_turn(c);
	if (emu_comm_turn_wait(c, seq) == 0 && !c->async_err) {
		int e = emu_coll_allgather_bytes(c, recs, sizeof *recs, seq);
		if (e && !r)
			r = (ncclResult_t)e;
	} else if (!r) {
		r = c->async_err ? c->async_err : ncclInvalidUsage;
	}
	unsigned split = ++c->splits;
	emu_comm_turn_done(c);
	if (r || !nc)
		goto out;
	int m = emu_split_members(recs, c->nranks, color, members);
	nc->nranks = m;
	nc->dev = c->dev;
	nc->nonce = emu_mix(c->nonce ^ emu_mix(split) ^ emu_mix((uint64_t)(uint32_t)color + 0x9e37));
	nc->peers = calloc((size_t)m, sizeof *nc->peers);
	if (!nc->peers || emu_comm_conns(nc) < 0) {
		r = ncclSystemError;
		goto out;
	}
	for (int i = 0; i < m; i++) {
		nc->peers[i] = recs[members[i]].peer;
		if (members[i] == c->rank)
			nc->rank = i;
	}
	r = emu_comm_ring(nc);
out:
	if (r) {
		emu_comm_free(nc);
		nc = NULL;
	}
	*out = nc;
	free(recs);
	free(members);
	return r;
}

/* ---- teardown ---- */

ncclResult_t emu_comm_destroy(struct ncclComm *c)
{
	emu_comm_drain(c);
	emu_comm_free(c);
	return ncclSuccess;
}

ncclResult_t emu_comm_abort(struct ncclComm *c)
{
	pthread_mutex_lock(&c->mu);
	c->aborting = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	/* wakes a worker blocked on a peer: its transfer fails at once */
	for (int i = 0; c->conns && i < c->nranks; i++)
		if (c->conns[i].fd >= 0)
			shutdown(c->conns[i].fd, SHUT_RDWR);
	emu_comm_drain(c);
	emu_comm_free(c);
	return ncclSuccess;
}

ncclResult_t emu_comm_finalize(struct ncclComm *c)
{
	emu_comm_drain(c);
	return c->async_err;
}
