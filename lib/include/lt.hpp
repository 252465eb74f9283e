// lt.hpp: lt.h for C++. Each handle is a std::unique_ptr that frees it, and
// a failing call, wrapped in ok(), throws lt::api::Failure with the call's
// one-line message. Nothing here is compiled into liblt: the C API stays the
// contract.
//
//   #include <lt.hpp>
//
//   lt::api::Model model = lt::api::load_model("mnist.safetensors");
//   lt::api::State state = lt::api::new_state(model.get(), 1);
//   lt::api::ok(lt_state_step(state.get(), &pixel, head.data()));
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "lt.h"

namespace lt::api {

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws Failure with lt_last_error() unless status is LT_OK.
inline void ok(lt_status status) {
  if (status != LT_OK) throw Failure(lt_last_error());
}

struct Free {
  void operator()(lt_model* p) const { lt_model_free(p); }
  void operator()(lt_state* p) const { lt_state_free(p); }
  void operator()(lt_recognizer* p) const { lt_recognizer_free(p); }
  void operator()(lt_transcript* p) const { lt_transcript_free(p); }
  void operator()(lt_stream* p) const { lt_stream_free(p); }
  void operator()(lt_recipe* p) const { lt_recipe_free(p); }
  void operator()(float* p) const { lt_audio_free(p); }
  void operator()(uint8_t* p) const { lt_bytes_free(p); }
  void operator()(char* p) const { lt_string_free(p); }
  void operator()(lt_audio_reader* p) const { lt_audio_reader_free(p); }
  void operator()(lt_corpus* p) const { lt_corpus_free(p); }
};
using Model = std::unique_ptr<lt_model, Free>;
using State = std::unique_ptr<lt_state, Free>;
using Recognizer = std::unique_ptr<lt_recognizer, Free>;
using Transcript = std::unique_ptr<lt_transcript, Free>;
using Stream = std::unique_ptr<lt_stream, Free>;
using Recipe = std::unique_ptr<lt_recipe, Free>;
using Audio = std::unique_ptr<float, Free>;    // lt_audio_read's samples
using String = std::unique_ptr<char, Free>;    // lt_evaluate's and lt_export's text

// lt_find_shipped: the full path of a file lt ships ("asr.safetensors", "lexicon").
inline std::string find_shipped(const std::string& name) {
  char* path = nullptr;
  ok(lt_find_shipped(name.c_str(), &path));
  const String kept(path);
  return path;
}

inline Model load_model(const std::string& path, const lt_model_options& options = lt_model_default_options()) {
  lt_model* m = nullptr;
  ok(lt_model_load(path.c_str(), &options, &m));
  return Model(m);
}

inline lt_model_info model_info(const lt_model* model) {
  lt_model_info info;
  ok(lt_model_get_info(model, &info));
  return info;
}

inline State new_state(lt_model* model, int64_t batch) {
  lt_state* s = nullptr;
  ok(lt_state_new(model, batch, &s));
  return State(s);
}

inline Recognizer new_recognizer(const std::string& model_path, const lt_recognizer_options& options) {
  lt_recognizer* r = nullptr;
  ok(lt_recognizer_new(model_path.c_str(), &options, &r));
  return Recognizer(r);
}

inline Transcript transcribe(lt_recognizer* recognizer, const float* samples, int64_t count) {
  lt_transcript* t = nullptr;
  ok(lt_transcribe(recognizer, samples, count, &t));
  return Transcript(t);
}

inline Stream new_stream(lt_recognizer* recognizer) {
  lt_stream* s = nullptr;
  ok(lt_stream_new(recognizer, &s));
  return Stream(s);
}

// The phones (and words) settled since the last call, and the tentative tail.
inline Transcript take_settled(lt_stream* stream) {
  lt_transcript* t = nullptr;
  ok(lt_stream_take_settled(stream, &t));
  return Transcript(t);
}
inline Transcript tentative(const lt_stream* stream) {
  lt_transcript* t = nullptr;
  ok(lt_stream_tentative(stream, &t));
  return Transcript(t);
}

// ---- what the tools read and write: audio, corpora, PNGs; lt-train's recipe ----

using AudioReader = std::unique_ptr<lt_audio_reader, Free>;
using Bytes = std::unique_ptr<uint8_t, Free>;  // lt_png_read's pixels, lt_state_to_bytes's bytes
using Corpus = std::unique_ptr<lt_corpus, Free>;

// lt_audio_read_format: a whole file (raw PCM when format.sample_rate > 0), mono at 16 kHz.
inline std::vector<float> read_audio(const std::string& path, const lt_audio_format& format = lt_audio_default_format()) {
  float* samples = nullptr;
  int64_t count = 0;
  ok(lt_audio_read_format(path.c_str(), &format, &samples, &count));
  const Audio kept(samples);
  return std::vector<float>(samples, samples + count);
}

inline AudioReader new_audio_reader(int fd, const std::string& name, const lt_audio_format& format,
                                    double follow_seconds = 0) {
  lt_audio_reader* r = nullptr;
  ok(lt_audio_reader_new(fd, name.c_str(), &format, follow_seconds, &r));
  return AudioReader(r);
}

// The reader's next samples into out (replaced); false once the input has ended.
inline bool next_samples(lt_audio_reader* reader, std::vector<float>& out) {
  const float* samples = nullptr;
  int64_t count = 0;
  int more = 0;
  ok(lt_audio_reader_read(reader, &samples, &count, &more));
  out.assign(samples, samples + count);
  return more != 0;
}

inline Corpus read_corpus(const std::string& path, const std::string& lexicon = "") {
  lt_corpus* c = nullptr;
  ok(lt_corpus_read(path.c_str(), lexicon.c_str(), &c));
  return Corpus(c);
}

// lt_png_write: height x width x channels bytes (1 to 4 channels) to path.
inline void write_png(const std::string& path, const std::vector<uint8_t>& pixels, int64_t height, int64_t width,
                      int64_t channels) {
  if (int64_t(pixels.size()) != height * width * channels)
    throw Failure(path + ": " + std::to_string(pixels.size()) + " bytes for a " + std::to_string(width) + "x" +
                  std::to_string(height) + "x" + std::to_string(channels) + " image");
  ok(lt_png_write(path.c_str(), pixels.data(), height, width, channels));
}

inline Recipe new_recipe(const std::string& task) {
  lt_recipe* r = nullptr;
  ok(lt_recipe_new(task.c_str(), &r));
  return Recipe(r);
}

// lt_recipe_get: an option's value as text.
inline std::string recipe_value(const lt_recipe* recipe, const std::string& option) {
  char* value = nullptr;
  ok(lt_recipe_get(recipe, option.c_str(), &value));
  const String kept(value);
  return value;
}

}  // namespace lt::api
