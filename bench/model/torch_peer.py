"""The PyTorch peer of compare_llama_cpp.py: transformers' LlamaForCausalLM loaded from the same
GGUF file (transformers dequantizes every tensor to float32 through the `gguf` package and undoes
llama.cpp's q/k row order), run greedily with its KV cache.

    pip install torch transformers accelerate gguf

Each step is one forward call with the KV cache (a DynamicCache, grown in place), not
`generate`, so that the timing holds the model's work and not the sampling machinery around it.
"""
import inspect
import os
import time

import numpy as np
import torch
from transformers import AutoModelForCausalLM, DynamicCache


def load(path, threads):
    """The model in float32, evaluation mode, on `threads` threads."""
    torch.set_num_threads(threads)
    model = AutoModelForCausalLM.from_pretrained(os.path.dirname(path),
                                                 gguf_file=os.path.basename(path),
                                                 dtype=torch.float32)
    return model.eval()


@torch.inference_mode()
def greedy(model, ids, n, eos, stop_at_eos=True):
    """Greedy continuation of `ids`: (tokens, prefill tokens/s, decode tokens/s, the prompt's
    last-position logits as float32). Timed like compare_llama_cpp.llama_greedy: the prompt in
    one call, then one call a token; decode counts the tokens after the first."""
    # transformers 5.x renames the forward's past_key_values to cache.
    name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    kv = {name: DynamicCache(config=model.config), "use_cache": True}
    start = time.perf_counter()
    logits = model(torch.tensor([ids]), **kv).logits[0, -1]
    prefill = time.perf_counter() - start
    first = logits.numpy().astype(np.float32).copy()
    tokens = []
    start = time.perf_counter()
    for i in range(n):
        t = int(torch.argmax(logits))
        if stop_at_eos and t == eos:
            break
        tokens.append(t)
        if i + 1 < n:
            logits = model(torch.tensor([[t]]), **kv).logits[0, -1]
    decode = time.perf_counter() - start
    return tokens, len(ids) / prefill, (len(tokens) - 1) / decode if len(tokens) > 1 else 0.0, first
