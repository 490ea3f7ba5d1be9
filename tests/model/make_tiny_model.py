#!/usr/bin/env python3
"""Writes tests/model/tiny-llama.gguf with the PyPI `gguf` package (llama.cpp's writer): a
random LLaMA of 2 layers, hidden 64, 4 heads over 2 kv heads, Q8_0 matrices, and a byte-level
BPE vocabulary (the 256 byte tokens, a few merges, ChatML's special tokens). The command-line
tests run `kiln generate` and `kiln tokenize` on it; the unit tests write their own models.

    pip install gguf==0.19.0 && tests/model/make_tiny_model.py
"""
import os

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T

HERE = os.path.dirname(os.path.abspath(__file__))
MERGES = ["Ġ t", "h e", "Ġt he", "i n", "e r", "Ġ a", "o n", "Ġ s"]
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def byte_tokens():
    printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    out, n = {}, 256
    for b in range(256):
        if b in printable:
            out[b] = chr(b)
        else:
            out[b] = chr(n)
            n += 1
    return [out[b] for b in range(256)]


def main():
    tokens = byte_tokens() + [m.replace(" ", "") for m in MERGES] + SPECIALS
    types = [1] * (len(tokens) - len(SPECIALS)) + [3] * len(SPECIALS)
    hidden, heads, kv, d, ffn, layers = 64, 4, 2, 16, 96, 2
    w = gguf.GGUFWriter(os.path.join(HERE, "tiny-llama.gguf"), "llama")
    w.add_name("tiny-llama")
    w.add_block_count(layers)
    w.add_context_length(64)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(d)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(MERGES)
    w.add_bos_token_id(len(tokens) - 2)
    w.add_eos_token_id(len(tokens) - 1)
    w.add_add_bos_token(False)
    w.add_chat_template("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
                        "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}")
    rng = np.random.default_rng(14)

    def matrix(name, rows, cols, scale):
        x = (rng.uniform(-1, 1, (rows, cols)) * scale).astype(np.float32)
        q = gguf.quants.quantize(x, T.Q8_0)
        w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=T.Q8_0)

    def norm(name):
        w.add_tensor(name, (1 + 0.1 * rng.uniform(-1, 1, hidden)).astype(np.float32))

    matrix("token_embd.weight", len(tokens), hidden, 1.0)
    for l in range(layers):
        p = f"blk.{l}."
        norm(p + "attn_norm.weight")
        matrix(p + "attn_q.weight", heads * d, hidden, 0.125)
        matrix(p + "attn_k.weight", kv * d, hidden, 0.125)
        matrix(p + "attn_v.weight", kv * d, hidden, 0.125)
        matrix(p + "attn_output.weight", hidden, heads * d, 0.125)
        norm(p + "ffn_norm.weight")
        matrix(p + "ffn_gate.weight", ffn, hidden, 0.125)
        matrix(p + "ffn_up.weight", ffn, hidden, 0.125)
        matrix(p + "ffn_down.weight", hidden, ffn, 0.1)
    norm("output_norm.weight")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
