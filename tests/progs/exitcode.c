/* exitcode: the parent sends 12345 bytes over an AF_UNIX stream socketpair
 * to a forked child that receives them and exits 0; the parent prints a
 * line and exits with status 7 (after writing its DDLT_EXPECT line).
 * See README.md for the DDLT_EXPECT contract. */
#define _GNU_SOURCE
#include <signal.h>

#define PROG "exitcode"
#include "progs.h"

#define AMOUNT 12345

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    int sv[2];
    stream_pair(sv, 0);
    pid_t pid = fork_flushed();
    if (pid == 0) {
        close(sv[0]);
        unsigned char buf[1000];
        size_t r;
        while ((r = recv_some(sv[1], buf, sizeof buf, 0)) > 0) /* to EOF */
            check_bytes(buf, r, 'x');
        if (g_recv != AMOUNT)
            fail("child: wrong byte count");
        close(sv[1]);
        write_expect(g_sent, g_recv);
        exit(0);
    }
    close(sv[1]);
    unsigned char buf[AMOUNT];
    memset(buf, 'x', sizeof buf);
    send_all(sv[0], buf, sizeof buf, 0, 0);
    close(sv[0]);
    wait_exit0(pid);
    printf("exitcode: sent %llu bytes, child exit 0, exiting with 7\n", g_sent);
    fflush(stdout);
    write_expect(g_sent, g_recv);
    exit(7);
}
