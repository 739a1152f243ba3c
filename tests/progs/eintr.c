/* eintr: a blocking recv (and then a blocking read) on a socket with no data
 * is interrupted by SIGALRM from setitimer, handler installed WITHOUT
 * SA_RESTART, so the call must fail with EINTR.  Afterwards the peer (a
 * forked child) sends 100 bytes, which recv then receives.
 * See README.md for the DDLT_EXPECT contract. */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/time.h>

#define PROG "eintr"
#include "progs.h"

static volatile sig_atomic_t g_alarms;

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

/* A blocking recv (use_read: read) on the empty fd, with the timer armed,
 * must fail with EINTR after the handler ran. */
static void expect_eintr(int fd, int use_read)
{
    unsigned char buf[256];
    g_alarms = 0;
    arm(1);
    ssize_t r = use_read ? read(fd, buf, sizeof buf) : recv(fd, buf, sizeof buf, 0);
    int e = errno;
    arm(0);
    if (r >= 0)
        fail(use_read ? "read returned data/EOF instead of EINTR"
                      : "recv returned data/EOF instead of EINTR");
    if (e != EINTR) {
        errno = e;
        die(use_read ? "read (expected EINTR)" : "recv (expected EINTR)");
    }
    printf("%s: EINTR\n", use_read ? "read" : "recv");
    if (g_alarms < 1)
        fail("handler did not run");
    printf("handler: ran\n");
}

int main(void)
{
    int sv[2], go[2];
    stream_pair(sv, 0);
    make_pipe(go);

    pid_t pid = fork_flushed();
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
        send_all(sv[1], buf, sizeof buf, 0, 0);
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

    expect_eintr(sv[0], 0); /* round 1: recv */
    expect_eintr(sv[0], 1); /* round 2: read */

    /* now let the peer send 100 bytes */
    if (write(go[1], "g", 1) != 1)
        die("write go");
    close(go[1]);
    unsigned char buf[100];
    recv_all(sv[0], buf, sizeof buf, 0, 0);
    check_bytes(buf, sizeof buf, 'e');
    printf("recv: got %zu bytes\n", sizeof buf);
    expect_eof(sv[0], 0);
    close(sv[0]);

    wait_exit0(pid);
    printf("child: exit 0\n");
    fflush(stdout);
    write_expect(g_sent, g_recv);
    return 0;
}
