/*
 * The marker API from C: 12 training steps of about 20 ms, each a range
 * "train_step" holding a nested "data" range, a socket exchange and a mark.
 * The functions are weak: without the profiler they are absent and the
 * program runs the same.
 */
#define _GNU_SOURCE
#define PROG "markers"
#include "progs.h"

#include <time.h>

#include "ddlprof/ddlprof.h"

static void push(const char *name)
{
	if (ddlprof_range_push)
		ddlprof_range_push(name);
}

static void pop(void)
{
	if (ddlprof_range_pop)
		ddlprof_range_pop();
}

int main(void)
{
	int sv[2];
	char buf[1000];
	memset(buf, 'm', sizeof buf);
	stream_pair(sv, 0);
	for (int i = 0; i < 12; i++) {
		push("train_step");
		push("data");
		send_all(sv[0], buf, sizeof buf, 0, 0);
		recv_all(sv[1], buf, sizeof buf, 0, 0);
		pop();
		if (ddlprof_mark)
			ddlprof_mark("after data");
		struct timespec ts = {0, 20000000};
		nanosleep(&ts, NULL);
		pop();
	}
	printf("markers: 12 steps\n");
	write_expect(g_sent, g_recv);
	return 0;
}
