#!/usr/bin/env python3
"""Builds a word n-gram language model in ARPA format (docs/speech.md, "Words")
from transcripts: the `words` column of lt manifests (*.tsv; or `phones` with
--column phones, a phone model) or text files of one sentence per line. Python's standard library only; the same inputs give
the same bytes.

  scripts/speech/make_lm.py data/speech/train.tsv -o words.arpa.gz [--order 2] [--lexicon DICT]
  scripts/speech/make_lm.py data/speech/train.tsv --column phones --order 4 -o phones.arpa.gz

Smoothing: interpolated Kneser-Ney with one discount per order (Ney's
D = n1 / (n1 + 2 n2) over that order's counts of counts), written in back-off
form. For a history h with counts a(h w) (raw counts at the highest order,
continuation counts - the number of different words seen before - below it;
raw counts for n-grams that start with <s>, which have none):

  P(w | h) = max(a(h w) - D, 0) / a(h .) + bo(h) P(w | h less its first word)
  bo(h)    = (D * n-grams kept after h + counts of those pruned) / a(h .)

and at the bottom the unigrams interpolated with the uniform distribution
over the vocabulary. The ARPA file stores P for the n-grams kept and bo for
their histories, so a reader's back-off gives exactly these numbers: every
history's distribution over the vocabulary, </s> and <unk> sums to 1 (up to
the 7 decimals written). <s> is never predicted (log10 -99, as KenLM writes).
Words outside the vocabulary (--lexicon, --min-count) are counted as <unk>.
"""
import argparse
import gzip
import math
import sys
from collections import Counter, defaultdict

BOS, EOS, UNK = "<s>", "</s>", "<unk>"


def fail(message):
    print(f"make_lm: {message}", file=sys.stderr)
    sys.exit(1)


def read_sentences(path, column="words"):
    """Upper-case word lists: a manifest's column, or one sentence per line."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        fail(f"{path}: cannot read: {e}")
    if not path.endswith(".tsv"):
        return [line.upper().split() for line in lines if line.strip()]
    if not lines:
        fail(f"{path}: empty manifest (expected a header line naming its columns)")
    header = lines[0].split("\t")
    if column not in header:
        fail(f"{path}:1: no '{column}' column in the header")
    column = header.index(column)
    out = []
    for n, line in enumerate(lines[1:], start=2):
        if not line:
            continue
        fields = line.split("\t")
        if len(fields) != len(header):
            fail(f"{path}:{n}: {len(fields)} fields, the header has {len(header)}")
        out.append(fields[column].upper().split())
    return out


def read_lexicon_words(path):
    words = set()
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            fields = line.split()
            if fields and not line.startswith(";;;"):
                words.add(fields[0].split("(")[0].upper())
    return words


def count_ngrams(sentences, order):
    """raw[n][g]: occurrences of each n-gram g (a tuple) that predicts a word (not <s>)."""
    raw = [None] + [Counter() for _ in range(order)]
    for words in sentences:
        padded = [BOS] + words + [EOS]
        for i in range(1, len(padded)):
            for n in range(1, order + 1):
                if i - n + 1 < 0:
                    break
                raw[n][tuple(padded[i - n + 1:i + 1])] += 1
    return raw


def kneser_ney_counts(raw, order):
    """a[n][g]: continuation counts below the highest order, raw counts at it and after <s>."""
    a = [None] * (order + 1)
    a[order] = raw[order]
    for n in range(order - 1, 0, -1):
        left = Counter(g[1:] for g in raw[n + 1])  # distinct words seen before each n-gram
        a[n] = Counter({g: (c if g[0] == BOS else left[g]) for g, c in raw[n].items()})
    return a


def discount(counts):
    of = Counter(counts.values())
    n1, n2 = of[1], of[2]
    d = n1 / (n1 + 2 * n2) if n1 and n2 else 0.5
    return min(max(d, 0.1), 0.9)  # some mass for unseen words, some for seen ones


def build(sentences, order, prune):
    """(vocabulary, {n: {g: log10 P}}, {g: log10 bo}) for the ARPA file."""
    raw = count_ngrams(sentences, order)
    a = kneser_ney_counts(raw, order)
    vocabulary = sorted({g[0] for g in raw[1]} | {EOS, UNK})
    logp = {}
    # Unigrams: discounted counts interpolated with the uniform distribution.
    d = discount(a[1])
    total = sum(a[1].values())
    gamma = d * len(a[1]) / total
    prob = {(w,): max(a[1][(w,)] - d, 0) / total + gamma / len(vocabulary) for w in vocabulary}
    logp[1] = {g: math.log10(p) for g, p in prob.items()}
    logp[1][(BOS,)] = -99.0
    bo = {}  # history -> back-off weight (probability, not log)

    def lower(h, w):
        """P(w | h) as a reader's back-off computes it from what is kept so far."""
        g = h + (w,)
        if g in prob:  # always at the unigrams
            return prob[g]
        return bo.get(h, 1.0) * lower(h[1:], w)

    for n in range(2, order + 1):
        d = discount(a[n])
        by_history = defaultdict(list)
        for g, c in a[n].items():
            by_history[g[:-1]].append((g, c, raw[n][g] >= prune))
        new_prob = {}
        for h in sorted(by_history):
            entries = by_history[h]
            total = sum(c for _, c, _ in entries)
            kept = [(g, c) for g, c, keep in entries if keep]
            pruned = sum(c for _, c, keep in entries if not keep)
            bo[h] = (d * len(kept) + pruned) / total
            for g, c in kept:
                new_prob[g] = (c - d) / total + bo[h] * lower(h[1:], g[-1])
        prob.update(new_prob)
        logp[n] = {g: math.log10(p) for g, p in new_prob.items()}
    backoff = {h: math.log10(b) for h, b in bo.items()}
    return vocabulary, logp, backoff


def arpa_text(order, logp, backoff):
    lines = ["\\data\\"]
    for n in range(1, order + 1):
        lines.append(f"ngram {n}={len(logp[n])}")
    for n in range(1, order + 1):
        lines += ["", f"\\{n}-grams:"]
        for g in sorted(logp[n]):
            line = f"{logp[n][g]:.7f}\t{' '.join(g)}"
            if n < order:
                line += f"\t{backoff.get(g, 0.0):.7f}"
            lines.append(line)
    lines += ["", "\\end\\", ""]
    return "\n".join(lines)


def perplexity(logp, backoff, order, sentences):
    """10^(-mean log10 P) over the words and </s> of held-out sentences (already mapped to <unk>)."""
    def log10_prob(h, w):
        g = h + (w,)
        if g in logp[len(g)]:
            return logp[len(g)][g]
        return backoff.get(h, 0.0) + log10_prob(h[1:], w)

    total, tokens = 0.0, 0
    for words in sentences:
        padded = [BOS] + words + [EOS]
        for i in range(1, len(padded)):
            total += log10_prob(tuple(padded[max(0, i - order + 1):i]), padded[i])
            tokens += 1
    return 10 ** (-total / tokens), tokens


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", help="manifests (*.tsv, their --column) or text files, a sentence a line")
    ap.add_argument("--column", default="words", choices=["words", "phones"],
                    help="the manifests' column to read (default words; phones: a phone n-gram model for lt-asr --phone-lm)")
    ap.add_argument("-o", "--output", required=True, help="the ARPA file; gzip-compressed when it ends in .gz")
    ap.add_argument("--order", type=int, default=2, help="n-gram order (default 2)")
    ap.add_argument("--lexicon", help="only words of this CMU-format dictionary are in the vocabulary")
    ap.add_argument("--min-count", type=int, default=1, help="words seen fewer times are <unk> (default 1)")
    ap.add_argument("--prune", type=int, default=1,
                    help="n-grams of order 2 and up seen fewer times are left to back-off (default 1: none)")
    ap.add_argument("--eval", metavar="TEXT", help="held-out transcripts (as the inputs): print the model's perplexity on them")
    args = ap.parse_args()
    if args.order < 1 or args.min_count < 1 or args.prune < 1:
        fail("--order, --min-count and --prune must be at least 1")
    sentences = [s for path in args.inputs for s in read_sentences(path, args.column)]
    if not sentences:
        fail("no sentences in " + ", ".join(args.inputs))
    allowed = read_lexicon_words(args.lexicon) if args.lexicon else None
    seen = Counter(w for s in sentences for w in s)

    def in_vocabulary(w):
        return seen[w] >= args.min_count and (allowed is None or w in allowed) and w not in ("<S>", "</S>", "<UNK>")

    sentences = [[w if in_vocabulary(w) else UNK for w in s] for s in sentences]
    vocabulary, logp, backoff = build(sentences, args.order, args.prune)
    text = arpa_text(args.order, logp, backoff).encode("utf-8")
    with open(args.output, "wb") as f:
        if args.output.endswith(".gz"):
            with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0) as z:
                z.write(text)
        else:
            f.write(text)
    counts = ", ".join(f"{len(logp[n])} {n}-grams" for n in range(1, args.order + 1))
    print(f"make_lm: {args.output}: {len(sentences)} sentences, {len(vocabulary)} words with </s> and <unk>; {counts}",
          file=sys.stderr)
    if args.eval:
        held_out = [[w if w in vocabulary else UNK for w in s] for s in read_sentences(args.eval, args.column)]
        ppl, tokens = perplexity(logp, backoff, args.order, held_out)
        unknown = sum(w == UNK for s in held_out for w in s)
        print(f"make_lm: {args.eval}: perplexity {ppl:.2f} over {tokens} tokens with </s>, {unknown} of them <unk>",
              file=sys.stderr)


if __name__ == "__main__":
    main()
