#!/usr/bin/env python3
"""Builds lt's offline speech corpus (docs/speech.md, "Corpus") from Debian
packages: sentences from WordNet's examples, fortunes and the KJV bible, read
by flite, festival and espeak-ng voices, some of them augmented with sox,
labelled with the phones each engine says it spoke, as the 39 ARPAbet
phones; and a control set, validation sentences read by the training voices,
which tells how much of the validation error is the voices' and how much the
sentences'. Deterministic: the same arguments give the same files. Work is
split into shards; a finished shard's manifest is written atomically, so a
rerun resumes where the last one stopped.

  scripts/speech/make_corpus.py [--hours 20] [--valid-hours 0.5] [--control 160] [-j N]
                                [--out data/speech] [--text-only]
"""
import argparse
import glob
import multiprocessing
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

CMUDICT = "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict"
PHONES = ("AA AE AH AO AW AY B CH D DH EH ER EY F G HH IH IY JH K L M N NG OW OY P R S SH T TH "
          "UH UW V W Y Z ZH").split()
# flite's and festival's phones (the CMU/radio set) as the 39; silences drop.
ENGINE_PHONES = {p.lower(): [p] for p in PHONES}
ENGINE_PHONES.update({"ax": ["AH"], "axr": ["ER"], "el": ["AH", "L"], "em": ["AH", "M"], "en": ["AH", "N"],
                      "dx": ["D"], "hv": ["HH"], "ix": ["IH"], "nx": ["N"], "pau": [], "h#": [], "brth": [],
                      "ssil": [], "#": []})
# espeak-ng's IPA (`--ipa`: the phones its accent actually spoke, so a
# non-rhotic voice's "car" has no R and a rhotic one's has) as the 39, by
# sound: centring diphthongs and r-coloured vowels become two phones (near:
# IH AH non-rhotic, IH R rhotic), a flap is the T it mostly stands for (as
# the CMU dictionary and flite write water and butter), the dental stops and
# the glottal stop are the T and D they stand for, a nasal vowel is the vowel
# and N, syllabic consonants are AH and the consonant as flite's el/en.
# Stress marks drop.
IPA_PHONES = {
    "p": ["P"], "b": ["B"], "t": ["T"], "d": ["D"], "k": ["K"], "ɡ": ["G"], "f": ["F"], "v": ["V"], "θ": ["TH"],
    "ð": ["DH"], "s": ["S"], "z": ["Z"], "ʃ": ["SH"], "ʒ": ["ZH"], "h": ["HH"], "m": ["M"], "n": ["N"],
    "ŋ": ["NG"], "nʲ": ["N", "Y"], "l": ["L"], "ɹ": ["R"], "r": ["R"], "w": ["W"], "ʍ": ["W"], "j": ["Y"], "tʃ": ["CH"],
    "dʒ": ["JH"], "ɾ": ["T"], "t̪": ["T"], "d̪": ["D"], "ʔ": ["T"], "x": ["K"], "ɬ": ["L"],
    "əl": ["AH", "L"], "l̩": ["AH", "L"], "n̩": ["AH", "N"], "m̩": ["AH", "M"],
    "ɪ": ["IH"], "ᵻ": ["IH"], "i": ["IY"], "iː": ["IY"], "eʲ": ["IY"], "e": ["EY"], "eɪ": ["EY"], "eː": ["EY"],
    "ei": ["EY"], "ɛ": ["EH"], "æ": ["AE"], "a": ["AE"], "aː": ["AA"], "a:": ["AA"], "aa": ["AA"], "ɑ": ["AA"],
    "ɑː": ["AA"], "ɒ": ["AA"], "ɑə": ["AA"], "ɔ": ["AO"], "ɔː": ["AO"], "o": ["OW"], "oː": ["OW"], "oʊ": ["OW"],
    "əʊ": ["OW"], "ʌʊ": ["OW"], "əu": ["OW"], "ʊ": ["UH"], "u": ["UW"], "uː": ["UW"], "ʉ": ["UW"], "ʉː": ["UW"],
    "ʌ": ["AH"], "ə": ["AH"], "ɐ": ["AH"], "ɚ": ["ER"], "ɜ": ["ER"], "ɜː": ["ER"], "əɹ": ["ER"], "ʌɹ": ["ER"],
    "əɪ": ["ER"], "aɪ": ["AY"], "ʌɪ": ["AY"], "ɑɪ": ["AY"], "aʊ": ["AW"], "æʊ": ["AW"], "ʌʉ": ["AW"],
    "ɔɪ": ["OY"], "oɪ": ["OY"], "ɑ̃": ["AA", "N"],
    "iə": ["IH", "AH"], "ɪə": ["IH", "AH"], "eə": ["EH", "AH"], "ɛə": ["EH", "AH"], "ʊə": ["UH", "AH"],
    "oə": ["AO", "AH"], "ɔə": ["AO", "AH"], "aɪə": ["AY", "AH"], "aɪɚ": ["AY", "ER"],
    "ɪɹ": ["IH", "R"], "ɛɹ": ["EH", "R"], "ʊɹ": ["UH", "R"], "ʉɹ": ["UW", "R"], "ɔːɹ": ["AO", "R"],
    "oːɹ": ["AO", "R"], "ɑːɹ": ["AA", "R"]}
SENTENCE_WORDS = (4, 30)
# Short utterances, as people speak to machines: a word on its own, a
# command, names, spelled letters, digits. Words the CMU dictionary lacks
# are dropped when the plan is made.
COMMAND_VERBS = ["turn on", "turn off", "open", "close", "play", "stop", "pause", "call", "show", "find", "start",
                 "cancel", "set", "check", "send", "read", "go to", "switch off", "look up", "answer"]
COMMAND_OBJECTS = ["the light", "the lights", "the door", "the window", "music", "the radio", "the timer", "mom",
                   "the kitchen", "my email", "the weather", "the news", "an alarm", "the heating", "home", "the car",
                   "the garage", "the next song", "my messages", "the calendar"]
NAMES = ["john", "mary", "james", "patricia", "robert", "jennifer", "michael", "linda", "william", "elizabeth",
         "david", "barbara", "richard", "susan", "joseph", "jessica", "thomas", "sarah", "charles", "karen", "daniel",
         "nancy", "matthew", "lisa", "anthony", "betty", "mark", "helen", "paul", "sandra", "steven", "donna", "andrew",
         "carol", "kenneth", "ruth", "george", "sharon", "edward", "laura", "peter", "anna", "smith", "johnson",
         "brown", "miller", "wilson", "moore", "taylor", "anderson", "thomas", "jackson", "white", "harris", "martin"]
LETTERS = list("abcdefghijklmnopqrstuvwxyz")
DIGITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "oh"]
SHORT_KINDS = ["word", "command", "name", "letters", "digits"]
SECONDS_PER_PHONE = 0.085  # planning estimate only; the manifest has measured durations

# Voices: (engine, voice, weight). Validation voices never train.
TRAIN_VOICES = [("flite", "rms", 3), ("flite", "slt", 3), ("flite", "kal16", 2),
                ("festival", "kal_diphone", 2), ("festival", "ked_diphone", 2),
                ("festival", "cmu_us_slt_arctic_hts", 2),
                ("espeak", "en-us", 2), ("espeak", "en-us-nyc", 1), ("espeak", "en-gb", 2), ("espeak", "en-gb-x-rp", 1),
                ("espeak", "en-gb-x-gbclan", 1), ("espeak", "en-gb-x-gbcwmd", 1), ("espeak", "en-029", 1)]
VALID_VOICES = [("flite", "awb", 1), ("espeak", "en-gb-scotland", 1)]
# espeak-ng's variants are speakers (formants, pitch range, breathiness);
# these are its human-sounding ones, robots, whispers and croaks left out.
ESPEAK_VARIANTS = ["", "klatt", "klatt2", "klatt3", "klatt4", "klatt5", "klatt6", "m1", "m2", "m3", "m4", "m5", "m6",
                   "m7", "m8", "f1", "f2", "f3", "f4", "f5", "adam", "Andy", "Annie", "edward", "john", "linda", "paul",
                   "rob", "steph", "travis", "victor", "norbert", "grandpa", "grandma"]


def log(*args):
    print("prepare-speech:", *args, file=sys.stderr, flush=True)


def read_lexicon():
    lex = {}
    with open(CMUDICT, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 2 or "(" in parts[0]:
                continue
            phones = []
            for p in parts[1:]:
                if p.startswith("#"):
                    break
                phones.append(re.sub(r"[012]$", "", p.upper()))
            lex.setdefault(parts[0].upper(), phones)
    return lex


def normalise(sentence):
    """Upper-case words of letters and apostrophes, or None."""
    words = re.sub(r"[^A-Za-z' ]+", " ", sentence.replace("-", " ")).upper().split()
    words = [w.strip("'") for w in words if w.strip("'")]
    return words if SENTENCE_WORDS[0] <= len(words) <= SENTENCE_WORDS[1] else None


def split_sentences(text):
    return [s for s in re.split(r"[.!?;:]+(?:\s+|$)", re.sub(r"\s+", " ", text)) if s.strip()]


def wordnet_sentences():
    out = []
    for path in sorted(glob.glob("/usr/share/wordnet/data.*")):
        with open(path, encoding="latin-1") as f:
            for line in f:
                if line.startswith("  "):
                    continue  # the licence header
                out += re.findall(r'"([^"]+)"', line.partition("|")[2])
    return out


def fortune_sentences():
    out = []
    for path in sorted(glob.glob("/usr/share/games/fortunes/*")):
        if os.path.isdir(path) or path.endswith((".dat", ".u8")) or os.path.islink(path):
            continue  # the offensive ones live in off/, which is a folder
        with open(path, encoding="utf-8", errors="replace") as f:
            for fortune in f.read().split("\n%\n"):
                out += split_sentences(fortune)
    return out


def bible_sentences():
    text = subprocess.run(["bible", "-l0", "gen1:1-rev22:21"], capture_output=True, text=True, check=True).stdout
    out = []
    for line in text.splitlines():
        m = re.match(r"\s*\d+ (.*)", line)
        if m:
            out += split_sentences(m.group(1))
    return out


def choose_sentences(lex, seed, left_out=None):
    """The sentences whose words the lexicon has, shuffled; those it lacks go
    to left_out, when given, in their sources' order."""
    sources = {"wordnet": wordnet_sentences(), "fortunes": fortune_sentences(), "bible": bible_sentences()}
    seen, kept = set(), []
    for name, sentences in sources.items():
        ok = unknown = 0
        for s in sentences:
            words = normalise(s)
            if not words:
                continue
            key = " ".join(words)
            if key in seen:
                continue
            seen.add(key)
            if all(w in lex for w in words):
                kept.append(key)
                ok += 1
            else:
                unknown += 1
                if left_out is not None:
                    left_out.append(key)
        log(f"{name}: {ok} sentences kept, {unknown} with a word the CMU dictionary lacks left out")
    random.Random(seed).shuffle(kept)
    return kept


def short_text(rng, lex, vocabulary):
    """One short utterance's words: a kind of SHORT_KINDS drawn evenly."""
    kind = rng.choice(SHORT_KINDS)
    if kind == "word":
        words = [rng.choice(vocabulary)]
    elif kind == "command":
        words = (rng.choice(COMMAND_VERBS) + " " + rng.choice(COMMAND_OBJECTS)).split()
        if rng.random() < 0.3:
            words = ["please"] + words
    elif kind == "name":
        words = [rng.choice(NAMES) for _ in range(rng.randint(1, 2))]
    elif kind == "letters":
        words = [rng.choice(LETTERS) for _ in range(rng.randint(2, 6))]
    else:
        words = [rng.choice(DIGITS) for _ in range(rng.randint(2, 7))]
    return " ".join(w.upper() for w in words if w.upper() in lex) or "STOP"


def plan(sentences, lex, hours, voices, split, rng_seed, start, short_share=0.0):
    """Utterances until the estimated duration reaches `hours`, short_share of
    it short utterances (short_text) between the sentences; returns them and
    the next sentence index."""
    weighted = [v for v in voices for _ in range(v[2])]
    # Single words as often as the sentences use them.
    vocabulary = [w for s in sentences[:20000] for w in s.split()]
    utts, total, short_total, i, shorts = [], 0.0, 0.0, start, 0
    while total < hours * 3600:
        short = short_share > 0 and short_total < short_share * total
        if not short and i >= len(sentences):
            log(f"ran out of sentences at {total / 3600:.2f} h of {split}")
            break
        # A sentence's draws are those of the corpus before short utterances.
        key = f"{rng_seed}-{split}-short{shorts}" if short else f"{rng_seed}-{split}-{i}"
        rng = random.Random(key)
        words = short_text(rng, lex, vocabulary) if short else sentences[i]
        engine, voice, _ = rng.choice(weighted)
        u = {"id": f"{split}{len(utts):06d}", "words": words, "engine": engine, "voice": voice}
        if engine == "espeak":
            variant = rng.choice(ESPEAK_VARIANTS)
            u["variant"] = "+" + variant if variant else ""
            u["pitch"] = rng.randint(30, 70)
            u["speed"] = rng.randint(135, 185)
        elif engine == "flite":
            u["stretch"] = round(rng.uniform(0.85, 1.2), 2)
        # Every talker at its own pitch and rate: espeak-ng sets both itself,
        # flite its rate; sox shifts the rest (drawn apart, so the draws
        # above are the corpus's before this).
        vary = random.Random(key + "-voice")
        if engine in ("flite", "festival"):
            u["pitch_cents"] = vary.randint(-250, 250)
        if engine == "festival":
            u["tempo"] = round(vary.uniform(0.85, 1.15), 3)
        if split == "train" and rng.random() < 0.5:
            kind = rng.choice(["speed", "pitch", "reverb", "telephone", "noise"])
            u["augment"] = {"speed": ["speed", f"{rng.uniform(0.9, 1.1):.3f}"],
                            "pitch": ["pitch", str(rng.randint(-300, 300))],
                            "reverb": ["reverb", str(rng.randint(20, 60))],
                            "telephone": ["highpass", "300", "lowpass", "3400", "rate", "8000"],
                            "noise": ["noise", str(rng.randint(5, 20)), rng.choice(["white", "pink", "brown"])]}[kind]
        phones = sum(len(lex[w]) for w in words.split())
        seconds = phones * SECONDS_PER_PHONE * u.get("stretch", 1) + 0.4
        total += seconds
        if short:
            short_total += seconds
            shorts += 1
        else:
            i += 1
        utts.append(u)
    if short_share > 0:
        log(f"{split}: {short_total / 3600:.2f} h of {total / 3600:.2f} h in {shorts} short utterances")
    return utts, i


def control_plan(valid, n):
    """The first n validation sentences, each read by the next training voice
    in turn at its plain settings (no variant, stretch or augmentation)."""
    utts = []
    for i, v in enumerate(valid[:n]):
        engine, voice, _ = TRAIN_VOICES[i % len(TRAIN_VOICES)]
        u = {"id": f"control{i:06d}", "words": v["words"], "engine": engine, "voice": voice}
        if engine == "espeak":
            u.update(variant="", pitch=50, speed=160)
        elif engine == "flite":
            u["stretch"] = 1.0
        utts.append(u)
    return utts


def engine_phones(names):
    out = []
    for n in names:
        out += ENGINE_PHONES.get(n.lower(), [])
    return out


def ipa_phones(ipa):
    """espeak-ng's `--ipa --sep=" "` output as the 39 (IPA_PHONES)."""
    out = []
    for token in ipa.replace("ˈ", "").replace("ˌ", "").split():
        half = token[:len(token) // 2]
        if token not in IPA_PHONES and token == half * 2 and half in IPA_PHONES:
            token = half  # a vowel written twice is one long vowel (the letters of "aaaaaa": ææ ɐɐ ææ)
        if token not in IPA_PHONES:
            raise ValueError(f"espeak-ng phone {token!r} has no mapping to the 39 (IPA_PHONES)")
        out += IPA_PHONES[token]
    return out


def synthesize(u, wav, tmp):
    """Writes u's raw synthesis to wav; returns the phones the engine spoke."""
    text = u["words"].lower()
    if u["engine"] == "flite":
        r = subprocess.run(["flite", "-voice", u["voice"], "--setf", f"duration_stretch={u['stretch']}", "-psdur",
                            "-t", text, "-o", wav], capture_output=True, text=True, check=True)
        return engine_phones(p.split(":")[0] for p in r.stdout.split())
    if u["engine"] == "espeak":
        r = subprocess.run(["espeak-ng", "-v", u["voice"] + u["variant"], "-p", str(u["pitch"]), "-s", str(u["speed"]),
                            "--ipa", "--sep= ", "-w", wav, text], capture_output=True, text=True, check=True)
        return ipa_phones(r.stdout)
    raise ValueError(u["engine"])


def festival_batch(utts, tmp):
    """Synthesizes every festival utterance of a shard in one process (its start-up costs 0.6 s)."""
    script = os.path.join(tmp, "batch.scm")
    with open(script, "w") as f:
        voice = None
        for u in sorted(utts, key=lambda u: (u["voice"], u["id"])):
            if u["voice"] != voice:
                voice = u["voice"]
                f.write(f"(voice_{voice})\n")
            wav = os.path.join(tmp, u["id"] + ".raw.wav")
            f.write(f'(set! u (utt.synth (Utterance Text "{u["words"].lower()}")))\n'
                    f'(utt.save.wave u "{wav}" \'riff)\n'
                    f'(format t "LTUTT {u["id"]} ")\n'
                    '(mapcar (lambda (s) (format t "%s " (item.name s))) (utt.relation.items u \'Segment))\n'
                    '(format t "\\n")\n')
    r = subprocess.run(["festival", "--batch", script], capture_output=True, text=True, check=True)
    phones = {}
    for line in r.stdout.splitlines():
        if line.startswith("LTUTT "):
            parts = line.split()
            phones[parts[1]] = engine_phones(parts[2:])
    return phones


def rms_of(wav):
    r = subprocess.run(["sox", wav, "-n", "stat"], capture_output=True, text=True, check=True)
    m = re.search(r"RMS\s+amplitude:\s+([0-9.eE+-]+)", r.stderr)
    return float(m.group(1)) if m else 0.0


def finish(u, raw, out_path, tmp):
    """16 kHz mono 16-bit FLAC with u's augmentation; returns its duration in seconds."""
    aug = u.get("augment")
    # Repeatable random numbers and no dither (the same bytes every run); -G
    # lowers the gain where an effect would clip; errors only on stderr.
    sox = ["sox", "-R", "-D", "-G", "-V1"]
    voice = (["pitch", str(u["pitch_cents"])] if "pitch_cents" in u else []) + \
        (["tempo", "-s", str(u["tempo"])] if "tempo" in u else [])
    effects = voice + (["rate", "-h", "16000"] if not aug or aug[0] != "noise" else [])
    if aug and aug[0] == "noise":
        snr, colour = float(aug[1]), aug[2]
        clean = os.path.join(tmp, u["id"] + ".clean.wav")
        subprocess.run(sox + [raw, "-r", "16000", "-c", "1", clean] + voice, check=True)
        level = rms_of(clean) / (10 ** (snr / 20))
        noise = os.path.join(tmp, u["id"] + ".noise.wav")
        # A noise of RMS `level` (a unit-amplitude white/pink/brown noise scaled by its own RMS).
        subprocess.run(sox + ["-n", "-r", "16000", "-c", "1", noise, "synth", str(soxi_seconds(clean)), colour + "noise"],
                       check=True)
        scaled = os.path.join(tmp, u["id"] + ".scaled.wav")
        subprocess.run(sox + ["-v", f"{level / max(rms_of(noise), 1e-9):.6f}", noise, scaled], check=True)
        subprocess.run(sox + ["-m", clean, scaled, "-b", "16", out_path], check=True)
    else:
        if aug:
            effects += aug + (["rate", "-h", "16000"] if aug[0] in ("telephone", "highpass") else [])
        subprocess.run(sox + [raw, "-c", "1", "-b", "16", out_path] + effects + ["rate", "-h", "16000"], check=True)
    return soxi_seconds(out_path)


def soxi_seconds(path):
    r = subprocess.run(["soxi", "-D", path], capture_output=True, text=True, check=True)
    return float(r.stdout.strip())


def run_shard(job):
    split, index, utts, out_dir = job
    manifest = os.path.join(out_dir, "shards", f"{split}-{index:05d}.tsv")
    # Done when complete: a run for fewer hours may have ended this shard short.
    if os.path.exists(manifest) and sum(1 for _ in open(manifest)) == len(utts):
        return manifest
    audio_dir = os.path.join(out_dir, split, f"{index:05d}")
    os.makedirs(audio_dir, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        fest = [u for u in utts if u["engine"] == "festival"]
        fest_phones = festival_batch(fest, tmp) if fest else {}
        for u in utts:
            raw = os.path.join(tmp, u["id"] + ".raw.wav")
            phones = fest_phones.get(u["id"]) if u["engine"] == "festival" else synthesize(u, raw, tmp)
            if not phones:
                raise RuntimeError(f"{u['id']}: {u['engine']} {u['voice']} printed no phones for {u['words']!r}")
            rel = os.path.join(split, f"{index:05d}", u["id"] + ".flac")
            seconds = finish(u, raw, os.path.join(out_dir, rel), tmp)
            # The speaker is the voice (PER is reported per voice); its variants are one speaker.
            rows.append(f"{rel}\t{seconds:.3f}\t{u['engine']}-{u['voice']}\t{u['words']}\t{' '.join(phones)}\n")
    part = manifest + ".part"
    with open(part, "w") as f:
        f.writelines(rows)
    os.replace(part, manifest)
    return manifest


def spoken_phones(job):
    """The phones a training voice, drawn per sentence, would speak: flite's
    front end for the flite and festival voices, espeak-ng's in its accent."""
    i, words, seed = job
    engine, voice, _ = random.Random(f"{seed}-text-{i}").choice([v for v in TRAIN_VOICES for _ in range(v[2])])
    if engine == "espeak":
        r = subprocess.run(["espeak-ng", "-q", "-v", voice, "--ipa", "--sep= ", words.lower()],
                           capture_output=True, text=True, check=True)
        return ipa_phones(r.stdout)
    r = subprocess.run(["flite", "-voice", "kal16", "-psdur", "-t", words.lower(), "-o", "none"],
                       capture_output=True, text=True, check=True)
    return engine_phones(p.split(":")[0] for p in r.stdout.split())


def write_phone_text(sentences, seed, jobs, path):
    """Text for a phone language model beyond the corpus's own: sentences no
    utterance reads (neither training nor validation; those with words the
    lexicon lacks included, as the engines pronounce any word), one line of
    phones each."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with multiprocessing.Pool(jobs) as pool, open(path + ".part", "w") as out:
        for k, phones in enumerate(pool.imap(spoken_phones, ((i, s, seed) for i, s in enumerate(sentences)), 64)):
            out.write(" ".join(phones) + "\n")
            if (k + 1) % 10000 == 0:
                log(f"phone text: {k + 1}/{len(sentences)} sentences")
    os.replace(path + ".part", path)
    log(f"{path}: the phones of {len(sentences)} sentences no utterance reads")


def write_valid_parts(out_dir, read):
    """OUT/valid.tsv apart: valid-sentences.tsv, the sentences (`read`, those
    the corpus without short utterances reads too, by the same voices), and
    valid-short.tsv, the short utterances between them."""
    with open(os.path.join(out_dir, "valid.tsv")) as f:
        header, *rows = f.read().splitlines()
    words = header.split("\t").index("words")
    for name, sentence in (("valid-sentences", True), ("valid-short", False)):
        path = os.path.join(out_dir, f"{name}.tsv")
        kept = [r for r in rows if (r.split("\t")[words] in read) == sentence]
        with open(path + ".part", "w") as out:
            out.write(header + "\n")
            out.writelines(r + "\n" for r in kept)
        os.replace(path + ".part", path)
        log(f"{path}: {len(kept)} utterances")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hours", type=float, default=21.0, help="training audio to make (estimated from phone counts)")
    ap.add_argument("--valid-hours", type=float, default=0.5, help="validation audio, voices never trained on")
    ap.add_argument("--control", type=int, default=160,
                    help="validation sentences read by the training voices (OUT/control.tsv; 0: none)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count(), help="parallel synthesis processes")
    ap.add_argument("--out", default="data/speech", help="output folder")
    ap.add_argument("--seed", type=int, default=1, help="sentence order, voices and augmentation")
    ap.add_argument("--shard", type=int, default=100, help="utterances per shard (the unit of resumption)")
    ap.add_argument("--short-share", type=float, default=0.15,
                    help="share of each split's hours in short utterances: single words, 2-5 word commands, names, "
                         "spelled letters, digits (0: sentences only, the corpus before it)")
    ap.add_argument("--phone-text", action="store_true",
                    help="write OUT/phone-text.txt, the phones of every sentence no utterance reads, through a training "
                         "voice's front end, and stop: text for a phone model (make_lm.py --column phones)")
    ap.add_argument("--text-only", action="store_true",
                    help="write the planned sentences (OUT/train.txt, OUT/valid.txt, one a line) and stop: "
                         "the transcripts scripts/speech/make_lm.py needs, without the audio")
    a = ap.parse_args()
    t0 = time.time()
    lex = read_lexicon()
    left_out = []
    sentences = choose_sentences(lex, a.seed, left_out)
    if not 0 <= a.short_share < 1:
        sys.exit(f"make_corpus.py: --short-share {a.short_share} is not in [0, 1)")
    valid, next_i = plan(sentences, lex, a.valid_hours, VALID_VOICES, "valid", a.seed, 0, a.short_share)
    train, unread = plan(sentences, lex, a.hours, TRAIN_VOICES, "train", a.seed, next_i, a.short_share)
    control = control_plan(valid, a.control)
    log(f"{len(train)} training and {len(valid)} validation utterances planned, each sentence read once")
    if a.phone_text:
        write_phone_text(sentences[unread:] + left_out, a.seed, a.jobs, os.path.join(a.out, "phone-text.txt"))
        log(f"done in {time.time() - t0:.0f} s")
        return
    if a.text_only:
        os.makedirs(a.out, exist_ok=True)
        for split, utts in (("train", train), ("valid", valid)):
            with open(os.path.join(a.out, f"{split}.txt"), "w") as f:
                f.writelines(u["words"] + "\n" for u in utts)
        log(f"sentences in {a.out}/train.txt and {a.out}/valid.txt")
        return
    os.makedirs(os.path.join(a.out, "shards"), exist_ok=True)
    jobs = []
    splits = (("valid", valid), ("control", control), ("train", train))
    for split, utts in splits:
        for k in range(0, len(utts), a.shard):
            jobs.append((split, k // a.shard, utts[k:k + a.shard], a.out))
    done = 0
    with multiprocessing.Pool(a.jobs) as pool:
        for _ in pool.imap_unordered(run_shard, jobs):
            done += 1
            log(f"shard {done}/{len(jobs)} done, {time.time() - t0:.0f} s")
    for split in (name for name, utts in splits if utts):
        hours, n = 0.0, 0
        path = os.path.join(a.out, f"{split}.tsv")
        with open(path + ".part", "w") as out:
            out.write("path\tduration_s\tspeaker\twords\tphones\n")
            for shard in sorted(glob.glob(os.path.join(a.out, "shards", f"{split}-*.tsv"))):
                with open(shard) as f:
                    for line in f:
                        out.write(line)
                        hours += float(line.split("\t")[1]) / 3600
                        n += 1
        os.replace(path + ".part", path)
        log(f"{path}: {n} utterances, {hours:.2f} h")
    if a.short_share > 0:
        write_valid_parts(a.out, set(sentences[:next_i]))
    from real_speech import write_real_manifests  # imported here: it imports this module
    write_real_manifests(a.out)
    log(f"done in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
