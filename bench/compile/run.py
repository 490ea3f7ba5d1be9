#!/usr/bin/env python3
"""Compile-time breakdown and search speedups, on this machine's CPU.

For each example: `kiln compile` twice over a fresh cache (cold: every kernel the cost model
keeps compiled and measured, the candidates it ranks out counted; warm: nothing measured), the
per-group times from its --report, and the speedup of the searched program over the
one-kernel-per-op program (both timed end to end by the compiler, weights resident). Then
saturation alone for every example, Gemma-3-4B included (build/bin/saturation_stats).

    bench/compile/run.py [--build build] [--only mlp,attention]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CASES = [
    ("mlp", ["--dim", "batch=64"]),
    ("attention", ["--dim", "seq=128"]),
    ("smollm2-135m", ["--dim", "seq=8"]),
]


def compile_once(kiln, name, args, cache, report):
    env = dict(os.environ, KILN_CACHE_DIR=cache)
    start = time.perf_counter()
    subprocess.run([kiln, "compile", name, *args, "--quiet", "--runs", "1", "--report", report],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    with open(report) as f:
        return wall, json.load(f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--only", default="")
    o = parser.parse_args()
    kiln = os.path.join(o.build, "bin", "kiln")
    only = set(o.only.split(",")) if o.only else None
    print("| example | groups | e-classes | cold compile s | saturation s | measure s | extract s "
          "| ranked out | measured | warm compile s | measured (warm) | one-op ms | searched ms | speedup |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, args in CASES:
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory() as cache:
            report = os.path.join(cache, "report.json")
            cold_wall, cold = compile_once(kiln, name, args, cache, report)
            warm_wall, warm = compile_once(kiln, name, args, cache, report)
        g = cold["groups"]
        # Each group's program runs once per member chunk.
        one_op = sum(x["one_op_seconds"] * len(x["members"]) for x in g)
        searched = sum(min(x["program_seconds"], x["one_op_seconds"]) * len(x["members"]) for x in g)
        print(f"| {name} {' '.join(args)} | {len(g)} | {sum(x['eclasses'] for x in g)} "
              f"| {cold['compile_seconds']:.2f} | {sum(x['saturation_seconds'] for x in g):.3f} "
              f"| {sum(x['measure_seconds'] for x in g):.2f} | {sum(x['extract_seconds'] for x in g):.3f} "
              f"| {sum(x['pruned'] for x in g)} | {sum(x['measured'] for x in g)} "
              f"| {warm['compile_seconds']:.2f} "
              f"| {sum(x['measured'] for x in warm['groups'])} | {one_op * 1e3:.2f} "
              f"| {searched * 1e3:.2f} | **{one_op / searched:.1f}x** |")
        sys.stdout.flush()
    print()
    subprocess.run([os.path.join(o.build, "bin", "saturation_stats")], check=True)


if __name__ == "__main__":
    main()
