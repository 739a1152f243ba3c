#!/usr/bin/env python3
"""A real DistributedDataParallel job: an MLP on synthetic data.

Runs on CPU with the gloo backend (Debian's python3-torch), or on GPUs with
NCCL where CUDA is present. Start one process per rank with MASTER_ADDR,
MASTER_PORT, WORLD_SIZE and RANK set (examples/launch_ranks.sh does that;
Debian's torchrun is broken on Python 3.11). Under ddlprof:

    ddlprof -o run1 --run-id run1 -- python3 examples/pytorch_ddp.py

Rank 0 prints the mean step time. Options: --steps, --layers, --width,
--batch, --threads, and --markers, which names each step "train_step"
through ddlprof's marker API (ctypes; a no-op without ddlprof), so
ddlprof-report cuts the run into iterations.
"""
import argparse
import ctypes
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--markers", action="store_true")
    args = ap.parse_args()

    # The marker API is in libddlprof.so, present only under ddlprof.
    lib = ctypes.CDLL(None)
    push = getattr(lib, "ddlprof_range_push", None) if args.markers else None
    pop = getattr(lib, "ddlprof_range_pop", None) if args.markers else None

    torch.set_num_threads(args.threads)
    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank = dist.get_rank()
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if cuda else torch.device("cpu")
    torch.manual_seed(rank)

    layers = []
    for _ in range(args.layers):
        layers += [nn.Linear(args.width, args.width), nn.ReLU()]
    model = nn.Sequential(*layers).to(dev)
    ddp = nn.parallel.DistributedDataParallel(model, device_ids=[dev.index] if cuda else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x = torch.randn(args.batch, args.width, device=dev)
    y = torch.randn(args.batch, args.width, device=dev)

    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        if push:
            push(b"train_step")
        opt.zero_grad()
        loss = ((ddp(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        if cuda:
            torch.cuda.synchronize()
        if pop:
            pop()
        times.append(time.perf_counter() - t0)
    if rank == 0:
        skip = min(3, len(times) - 1)
        mean = sum(times[skip:]) / len(times[skip:])
        print("pytorch_ddp: %d ranks, %d steps, %.3f s/step" % (dist.get_world_size(), args.steps, mean))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
