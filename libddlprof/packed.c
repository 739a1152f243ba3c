/*
 * Packed launch records. A kernel launch is the hottest call the library
 * wraps, and its full record is two ring slots: the event and its args
 * record (kernel name, grid and block sizes, call number). Most launches
 * fit in one slot: they succeed or fail with a small code, name a kernel
 * and a device with small ids, and are not timed on the device. Those are
 * written to the ring packed, in one slot of a kind that exists only in
 * the ring (DDL_RING_LAUNCH_*), and the writer thread expands each into the
 * event and args record that the file format has (ddlprof-trace(5)), off
 * the program's threads. Files never hold a packed record.
 */
#include <string.h>

#include "ddl.h"

size_t ddl_ring_unpack(struct ddl_event *out, size_t room, const struct ddl_event *in, size_t n,
                       size_t *nout)
{
	size_t i = 0, o = 0;
	for (; i < n; i++) {
		const struct ddl_event *e = &in[i];
		unsigned kind = e->kind;
		if (ddl_likely(kind != DDL_RING_LAUNCH && kind != DDL_RING_LAUNCH_COOP)) {
			if (o == room)
				break;
			out[o++] = *e;
			continue;
		}
		if (room - o < 2)
			break;
		struct ddl_event *ev = &out[o];
		uint64_t packed = (uint64_t)e->result;
		*ev = *e;
		ev->kind = kind == DDL_RING_LAUNCH ? DDL_EV_CUDA_LAUNCH : DDL_EV_CUDA_LAUNCH_COOP;
		ev->flags = e->flags | DDL_EVF_ARGS;
		ev->result = (int64_t)(packed >> 48);
		ev->fd = (int32_t)((uint32_t)e->fd >> 24);
		struct ddl_args a = {
		    .bytes = packed & 0xffffffffu,
		    .name = (uint32_t)e->fd & 0xffffffu,
		    .kind = DDL_EV_ARGS,
		    .peer = -1,
		    .aux = (uint32_t)(packed >> 32) & 0xffffu,
		};
		memcpy(&out[o + 1], &a, sizeof a);
		o += 2;
	}
	*nout = o;
	return i;
}
