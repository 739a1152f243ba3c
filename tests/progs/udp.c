/* udp: two processes exchange UDP datagrams on 127.0.0.1 using
 * sendto/recvfrom, sendmsg/recvmsg (msg_name), sendmmsg/recvmmsg, and a
 * connected socket with send/recv (and write/read).  Traffic runs in
 * lock-step batches (a side only sends after it received the whole previous
 * batch), so at most one small batch is in flight and nothing is dropped.
 * See README.md for the DDLT_EXPECT contract. */
#define _GNU_SOURCE
#include <poll.h>
#include <sys/uio.h>

#define PROG "udp"
#include "progs.h"

#define RBUF 65536

static int g_fd;                       /* own socket */
static struct sockaddr_in g_peer;      /* peer's bound address */
static unsigned char g_out[RBUF], g_in[RBUF];

static void check_from(const struct sockaddr_in *from, socklen_t len)
{
    if (len != sizeof *from || from->sin_family != AF_INET ||
        from->sin_port != g_peer.sin_port ||
        from->sin_addr.s_addr != g_peer.sin_addr.s_addr)
        fail("datagram from unexpected address");
}

/* Each test block below is driven from both sides with the same size list;
 * the receiver only checks counts and the sum of sizes (order-agnostic). */

static void wait_in(void)
{
    struct pollfd p = {.fd = g_fd, .events = POLLIN};
    int r;
    do
        r = poll(&p, 1, 60000);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        die("poll");
    if (r == 0)
        fail("timed out waiting for a datagram (lost?)");
}

static size_t sum(const size_t *sz, int n)
{
    size_t t = 0;
    for (int i = 0; i < n; i++)
        t += sz[i];
    return t;
}

/* --- sendto / recvfrom --- */
static void tx_sendto(const size_t *sz, int n)
{
    for (int i = 0; i < n; i++) {
        ssize_t r = sendto(g_fd, g_out, sz[i], 0, (struct sockaddr *)&g_peer, sizeof g_peer);
        if (r < 0)
            die("sendto");
        if ((size_t)r != sz[i])
            fail("sendto: short datagram");
        g_sent += (unsigned long long)r;
    }
}

static void rx_recvfrom(const size_t *sz, int n)
{
    size_t tot = 0;
    for (int i = 0; i < n; i++) {
        struct sockaddr_in from;
        socklen_t fl = sizeof from;
        wait_in();
        ssize_t r = recvfrom(g_fd, g_in, RBUF, 0, (struct sockaddr *)&from, &fl);
        if (r < 0)
            die("recvfrom");
        check_from(&from, fl);
        g_recv += (unsigned long long)r;
        tot += (size_t)r;
    }
    if (tot != sum(sz, n))
        fail("recvfrom: byte total mismatch");
}

/* --- sendmsg / recvmsg with msg_name, two iovecs --- */
static void tx_sendmsg(const size_t *sz, int n)
{
    for (int i = 0; i < n; i++) {
        size_t a = sz[i] / 3;
        struct iovec iov[2] = {{g_out, a}, {g_out + a, sz[i] - a}};
        struct msghdr mh = {0};
        mh.msg_name = &g_peer;
        mh.msg_namelen = sizeof g_peer;
        mh.msg_iov = iov;
        mh.msg_iovlen = 2;
        ssize_t r = sendmsg(g_fd, &mh, 0);
        if (r < 0)
            die("sendmsg");
        if ((size_t)r != sz[i])
            fail("sendmsg: short datagram");
        g_sent += (unsigned long long)r;
    }
}

static void rx_recvmsg(const size_t *sz, int n)
{
    size_t tot = 0;
    for (int i = 0; i < n; i++) {
        struct sockaddr_in from;
        struct iovec iov[2] = {{g_in, 1000}, {g_in + 1000, RBUF - 1000}};
        struct msghdr mh = {0};
        mh.msg_name = &from;
        mh.msg_namelen = sizeof from;
        mh.msg_iov = iov;
        mh.msg_iovlen = 2;
        wait_in();
        ssize_t r = recvmsg(g_fd, &mh, 0);
        if (r < 0)
            die("recvmsg");
        if (mh.msg_flags & MSG_TRUNC)
            fail("recvmsg: truncated");
        check_from(&from, mh.msg_namelen);
        g_recv += (unsigned long long)r;
        tot += (size_t)r;
    }
    if (tot != sum(sz, n))
        fail("recvmsg: byte total mismatch");
}

/* --- sendmmsg / recvmmsg --- */
static void tx_sendmmsg(const size_t *sz, int n)
{
    struct iovec iov[8];
    struct mmsghdr mm[8];
    if (n > 8)
        fail("too many messages");
    memset(mm, 0, sizeof mm);
    for (int i = 0; i < n; i++) {
        iov[i].iov_base = g_out;
        iov[i].iov_len = sz[i];
        mm[i].msg_hdr.msg_name = &g_peer;
        mm[i].msg_hdr.msg_namelen = sizeof g_peer;
        mm[i].msg_hdr.msg_iov = &iov[i];
        mm[i].msg_hdr.msg_iovlen = 1;
    }
    int done = 0;
    while (done < n) {
        int k = sendmmsg(g_fd, mm + done, (unsigned)(n - done), 0);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            die("sendmmsg");
        }
        for (int i = done; i < done + k; i++) {
            if (mm[i].msg_len != sz[i])
                fail("sendmmsg: short datagram");
            g_sent += mm[i].msg_len;
        }
        done += k;
    }
}

static void rx_recvmmsg(const size_t *sz, int n)
{
    static unsigned char bufs[8][9000];
    struct iovec iov[8];
    struct mmsghdr mm[8];
    struct sockaddr_in from[8];
    if (n > 8)
        fail("too many messages");
    memset(mm, 0, sizeof mm);
    for (int i = 0; i < n; i++) {
        iov[i].iov_base = bufs[i];
        iov[i].iov_len = sizeof bufs[i];
        mm[i].msg_hdr.msg_name = &from[i];
        mm[i].msg_hdr.msg_namelen = sizeof from[i];
        mm[i].msg_hdr.msg_iov = &iov[i];
        mm[i].msg_hdr.msg_iovlen = 1;
    }
    int done = 0;
    size_t tot = 0;
    while (done < n) {
        wait_in();
        int k = recvmmsg(g_fd, mm + done, (unsigned)(n - done), MSG_WAITFORONE, NULL);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            die("recvmmsg");
        }
        for (int i = done; i < done + k; i++) {
            if (mm[i].msg_hdr.msg_flags & MSG_TRUNC)
                fail("recvmmsg: truncated");
            check_from(&from[i], mm[i].msg_hdr.msg_namelen);
            g_recv += mm[i].msg_len;
            tot += mm[i].msg_len;
        }
        done += k;
    }
    if (tot != sum(sz, n))
        fail("recvmmsg: byte total mismatch");
}

/* --- connected socket: send/write, recv/read --- */
static void tx_connected(const size_t *sz, int n)
{
    for (int i = 0; i < n; i++) {
        ssize_t r = (i % 2) ? write(g_fd, g_out, sz[i]) : send(g_fd, g_out, sz[i], 0);
        if (r < 0)
            die("send (connected)");
        if ((size_t)r != sz[i])
            fail("send: short datagram");
        g_sent += (unsigned long long)r;
    }
}

static void rx_connected(const size_t *sz, int n)
{
    size_t tot = 0;
    for (int i = 0; i < n; i++) {
        wait_in();
        ssize_t r = (i % 2) ? read(g_fd, g_in, RBUF) : recv(g_fd, g_in, RBUF, 0);
        if (r < 0)
            die("recv (connected)");
        g_recv += (unsigned long long)r;
        tot += (size_t)r;
    }
    if (tot != sum(sz, n))
        fail("recv: byte total mismatch");
}

/* The schedule: odd steps child->parent, even steps parent->child. */
static const size_t s1[] = {100, 8192};
static const size_t s2[] = {700, 4000};
static const size_t s3[] = {500, 8192};
static const size_t s4[] = {1024, 5001};
static const size_t s5[] = {512, 1024, 8000};
static const size_t s6[] = {64, 2048, 6000};
static const size_t s7[] = {1234, 8192, 1};
static const size_t s8[] = {4321, 17, 8000};

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void connect_peer(void)
{
    if (connect(g_fd, (struct sockaddr *)&g_peer, sizeof g_peer) < 0)
        die("connect");
}

static void run_child(void)
{
    tx_sendto(s1, N(s1));
    rx_recvfrom(s2, N(s2));
    tx_sendmsg(s3, N(s3));
    rx_recvmsg(s4, N(s4));
    tx_sendmmsg(s5, N(s5));
    rx_recvmmsg(s6, N(s6));
    connect_peer();
    tx_connected(s7, N(s7));
    rx_connected(s8, N(s8));
}

static void run_parent(void)
{
    rx_recvfrom(s1, N(s1));
    tx_sendto(s2, N(s2));
    rx_recvmsg(s3, N(s3));
    tx_sendmsg(s4, N(s4));
    rx_recvmmsg(s5, N(s5));
    tx_sendmmsg(s6, N(s6));
    connect_peer();
    rx_connected(s7, N(s7));
    tx_connected(s8, N(s8));
}

int main(void)
{
    for (size_t i = 0; i < sizeof g_out; i++)
        g_out[i] = (unsigned char)(i * 13u);

    struct sockaddr_in pa, ca;
    int pfd = loopback_socket(SOCK_DGRAM, 0, &pa);
    int cfd = loopback_socket(SOCK_DGRAM, 0, &ca);
    int rp[2];
    make_pipe(rp);

    pid_t pid = fork_flushed();
    if (pid == 0) {
        close(pfd);
        close(rp[0]);
        g_fd = cfd;
        g_peer = pa;
        run_child();
        close(cfd);
        send_report(rp[1]);
        write_expect(g_sent, g_recv);
        exit(0);
    }
    close(cfd);
    close(rp[1]);
    g_fd = pfd;
    g_peer = ca;
    run_parent();
    close(pfd);

    unsigned long long rep[2];
    read_report(rp[0], rep);
    wait_exit0(pid);

    size_t c2p = sum(s1, N(s1)) + sum(s3, N(s3)) + sum(s5, N(s5)) + sum(s7, N(s7));
    size_t p2c = sum(s2, N(s2)) + sum(s4, N(s4)) + sum(s6, N(s6)) + sum(s8, N(s8));
    if (g_sent != p2c || g_recv != c2p || rep[0] != c2p || rep[1] != p2c)
        fail("byte totals differ from expectation");

    printf("udp: datagrams child->parent 10, parent->child 10\n");
    parent_done(rep);
    return 0;
}
