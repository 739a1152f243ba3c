/* forkexec: parent, child and grandchild share an AF_UNIX stream
 * socketpair.  The child sends/receives, forks a grandchild that sends and
 * leaves with _exit(0), then execs itself (/proc/self/exe, falling back to
 * argv[0]) as "stage2", passing its pre-exec counts in argv; stage 2 moves
 * more bytes and writes the single DDLT_EXPECT line for the child's pid.
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

#define CHILD_PRE_SEND 5000
#define GRANDCHILD_SEND 777
#define STAGE2_SEND 11111
#define PARENT_SEND_1 3000 /* received by the child before exec */
#define PARENT_SEND_2 2222 /* received by stage 2 */

static unsigned long long g_sent, g_recv;

static void die(const char *what)
{
    fprintf(stderr, "forkexec: %s: %s\n", what, strerror(errno));
    exit(99);
}

static void fail(const char *what)
{
    fprintf(stderr, "forkexec: %s\n", what);
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

/* how: 0 send, 1 write */
static void tx(int fd, size_t n, unsigned char byte, int how)
{
    unsigned char buf[4096];
    memset(buf, byte, sizeof buf);
    size_t off = 0;
    while (off < n) {
        size_t want = n - off < sizeof buf ? n - off : sizeof buf;
        ssize_t r = how ? write(fd, buf, want) : send(fd, buf, want, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            die("send");
        }
        g_sent += (unsigned long long)r;
        off += (size_t)r;
    }
}

/* Receive exactly n bytes (never more), optionally checking the byte value
 * (check < 0: accept anything). how: 0 recv, 1 read */
static void rx(int fd, size_t n, int check, int how)
{
    unsigned char buf[4096];
    size_t off = 0;
    while (off < n) {
        size_t want = n - off < sizeof buf ? n - off : sizeof buf;
        ssize_t r = how ? read(fd, buf, want) : recv(fd, buf, want, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            die("recv");
        }
        if (r == 0)
            fail("unexpected EOF");
        if (check >= 0)
            for (ssize_t i = 0; i < r; i++)
                if (buf[i] != (unsigned char)check)
                    fail("payload mismatch");
        g_recv += (unsigned long long)r;
        off += (size_t)r;
    }
}

static int stage2(int argc, char **argv)
{
    if (argc != 5)
        fail("stage2: bad arguments");
    int fd = atoi(argv[2]);
    unsigned long long pre_sent = strtoull(argv[3], NULL, 10);
    unsigned long long pre_recv = strtoull(argv[4], NULL, 10);
    tx(fd, STAGE2_SEND, 'S', 0);
    rx(fd, PARENT_SEND_2, 'Q', 1);
    close(fd);
    write_expect(pre_sent + g_sent, pre_recv + g_recv);
    return 0;
}

static void child(int fd, const char *argv0)
{
    tx(fd, CHILD_PRE_SEND, 'C', 0);
    rx(fd, PARENT_SEND_1, 'P', 0);

    pid_t g = fork();
    if (g < 0)
        die("fork grandchild");
    if (g == 0) {
        g_sent = g_recv = 0; /* fresh process, fresh counts */
        tx(fd, GRANDCHILD_SEND, 'G', 1);
        close(fd);
        write_expect(g_sent, g_recv);
        _exit(0);
    }
    int st;
    if (waitpid(g, &st, 0) != g)
        die("waitpid grandchild");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail("grandchild failed");

    char fds[32], ss[32], rs[32];
    snprintf(fds, sizeof fds, "%d", fd);
    snprintf(ss, sizeof ss, "%llu", g_sent);
    snprintf(rs, sizeof rs, "%llu", g_recv);
    char *nargv[] = {(char *)argv0, "stage2", fds, ss, rs, NULL};
    execv("/proc/self/exe", nargv);
    execv(argv0, nargv);
    die("execv");
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc >= 2 && strcmp(argv[1], "stage2") == 0)
        return stage2(argc, argv);

    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) /* no CLOEXEC: survives exec */
        die("socketpair");
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        close(sv[0]);
        child(sv[1], argv[0]);
    }
    close(sv[1]);
    int fd = sv[0];

    tx(fd, PARENT_SEND_1, 'P', 0);
    tx(fd, PARENT_SEND_2, 'Q', 1);
    /* child, grandchild and stage 2 bytes arrive on one stream; the
     * grandchild's come strictly after the child's first 5000 and before
     * stage 2's, because the child waits for the grandchild before exec. */
    rx(fd, CHILD_PRE_SEND, 'C', 0);
    rx(fd, GRANDCHILD_SEND, 'G', 1);
    rx(fd, STAGE2_SEND, 'S', 0);
    unsigned char c;
    ssize_t r;
    do
        r = recv(fd, &c, 1, 0);
    while (r < 0 && errno == EINTR);
    if (r != 0)
        fail("expected EOF");
    close(fd);

    int st;
    if (waitpid(pid, &st, 0) != pid)
        die("waitpid");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail("child failed");

    printf("forkexec: parent sent %llu received %llu\n", g_sent, g_recv);
    printf("forkexec: child sent %d received %d (across exec)\n",
           CHILD_PRE_SEND + STAGE2_SEND, PARENT_SEND_1 + PARENT_SEND_2);
    printf("forkexec: grandchild sent %d\n", GRANDCHILD_SEND);
    printf("forkexec: child exit 0\n");
    fflush(stdout);
    write_expect(g_sent, g_recv);
    return 0;
}
