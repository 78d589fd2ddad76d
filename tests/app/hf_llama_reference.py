#!/usr/bin/python3
"""Loads a folder `thinwire export --format hf` wrote, with a safetensors reader and a Llama forward
pass written here from the Hugging Face Llama definition (RMSNorm, rotate-half RoPE, causal
attention, SwiGLU; weights by their Hugging Face names, config.json for the shape), and compares
its logits in float64 with the ones `thinwire eval --logits-out` wrote for the same ids.

    hf_llama_reference.py HF_DIR LOGITS_FILE [TOLERANCE]

Prints the largest absolute difference; exits 1 when it is above TOLERANCE (default 1e-5) or when
a tensor the config implies is missing or of another shape.
"""
import json
import math
import struct
import sys

import torch


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        assert e["dtype"] == "F32", f"{name}: dtype {e['dtype']}"
        b, en = e["data_offsets"]
        raw = bytearray(data[8 + n + b:8 + n + en])
        t = torch.frombuffer(raw, dtype=torch.float32) if raw else torch.zeros(0)
        out[name] = t.reshape(e["shape"]).to(torch.float64)
    return out


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def forward(w, c, ids):
    d, nh = c["hidden_size"], c["num_attention_heads"]
    hd = c.get("head_dim", d // nh)
    T = ids.shape[0]
    inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    h = w["model.embed_tokens.weight"][ids]
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        x = rms_norm(h, w[p + "input_layernorm.weight"], c["rms_norm_eps"])
        q = (x @ w[p + "self_attn.q_proj.weight"].T).view(T, nh, hd).transpose(0, 1)
        k = (x @ w[p + "self_attn.k_proj.weight"].T).view(T, nh, hd).transpose(0, 1)
        v = (x @ w[p + "self_attn.v_proj.weight"].T).view(T, nh, hd).transpose(0, 1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hd) + mask, dim=-1) @ v
        h = h + a.transpose(0, 1).reshape(T, d) @ w[p + "self_attn.o_proj.weight"].T
        x = rms_norm(h, w[p + "post_attention_layernorm.weight"], c["rms_norm_eps"])
        g = x @ w[p + "mlp.gate_proj.weight"].T
        u = x @ w[p + "mlp.up_proj.weight"].T
        h = h + (torch.nn.functional.silu(g) * u) @ w[p + "mlp.down_proj.weight"].T
    h = rms_norm(h, w["model.norm.weight"], c["rms_norm_eps"])
    head = w["model.embed_tokens.weight"] if c["tie_word_embeddings"] else w["lm_head.weight"]
    return h @ head.T


def main():
    folder, logits_file = sys.argv[1], sys.argv[2]
    tol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-5
    with open(folder + "/config.json") as f:
        c = json.load(f)
    assert c["model_type"] == "llama" and c["architectures"] == ["LlamaForCausalLM"], c
    w = read_safetensors(folder + "/model.safetensors")
    d, V, L = c["hidden_size"], c["vocab_size"], c["num_hidden_layers"]
    f, nh = c["intermediate_size"], c["num_attention_heads"]
    want = {"model.embed_tokens.weight": [V, d], "model.norm.weight": [d]}
    if not c["tie_word_embeddings"]:
        want["lm_head.weight"] = [V, d]
    for l in range(L):
        p = f"model.layers.{l}."
        want.update({p + "input_layernorm.weight": [d], p + "post_attention_layernorm.weight": [d],
                     p + "self_attn.q_proj.weight": [d, d], p + "self_attn.k_proj.weight": [d, d],
                     p + "self_attn.v_proj.weight": [d, d], p + "self_attn.o_proj.weight": [d, d],
                     p + "mlp.gate_proj.weight": [f, d], p + "mlp.up_proj.weight": [f, d],
                     p + "mlp.down_proj.weight": [d, f]})
    for name, shape in want.items():
        if name not in w or list(w[name].shape) != shape:
            print(f"tensor {name}: missing or not of shape {shape}")
            return 1
    extra = sorted(set(w) - set(want))
    if extra:
        print(f"tensors the config does not imply: {extra[:4]}")
        return 1
    ref = read_safetensors(logits_file)
    ids = ref["ids"].to(torch.long)
    got = forward(w, c, ids)
    diff = (got - ref["logits"]).abs().max().item()
    print(f"{ids.shape[0]} positions x {V} logits: largest difference {diff:.3g} (tolerance {tol:g})")
    return 0 if diff <= tol else 1


if __name__ == "__main__":
    sys.exit(main())
