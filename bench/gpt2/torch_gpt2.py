"""GPT-2 small in PyTorch as nanoGPT builds it: the reference pipetrain's
configs/gpt2-small.toml is measured against. Not part of CI.

Model: nanoGPT's GPT with GPT-2's shape and bias=True (as its
from_pretrained sets for GPT-2): wte [V, D] tied to the head, wpe [T, D];
pre-LN blocks x += c_proj(attn(c_attn(ln_1(x)))), x += c_proj(gelu(c_fc(ln_2(x))))
with causal attention computed as nanoGPT does on a PyTorch without
scaled_dot_product_attention (Debian's 1.13): q @ k^T scaled, masked_fill
with -inf above the diagonal, softmax, @ v; exact GELU; ln_f; head = wte^T.
Init as nanoGPT: N(0, 0.02), residual projections N(0, 0.02/sqrt(2*layers)),
biases 0. AdamW (betas 0.9, 0.95, weight decay 0.1 on 2-D tensors), lr 6e-4,
clip_grad_norm_ 1.0.
Data: nanoGPT's get_batch over a uint16 train.bin (np.memmap), offsets from
torch.randint(len(data) - T, (B,)); or random ids when --data is not given.
A step of --batch sequences runs as --batch/--micro micro-batches whose
gradients accumulate (nanoGPT's gradient_accumulation_steps), which is what
fits it in memory.

Run it through bench/reference.sh's `ref` with /usr/bin/python3:
  torch_gpt2.py [--data train.bin] --threads 2 --micro 1 --steps 3 --warmup 1
The last line printed is a JSON summary with tokens/s and the peak RSS.
"""
import argparse, json, math, resource, time

import numpy as np
import threadpoolctl
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, d, heads, block):
        super().__init__()
        self.heads = heads
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.register_buffer("bias", torch.tril(torch.ones(block, block)).view(1, 1, block, block))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(self, d, heads, block):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = Attention(d, heads, block)
        self.mlp = nn.Sequential()
        self.mlp.c_fc, self.mlp.gelu, self.mlp.c_proj = nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab, block, layers, heads, d):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(block, d)
        self.h = nn.ModuleList(Block(d, heads, block) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.wte.weight = self.lm_head.weight  # tied, as GPT-2
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, 0.02)
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)
        for n, p in self.named_parameters():
            if n.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * layers))

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1)))
        for b in self.h:
            x = b(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", help="a uint16 train.bin (default: random ids)")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--block", type=int, default=1024)
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--batch", type=int, default=8, help="sequences a step")
    p.add_argument("--micro", type=int, default=1, help="sequences a micro-batch")
    p.add_argument("--steps", type=int, default=3, help="timed steps")
    p.add_argument("--warmup", type=int, default=1, help="untimed steps first")
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    p.add_argument("--blas_threads", type=int, help="limit OpenBLAS's threads (none: every core)")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    if a.blas_threads:
        threadpoolctl.threadpool_limits(a.blas_threads, user_api="blas")
    torch.manual_seed(a.seed)
    T, B = a.block, a.batch
    data = np.memmap(a.data, dtype=np.uint16, mode="r") if a.data else None
    model = GPT(a.vocab, T, a.layers, a.heads, a.dim)
    decay = [q for q in model.parameters() if q.dim() >= 2]
    rest = [q for q in model.parameters() if q.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.95), eps=1e-8)
    g = torch.Generator().manual_seed(a.seed)

    def batch(n):
        if data is None:
            t = torch.randint(0, a.vocab, (n, T + 1), generator=g)
            return t[:, :T], t[:, 1:]
        ix = torch.randint(len(data) - T, (n,), generator=g)
        x = torch.stack([torch.from_numpy(data[i:i + T].astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + T].astype(np.int64)) for i in ix])
        return x, y

    losses = []

    def step():
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for _ in range(B // a.micro):
            x, y = batch(a.micro)
            loss = model(x, y) * (a.micro / B)
            loss.backward()
            total += loss.item()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(round(total, 4))

    blas = [f"{l['internal_api']} {l.get('version')} {l['num_threads']} threads" for l in threadpoolctl.threadpool_info() if l["user_api"] == "blas"]
    params = sum(q.numel() for q in model.parameters())
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {', '.join(blas)}; {params} parameters; "
          f"{B} x {T} tokens a step in micro-batches of {a.micro}", flush=True)
    for _ in range(a.warmup):
        step()
    t = time.perf_counter()
    for _ in range(a.steps):
        step()
        print(f"step {len(losses)}: loss {losses[-1]}, {time.perf_counter() - t:.1f} s", flush=True)
    took = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out = dict(threads=a.threads, blas_threads=a.blas_threads or 0, micro=a.micro, batch=B, block=T, params=params,
               tokens_per_s=round(B * T * a.steps / took, 1), s_per_step=round(took / a.steps, 2),
               peak_rss_gib=round(rss / 2**30, 2), losses=losses)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
