#!/usr/bin/env python3
"""kiln's searched programs against NumPy (OpenBLAS underneath) and, when it is installed,
PyTorch (eager, and attention through scaled_dot_product_attention) on the same computation,
side by side on this CPU with the same thread count, as time ratios (> 1: kiln is faster).

kiln: `kiln compile NAME --dim ...` (the cache is warmed by a first compile), the median run
of the compiled program with weights resident. NumPy: the same model written directly, float32,
median of repeated calls. Run from the repository root:

    python3 -m venv .venv-peers && .venv-peers/bin/pip install numpy
    .venv-peers/bin/python bench/compile/peers.py [--build build] [--seqs 128,512,1024]
"""
import argparse
import os
import re
import statistics
import subprocess
import time

import numpy as np

rng = np.random.default_rng(0)


def w(*shape):
    return (rng.uniform(-1, 1, shape) / np.sqrt(shape[-1])).astype(np.float32)


def median_time(f, repeat=30):
    f()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def mlp(batch):
    x = w(batch, 784)
    w1, b1, w2, b2, w3, b3 = w(512, 784), w(512), w(512, 512), w(512), w(10, 512), w(10)

    def run():
        h = np.maximum(x @ w1.T + b1, 0)
        h = np.maximum(h @ w2.T + b2, 0)
        return h @ w3.T + b3
    return run


def attention(seq, heads=8, dim=64, backend="numpy"):
    x = w(seq, heads * dim)
    wq, wk, wv, wo = (w(heads * dim, heads * dim) for _ in range(4))
    inv = 10000.0 ** (-np.arange(0, dim, 2, dtype=np.float32) / dim)
    ang = np.arange(seq, dtype=np.float32)[:, None] * inv[None, :]
    cos = np.concatenate([np.cos(ang)] * 2, axis=1)
    sin = np.concatenate([np.sin(ang)] * 2, axis=1)
    mask = np.triu(np.full((seq, seq), -np.inf, dtype=np.float32), 1)

    def rope(t):
        half = dim // 2
        rot = np.concatenate([-t[..., half:], t[..., :half]], axis=-1)
        return t * cos + rot * sin

    def run():
        q = rope((x @ wq.T).reshape(seq, heads, dim).transpose(1, 0, 2))
        k = rope((x @ wk.T).reshape(seq, heads, dim).transpose(1, 0, 2))
        v = (x @ wv.T).reshape(seq, heads, dim).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(dim) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        p = s / s.sum(-1, keepdims=True)
        return (p @ v).transpose(1, 0, 2).reshape(seq, heads * dim) @ wo.T
    if backend == "numpy":
        return run
    import torch
    import torch.nn.functional as F
    tx, twq, twk, twv, two, tcos, tsin, tmask = (torch.from_numpy(a) for a in
                                                  (x, wq, wk, wv, wo, cos, sin, mask))

    def trope(t):
        half = dim // 2
        return t * tcos + torch.cat([-t[..., half:], t[..., :half]], dim=-1) * tsin

    def heads_of(t):
        return t.reshape(seq, heads, dim).transpose(0, 1)

    @torch.inference_mode()
    def eager():
        q, k, v = trope(heads_of(tx @ twq.T)), trope(heads_of(tx @ twk.T)), heads_of(tx @ twv.T)
        p = torch.softmax(q @ k.transpose(1, 2) / dim ** 0.5 + tmask, dim=-1)
        return (p @ v).transpose(0, 1).reshape(seq, heads * dim) @ two.T

    @torch.inference_mode()
    def sdpa():
        q, k, v = trope(heads_of(tx @ twq.T)), trope(heads_of(tx @ twk.T)), heads_of(tx @ twv.T)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return o.transpose(0, 1).reshape(seq, heads * dim) @ two.T
    return eager if backend == "torch" else sdpa


def kiln_time(kiln, name, dim):
    args = [kiln, "compile", name, "--dim", dim, "--quiet", "--runs", "30"]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)  # warm the caches
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    m = re.search(r"run \(median of \d+\):\s+([\d.]+) (us|ms|s)", out)
    scale = {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]
    return float(m.group(1)) * scale


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--seqs", default="128", help="attention sequence lengths")
    o = parser.parse_args()
    kiln = os.path.join(o.build, "bin", "kiln")
    try:
        import torch
        torch.set_num_threads(os.cpu_count())  # kiln uses every core by default too
        has_torch = True
    except ImportError:
        has_torch = False
    cases = [("mlp", "batch=64", mlp(64), None, None)]
    for seq in [int(v) for v in o.seqs.split(",")]:
        cases.append(("attention", f"seq={seq}", attention(seq),
                      attention(seq, backend="torch") if has_torch else None,
                      attention(seq, backend="sdpa") if has_torch else None))
    print("| model | kiln ms | NumPy ms | NumPy / kiln | PyTorch ms | PyTorch / kiln |"
          " SDPA ms | SDPA / kiln |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, dim, peer, eager, sdpa in cases:
        k = kiln_time(kiln, name, dim)
        n = median_time(peer)
        row = f"| {name} {dim} | {k * 1e3:.3f} | {n * 1e3:.3f} | **{n / k:.2f}** |"
        for f in (eager, sdpa):
            if f is None:
                row += " - | - |"
            else:
                t = median_time(f)
                row += f" {t * 1e3:.3f} | **{t / k:.2f}** |"
        print(row, flush=True)


if __name__ == "__main__":
    main()
