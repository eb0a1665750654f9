"""Character-level GPT on tiny Shakespeare in PyTorch: the reference pipetrain's
GPT is compared with, for losses and speed. Not part of CI.

Model: nanoGPT's model.py (GPT-2 pre-LN) with bias=True, dropout 0 and an
untied head: token embedding [V, D] + position embedding [T, D]; per block
x += c_proj(attn(c_attn(ln_1(x)))), x += c_proj(gelu(c_fc(ln_2(x)))) with
causal multi-head attention (q, k, v split along the last axis, scale
1/sqrt(D/heads)) and exact (erf) GELU; final LayerNorm; head Linear(D, V)
with a bias.
Init: every Linear weight and both embeddings N(0, 0.02), the two residual
projections (attn.c_proj, mlp.c_proj) N(0, 0.02/sqrt(2*layers)), biases 0,
LayerNorm 1 and 0; drawn from torch.manual_seed(seed) in module order.
Recipe: AdamW lr 1e-3, betas (0.9, 0.99), eps 1e-8, weight decay 0.1 on the
tensors of 2+ dimensions (embeddings, Linear weights) only; clip_grad_norm_
1.0 over all parameters; lr at step s = 1, 2, ... set before its update:
lr*s/warmup up to warmup (100), then cosine from lr to min_lr (1e-4) at step
--steps.
Data: vocabulary = sorted distinct characters of the whole file (65); train =
the first int(0.9*n) characters, held-out = the rest. Or, with --data a folder
that `train prepare` (or nanoGPT's prepare.py) wrote, train.bin and val.bin
read as uint16 ids (np.memmap, as nanoGPT's get_batch) and --vocab ids. Each step draws --batch
offsets o from torch.randint(0, len(train) - T, generator=g), i.e. uniform in
[0, len(train) - T - 1], with g a torch.Generator seeded with --seed (its own,
apart from the init's global one): x = train[o:o+T], y = train[o+1:o+T+1].
Loss = mean cross-entropy over all B*T positions.
Eval: mean cross-entropy per character over the non-overlapping held-out
windows j = 0 .. (len(held)-1)//T - 1 (inputs held[jT:jT+T], targets
held[jT+1:jT+T+1]; each target once, the partial last window left out), no
grad, eval mode, 64 windows a batch; printed with bits/char = loss/ln 2.

Run it through bench/reference.sh's `ref` (OMP_WAIT_POLICY=PASSIVE, OpenBLAS
tuning variables unset) with /usr/bin/python3 (Debian's torch 1.13):
  train: torch_gpt.py --data input.txt [--steps 2000 --seed 1 --eval_every 500]
  speed: torch_gpt.py --data input.txt --mode speed [--preset large] --threads 1 --blas_threads 1
--threads is torch.set_num_threads (its OpenMP ops); the float32 matmuls go to
OpenBLAS, whose pthreads torch does not limit: --blas_threads (threadpoolctl)
does, else it uses every core. The last line printed is a JSON summary.
bench/gpt/run.sh runs the speed table beside pipetrain, bench/gpt/loss.sh the recipe.
"""
import argparse, json, math, os, time

import numpy as np

import threadpoolctl
import torch
import torch.nn as nn
import torch.nn.functional as F

PRESETS = {  # layers, heads, dim, block, batch
    "recipe": dict(layers=4, heads=4, dim=128, block=64, batch=12),  # nanoGPT's CPU configuration
    "large": dict(layers=6, heads=6, dim=192, block=128, batch=32),
}


class Block(nn.Module):
    def __init__(self, d, heads, mask, attn):
        super().__init__()
        self.heads, self.mask, self.kind = heads, mask, attn
        self.masked = torch.isinf(mask)  # for --attn fill
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.Module()
        self.attn.c_attn, self.attn.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential()
        self.mlp.c_fc, self.mlp.gelu, self.mlp.c_proj = nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)

    def attend(self, x):
        B, T, D = x.shape
        H = self.heads
        # [B, T, 3D] -> q, k, v as [B*H, T, hd]
        q, k, v = (t.view(B, T, H, D // H).transpose(1, 2).reshape(B * H, T, D // H)
                   for t in self.attn.c_attn(x).split(D, dim=2))
        # One batched GEMM does the scaling and adds the additive causal mask
        # (0 on and below the diagonal, -inf above): faster here than
        # matmul then masked_fill or then + mask (see --attn).
        if self.kind == "baddbmm":
            att = torch.baddbmm(self.mask[:T, :T], q, k.transpose(1, 2), alpha=1 / math.sqrt(D // H))
        elif self.kind == "add":
            att = (q @ k.transpose(1, 2)) * (1 / math.sqrt(D // H)) + self.mask[:T, :T]
        else:
            att = ((q @ k.transpose(1, 2)) * (1 / math.sqrt(D // H))).masked_fill(self.masked[:T, :T], float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.attn.c_proj(y.view(B, H, T, D // H).transpose(1, 2).reshape(B, T, D))

    def forward(self, x):
        x = x + self.attend(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab, block, layers, heads, dim, attn="baddbmm"):
        super().__init__()
        # A buffer, not a parameter: it is built once and never decays.
        self.register_buffer("mask", torch.full((block, block), float("-inf")).triu(1))
        self.wte, self.wpe = nn.Embedding(vocab, dim), nn.Embedding(block, dim)
        self.h = nn.ModuleList(Block(dim, heads, self.mask, attn) for _ in range(layers))
        self.ln_f, self.lm_head = nn.LayerNorm(dim), nn.Linear(dim, vocab)
        for name, p in self.named_parameters():  # "gpt" init, in module order
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * layers))
            elif p.dim() >= 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif "ln" in name and name.endswith("weight"):
                nn.init.ones_(p)
            else:
                nn.init.zeros_(p)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x))


def busy_cpu_s():
    """CPU seconds the whole machine has been busy (steal included), so that
    a run can tell how much of the machine other processes took meanwhile."""
    try:
        v = [int(x) for x in open("/proc/stat").readline().split()[1:9]]
        return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")  # less idle and iowait
    except (OSError, ValueError):
        return float("nan")


class Clock:
    """Wall time and the cores other processes kept busy on average."""
    def __init__(self):
        self.t, self.busy, self.own = time.perf_counter(), busy_cpu_s(), time.process_time()

    def stop(self):
        took = time.perf_counter() - self.t
        others = (busy_cpu_s() - self.busy - (time.process_time() - self.own)) / took
        return took, round(max(others, 0.0), 2)


def lr_at(s, a):  # step s counted from 1
    if s <= a.warmup_lr:
        return a.lr * s / a.warmup_lr
    frac = (min(s, a.steps) - a.warmup_lr) / (a.steps - a.warmup_lr)
    return a.min_lr + (a.lr - a.min_lr) * 0.5 * (1 + math.cos(math.pi * frac))


@torch.no_grad()
def evaluate(model, held, T, per_batch=64):
    model.eval()
    n = (len(held) - 1) // T  # whole windows; each target counted once
    total = 0.0
    for j in range(0, n, per_batch):
        w = torch.arange(j, min(j + per_batch, n)).unsqueeze(1) * T + torch.arange(T)
        logits = model(held[w])
        total += F.cross_entropy(logits.view(-1, logits.shape[-1]), held[w + 1].view(-1), reduction="sum").item()
    model.train()
    return total / (n * T)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="input.txt, or a folder of train.bin and val.bin")
    p.add_argument("--vocab", type=int, help="with a folder: the vocabulary's size (50257 for GPT-2's)")
    p.add_argument("--mode", choices=["train", "speed"], default="train")
    p.add_argument("--preset", choices=PRESETS, default="recipe")
    for k in PRESETS["recipe"]:
        p.add_argument("--" + k, type=int, help="default from --preset")
    p.add_argument("--steps", type=int, default=2000, help="training steps (and the end of the cosine)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    p.add_argument("--blas_threads", type=int, help="limit OpenBLAS's threads (0 or none: its default, every core)")
    p.add_argument("--eval_every", type=int, default=0, help="also evaluate every this many steps (0: only at the end)")
    p.add_argument("--warmup", type=int, default=10, help="speed mode: untimed steps")
    p.add_argument("--timed", type=int, default=50, help="speed mode: timed steps")
    p.add_argument("--attn", choices=["baddbmm", "add", "fill"], default="baddbmm", help="how the causal mask is applied")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--min_lr", type=float, default=1e-4)
    p.add_argument("--warmup_lr", type=int, default=100, help="lr warm-up steps")
    a = p.parse_args()
    for k, v in PRESETS[a.preset].items():
        if getattr(a, k) is None:
            setattr(a, k, v)

    torch.set_num_threads(a.threads)
    if a.blas_threads:
        threadpoolctl.threadpool_limits(a.blas_threads, user_api="blas")
    if os.path.isdir(a.data):
        ids = lambda f: torch.from_numpy(np.memmap(os.path.join(a.data, f), dtype=np.uint16, mode="r").astype(np.int64))
        train, held = ids("train.bin"), ids("val.bin")
        chars = range(a.vocab)
    else:
        text = open(a.data, encoding="utf-8").read()
        chars = sorted(set(text))
        stoi = {c: i for i, c in enumerate(chars)}
        data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
        n_train = int(len(data) * 0.9)
        train, held = data[:n_train], data[n_train:]

    torch.manual_seed(a.seed)
    model = GPT(len(chars), a.block, a.layers, a.heads, a.dim, a.attn)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.99), eps=1e-8)
    g = torch.Generator().manual_seed(a.seed)
    T, B = a.block, a.batch
    blas = [f"{l['internal_api']} {l.get('version')} {l['num_threads']} threads" for l in threadpoolctl.threadpool_info() if l["user_api"] == "blas"]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {', '.join(blas)}; attn {a.attn}")
    print(f"preset {a.preset}: {a.layers} layers, {a.heads} heads, dim {a.dim}, block {T}, batch {B}, vocab {len(chars)}, "
          f"{sum(p.numel() for p in model.parameters())} parameters; train {len(train)}, held-out {len(held)} characters")

    def step(s):
        o = torch.randint(0, len(train) - T, (B,), generator=g).unsqueeze(1) + torch.arange(T)
        for group in opt.param_groups:
            group["lr"] = lr_at(s, a)
        logits = model(train[o])
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), train[o + 1].view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    out = dict(preset=a.preset, mode=a.mode, threads=a.threads, blas_threads=a.blas_threads or 0, attn=a.attn,
               layers=a.layers, heads=a.heads, dim=a.dim, block=T, batch=B, seed=a.seed)
    if a.mode == "speed":
        for s in range(1, a.warmup + 1):
            step(s)
        clock = Clock()
        for s in range(a.warmup + 1, a.warmup + a.timed + 1):
            step(s)
        took, others = clock.stop()
        out.update(tokens_per_s=round(B * T * a.timed / took), ms_per_step=round(1000 * took / a.timed, 2), others_cores=others)
        print(f"{out['tokens_per_s']} tokens/s, {out['ms_per_step']} ms/step over {a.timed} steps; "
              f"other processes kept {others} cores busy meanwhile")
    else:
        clock, start = Clock(), time.perf_counter()
        evals = []
        for s in range(1, a.steps + 1):
            loss = step(s)
            if s % 100 == 0 or s == 1:
                print(f"step {s}: loss {loss.item():.4f}, lr {lr_at(s, a):.6f}, {time.perf_counter() - start:.1f} s", flush=True)
            if a.eval_every and s % a.eval_every == 0 and s < a.steps:
                evals.append((s, round(evaluate(model, held, T), 4)))
                print(f"step {s}: held-out loss {evals[-1][1]:.4f}", flush=True)
        train_s = time.perf_counter() - start
        ev = evaluate(model, held, T)
        wall, others = clock.stop()
        out.update(others_cores=others, steps=a.steps, final_train_loss=round(loss.item(), 4), eval_loss=round(ev, 4),
                   bits_per_char=round(ev / math.log(2), 4), train_s=round(train_s, 1), wall_s=round(wall, 1),
                   tokens_per_s=round(B * T * a.steps / train_s), evals=evals)
        print(f"held-out loss {ev:.4f}, {ev / math.log(2):.4f} bits/char; training {train_s:.1f} s, with the eval {wall:.1f} s; "
              f"other processes kept {others} cores busy meanwhile")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
