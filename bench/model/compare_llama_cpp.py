#!/usr/bin/env python3
"""kiln generate against llama.cpp (through llama-cpp-python) and PyTorch (transformers, the
weights dequantized from the GGUF to float32: torch_peer.py) on the same GGUF file and the same
thread count: tokenization, greedy continuations, the prompt's next-token logits of the two
peers against each other, and prefill / decode tokens/s side by side with the ratios.

    CMAKE_ARGS="-DGGML_NATIVE=ON" pip install llama-cpp-python   # builds the vendored llama.cpp
    pip install torch transformers accelerate gguf               # the PyTorch peer
    bench/model/compare_llama_cpp.py [--kiln build/bin/kiln] [--model FILE.gguf] [--threads 2]

kiln's program is the search's (run once before timing, so that its measurements are cached);
both read the quantized blocks directly (kiln's products over blocks: targets/cpu/
quantized_gemm). llama.cpp also rounds activations to 8 bits for its quantized dot products
(kiln keeps them f32), so greedy continuations may part after some tokens: the script reports
how many tokens agree; PyTorch computes in float32 like kiln, so its continuations must equal
kiln's (the exit status is 1 otherwise). `kiln generate` prints no logits, so kiln is compared by its greedy
tokens; the two peers' logits are compared directly (top-1 and max abs difference).

Where the OS has not enabled AMX tile state for the process (as on this machine), llama.cpp
built with -march=native faults in its AMX kernels: build it without them
(CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=ON -DGGML_FMA=ON -DGGML_F16C=ON
-DGGML_AMX_INT8=OFF ..."), or pass --no-extra-buffers (which also turns off the repacked
weight layouts, so it is slower).
"""
import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np
import llama_cpp
import llama_cpp.llama
from llama_cpp import Llama

import torch_peer

_default_params = llama_cpp.llama_model_default_params


def _without_extra_buffers():
    params = _default_params()
    params.use_extra_bufts = False
    return params



ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):",
    "Once upon a time, in a small village,",
]
LONG = ("The history of computing is a story of abstractions built on abstractions. Early "
        "machines were programmed by rewiring them; then came stored programs, assemblers, and "
        "compilers that turned formulas into instructions. Each layer let people think about "
        "problems instead of hardware, and each layer cost something in speed that the next "
        "generation of engineers tried to win back. Today the same pattern repeats for machine "
        "learning: models are written as graphs of tensor operations, and compilers search for "
        "the fastest way to run them on the chips at hand, fusing loops, choosing tiles, and ")


def kiln_tokens(kiln, model, text):
    out = subprocess.check_output([kiln, "tokenize", "--model", model, "--", text], text=True)
    return [int(x) for x in out.split()]


def kiln_generate(kiln, model, prompt, n, threads, extra=()):
    run = subprocess.run([kiln, "generate", "--model", model, "--prompt", prompt, "-n", str(n),
                          "--threads", str(threads), "--quiet", *extra],
                         capture_output=True, text=True, check=True)
    text, _, stats = run.stdout.rpartition("\n\nprefill:")
    pre = re.search(r"^ (\d+) tokens in ([0-9.]+) s", stats)
    dec = re.search(r"decode: (\d+) tokens in ([0-9.]+) s", stats)
    return text, int(pre[1]) / float(pre[2]), (int(dec[1]) / float(dec[2]) if dec else 0.0)


def llama_greedy(llm, ids, n, stop_at_eos=True):
    llm.reset()
    start = time.perf_counter()
    llm.eval(ids)
    prefill = time.perf_counter() - start
    first = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).copy()
    out = []
    start = time.perf_counter()
    for i in range(n):
        # The last token's logits (Llama.eval keeps them in `scores` only with logits_all).
        logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),))
        t = int(np.argmax(logits))
        if stop_at_eos and t == llm.token_eos():
            break
        out.append(t)
        if i + 1 < n:
            llm.eval([t])
    decode = time.perf_counter() - start
    return out, len(ids) / prefill, (len(out) - 1) / decode if len(out) > 1 else 0.0, first


def common_prefix(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "bin", "kiln"))
    ap.add_argument("--model")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("-n", type=int, default=32)
    ap.add_argument("--no-extra-buffers", action="store_true")
    a = ap.parse_args()
    if a.no_extra_buffers:
        llama_cpp.llama.llama_cpp.llama_model_default_params = _without_extra_buffers
    model = a.model or subprocess.check_output([os.path.join(ROOT, "scripts", "fetch-model")],
                                               text=True).strip()
    llm = Llama(model_path=model, n_ctx=2048, n_threads=a.threads, n_threads_batch=a.threads,
                n_batch=512, verbose=False)
    torch_model = torch_peer.load(model, a.threads)
    kiln_generate(a.kiln, model, "warm up", 2, a.threads)  # the search's measurements, cached
    torch_peer.greedy(torch_model, [1, 2, 3], 2, llm.token_eos())  # first-call setup untimed

    agree = 0
    torch_agree = 0
    max_diff = 0.0
    top1 = 0
    for prompt in PROMPTS:
        ids = kiln_tokens(a.kiln, model, prompt)
        same_ids = ids == llm.tokenize(prompt.encode(), add_bos=False, special=True)
        want, _, _, l_logits = llama_greedy(llm, ids, a.n)
        t_want, _, _, t_logits = torch_peer.greedy(torch_model, ids, a.n, llm.token_eos())
        got_text, _, _ = kiln_generate(a.kiln, model, prompt, a.n, a.threads)
        got = kiln_tokens(a.kiln, model, prompt + got_text)[len(ids):]
        ok = same_ids and got == want
        agree += ok
        torch_agree += same_ids and got == t_want
        diff = float(np.max(np.abs(l_logits - t_logits)))
        max_diff = max(max_diff, diff)
        top1 += int(np.argmax(l_logits)) == int(np.argmax(t_logits))
        print(f"{'AGREE' if ok else 'PART '}  {prompt!r}: prompt ids {'equal' if same_ids else 'DIFFER'}, "
              f"first {common_prefix(got, want)} of {len(want)} generated tokens equal to "
              f"llama.cpp's, {common_prefix(got, t_want)} of {len(t_want)} to PyTorch's; "
              f"next-token logits llama.cpp vs PyTorch: max abs diff {diff:.3f}, top-1 "
              f"{'equal' if np.argmax(l_logits) == np.argmax(t_logits) else 'DIFFERS'}")
        if not ok:
            want_text = llm.detokenize(want).decode("utf-8", errors="replace")
            t_text = llm.detokenize(t_want).decode("utf-8", errors="replace")
            print(f"  kiln:      {got_text!r}\n  llama.cpp: {want_text!r}\n  PyTorch:   {t_text!r}")

    ids = kiln_tokens(a.kiln, model, LONG)
    text = subprocess.check_output([a.kiln, "tokenize", "--model", model, "--decode", "--",
                                    " ".join(map(str, ids[:128]))], text=True)
    ids = kiln_tokens(a.kiln, model, text)
    _, k_pre, k_dec = kiln_generate(a.kiln, model, text, 64, a.threads, ["--ignore-eos"])
    _, l_pre, l_dec, _ = llama_greedy(llm, ids, 64, stop_at_eos=False)
    _, t_pre, t_dec, _ = torch_peer.greedy(torch_model, ids, 64, llm.token_eos(), stop_at_eos=False)
    print(f"\n{len(ids)}-token prompt, 64 tokens decoded, {a.threads} threads (tokens/s):")
    print(f"  {'':10} {'prefill':>10} {'decode':>10}")
    print(f"  {'kiln':10} {k_pre:10.1f} {k_dec:10.1f}")
    print(f"  {'llama.cpp':10} {l_pre:10.1f} {l_dec:10.1f}")
    print(f"  {'PyTorch':10} {t_pre:10.1f} {t_dec:10.1f}")
    print(f"  {'ratio':10} {k_pre / l_pre:10.2f} {k_dec / l_dec:10.2f}   (kiln / llama.cpp)")
    print(f"  {'ratio':10} {k_pre / t_pre:10.2f} {k_dec / t_dec:10.2f}   (kiln / PyTorch)")
    print(f"{agree} of {len(PROMPTS)} greedy continuations of kiln agree with llama.cpp's, "
          f"{torch_agree} of {len(PROMPTS)} with PyTorch's")
    print(f"next-token logits of the prompts, llama.cpp vs PyTorch: top-1 equal on {top1} of "
          f"{len(PROMPTS)}, max abs diff {max_diff:.3f}")
    sys.exit(0 if torch_agree == len(PROMPTS) else 1)


if __name__ == "__main__":
    main()
