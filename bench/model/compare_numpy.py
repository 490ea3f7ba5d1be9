#!/usr/bin/env python3
"""kiln generate against an independent LLaMA in NumPy on the same GGUF file: greedy
continuations must agree token for token.

The peer follows llama.cpp's conventions, not kiln's: weights dequantized by the PyPI `gguf`
package (llama.cpp's Python half), q and k kept in the file's row order with RoPE on adjacent
pairs (x[2i], x[2i+1]) as llama.cpp applies it, the whole sequence recomputed each step (no
cache). kiln undoes the row order and rotates halves, so agreement checks the loader, the
permutation, the tokenizer's ids and the decoder together.

    pip install gguf numpy
    bench/model/compare_numpy.py [--kiln build/bin/kiln] [--model FILE.gguf] [-n 32]
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np
import gguf

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):",
    "Once upon a time, in a small village,",
]


class Llama:
    def __init__(self, path):
        r = gguf.GGUFReader(path)
        f = lambda k: r.fields[k].parts[-1][0]
        self.layers = int(f("llama.block_count"))
        self.heads = int(f("llama.attention.head_count"))
        self.kv = int(f("llama.attention.head_count_kv"))
        self.eps = float(f("llama.attention.layer_norm_rms_epsilon"))
        self.base = float(f("llama.rope.freq_base"))
        self.eos = int(f("tokenizer.ggml.eos_token_id"))
        self.w = {}
        for t in r.tensors:
            a = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
            self.w[t.name] = a.reshape([int(n) for n in reversed(t.shape)])
        self.d = self.w["blk.0.attn_q.weight"].shape[0] // self.heads

    def norm(self, x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * w

    def rope(self, x):  # x [seq, heads, d], adjacent pairs as llama.cpp
        seq, _, d = x.shape
        inv = self.base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
        ang = np.arange(seq)[:, None] * inv[None, :]
        c, s = np.cos(ang)[:, None, :].astype(np.float32), np.sin(ang)[:, None, :].astype(np.float32)
        a, b = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = a * c - b * s
        out[..., 1::2] = b * c + a * s
        return out

    def logits(self, ids):
        w, seq, d = self.w, len(ids), self.d
        x = w["token_embd.weight"][ids]
        mask = np.triu(np.full((seq, seq), -np.inf, dtype=np.float32), 1)
        for l in range(self.layers):
            p = f"blk.{l}."
            h = self.norm(x, w[p + "attn_norm.weight"])
            q = self.rope((h @ w[p + "attn_q.weight"].T).reshape(seq, self.heads, d))
            k = self.rope((h @ w[p + "attn_k.weight"].T).reshape(seq, self.kv, d))
            v = (h @ w[p + "attn_v.weight"].T).reshape(seq, self.kv, d)
            rep = self.heads // self.kv
            k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
            s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(d) + mask
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            o = np.einsum("hqk,khd->qhd", s, v).reshape(seq, self.heads * d)
            x = x + o @ w[p + "attn_output.weight"].T
            h = self.norm(x, w[p + "ffn_norm.weight"])
            g = h @ w[p + "ffn_gate.weight"].T
            x = x + ((g / (1 + np.exp(-g))) * (h @ w[p + "ffn_up.weight"].T)) @ w[p + "ffn_down.weight"].T
        x = self.norm(x[-1], w["output_norm.weight"])
        return x @ w.get("output.weight", w["token_embd.weight"]).T

    def greedy(self, ids, n):
        ids, out = list(ids), []
        for _ in range(n):
            t = int(np.argmax(self.logits(ids)))
            if t == self.eos:
                break
            out.append(t)
            ids.append(t)
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "bin", "kiln"))
    ap.add_argument("--model")
    ap.add_argument("-n", type=int, default=32)
    a = ap.parse_args()
    model = a.model or subprocess.check_output([os.path.join(ROOT, "scripts", "fetch-model")],
                                               text=True).strip()
    peer = Llama(model)
    agree = 0
    for prompt in PROMPTS:
        ids = [int(x) for x in subprocess.check_output(
            [a.kiln, "tokenize", "--model", model, "--", prompt], text=True).split()]
        start = time.time()
        want = peer.greedy(ids, a.n)
        peer_s = time.time() - start
        want_text = subprocess.check_output(
            [a.kiln, "tokenize", "--model", model, "--decode", "--", " ".join(map(str, want))],
            text=True) if want else ""
        run = subprocess.run([a.kiln, "generate", "--model", model, "--prompt", prompt, "-n",
                              str(a.n), "--quiet"], capture_output=True, text=True, check=True)
        got_text = run.stdout.split("\n\nprefill:")[0]
        ok = got_text == want_text
        agree += ok
        print(f"{'AGREE' if ok else 'DIFFER'}  {prompt!r}  ({len(want)} tokens; numpy {peer_s:.1f} s)")
        print(f"  kiln:  {got_text!r}")
        if not ok:
            print(f"  numpy: {want_text!r}")
        for line in run.stdout.splitlines():
            if line.startswith(("prefill:", "decode:")):
                print("  kiln " + line)
    print(f"{agree} of {len(PROMPTS)} greedy continuations agree")
    sys.exit(0 if agree == len(PROMPTS) else 1)


if __name__ == "__main__":
    main()
