// The binary copy behind load_language_model (lt/language_model.h): the
// parsed model as it lies in memory (words, contexts, the arc table with its
// empty slots), so that loading is reading. The ARPA file is the source of
// truth: the copy is named by a hash of its bytes, carries that hash and size
// again, and is checked whole before use; any failure falls back to parsing.
//
// Format (little-endian): "LTLM", u32 version, u64 source size, u64 source
// hash, i32 order, bos, eos, unk, begin; u64 n_counts, i64 counts[]; u64
// n_words, each word as u32 length + bytes; u64 n_contexts, each as i32
// parent, word, suffix, length, f64 backoff; u64 table size, u64 arc count,
// each slot as u64 key, f64 logp, i32 next, u8 has_prob.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "lt/error.h"
#include "lt/language_model.h"

namespace lt {
namespace {

constexpr char kMagic[4] = {'L', 'T', 'L', 'M'};
constexpr uint32_t kVersion = 1;

// The file's bytes; empty when it cannot be read whole.
std::string read_whole(const std::string& path) {
  std::string bytes;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return bytes;
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    bytes.resize(size_t(st.st_size));
    size_t got = 0;
    for (ssize_t n = 1; got < bytes.size() && n > 0; got += size_t(std::max<ssize_t>(n, 0)))
      n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (got != bytes.size()) bytes.clear();
  }
  close(fd);
  return bytes;
}

std::string cache_folder() {
  if (const char* dir = std::getenv("LT_CACHE_DIR"); dir && *dir) return dir;
  if (const char* dir = std::getenv("XDG_CACHE_HOME"); dir && *dir) return std::string(dir) + "/lt";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/lt";
  return {};
}

// mkdir -p, quietly: a folder that cannot be made only means no copy.
void make_folders(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '/') mkdir(path.substr(0, i).c_str(), 0755);
}

class Writer {
 public:
  template <class T>
  void put(T v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void put_bytes(const std::string& s) { out_ += s; }
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

// Reads fields in order; any read past the end makes ok() false.
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
  // A count of records of at least `record` bytes each that the rest can hold.
  bool fits(uint64_t count, size_t record) const { return ok_ && count <= (in_.size() - pos_) / record; }
  bool ok() const { return ok_; }
  bool at_end() const { return ok_ && pos_ == in_.size(); }

 private:
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace

class LanguageModelFile {
 public:
  static std::string write(const LanguageModel& lm, uint64_t size, uint64_t hash) {
    Writer w;
    for (char c : kMagic) w.put(c);
    w.put(kVersion);
    w.put(size);
    w.put(hash);
    for (int32_t v : {int32_t(lm.order_), lm.bos_, lm.eos_, lm.unk_, lm.begin_.context}) w.put(v);
    w.put(uint64_t(lm.ngram_counts_.size()));
    for (int64_t c : lm.ngram_counts_) w.put(c);
    w.put(uint64_t(lm.words_.size()));
    for (const std::string& word : lm.words_) {
      w.put(uint32_t(word.size()));
      w.put_bytes(word);
    }
    w.put(uint64_t(lm.contexts_.size()));
    for (const LanguageModel::Context& c : lm.contexts_) {
      for (int32_t v : {c.parent, c.word, c.suffix, c.length}) w.put(v);
      w.put(c.backoff);
    }
    w.put(uint64_t(lm.arcs_.size()));
    w.put(uint64_t(lm.arc_count_));
    for (const LanguageModel::Arc& a : lm.arcs_) {
      w.put(a.key);
      w.put(a.logp);
      w.put(a.next);
      w.put(uint8_t(a.has_prob));
    }
    return w.bytes();
  }

  // The model, or false when the bytes are not a whole, consistent copy of
  // the source with this size and hash.
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
    const uint64_t orders = r.get<uint64_t>();
    if (lm.order_ < 1 || orders != uint64_t(lm.order_) || !r.fits(orders, 8)) return false;
    lm.ngram_counts_.resize(orders);
    for (int64_t& c : lm.ngram_counts_) c = r.get<int64_t>();
    const uint64_t words = r.get<uint64_t>();
    if (!r.fits(words, 4) || words >= (1u << 31)) return false;
    lm.words_.resize(words);
    lm.ids_.reserve(words);
    for (uint64_t i = 0; i < words; ++i) {
      lm.words_[i] = r.get_bytes(r.get<uint32_t>());
      if (!r.ok() || !lm.ids_.emplace(lm.words_[i], int32_t(i)).second) return false;
    }
    const auto word_ok = [&](int32_t w, bool none_ok) { return (none_ok && w == -1) || (w >= 0 && uint64_t(w) < words); };
    if (!word_ok(lm.bos_, false) || !word_ok(lm.eos_, false) || !word_ok(lm.unk_, true)) return false;
    const uint64_t contexts = r.get<uint64_t>();
    if (contexts < 1 || !r.fits(contexts, 24) || contexts >= (1u << 31)) return false;
    lm.contexts_.resize(contexts);
    for (uint64_t i = 0; i < contexts; ++i) {
      LanguageModel::Context& c = lm.contexts_[i];
      c.parent = r.get<int32_t>();
      c.word = r.get<int32_t>();
      c.suffix = r.get<int32_t>();
      c.length = r.get<int32_t>();
      c.backoff = r.get<double>();
      // Parents and suffixes are shorter histories; only the empty one has no parent.
      const bool root = i == 0;
      if (root != (c.parent == -1) || !word_ok(c.word, root) || (!root && uint64_t(c.parent) >= contexts) ||
          c.suffix < 0 || uint64_t(c.suffix) >= contexts || c.length < 0 || c.length >= lm.order_ ||
          !std::isfinite(c.backoff))
        return false;
      if (!root && lm.contexts_[size_t(c.parent)].length != c.length - 1) return false;
    }
    // Suffix links shorten the history, so every walk along them ends at the empty one.
    for (const LanguageModel::Context& c : lm.contexts_)
      if (lm.contexts_[size_t(c.suffix)].length >= std::max(c.length, 1)) return false;
    if (lm.begin_.context < 0 || uint64_t(lm.begin_.context) >= contexts) return false;
    const uint64_t table = r.get<uint64_t>(), arcs = r.get<uint64_t>();
    if (table < 1024 || (table & (table - 1)) || !r.fits(table, 21) || arcs * 2 > table) return false;
    lm.arcs_.resize(table);
    lm.arc_count_ = arcs;
    uint64_t used = 0;
    for (LanguageModel::Arc& a : lm.arcs_) {
      a.key = r.get<uint64_t>();
      a.logp = r.get<double>();
      a.next = r.get<int32_t>();
      const uint8_t has_prob = r.get<uint8_t>();
      a.has_prob = has_prob == 1;
      if (a.key == LanguageModel::kNoArc) continue;
      ++used;
      const uint64_t context = a.key >> 32, word = a.key & 0xffffffffu;
      if (context >= contexts || word >= words || has_prob > 1 || !std::isfinite(a.logp) || a.logp > 0 ||
          a.next < -1 || (a.next >= 0 && uint64_t(a.next) >= contexts))
        return false;
    }
    if (!r.at_end() || used != arcs) return false;
    // Lookups end: the table is at most half full. Every word has a
    // unigram, where score()'s walk ends.
    for (uint64_t w = 0; w < words; ++w) {
      const LanguageModel::Arc* a = lm.arc(0, int32_t(w));
      if (!a || !a->has_prob) return false;
    }
    return true;
  }
};

LanguageModel load_language_model(const std::string& arpa_path) {
  const std::string source = read_whole(arpa_path);
  const std::string folder = cache_folder();
  if (source.empty() || folder.empty()) return read_arpa(arpa_path);  // read_arpa says what is wrong
  const uint64_t size = source.size(), hash = std::hash<std::string_view>{}(source);
  char name[64];
  std::snprintf(name, sizeof name, "/lm-%016llx-%llu.ltlm", (unsigned long long)hash, (unsigned long long)size);
  const std::string copy = folder + name;
  if (const int fd = open(copy.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    // Mapped, not read: the copy is tens of megabytes, read once.
    struct stat st {};
    void* map = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0
                    ? mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0)
                    : MAP_FAILED;
    close(fd);
    if (map != MAP_FAILED) {
      LanguageModel lm;
      const bool ok = LanguageModelFile::read({static_cast<const char*>(map), size_t(st.st_size)}, size, hash, lm);
      munmap(map, size_t(st.st_size));
      if (ok) return lm;
    }
  }
  LanguageModel lm = read_arpa(arpa_path);
  make_folders(folder);
  const std::string bytes = LanguageModelFile::write(lm, size, hash);
  const std::string partial = copy + ".partial-" + std::to_string(getpid());
  if (std::FILE* f = std::fopen(partial.c_str(), "wb")) {
    const bool written = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    if (std::fclose(f) == 0 && written && std::rename(partial.c_str(), copy.c_str()) == 0) return lm;
    std::remove(partial.c_str());
  }
  return lm;
}

}  // namespace lt
