# PyTorch reference trainer mirroring thinwire's C++ model, for tokens/s comparison (`thinwire bench train`).
import argparse
import ctypes
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

PRESETS = {
    "tiny": dict(d_model=128, n_layer=4, n_head=4, seq_len=128, batch=16),
    "small": dict(d_model=256, n_layer=6, n_head=8, seq_len=256, batch=16),
}


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Block(nn.Module):
    def __init__(self, d, h, f):
        super().__init__()
        self.h, self.hd = h, d // h
        self.rmsnorm1, self.rmsnorm2 = RMSNorm(d), RMSNorm(d)
        self.wqkv = nn.Linear(d, 3 * d, bias=False)
        self.wo = nn.Linear(d, d, bias=False)
        self.w13 = nn.Linear(d, 2 * f, bias=False)
        self.w2 = nn.Linear(f, d, bias=False)

    def attn(self, x, cos, sin, mask):
        B, T, d = x.shape
        # Fused projection laid out as [q | k | v], each d wide, heads contiguous inside.
        q, k, v = self.wqkv(x).split(d, dim=-1)
        q, k, v = (t.view(B, T, self.h, self.hd).transpose(1, 2) for t in (q, k, v))
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.hd)
        scores = scores.masked_fill(mask, float("-inf"))
        p = torch.softmax(scores.float(), dim=-1).type_as(v)  # fp32 softmax (no-op cast on CPU fp32)
        y = (p @ v).transpose(1, 2).reshape(B, T, d)
        return self.wo(y)

    def mlp(self, x):
        a, b = self.w13(x).chunk(2, dim=-1)
        return self.w2(F.silu(a) * b)

    def forward(self, x, cos, sin, mask):
        x = x + self.attn(self.rmsnorm1(x), cos, sin, mask)
        return x + self.mlp(self.rmsnorm2(x))


class Model(nn.Module):
    def __init__(self, V, d, L, h, f, T, theta=10000.0):
        super().__init__()
        self.tok_emb = nn.Embedding(V, d)
        self.blocks = nn.ModuleList(Block(d, h, f) for _ in range(L))
        self.norm = RMSNorm(d)
        # RoPE tables [T, hd/2] duplicated to [T, hd] ("rotate half" layout); causal mask built once.
        hd = d // h
        inv_freq = 1.0 / theta ** (torch.arange(0, hd, 2).float() / hd)
        freqs = torch.outer(torch.arange(T).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)
        self.register_buffer("mask", torch.ones(T, T, dtype=torch.bool).triu(1), persistent=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                # Residual output projections get the depth-scaled std.
                std = 0.02 / math.sqrt(2 * L) if name.endswith(("wo.weight", "w2.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.tok_emb(idx)
        cos, sin, mask = self.cos[:T], self.sin[:T], self.mask[:T, :T]
        for blk in self.blocks:
            x = blk(x, cos, sin, mask)
        logits = self.norm(x) @ self.tok_emb.weight.t()  # tied head
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


def set_blas_threads(n):
    # Debian's torch does fp32 GEMM in OpenBLAS, whose own thread pool ignores torch.set_num_threads
    # (defaults to all cores). Returns the BLAS in use, or None if not OpenBLAS (e.g. MKL wheels).
    try:
        ctypes.CDLL("libopenblas.so.0").openblas_set_num_threads(n)
        return "openblas"
    except (OSError, AttributeError):
        return None


def main():
    ap = argparse.ArgumentParser(description="PyTorch reference trainer (tokens/s baseline for thinwire)")
    ap.add_argument("--preset", choices=PRESETS, default="tiny")
    for k in ("d-model", "n-layer", "n-head", "seq-len", "batch"):
        ap.add_argument("--" + k, type=int, default=None)
    ap.add_argument("--d-ff", type=int, default=0, help="0 = SwiGLU default ~8d/3 rounded up to 32")
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1337)
    a = ap.parse_args()

    # Interop threads must be set before any parallel work starts.
    # Same policy as thinwire (engine/runtime/threads.h): with OpenBLAS the threads go to BLAS and
    # torch's OpenMP pool gets 1 (its spinning workers starve OpenBLAS's pool); otherwise torch gets them.
    torch.set_num_interop_threads(1)
    blas = set_blas_threads(a.threads)
    torch.set_num_threads(1 if blas == "openblas" else a.threads)
    torch.manual_seed(a.seed)

    cfg = dict(PRESETS[a.preset])
    for k in cfg:
        if getattr(a, k) is not None:
            cfg[k] = getattr(a, k)
    d, L, h, T, B, V = cfg["d_model"], cfg["n_layer"], cfg["n_head"], cfg["seq_len"], cfg["batch"], a.vocab
    assert d % h == 0 and (d // h) % 2 == 0, "d_model must split into even-sized heads"
    f = a.d_ff or ((8 * d // 3 + 31) // 32) * 32

    model = Model(V, d, L, h, f, T)
    n_params = sum(p.numel() for p in model.parameters())  # tied embedding counted once
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=3e-3, betas=(0.9, 0.95), eps=1e-8)

    # All batches generated up front so data generation stays out of the timed region.
    g = torch.Generator().manual_seed(a.seed)
    data = torch.randint(0, V, (a.warmup + a.steps, B, T + 1), generator=g)

    def step(batch):
        loss = model(batch[:, :-1], batch[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    model.train()
    for i in range(a.warmup):
        step(data[i])
    # Median step time: robust to the bursts of a shared machine (thinwire's bench does the same).
    times = []
    for i in range(a.warmup, a.warmup + a.steps):
        t0 = time.perf_counter()
        loss = step(data[i])
        times.append(time.perf_counter() - t0)
    dt = sorted(times)[len(times) // 2] * a.steps

    print(json.dumps({
        "impl": "pytorch", "preset": a.preset, "params": n_params,
        "tokens_per_s": round(B * T * a.steps / dt, 1), "step_ms": round(1000 * dt / a.steps, 2),
        "threads": a.threads, "torch_intra_op": torch.get_num_threads(), "blas": blas, "torch": torch.__version__,
        "final_loss": round(loss.item(), 4),
    }))


if __name__ == "__main__":
    main()
