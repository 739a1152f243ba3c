/*
 * Names an output format must escape: 8 steps "train_step", each holding a
 * range "<script>alert(1)</script>" around a socket exchange, a range with
 * a comma, quotes and a backslash, and a mark whose name holds bytes that
 * are not UTF-8 and control characters; the thread is named with markup
 * and a quote. The marker functions are weak: without the profiler they
 * are absent and the program runs the same.
 */
#define _GNU_SOURCE
#define PROG "outnames"
#include "progs.h"

#include <pthread.h>
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
	char buf[2000];
	memset(buf, 'n', sizeof buf);
	pthread_setname_np(pthread_self(), "<b>\"x&y'");
	stream_pair(sv, 0);
	for (int i = 0; i < 8; i++) {
		push("train_step");
		push("<script>alert(1)</script>");
		send_all(sv[0], buf, sizeof buf, 0, 0);
		recv_all(sv[1], buf, sizeof buf, 0, 0);
		pop();
		push("data,\"quoted\" \\ back");
		struct timespec ts = {0, 3000000};
		nanosleep(&ts, NULL);
		pop();
		if (ddlprof_mark)
			ddlprof_mark("bad \xff\xfe utf-8 \x01\x1f ctl \xe2\x82 cut");
		pop();
	}
	printf("outnames: 8 steps\n");
	write_expect(g_sent, g_recv);
	return 0;
}
