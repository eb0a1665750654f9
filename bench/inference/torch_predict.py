"""PyTorch inference on the MNIST MLP 784-512-ReLU-256-ReLU-10 with softmax,
under torch.no_grad(), at batch 1 and 256, with THREADS intra-op threads.
Prints "batchB_threadsT predictions/s" lines. Usage: torch_predict.py THREADS [SECONDS]"""
import sys
import time

import torch

threads = int(sys.argv[1])
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
torch.set_num_threads(threads)
torch.manual_seed(1)
model = torch.nn.Sequential(
    torch.nn.Linear(784, 512), torch.nn.ReLU(),
    torch.nn.Linear(512, 256), torch.nn.ReLU(),
    torch.nn.Linear(256, 10)).eval()
with torch.no_grad():
    for batch in (1, 256):
        x = torch.rand(batch, 784)
        for _ in range(20):
            torch.softmax(model(x), 1)
        done, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            torch.softmax(model(x), 1)
            done += batch
        print(f"batch{batch}_threads{threads} {done / (time.perf_counter() - start):.0f}")
