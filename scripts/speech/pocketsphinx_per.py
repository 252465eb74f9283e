#!/usr/bin/env python3
"""pocketsphinx on the utterances of a manifest, scored as lt scores PER and
WER: a baseline for lt-asr on the same files, from a recognizer trained on
real speech (its en-us acoustic model). Phones are pocketsphinx's
phoneme-recognition recipe:

    pocketsphinx_batch -allphone en-us-phone.lm.bin -backtrace yes -beam 1e-20 -pbeam 1e-20 -lw 2.0

and words (--words) its full decoder with its general English trigram and
the CMU dictionary, as a user runs it:

    pocketsphinx_batch -lm en-us.lm.bin -dict cmudict-en-us.dict

    scripts/speech/pocketsphinx_per.py data/speech/valid.tsv [--words] [-j JOBS] [--cache FILE]

Needs pocketsphinx, pocketsphinx-en-us and sox (apt-get install). The
references are the manifest's phones column, or its words through the CMU
dictionary; silences and noises in pocketsphinx's output are dropped. PER
(or WER) overall and per speaker goes to stdout. Utterances are decoded
CHUNK at a time; with --cache each chunk's hypotheses are appended to FILE
as it ends and those already there are not decoded again, so a long
measurement (the phone loop runs slower than real time) can stop and go on."""
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


CHUNK = 20


def decode(part, wav_dir, tmp, search):
    """Hypotheses {id: tokens} of the utterances part[1], named part[0]."""
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


def read_cache(path, mode):
    """{audio path: tokens} of the cache's lines of this mode (none if it is absent)."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for n, line in enumerate(f, 1):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 3 or fields[1] not in ("phones", "words"):
                sys.exit(f"pocketsphinx_per.py: {path}:{n}: not a cache line (path TAB phones|words TAB tokens)")
            if fields[1] == mode:
                out[fields[0]] = fields[2].split()
    return out


def append_cache(path, mode, hyps):
    with open(path, "a") as f:
        f.writelines(f"{audio}\t{mode}\t{' '.join(tokens)}\n" for audio, tokens in hyps.items())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("manifest")
    ap.add_argument("--words", action="store_true", help="word error rate of the full word decoder")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count(), help="pocketsphinx processes")
    ap.add_argument("--cache", help="hypotheses file (path TAB phones|words TAB tokens): read, and appended to")
    a = ap.parse_args()
    utts = read_manifest(a.manifest)
    if a.words and any(u["words"] is None for u in utts):
        sys.exit(f"pocketsphinx_per.py: {a.manifest}: --words needs a words column")
    for tool in ("sox", "pocketsphinx_batch"):
        if not shutil.which(tool):
            sys.exit(f"pocketsphinx_per.py: {tool} is not installed (apt-get install sox pocketsphinx pocketsphinx-en-us)")
    phones = {p for u in utts for p in u["ref"]}
    mode = "words" if a.words else "phones"
    hyps = read_cache(a.cache, mode) if a.cache else {}
    # Each audio file once, unless the cache has it; pocketsphinx reads them as u000000.wav, ...
    undecoded = dict.fromkeys(u["audio"] for u in utts if u["audio"] not in hyps)
    audio = {f"u{k:06d}": path for k, path in enumerate(undecoded)}
    with tempfile.TemporaryDirectory() as tmp:
        wav_dir = os.path.join(tmp, "wav")
        os.makedirs(wav_dir)
        for i, path in audio.items():
            r = subprocess.run(["sox", path, "-r", "16000", "-c", "1", "-b", "16", os.path.join(wav_dir, i + ".wav")],
                               capture_output=True, text=True)
            if r.returncode != 0:
                why = (r.stderr.strip().splitlines() or ["no message"])[-1]
                sys.exit(f"pocketsphinx_per.py: {path}: sox cannot read it ({why})")
        ids = list(audio)
        parts = [(k, ids[k:k + CHUNK]) for k in range(0, len(ids), CHUNK)]
        search = WORD_DECODER if a.words else PHONE_LOOP
        with concurrent.futures.ThreadPoolExecutor(max(a.jobs, 1)) as pool:
            running = [pool.submit(decode, p, wav_dir, tmp, search) for p in parts]
            for done, future in enumerate(concurrent.futures.as_completed(running), 1):
                chunk = {audio[i]: tokens for i, tokens in future.result().items()}
                hyps.update(chunk)
                if a.cache:
                    append_cache(a.cache, mode, chunk)
                print(f"pocketsphinx_per.py: {done}/{len(parts)} chunks of {CHUNK} decoded", file=sys.stderr)
    errors, total = {}, {}
    for u in utts:
        if a.words:  # fillers (<sil>, [NOISE], ...) dropped, alternates (WORD(2)) read as the word
            hyp = [re.sub(r"\(\d+\)$", "", w).upper() for w in hyps.get(u["audio"], []) if not re.match(r"[<\[]", w)]
            ref = u["words"]
        else:
            hyp, ref = [p for p in hyps.get(u["audio"], []) if p in phones], u["ref"]
        for key in ("all", u["speaker"]) if u["speaker"] else ("all",):
            errors[key] = errors.get(key, 0) + edit_distance(hyp, ref)
            total[key] = total.get(key, 0) + len(ref)
    what, unit = ("WER", "words") if a.words else ("PER", "phones")
    for key in ["all"] + sorted(k for k in total if k != "all"):
        print(f"{key}\t{what} {100 * errors[key] / max(total[key], 1):.2f}%\t{errors[key]} errors over {total[key]} {unit}")


if __name__ == "__main__":
    main()
