/* tcp_mix: TCP over 127.0.0.1 between a parent and a forked child, moving
 * known byte counts through every send/recv-family call and every
 * poll-family wait, plus pipe and regular-file traffic that must not count.
 * See README.md for the DDLT_EXPECT contract. */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/uio.h>

#define PROG "tcp_mix"
#include "progs.h"

#define NMETHODS 6
#define NSIZES 3
#define MAXSEG 300000
#define WAIT_MS 60000

static const size_t seg_sizes[NSIZES] = {1000, 65536, 300000};

static unsigned char *sbuf, *rbuf, *scratch;

static void fill(unsigned char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 9));
}

/* ---- waits ---------------------------------------------------------- */

static void wait_readable(int fd, int m)
{
    int r;
    switch (m) {
    case 0: {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        r = poll(&p, 1, WAIT_MS);
        break;
    }
    case 1: {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        struct timespec ts = {WAIT_MS / 1000, 0};
        r = ppoll(&p, 1, &ts, NULL);
        break;
    }
    case 2: {
        fd_set rs;
        FD_ZERO(&rs);
        FD_SET(fd, &rs);
        struct timeval tv = {WAIT_MS / 1000, 0};
        r = select(fd + 1, &rs, NULL, NULL, &tv);
        if (r > 0 && !FD_ISSET(fd, &rs))
            fail("select: fd not set");
        break;
    }
    case 3: {
        fd_set rs;
        FD_ZERO(&rs);
        FD_SET(fd, &rs);
        struct timespec ts = {WAIT_MS / 1000, 0};
        sigset_t mask;
        sigemptyset(&mask);
        r = pselect(fd + 1, &rs, NULL, NULL, &ts, &mask);
        if (r > 0 && !FD_ISSET(fd, &rs))
            fail("pselect: fd not set");
        break;
    }
    case 4:
    case 5: {
        int ep = epoll_create1(EPOLL_CLOEXEC);
        if (ep < 0)
            die("epoll_create1");
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
            die("epoll_ctl");
        struct epoll_event out;
        if (m == 4) {
            r = epoll_wait(ep, &out, 1, WAIT_MS);
        } else {
            sigset_t mask;
            sigemptyset(&mask);
            r = epoll_pwait(ep, &out, 1, WAIT_MS, &mask);
        }
        if (r > 0 && out.data.fd != fd)
            fail("epoll: wrong fd");
        close(ep);
        break;
    }
    default:
        fail("bad wait method");
        return;
    }
    if (r < 0)
        die("wait_readable");
    if (r == 0)
        fail("wait_readable: timed out");
}

/* ---- senders -------------------------------------------------------- */

static void send_exact(int fd, int m, const unsigned char *buf, size_t n)
{
    size_t off = 0;
    while (off < n) {
        size_t left = n - off;
        ssize_t r;
        switch (m) {
        case 0:
            r = send(fd, buf + off, left, 0);
            break;
        case 1:
            r = sendto(fd, buf + off, left, 0, NULL, 0);
            break;
        case 2: {
            struct iovec iov[2] = {
                {(void *)(buf + off), left / 2},
                {(void *)(buf + off + left / 2), left - left / 2},
            };
            struct msghdr mh = {0};
            mh.msg_iov = iov;
            mh.msg_iovlen = 2;
            r = sendmsg(fd, &mh, 0);
            break;
        }
        case 3: {
            size_t part[3] = {left / 3, left / 3, left - 2 * (left / 3)};
            struct iovec iov[3];
            struct mmsghdr mm[3];
            memset(mm, 0, sizeof mm);
            size_t o = off;
            for (int i = 0; i < 3; i++) {
                iov[i].iov_base = (void *)(buf + o);
                iov[i].iov_len = part[i];
                o += part[i];
                mm[i].msg_hdr.msg_iov = &iov[i];
                mm[i].msg_hdr.msg_iovlen = 1;
            }
            int k = sendmmsg(fd, mm, 3, 0);
            if (k < 0) {
                r = -1;
                break;
            }
            r = 0;
            for (int i = 0; i < k; i++) {
                /* a short message followed by another one would leave a
                 * hole in the stream; never seen on blocking sockets */
                if (mm[i].msg_len < part[i] && i + 1 < k)
                    fail("sendmmsg: short message in the middle");
                r += (ssize_t)mm[i].msg_len;
            }
            break;
        }
        case 4:
            r = write(fd, buf + off, left);
            break;
        case 5: {
            size_t a = left / 4;
            struct iovec iov[3] = {
                {(void *)(buf + off), a},
                {(void *)(buf + off + a), a},
                {(void *)(buf + off + 2 * a), left - 2 * a},
            };
            r = writev(fd, iov, 3);
            break;
        }
        default:
            fail("bad send method");
            return;
        }
        if (r < 0) {
            if (errno == EINTR)
                continue;
            die("send_exact");
        }
        g_sent += (unsigned long long)r;
        off += (size_t)r;
    }
}

/* ---- receivers ------------------------------------------------------ */

static void recv_exact(int fd, int m, unsigned char *buf, size_t n)
{
    size_t off = 0;
    while (off < n) {
        size_t left = n - off;
        ssize_t r;
        switch (m) {
        case 0:
            r = recv(fd, buf + off, left, 0);
            break;
        case 1: {
            struct sockaddr_storage ss;
            socklen_t sl = sizeof ss;
            r = recvfrom(fd, buf + off, left, 0, (struct sockaddr *)&ss, &sl);
            break;
        }
        case 2: {
            struct iovec iov[2] = {
                {buf + off, left / 2},
                {buf + off + left / 2, left - left / 2},
            };
            struct msghdr mh = {0};
            mh.msg_iov = iov;
            mh.msg_iovlen = 2;
            r = recvmsg(fd, &mh, 0);
            break;
        }
        case 3: {
            /* each message may be filled only partly, so receive into
             * scratch slices and compact afterwards */
            size_t part[3] = {left / 3, left / 3, left - 2 * (left / 3)};
            int nm = 0;
            struct iovec iov[3];
            struct mmsghdr mm[3];
            memset(mm, 0, sizeof mm);
            size_t o = 0;
            for (int i = 0; i < 3; i++) {
                if (part[i] == 0)
                    continue;
                iov[nm].iov_base = scratch + o;
                iov[nm].iov_len = part[i];
                o += part[i];
                mm[nm].msg_hdr.msg_iov = &iov[nm];
                mm[nm].msg_hdr.msg_iovlen = 1;
                nm++;
            }
            int k = recvmmsg(fd, mm, (unsigned)nm, MSG_WAITFORONE, NULL);
            if (k < 0) {
                r = -1;
                break;
            }
            r = 0;
            for (int i = 0; i < k; i++) {
                memcpy(buf + off + (size_t)r, iov[i].iov_base, mm[i].msg_len);
                r += (ssize_t)mm[i].msg_len;
            }
            break;
        }
        case 4:
            r = read(fd, buf + off, left);
            break;
        case 5: {
            size_t a = left / 4;
            struct iovec iov[3] = {
                {buf + off, a},
                {buf + off + a, a},
                {buf + off + 2 * a, left - 2 * a},
            };
            r = readv(fd, iov, 3);
            break;
        }
        default:
            fail("bad recv method");
            return;
        }
        if (r < 0) {
            if (errno == EINTR)
                continue;
            die("recv_exact");
        }
        if (r == 0)
            fail("recv_exact: unexpected EOF");
        g_recv += (unsigned long long)r;
        off += (size_t)r;
    }
}

/* One direction of traffic: 6 send methods x 3 sizes = 18 segments. */
static void send_segments(int fd, unsigned seed)
{
    for (int m = 0; m < NMETHODS; m++)
        for (int s = 0; s < NSIZES; s++) {
            fill(sbuf, seg_sizes[s], seed + (unsigned)(m * NSIZES + s));
            send_exact(fd, m, sbuf, seg_sizes[s]);
        }
}

static void recv_segments(int fd, unsigned seed)
{
    for (int m = 0; m < NMETHODS; m++)
        for (int s = 0; s < NSIZES; s++) {
            wait_readable(fd, (m + 2 * s) % NMETHODS);
            recv_exact(fd, (m + s) % NMETHODS, rbuf, seg_sizes[s]);
            fill(sbuf, seg_sizes[s], seed + (unsigned)(m * NSIZES + s));
            if (memcmp(sbuf, rbuf, seg_sizes[s]) != 0)
                fail("payload mismatch");
        }
}

static unsigned long long per_direction(void)
{
    unsigned long long t = 0;
    for (int s = 0; s < NSIZES; s++)
        t += seg_sizes[s];
    return t * NMETHODS;
}

/* Pipe and regular-file traffic: must never be counted. */
static void non_socket_io(void)
{
    unsigned char buf[8192];
    fill(buf, sizeof buf, 77);
    int p[2];
    make_pipe(p);
    if (write(p[1], buf, 4000) != 4000)
        die("write pipe");
    struct iovec wv[2] = {{buf, 50}, {buf + 50, 46}};
    if (writev(p[1], wv, 2) != 96)
        die("writev pipe");
    unsigned char in[8192];
    if (read(p[0], in, 3000) != 3000)
        die("read pipe");
    struct iovec rv[2] = {{in, 1000}, {in + 1000, 96}};
    if (readv(p[0], rv, 2) != 1096)
        die("readv pipe");
    close(p[0]);
    close(p[1]);

    char tmpl[] = "/tmp/ddlt-tcpmix-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0)
        die("mkstemp");
    unlink(tmpl);
    if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
        die("write file");
    if (writev(fd, wv, 2) != 96)
        die("writev file");
    if (lseek(fd, 0, SEEK_SET) != 0)
        die("lseek");
    if (read(fd, in, 5000) != 5000)
        die("read file");
    struct iovec fv[2] = {{in, 3000}, {in + 3000, 288}};
    if (readv(fd, fv, 2) != 3288)
        die("readv file");
    close(fd);
}

/* Small buffers on the second connection force partial reads: a 300000-byte
 * segment can never be in flight at once. */
static void small_buffers(int fd)
{
    int v = 16384;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v) < 0)
        die("setsockopt SO_RCVBUF");
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v) < 0)
        die("setsockopt SO_SNDBUF");
}

static void wait_eof(int fd)
{
    wait_readable(fd, 0);
    expect_eof(fd, 0);
}

static void child_main(struct sockaddr_in addr, int report_fd)
{
    non_socket_io();
    int c1 = socket(AF_INET, SOCK_STREAM, 0);
    if (c1 < 0)
        die("socket");
    if (connect(c1, (struct sockaddr *)&addr, sizeof addr) < 0)
        die("connect 1");
    int c2 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c2 < 0)
        die("socket");
    small_buffers(c2);
    if (connect(c2, (struct sockaddr *)&addr, sizeof addr) < 0)
        die("connect 2");

    send_segments(c1, 1000);
    recv_segments(c1, 2000);
    send_segments(c2, 3000);
    recv_segments(c2, 4000);
    shutdown(c1, SHUT_WR);
    shutdown(c2, SHUT_WR);
    wait_eof(c1);
    wait_eof(c2);
    close(c1);
    close(c2);
    non_socket_io();

    /* report counts to the parent through a pipe (not counted) */
    send_report(report_fd);
    close(report_fd);
    write_expect(g_sent, g_recv);
    exit(0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    sbuf = malloc(MAXSEG);
    rbuf = malloc(MAXSEG);
    scratch = malloc(MAXSEG);
    if (!sbuf || !rbuf || !scratch)
        fail("malloc");

    struct sockaddr_in addr;
    int lfd = loopback_socket(SOCK_STREAM, 8, &addr);

    int rp[2];
    make_pipe(rp);

    pid_t pid = fork_flushed();
    if (pid == 0) {
        close(lfd);
        close(rp[0]);
        child_main(addr, rp[1]);
    }
    close(rp[1]);

    non_socket_io();
    struct sockaddr_in peer;
    socklen_t pl = sizeof peer;
    int a1 = accept(lfd, (struct sockaddr *)&peer, &pl);
    if (a1 < 0)
        die("accept");
    pl = sizeof peer;
    int a2 = accept4(lfd, (struct sockaddr *)&peer, &pl, SOCK_CLOEXEC);
    if (a2 < 0)
        die("accept4");
    int fl = fcntl(a2, F_GETFD);
    if (fl < 0 || !(fl & FD_CLOEXEC))
        fail("accept4: SOCK_CLOEXEC not set");
    small_buffers(a2);
    close(lfd);

    recv_segments(a1, 1000);
    send_segments(a1, 2000);
    recv_segments(a2, 3000);
    send_segments(a2, 4000);
    shutdown(a1, SHUT_WR);
    shutdown(a2, SHUT_WR);
    wait_eof(a1);
    wait_eof(a2);
    close(a1);
    close(a2);
    non_socket_io();

    unsigned long long rep[2];
    read_report(rp[0], rep);
    close(rp[0]);
    wait_exit0(pid);

    unsigned long long exp = 2 * per_direction();
    if (g_sent != exp || g_recv != exp || rep[0] != exp || rep[1] != exp)
        fail("byte totals differ from expectation");

    printf("tcp_mix: connections 2 (accept, accept4)\n");
    parent_done(rep);
    return 0;
}
