#!/usr/bin/env python3
"""Training loops with more than one optimizer step per iteration, or more
than one optimizer: prints how many iterations the loop ran.

  gan       a discriminator's and a generator's optimizer, one step each
  gan2      the discriminator steps twice for each generator step
  renew     a new optimizer every 8 iterations (the old one dropped)
  scaler    GradScaler.step(optimizer) (which calls optimizer.step())
  subclass  an optimizer whose step() calls its base class's
  probe     a second optimizer that steps beside the first in the first
            three iterations only (a probe, a warm-up of a head)
"""
import sys

import torch
import torch.nn as nn

mode, iters = sys.argv[1], int(sys.argv[2])
torch.manual_seed(0)
d, g = nn.Linear(16, 1), nn.Linear(8, 16)
x = torch.randn(32, 16)


class Clipped(torch.optim.SGD):
    def step(self, closure=None):
        for group in self.param_groups:
            torch.nn.utils.clip_grad_norm_(group["params"], 1.0)
        return super().step(closure)


opt_d = (Clipped if mode == "subclass" else torch.optim.SGD)(d.parameters(), lr=0.01)
opt_g = torch.optim.Adam(g.parameters(), lr=0.001)
scaler = torch.cuda.amp.GradScaler(enabled=False)
for it in range(iters):
    for _ in range(2 if mode == "gan2" else 1):
        opt_d.zero_grad()
        loss_d = d(x).mean() - d(g(torch.randn(32, 8)).detach()).mean()
        loss_d.backward()
        if mode == "scaler":
            scaler.step(opt_d)
            scaler.update()
        else:
            opt_d.step()
    if mode.startswith("gan") or (mode == "probe" and it < 3):
        opt_g.zero_grad()
        loss_g = d(g(torch.randn(32, 8))).mean()
        loss_g.backward()
        opt_g.step()
    if mode == "renew" and it % 8 == 7:
        opt_d = torch.optim.SGD(d.parameters(), lr=0.01)
print(iters)
