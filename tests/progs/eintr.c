/* eintr: a blocking recv (and then a blocking read) on a socket with no data
 * is interrupted by SIGALRM from setitimer, handler installed WITHOUT
 * SA_RESTART, so the call must fail with EINTR.  Afterwards the peer (a
 * forked child) sends 100 bytes, which recv then receives.
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
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>

static unsigned long long g_sent, g_recv;
static volatile sig_atomic_t g_alarms;

static void die(const char *what)
{
    fprintf(stderr, "eintr: %s: %s\n", what, strerror(errno));
    exit(99);
}

static void fail(const char *what)
{
    fprintf(stderr, "eintr: %s\n", what);
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

static void on_alarm(int sig)
{
    (void)sig;
    g_alarms++;
}

/* 100 ms, repeating every 100 ms until disarmed, so a tick that fires
 * before we are inside the blocking call cannot make the test hang. */
static void arm(int on)
{
    struct itimerval it;
    memset(&it, 0, sizeof it);
    if (on) {
        it.it_value.tv_usec = 100000;
        it.it_interval.tv_usec = 100000;
    }
    if (setitimer(ITIMER_REAL, &it, NULL) < 0)
        die("setitimer");
}

int main(void)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        die("socketpair");
    int go[2];
    if (pipe(go) < 0)
        die("pipe");

    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        close(sv[0]);
        close(go[1]);
        char c;
        ssize_t r;
        do
            r = read(go[0], &c, 1); /* pipe: not counted */
        while (r < 0 && errno == EINTR);
        if (r != 1)
            fail("child: no go signal");
        unsigned char buf[100];
        memset(buf, 'e', sizeof buf);
        size_t off = 0;
        while (off < sizeof buf) {
            ssize_t w = send(sv[1], buf + off, sizeof buf - off, 0);
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0)
                die("child send");
            g_sent += (unsigned long long)w;
            off += (size_t)w;
        }
        close(sv[1]);
        write_expect(g_sent, g_recv);
        exit(0);
    }
    close(sv[1]);
    close(go[0]);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART */
    if (sigaction(SIGALRM, &sa, NULL) < 0)
        die("sigaction");

    unsigned char buf[256];

    /* round 1: recv */
    g_alarms = 0;
    arm(1);
    ssize_t r = recv(sv[0], buf, sizeof buf, 0);
    int e = errno;
    arm(0);
    if (r >= 0)
        fail("recv returned data/EOF instead of EINTR");
    if (e != EINTR) {
        errno = e;
        die("recv (expected EINTR)");
    }
    printf("recv: EINTR\n");
    if (g_alarms < 1)
        fail("handler did not run");
    printf("handler: ran\n");

    /* round 2: read */
    g_alarms = 0;
    arm(1);
    r = read(sv[0], buf, sizeof buf);
    e = errno;
    arm(0);
    if (r >= 0)
        fail("read returned data/EOF instead of EINTR");
    if (e != EINTR) {
        errno = e;
        die("read (expected EINTR)");
    }
    printf("read: EINTR\n");
    if (g_alarms < 1)
        fail("handler did not run");
    printf("handler: ran\n");

    /* now let the peer send 100 bytes */
    if (write(go[1], "g", 1) != 1)
        die("write go");
    close(go[1]);
    size_t got = 0;
    while (got < 100) {
        r = recv(sv[0], buf, 100 - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            die("recv");
        if (r == 0)
            fail("unexpected EOF");
        for (ssize_t i = 0; i < r; i++)
            if (buf[i] != 'e')
                fail("payload mismatch");
        g_recv += (unsigned long long)r;
        got += (size_t)r;
    }
    printf("recv: got %zu bytes\n", got);
    r = recv(sv[0], buf, sizeof buf, 0);
    if (r != 0)
        fail("expected EOF");
    close(sv[0]);

    int st;
    pid_t w;
    do
        w = waitpid(pid, &st, 0);
    while (w < 0 && errno == EINTR);
    if (w != pid)
        die("waitpid");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail("child failed");
    printf("child: exit 0\n");
    fflush(stdout);
    write_expect(g_sent, g_recv);
    return 0;
}
