"""PyTorch (OpenBLAS) MNIST MLP 784-512-256-10, batch 128, SGD lr 0.05 momentum
0.9, one epoch of the real training data: the reference for pipetrain's
training step. Prints samples/s over the steps after the first 10, as
bench/epochrate counts pipetrain's. With PRECISION bf16 the step runs under
torch.autocast("cpu", dtype=torch.bfloat16), the products in bf16 (oneDNN).
Usage: mnist_torch.py DATA_DIR [THREADS [PRECISION]]"""
import contextlib
import gzip
import os
import sys
import time

import numpy as np
import torch

data = sys.argv[1]
torch.set_num_threads(int(sys.argv[2]) if len(sys.argv) > 2 else 2)
torch.manual_seed(1)
bf16 = len(sys.argv) > 3 and sys.argv[3] == "bf16"
autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if bf16 else contextlib.nullcontext


def idx(name, offset):
    with gzip.open(os.path.join(data, name)) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


x = torch.from_numpy(idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 784).astype(np.float32) / 255)
y = torch.from_numpy(idx("train-labels-idx1-ubyte.gz", 8).astype(np.int64))
model = torch.nn.Sequential(
    torch.nn.Linear(784, 512), torch.nn.ReLU(),
    torch.nn.Linear(512, 256), torch.nn.ReLU(),
    torch.nn.Linear(256, 10))
for m in model:
    if isinstance(m, torch.nn.Linear):
        torch.nn.init.xavier_uniform_(m.weight)
        torch.nn.init.zeros_(m.bias)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = torch.nn.CrossEntropyLoss()
perm = torch.randperm(x.shape[0])
warm = 10  # steps before the clock starts
for s, i in enumerate(range(0, x.shape[0] - 127, 128)):
    if s == warm:
        start = time.perf_counter()
    idx_ = perm[i:i + 128]
    opt.zero_grad()
    with autocast():
        loss = loss_fn(model(x[idx_]), y[idx_])
    loss.backward()
    opt.step()
elapsed = time.perf_counter() - start
print(f"{(s + 1 - warm) * 128 / elapsed:.0f} samples/s ({elapsed:.2f} s, last loss {loss.item():.4f})")
