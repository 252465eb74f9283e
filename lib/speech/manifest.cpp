// Utterance lists: lt's TSV manifest and the LibriSpeech folder layout.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "common/error.h"
#include "io/file_bytes.h"
#include "speech/speech_corpus.h"

namespace lt {
namespace {

std::vector<std::string> lines_of(const std::string& path) {
  const std::vector<uint8_t> bytes = io::read_file_bytes(path);
  std::vector<std::string> lines;
  std::string text(bytes.begin(), bytes.end());
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    std::string line = text.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    at = end + 1;
  }
  return lines;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out(1);
  for (char c : line) {
    if (c == '\t')
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

std::vector<int32_t> pronounce(const std::string& words, const Lexicon* lexicon, const std::string& where) {
  check(lexicon != nullptr, where + ": no phones, and no lexicon to pronounce the words with");
  std::vector<int32_t> phones;
  for (const std::string& w : split_words(words)) {
    const std::vector<int32_t> p = lexicon->phones_of(w);
    check(!p.empty(), where + ": the lexicon has no word '" + w + "'");
    phones.insert(phones.end(), p.begin(), p.end());
  }
  return phones;
}

}  // namespace

std::vector<Utterance> read_manifest(const std::string& path, const Lexicon* lexicon) {
  const std::vector<std::string> lines = lines_of(path);
  check(!lines.empty() && !lines[0].empty(), path + ": empty manifest (expected a header line: path, phones, ...)");
  std::map<std::string, size_t> column;
  const std::vector<std::string> header = split_tabs(lines[0]);
  for (size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
  check(column.count("path") > 0, path + ":1: no 'path' column in the header (tab-separated: path, duration_s, "
                                         "speaker, words, phones)");
  check(column.count("phones") > 0 || column.count("words") > 0,
        path + ":1: neither a 'phones' nor a 'words' column: nothing to recognise");
  const std::string folder = folder_of(path);
  std::vector<Utterance> out;
  for (size_t n = 1; n < lines.size(); ++n) {
    if (lines[n].empty()) continue;
    const std::string where = path + ":" + std::to_string(n + 1);
    const std::vector<std::string> f = split_tabs(lines[n]);
    check(f.size() == header.size(), where + ": " + std::to_string(f.size()) + " fields, the header has " +
                                         std::to_string(header.size()));
    auto field = [&](const char* name) { return column.count(name) ? f[column[name]] : std::string(); };
    Utterance u;
    const std::string audio = field("path");
    check(!audio.empty(), where + ": empty path");
    u.audio = audio[0] == '/' ? audio : folder + audio;
    const std::string duration = field("duration_s");
    if (!duration.empty()) {
      char* end = nullptr;
      u.duration = std::strtod(duration.c_str(), &end);
      check(end == duration.c_str() + duration.size() && u.duration >= 0 && u.duration < 1e6,
            where + ": duration_s '" + duration + "' is not a number of seconds");
    }
    u.speaker = field("speaker");
    u.words = field("words");
    const std::string phones = field("phones");
    if (!phones.empty()) {
      for (const std::string& p : split_words(phones)) {
        const int32_t id = phone_id(p);
        check(id > 0, where + ": '" + p + "' is not one of the 39 ARPAbet phones");
        u.phones.push_back(id);
      }
    } else {
      u.phones = pronounce(u.words, lexicon, where);
    }
    out.push_back(std::move(u));
  }
  check(!out.empty(), path + ": no utterances after the header");
  return out;
}

std::vector<Utterance> read_librispeech(const std::string& dir, const Lexicon& lexicon, bool skip_unknown,
                                        int64_t* skipped) {
  auto entries = [](const std::string& d) {
    std::vector<std::string> names;
    if (DIR* h = opendir(d.c_str())) {
      while (dirent* e = readdir(h))
        if (e->d_name[0] != '.') names.push_back(e->d_name);
      closedir(h);
    }
    std::sort(names.begin(), names.end());
    return names;
  };
  auto is_dir = [](const std::string& p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  };
  check(is_dir(dir), dir + ": not a folder (expected LibriSpeech's <speaker>/<chapter>/*.trans.txt)");
  std::vector<Utterance> out;
  int64_t left_out = 0;
  for (const std::string& speaker : entries(dir)) {
    if (!is_dir(dir + "/" + speaker)) continue;
    for (const std::string& chapter : entries(dir + "/" + speaker)) {
      const std::string folder = dir + "/" + speaker + "/" + chapter;
      const std::string trans = folder + "/" + speaker + "-" + chapter + ".trans.txt";
      struct stat st;
      if (!is_dir(folder) || stat(trans.c_str(), &st) != 0) continue;
      const std::vector<std::string> lines = lines_of(trans);
      for (size_t n = 0; n < lines.size(); ++n) {
        if (lines[n].empty()) continue;
        const std::string where = trans + ":" + std::to_string(n + 1);
        const size_t space = lines[n].find(' ');
        check(space != std::string::npos && space > 0, where + ": expected '<utterance id> WORDS...'");
        Utterance u;
        const std::string id = lines[n].substr(0, space);
        check(id.find('/') == std::string::npos, where + ": utterance id '" + id + "' holds a '/'");
        u.audio = folder + "/" + id + ".flac";
        u.speaker = speaker;
        u.words = lines[n].substr(space + 1);
        try {
          u.phones = pronounce(u.words, &lexicon, where);
        } catch (const Error&) {
          if (!skip_unknown) throw;
          ++left_out;
          continue;
        }
        out.push_back(std::move(u));
      }
    }
  }
  check(!out.empty() || left_out > 0, dir + ": no <speaker>/<chapter>/<speaker>-<chapter>.trans.txt transcripts");
  if (skipped) *skipped = left_out;
  return out;
}

std::vector<Utterance> read_corpus(const std::string& path, const std::string& lexicon_path) {
  check(!path.empty(), "no corpus given: a manifest TSV or a LibriSpeech folder");
  const std::string lex = lexicon_path.empty() ? default_lexicon_path() : lexicon_path;
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return read_librispeech(path, read_lexicon(lex));
  if (!lexicon_path.empty() || stat(lex.c_str(), &st) == 0) {
    const Lexicon lexicon = read_lexicon(lex);
    return read_manifest(path, &lexicon);
  }
  return read_manifest(path);
}

}  // namespace lt
