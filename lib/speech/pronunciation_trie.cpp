// Built in two passes: a trie with a map of children per node, then
// renumbered breadth first into the flat, contiguous layout.
#include "speech/pronunciation_trie.h"

#include <map>

namespace lt {

PronunciationTrie::PronunciationTrie(const std::vector<std::vector<int32_t>>& pronunciations) {
  struct Building {
    int32_t phone;
    std::map<int32_t, int32_t> children;  // phone -> node, in phone order
    std::vector<int32_t> words;
  };
  std::vector<Building> built = {Building{0, {}, {}}};
  for (size_t w = 0; w < pronunciations.size(); ++w) {
    if (pronunciations[w].empty()) continue;
    int32_t at = kRoot;
    for (int32_t phone : pronunciations[w]) {
      auto [it, fresh] = built[size_t(at)].children.try_emplace(phone, int32_t(built.size()));
      if (fresh) built.push_back(Building{phone, {}, {}});
      at = it->second;
    }
    built[size_t(at)].words.push_back(int32_t(w));
  }
  // Breadth first: a node's children get consecutive numbers.
  std::vector<int32_t> order = {kRoot};
  nodes_.reserve(built.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const Building& b = built[size_t(order[i])];
    Node n{b.phone, int32_t(order.size()), int32_t(b.children.size()), int32_t(word_ids_.size()),
           int32_t(b.words.size())};
    for (const auto& [phone, child] : b.children) order.push_back(child);
    word_ids_.insert(word_ids_.end(), b.words.begin(), b.words.end());
    nodes_.push_back(n);
  }
}

}  // namespace lt
