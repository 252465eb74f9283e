// The binary copy behind load_language_model (speech/language_model.h): the
// parsed model's tables as they lie in memory, so that loading maps the file
// and reads nothing twice. The ARPA file is the source of truth: the copy is
// named by a hash of its bytes, carries that hash and size again, and is
// checked whole before use; any failure falls back to parsing.
//
// Format (little-endian, x86-64 layout): "LTLM", u32 version, u64 source
// size, u64 source hash, i32 order, bos, eos, unk, begin, u32 0; u64
// n_counts, i64 counts[]; u64 n_words, each word as u32 length + bytes, zero
// bytes to a multiple of 8; u64 n_contexts, the Context structs; u64 table
// size, u64 arc count, the Arc structs (padding bytes zero).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <string_view>

#include "common/error.h"
#include "io/file_bytes.h"
#include "speech/language_model.h"

namespace lt {
namespace {

constexpr char kMagic[4] = {'L', 'T', 'L', 'M'};
constexpr uint32_t kVersion = 2;

std::string cache_folder() {
  if (const char* dir = std::getenv("LT_CACHE_DIR"); dir && *dir) return dir;
  if (const char* dir = std::getenv("XDG_CACHE_HOME"); dir && *dir) return std::string(dir) + "/lt";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/lt";
  return {};
}

class Writer {
 public:
  template <class T>
  void put(const T& v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void put_bytes(const std::string& s) { out_ += s; }
  void align8() { out_.append((8 - out_.size() % 8) % 8, '\0'); }
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

// Reads fields in order from the mapped copy; any read past the end makes
// ok() false. Tables are read in place.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <class T>
  T get() {
    T v{};
    if (in_.size() - pos_ < sizeof v) {
      ok_ = false;
      return v;
    }
    std::memcpy(&v, in_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string get_bytes(size_t n) {
    if (in_.size() - pos_ < n) {
      ok_ = false;
      return {};
    }
    pos_ += n;
    return std::string(in_.substr(pos_ - n, n));
  }
  // count records of T where the reader stands (8-aligned), or null.
  template <class T>
  const T* table(uint64_t count) {
    if (!ok_ || pos_ % alignof(T) != 0 || count > (in_.size() - pos_) / sizeof(T)) {
      ok_ = false;
      return nullptr;
    }
    const T* t = reinterpret_cast<const T*>(in_.data() + pos_);
    pos_ += count * sizeof(T);
    return t;
  }
  void align8() { pos_ = std::min(in_.size(), (pos_ + 7) / 8 * 8); }
  bool ok() const { return ok_; }
  bool at_end() const { return ok_ && pos_ == in_.size(); }

 private:
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace

class LanguageModelFile {
  using Context = LanguageModel::Context;
  using Arc = LanguageModel::Arc;
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the copy's tables are the machine's own structs");
  static_assert(sizeof(Context) == 24 && offsetof(Context, backoff) == 16, "Context is the copy's record");
  static_assert(sizeof(Arc) == 24 && offsetof(Arc, next) == 16 && offsetof(Arc, has_prob) == 20,
                "Arc is the copy's record");

 public:
  static std::string write(const LanguageModel& lm, uint64_t size, uint64_t hash) {
    Writer w;
    for (char c : kMagic) w.put(c);
    w.put(kVersion);
    w.put(size);
    w.put(hash);
    for (int32_t v : {int32_t(lm.order_), lm.bos_, lm.eos_, lm.unk_, lm.begin_.context, 0}) w.put(v);
    w.put(uint64_t(lm.ngram_counts_.size()));
    for (int64_t c : lm.ngram_counts_) w.put(c);
    w.put(uint64_t(lm.words_.size()));
    for (const std::string& word : lm.words_) {
      w.put(uint32_t(word.size()));
      w.put_bytes(word);
    }
    w.align8();
    w.put(uint64_t(lm.context_count_));
    for (size_t i = 0; i < lm.context_count_; ++i) w.put(lm.contexts_[i]);
    uint64_t arcs = 0;
    for (size_t i = 0; i < lm.arc_slots_; ++i) arcs += lm.arcs_[i].key != LanguageModel::kNoArc;
    w.put(uint64_t(lm.arc_slots_));
    w.put(arcs);
    for (size_t i = 0; i < lm.arc_slots_; ++i) {
      Arc a;
      std::memset(&a, 0, sizeof a);  // no stray padding bytes in the file
      a.key = lm.arcs_[i].key;
      a.logp = lm.arcs_[i].logp;
      a.next = lm.arcs_[i].next;
      a.has_prob = lm.arcs_[i].has_prob;
      w.put(a);
    }
    return w.bytes();
  }

  // Maps the copy at path of the model in arpa_path into lm, which keeps the
  // mapping; false when there is none or it is not one (read).
  static bool map(const std::string& path, const std::string& arpa_path, uint64_t size, uint64_t hash,
                  LanguageModel& lm) {
    lm.name_ = arpa_path;  // messages name the file the user gave
    lm.copy_path_ = path;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st {};
    const size_t bytes = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? size_t(st.st_size) : 0;
    // Not populated: a short job touches a few of its pages.
    void* map = bytes ? mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    close(fd);
    if (map == MAP_FAILED) return false;
    lm.storage_ = std::shared_ptr<const void>(map, [bytes](const void* p) { munmap(const_cast<void*>(p), bytes); });
    return read({static_cast<const char*>(map), bytes}, size, hash, lm);
  }

  // Fills lm from the mapped bytes, its tables pointing into them; false
  // when they are not a whole, consistent copy of the source with this size
  // and hash. Every index is checked, so that no lookup, walk or score can
  // leave the tables or loop: the contexts here, each arc when a lookup
  // finds it (LanguageModel::arc), and every word's unigram here, where a
  // score's walk ends.
  static bool read(std::string_view bytes, uint64_t size, uint64_t hash, LanguageModel& lm) {
    Reader r(bytes);
    for (char c : kMagic)
      if (r.get<char>() != c) return false;
    if (r.get<uint32_t>() != kVersion || r.get<uint64_t>() != size || r.get<uint64_t>() != hash) return false;
    lm.order_ = r.get<int32_t>();
    lm.bos_ = r.get<int32_t>();
    lm.eos_ = r.get<int32_t>();
    lm.unk_ = r.get<int32_t>();
    lm.begin_.context = r.get<int32_t>();
    r.get<int32_t>();
    const uint64_t orders = r.get<uint64_t>();
    if (lm.order_ < 1 || orders != uint64_t(lm.order_) || orders > 64) return false;
    lm.ngram_counts_.resize(orders);
    for (int64_t& c : lm.ngram_counts_) c = r.get<int64_t>();
    const uint64_t words = r.get<uint64_t>();
    if (!r.ok() || words >= bytes.size()) return false;
    lm.words_.resize(words);
    lm.ids_.reserve(words);
    for (uint64_t i = 0; i < words; ++i) {
      lm.words_[i] = r.get_bytes(r.get<uint32_t>());
      if (!r.ok() || !lm.ids_.emplace(lm.words_[i], int32_t(i)).second) return false;
    }
    r.align8();
    const auto word_ok = [&](int32_t w, bool none_ok) { return (none_ok && w == -1) || (w >= 0 && uint64_t(w) < words); };
    if (!word_ok(lm.bos_, false) || !word_ok(lm.eos_, false) || !word_ok(lm.unk_, true)) return false;

    const uint64_t contexts = r.get<uint64_t>();
    const Context* ctx = r.table<Context>(contexts);
    if (!ctx || contexts < 1 || contexts >= (1u << 31)) return false;
    for (uint64_t i = 0; i < contexts; ++i) {
      const Context& c = ctx[i];
      // Only the empty history has no parent, and a parent is one word shorter.
      const bool root = i == 0;
      if (root != (c.parent == -1) || !word_ok(c.word, root) || (!root && uint64_t(c.parent) >= contexts) ||
          c.suffix < 0 || uint64_t(c.suffix) >= contexts || c.length < 0 || c.length >= lm.order_ ||
          !(std::fabs(c.backoff) <= LanguageModel::kMaxLog) || (root ? c.length != 0 : ctx[c.parent].length != c.length - 1))
        return false;
    }
    // Suffix links shorten the history, so every walk along them ends at the empty one.
    for (uint64_t i = 0; i < contexts; ++i)
      if (ctx[ctx[i].suffix].length >= std::max(ctx[i].length, 1)) return false;
    if (lm.begin_.context < 0 || uint64_t(lm.begin_.context) >= contexts) return false;

    const uint64_t slots = r.get<uint64_t>(), arcs = r.get<uint64_t>();
    const Arc* table = r.table<Arc>(slots);
    if (!table || slots < 1024 || (slots & (slots - 1)) || arcs * 2 > slots || !r.at_end()) return false;
    lm.contexts_ = ctx;
    lm.context_count_ = contexts;
    lm.arcs_ = table;
    lm.arc_slots_ = slots;
    // Every word has a unigram, where score()'s walk ends.
    try {
      for (uint64_t w = 0; w < words; ++w) {
        const Arc* a = lm.arc(0, int32_t(w));
        if (!a || !a->has_prob) return false;
      }
    } catch (const Error&) {
      return false;
    }
    return true;
  }
};

LanguageModel load_language_model(const std::string& arpa_path) {
  const std::string folder = cache_folder();
  std::vector<uint8_t> source;
  try {
    source = io::read_file_bytes(arpa_path);
  } catch (const Error&) {
    return read_arpa(arpa_path);  // which says what is wrong with the file
  }
  if (folder.empty()) return read_arpa(arpa_path);
  const uint64_t size = source.size();
  const uint64_t hash = std::hash<std::string_view>{}({reinterpret_cast<const char*>(source.data()), source.size()});
  char name[64];
  std::snprintf(name, sizeof name, "/lm-%016llx-%llu.ltlm", (unsigned long long)hash, (unsigned long long)size);
  const std::string copy = folder + name;
  if (LanguageModel lm; LanguageModelFile::map(copy, arpa_path, size, hash, lm)) return lm;
  LanguageModel lm = read_arpa(arpa_path);
  // A folder that cannot be made or written only means no copy.
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  const std::string bytes = LanguageModelFile::write(lm, size, hash);
  try {
    io::write_file_atomically(copy, bytes.data(), bytes.size());
  } catch (const Error&) {
  }
  return lm;
}

}  // namespace lt
