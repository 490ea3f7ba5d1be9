#!/usr/bin/env python3
"""Kernel input lists as a cons list or as a Vec, side by side in kiln.

rules/hlir.egg spells a Kernel's inputs as a cons list, (Kernel body (LCons a (LCons b (LNil)))).
This script writes the same generated program twice, once with that list and once with
(Kernel body (vec-of a b)), with the three kinds of rule that rules/consumed_buffer.egg runs
over the list, written the natural way for each shape:

  reads     every input of a kernel is read by it (cons: a recursive walk down the list;
            Vec: vec-get at each slot index of a small Slot relation)
  repeated  the first input appears again later in the list (cons: a list-has relation
            built by recursion; Vec: vec-remove then vec-contains)
  consumed  the first input is a consumed buffer that another kernel also reads (cons: the
            pattern (LCons c rest); Vec: (vec-get ins 0))

Both programs must print the same table sizes for reads/repeated/consumed (the script checks
it), then each is timed (best of --repeat runs of `kiln egg`, whole process).

With --egglog, the same two programs also run in the reference egglog (.venv-egglog, timed
inside its process: parse + run), which must print the same sizes.

Usage: bench/engine/list_vs_vec.py [--kiln build/bin/kiln] [--kernels N] [--repeat R] [--egglog]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

COMMON = """(datatype Term (Leaf i64) (Buf Term))
(relation reads (Term Term))
(relation repeated (Term))
(relation consumed (Term))
"""

CONS_RULES = """(datatype TermList (LNil) (LCons Term TermList))
(constructor Kernel (i64 TermList) Term)
(relation reads-list (Term TermList))
(relation list-has (TermList Term))
(rule ((= k (Kernel b l))) ((reads-list k l)))
(rule ((reads-list r (LCons x rest))) ((reads r x) (reads-list r rest)))
(rule ((= l (LCons x rest))) ((list-has l x)))
(rule ((= l (LCons x rest)) (list-has rest y)) ((list-has l y)))
(rule ((= k (Kernel b (LCons c rest))) (list-has rest c)) ((repeated k)))
(rule ((= k (Kernel b (LCons c rest))) (= c (Buf d)) (reads r d) (!= r k)) ((consumed k)))
"""

VEC_RULES = """(sort TermVec (Vec Term))
(constructor Kernel (i64 TermVec) Term)
(relation Slot (i64))
{slots}
(rule ((= k (Kernel b ins)) (Slot i) (= x (vec-get ins i))) ((reads k x)))
(rule ((= k (Kernel b ins)) (= c (vec-get ins 0)) (vec-contains (vec-remove ins 0) c)) ((repeated k)))
(rule ((= k (Kernel b ins)) (= c (vec-get ins 0)) (= c (Buf d)) (reads r d) (!= r k)) ((consumed k)))
"""

TAIL = "(run 20)\n(print-size reads)\n(print-size repeated)\n(print-size consumed)\n"


def kernels(n, leaves, max_inputs):
    """n kernels, each a list of 1..max_inputs input terms (deterministic LCG)."""
    state = 12345
    out = []
    for _ in range(n):
        state = (state * 1103515245 + 12345) % (1 << 31)
        count = 1 + (state >> 16) % max_inputs
        ins = []
        for _ in range(count):
            state = (state * 1103515245 + 12345) % (1 << 31)
            leaf = f"(Leaf {(state >> 8) % leaves})"
            ins.append(f"(Buf {leaf})" if (state >> 24) % 4 == 0 else leaf)
        out.append(ins)
    return out


def program(shape, ks, max_inputs):
    lines = [COMMON]
    if shape == "cons":
        lines.append(CONS_RULES)
    else:
        lines.append(VEC_RULES.format(slots="\n".join(f"(Slot {i})" for i in range(max_inputs))))
    for i, ins in enumerate(ks):
        if shape == "cons":
            lst = "(LNil)"
            for t in reversed(ins):
                lst = f"(LCons {t} {lst})"
        else:
            lst = "(vec-of " + " ".join(ins) + ")"
        lines.append(f"(Kernel {i} {lst})\n")
    lines.append(TAIL)
    return "".join(lines)


EGGLOG_RUN = """
import sys, time
from egglog.bindings import EGraph
text = open(sys.argv[1]).read()
start = time.monotonic()
eg = EGraph()
out = "".join(str(o) for o in eg.run_program(*eg.parse_program(text)))
print(time.monotonic() - start)
print(out, end="")
"""


def egglog_time(path, repeat):
    py = os.path.join(REPO, ".venv-egglog", "bin", "python")
    best, out = None, None
    for _ in range(repeat):
        run = subprocess.run([py, "-c", EGGLOG_RUN, path], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"egglog failed:\n{run.stderr}")
        elapsed, _, out = run.stdout.partition("\n")
        best = float(elapsed) if best is None else min(best, float(elapsed))
    return best, out


def rule_tokens(text):
    return sum(len(line.replace("(", " ( ").replace(")", " ) ").split())
               for line in text.splitlines() if line.startswith("(rule"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", default=os.path.join(REPO, "build", "bin", "kiln"))
    ap.add_argument("--kernels", type=int, default=20000)
    ap.add_argument("--leaves", type=int, default=1000)
    ap.add_argument("--max-inputs", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--egglog", action="store_true", help="also time the reference egglog")
    args = ap.parse_args()
    ks = kernels(args.kernels, args.leaves, args.max_inputs)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for shape in ("cons", "vec"):
            path = os.path.join(tmp, shape + ".egg")
            with open(path, "w") as f:
                f.write(program(shape, ks, args.max_inputs))
            best = None
            for _ in range(args.repeat):
                start = time.monotonic()
                run = subprocess.run([args.kiln, "egg", path], capture_output=True, text=True)
                elapsed = time.monotonic() - start
                if run.returncode != 0:
                    sys.exit(f"{shape}: kiln failed:\n{run.stderr}")
                best = elapsed if best is None else min(best, elapsed)
            results[shape] = (best, run.stdout)
            if args.egglog:
                results["egglog " + shape] = egglog_time(path, args.repeat)
    for name, (_, out) in results.items():
        if out != results["cons"][1]:
            sys.exit(f"MISMATCH:\n--- cons\n{results['cons'][1]}--- {name}\n{out}")
    sizes = results["cons"][1].split()
    print(f"{args.kernels} kernels, 1..{args.max_inputs} inputs; reads/repeated/consumed rows: {' '.join(sizes)}")
    print(f"rule tokens: cons {rule_tokens(CONS_RULES)}, vec {rule_tokens(VEC_RULES)}")
    for name, (seconds, _) in results.items():
        print(f"{name:11s} {seconds:.3f} s")
    print(f"kiln cons/vec {results['cons'][0] / results['vec'][0]:.2f}")
    if args.egglog:
        print(f"egglog cons/vec {results['egglog cons'][0] / results['egglog vec'][0]:.2f}")


if __name__ == "__main__":
    main()
