/*
 * fault: moves 5000 bytes over a socketpair, prints one line, then takes a
 * fatal signal of its own making (argv[1]):
 *   bus            SIGBUS, default action: a read of a page past the end
 *                  of an empty memfd mapped shared
 *   segv-handler   SIGSEGV (a NULL read) caught by the program's handler
 *   bus-handler    SIGBUS as above, caught by the program's handler
 * The handlers print "fault: caught SIGxxx" with write(2) and leave with a
 * raw exit_group(42): no exit(), no _exit() wrapper, nothing the preload
 * library sees, so the trace holds the 5000 bytes only if the library
 * wrote them before calling the handler. Writes no DDLT_EXPECT line.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define PROG "fault"
#include "progs.h"

static void on_fault(int sig)
{
    static const char segv[] = "fault: caught SIGSEGV\n", bus[] = "fault: caught SIGBUS\n";
    if (sig == SIGSEGV)
        (void)!write(1, segv, sizeof segv - 1);
    else
        (void)!write(1, bus, sizeof bus - 1);
    syscall(SYS_exit_group, 42);
}

/* Reads a page of an empty file mapped shared: SIGBUS. */
static int touch_past_end(void)
{
    int fd = memfd_create("fault", MFD_CLOEXEC);
    if (fd < 0)
        die("memfd_create");
    volatile char *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        die("mmap");
    return p[0];
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "";
    int bus = !strcmp(how, "bus") || !strcmp(how, "bus-handler");
    if (!bus && strcmp(how, "segv-handler"))
        fail("usage: fault bus | segv-handler | bus-handler");
    if (strstr(how, "-handler")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fault;
        sigaction(bus ? SIGBUS : SIGSEGV, &sa, NULL);
    }
    int sv[2];
    char buf[5000];
    memset(buf, 'f', sizeof buf);
    stream_pair(sv, 0);
    send_all(sv[0], buf, sizeof buf, 0, 0);
    recv_all(sv[1], buf, sizeof buf, 0, 0);
    printf("fault: moved %llu bytes\n", g_recv);
    fflush(stdout);
    if (bus)
        return touch_past_end();
    volatile int *null = NULL;
    return *null;
}
