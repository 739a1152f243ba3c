/* errfd: closes its standard error, opens a data file FILE (argv[1]), which
 * gets descriptor 2, and writes "data\n" to it; then, under a file-size
 * limit of 64 KiB (SIGXFSZ ignored: writes past it fail with EFBIG), moves
 * 40000 one-byte messages over a socketpair, enough trace for the
 * profiler's writer to hit the limit and say so. The data file must hold
 * "data\n" alone. Stdout: `errfd: 40000 messages`. 1 line (`40000 40000`). */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/resource.h>

#define PROG "errfd"
#include "progs.h"

int main(int argc, char **argv)
{
    if (argc != 2)
        fail("usage: errfd FILE");
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {64 << 10, 64 << 10};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        die("setrlimit");
    close(2);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd != 2)
        fail("the data file is not descriptor 2");
    if (write(fd, "data\n", 5) != 5)
        fail("write the data file");
    int sv[2];
    stream_pair(sv, 0);
    char c = 'x';
    for (int i = 0; i < 40000; i++) {
        send_all(sv[0], &c, 1, 1, 0);
        recv_all(sv[1], &c, 1, 1, 0);
    }
    printf("errfd: 40000 messages\n");
    fflush(stdout);
    write_expect(40000, 40000);
    return 0;
}
