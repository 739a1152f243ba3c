/* reexec: runs itself again through /proc/self/exe (argv[0] kept), as
 * programs that start their workers that way do; Linux names the new
 * image, and every thread it starts, "exe". The new image starts a thread
 * that sends 100 bytes over a socketpair to the main thread. Stdout (the
 * second image's): `reexec: 100 bytes`. 1 line (`100 100`). */
#define _GNU_SOURCE
#define PROG "reexec"
#include <pthread.h>

#include "progs.h"

static void *sender(void *arg)
{
    char buf[100];
    memset(buf, 'r', sizeof buf);
    send_all(*(int *)arg, buf, sizeof buf, sizeof buf, 0);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        execl("/proc/self/exe", argv[0], "again", (char *)NULL);
        die("execl");
    }
    int sv[2];
    char buf[100];
    pthread_t t;
    stream_pair(sv, 0);
    if (pthread_create(&t, NULL, sender, &sv[0]) != 0)
        fail("pthread_create");
    recv_all(sv[1], buf, sizeof buf, sizeof buf, 0);
    check_bytes(buf, sizeof buf, 'r');
    pthread_join(t, NULL);
    close(sv[0]);
    close(sv[1]);
    printf("reexec: %zu bytes\n", sizeof buf);
    fflush(stdout);
    write_expect(sizeof buf, sizeof buf);
    return 0;
}
