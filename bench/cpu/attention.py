#!/usr/bin/env python3
"""Attention-shaped kernel on one thread: kiln's row-state code vs its other forms vs PyTorch SDPA.

One Body (8 heads, head dim 64, causal by a select on j <= i, the online-softmax reduction
over keys with the scores q.k_j an inner reduction) rendered three ways by the CPU code
generator (build/bin/row_state_attention: row state folded in blocks of keys, as chosen; row
state key by key; plain, each score once per key and column), and
torch.nn.functional.scaled_dot_product_attention(is_causal=True) on the same shapes, side by
side for each seq, all on `--threads` threads; medians of `--runs`. Prints a table with the
ratios (> 1: the blocked row state is faster). `--cpu-time` (one thread) times both with the
timing thread's CPU time, which other processes on a loaded machine do not add to.

    python3 bench/cpu/attention.py [--build build] [--threads 1] [--runs 5] [--plain-max 1024]
                                   [--seq 512 1024 2048] [--cpu-time]
"""
import argparse
import os
import re
import subprocess
import sys
import time

HEADS = 8
HEAD_DIM = 64


def kiln_times(binary, threads, runs, plain_max, seq, cpu_time):
    """(blocked ms, key-by-key ms, plain ms or None, max abs difference) at `seq`."""
    flag = ["--cpu-time"] if cpu_time else []
    out = subprocess.run([binary] + flag + [str(threads), str(runs), str(plain_max), str(seq)],
                         check=True, capture_output=True, text=True).stdout
    m = re.search(r"row_state_ms ([\d.]+) keywise_ms ([\d.]+)(?: plain_ms ([\d.]+))? "
                  r"max_abs_diff (\S+)", out)
    if not m:
        sys.exit(f"no times in the output of {binary}:\n{out}")
    plain = float(m.group(3)) if m.group(3) else None
    return float(m.group(1)), float(m.group(2)), plain, float(m.group(4))


def sdpa_ms(torch, seq, runs, cpu_time):
    """Median ms of PyTorch's causal scaled_dot_product_attention at `seq`."""
    q, k, v = (torch.randn(1, HEADS, seq, HEAD_DIM) for _ in range(3))
    sdpa = torch.nn.functional.scaled_dot_product_attention
    sdpa(q, k, v, is_causal=True)  # warm up
    clock = time.thread_time if cpu_time else time.perf_counter
    times = []
    for _ in range(runs):
        start = clock()
        sdpa(q, k, v, is_causal=True)
        times.append(clock() - start)
    times.sort()
    return times[len(times) // 2] * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--plain-max", type=int, default=1024)
    ap.add_argument("--seq", type=int, nargs="+", default=[512, 1024, 2048])
    ap.add_argument("--cpu-time", action="store_true")
    args = ap.parse_args()
    if args.cpu_time and args.threads != 1:
        sys.exit("--cpu-time times one thread: use --threads 1")
    binary = os.path.join(args.build, "bin", "row_state_attention")
    try:
        import torch
        torch.set_num_threads(args.threads)
        version = torch.__version__
    except ImportError:
        torch, version = None, "not installed"
    clock = "thread CPU time" if args.cpu_time else "wall time"
    print(f"attention {HEADS} heads x d {HEAD_DIM}, causal, {args.threads} thread(s), median of "
          f"{args.runs} ({clock}); torch {version}\n")
    print("| seq | blocked ms | key by key ms | key by key / blocked | plain ms | "
          "plain / blocked | SDPA ms | SDPA / blocked |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for seq in args.seq:
        row, keywise, plain, diff = kiln_times(binary, args.threads, args.runs, args.plain_max,
                                               seq, args.cpu_time)
        if diff > 1e-3:
            sys.exit(f"the forms' outputs differ by {diff} at seq {seq}")
        sdpa = sdpa_ms(torch, seq, args.runs, args.cpu_time) if torch else None
        cell = lambda x: f"{x:.2f}" if x is not None else "-"
        ratio = lambda x: f"**{x / row:.2f}**" if x is not None else "-"
        print(f"| {seq} | {row:.2f} | {keywise:.2f} | {ratio(keywise)} | {cell(plain)} | "
              f"{ratio(plain)} | {cell(sdpa)} | {ratio(sdpa)} |", flush=True)


if __name__ == "__main__":
    main()
