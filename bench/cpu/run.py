#!/usr/bin/env python3
"""Every core helps: kiln on 1 and 2 threads, side by side with PyTorch, on this CPU.

For the examples and the SmolLM2-135M-shaped decoder (prefill 8 / 16 / 64 tokens, a decode
step at 128 cached tokens): kiln's compiled program (`kiln compile NAME --threads T`, the
median run with weights resident) on 1 and 2 threads, and transformers' LlamaForCausalLM built from the same config with
random weights (torch.set_num_threads(T), median of repeated forward calls; the decode step
runs against a 128-token DynamicCache cropped back after each call). Then the decode step's
time as a multiple of its memory floor: the bytes it must read (every weight once, the tied
embedding as the output projection, and the KV cache) over one core's read bandwidth,
measured in the same run (build/bin/read_bandwidth).

    python3 -m venv .venv-torch && .venv-torch/bin/pip install torch transformers
    .venv-torch/bin/python bench/cpu/run.py [--build build] [--runs 20] [--no-torch] [--only "SmolLM2 decode,mlp"]

Rows print as they are measured; a case whose compile fails (the interpreter's checks at
seq 64 need several GB) prints "failed" and the others go on.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

SMOLLM2 = dict(layers=30, hidden=576, heads=9, kv_heads=3, head_dim=64, intermediate=1536,
               vocab=49152, rope_base=100000.0, rms_eps=1e-5)
DECODE_POS = 128

# (label, kiln example, kiln dims, torch case or None)
CASES = [
    ("mlp, batch 64", "mlp", ["batch=64"], None),
    ("attention block, seq 512", "attention", ["seq=512"], None),
    ("SmolLM2 prefill 8", "smollm2-135m", ["seq=8", "pos=0"], ("prefill", 8)),
    ("SmolLM2 prefill 16", "smollm2-135m", ["seq=16", "pos=0"], ("prefill", 16)),
    ("SmolLM2 prefill 64", "smollm2-135m", ["seq=64", "pos=0"], ("prefill", 64)),
    (f"SmolLM2 decode at {DECODE_POS}", "smollm2-135m", ["seq=1", f"pos={DECODE_POS}"],
     ("decode", DECODE_POS)),
]

UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def kiln_seconds(kiln, name, dims, threads, runs):
    """The median run of `kiln compile` on `threads` threads, in seconds."""
    cmd = [kiln, "compile", name, "--quiet", "--threads", str(threads), "--runs", str(runs),
           "--top", "0"]
    for d in dims:
        cmd += ["--dim", d]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    m = re.search(r"run \(median of \d+\):\s*([\d.]+) (ns|us|ms|s)\b", out)
    if not m:
        sys.exit("no run time in the output of " + " ".join(cmd) + ":\n" + out)
    return float(m.group(1)) * UNITS[m.group(2)]


def floor_bytes(pos):
    """Bytes a decode step must read: every weight once (the tied embedding as the output
    projection), the KV cache up to `pos`, and the new token's row."""
    c = SMOLLM2
    h, kv = c["hidden"], c["kv_heads"] * c["head_dim"]
    layer = 2 * h * h + 2 * h * kv + 3 * h * c["intermediate"] + 2 * h
    params = c["layers"] * layer + c["vocab"] * h + h
    cache = c["layers"] * 2 * kv * (pos + 1)
    return 4 * (params + cache)


TORCH_WORKER = r"""
import json, statistics, sys, time
import torch
from transformers import LlamaConfig, LlamaForCausalLM, DynamicCache
threads, kind, n, runs, c = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), json.loads(sys.argv[5])
torch.set_num_threads(threads)
torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=c["vocab"], hidden_size=c["hidden"], intermediate_size=c["intermediate"],
                  num_hidden_layers=c["layers"], num_attention_heads=c["heads"],
                  num_key_value_heads=c["kv_heads"], head_dim=c["head_dim"], rope_theta=c["rope_base"],
                  rms_norm_eps=c["rms_eps"], tie_word_embeddings=True, max_position_embeddings=8192)
model = LlamaForCausalLM(cfg).eval().float()
times = []
with torch.inference_mode():
    if kind == "prefill":
        ids = torch.randint(0, c["vocab"], (1, n))
        step = lambda: model(input_ids=ids, use_cache=False)
    else:
        cache = DynamicCache()
        model(input_ids=torch.randint(0, c["vocab"], (1, n)), past_key_values=cache, use_cache=True)
        ids = torch.randint(0, c["vocab"], (1, 1))
        pos = torch.tensor([[n]])
        def step():
            model(input_ids=ids, position_ids=pos, past_key_values=cache, use_cache=True)
            cache.crop(-1)  # back to the n cached tokens
    for _ in range(3):
        step()
    for _ in range(runs):
        t = time.perf_counter(); step(); times.append(time.perf_counter() - t)
print(json.dumps(statistics.median(times)))
"""


def torch_seconds(python, kind, n, threads, runs):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run([python, "-c", TORCH_WORKER, str(threads), kind, str(n), str(runs),
                          json.dumps(SMOLLM2)], check=True, capture_output=True, text=True,
                         env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def ms(s):
    return f"{s * 1e3:.2f} ms" if s is not None else "-"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--only", default="", help="cases whose label starts with one of these (comma-separated)")
    args = ap.parse_args()
    kiln = os.path.join(args.build, "bin", "kiln")
    has_torch = False
    if not args.no_torch:
        try:
            import torch  # noqa: F401
            import transformers  # noqa: F401
            has_torch = True
        except ImportError:
            print("(no torch/transformers in this Python: the PyTorch columns are empty)")

    bandwidth = float(subprocess.run([os.path.join(args.build, "bin", "read_bandwidth")],
                                     check=True, capture_output=True, text=True).stdout)
    print(f"one core reads {bandwidth:.1f} GB/s (read_bandwidth, best of 5 passes over 2 GiB)\n")

    print("| case | kiln 1 thread | kiln 2 threads | 2 vs 1 | PyTorch 1 thread | PyTorch 2 threads "
          "| PyTorch / kiln (2 threads) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    decode = None
    for label, name, dims, torch_case in CASES:
        if args.only and not any(label.lower().startswith(o.lower()) for o in args.only.split(",")):
            continue
        k, t = {}, {1: None, 2: None}
        try:
            for threads in (1, 2):
                k[threads] = kiln_seconds(kiln, name, dims, threads, args.runs)
        except subprocess.CalledProcessError as e:  # e.g. the interpreter's checks out of memory
            print(f"| {label} | failed: {e} |||||")
            continue
        if has_torch and torch_case:
            for threads in (1, 2):
                t[threads] = torch_seconds(sys.executable, torch_case[0], torch_case[1], threads,
                                           args.runs)
        vs = f"{t[2] / k[2]:.2f}x" if t[2] else "-"
        print(f"| {label} | {ms(k[1])} | {ms(k[2])} | {k[1] / k[2]:.2f}x | {ms(t[1])} | "
              f"{ms(t[2])} | {vs} |", flush=True)
        if torch_case and torch_case[0] == "decode":
            decode = (torch_case[1], k, t)
    if decode:
        pos, k, t = decode
        floor = floor_bytes(pos) / (bandwidth * 1e9)
        print(f"\ndecode step: {floor_bytes(pos) / 1e6:.0f} MB to read, floor {ms(floor)} at "
              f"{bandwidth:.1f} GB/s; kiln on 1 thread {ms(k[1])} = {k[1] / floor:.2f}x the floor "
              f"({floor_bytes(pos) / k[1] / 1e9:.1f} GB/s)"
              + (f"; PyTorch on 1 thread {ms(t[1])} = {t[1] / k[1]:.2f}x kiln" if t[1] else ""))

if __name__ == "__main__":
    main()
