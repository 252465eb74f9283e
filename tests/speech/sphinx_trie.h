// A random trigram written as a CMU Sphinx binary trie by Debian's
// sphinx_lm_convert (which writes tries correctly, and only fails to read
// some back): the input of the tests of the scripts that read such tries.
#pragma once
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "io/temp_dir.h"
#include "speech/arpa_reference.h"
#include "test_util.h"

namespace lt::test {

// Whether sphinx_lm_convert (sphinxbase-utils) is here; if not, says the test skips.
inline bool have_sphinx_lm_convert() {
  if (std::system("command -v sphinx_lm_convert >/dev/null 2>&1") == 0) return true;
  std::printf("LT-SKIP: sphinx_lm_convert (sphinxbase-utils) is not installed\n");
  return false;
}

// A command's exit status, stdout dropped, stderr in *log.
inline int run_quietly(const TempDir& tmp, const std::string& command, std::string* log) {
  const std::string err = tmp.file("run.err");
  const int status = std::system((command + " >/dev/null 2>'" + err + "'").c_str());
  *log = read_text(err);
  return status;
}

// 1-9 words, the first of the vocabulary likeliest (about Zipf's law).
inline std::vector<std::string> zipf_sentence(Rng& rng, const std::vector<std::string>& vocabulary) {
  std::vector<std::string> s;
  for (int64_t k = rng.integer(1, 9); k > 0; --k) {
    const double r = std::floor(std::exp(rng.uniform(0, std::log(double(vocabulary.size()) + 1))) - 1);
    s.push_back(vocabulary[size_t(std::min<double>(double(vocabulary.size()) - 1, r))]);
  }
  return s;
}

// tmp/original.arpa, make_lm.py's trigram of `lines` such sentences, and
// tmp/model.lm.bin, the same written as a Sphinx trie.
inline void write_sphinx_trigram(const TempDir& tmp, Rng& rng, const std::vector<std::string>& vocabulary, int lines) {
  std::string text;
  for (int i = 0; i < lines; ++i) {
    std::string line;
    for (const std::string& w : zipf_sentence(rng, vocabulary)) line += (line.empty() ? "" : " ") + w;
    text += line + "\n";
  }
  write_text_file(tmp.file("text.txt"), text, false);
  std::string log;
  REQUIRE_MESSAGE(run_quietly(tmp, "python3 '" + std::string(LT_SCRIPTS_DIR) + "/speech/make_lm.py' '" +
                                       tmp.file("text.txt") + "' --order 3 -o '" + tmp.file("original.arpa") + "'",
                              &log) == 0, log);
  REQUIRE_MESSAGE(run_quietly(tmp, "sphinx_lm_convert -i '" + tmp.file("original.arpa") + "' -o '" +
                                       tmp.file("model.lm.bin") + "'", &log) == 0, log);
}

}  // namespace lt::test
