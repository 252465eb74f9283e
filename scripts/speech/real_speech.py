#!/usr/bin/env python3
"""The real-speech development set (docs/speech.md, "Real recordings"): every
English recording with a transcript that Debian packages, gathered into
manifests for measuring lt-asr and choosing checkpoints, never for training.

  scripts/speech/real_speech.py [--out data/speech]

Sources (apt-get install pocketsphinx-testdata asterisk-core-sounds-en-wav
asterisk-core-sounds-en-g722 ffmpeg klettres-data; a missing one is left out
with a note on stderr):
  - pocketsphinx-testdata: LibriVox sentences, spoken playing cards, two
    commands and a digit string (16 kHz);
  - asterisk-core-sounds-en-wav: Allison Smith's telephony prompts (8 kHz,
    CC-BY-SA 3.0), transcripts from asterisk-core-sounds-en's
    core-sounds-en.txt;
  - asterisk-core-sounds-en-g722: the same prompts recorded wideband (raw
    G.722 at 16 kHz), decoded with ffmpeg into WAVs;
  - klettres-data: a child's-alphabet tutor's English letters and words
    (44.1 kHz Ogg).

Writes OUT/real.tsv (pocketsphinx-testdata, the set earlier scores in
docs/speech.md were measured on), OUT/real-prompts.tsv (Allison's prompts of
two words or more, 8 kHz), OUT/real-prompts-16k.tsv (the same prompts'
wideband recordings, a condition of its own: not in real-all.tsv),
OUT/real-words.tsv (single words from every source) and
OUT/real-all.tsv (all of them). Columns: path, speaker (the source), words,
phones. Phones are the CMU dictionary's first pronunciation, except spelled
letters, which get the letter's name. A transcript with a number of more than
one digit (read as digits or as a number?), a non-speech entry, or a word the
dictionary lacks is left out, and counted on stderr."""
import argparse
import gzip
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_corpus import read_lexicon  # noqa: E402  (the CMU dictionary, stress dropped)

TESTDATA = "/usr/share/pocketsphinx/test/data"
ALLISON = "/usr/share/asterisk/sounds/en_US_f_Allison"
ALLISON_TEXT = "/usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz"
KLETTRES = "/usr/share/klettres/en"

LETTER_NAMES = {
    "A": "EY", "B": "B IY", "C": "S IY", "D": "D IY", "E": "IY", "F": "EH F", "G": "JH IY", "H": "EY CH",
    "I": "AY", "J": "JH EY", "K": "K EY", "L": "EH L", "M": "EH M", "N": "EH N", "O": "OW", "P": "P IY",
    "Q": "K Y UW", "R": "AA R", "S": "EH S", "T": "T IY", "U": "Y UW", "V": "V IY",
    "W": "D AH B AH L Y UW", "X": "EH K S", "Y": "W AY", "Z": "Z IY"}
DIGITS = "ZERO ONE TWO THREE FOUR FIVE SIX SEVEN EIGHT NINE".split()
SYMBOLS = {"*": " star ", "#": " pound "}


def log(*args):
    print("real_speech:", *args, file=sys.stderr, flush=True)


def prompt_words(text):
    """Allison's transcript as upper-case words, or None where its reading is
    unclear: a bracketed non-speech entry, a number of two digits or more."""
    text = re.sub(r"\[[^]]*\]", " ", text)  # "at [@]": the symbol is not said
    for symbol, word in SYMBOLS.items():
        text = text.replace(symbol, word)
    if re.search(r"\d\S*\d|\d[A-Za-z]|[A-Za-z]\d", text):
        return None
    text = re.sub(r"\d", lambda m: f" {DIGITS[int(m.group())]} ", text)
    words = re.sub(r"[^A-Za-z' ]+", " ", text.replace("-", " ")).upper().split()
    words = [w.strip("'") for w in words if w.strip("'")]
    return words or None


class Rows:
    def __init__(self, lexicon):
        self.lexicon, self.rows, self.left_out = lexicon, [], {}

    def add(self, path, speaker, words, letters=False):
        """One utterance; letters: each word is a spelled letter."""
        if letters:
            phones = [LETTER_NAMES[w] for w in words]
        elif all(w in self.lexicon for w in words):
            phones = [" ".join(self.lexicon[w]) for w in words]
        else:
            self.left_out[speaker] = self.left_out.get(speaker, 0) + 1
            return
        self.rows.append((path, speaker, " ".join(words), " ".join(phones)))


def testdata(rows, audio_dir):
    for folder, listing in (("librivox", "transcription"), ("cards", "cards.transcription")):
        path = os.path.join(TESTDATA, folder, listing)
        for line in open(path):
            m = re.match(r"\s*<s>(.*)</s>\s*\((.*)\)", line)
            if m:
                rows.add(os.path.join(TESTDATA, folder, m.group(2) + ".wav"), folder, m.group(1).upper().split())
    # Raw PCM whose words the package names in a grammar or the file name.
    for raw, words in (("goforward.raw", "GO FORWARD TEN METERS"), ("tidigits/dhd.2934z.raw", "TWO NINE THREE FOUR ZERO")):
        wav = os.path.join(audio_dir, os.path.basename(raw)[:-4] + ".wav")
        subprocess.run(["sox", "-t", "raw", "-r", "16000", "-e", "signed", "-b", "16", "-c", "1",
                        os.path.join(TESTDATA, raw), wav], check=True)
        rows.add(os.path.abspath(wav), "testdata-raw", words.split())


def allison(rows):
    with gzip.open(ALLISON_TEXT, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"([a-z0-9/_-]+):\s*(.*\S)", line.strip(), re.IGNORECASE)
            if not m or not os.path.exists(os.path.join(ALLISON, m.group(1) + ".wav")):
                continue
            name, words = m.group(1), prompt_words(m.group(2))
            if words is None:
                rows.left_out["allison"] = rows.left_out.get("allison", 0) + 1
                continue
            letter = name.startswith("letters/") and len(words) == 1 and len(words[0]) == 1
            rows.add(os.path.join(ALLISON, name + ".wav"), "allison", words, letters=letter)


def allison_wideband(prompts, audio_dir, root=ALLISON):
    """The rows of Allison's 8 kHz prompts again, from their wideband
    recordings (NAME.g722 beside NAME.wav under root), each decoded once into
    audio_dir/allison-16k/NAME.wav. A prompt without one is left out."""
    out = []
    for path, _, words, phones in prompts:
        g722 = path[:-4] + ".g722"
        if not os.path.exists(g722):
            continue
        wav = os.path.join(audio_dir, "allison-16k", os.path.relpath(path, root))
        if not os.path.exists(wav):
            os.makedirs(os.path.dirname(wav), exist_ok=True)
            subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "g722", "-i", g722, "-ar", "16000",
                            "-ac", "1", wav + ".part.wav"], check=True)
            os.replace(wav + ".part.wav", wav)
        out.append((os.path.abspath(wav), "allison-16k", words, phones))
    log(f"allison-16k: {len(out)} of {len(prompts)} prompts have a wideband recording")
    return out


def klettres(rows):
    for name in sorted(os.listdir(os.path.join(KLETTRES, "alpha"))):
        if re.fullmatch(r"[A-Z]\.ogg", name):
            rows.add(os.path.join(KLETTRES, "alpha", name), "klettres", [name[0]], letters=True)
    for name in sorted(os.listdir(os.path.join(KLETTRES, "syllab"))):
        word = name[:-4].upper()
        if name.endswith(".ogg") and word not in ("AW", "CH", "TH"):  # sounds, not words
            rows.add(os.path.join(KLETTRES, "syllab", name), "klettres", [word])


def write(path, rows):
    with open(path + ".part", "w") as f:
        f.write("path\tspeaker\twords\tphones\n")
        f.writelines("\t".join(r) + "\n" for r in rows)
    os.replace(path + ".part", path)
    log(f"{path}: {len(rows)} recordings")


def write_real_manifests(out_dir):
    audio_dir = os.path.join(out_dir, "real-audio")
    os.makedirs(audio_dir, exist_ok=True)
    rows = Rows(read_lexicon())
    for source, check, gather in ((testdata, TESTDATA, lambda: testdata(rows, audio_dir)),
                                  (allison, ALLISON_TEXT, lambda: allison(rows)),
                                  (klettres, KLETTRES, lambda: klettres(rows))):
        if os.path.exists(check):
            gather()
        else:
            log(f"{check} is missing: {source.__name__} left out (apt-get install it)")
    for speaker, n in sorted(rows.left_out.items()):
        log(f"{speaker}: {n} transcripts left out (non-speech, numbers, or words the CMU dictionary lacks)")
    single = [r for r in rows.rows if len(r[2].split()) == 1]
    write(os.path.join(out_dir, "real.tsv"),
          [r for r in rows.rows if r[1] in ("librivox", "cards")])
    prompts = [r for r in rows.rows if r[1] == "allison" and r not in single]
    write(os.path.join(out_dir, "real-prompts.tsv"), prompts)
    if shutil.which("ffmpeg") is None:
        log("ffmpeg is missing: real-prompts-16k.tsv left out (apt-get install ffmpeg asterisk-core-sounds-en-g722)")
    else:
        write(os.path.join(out_dir, "real-prompts-16k.tsv"), allison_wideband(prompts, audio_dir))
    write(os.path.join(out_dir, "real-words.tsv"), single)
    write(os.path.join(out_dir, "real-all.tsv"), rows.rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="data/speech", help="output folder")
    write_real_manifests(ap.parse_args().out)


if __name__ == "__main__":
    main()
