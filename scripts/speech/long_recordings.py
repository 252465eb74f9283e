#!/usr/bin/env python3
"""Joins the utterances of a manifest into long recordings, one speaker's
utterances after another, and writes their manifest: the words and phones of
each long recording are those of its utterances in order. It measures what
a stream's length does to recognition (docs/speech.md, "Long recordings").

    scripts/speech/long_recordings.py $D/valid.tsv --per 16 --out /tmp/long
    build/bin/lt-asr --ref /tmp/long/long.tsv $(tail -n +2 /tmp/long/long.tsv | cut -f1)

Needs sox (scripts/prepare-speech.sh installs it). Audio paths in the
manifest are relative to its folder, or absolute."""
import argparse
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("manifest", help="TSV with the columns path, duration_s, speaker, words, phones")
    ap.add_argument("--per", type=int, default=16, help="utterances per long recording")
    ap.add_argument("--out", required=True, help="folder for the recordings (WAV, 16 kHz) and long.tsv")
    a = ap.parse_args()
    if a.per < 1:
        sys.exit("long_recordings.py: --per must be at least 1")
    try:
        with open(a.manifest, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        sys.exit(f"long_recordings.py: {a.manifest}: cannot read it ({e.strerror})")
    head = lines[0].split("\t") if lines else []
    need = ["path", "duration_s", "speaker", "words", "phones"]
    if any(c not in head for c in need):
        sys.exit(f"long_recordings.py: {a.manifest}: the header lacks one of the columns {', '.join(need)}")
    col = {c: head.index(c) for c in need}
    base = os.path.dirname(os.path.abspath(a.manifest))
    by_speaker = {}
    for n, line in enumerate(lines[1:], 2):
        f = line.split("\t")
        if len(f) != len(head):
            sys.exit(f"long_recordings.py: {a.manifest}:{n}: {len(f)} fields, the header has {len(head)}")
        by_speaker.setdefault(f[col["speaker"]], []).append(f)
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for speaker in sorted(by_speaker):
        utts = by_speaker[speaker]
        for i in range(0, len(utts), a.per):
            group = utts[i:i + a.per]
            path = os.path.join(a.out, f"{speaker}-{i // a.per:03d}.wav")
            inputs = [os.path.join(base, u[col["path"]]) for u in group]
            subprocess.run(["sox", *inputs, "-r", "16000", "-c", "1", "-b", "16", path], check=True)
            duration = sum(float(u[col["duration_s"]]) for u in group)
            words = " ".join(u[col["words"]] for u in group)
            phones = " ".join(u[col["phones"]] for u in group)
            rows.append(f"{os.path.abspath(path)}\t{duration:.3f}\t{speaker}\t{words}\t{phones}")
    with open(os.path.join(a.out, "long.tsv"), "w", encoding="utf-8") as f:
        f.write("path\tduration_s\tspeaker\twords\tphones\n" + "\n".join(rows) + "\n")
    print(f"long_recordings.py: {len(rows)} recordings in {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
