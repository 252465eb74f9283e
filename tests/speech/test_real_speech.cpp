// scripts/speech/real_speech.py: the telephony prompts' transcripts become
// the words that are said (digits and keys spoken, symbols and
// non-speech left out, numbers whose reading is unclear refused), and each
// spelled letter's phones are one of the CMU dictionary's pronunciations of
// that letter (skipped where pocketsphinx-en-us is not installed).
#include <cstdio>
#include <cstdlib>

#include "io/temp_dir.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {
// Runs a Python check with real_speech.py's folder as its first argument and
// then args; it prints "ok", or "LT-SKIP: why" when what it needs is missing.
void run_check(const TempDir& tmp, const std::string& script, const std::string& args = "") {
  write_text(tmp.file("check.py"), script);
  const std::string command = "python3 '" + tmp.file("check.py") + "' '" + std::string(LT_SCRIPTS_DIR) + "/speech' " +
                              args + " >'" + tmp.file("out.txt") + "' 2>'" + tmp.file("err.txt") + "'";
  const int status = std::system(command.c_str());
  INFO(read_text(tmp.file("err.txt")));
  CHECK(status == 0);
  const std::string out = read_text(tmp.file("out.txt"));
  if (out.rfind("LT-SKIP:", 0) == 0) {
    std::printf("%s", out.c_str());
    return;
  }
  CHECK(out == "ok\n");
}
}  // namespace

TEST_CASE("real_speech.py: prompts read as spoken words, and spelled letters as the dictionary names them") {
  TempDir tmp;
  run_check(tmp, R"(import os, re, sys
sys.path.insert(0, sys.argv[1])
import real_speech as rs
cases = {
    "Press 1 now, or # to exit.": "PRESS ONE NOW OR POUND TO EXIT",
    "press * to toggle pause": "PRESS STAR TO TOGGLE PAUSE",
    "Use the 7 key for Q and the 9 key for Z.": "USE THE SEVEN KEY FOR Q AND THE NINE KEY FOR Z",
    "at [@]": "AT",
    "Call-Forward on Busy.": "CALL FORWARD ON BUSY",
    "I'm sorry, but...": "I'M SORRY BUT",
    "[ascending tones]": None,
    "dial 500 now": None,
    "3D audio enabled": None,
    "a 28.8 kilobit modem": None,
}
for text, want in cases.items():
    got = rs.prompt_words(text)
    assert (None if got is None else " ".join(got)) == want, (text, got, want)
dictionary = "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict"
if not os.path.exists(dictionary):
    print("LT-SKIP: the CMU dictionary (pocketsphinx-en-us) is not installed")
    sys.exit(0)
names = {}
for line in open(dictionary, encoding="utf-8", errors="replace"):
    p = line.split()
    if p:
        names.setdefault(re.sub(r"\(\d+\)$", "", p[0]).upper(), []).append(" ".join(re.sub("[012]$", "", x) for x in p[1:]))
assert sorted(rs.LETTER_NAMES) == [chr(c) for c in range(ord("A"), ord("Z") + 1)]
for letter, phones in rs.LETTER_NAMES.items():
    assert phones in names[letter], (letter, phones, names[letter])
print("ok")
)");
}

TEST_CASE("real_speech.py: the wideband prompts are the G.722 recordings decoded to 16 kHz, with their prompts' words") {
  TempDir tmp;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  run_check(tmp, R"(import math, os, random, shutil, subprocess, sys, wave
sys.path.insert(0, sys.argv[1])
import real_speech as rs
if shutil.which("ffmpeg") is None:
    print("LT-SKIP: ffmpeg is not installed")
    sys.exit(0)
tmp, rng = sys.argv[2], random.Random(int(sys.argv[3]))
root = os.path.join(tmp, "allison")
os.makedirs(os.path.join(root, "digits"))
# A recording of random tones at 16 kHz, encoded as the package stores it (raw G.722).
n = rng.randrange(8000, 24000)
tones = [(rng.uniform(200, 3000), rng.uniform(0.05, 0.25)) for _ in range(3)]
samples = [sum(a * math.sin(2 * math.pi * f * i / 16000) for f, a in tones) for i in range(n)]
with wave.open(os.path.join(tmp, "source.wav"), "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000)
    w.writeframes(b"".join(int(v * 32767).to_bytes(2, "little", signed=True) for v in samples))
said = os.path.join(root, "digits", "seven.wav")
subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-i", os.path.join(tmp, "source.wav"), "-acodec", "g722",
                "-f", "g722", said[:-4] + ".g722"], check=True)
prompts = [(said, "allison", "SEVEN DAYS", "S EH V AH N D EY Z"),
           (os.path.join(root, "none.wav"), "allison", "NO RECORDING", "N OW R IH K AO R D IH NG")]
rows = rs.allison_wideband(prompts, os.path.join(tmp, "out"), root)
wav = os.path.join(tmp, "out", "allison-16k", "digits", "seven.wav")
assert rows == [(wav, "allison-16k", "SEVEN DAYS", "S EH V AH N D EY Z")], rows
with wave.open(wav) as w:
    assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2)
    got = [int.from_bytes(w.readframes(1), "little", signed=True) / 32768 for _ in range(w.getnframes())]
assert abs(len(got) - n) <= 16, (len(got), n)
# The decoded audio is the source, up to the codec's delay and loss.
best = max(sum(a * b for a, b in zip(samples[:n - 64], got[d:])) /
           math.sqrt(sum(a * a for a in samples[:n - 64]) * sum(b * b for b in got[d:d + n - 64]))
           for d in range(0, 48))
assert best > 0.9, best
print("ok")
)", "'" + tmp.str() + "' " + std::to_string(seed));
}
