#!/usr/bin/env python3
"""Writes gpt2_tiny.safetensors, a small random GPT-2 in Hugging Face's layout,
and gpt2_tiny_logits.safetensors, the logits PyTorch computes for it.

The model is nanoGPT's GPT (model.py): pre-LN blocks, causal attention, exact
GELU, a head tied to wte. Its weights are loaded as nanoGPT's from_pretrained
loads Hugging Face's: the Conv1D weights ([in, out] in the file) transposed
into Linear's [out, in]. The forward runs in float64 on those float32
values, so the logits are the exact reference a float32 run is measured
against. The weights file is written by hand (no safetensors package): keys
without the "transformer." prefix and with the attention buffers, as GPT-2's
file on the hub has them.

Run from this folder with Debian's python3-torch: /usr/bin/python3 make_gpt2_tiny.py
"""
import json
import math
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, BLOCK, WIDTH, HEADS, LAYERS = 256, 16, 32, 2, 2


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(WIDTH, 3 * WIDTH)
        self.c_proj = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(WIDTH, dim=2)
        q, k, v = (t.view(B, T, HEADS, C // HEADS).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_fc = nn.Linear(WIDTH, 4 * WIDTH)
        self.c_proj = nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))  # exact (erf) GELU


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(WIDTH), CausalSelfAttention()
        self.ln_2, self.mlp = nn.LayerNorm(WIDTH), MLP()

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(VOCAB, WIDTH), wpe=nn.Embedding(BLOCK, WIDTH),
            h=nn.ModuleList([Block() for _ in range(LAYERS)]), ln_f=nn.LayerNorm(WIDTH)))
        self.lm_head = nn.Linear(WIDTH, VOCAB, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # tied, as GPT-2

    def forward(self, idx):
        t = self.transformer
        x = t.wte(idx) + t.wpe(torch.arange(idx.size(1)))
        for block in t.h:
            x = block(x)
        return self.lm_head(t.ln_f(x))


def hf_weights():
    """Random weights in Hugging Face's GPT-2 layout (Conv1D: [in, out]),
    float32, larger than GPT-2's init so that every part moves the logits."""
    g = torch.Generator().manual_seed(1234)
    r = lambda *s, std=0.2: (torch.randn(*s, generator=g) * std).float()
    w = {"wte.weight": r(VOCAB, WIDTH, std=0.5), "wpe.weight": r(BLOCK, WIDTH, std=0.5)}
    for i in range(LAYERS):
        p = f"h.{i}."
        w[p + "ln_1.weight"], w[p + "ln_1.bias"] = 1 + r(WIDTH, std=0.1), r(WIDTH, std=0.1)
        w[p + "attn.c_attn.weight"], w[p + "attn.c_attn.bias"] = r(WIDTH, 3 * WIDTH), r(3 * WIDTH, std=0.1)
        w[p + "attn.c_proj.weight"], w[p + "attn.c_proj.bias"] = r(WIDTH, WIDTH), r(WIDTH, std=0.1)
        w[p + "ln_2.weight"], w[p + "ln_2.bias"] = 1 + r(WIDTH, std=0.1), r(WIDTH, std=0.1)
        w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"] = r(WIDTH, 4 * WIDTH), r(4 * WIDTH, std=0.1)
        w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"] = r(4 * WIDTH, WIDTH), r(WIDTH, std=0.1)
        # the buffers older transformers saved: the causal mask and -1e4
        w[p + "attn.bias"] = torch.tril(torch.ones(BLOCK, BLOCK)).view(1, 1, BLOCK, BLOCK)
        w[p + "attn.masked_bias"] = torch.tensor(-1e4)
    w["ln_f.weight"], w["ln_f.bias"] = 1 + r(WIDTH, std=0.1), r(WIDTH, std=0.1)
    return w


def from_pretrained(sd_hf):
    """nanoGPT's GPT.from_pretrained: copy each tensor, Conv1D weights
    transposed; the attention buffers ignored."""
    model = GPT().double()
    sd = model.state_dict()
    conv1d = ["attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight"]
    keys = [k for k in sd_hf if not k.endswith((".attn.bias", ".attn.masked_bias"))]
    assert len(keys) == len(sd) - 1, (len(keys), len(sd))  # lm_head.weight is wte's
    with torch.no_grad():
        for k in keys:
            ours = "transformer." + k
            src = sd_hf[k].t() if any(k.endswith(c) for c in conv1d) else sd_hf[k]
            assert sd[ours].shape == src.shape, (k, sd[ours].shape, src.shape)
            sd[ours].copy_(src.double())
    return model


def write_safetensors(path, tensors):
    """The safetensors format by hand: an 8-byte header length, JSON, data."""
    dtypes = {torch.float32: ("F32", "f"), torch.float64: ("F64", "d")}
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        code, fmt = dtypes[t.dtype]
        data = struct.pack("<%d%s" % (t.numel(), fmt), *t.flatten().tolist())
        header[name] = {"dtype": code, "shape": list(t.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def main():
    torch.manual_seed(0)
    w = hf_weights()
    model = from_pretrained(w).eval()
    g = torch.Generator().manual_seed(99)
    tokens = torch.randint(0, VOCAB, (2, BLOCK), generator=g)
    with torch.no_grad():
        logits = model(tokens)  # [2, BLOCK, VOCAB], float64
    write_safetensors("gpt2_tiny.safetensors", w)
    write_safetensors("gpt2_tiny_logits.safetensors", {"tokens": tokens.float(), "logits": logits})
    print("logits", tuple(logits.shape), "max |logit| %.4f" % logits.abs().max().item())


if __name__ == "__main__":
    main()
