/* exitcode: the parent sends 12345 bytes over an AF_UNIX stream socketpair
 * to a forked child that receives them and exits 0; the parent prints a
 * line and exits with status 7 (after writing its DDLT_EXPECT line).
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

#define AMOUNT 12345

static unsigned long long g_sent, g_recv;

static void die(const char *what)
{
    fprintf(stderr, "exitcode: %s: %s\n", what, strerror(errno));
    exit(99);
}

static void fail(const char *what)
{
    fprintf(stderr, "exitcode: %s\n", what);
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

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        die("socketpair");
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        close(sv[0]);
        unsigned char buf[1000];
        for (;;) {
            ssize_t r = recv(sv[1], buf, sizeof buf, 0);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0)
                die("recv");
            if (r == 0)
                break;
            for (ssize_t i = 0; i < r; i++)
                if (buf[i] != 'x')
                    fail("payload mismatch");
            g_recv += (unsigned long long)r;
        }
        if (g_recv != AMOUNT)
            fail("child: wrong byte count");
        close(sv[1]);
        write_expect(g_sent, g_recv);
        exit(0);
    }
    close(sv[1]);
    unsigned char buf[AMOUNT];
    memset(buf, 'x', sizeof buf);
    size_t off = 0;
    while (off < sizeof buf) {
        ssize_t r = send(sv[0], buf + off, sizeof buf - off, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            die("send");
        g_sent += (unsigned long long)r;
        off += (size_t)r;
    }
    close(sv[0]);
    int st;
    if (waitpid(pid, &st, 0) != pid)
        die("waitpid");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail("child failed");
    printf("exitcode: sent %llu bytes, child exit 0, exiting with 7\n", g_sent);
    fflush(stdout);
    write_expect(g_sent, g_recv);
    exit(7);
}
