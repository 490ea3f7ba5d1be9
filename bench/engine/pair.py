#!/usr/bin/env python3
"""Compares two kiln builds on one .egg program by running them at the same time.

The host of these virtual machines changes their speed by up to 2x from one hour to the next,
so two builds timed one after the other differ by more than most changes do. Here build A and
build B run simultaneously, each pinned to one CPU (pins swapped every run), so both see the
same load; the ratio B/A of each pair is kept. Prints the median ratio and its quartiles: a
change is real when the quartiles leave 1.00 (identical builds give a median of 1.00-1.02 and
quartiles about 4-7% wide on the 2-CPU machines).

    bench/engine/pair.py build-old/bin/kiln build/bin/kiln bench/engine/programs/arith_grow.egg
    bench/engine/pair.py A B PROGRAM --runs 30

Needs two CPUs and `taskset` (util-linux). Exit status 1 if a run fails or the two builds
print different output.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def run_pair(a, b, program, pins):
    """Starts both builds, returns (seconds of a, seconds of b, output of a, output of b)."""
    outputs = [tempfile.TemporaryFile(), tempfile.TemporaryFile()]
    start = time.perf_counter()
    procs = [
        subprocess.Popen(["taskset", "-c", str(cpu), binary, "egg", program], stdout=out)
        for binary, cpu, out in zip((a, b), pins, outputs)
    ]
    seconds = {}
    while len(seconds) < 2:
        pid, status = os.wait()
        seconds[pid] = time.perf_counter() - start
        if status != 0:
            binary = procs[0 if pid == procs[0].pid else 1].args[3]
            sys.exit(f"pair.py: {binary} egg {program} exited with status {os.waitstatus_to_exitcode(status)}")
    texts = []
    for out in outputs:
        out.seek(0)
        texts.append(out.read())
    return seconds[procs[0].pid], seconds[procs[1].pid], texts[0], texts[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", help="the kiln binary to compare against")
    parser.add_argument("b", help="the kiln binary under test")
    parser.add_argument("program", help="an .egg file")
    parser.add_argument("--runs", type=int, default=20, help="pairs to run (default 20)")
    args = parser.parse_args()
    if (os.cpu_count() or 1) < 2:
        sys.exit("pair.py: needs two CPUs")
    for binary in (args.a, args.b):
        if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
            sys.exit(f"pair.py: {binary}: not an executable file")
    if not os.path.isfile(args.program):
        sys.exit(f"pair.py: {args.program}: no such file")
    ratios, seconds_a, seconds_b = [], [], []
    for i in range(args.runs):
        pins = (0, 1) if i % 2 == 0 else (1, 0)
        ta, tb, out_a, out_b = run_pair(args.a, args.b, args.program, pins)
        if out_a != out_b:
            print("pair.py: the two builds printed different output", file=sys.stderr)
            return 1
        ratios.append(tb / ta)
        seconds_a.append(ta)
        seconds_b.append(tb)
    q1, _, q3 = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else (ratios[0],) * 3
    print(f"B/A median {statistics.median(ratios):.3f}  quartiles {q1:.3f}..{q3:.3f}  "
          f"(A median {statistics.median(seconds_a):.3f} s, B median {statistics.median(seconds_b):.3f} s, "
          f"{len(ratios)} pairs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
