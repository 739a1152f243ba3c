/* nonblock: non-blocking sockets.  A non-blocking AF_UNIX stream socketpair:
 * recv on an empty socket gives EAGAIN, send until EAGAIN without the peer
 * reading, then drain the peer; a non-blocking TCP connect to a listening
 * socket, EAGAIN on the accepted side, fill-until-EAGAIN over TCP and a
 * poll-driven drain.  Single process.  Byte counts vary with buffer sizes,
 * so they are checked but never printed.
 * See README.md for the DDLT_EXPECT contract. */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>

#define PROG "nonblock"
#include "progs.h"

static unsigned char g_buf[65536];

static int is_again(int e)
{
    return e == EAGAIN || e == EWOULDBLOCK;
}

static void expect_again_recv(int fd, const char *label)
{
    ssize_t r = recv(fd, g_buf, sizeof g_buf, 0);
    if (r >= 0)
        fail("recv on empty socket returned data");
    if (!is_again(errno))
        die("recv on empty socket");
    printf("%s: EAGAIN\n", label);
}

/* Send `chunk`-byte blocks until EAGAIN; returns bytes sent. */
static unsigned long long fill_until_again(int fd, size_t chunk, int use_write)
{
    unsigned long long tot = 0;
    for (;;) {
        ssize_t r = use_write ? write(fd, g_buf, chunk) : send(fd, g_buf, chunk, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (is_again(errno))
                break;
            die("send");
        }
        if (r == 0)
            fail("send returned 0");
        g_sent += (unsigned long long)r;
        tot += (unsigned long long)r;
    }
    return tot;
}

/* Read until `want` bytes have arrived, polling when EAGAIN. */
static void drain(int fd, unsigned long long want, int use_read)
{
    unsigned long long got = 0;
    while (got < want) {
        ssize_t r = use_read ? read(fd, g_buf, sizeof g_buf) : recv(fd, g_buf, sizeof g_buf, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (!is_again(errno))
                die("recv");
            struct pollfd p = {.fd = fd, .events = POLLIN};
            int pr = poll(&p, 1, 60000);
            if (pr < 0 && errno != EINTR)
                die("poll");
            if (pr == 0)
                fail("drain: timed out");
            continue;
        }
        if (r == 0)
            fail("drain: unexpected EOF");
        g_recv += (unsigned long long)r;
        got += (unsigned long long)r;
    }
    if (got != want)
        fail("drain: got more than was sent");
}

/* Send exactly n bytes on a non-blocking socket, polling on EAGAIN. */
static void send_exact_nb(int fd, size_t n)
{
    size_t off = 0;
    while (off < n) {
        size_t want = n - off < sizeof g_buf ? n - off : sizeof g_buf;
        ssize_t r = send(fd, g_buf, want, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (!is_again(errno))
                die("send");
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            if (poll(&p, 1, 60000) <= 0)
                fail("send_exact_nb: poll");
            continue;
        }
        g_sent += (unsigned long long)r;
        off += (size_t)r;
    }
}

static void unix_part(void)
{
    int sv[2];
    stream_pair(sv, SOCK_NONBLOCK);
    memset(g_buf, 'u', sizeof g_buf);
    expect_again_recv(sv[1], "recv");
    /* odd chunk size so the last successful send is usually partial */
    unsigned long long sent = fill_until_again(sv[0], 3001, 0);
    if (sent == 0)
        fail("nothing sent before EAGAIN");
    printf("send: EAGAIN after buffer full\n");
    /* for AF_UNIX everything sent is already queued on the peer */
    drain(sv[1], sent, 0);
    expect_again_recv(sv[1], "recv after drain");
    printf("drain: all bytes received\n");

    /* the other direction with write()/read() */
    sent = fill_until_again(sv[1], 65536, 1);
    printf("write: EAGAIN after buffer full\n");
    drain(sv[0], sent, 1);
    printf("drain: all bytes received\n");
    close(sv[0]);
    close(sv[1]);
}

static void tcp_part(void)
{
    struct sockaddr_in a;
    int lfd = loopback_socket(SOCK_STREAM, 4, &a);

    int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (c < 0)
        die("socket");
    int r = connect(c, (struct sockaddr *)&a, sizeof a);
    if (r < 0 && errno != EINPROGRESS)
        die("connect");
    struct pollfd p = {.fd = c, .events = POLLOUT};
    if (poll(&p, 1, 60000) != 1)
        fail("connect: poll");
    int err = 0;
    socklen_t el = sizeof err;
    if (getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
        die("getsockopt");
    if (err != 0) {
        errno = err;
        die("connect (SO_ERROR)");
    }
    printf("connect: established\n");

    int s = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
    if (s < 0)
        die("accept4");
    close(lfd);
    expect_again_recv(s, "tcp recv");

    memset(g_buf, 't', sizeof g_buf);
    send_exact_nb(c, 5000);
    drain(s, 5000, 0);
    send_exact_nb(s, 3000);
    drain(c, 3000, 1);
    printf("tcp: exchanged 5000 and 3000 bytes\n");

    /* fill until EAGAIN; bytes may still be in flight, so drain by count */
    unsigned long long sent = fill_until_again(c, 65536, 0);
    if (sent == 0)
        fail("nothing sent before EAGAIN");
    printf("tcp send: EAGAIN after buffer full\n");
    drain(s, sent, 0);
    printf("tcp drain: all bytes received\n");
    close(c);
    close(s);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    unix_part();
    tcp_part();
    if (g_sent != g_recv)
        fail("sent != received");
    printf("nonblock: sent == received\n");
    fflush(stdout);
    write_expect(g_sent, g_recv);
    return 0;
}
