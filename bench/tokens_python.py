#!/usr/bin/env python3
"""Exact token counting against Python's tiktoken (Rust core), where it is installed (the lent
many-core machine has it; Debian and npm do not ship it): for each sample file and encoding,
`autonous tokens --encoding E FILE` timed as a whole process, less a run on an empty file (its
start-up: loading the rank files), against tiktoken's encode_ordinary on the same text, with the
same rank files and split patterns. Best of 3 each; prints one JSON line per sample and encoding.

Usage: python3 bench/tokens_python.py SAMPLE_DIR   (AUTONOUS_BIN, TOKENIZER_DATA_DIR as in the
worker's environment)"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import time

import tiktoken

BIN = os.environ.get("AUTONOUS_BIN", "build/cmd/autonous/autonous")
DATA = os.environ.get("TOKENIZER_DATA_DIR", "/usr/local/share/autonous/tokenizer")
SPLIT = {  # tiktoken's own patterns for the two encodings
    "o200k_base": "|".join([
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""", r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""", r"""\s*[\r\n]+""", r"""\s+(?!\S)""",
        r"""\s+"""]),
    "cl100k_base": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
}


def ours(encoding, path):
    best, out = 1e9, None
    for _ in range(3):
        start = time.perf_counter()
        out = subprocess.run([BIN, "tokens", "--encoding", encoding, path], check=True,
                             capture_output=True, text=True).stdout
        best = min(best, time.perf_counter() - start)
    return best, json.loads(out)["tokens"]


def main():
    samples = sys.argv[1]
    empty = os.path.join(tempfile.mkdtemp(), "empty")
    open(empty, "w").close()
    for encoding in ("o200k_base", "cl100k_base"):
        ranks = {}
        for line in open(os.path.join(DATA, encoding + ".tiktoken"), "rb"):
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
        enc = tiktoken.Encoding(name=encoding, pat_str=SPLIT[encoding], mergeable_ranks=ranks,
                                special_tokens={})
        startup, _ = ours(encoding, empty)
        for name in sorted(os.listdir(samples)):
            path = os.path.join(samples, name)
            text = open(path, encoding="utf-8", newline="").read()  # \r\n kept as the file has it
            mb = len(text.encode()) / 1e6
            best = 1e9
            for _ in range(3):
                start = time.perf_counter()
                n = len(enc.encode_ordinary(text))
                best = min(best, time.perf_counter() - start)
            secs, tokens = ours(encoding, path)
            ours_mb_s = mb / max(1e-6, secs - startup)
            print(json.dumps({"encoding": encoding, "sample": name, "mb": round(mb, 2),
                              "tokens_equal": n == tokens, "tiktoken_mb_s": round(mb / best, 1),
                              "ours_mb_s": round(ours_mb_s, 1),
                              "ratio": round(ours_mb_s / (mb / best), 2)}), flush=True)


if __name__ == "__main__":
    main()
