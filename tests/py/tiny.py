#!/usr/bin/env python3
"""Five optimizer steps of a small model, no distribution: enough for the
Python hook to see steps, when it is on."""
import torch

torch.manual_seed(0)
model = torch.nn.Linear(16, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 16)
for _ in range(5):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
print(repr(loss.item()))
