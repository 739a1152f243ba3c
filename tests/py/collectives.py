#!/usr/bin/env python3
"""torch.distributed's own calls, on gloo, between ranks started by hand
(MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK): collectives on the default
group and on one made with new_group, and point-to-point sends. Prints, on
rank 0, one JSON line: the calls it made and the bytes each moved for this
rank, as the tests expect ddlprof's report to count them."""
import json

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    made = {"calls": 0, "ops": {}}

    def note(op, nbytes):
        made["calls"] += 1
        o = made["ops"].setdefault(op, {"count": 0, "bytes": 0})
        o["count"] += 1
        o["bytes"] += nbytes

    a = torch.arange(1000, dtype=torch.float32) + rank
    dist.all_reduce(a)
    note("allreduce", 4000)
    b = torch.zeros(100, dtype=torch.int64) + rank
    dist.broadcast(b, src=world - 1)
    note("broadcast", 800)
    parts = [torch.zeros(10, dtype=torch.float64) for _ in range(world)]
    dist.all_gather(parts, torch.ones(10, dtype=torch.float64) * rank)
    note("allgather", 80)
    dist.reduce(a, dst=0)
    note("reduce", 4000)
    dist.barrier()
    note("barrier", 0)
    sub = dist.new_group(list(range(world)))
    for _ in range(3):
        dist.all_reduce(a, group=sub)
        note("allreduce", 4000)
    work = dist.all_reduce(b, async_op=True)
    work.wait()
    note("allreduce", 800)
    # point to point: not gloo collectives, counted from the calls themselves
    p2p = torch.zeros(256)
    if rank == 0:
        dist.send(p2p + 1, dst=1)
        dist.irecv(p2p, src=1).wait()
    elif rank == 1:
        dist.recv(p2p, src=0)
        dist.isend(p2p, dst=0).wait()
    made["p2p_calls"] = 2 if rank < 2 else 0
    made["sum"] = float(a.sum())
    if rank == 0:
        print(json.dumps(made), flush=True)
    dist.destroy_process_group()


main()
