// The lexicon as a trie over phone sequences, for the word search: a node
// is a phone prefix, and holds the words pronounced exactly so (homophones
// share a node). Nodes are numbered breadth first with each node's children
// side by side, in phone order, so a search walks them as a contiguous range.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace lt {

class PronunciationTrie {
 public:
  struct Node {
    int32_t phone;        // the last phone of the prefix (0 at the root)
    int32_t first_child;  // children are nodes [first_child, first_child + children)
    int32_t children;
    int32_t first_word;   // words are word_ids()[first_word, first_word + words)
    int32_t words;
  };
  static constexpr int32_t kRoot = 0;

  // pronunciations[w] is word w's phones; empty ones are left out.
  explicit PronunciationTrie(const std::vector<std::vector<int32_t>>& pronunciations);
  const Node& node(int32_t id) const { return nodes_[size_t(id)]; }
  const int32_t* words_of(const Node& n) const { return word_ids_.data() + n.first_word; }
  int64_t size() const { return int64_t(nodes_.size()); }

 private:
  std::vector<Node> nodes_;
  std::vector<int32_t> word_ids_;
};

}  // namespace lt
