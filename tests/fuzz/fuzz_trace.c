/*
 * libFuzzer target for the trace reader: any bytes as a trace file. The
 * reader must never crash, leak or read out of bounds, and must always name
 * the input and the problem when it refuses it. Built by `make fuzz` with
 * clang's -fsanitize=fuzzer,address,undefined; seeds in tests/fuzz/seeds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trace_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ddl_trace t;
	char err[512] = "";
	if (ddl_trace_parse(data, size, "fuzz.ddlt", &t, err, sizeof err) < 0) {
		if (!strstr(err, "fuzz.ddlt:"))
			abort(); /* every refusal names the file */
	} else {
		/* use what was read, as the report does */
		/* unsigned: the sum of hostile timestamps may wrap */
		volatile uint64_t sink = 0;
		for (size_t i = 0; i < t.nev; i++) {
			sink += (uint64_t)ddl_trace_mono_ns(&t, t.ev[i].start) + (uint64_t)ddl_trace_dur_ns(&t, &t.ev[i]);
			if (t.ev[i].peer < t.npeers && t.peers[t.ev[i].peer].text)
				sink += strlen(t.peers[t.ev[i].peer].text);
			if (t.ev[i].tid < t.nthreads && t.threads[t.ev[i].tid].name)
				sink += strlen(t.threads[t.ev[i].tid].name);
			sink += strlen(ddl_event_name(t.ev[i].kind));
		}
		for (int i = 0; i < t.nproblems; i++)
			if (!strstr(t.problems[i], "fuzz.ddlt: offset "))
				abort(); /* every problem names the file and the offset */
		(void)ddl_trace_meta(&t, "cmdline");
		(void)sink;
	}
	ddl_trace_free(&t);
	return 0;
}
