/* killme: one process, an AF_UNIX stream socketpair and a reader thread.
 * The main thread sends 4096-byte blocks forever; after the first 1000
 * blocks it prints "ready" and flushes, then keeps going until killed
 * (meant for SIGKILL).  It never exits normally, so it never writes a
 * DDLT_EXPECT line; on an unexpected error it exits 99.
 * See README.md for the DDLT_EXPECT contract. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>

#define PROG "killme"
#include "progs.h"

#define BLOCK 4096

static int g_sv[2];

static void *reader(void *arg)
{
    (void)arg;
    static unsigned char buf[65536];
    for (;;)
        if (recv_some(g_sv[1], buf, sizeof buf, 0) == 0)
            fail("unexpected EOF");
    return NULL;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    stream_pair(g_sv, 0);
    pthread_t t;
    int e = pthread_create(&t, NULL, reader, NULL);
    if (e) {
        errno = e;
        die("pthread_create");
    }
    static unsigned char block[BLOCK];
    memset(block, 'k', sizeof block);
    unsigned long long blocks = 0;
    for (;;) {
        send_all(g_sv[0], block, BLOCK, 0, 0);
        if (++blocks == 1000) {
            printf("ready\n");
            fflush(stdout);
        }
    }
}
