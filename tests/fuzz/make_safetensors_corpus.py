#!/usr/bin/env python3
"""Writes the seed corpus of kiln_fuzz_safetensors (tests/fuzz/corpus/safetensors) with the
`safetensors` package (0.8.0, its NumPy API): files named valid-* must read (the corpus test
checks it), the others are cut or broken copies.

    tests/fuzz/make_safetensors_corpus.py
"""
import os
import struct

import numpy as np
from safetensors.numpy import save

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "safetensors")


def put(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def main():
    os.makedirs(HERE, exist_ok=True)
    rng = np.random.default_rng(7)
    every = {
        "bool": np.array([True, False, True]),
        "u8": np.arange(5, dtype=np.uint8), "i8": np.arange(-2, 2, dtype=np.int8),
        "u16": np.arange(3, dtype=np.uint16), "i16": np.arange(-1, 2, dtype=np.int16),
        "u32": np.arange(2, dtype=np.uint32), "i32": np.arange(-2, 1, dtype=np.int32),
        "u64": np.arange(2, dtype=np.uint64), "i64": np.arange(-1, 1, dtype=np.int64),
        "f16": rng.standard_normal((2, 3)).astype(np.float16),
        "f32": rng.standard_normal((3, 2)).astype(np.float32),
        "f64": rng.standard_normal(2),
        "scalar": np.array(1.5, dtype=np.float32),
        "empty": np.zeros((2, 0), dtype=np.float32),
    }
    valid = save(every, metadata={"format": "np", "note": "caf\u00e9"})
    put("valid-every-dtype.safetensors", valid)
    put("valid-no-tensors.safetensors", save({}))
    put("valid-one.safetensors", save({"w": np.ones((4, 4), dtype=np.float32)}))
    n = struct.unpack("<Q", valid[:8])[0]
    put("cut-in-length.safetensors", valid[:5])
    put("cut-in-header.safetensors", valid[: 8 + n // 2])
    put("cut-in-data.safetensors", valid[:-3])
    header = valid[8 : 8 + n].decode()
    for name, old, new in [
        ("bad-dtype", '"F32"', '"F31"'),
        ("bad-shape", '"shape":[3,2]', '"shape":[3,-2]'),
        ("bad-json", '"shape"', '"shape'),
        ("bad-size", '"shape":[3,2]', '"shape":[3,3]'),
    ]:
        broken = header.replace(old, new, 1).encode()
        put(name + ".safetensors", struct.pack("<Q", len(broken)) + broken + valid[8 + n :])
    overlap = b'{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}'
    put("overlap.safetensors", struct.pack("<Q", len(overlap)) + overlap + b"\x01\x02\x03\x04")


main()
