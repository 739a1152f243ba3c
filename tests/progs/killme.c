/* killme: one process, an AF_UNIX stream socketpair and a reader thread.
 * The main thread sends 4096-byte blocks forever; after the first 1000
 * blocks it prints "ready" and flushes, then keeps going until killed
 * (meant for SIGKILL).  It never exits normally, so it never writes a
 * DDLT_EXPECT line; on an unexpected error it exits 99.
 * See README.md for the DDLT_EXPECT contract. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/types.h>

#define BLOCK 4096

static int g_sv[2];

static void die(const char *what)
{
    fprintf(stderr, "killme: %s: %s\n", what, strerror(errno));
    exit(99);
}

static void *reader(void *arg)
{
    (void)arg;
    static unsigned char buf[65536];
    for (;;) {
        ssize_t r = recv(g_sv[1], buf, sizeof buf, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            die("recv");
        if (r == 0) {
            fprintf(stderr, "killme: unexpected EOF\n");
            exit(99);
        }
    }
    return NULL;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, g_sv) < 0)
        die("socketpair");
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
        size_t off = 0;
        while (off < BLOCK) {
            ssize_t r = send(g_sv[0], block + off, BLOCK - off, 0);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0)
                die("send");
            off += (size_t)r;
        }
        if (++blocks == 1000) {
            printf("ready\n");
            fflush(stdout);
        }
    }
}
