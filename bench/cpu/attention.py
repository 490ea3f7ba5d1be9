#!/usr/bin/env python3
"""Attention-shaped kernel on one thread: kiln's row-state code vs its plain code vs PyTorch SDPA.

One Body (8 heads, head dim 64, causal by a select on j <= i, the online-softmax reduction
over keys with the scores q.k_j an inner reduction) rendered both ways by the CPU code
generator (build/bin/row_state_attention: row state computes each score once per key, plain
once per key and column), and torch.nn.functional.scaled_dot_product_attention(is_causal=True)
on the same shapes, side by side for each seq, all on `--threads` threads; medians of `--runs`.
Prints a table with the ratios (> 1: the first is faster).

    python3 bench/cpu/attention.py [--build build] [--threads 1] [--runs 5] [--plain-max 1024]
                                   [--seq 512 1024 2048]
"""
import argparse
import os
import re
import subprocess
import sys
import time

HEADS = 8
HEAD_DIM = 64


def kiln_times(binary, threads, runs, plain_max, seq):
    """(row-state ms, plain ms or None, max abs difference or None) at `seq`."""
    out = subprocess.run([binary, str(threads), str(runs), str(plain_max), str(seq)], check=True,
                         capture_output=True, text=True).stdout
    m = re.search(r"row_state_ms ([\d.]+)(?: plain_ms ([\d.]+) max_abs_diff (\S+))?", out)
    if not m:
        sys.exit(f"no times in the output of {binary}:\n{out}")
    plain = float(m.group(2)) if m.group(2) else None
    diff = float(m.group(3)) if m.group(3) else None
    return float(m.group(1)), plain, diff


def sdpa_ms(torch, seq, runs):
    """Median ms of PyTorch's causal scaled_dot_product_attention at `seq`."""
    q, k, v = (torch.randn(1, HEADS, seq, HEAD_DIM) for _ in range(3))
    sdpa = torch.nn.functional.scaled_dot_product_attention
    sdpa(q, k, v, is_causal=True)  # warm up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        sdpa(q, k, v, is_causal=True)
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2] * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--plain-max", type=int, default=1024)
    ap.add_argument("--seq", type=int, nargs="+", default=[512, 1024, 2048])
    args = ap.parse_args()
    binary = os.path.join(args.build, "bin", "row_state_attention")
    try:
        import torch
        torch.set_num_threads(args.threads)
        version = torch.__version__
    except ImportError:
        torch, version = None, "not installed"
    print(f"attention {HEADS} heads x d {HEAD_DIM}, causal, {args.threads} thread(s), median of "
          f"{args.runs}; torch {version}\n")
    print("| seq | row state ms | plain ms | plain / row state | SDPA ms | SDPA / row state |")
    print("|---:|---:|---:|---:|---:|---:|")
    for seq in args.seq:
        row, plain, diff = kiln_times(binary, args.threads, args.runs, args.plain_max, seq)
        if diff is not None and diff > 1e-3:
            sys.exit(f"row-state and plain outputs differ by {diff} at seq {seq}")
        sdpa = sdpa_ms(torch, seq, args.runs) if torch else None
        cell = lambda x: f"{x:.2f}" if x is not None else "-"
        ratio = lambda x: f"**{x / row:.2f}**" if x is not None else "-"
        print(f"| {seq} | {row:.2f} | {cell(plain)} | {ratio(plain)} | {cell(sdpa)} | "
              f"{ratio(sdpa)} |", flush=True)


if __name__ == "__main__":
    main()
