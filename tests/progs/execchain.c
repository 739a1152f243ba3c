/* execchain N: moves 100 bytes over a socketpair, then execs itself with
 * N-1 until N is 0: N+1 images of one process, each with a trace of its
 * own under the profiler. Stdout (from the last image only): `execchain:
 * N execs`. 1 line (`100*(N+1) 100*(N+1)`: each image passes its
 * counts on in argv). */
#define _GNU_SOURCE
#define PROG "execchain"
#include "progs.h"

int main(int argc, char **argv)
{
    if (argc < 2)
        fail("usage: execchain N [TOTAL SENT]");
    long n = atol(argv[1]), total = argc > 2 ? atol(argv[2]) : n;
    unsigned long long sent = argc > 3 ? strtoull(argv[3], NULL, 10) : 0;
    int sv[2];
    char buf[100];
    memset(buf, 'e', sizeof buf);
    stream_pair(sv, 0);
    send_all(sv[0], buf, sizeof buf, sizeof buf, 0);
    recv_all(sv[1], buf, sizeof buf, sizeof buf, 0);
    close(sv[0]);
    close(sv[1]);
    sent += sizeof buf;
    if (n <= 0) {
        printf("execchain: %ld execs\n", total);
        fflush(stdout);
        write_expect(sent, sent);
        return 0;
    }
    char a1[32], a2[32], a3[32];
    snprintf(a1, sizeof a1, "%ld", n - 1);
    snprintf(a2, sizeof a2, "%ld", total);
    snprintf(a3, sizeof a3, "%llu", sent);
    execl("/proc/self/exe", argv[0], a1, a2, a3, (char *)NULL);
    die("execl");
}
