#!/usr/bin/python3
# PyTorch reference of thinwire's SparseLoCo compressor (engine/codec/codec.h, docs/methods.md §3):
# chunked Top-k (64×64 tiles for matrices, runs of 4096 otherwise, tails kept in proportion),
# the 2-bit statistical quantiser and decode, written with PyTorch tensor operations only and
# independently of the C++ code. Wire packing is not reproduced (it does not change values).
#
#   /usr/bin/python3 tests/bench/reference_sparseloco.py --fixture tests/engine/fixtures/sparseloco_reference.bin
#   /usr/bin/python3 tests/bench/reference_sparseloco.py --bench --shapes 4096x4096 --ks 64,128
#
# Debian's /usr/bin/python3 has python3-torch; a python3 earlier on PATH may not.
import argparse
import json
import struct
import sys
import time

import torch


def chunk_layout(x, block):
    """|x| as [n_chunks, block²] rows padded with −1, the shape's chunk geometry, and kept counts."""
    run = block * block
    a = x.abs()
    if x.dim() == 2:
        R, C = x.shape
        tr, tc = -(-R // block), -(-C // block)
        if R % block or C % block:
            p = torch.full((tr * block, tc * block), -1.0, dtype=torch.float32)
            p[:R, :C] = a
            a = p
        tiles = a.view(tr, block, tc, block).permute(0, 2, 1, 3).reshape(tr * tc, run)
        # elements per tile: rows × columns actually inside the tensor
        h = torch.clamp(R - torch.arange(tr) * block, max=block)
        w = torch.clamp(C - torch.arange(tc) * block, max=block)
        n = (h[:, None] * w[None, :]).reshape(-1)
        return tiles, n, ("tiles", R, C, tc)
    flat = a.reshape(-1)
    N = flat.numel()
    nch = -(-N // run)
    if N % run:
        p = torch.full((nch * run,), -1.0, dtype=torch.float32)
        p[:N] = flat
        flat = p
    n = torch.full((nch,), run, dtype=torch.int64)
    if N % run:
        n[-1] = N % run
    return flat.view(nch, run), n, ("runs", N)


def kept_counts(n, k, block):
    run = block * block
    m = 2 * torch.div(k * n + run, 2 * run, rounding_mode="floor")
    return torch.minimum(n, torch.clamp(m, min=2))


def flat_index(chunk, pos, geom, block):
    """Flat tensor index of padded in-chunk positions (row-major inside a block × block tile)."""
    if geom[0] == "runs":
        return chunk * block * block + pos
    _, R, C, tc = geom
    r = torch.div(chunk, tc, rounding_mode="floor") * block + torch.div(pos, block, rounding_mode="floor")
    c = (chunk % tc) * block + pos % block
    return r * C + c


def topk_chunked(x, block, k):
    """Flat indices of the kept entries, chunk by chunk, ascending inside a chunk, ties to the lower index."""
    if x.numel() == 0:
        return torch.zeros(0, dtype=torch.int64)
    a, n, geom = chunk_layout(x, block)
    kept = kept_counts(n, k, block)
    kmax = int(kept.max())
    run = a.shape[1]
    top = torch.topk(a, min(kmax + 1, run), dim=1, sorted=True)
    if kmax < run and bool((kept == kmax).all()):
        # Every chunk keeps kmax: topk's set is the answer unless the kmax-th and (kmax+1)-th
        # values tie; only those chunks take the tie rule.
        pos = top.indices[:, :kmax].clone()
        tied = (top.values[:, kmax - 1] == top.values[:, kmax]).nonzero(as_tuple=True)[0]
        if tied.numel():
            pos[tied] = tie_rule(a[tied], top.values[tied, kmax - 1:kmax], kept[tied]).nonzero(as_tuple=True)[1].view(-1, kmax)
        pos = pos.sort(dim=1).values
        chunk = torch.arange(a.shape[0])[:, None].expand_as(pos)
        return flat_index(chunk, pos, geom, block).reshape(-1)
    mask = tie_rule(a, top.values.gather(1, (kept - 1)[:, None]), kept)
    chunk, pos = mask.nonzero(as_tuple=True)  # row-major: chunk order, ascending positions
    return flat_index(chunk, pos, geom, block)


def tie_rule(a, t, kept):
    """Mask of the kept entries of chunks `a` whose k_n-th largest is t: keep > t, then entries
    equal to t lowest position first."""
    gt = a > t
    eq = a == t
    need = kept - gt.sum(1)
    return gt | (eq & (eq.cumsum(1) <= need[:, None]))


def quantize_2bit(v):
    """shift, lookup[4] (fp32) and codes, with codec.h's arithmetic (statistics in double)."""
    K = v.numel()
    if K == 0:
        return torch.tensor(0.0), torch.zeros(4), torch.zeros(0, dtype=torch.int64)
    shift = (v.double().sum() / K).float()
    c = v - shift
    sigma = c.double().std(unbiased=True) if K >= 2 else torch.tensor(0.0, dtype=torch.float64)
    scale = (6.0 * sigma / 4.0).float()
    if float(scale) == 0.0:
        code = torch.full((K,), 2, dtype=torch.int64)
    else:
        code = torch.round(c / scale + 2).clamp(0, 3).long()
    lookup = torch.zeros(4, dtype=torch.float32)
    for b in range(4):
        m = code == b
        cnt = int(m.sum())
        if cnt:
            lookup[b] = (c[m].double().sum() / cnt).float()
    return shift, lookup, code


def encode(x, block, k):
    flat = topk_chunked(x, block, k)
    v = x.reshape(-1)[flat]
    shift, lookup, code = quantize_2bit(v)
    return flat, shift, lookup, code


def decode(shape, flat, shift, lookup, code):
    out = torch.zeros(shape, dtype=torch.float32)
    out.view(-1)[flat] = lookup[code] + shift
    return out


# ---- fixture for tests/engine/test_codec.cpp (Codec.MatchesPyTorchReferenceFixture) -------------

def fixture_cases():
    g = torch.Generator().manual_seed(20261124)
    randn = lambda *s: torch.randn(*s, generator=g, dtype=torch.float32)
    ties = torch.randint(-3, 4, (40, 50), generator=g).float() * 0.25
    return [  # (block, k, tensor): tails, tiles, runs, 3-D, ties, high density, tiny
        (64, 64, randn(70, 75)),
        (16, 8, randn(45, 37) * 3 + 0.5),
        (32, 16, randn(3000) * 1e-3),
        (16, 8, randn(3, 17, 29)),
        (16, 8, ties),
        (32, 128, randn(96, 40)),
        (16, 8, torch.randint(-2, 3, (64, 128), generator=g).float()),  # full tiles, ties at most boundaries
        (64, 64, torch.tensor([-2.5])),
        (64, 64, torch.full((5,), 0.75)),
    ]


def write_fixture(path):
    cases = fixture_cases()
    with open(path, "wb") as f:
        f.write(b"TWSLREF1")
        f.write(struct.pack("<I", len(cases)))
        for block, k, x in cases:
            flat, shift, lookup, code = encode(x, block, k)
            vhat = lookup[code] + shift
            f.write(struct.pack("<qqI", block, k, x.dim()))
            f.write(struct.pack("<%dq" % x.dim(), *x.shape))
            f.write(x.contiguous().numpy().astype("<f4").tobytes())
            f.write(struct.pack("<q", flat.numel()))
            f.write(flat.numpy().astype("<i8").tobytes())
            f.write(vhat.numpy().astype("<f4").tobytes())
            f.write(struct.pack("<f", float(shift)))
            f.write(lookup.numpy().astype("<f4").tobytes())
    print("wrote %s (%d cases)" % (path, len(cases)))


# ---- benchmark for `thinwire bench codec` ------------------------------------------------------

def bench(rows, cols, block, k, reps, warmup, min_time, seed):
    """Medians of >= reps timed rounds lasting >= min_time s, after >= warmup rounds and >= min_time s."""
    torch.manual_seed(seed)
    x = torch.randn(rows, cols)
    n = x.numel()
    enc, dec = [], []
    for timed, count in ((False, warmup), (True, reps)):
        start = time.perf_counter()
        i = 0
        while i < count or time.perf_counter() - start < min_time:
            t0 = time.perf_counter()
            flat, shift, lookup, code = encode(x, block, k)
            t1 = time.perf_counter()
            out = decode(x.shape, flat, shift, lookup, code)
            t2 = time.perf_counter()
            if timed:
                enc.append(t1 - t0)
                dec.append(t2 - t1)
            del out
            i += 1
    tot = sorted(e + d for e, d in zip(enc, dec))
    med = lambda v: sorted(v)[len(v) // 2]
    print(json.dumps({"impl": "pytorch", "torch": torch.__version__, "threads": torch.get_num_threads(),
                      "rows": rows, "cols": cols, "numel": n, "block": block, "k": k, "kept": int(flat.numel()),
                      "reps": len(enc), "encode_s": med(enc), "decode_s": med(dec), "total_s": tot[len(tot) // 2],
                      "gbps": 4.0 * n / tot[len(tot) // 2] / 1e9}))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--fixture", help="write the C++ test's fixture to this path")
    ap.add_argument("--bench", action="store_true", help="time encode + decode, print one JSON line")
    ap.add_argument("--shapes", default="4096x4096", help="comma-separated ROWSxCOLS, one JSON line each")
    ap.add_argument("--block", type=int, default=64)
    ap.add_argument("--ks", default="64", help="comma-separated k values")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--min-time", type=float, default=0.25, help="seconds of warm-up and of timing, at least")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.fixture:
        write_fixture(a.fixture)
    elif a.bench:
        for shape in a.shapes.split(","):
            rows, cols = (int(v) for v in shape.lower().split("x"))
            for k in a.ks.split(","):
                bench(rows, cols, a.block, int(k), a.reps, a.warmup, a.min_time, a.seed)
                sys.stdout.flush()
    else:
        ap.print_help()
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
