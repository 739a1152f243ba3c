#!/usr/bin/env python3
"""A real DistributedDataParallel job: an MLP on synthetic data.

Runs on CPU with the gloo backend (Debian's python3-torch), or on GPUs with
NCCL where CUDA is present. Start one process per rank with MASTER_ADDR,
MASTER_PORT, WORLD_SIZE and RANK set (examples/launch_ranks.sh does that;
Debian's torchrun is broken on Python 3.11). Under ddlprof, with no change:

    ddlprof -o run1 -- python3 examples/pytorch_ddp.py

Rank 0 prints the mean step time and the mean wait for the next batch.
Options: --steps, --layers, --width, --batch, --threads; --workers N feeds
the steps from a DataLoader with N worker processes whose samples each
cost --sample-ms of CPU to make (0 workers and no --sample-ms: one batch
made up front, no loader); --markers names each step "train_step" through
ddlprof's marker API (ctypes; a no-op without ddlprof); --hang-rank R
--hang-at N: rank R stops for good before step N's backward, so that the
others wait in that step's all-reduce (a hang, for tests and demos).
"""
import argparse
import ctypes
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    """Random samples that take SAMPLE_MS of CPU each to make, as decoding does."""

    def __init__(self, n, width, sample_ms):
        self.n, self.width, self.cost = n, width, sample_ms / 1000

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        t = time.perf_counter()
        while time.perf_counter() - t < self.cost:
            pass
        g = torch.Generator().manual_seed(i)
        return torch.randn(self.width, generator=g), torch.randn(self.width, generator=g)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--sample-ms", type=float, default=0)
    ap.add_argument("--markers", action="store_true")
    ap.add_argument("--hang-rank", type=int, default=-1)
    ap.add_argument("--hang-at", type=int, default=1)
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
    loader = None
    if args.workers or args.sample_ms:
        data = Samples(args.steps * args.batch, args.width, args.sample_ms)
        loader = iter(DataLoader(data, batch_size=args.batch, num_workers=args.workers,
                                 pin_memory=cuda))
    else:
        x = torch.randn(args.batch, args.width, device=dev)
        y = torch.randn(args.batch, args.width, device=dev)

    times, waits = [], []
    for step in range(1, args.steps + 1):
        t0 = time.perf_counter()
        if push:
            push(b"train_step")
        if loader is not None:
            x, y = (t.to(dev, non_blocking=True) for t in next(loader))
        waits.append(time.perf_counter() - t0)
        opt.zero_grad()
        loss = ((ddp(x) - y) ** 2).mean()
        if rank == args.hang_rank and step == args.hang_at:
            print("pytorch_ddp: rank %d: stopping before step %d's backward for good (--hang-rank)"
                  % (rank, step), flush=True)
            while True:
                time.sleep(3600)
        loss.backward()
        opt.step()
        if cuda:
            torch.cuda.synchronize()
        if pop:
            pop()
        times.append(time.perf_counter() - t0)
    if rank == 0:
        skip = min(5, len(times) - 1)
        mean = sum(times[skip:]) / len(times[skip:])
        wait = sum(waits[skip:]) / len(waits[skip:])
        print("pytorch_ddp: %d ranks, %d steps, %.3f s/step, %.3f s waiting for data (steps %d on)"
              % (dist.get_world_size(), args.steps, mean, wait, skip + 1))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
