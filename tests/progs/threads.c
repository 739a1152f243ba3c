/* threads: 200 sender threads released together by a barrier, each sending
 * 1000 + i*10 bytes over its own AF_UNIX stream socketpair (alternating
 * send() and write()), with one reader thread per pair (alternating recv()
 * and read()) reading to EOF.  Single process, one DDLT_EXPECT line.
 * See README.md for the DDLT_EXPECT contract. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>

#define PROG "threads"
#include "progs.h"

#define NT 200

struct slot {
    int idx;
    int fd[2];              /* fd[0] sender end, fd[1] reader end */
    unsigned long long sent, recvd;
    pthread_t sender, reader;
};

static struct slot g_slots[NT];
static pthread_barrier_t g_barrier;

static size_t amount(int i)
{
    return 1000 + (size_t)i * 10;
}

static void *sender(void *arg)
{
    struct slot *s = arg;
    unsigned char buf[512];
    memset(buf, (unsigned char)s->idx, sizeof buf);
    int r = pthread_barrier_wait(&g_barrier);
    if (r != 0 && r != PTHREAD_BARRIER_SERIAL_THREAD)
        fail("pthread_barrier_wait");
    size_t n = amount(s->idx), off = 0;
    int k = 0;
    while (off < n) {
        size_t want = n - off < sizeof buf ? n - off : sizeof buf;
        ssize_t w = (k++ & 1) ? write(s->fd[0], buf, want) : send(s->fd[0], buf, want, 0);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            die("send");
        }
        s->sent += (unsigned long long)w;
        off += (size_t)w;
    }
    if (shutdown(s->fd[0], SHUT_WR) < 0)
        die("shutdown");
    return NULL;
}

static void *reader(void *arg)
{
    struct slot *s = arg;
    unsigned char buf[300];
    int k = 0;
    for (;;) {
        ssize_t r = (k++ & 1) ? read(s->fd[1], buf, sizeof buf) : recv(s->fd[1], buf, sizeof buf, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            die("recv");
        }
        if (r == 0)
            break;
        check_bytes(buf, (size_t)r, (unsigned char)s->idx);
        s->recvd += (unsigned long long)r;
    }
    return NULL;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (pthread_barrier_init(&g_barrier, NULL, NT) != 0)
        fail("pthread_barrier_init");
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);

    for (int i = 0; i < NT; i++) {
        g_slots[i].idx = i;
        stream_pair(g_slots[i].fd, SOCK_CLOEXEC);
    }
    for (int i = 0; i < NT; i++) {
        int e = pthread_create(&g_slots[i].reader, &attr, reader, &g_slots[i]);
        if (e) {
            errno = e;
            die("pthread_create reader");
        }
    }
    for (int i = 0; i < NT; i++) {
        int e = pthread_create(&g_slots[i].sender, &attr, sender, &g_slots[i]);
        if (e) {
            errno = e;
            die("pthread_create sender");
        }
    }
    unsigned long long sent = 0, recvd = 0, want = 0;
    for (int i = 0; i < NT; i++) {
        pthread_join(g_slots[i].sender, NULL);
        pthread_join(g_slots[i].reader, NULL);
        if (g_slots[i].sent != amount(i) || g_slots[i].recvd != amount(i))
            fail("per-thread byte count mismatch");
        sent += g_slots[i].sent;
        recvd += g_slots[i].recvd;
        want += amount(i);
        close(g_slots[i].fd[0]);
        close(g_slots[i].fd[1]);
    }
    pthread_attr_destroy(&attr);
    pthread_barrier_destroy(&g_barrier);
    if (sent != want || recvd != want)
        fail("total mismatch");
    printf("threads: %d senders, %d readers\n", NT, NT);
    printf("threads: total sent %llu received %llu\n", sent, recvd);
    fflush(stdout);
    write_expect(sent, recvd);
    return 0;
}
