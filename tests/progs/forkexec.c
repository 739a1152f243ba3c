/* forkexec: parent, child and grandchild share an AF_UNIX stream
 * socketpair.  The child sends/receives, forks a grandchild that sends and
 * leaves with _exit(0), then execs itself (/proc/self/exe, falling back to
 * argv[0]) as "stage2", passing its pre-exec counts in argv; stage 2 moves
 * more bytes and writes the single DDLT_EXPECT line for the child's pid.
 * See README.md for the DDLT_EXPECT contract. */
#define _GNU_SOURCE
#include <signal.h>

#define PROG "forkexec"
#include "progs.h"

#define CHILD_PRE_SEND 5000
#define GRANDCHILD_SEND 777
#define STAGE2_SEND 11111
#define PARENT_SEND_1 3000 /* received by the child before exec */
#define PARENT_SEND_2 2222 /* received by stage 2 */

#define MAXMOVE 16384 /* the largest count above, rounded up */

/* Sends n bytes of `byte`, 4096 a call. how: 0 send, 1 write */
static void tx(int fd, size_t n, unsigned char byte, int how)
{
    static unsigned char buf[MAXMOVE];
    if (n > sizeof buf)
        fail("tx: too many bytes");
    memset(buf, byte, n);
    send_all(fd, buf, n, 4096, how);
}

/* Receives exactly n bytes (never more), 4096 at most a call, checking the
 * byte value (check < 0: accept anything). how: 0 recv, 1 read */
static void rx(int fd, size_t n, int check, int how)
{
    static unsigned char buf[MAXMOVE];
    if (n > sizeof buf)
        fail("rx: too many bytes");
    recv_all(fd, buf, n, 4096, how);
    if (check >= 0)
        check_bytes(buf, n, (unsigned char)check);
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
    stream_pair(sv, 0); /* no CLOEXEC: survives exec */
    pid_t pid = fork_flushed();
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
    expect_eof(fd, 0);
    close(fd);
    wait_exit0(pid);

    printf("forkexec: parent sent %llu received %llu\n", g_sent, g_recv);
    printf("forkexec: child sent %d received %d (across exec)\n",
           CHILD_PRE_SEND + STAGE2_SEND, PARENT_SEND_1 + PARENT_SEND_2);
    printf("forkexec: grandchild sent %d\n", GRANDCHILD_SEND);
    printf("forkexec: child exit 0\n");
    fflush(stdout);
    write_expect(g_sent, g_recv);
    return 0;
}
