#!/usr/bin/env python3
"""Writes the seed corpus of kiln_fuzz_gguf (tests/fuzz/corpus/gguf) with the PyPI `gguf`
package, llama.cpp's own writer: files named valid-* must read (the corpus test checks it), the
others are cut or broken copies.

    pip install gguf==0.19.0 && tests/fuzz/make_gguf_corpus.py
"""
import os

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "gguf")


def write(name, tensors=True, metadata=True, alignment=None):
    path = os.path.join(HERE, name)
    w = gguf.GGUFWriter(path, "llama")
    if alignment:
        w.add_custom_alignment(alignment)
    if metadata:
        w.add_uint8("u8", 200)
        w.add_int8("i8", -100)
        w.add_uint16("u16", 60000)
        w.add_int16("i16", -30000)
        w.add_uint32("u32", 4000000000)
        w.add_int32("i32", -7)
        w.add_float32("f32", 1.5)
        w.add_bool("bool", True)
        w.add_string("string", "h\u00e9llo")
        w.add_uint64("u64", 2**64 - 1)
        w.add_int64("i64", -(2**40))
        w.add_float64("f64", 0.1)
        w.add_array("strings", ["a", "", "Ġthe"])
        w.add_array("ints", [1, 2, 3])
        w.add_array("nested", [["a"], ["b", "c"]])
    if tensors:
        rng = np.random.default_rng(1)
        x = rng.standard_normal((2, 64)).astype(np.float32)
        w.add_tensor("f32", x)
        w.add_tensor("f16", x.astype(np.float16))
        for name_, qt in (("bf16", T.BF16), ("q8_0", T.Q8_0), ("q4_0", T.Q4_0), ("q4_1", T.Q4_1)):
            q = gguf.quants.quantize(x, qt)
            w.add_tensor(name_, q, raw_shape=q.shape, raw_dtype=qt)
        w.add_tensor("vector", rng.standard_normal(8).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with open(path, "rb") as f:
        return f.read()


os.makedirs(HERE, exist_ok=True)
full = write("valid-every-type.gguf")
write("valid-metadata-only.gguf", tensors=False)
write("valid-tensors-only.gguf", metadata=False)
write("valid-alignment-64.gguf", metadata=False, alignment=64)
with open(os.path.join(HERE, "cut-in-metadata.gguf"), "wb") as f:
    f.write(full[:200])
with open(os.path.join(HERE, "cut-in-data.gguf"), "wb") as f:
    f.write(full[:-100])
with open(os.path.join(HERE, "version-1.gguf"), "wb") as f:
    f.write(full[:4] + (1).to_bytes(4, "little") + full[8:64])
