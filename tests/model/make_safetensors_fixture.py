#!/usr/bin/env python3
"""Writes tests/model/tiny.safetensors with the `safetensors` package (its NumPy API) and prints
the values the unit test asserts. Rerun only to regenerate; the file is committed."""
import pathlib
import numpy as np
from safetensors.numpy import save_file

rng = np.random.default_rng(14)
tensors = {
    "w32": rng.standard_normal((3, 4)).astype(np.float32),
    "w16": rng.standard_normal((2, 5)).astype(np.float16),
    "ids": np.arange(-3, 3, dtype=np.int64).reshape(2, 3),
    "scalar": np.array(2.5, dtype=np.float32),
    "empty": np.zeros((0, 4), dtype=np.float32),
}
out = pathlib.Path(__file__).with_name("tiny.safetensors")
save_file(tensors, str(out), metadata={"format": "np", "source": "kiln tests"})
for name, t in tensors.items():
    print(name, t.dtype, t.shape, [repr(float(x)) for x in t.astype(np.float64).ravel()])
