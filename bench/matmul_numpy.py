"""numpy (OpenBLAS) float32 matmul GFLOP/s at the MLP shapes: the reference for
pipetrain's GEMM. Threads come from OPENBLAS_NUM_THREADS; run by bench/run.sh."""
import sys
import time

import numpy as np

SHAPES = [(128, 784, 512), (128, 512, 256), (128, 1024, 1024), (1024, 1024, 1024)]


def gflops(m, k, n, reps=7):
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    c = a @ b  # warm up
    best = []
    for _ in range(reps):
        iters = max(1, int(2e9 / (2 * m * n * k)))
        t = time.perf_counter()
        for _ in range(iters):
            np.matmul(a, b, out=c)
        best.append(2 * m * n * k * iters / (time.perf_counter() - t) / 1e9)
    best.sort()
    return best[len(best) // 2]


for m, k, n in SHAPES:
    print(f"{m}x{k}x{n} {gflops(m, k, n):.1f}")
sys.stdout.flush()
