/* socketpair: AF_UNIX SOCK_STREAM socketpair shared across fork; known byte
 * counts in both directions with write/read and send/recv, then a phase
 * where both sides send at the same time (below the buffer size).
 * See README.md for the DDLT_EXPECT contract. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>

#define BIG 400000

static unsigned long long g_sent, g_recv;
static unsigned char *g_buf, *g_chk;

static void die(const char *what)
{
    fprintf(stderr, "socketpair: %s: %s\n", what, strerror(errno));
    exit(99);
}

static void fail(const char *what)
{
    fprintf(stderr, "socketpair: %s\n", what);
    exit(99);
}

static void write_expect(unsigned long long sent, unsigned long long recvd)
{
    const char *path = getenv("DDLT_EXPECT");
    if (!path || !*path)
        return;
    char line[96];
    int n = snprintf(line, sizeof line, "%ld %llu %llu\n", (long)getpid(), sent, recvd);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        die("open DDLT_EXPECT");
    if (write(fd, line, (size_t)n) != n)
        die("write DDLT_EXPECT");
    close(fd);
}

static void fill(unsigned char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(seed + i * 11u + (i >> 10));
}

/* use_send: 0 = write(), 1 = send() */
static void tx(int fd, size_t n, int use_send, unsigned seed)
{
    fill(g_buf, n, seed);
    size_t off = 0;
    while (off < n) {
        ssize_t r = use_send ? send(fd, g_buf + off, n - off, 0)
                             : write(fd, g_buf + off, n - off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            die(use_send ? "send" : "write");
        }
        g_sent += (unsigned long long)r;
        off += (size_t)r;
    }
}

/* use_recv: 0 = read(), 1 = recv(); reads in pieces of at most `chunk` */
static void rx(int fd, size_t n, int use_recv, unsigned seed, size_t chunk)
{
    size_t off = 0;
    while (off < n) {
        size_t want = n - off < chunk ? n - off : chunk;
        ssize_t r = use_recv ? recv(fd, g_buf + off, want, 0)
                             : read(fd, g_buf + off, want);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            die(use_recv ? "recv" : "read");
        }
        if (r == 0)
            fail("unexpected EOF");
        g_recv += (unsigned long long)r;
        off += (size_t)r;
    }
    fill(g_chk, n, seed);
    if (memcmp(g_buf, g_chk, n) != 0)
        fail("payload mismatch");
}

static void expect_eof(int fd)
{
    unsigned char c;
    ssize_t r;
    do
        r = read(fd, &c, 1);
    while (r < 0 && errno == EINTR);
    if (r != 0)
        fail("expected EOF");
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    g_buf = malloc(BIG);
    g_chk = malloc(BIG);
    if (!g_buf || !g_chk)
        fail("malloc");
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        die("socketpair");
    int rp[2];
    if (pipe(rp) < 0)
        die("pipe");

    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
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
        expect_eof(fd);
        close(fd);
        unsigned long long rep[2] = {g_sent, g_recv};
        if (write(rp[1], rep, sizeof rep) != (ssize_t)sizeof rep)
            die("write report");
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
    expect_eof(fd);
    close(fd);

    unsigned long long rep[2];
    if (read(rp[0], rep, sizeof rep) != (ssize_t)sizeof rep)
        fail("child report missing");
    int st;
    if (waitpid(pid, &st, 0) != pid)
        die("waitpid");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail("child failed");

    unsigned long long c2p = 300000 + 70001 + 40000, p2c = 123457 + 250000 + 40000;
    if (g_sent != p2c || g_recv != c2p || rep[0] != c2p || rep[1] != p2c)
        fail("byte totals differ from expectation");
    printf("socketpair: parent sent %llu received %llu\n", g_sent, g_recv);
    printf("socketpair: child sent %llu received %llu\n", rep[0], rep[1]);
    printf("socketpair: child exit 0\n");
    fflush(stdout);
    write_expect(g_sent, g_recv);
    return 0;
}
