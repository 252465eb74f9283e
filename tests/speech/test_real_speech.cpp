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

TEST_CASE("real_speech.py: prompts read as spoken words, and spelled letters as the dictionary names them") {
  TempDir tmp;
  write_text(tmp.file("check.py"), R"(import os, re, sys
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
  const std::string command = "python3 '" + tmp.file("check.py") + "' '" + std::string(LT_SCRIPTS_DIR) +
                              "/speech' >'" + tmp.file("out.txt") + "' 2>'" + tmp.file("err.txt") + "'";
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
