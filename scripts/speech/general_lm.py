#!/usr/bin/env python3
"""lt-asr's default word model (weights/speech-words.arpa.gz; docs/speech.md,
"Words"): pocketsphinx-en-us's general English trigram (en-us.lm.bin, read
as scripts/speech/sphinx_lm_to_arpa.py reads it) restricted to its most
likely words that the CMU dictionary pronounces, renormalised, and pruned to
a shippable size. Needs NumPy.

  scripts/speech/general_lm.py -o weights/speech-words.arpa.gz [--words 20000] [--prune 1e-7]
                               [--eval data/speech/real-all.tsv ...]

Restriction keeps every n-gram whose words are all in the vocabulary (with
<s> and </s>; <unk> goes, so lt-asr's word search only tries these words)
and turns each history's distribution into the original one conditioned on
the next word being in the vocabulary: explicit probabilities are divided by
the history's mass on the vocabulary, back-offs are recomputed so that every
history sums to 1 again.

Pruning removes an explicit n-gram (h, w) when its weighted difference
(Seymore and Rosenfeld 1996)

    P(h) P(w | h) [log P(w | h) - log(bo(h) P(w | h'))]

is below --prune: the log-likelihood a text drawn from the model loses per
word by backing off instead. Trigrams go first, then bigrams that are no
trigram's history; the back-offs are then recomputed from what is kept, so
the model stays normalised. P(h) is the chain of unigram and bigram
probabilities, with P(<s>) = P(</s>) (a sentence has one of each).
"""
import argparse
import gzip
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sphinx_lm_to_arpa import ngrams, read_model  # noqa: E402

MODEL = "/usr/share/pocketsphinx/model/en-us/en-us.lm.bin"
DICTIONARY = "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict"


def fail(message):
    print(f"general_lm: {message}", file=sys.stderr)
    sys.exit(1)


def dictionary_words(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return {line.split()[0].upper() for line in f if line.strip() and not line.startswith(";;;")
                    and "(" not in line.split()[0]}
    except OSError as e:
        fail(f"{path}: cannot read it ({e.strerror})")


def keys(ids, size):
    """One int64 per n-gram (ids oldest first), for sorted lookups."""
    k = np.zeros(len(ids), dtype=np.int64)
    for j in range(ids.shape[1]):
        k = k * size + ids[:, j]
    return k


def lookup(table_keys, query):
    """Index of each query key in the sorted table_keys, or -1."""
    at = np.searchsorted(table_keys, query)
    at = np.minimum(at, len(table_keys) - 1)
    return np.where(table_keys[at] == query, at, -1)


class Model:
    """A back-off trigram in natural probabilities: uni[w], bo1[w];
    bi (ids [n, 2] sorted, p, bo); tri (ids [n, 3] sorted, p)."""

    def __init__(self, words, uni, bo1, bi_ids, bi_p, bi_bo, tri_ids, tri_p):
        self.words, self.size = words, len(words)
        self.uni, self.bo1 = uni, bo1
        order = np.argsort(keys(bi_ids, self.size), kind="stable")
        self.bi_ids, self.bi_p, self.bi_bo = bi_ids[order], bi_p[order], bi_bo[order]
        self.bi_keys = keys(self.bi_ids, self.size)
        order = np.argsort(keys(tri_ids, self.size), kind="stable")
        self.tri_ids, self.tri_p = tri_ids[order], tri_p[order]
        self.tri_keys = keys(self.tri_ids, self.size)

    def bigram(self, h1, w):
        """P(w | h1) with back-off, vectorised."""
        at = lookup(self.bi_keys, h1 * self.size + w)
        return np.where(at >= 0, self.bi_p[np.maximum(at, 0)], self.bo1[h1] * self.uni[w])

    def log10_prob(self, h2, h1, w):
        """log10 P(w | h2 h1) of one trigram (h2, h1 may be -1: shorter history)."""
        if h2 >= 0 and h1 >= 0:
            at = lookup(self.tri_keys, np.array([(h2 * self.size + h1) * self.size + w]))[0]
            if at >= 0:
                return np.log10(self.tri_p[at])
            at = lookup(self.bi_keys, np.array([h2 * self.size + h1]))[0]
            bo = self.bi_bo[at] if at >= 0 else 1.0
            return np.log10(bo) + self.log10_prob(-1, h1, w)
        if h1 >= 0:
            return np.log10(self.bigram(np.array([h1]), np.array([w]))[0])
        return np.log10(self.uni[w])


def read_sphinx(path):
    model = read_model(path)
    grams = ngrams(model)
    if len(grams) != 3:
        fail(f"{path}: order {len(grams)}, this script restricts trigrams")
    (_, p1, b1), (ids2, p2, b2), (ids3, p3, _) = grams
    words = [w.upper() if not w.startswith("<") else w.lower() for w in model[7]]
    return Model(words, 10.0 ** p1, 10.0 ** b1, ids2, 10.0 ** p2, 10.0 ** b2, ids3, 10.0 ** p3)


def group_sums(group, values, n):
    return np.bincount(group, weights=values, minlength=n)


def backoffs(explicit_sum, lower_sum):
    """bo(h) = (1 - sum of h's explicit P(w|h)) / (1 - the lower order's P of the same words)."""
    return np.maximum(1.0 - explicit_sum, 1e-12) / np.maximum(1.0 - lower_sum, 1e-12)


def restrict(m, vocabulary):
    """The model conditioned on the next word being in `vocabulary` (a bool mask; <s> predicts nothing)."""
    bos = m.words.index("<s>")
    target = vocabulary.copy()
    target[bos] = False
    uni = np.where(target, m.uni, 0.0)
    uni /= uni.sum()
    uni[bos] = m.uni[bos]  # never predicted; kept for the ARPA file
    bi_keep = vocabulary[m.bi_ids].all(axis=1)
    bi_ids, bi_p, bi_bo = m.bi_ids[bi_keep], m.bi_p[bi_keep], m.bi_bo[bi_keep]
    tri_keep = vocabulary[m.tri_ids].all(axis=1)
    tri_ids, tri_p = m.tri_ids[tri_keep], m.tri_p[tri_keep]
    # Mass of each unigram history on the vocabulary: explicit + back-off to the rest.
    h1 = bi_ids[:, 0]
    explicit = group_sums(h1, bi_p, m.size)
    rest = m.uni[target].sum() - group_sums(h1, m.uni[bi_ids[:, 1]], m.size)
    mass1 = explicit + m.bo1 * rest
    new_bi_p = bi_p / mass1[h1]
    # Mass of each bigram history on the vocabulary, backing off to the original bigram.
    ctx = lookup(keys(bi_ids, m.size), keys(tri_ids[:, :2], m.size))
    if (ctx < 0).any():
        fail("a trigram without its history bigram")
    explicit = group_sums(ctx, tri_p, len(bi_ids))
    lower = group_sums(ctx, m.bigram(tri_ids[:, 1], tri_ids[:, 2]), len(bi_ids))
    mass2 = explicit + bi_bo * (mass1[bi_ids[:, 1]] - lower)
    r = Model(m.words, uni, np.ones(m.size), bi_ids, new_bi_p, np.ones(len(bi_ids)), tri_ids, tri_p / mass2[ctx])
    return renormalise(r)


def renormalise(m):
    """Back-offs from the explicit probabilities kept, so every history sums to 1."""
    h1 = m.bi_ids[:, 0]
    m.bo1 = backoffs(group_sums(h1, m.bi_p, m.size), group_sums(h1, m.uni[m.bi_ids[:, 1]], m.size))
    ctx = lookup(m.bi_keys, keys(m.tri_ids[:, :2], m.size))
    explicit = group_sums(ctx, m.tri_p, len(m.bi_ids))
    lower = group_sums(ctx, m.bigram(m.tri_ids[:, 1], m.tri_ids[:, 2]), len(m.bi_ids))
    m.bi_bo = backoffs(explicit, lower)
    return m


def prune(m, threshold):
    bos, eos = m.words.index("<s>"), m.words.index("</s>")
    p_hist = m.uni.copy()
    p_hist[bos] = m.uni[eos]
    # Trigrams: history probability P(h2) P(h1 | h2).
    ctx = lookup(m.bi_keys, keys(m.tri_ids[:, :2], m.size))
    p_ctx = p_hist[m.bi_ids[:, 0]] * m.bi_p
    backed = m.bi_bo[ctx] * m.bigram(m.tri_ids[:, 1], m.tri_ids[:, 2])
    loss = p_ctx[ctx] * m.tri_p * (np.log(m.tri_p) - np.log(backed))
    tri_keep = loss >= threshold
    # Bigrams that no kept trigram needs as its history.
    needed = np.zeros(len(m.bi_ids), dtype=bool)
    needed[ctx[tri_keep]] = True
    h1, w = m.bi_ids[:, 0], m.bi_ids[:, 1]
    loss = p_hist[h1] * m.bi_p * (np.log(m.bi_p) - np.log(m.bo1[h1] * m.uni[w]))
    bi_keep = needed | (loss >= threshold)
    r = Model(m.words, m.uni, m.bo1, m.bi_ids[bi_keep], m.bi_p[bi_keep], m.bi_bo[bi_keep],
              m.tri_ids[tri_keep], m.tri_p[tri_keep])
    return renormalise(r)


def write_arpa(m, vocabulary, path):
    unigrams = [i for i in np.flatnonzero(vocabulary)]
    unigrams.sort(key=lambda i: m.words[i])
    lines = ["\\data\\", f"ngram 1={len(unigrams)}", f"ngram 2={len(m.bi_ids)}", f"ngram 3={len(m.tri_ids)}", "",
             "\\1-grams:"]
    bos = m.words.index("<s>")
    for i in unigrams:
        p = -99.0 if i == bos else np.log10(m.uni[i])
        lines.append(f"{p:.7f}\t{m.words[i]}\t{np.log10(m.bo1[i]):.7f}")
    for name, ids, p, bo in (("2", m.bi_ids, m.bi_p, m.bi_bo), ("3", m.tri_ids, m.tri_p, None)):
        lines += ["", f"\\{name}-grams:"]
        text = [" ".join(m.words[k] for k in row) for row in ids]
        lp = np.log10(p)
        for i in sorted(range(len(ids)), key=text.__getitem__):
            line = f"{lp[i]:.7f}\t{text[i]}"
            lines.append(line + f"\t{np.log10(bo[i]):.7f}" if bo is not None else line)
    lines += ["", "\\end\\", ""]
    with open(path + ".part", "wb") as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0) if path.endswith(".gz") else f as out:
            out.write("\n".join(lines).encode("utf-8"))
    os.replace(path + ".part", path)


def read_transcripts(path):
    """Sentences of a manifest's words column or of a text file, upper-case words."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        fail(f"{path}: cannot read it ({e.strerror})")
    if path.endswith(".tsv"):
        header = lines[0].split("\t")
        if "words" not in header:
            fail(f"{path}: no words column")
        lines = [row.split("\t")[header.index("words")] for row in lines[1:] if row.strip()]
    return [re.sub(r"[^A-Za-z' ]+", " ", s).upper().split() for s in lines if s.strip()]


def perplexity(m, sentences):
    """10^(-mean log10 P) over the words and </s> of sentences of known words."""
    index = {w: i for i, w in enumerate(m.words)}
    total, tokens = 0.0, 0
    for s in sentences:
        ids = [index["<s>"]] + [index[w] for w in s] + [index["</s>"]]
        for i in range(1, len(ids)):
            total += m.log10_prob(ids[i - 2] if i >= 2 else -1, ids[i - 1], ids[i])
            tokens += 1
    return 10 ** (-total / max(tokens, 1)), tokens


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", required=True, help="the ARPA file; gzip-compressed when it ends in .gz")
    ap.add_argument("--model", default=MODEL, help="the Sphinx binary trigram to start from")
    ap.add_argument("--dictionary", default=DICTIONARY, help="only words it pronounces are kept")
    ap.add_argument("--words", type=int, default=20000, help="vocabulary: this many of the most likely words")
    ap.add_argument("--prune", type=float, default=1e-7, help="weighted-difference threshold (0: keep every n-gram)")
    ap.add_argument("--eval", action="append", default=[], metavar="TEXT",
                    help="manifest (words column) or text file: print perplexity and out-of-vocabulary rate")
    a = ap.parse_args()
    m = read_sphinx(a.model)
    pronounced = dictionary_words(a.dictionary)
    special = np.array([w in ("<s>", "</s>") for w in m.words])
    candidates = np.array([w in pronounced for w in m.words]) & ~special
    if candidates.sum() == 0:
        fail(f"{a.model}: no word of it is in {a.dictionary}")
    order = np.argsort(-np.where(candidates, m.uni, -1.0), kind="stable")[:min(a.words, int(candidates.sum()))]
    vocabulary = special.copy()
    vocabulary[order] = True
    r = restrict(m, vocabulary)
    if a.prune > 0:
        r = prune(r, a.prune)
    write_arpa(r, vocabulary, a.output)
    print(f"general_lm: {a.output}: {int(vocabulary.sum())} words with <s> and </s>, {len(r.bi_ids)} bigrams, "
          f"{len(r.tri_ids)} trigrams, {os.path.getsize(a.output)} bytes", file=sys.stderr)
    known = {w for i, w in enumerate(m.words) if vocabulary[i]}
    for path in a.eval:
        sentences = read_transcripts(path)
        n = sum(len(s) for s in sentences)
        oov = sum(w not in known for s in sentences for w in s)
        covered = [s for s in sentences if all(w in known for w in s)]
        ppl, tokens = perplexity(r, covered)
        print(f"general_lm: {path}: out of vocabulary {oov} of {n} words ({100 * oov / max(n, 1):.2f}%); "
              f"perplexity {ppl:.1f} over the {len(covered)} of {len(sentences)} sentences with no unknown word "
              f"({tokens} tokens with </s>; the unrestricted, unpruned model: {perplexity(m, covered)[0]:.1f})",
              file=sys.stderr)


if __name__ == "__main__":
    main()
