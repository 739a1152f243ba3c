/* progs.h: helpers shared by the end-to-end test programs in this folder:
 * error exits, the DDLT_EXPECT line (see README.md), the per-process
 * counts of socket bytes, counted send/receive loops and child bookkeeping.
 * A program defines _GNU_SOURCE before any #include and PROG (its name, the
 * prefix of its error messages) before including this file. Every helper
 * is static inline, so a program keeps only what it uses. Errors print
 * "PROG: what[: strerror]" on stderr and exit 99. */
#ifndef DDLT_PROGS_H
#define DDLT_PROGS_H

#ifndef _GNU_SOURCE
#error "define _GNU_SOURCE before any #include"
#endif
#ifndef PROG
#error "define PROG (the program's name) before including progs.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>

/* What this process sent and received on sockets: the DDLT_EXPECT counts.
 * A forked child inherits them; it resets them if it moved bytes before. */
static unsigned long long g_sent __attribute__((unused));
static unsigned long long g_recv __attribute__((unused));

static inline _Noreturn void die(const char *what)
{
    fprintf(stderr, PROG ": %s: %s\n", what, strerror(errno));
    exit(99);
}

static inline _Noreturn void fail(const char *what)
{
    fprintf(stderr, PROG ": %s\n", what);
    exit(99);
}

/* Appends "PID SENT RECEIVED\n" to the file named by DDLT_EXPECT, if set,
 * with a single write(). */
static inline void write_expect(unsigned long long sent, unsigned long long recvd)
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

/* One send() (use_write: write()) of at most n bytes, retried on EINTR;
 * returns how many went. Counts into g_sent. */
static inline size_t send_some(int fd, const void *buf, size_t n, int use_write)
{
    for (;;) {
        ssize_t r = use_write ? write(fd, buf, n) : send(fd, buf, n, 0);
        if (r >= 0) {
            g_sent += (unsigned long long)r;
            return (size_t)r;
        }
        if (errno != EINTR)
            die(use_write ? "write" : "send");
    }
}

/* One recv() (use_read: read()) of at most n bytes, retried on EINTR;
 * returns how many came, 0 at EOF. Counts into g_recv. */
static inline size_t recv_some(int fd, void *buf, size_t n, int use_read)
{
    for (;;) {
        ssize_t r = use_read ? read(fd, buf, n) : recv(fd, buf, n, 0);
        if (r >= 0) {
            g_recv += (unsigned long long)r;
            return (size_t)r;
        }
        if (errno != EINTR)
            die(use_read ? "read" : "recv");
    }
}

/* At most chunk (0: no limit) of the n - off bytes still to move. */
static inline size_t chunk_of(size_t n, size_t off, size_t chunk)
{
    return chunk && n - off > chunk ? chunk : n - off;
}

/* Sends all n bytes of buf with send() (use_write: write()), at most chunk
 * bytes a call (0: no limit). */
static inline void send_all(int fd, const void *buf, size_t n, size_t chunk, int use_write)
{
    const unsigned char *p = buf;
    for (size_t off = 0; off < n;)
        off += send_some(fd, p + off, chunk_of(n, off, chunk), use_write);
}

/* Receives exactly n bytes into buf with recv() (use_read: read()), at most
 * chunk bytes a call (0: no limit); EOF before that is an error. */
static inline void recv_all(int fd, void *buf, size_t n, size_t chunk, int use_read)
{
    unsigned char *p = buf;
    for (size_t off = 0; off < n;) {
        size_t r = recv_some(fd, p + off, chunk_of(n, off, chunk), use_read);
        if (r == 0)
            fail("unexpected EOF");
        off += r;
    }
}

/* Every one of the n bytes must be `want`. */
static inline void check_bytes(const void *buf, size_t n, unsigned char want)
{
    const unsigned char *p = buf;
    for (size_t i = 0; i < n; i++)
        if (p[i] != want)
            fail("payload mismatch");
}

/* The next recv() (use_read: read()) on fd must return EOF. */
static inline void expect_eof(int fd, int use_read)
{
    unsigned char c;
    ssize_t r;
    do
        r = use_read ? read(fd, &c, 1) : recv(fd, &c, 1, 0);
    while (r < 0 && errno == EINTR);
    if (r != 0)
        fail("expected EOF");
}

/* An AF_UNIX stream socketpair; flags: SOCK_NONBLOCK, SOCK_CLOEXEC or 0. */
static inline void stream_pair(int sv[2], int flags)
{
    if (socketpair(AF_UNIX, SOCK_STREAM | flags, 0, sv) < 0)
        die("socketpair");
}

static inline void make_pipe(int p[2])
{
    if (pipe(p) < 0)
        die("pipe");
}

/* A socket of the given type bound to a free port on 127.0.0.1, listening
 * if backlog > 0; its address goes to *addr. */
static inline int loopback_socket(int type, int backlog, struct sockaddr_in *addr)
{
    int fd = socket(AF_INET, type, 0);
    if (fd < 0)
        die("socket");
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
        die("bind");
    if (backlog > 0 && listen(fd, backlog) < 0)
        die("listen");
    socklen_t len = sizeof *addr;
    if (getsockname(fd, (struct sockaddr *)addr, &len) < 0)
        die("getsockname");
    return fd;
}

/* fork() with stdout flushed first, so no buffered line is printed twice. */
static inline pid_t fork_flushed(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    return pid;
}

/* Waits for the child pid (retrying on EINTR); it must have exited 0. */
static inline void wait_exit0(pid_t pid)
{
    int st;
    pid_t w;
    do
        w = waitpid(pid, &st, 0);
    while (w < 0 && errno == EINTR);
    if (w != pid)
        die("waitpid");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail("child failed");
}

/* A child's g_sent and g_recv, passed to its parent over a pipe (pipe
 * traffic is never counted). */
static inline void send_report(int fd)
{
    unsigned long long rep[2] = {g_sent, g_recv};
    if (write(fd, rep, sizeof rep) != (ssize_t)sizeof rep)
        die("write report");
}

static inline void read_report(int fd, unsigned long long rep[2])
{
    size_t want = 2 * sizeof rep[0], got = 0;
    while (got < want) {
        ssize_t r = read(fd, (char *)rep + got, want - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            fail("child report missing");
        got += (size_t)r;
    }
}

/* The end of a program whose parent forked one child that reported its
 * counts in rep: prints both sides' counts and the child's exit, then
 * writes the parent's DDLT_EXPECT line. */
static inline void parent_done(const unsigned long long rep[2])
{
    printf(PROG ": parent sent %llu received %llu\n", g_sent, g_recv);
    printf(PROG ": child sent %llu received %llu\n", rep[0], rep[1]);
    printf(PROG ": child exit 0\n");
    fflush(stdout);
    write_expect(g_sent, g_recv);
}

#endif
