# The CNN on MNIST in PyTorch, the reference pipetrain's
# configs/cnn.toml is compared with: Conv(1->32, 3, pad 1)-ReLU-MaxPool(2) ->
# Conv(32->64, 3, pad 1)-ReLU-MaxPool(2) -> Flatten -> Linear(3136->128)-ReLU ->
# Linear(128->10), SGD lr 0.05 momentum 0.9, batch 128, shuffled.
# usage: python3 torch_cnn.py MNIST_DIR THREADS [STEPS]
# Prints samples/s over the steps after the first 10 (as bench/epochrate
# counts pipetrain's) and, after a whole epoch (no STEPS), the test accuracy.
import gzip, struct, sys, time
import numpy as np
import torch

def images(path):
    with gzip.open(path) as f:
        _, n, r, c = struct.unpack(">IIII", f.read(16))
        return np.frombuffer(f.read(), np.uint8).reshape(n, 1, r, c).astype(np.float32) / 255

def labels(path):
    with gzip.open(path) as f:
        struct.unpack(">II", f.read(8))
        return np.frombuffer(f.read(), np.uint8).astype(np.int64)

d, threads = sys.argv[1], int(sys.argv[2])
steps = int(sys.argv[3]) if len(sys.argv) > 3 else None
torch.set_num_threads(threads)
torch.manual_seed(1)
xtr, ytr = torch.from_numpy(images(d + "/train-images-idx3-ubyte.gz")), torch.from_numpy(labels(d + "/train-labels-idx1-ubyte.gz"))
xte, yte = torch.from_numpy(images(d + "/t10k-images-idx3-ubyte.gz")), torch.from_numpy(labels(d + "/t10k-labels-idx1-ubyte.gz"))
nn = torch.nn
model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
perm = torch.randperm(len(xtr))
warm = 10  # steps before the clock starts
for s, i in enumerate(range(0, len(xtr) - 127, 128)):
    if s == warm:
        start = time.perf_counter()
    if steps is not None and s == steps:
        break
    idx = perm[i:i + 128]
    opt.zero_grad()
    loss = loss_fn(model(xtr[idx]), ytr[idx])
    loss.backward()
    opt.step()
else:
    s += 1
took = time.perf_counter() - start
acc = ""
if steps is None:
    with torch.no_grad():
        acc = f" {(model(xte).argmax(1) == yte).float().mean().item():.4f}"
print(f"{(s - warm) * 128 / took:.0f}{acc}")
