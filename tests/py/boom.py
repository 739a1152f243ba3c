#!/usr/bin/env python3
"""A training loop whose data set fails on one sample, in a loader worker:
PyTorch re-raises the worker's exception in the training loop, and the
program dies of it. Argument: the number of loader workers."""
import sys

import torch
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise ValueError("bad sample %d" % i)
        return torch.ones(3) * i


torch.manual_seed(0)
model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in DataLoader(Samples(), batch_size=2, num_workers=int(sys.argv[1])):
    loss = model(x).sum()
    loss.backward()
    opt.step()
    print(repr(loss.item()), flush=True)
