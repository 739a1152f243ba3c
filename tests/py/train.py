#!/usr/bin/env python3
"""A PyTorch DistributedDataParallel trainer of the kind people run, written
without ddlprof in mind: no markers, no hooks. It measures itself, and
prints one JSON line per rank with what it measured, for the tests to hold
ddlprof's report against:

  step_s      each step's time, from the end of one optimizer step to the next
  wait_s      each step's wait in next() on the DataLoader iterator
  grad_bytes  the bytes of the gradients DDP all-reduces each step
  losses      every step's loss, exactly (repr)
  params      a SHA-256 of the final parameters' bytes

Ranks start as torchrun would start them: MASTER_ADDR, MASTER_PORT,
WORLD_SIZE, RANK. Models: mlp, cnn (convolutions and batch norm: DDP also
broadcasts its buffers), lstm. Loaders: memory (tensors made up front),
prep (each sample costs --item-ms of CPU in the worker), fetch (each sample
is read from a storage server over TCP that answers after --item-ms, as
remote storage would), none (no DataLoader: one batch made each step).
--slow-rank R makes rank R's samples cost four times as much.
"""
import argparse
import hashlib
import json
import os
import socket
import struct
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


def make_model(kind, width):
    if kind == "mlp":
        layers = []
        for _ in range(4):
            layers += [nn.Linear(width, width), nn.ReLU()]
        return nn.Sequential(*layers, nn.Linear(width, 10))
    if kind == "cnn":
        return nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 8 * 8, 10))
    if kind == "lstm":
        class Lstm(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(1000, 64)
                self.rnn = nn.LSTM(64, width, batch_first=True)
                self.out = nn.Linear(width, 10)

            def forward(self, x):
                h, _ = self.rnn(self.emb(x))
                return self.out(h[:, -1])
        return Lstm()
    raise SystemExit("unknown model " + kind)


def sample(kind, width, i):
    g = torch.Generator().manual_seed(i)
    if kind == "mlp":
        x = torch.randn(width, generator=g)
    elif kind == "cnn":
        x = torch.randn(3, 32, 32, generator=g)
    else:
        x = torch.randint(0, 1000, (24,), generator=g)
    return x, torch.randint(0, 10, (), generator=g)


def serve(port_file, delay):
    """The storage server: each request (a sample number) answered after DELAY."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(srv.getsockname()[1]))
    os.rename(port_file + ".tmp", port_file)
    import threading

    def one(c):
        with c:
            while True:
                req = c.recv(4)
                if len(req) < 4:
                    return
                time.sleep(delay)
                c.sendall(os.urandom(4096))

    while True:
        c, _ = srv.accept()
        threading.Thread(target=one, args=(c,), daemon=True).start()


class Samples(Dataset):
    def __init__(self, args, n, port=None):
        self.args, self.n, self.port, self.conn = args, n, port, None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        a = self.args
        if a.loader == "prep":  # decoding and augmenting: CPU
            t = time.perf_counter()
            while time.perf_counter() - t < a.item_ms / 1000:
                pass
        elif a.loader == "fetch":  # a read from remote storage
            if self.conn is None:
                self.conn = socket.create_connection(("127.0.0.1", self.port))
            self.conn.sendall(struct.pack("!I", i))
            got = 0
            while got < 4096:
                b = self.conn.recv(4096 - got)
                if not b:
                    raise IOError("storage closed")
                got += len(b)
        return sample(a.model, a.width, i)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="mlp")
    ap.add_argument("--loader", default="memory", choices=["memory", "prep", "fetch", "none"])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--item-ms", type=float, default=1.0)
    ap.add_argument("--slow-rank", type=int, default=-1, help="this rank's samples cost 4 times as much")
    ap.add_argument("--out", default=None, help="write the JSON line here too")
    a = ap.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == a.slow_rank:
        a.item_ms *= 4
    torch.manual_seed(0)
    model = make_model(a.model, a.width)
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)

    port = None
    if a.loader == "fetch":
        import multiprocessing as mp

        port_file = "/tmp/train-storage-%d-%d" % (os.getpid(), rank)
        mp.Process(target=serve, args=(port_file, a.item_ms / 1000), daemon=True).start()
        while not os.path.exists(port_file):
            time.sleep(0.01)
        port = int(open(port_file).read())
        os.unlink(port_file)
    n = (a.steps + 1) * a.batch
    if a.loader == "memory":
        xs, ys = zip(*(sample(a.model, a.width, rank * n + i) for i in range(n)))
        data = torch.utils.data.TensorDataset(torch.stack(xs), torch.stack(ys))
    else:
        data = Samples(a, n, port)
    loader = DataLoader(data, batch_size=a.batch, num_workers=a.workers) if a.loader != "none" else None
    it = iter(loader) if loader else None

    losses, step_s, wait_s = [], [], []
    last = time.perf_counter()
    for s in range(a.steps):
        t0 = time.perf_counter()
        if it is not None:
            x, y = next(it)
        else:
            xs, ys = zip(*(sample(a.model, a.width, s * a.batch + i) for i in range(a.batch)))
            x, y = torch.stack(xs), torch.stack(ys)
        wait_s.append(time.perf_counter() - t0)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        now = time.perf_counter()
        step_s.append(now - last)
        last = now
        losses.append(repr(loss.item()))
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().numpy().tobytes())
    line = json.dumps({"rank": rank, "world": world, "steps": a.steps, "step_s": step_s,
                       "wait_s": wait_s, "grad_bytes": grad_bytes, "losses": losses,
                       "params": h.hexdigest()})
    print(line, flush=True)
    if a.out:
        with open("%s.%d" % (a.out, rank), "w") as f:
            f.write(line + "\n")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
