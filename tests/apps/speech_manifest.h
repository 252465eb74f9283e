// Utterances synthesized with espeak-ng and a manifest over them, for tests
// that train or score speech models end to end.
#pragma once
#include <cstdlib>
#include <string>

#include "apps/cli.h"

namespace lt::test {

struct Sentence {
  const char* words;
  const char* phones;  // CMU dictionary pronunciations, stress removed
};
constexpr Sentence kSentences[] = {
    {"HELLO WORLD", "HH AH L OW W ER L D"},
    {"GOOD MORNING", "G UH D M AO R N IH NG"},
    {"THE CAT SAT", "DH AH K AE T S AE T"},
    {"SEVEN DAYS", "S EH V AH N D EY Z"},
};

// Writes the utterances with espeak-ng (22.05 kHz WAV: read_audio resamples)
// and a manifest over them; voices alternate so that PER comes per speaker.
inline std::string synthesize_manifest(const TempDir& dir, const std::string& name) {
  std::string tsv = "path\tduration_s\tspeaker\twords\tphones\n";
  int i = 0;
  for (const Sentence& s : kSentences) {
    const std::string voice = i % 2 ? "en-us" : "en-gb";
    const std::string wav = name + "-" + std::to_string(i) + ".wav";
    const std::string cmd = "espeak-ng -v " + voice + " -w '" + dir.file(wav) + "' '" + s.words + "' 2>/dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
    tsv += wav + "\t0\t" + voice + "\t" + s.words + "\t" + s.phones + "\n";
    ++i;
  }
  const std::string path = dir.file(name + ".tsv");
  write_bytes(path, std::vector<uint8_t>(tsv.begin(), tsv.end()));
  return path;
}

}  // namespace lt::test
