#!/usr/bin/env python3
"""Two ranks; rank 1 leaves after a barrier, and rank 0's next all_reduce
fails in gloo (a C++ exception that becomes a RuntimeError). Rank 0 prints
what it caught and exits 3."""
import os
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
dist.barrier()
if dist.get_rank() == 1:
    os._exit(0)
try:
    for _ in range(50):
        dist.all_reduce(torch.ones(1 << 16))
except RuntimeError as e:
    print("caught", type(e).__name__, flush=True)
    sys.exit(3)
print("no error", flush=True)
