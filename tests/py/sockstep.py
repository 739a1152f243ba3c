#!/usr/bin/env python3
"""A data-parallel step loop over plain sockets, written without ddlprof in
mind: no markers, no torch. Ranks start as torchrun would start them
(RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT); rank 0 listens on the
master's address, the others connect to it.

Each step computes for --compute-ms (a busy loop standing in for forward
and backward), then all-reduces --kb kilobytes of "gradients" through rank
0: every other rank sends its bytes, rank 0 combines them (XOR) and sends
the result back to each. Sends are sendall(), receives recv_into() of what
is left, so the kernel splits each message as it likes.

It times its own steps, from the start of one step's compute to the end of
its all-reduce, and prints one JSON line per rank:

  {"rank": R, "world": N, "steps": S, "step_s": [...], "mean_step_s": M}

--steps 0 makes a program with no loop: the ranks connect, exchange one
message of --kb each way, and exit.
"""
import argparse
import json
import os
import socket
import time


def recv_exact(s, n):
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = s.recv_into(view[got:], n - got)
        if k == 0:
            raise SystemExit("sockstep: peer closed")
        got += k
    return bytes(buf)


def busy(ms):
    end = time.perf_counter() + ms / 1e3
    x = 1.0
    while time.perf_counter() < end:
        for _ in range(200):
            x = x * 1.0000001 + 1e-9
    return x


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--kb", type=int, default=1024)
    ap.add_argument("--compute-ms", type=float, default=20.0)
    ap.add_argument("--out", help="write the JSON line to OUT.RANK as well")
    a = ap.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    addr = (os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
    n = a.kb * 1024
    if rank == 0:
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(addr)
        srv.listen(world)
        peers = {}
        while len(peers) < world - 1:
            c, _ = srv.accept()
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            peers[int.from_bytes(recv_exact(c, 4), "little")] = c
        srv.close()
        peers = [peers[r] for r in sorted(peers)]
    else:
        for _ in range(600):
            try:
                c = socket.create_connection(addr)
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit("sockstep: cannot connect to %s:%d" % addr)
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c.sendall(rank.to_bytes(4, "little"))
    grad = bytes((rank + i) & 0xFF for i in range(256)) * (n // 256) + bytes(n % 256)

    def allreduce(g):
        if rank == 0:
            acc = int.from_bytes(g, "little")
            for p in peers:
                acc ^= int.from_bytes(recv_exact(p, n), "little")
            out = acc.to_bytes(n, "little")
            for p in peers:
                p.sendall(out)
            return out
        c.sendall(g)
        return recv_exact(c, n)

    steps = []
    if a.steps == 0:
        allreduce(grad)
    for i in range(a.steps):
        t0 = time.perf_counter()
        busy(a.compute_ms)
        grad = allreduce(grad)
        steps.append(time.perf_counter() - t0)
    line = json.dumps({"rank": rank, "world": world, "steps": a.steps, "step_s": steps,
                       "mean_step_s": sum(steps) / len(steps) if steps else None})
    print(line, flush=True)
    if a.out:
        with open("%s.%d" % (a.out, rank), "w") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
