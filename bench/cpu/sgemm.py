#!/usr/bin/env python3
"""Square f32 matrix products: kiln's generated kernel against OpenBLAS, side by side.

For each size N, [N, N] x [N, N] in f32 on every core, each the median of RUNS:
  search      `gpu_bench cpu matmul N` (device synchronized around each step): the search with
              the CPU target's library rules turned off (KILN_CPU_RULES_DIR pointing at no
              folder), so the best generated kernel. gpu_bench checks the program against the
              interpreter at the full constant size, whose broadcast product needs 8 GiB at
              1024, so sizes above --search-max (512) skip it.
  tiled       `tiled_product THREADS RUNS nn N`: the same product's Body rendered by the CPU code
              generator (a tiled product, targets/cpu/tiled_product.hpp) and called directly,
              alternating with kiln's gemm library call (OpenBLAS, split across the threads by
              gemm.cpp) in one run: the ratio is OpenBLAS / tiled (> 1: the tiled product is
              faster)
  skylakex    the same pair with OPENBLAS_CORETYPE=SkylakeX set for that command only (these
              machines otherwise run OpenBLAS's Haswell kernels)
and prints ms, GFLOP/s and the ratios.

    python3 bench/cpu/sgemm.py [--build build] [--sizes 512,1024,2048] [--runs 5] [--threads 0]
"""
import argparse
import os
import re
import subprocess


def run(command, env_extra):
    env = dict(os.environ, **env_extra)
    return subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout


def search_ms(build, n, runs):
    out = run([os.path.join(build, "bin", "gpu_bench"), "cpu", "matmul", str(n), str(runs)],
              {"KILN_CPU_RULES_DIR": "/nonexistent"})
    m = re.search(r"median_ms ([\d.]+)", out)
    if not m:
        raise SystemExit("no time in the output of gpu_bench:\n" + out)
    return float(m.group(1))


def tiled_against_blas(build, n, runs, threads, env_extra):
    """(tiled ms, OpenBLAS ms), medians of one alternating run."""
    out = run([os.path.join(build, "bin", "tiled_product"), str(threads), str(runs), "nn", str(n)],
              env_extra)
    m = re.search(r"tiled_ms ([\d.]+) openblas_ms ([\d.]+)", out)
    if not m:
        raise SystemExit("no times in the output of tiled_product:\n" + out)
    return float(m.group(1)), float(m.group(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--sizes", default="512,1024,2048")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0, help="0: every core")
    ap.add_argument("--search-max", type=int, default=512)
    o = ap.parse_args()
    print("| N | search ms | tiled ms | GFLOP/s | OpenBLAS ms | GFLOP/s | OpenBLAS / tiled |"
          " tiled ms | SkylakeX ms | GFLOP/s | SkylakeX / tiled |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in [int(s) for s in o.sizes.split(",")]:
        gflops = lambda ms: 2.0 * n * n * n / (ms * 1e-3) / 1e9
        search = f"{search_ms(o.build, n, o.runs):.2f}" if n <= o.search_max else "-"
        tiled, blas = tiled_against_blas(o.build, n, o.runs, o.threads, {})
        tiled_skx, skx = tiled_against_blas(o.build, n, o.runs, o.threads,
                                            {"OPENBLAS_CORETYPE": "SkylakeX"})
        print(f"| {n} | {search} | {tiled:.2f} | {gflops(tiled):.0f} | {blas:.2f} | "
              f"{gflops(blas):.0f} | **{blas / tiled:.2f}** | {tiled_skx:.2f} | {skx:.2f} | "
              f"{gflops(skx):.0f} | **{skx / tiled_skx:.2f}** |", flush=True)


if __name__ == "__main__":
    main()
