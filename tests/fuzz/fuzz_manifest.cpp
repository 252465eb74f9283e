// The speech corpus readers on arbitrary bytes: a lexicon and a manifest
// (cut at -LT-NEXT-FILE-; without a second part, the manifest alone and no
// lexicon), as lt-train --task asr reads them.
#include "fuzz_util.h"
#include "speech/speech_corpus.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = lt::fuzz::split_files(data, size, 2);
  const std::string dir = lt::fuzz::scratch_dir();
  const std::string lexicon = dir + "/lexicon.dict", manifest = dir + "/manifest.tsv";
  if (parts.size() == 1) {
    lt::fuzz::write_file(manifest, parts[0].data(), parts[0].size());
    lt::fuzz::expect_lt_error_only(manifest, [&] { lt::read_manifest(manifest); });
    return 0;
  }
  lt::fuzz::write_file(lexicon, parts[0].data(), parts[0].size());
  lt::fuzz::write_file(manifest, parts[1].data(), parts[1].size());
  lt::Lexicon lex;
  bool have = false;
  lt::fuzz::expect_lt_error_only(lexicon, [&] {
    lex = lt::read_lexicon(lexicon);
    have = true;
  });
  if (have) lt::fuzz::expect_lt_error_only(manifest, [&] { lt::read_manifest(manifest, &lex); });
  return 0;
}
