// phrase_model (speech/language_model.h): a phrase list written as the ARPA
// model of its prefix tree, read by the one ARPA reader.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "common/error.h"
#include "speech/language_model.h"

namespace lt {
namespace {
// log10 of what a word off the phrases gets: finite, so that sums stay
// ordered, and beyond any acoustic evidence.
const char* const kNever = "-1e9";
}  // namespace

LanguageModel phrase_model(const std::vector<std::vector<std::string>>& phrases, const std::string& name) {
  std::set<std::vector<std::string>> unique;
  for (const std::vector<std::string>& p : phrases) {
    check(!p.empty() && p.size() <= 30, name + ": a phrase needs 1 to 30 words, has " + std::to_string(p.size()));
    std::vector<std::string> upper;
    for (const std::string& w : p) {
      std::string u;
      for (char c : w) u += char(std::toupper(static_cast<unsigned char>(c)));
      check(!u.empty() && u.front() != '<', name + ": '" + w + "' cannot be a word of a phrase");
      upper.push_back(u);
    }
    unique.insert(upper);
  }
  check(!unique.empty(), name + ": no phrases");
  // For every prefix (after <s>): how many phrases begin so, and go on with each next word.
  std::map<std::vector<std::string>, std::map<std::string, int>> next;
  std::map<std::vector<std::string>, int> begin;
  std::set<std::string> words;
  size_t longest = 0;
  for (const std::vector<std::string>& p : unique) {
    std::vector<std::string> prefix = {"<s>"};
    for (size_t i = 0; i <= p.size(); ++i) {
      ++begin[prefix];
      ++next[prefix][i < p.size() ? p[i] : "</s>"];
      if (i < p.size()) prefix.push_back(p[i]), words.insert(p[i]);
    }
    longest = std::max(longest, p.size());
  }
  const int order = int(longest) + 2;  // <s> w1 .. wk </s>
  std::vector<std::vector<std::string>> lines(size_t(order + 1));
  char number[32];
  auto join = [](const std::vector<std::string>& ws) {
    std::string out;
    for (const std::string& w : ws) out += (out.empty() ? "" : " ") + w;
    return out;
  };
  const std::string never = kNever;
  lines[1].push_back(never + "\t<s>\t" + never);
  lines[1].push_back(never + "\t</s>");
  for (const std::string& w : words) lines[1].push_back(never + "\t" + w + "\t" + never);
  for (const auto& [prefix, counts] : next) {
    for (const auto& [w, n] : counts) {
      std::vector<std::string> gram = prefix;
      gram.push_back(w);
      std::snprintf(number, sizeof number, "%.9f", std::log10(double(n) / double(begin.at(prefix))));
      const bool context = w != "</s>" && int(gram.size()) < order;
      lines[gram.size()].push_back(std::string(number) + "\t" + join(gram) + (context ? "\t" + never : ""));
    }
  }
  std::string text = "\\data\\\n";
  for (int n = 1; n <= order; ++n) text += "ngram " + std::to_string(n) + "=" + std::to_string(lines[size_t(n)].size()) + "\n";
  for (int n = 1; n <= order; ++n) {
    text += "\n\\" + std::to_string(n) + "-grams:\n";
    for (const std::string& l : lines[size_t(n)]) text += l + "\n";
  }
  text += "\n\\end\\\n";
  return read_arpa_text(name, text);
}

}  // namespace lt
