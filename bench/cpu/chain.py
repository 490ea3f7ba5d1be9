#!/usr/bin/env python3
"""A fused elementwise chain against STREAM's triad: does kiln's kernel run at memory speed?

The `chain` example computes relu((x + bias) * scale) + residual * 0.5 over two rows x 4096
float tensors: fused into one kernel it reads two arrays and writes one, exactly the traffic
of a triad (a[i] = b[i] + s * c[i]). For 1 and 2 threads this runs, side by side, the triad
(build/bin/triad, median of 20 passes, with the flags kiln's kernels get) and `kiln compile
chain` (the median run, inputs resident), both over the same number of elements, and prints
each one's bandwidth (12 bytes per element) and kiln's as a fraction of the triad's.
The default size, 32768 rows (512 MiB per array), is larger than this machine's last-level
cache.

    python3 bench/cpu/chain.py [--build build] [--rows 32768] [--runs 20]
"""
import argparse
import os
import re
import subprocess
import sys

UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
COLUMNS = 4096


def kiln_run(kiln, rows, threads, runs):
    """(median run seconds, steps) of the compiled chain."""
    cmd = [kiln, "compile", "chain", "--quiet", "--dim", f"rows={rows}", "--threads",
           str(threads), "--runs", str(runs), "--top", "0"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    m = re.search(r"(\d+) steps:.*run \(median of \d+\):\s*([\d.]+) (ns|us|ms|s)\b", out)
    if not m:
        sys.exit("no run time in the output of " + " ".join(cmd) + ":\n" + out)
    return float(m.group(2)) * UNITS[m.group(3)], int(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rows", type=int, default=32768)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    elements = args.rows * COLUMNS
    gb = 12.0 * elements / 1e9
    kiln = os.path.join(args.build, "bin", "kiln")
    triad = os.path.join(args.build, "bin", "triad")
    print(f"chain over {args.rows} x {COLUMNS} floats ({gb:.2f} GB moved per run)\n")
    print("| threads | triad GB/s | kiln steps | kiln ms | kiln GB/s | kiln / triad |")
    print("|---:|---:|---:|---:|---:|---:|")
    for threads in (1, 2):
        triad_gbs = float(subprocess.run([triad, str(elements), str(threads)], check=True,
                                         capture_output=True, text=True).stdout)
        seconds, steps = kiln_run(kiln, args.rows, threads, args.runs)
        kiln_gbs = gb / seconds
        print(f"| {threads} | {triad_gbs:.2f} | {steps} | {seconds * 1e3:.2f} | {kiln_gbs:.2f} | "
              f"**{kiln_gbs / triad_gbs:.2f}** |", flush=True)


if __name__ == "__main__":
    main()
