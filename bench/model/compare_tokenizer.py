#!/usr/bin/env python3
"""kiln's tokenizer against Hugging Face's `tokenizers` on the same GGUF vocabulary.

The peer is built from the file's tokens and merges with the pre-tokenizer SmolLM2's
tokenizer.json declares (Sequence[Digits(individual_digits), ByteLevel(use_regex)]) and its
special tokens, so what is compared is the algorithm: splitting, byte mapping, merge order,
special tokens. Texts: fixed samples (code, numbers, several scripts, odd spacing) and random
UTF-8 strings. Prints each disagreement and a summary; exits 1 if any.

    pip install gguf tokenizers
    bench/model/compare_tokenizer.py [--kiln build/bin/kiln] [--model FILE.gguf] [--random N]

The model defaults to what scripts/fetch-model prints.
"""
import argparse
import os
import random
import subprocess
import sys

import gguf
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SAMPLES = [
    "The capital of France is Paris.",
    "Hello world's 123  foo\n\nbar",
    "I'll don't  WE'RE they've",
    "def f(x):\n    return x ** 2  # square\n",
    "π ≈ 3.14159, e ≈ 2.71828; 1,000,000 users!",
    "héllo wörld — naïve café",
    "日本語のテキストと中文文本",
    "Привет, мир! Ελληνικά. עברית. العربية ٣٤",
    "emoji 😀👍🏽 and combining e\u0301",
    "   leading and trailing spaces   ",
    "tabs\tand\r\nnewlines\n\n\n",
    "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n",
    "a<|endoftext|>b",
]


def peer(path):
    r = gguf.GGUFReader(path)
    def field(name):
        f = r.fields[name]
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]
    tokens = field("tokenizer.ggml.tokens")
    merges = field("tokenizer.ggml.merges")
    f = r.fields["tokenizer.ggml.token_type"]
    types = [int(f.parts[i][0]) for i in f.data]
    vocab = {t: i for i, t in reversed(list(enumerate(tokens)))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[tuple(m.split(" ", 1)) for m in merges]))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([t for t, ty in zip(tokens, types) if ty in (3, 4)])
    return tok


def random_text(rng):
    picks = "aZ's l  \n\t7.!" + "\u00a0\u00e9\u0663\u3000\u65e5\U0001F600\u0301"
    out = []
    for _ in range(rng.randrange(1, 40)):
        if rng.random() < 0.25:
            c = rng.randrange(1, 0x110000)
            out.append(chr(c) if not 0xD800 <= c <= 0xDFFF else "x")
        else:
            out.append(rng.choice(picks))
    return "".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "bin", "kiln"))
    ap.add_argument("--model")
    ap.add_argument("--random", type=int, default=200)
    a = ap.parse_args()
    model = a.model or subprocess.check_output([os.path.join(ROOT, "scripts", "fetch-model")],
                                               text=True).strip()
    tok = peer(model)
    rng = random.Random(14)
    texts = SAMPLES + [random_text(rng) for _ in range(a.random)]
    bad = 0
    for text in texts:
        want = tok.encode(text).ids
        out = subprocess.run([a.kiln, "tokenize", "--model", model, "--", text],
                             capture_output=True, text=True, check=True).stdout.split()
        got = [int(x) for x in out]
        if got != want:
            bad += 1
            print(f"DIFFER {text!r}\n  kiln      {got}\n  tokenizers {want}")
    print(f"{len(texts) - bad} of {len(texts)} texts tokenize identically "
          f"({len(SAMPLES)} samples, {a.random} random)")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
