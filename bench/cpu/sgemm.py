#!/usr/bin/env python3
"""Square f32 matrix products: kiln's generated kernel against OpenBLAS, side by side.

For each size N, [N, N] x [N, N] in f32 on every core, three ways, each the median of RUNS
(build/bin/gpu_bench, device synchronized around each step):
  generated   `gpu_bench cpu matmul N`, the search with the CPU target's library rules turned
              off (KILN_CPU_RULES_DIR pointing at no folder): the best generated kernel
  openblas    `gpu_bench cpu gemm_op N`: kiln's gemm library call (OpenBLAS, split across the
              threads by gemm.cpp) with the kernels Debian's OpenBLAS picks on this machine
  skylakex    the same call with OPENBLAS_CORETYPE=SkylakeX set for that command only (these
              machines otherwise run OpenBLAS's Haswell kernels)
and prints GFLOP/s and generated / openblas. gpu_bench checks the generated program against
the interpreter at the full constant size, whose broadcast product needs 8 GiB at 1024, so
sizes above --generated-max (512) skip the generated kernel.

    python3 bench/cpu/sgemm.py [--build build] [--sizes 512,1024,2048] [--runs 5]
"""
import argparse
import os
import re
import subprocess


def median_ms(bench, args, env_extra):
    env = dict(os.environ, **env_extra)
    out = subprocess.run([bench] + args, check=True, capture_output=True, text=True, env=env).stdout
    m = re.search(r"median_ms ([\d.]+)", out)
    if not m:
        raise SystemExit("no time in the output of gpu_bench " + " ".join(args) + ":\n" + out)
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--sizes", default="512,1024,2048")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--generated-max", type=int, default=512)
    o = ap.parse_args()
    bench = os.path.join(o.build, "bin", "gpu_bench")
    print("| N | generated ms | GFLOP/s | OpenBLAS ms | GFLOP/s | SkylakeX ms | GFLOP/s |"
          " speed, generated / OpenBLAS |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in [int(s) for s in o.sizes.split(",")]:
        flop = 2.0 * n * n * n
        gflops = lambda ms: flop / (ms * 1e-3) / 1e9
        blas = median_ms(bench, ["cpu", "gemm_op", str(n), str(o.runs), "0"], {})
        skx = median_ms(bench, ["cpu", "gemm_op", str(n), str(o.runs), "0"],
                        {"OPENBLAS_CORETYPE": "SkylakeX"})
        if n <= o.generated_max:
            gen = median_ms(bench, ["cpu", "matmul", str(n), str(o.runs)],
                            {"KILN_CPU_RULES_DIR": "/nonexistent"})
            gen_cols = f"{gen:.2f} | {gflops(gen):.1f}"
            ratio = f"**{blas / gen:.3f}**"
        else:
            gen_cols, ratio = "- | -", "-"
        print(f"| {n} | {gen_cols} | {blas:.2f} | {gflops(blas):.1f} | {skx:.2f} | "
              f"{gflops(skx):.1f} | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
