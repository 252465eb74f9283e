#!/usr/bin/env python3
"""Writes a CMU Sphinx binary trie language model (pocketsphinx's
`en-us.lm.bin`, "Trie Language Model") as an ARPA file (plain, or gzip for a
name ending in .gz). Debian's `sphinx_lm_convert` aborts on that model
("Assertion `raw_ngram_idx == base->n_counts[i - 1]' failed"): its header
counts a few more bigrams than its trie holds (cmusphinx/pocketsphinx#502),
so this reads the trie itself. Needs NumPy.

  scripts/speech/sphinx_lm_to_arpa.py /usr/share/pocketsphinx/model/en-us/en-us.lm.bin en-us.arpa.gz

The file, as sphinxbase's ngram_model_trie.c, lm_trie.c and lm_trie_quant.c
lay it out (little-endian):
  "Trie Language Model", uint8 order N, uint32 counts[N];
  int32 quantizer tag, then float tables of 2^16 entries: per middle order
  its probabilities and its back-offs, then the longest order's probabilities;
  counts[0] + 1 unigrams {float prob, float backoff, uint32 next} (the last
  one only ends the previous one's range);
  the middle orders' and the longest order's entries, bit-packed, least
  significant bit first: the history word (ceil(log2(counts[0] + 1)) bits),
  then for a middle entry 16 bits of back-off code, 16 of probability code
  and the index of its first child (the next entry's index ends the range),
  for a longest entry 16 bits of probability code;
  int32 size and the NUL-separated words.
The trie is reversed: unigram w's children are the words before it, so the
path w <- h1 <- h2 is the trigram "h2 h1 w". Every value is a log in base
1.0001 (sphinxbase's default log base, with which these files are built).
Entries sphinxbase inserted to reach a longer n-gram whose shorter one was
pruned carry their backed-off probability and a back-off of 0, which changes
no score; they are written like the others.
"""
import argparse
import gzip
import math
import struct
import sys

import numpy as np

HEADER = b"Trie Language Model"
LOG10_BASE = math.log10(1.0001)


def fail(message):
    sys.exit(f"sphinx_lm_to_arpa.py: {message}")


def required_bits(max_value):
    return max_value.bit_length()


def read_bits(mem, bit_offsets, width):
    """The width-bit fields (width <= 57) at each bit offset of mem, LSB first."""
    byte = bit_offsets >> 3
    word = np.zeros(len(bit_offsets), dtype=np.uint64)
    for k in range(8):
        word |= mem[byte + k].astype(np.uint64) << np.uint64(8 * k)
    return (word >> (bit_offsets & 7).astype(np.uint64)) & np.uint64((1 << width) - 1)


def section_bytes(entries, total_bits):
    return ((1 + entries) * total_bits + 7) // 8 + 8


def read_model(path):
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(HEADER):
        fail(f"{path}: not a Sphinx trie language model (no '{HEADER.decode()}' header)")
    at = len(HEADER)
    order = data[at]
    at += 1
    if not 2 <= order <= 6:
        fail(f"{path}: order {order} is not 2 to 6")
    counts = list(struct.unpack_from(f"<{order}I", data, at))
    at += 4 * order
    at += 4  # quantizer tag
    tables = []
    for _ in range(order - 2):
        prob = np.frombuffer(data, "<f4", 1 << 16, at)
        bo = np.frombuffer(data, "<f4", 1 << 16, at + 4 * (1 << 16))
        tables.append((prob, bo))
        at += 8 * (1 << 16)
    longest_prob = np.frombuffer(data, "<f4", 1 << 16, at)
    at += 4 * (1 << 16)
    unigrams = np.frombuffer(data, np.dtype([("prob", "<f4"), ("bo", "<f4"), ("next", "<u4")]), counts[0] + 1, at)
    at += 12 * (counts[0] + 1)
    word_bits = required_bits(counts[0])
    sections = []
    for n in range(2, order):
        next_bits = required_bits(counts[n])
        total = word_bits + 32 + next_bits
        size = section_bytes(counts[n - 1], total)
        sections.append((np.frombuffer(data, np.uint8, size, at), total, next_bits))
        at += size
    total = word_bits + 16
    size = section_bytes(counts[order - 1], total)
    sections.append((np.frombuffer(data, np.uint8, size, at), total, 0))
    at += size
    if at + 4 > len(data):
        fail(f"{path}: ends inside its n-gram sections")
    (size,) = struct.unpack_from("<i", data, at)
    at += 4
    words = data[at:at + size].split(b"\0")[:-1]
    if len(words) != counts[0]:
        fail(f"{path}: {len(words)} word strings for {counts[0]} unigrams")
    return order, counts, tables, longest_prob, unigrams, word_bits, sections, [w.decode("utf-8") for w in words]


def ngrams(model):
    """Per order: (words [n, order] as indices, oldest first; log10 prob; log10 back-off or None)."""
    order, counts, tables, longest_prob, unigrams, word_bits, sections, words = model
    out = [(np.arange(counts[0])[:, None], unigrams["prob"][:-1] * LOG10_BASE, unigrams["bo"][:-1] * LOG10_BASE)]
    # Parents of this order's entries (their suffixes, newest word last) and each parent's child range.
    paths = np.arange(counts[0])[:, None]
    begin = unigrams["next"][:-1].astype(np.int64)
    end = unigrams["next"][1:].astype(np.int64)
    for n in range(2, order + 1):
        mem, total, next_bits = sections[n - 2]
        lengths = end - begin
        if (lengths < 0).any():
            fail(f"order {n}: a child range ends before it begins")
        parent = np.repeat(np.arange(len(paths)), lengths)
        index = np.arange(lengths.sum()) + np.repeat(begin - np.cumsum(lengths) + lengths, lengths)
        bits = index * total
        history = read_bits(mem, bits, word_bits).astype(np.int64)
        path = np.concatenate([history[:, None], paths[parent]], axis=1)
        if n < order:
            prob_table, bo_table = tables[n - 2]
            code = read_bits(mem, bits + word_bits, 32)
            prob = prob_table[(code >> np.uint64(16)).astype(np.int64)] * LOG10_BASE
            bo = bo_table[(code & np.uint64(0xFFFF)).astype(np.int64)] * LOG10_BASE
            first = read_bits(mem, bits + word_bits + 32, next_bits).astype(np.int64)
            after = read_bits(mem, bits + total + word_bits + 32, next_bits).astype(np.int64)
            out.append((path, prob, bo))
            paths, begin, end = path, first, after
        else:
            prob = longest_prob[read_bits(mem, bits + word_bits, 16).astype(np.int64)] * LOG10_BASE
            out.append((path, prob, None))
    return out


def write_arpa(model, grams, path):
    words = model[7]
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        f.write("\\data\\\n")
        for n, (w, _, _) in enumerate(grams, 1):
            f.write(f"ngram {n}={len(w)}\n")
        for n, (w, prob, bo) in enumerate(grams, 1):
            f.write(f"\n\\{n}-grams:\n")
            order = np.lexsort(w.T[::-1])
            for i in order:
                text = " ".join(words[k] for k in w[i])
                if bo is None:
                    f.write(f"{prob[i]:.6f}\t{text}\n")
                else:
                    f.write(f"{prob[i]:.6f}\t{text}\t{bo[i]:.6f}\n")
        f.write("\n\\end\\\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model")
    p.add_argument("output")
    a = p.parse_args()
    model = read_model(a.model)
    grams = ngrams(model)
    print(f"{a.model}: order {model[0]}, header counts {model[1]}, trie "
          f"{[len(g[0]) for g in grams]}", file=sys.stderr)
    write_arpa(model, grams, a.output)


if __name__ == "__main__":
    main()
