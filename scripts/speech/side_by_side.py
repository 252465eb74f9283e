#!/usr/bin/env python3
"""lt-asr offline, lt-asr streaming and pocketsphinx on the same manifests,
in PER and WER: the table of docs/speech.md, "Side by side".

  scripts/speech/side_by_side.py data/speech/valid.tsv data/speech/real.tsv ... [--lt build/bin/lt-asr]
                                 [--no-pocketsphinx] [-j JOBS] [-- extra lt-asr options]

lt-asr runs with its defaults and --words (the shipped models, phone model
and word model), once as it is and once with --stream; pocketsphinx runs its
phone loop and its full word decoder (scripts/speech/pocketsphinx_per.py).
A Markdown table goes to stdout, one row per manifest."""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(message):
    print(f"side_by_side: {message}", file=sys.stderr)
    sys.exit(1)


def lt_scores(lt_asr, manifest, extra, stream):
    with open(manifest) as f:
        header = f.readline().rstrip("\n").split("\t")
        if "path" not in header:
            fail(f"{manifest}: no path column")
        base = os.path.dirname(os.path.abspath(manifest))
        paths = [row.split("\t")[header.index("path")] for row in f.read().splitlines() if row.strip()]
    paths = [p if os.path.isabs(p) else os.path.join(base, p) for p in paths]
    command = [lt_asr, "--words", "--ref", manifest] + (["--stream"] if stream else []) + extra + paths
    r = subprocess.run(command, capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{' '.join(command[:6])} ...: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}")
    m = re.search(r"lt-asr: PER ([\d.]+)% .*WER ([\d.]+)%", r.stderr)
    if not m:
        fail(f"{manifest}: no PER and WER in lt-asr's summary")
    return float(m.group(1)), float(m.group(2))


def pocketsphinx_scores(manifest, jobs):
    out = []
    for mode in ([], ["--words"]):
        r = subprocess.run([sys.executable, os.path.join(HERE, "pocketsphinx_per.py"), manifest, "-j", str(jobs)] + mode,
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"pocketsphinx_per.py {manifest}: {r.stderr.strip()}")
        m = re.search(r"^all\t(?:PER|WER) ([\d.]+)%", r.stdout, re.MULTILINE)
        out.append(float(m.group(1)))
    return tuple(out)


def main():
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("manifests", nargs="+")
    ap.add_argument("--lt", default="build/bin/lt-asr", help="the lt-asr binary")
    ap.add_argument("--no-pocketsphinx", action="store_true", help="lt-asr's columns only")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count(), help="pocketsphinx processes")
    a = ap.parse_args(argv)
    print("| set | utterances | lt offline PER | lt offline WER | lt streaming PER | lt streaming WER |"
          + ("" if a.no_pocketsphinx else " pocketsphinx PER | pocketsphinx WER |"))
    print("|---|---:|---:|---:|---:|---:|" + ("" if a.no_pocketsphinx else "---:|---:|"))
    for manifest in a.manifests:
        with open(manifest) as f:
            n = sum(1 for line in f if line.strip()) - 1
        cells = [*lt_scores(a.lt, manifest, extra, False), *lt_scores(a.lt, manifest, extra, True)]
        if not a.no_pocketsphinx:
            cells += pocketsphinx_scores(manifest, a.jobs)
        print(f"| {os.path.basename(manifest)} | {n} | " + " | ".join(f"{c:.2f}%" for c in cells) + " |", flush=True)


if __name__ == "__main__":
    main()
