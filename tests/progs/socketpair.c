/* socketpair: AF_UNIX SOCK_STREAM socketpair shared across fork; known byte
 * counts in both directions with write/read and send/recv, then a phase
 * where both sides send at the same time (below the buffer size).
 * See README.md for the DDLT_EXPECT contract. */
#define _GNU_SOURCE
#include <signal.h>

#define PROG "socketpair"
#include "progs.h"

#define BIG 400000

static unsigned char *g_buf, *g_chk;

static void fill(unsigned char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(seed + i * 11u + (i >> 10));
}

/* use_send: 0 = write(), 1 = send() */
static void tx(int fd, size_t n, int use_send, unsigned seed)
{
    fill(g_buf, n, seed);
    send_all(fd, g_buf, n, 0, !use_send);
}

/* use_recv: 0 = read(), 1 = recv(); reads in pieces of at most `chunk` */
static void rx(int fd, size_t n, int use_recv, unsigned seed, size_t chunk)
{
    recv_all(fd, g_buf, n, chunk, !use_recv);
    fill(g_chk, n, seed);
    if (memcmp(g_buf, g_chk, n) != 0)
        fail("payload mismatch");
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    g_buf = malloc(BIG);
    g_chk = malloc(BIG);
    if (!g_buf || !g_chk)
        fail("malloc");
    int sv[2], rp[2];
    stream_pair(sv, 0);
    make_pipe(rp);

    pid_t pid = fork_flushed();
    if (pid == 0) {
        int fd = sv[1];
        close(sv[0]);
        close(rp[0]);
        /* child -> parent */
        tx(fd, 300000, 0, 1);
        tx(fd, 70001, 1, 2);
        /* parent -> child */
        rx(fd, 123457, 0, 3, 65536);
        rx(fd, 250000, 1, 4, BIG);
        /* both at once */
        tx(fd, 40000, 1, 5);
        rx(fd, 40000, 0, 6, 4096);
        shutdown(fd, SHUT_WR);
        expect_eof(fd, 1);
        close(fd);
        send_report(rp[1]);
        write_expect(g_sent, g_recv);
        exit(0);
    }
    int fd = sv[0];
    close(sv[1]);
    close(rp[1]);
    rx(fd, 300000, 0, 1, BIG);
    rx(fd, 70001, 1, 2, 1000);
    tx(fd, 123457, 0, 3);
    tx(fd, 250000, 1, 4);
    tx(fd, 40000, 0, 6);
    rx(fd, 40000, 1, 5, BIG);
    shutdown(fd, SHUT_WR);
    expect_eof(fd, 1);
    close(fd);

    unsigned long long rep[2];
    read_report(rp[0], rep);
    wait_exit0(pid);

    unsigned long long c2p = 300000 + 70001 + 40000, p2c = 123457 + 250000 + 40000;
    if (g_sent != p2c || g_recv != c2p || rep[0] != c2p || rep[1] != p2c)
        fail("byte totals differ from expectation");
    parent_done(rep);
    return 0;
}
