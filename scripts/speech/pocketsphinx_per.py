#!/usr/bin/env python3
"""pocketsphinx on the utterances of a manifest, scored as lt scores PER and
WER: a baseline for lt-asr on the same files, from a recognizer trained on
real speech (its en-us acoustic model). Phones are pocketsphinx's
phoneme-recognition recipe:

    pocketsphinx_batch -allphone en-us-phone.lm.bin -backtrace yes -beam 1e-20 -pbeam 1e-20 -lw 2.0

and words (--words) its full decoder with its general English trigram and
the CMU dictionary, as a user runs it:

    pocketsphinx_batch -lm en-us.lm.bin -dict cmudict-en-us.dict

    scripts/speech/pocketsphinx_per.py data/speech/valid.tsv [--words] [-j JOBS]

Needs pocketsphinx, pocketsphinx-en-us and sox (apt-get install). The
references are the manifest's phones column, or its words through the CMU
dictionary; silences and noises in pocketsphinx's output are dropped. PER
(or WER) overall and per speaker goes to stdout."""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_corpus import read_lexicon  # noqa: E402  (the CMU dictionary, stress dropped)

MODEL = "/usr/share/pocketsphinx/model/en-us"


def edit_distance(a, b):
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        prev, row[0] = row[:], i
        for j in range(1, len(b) + 1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
    return row[len(b)]


def read_manifest(path):
    base = os.path.dirname(os.path.abspath(path))
    try:
        f = open(path)
    except OSError as e:
        sys.exit(f"pocketsphinx_per.py: {path}: cannot open it ({e.strerror})")
    with f:
        header = f.readline().rstrip("\n").split("\t")
        if "path" not in header or ("phones" not in header and "words" not in header):
            sys.exit(f"pocketsphinx_per.py: {path}: a manifest needs a header with path and phones or words")
        col = {name: i for i, name in enumerate(header)}
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    lexicon = None
    utts = []
    for n, r in enumerate(rows, 2):
        if len(r) != len(header):
            sys.exit(f"pocketsphinx_per.py: {path}:{n}: {len(r)} fields, the header has {len(header)}")
        if "phones" in col:
            ref = r[col["phones"]].split()
        else:
            if lexicon is None:
                lexicon = read_lexicon()
            ref = [p for w in r[col["words"]].split() for p in lexicon.get(w.upper(), [])]
        audio = r[col["path"]]
        utts.append({"audio": audio if os.path.isabs(audio) else os.path.join(base, audio),
                     "speaker": r[col["speaker"]] if "speaker" in col else "", "ref": ref,
                     "words": r[col["words"]].upper().split() if "words" in col else None})
    return utts


PHONE_LOOP = ["-allphone", MODEL + "/en-us-phone.lm.bin", "-backtrace", "yes", "-beam", "1e-20", "-pbeam", "1e-20",
              "-lw", "2.0"]
WORD_DECODER = ["-lm", MODEL + "/en-us.lm.bin", "-dict", MODEL + "/cmudict-en-us.dict"]


def decode(part, wav_dir, tmp, search):
    ctl, hyp = os.path.join(tmp, f"ctl{part[0]}"), os.path.join(tmp, f"hyp{part[0]}")
    with open(ctl, "w") as f:
        f.writelines(f"{i}\n" for i in part[1])
    subprocess.run(["pocketsphinx_batch", "-adcin", "yes", "-cepdir", wav_dir, "-cepext", ".wav", "-ctl", ctl,
                    "-hmm", MODEL + "/en-us", "-hyp", hyp] + search,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = {}
    for line in open(hyp):
        m = re.match(r"(.*)\((\S+)\s+-?\d+\)\s*$", line)
        if m:
            out[m.group(2)] = m.group(1).split()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("manifest")
    ap.add_argument("--words", action="store_true", help="word error rate of the full word decoder")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count(), help="pocketsphinx processes")
    a = ap.parse_args()
    utts = read_manifest(a.manifest)
    if a.words and any(u["words"] is None for u in utts):
        sys.exit(f"pocketsphinx_per.py: {a.manifest}: --words needs a words column")
    for tool in ("sox", "pocketsphinx_batch"):
        if not shutil.which(tool):
            sys.exit(f"pocketsphinx_per.py: {tool} is not installed (apt-get install sox pocketsphinx pocketsphinx-en-us)")
    phones = {p for u in utts for p in u["ref"]}
    with tempfile.TemporaryDirectory() as tmp:
        wav_dir = os.path.join(tmp, "wav")
        os.makedirs(wav_dir)
        ids = [f"u{i:06d}" for i in range(len(utts))]
        for i, u in zip(ids, utts):
            r = subprocess.run(["sox", u["audio"], "-r", "16000", "-c", "1", "-b", "16", os.path.join(wav_dir, i + ".wav")],
                               capture_output=True, text=True)
            if r.returncode != 0:
                why = (r.stderr.strip().splitlines() or ["no message"])[-1]
                sys.exit(f"pocketsphinx_per.py: {u['audio']}: sox cannot read it ({why})")
        parts = [(k, ids[k::a.jobs]) for k in range(a.jobs) if ids[k::a.jobs]]
        hyps = {}
        with concurrent.futures.ThreadPoolExecutor(len(parts)) as pool:
            for h in pool.map(lambda p: decode(p, wav_dir, tmp, WORD_DECODER if a.words else PHONE_LOOP), parts):
                hyps.update(h)
    errors, total = {}, {}
    for i, u in zip(ids, utts):
        if a.words:  # fillers (<sil>, [NOISE], ...) dropped, alternates (WORD(2)) read as the word
            hyp = [re.sub(r"\(\d+\)$", "", w).upper() for w in hyps.get(i, []) if not re.match(r"[<\[]", w)]
            ref = u["words"]
        else:
            hyp, ref = [p for p in hyps.get(i, []) if p in phones], u["ref"]
        for key in ("all", u["speaker"]) if u["speaker"] else ("all",):
            errors[key] = errors.get(key, 0) + edit_distance(hyp, ref)
            total[key] = total.get(key, 0) + len(ref)
    what, unit = ("WER", "words") if a.words else ("PER", "phones")
    for key in ["all"] + sorted(k for k in total if k != "all"):
        print(f"{key}\t{what} {100 * errors[key] / max(total[key], 1):.2f}%\t{errors[key]} errors over {total[key]} {unit}")


if __name__ == "__main__":
    main()
