#!/usr/bin/env python3
"""Cut a fuzz corpus to at most N files, keeping as many covered edges as possible.

libFuzzer's -set_cover_merge keeps every covered edge, which can take more files than a
checked-in corpus should hold. This measures each input's edges on its own (a one-file
-merge run writes them to a control file), then picks inputs greedily by new edges, fewest
bytes first on ties, and stops at N. Picked inputs are copied to OUT named by their SHA-1.

Usage: tests/fuzz/trim_corpus.py FUZZER N OUT INPUT_DIR...
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile


def edges_of(fuzzer, path, scratch):
    """The edges (PC indexes) the fuzzer covers when it runs `path` alone."""
    inputs = tempfile.mkdtemp(dir=scratch)
    merged = tempfile.mkdtemp(dir=scratch)
    shutil.copy(path, inputs)
    control = inputs + ".control"  # a new file: libFuzzer resumes a merge from an existing one
    subprocess.run([fuzzer, "-merge=1", "-merge_control_file=" + control, "-max_len=4096",
                    merged, inputs], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    edges = set()
    with open(control) as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] == "COV":
                edges.update(int(p) for p in parts[2:])
    return edges


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__.strip().splitlines()[-1])
    fuzzer, limit, out, dirs = os.path.abspath(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
    paths = sorted(os.path.join(d, n) for d in dirs for n in os.listdir(d))
    with tempfile.TemporaryDirectory() as scratch:
        edges = {p: edges_of(fuzzer, p, scratch) for p in paths}
    everything = set().union(*edges.values()) if edges else set()
    covered, picked = set(), []
    while len(picked) < limit:
        best = max(edges, key=lambda p: (len(edges[p] - covered), -os.path.getsize(p)), default=None)
        if best is None or not edges[best] - covered:
            break
        picked.append(best)
        covered |= edges.pop(best)
    os.makedirs(out, exist_ok=True)
    for p in picked:
        with open(p, "rb") as f:
            data = f.read()
        with open(os.path.join(out, hashlib.sha1(data).hexdigest()), "wb") as f:
            f.write(data)
    print(f"trim_corpus: {len(picked)} of {len(paths)} files keep {len(covered)} of "
          f"{len(everything)} edges")


if __name__ == "__main__":
    main()
