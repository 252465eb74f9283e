// lt.h: speech recognition of recordings and streams, set up as lt-asr sets
// it up (lib/speech/recognizer.h does the work).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "api_internal.h"
#include "audio/audio_file.h"
#include "backend/device.h"
#include "core/precision_flags.h"
#include "speech/recognizer.h"

using lt::api::ArgumentError;
using lt::api::require;

struct lt_recognizer {
  lt::SpeechModel model;
  lt::Lexicon lexicon;
  std::unique_ptr<lt::LanguageModel> word_lm, phone_lm;
  lt::RecognizerOptions options;
  std::unique_ptr<lt::SpeechRecognizer> offline;  // made on the first recording
};

struct lt_transcript {
  std::vector<std::string> phone_text, word_text;
  std::vector<double> phone_start, phone_end, word_start, word_end;
  double seconds = 0;
  lt::RecognitionTimes times;
};

struct lt_stream {
  lt_recognizer* recognizer = nullptr;
  std::unique_ptr<lt::SpeechStream> stream;
};

namespace {

// Tokens with frames (encoder positions) as lt-asr writes them: from the
// start of the first position to the end of the last, cut at the audio's end.
std::unique_ptr<lt_transcript> transcript_of(const lt::SpeechFrontEnd& frontend,
                                             const std::vector<lt::CtcToken>& phones,
                                             const std::vector<lt::RecognizedWord>& words, double seconds,
                                             const lt::RecognitionTimes& times) {
  auto t = std::make_unique<lt_transcript>();
  t->seconds = seconds;
  t->times = times;
  auto end_of = [&](int64_t position) { return std::min(seconds, lt::position_start_seconds(frontend, position + 1)); };
  for (const lt::CtcToken& p : phones) {
    t->phone_text.push_back(lt::phone_names()[size_t(p.label)]);
    t->phone_start.push_back(lt::position_start_seconds(frontend, p.start));
    t->phone_end.push_back(end_of(p.end));
  }
  for (const lt::RecognizedWord& w : words) {
    t->word_text.push_back(w.word);
    t->word_start.push_back(lt::position_start_seconds(frontend, w.first_frame));
    t->word_end.push_back(end_of(w.last_frame));
  }
  return t;
}

lt_token token(const std::vector<std::string>& text, const std::vector<double>& start, const std::vector<double>& end,
               int64_t i) {
  if (i < 0 || i >= int64_t(text.size())) return {nullptr, 0, 0};
  return {text[size_t(i)].c_str(), start[size_t(i)], end[size_t(i)]};
}

void transcribe(lt_recognizer* r, const std::vector<float>& samples, lt_transcript** out) {
  if (!r->offline) r->offline = std::make_unique<lt::SpeechRecognizer>(r->model, r->options);
  const lt::Transcript t = r->offline->transcribe(samples);
  *out = transcript_of(r->model.frontend, t.phones, t.words, t.duration, t.times).release();
}

}  // namespace

lt_recognizer_options lt_recognizer_default_options(void) {
  const lt::RecognizerOptions d;
  lt_recognizer_options o{};
  o.device = "cpu";
  o.precision = "fp32";
  o.beam = 1;
  o.max_delay = 0.5;
  o.prune = -10;
  o.pause_seconds = d.pause_seconds;
  o.phone_lm_weight = d.phone_search.lm_weight;
  o.phone_bonus = d.phone_search.word_bonus;
  o.lm_weight = d.words.lm_weight;
  o.word_bonus = d.words.word_bonus;
  o.word_beam = d.words.beam;
  return o;
}

lt_status lt_recognizer_new(const char* model_path, const lt_recognizer_options* options, lt_recognizer** recognizer) {
  if (recognizer) *recognizer = nullptr;
  return lt::api::guarded([&] {
    require(model_path, "model_path");
    require(recognizer, "recognizer");
    const lt_recognizer_options o = options ? *options : lt_recognizer_default_options();
    require(o.device, "options->device");
    if (o.beam < 1) throw ArgumentError("lt_recognizer_new: beam must be >= 1, got " + std::to_string(o.beam));
    if (o.phone_lm && o.beam == 1) throw lt::Error("lt_recognizer_new: a phone language model needs a beam search (beam > 1)");
    if (o.word_lm && !o.lexicon) throw lt::Error("lt_recognizer_new: a word language model needs a lexicon");
    if (o.word_list && !o.lexicon) throw lt::Error("lt_recognizer_new: a word list needs a lexicon to pronounce it");
    if (o.grammar && !o.lexicon) throw lt::Error("lt_recognizer_new: a grammar needs a lexicon to pronounce it");
    if (o.grammar && (o.word_list || o.word_lm))
      throw lt::Error("lt_recognizer_new: a grammar takes the place of a word list and a word model");
    // Written so that NaN fails each test: every comparison with it is false.
    if (!(o.max_delay >= 0 && o.max_delay <= 3600 && o.pause_seconds >= 0 && o.pause_seconds <= 3600))
      throw ArgumentError("lt_recognizer_new: max_delay and pause_seconds must be seconds in 0..3600, got " +
                          std::to_string(o.max_delay) + " and " + std::to_string(o.pause_seconds));
    if (!std::isfinite(o.prune))
      throw ArgumentError("lt_recognizer_new: prune must be a finite log-probability, got " + std::to_string(o.prune));
    if (!(std::isfinite(o.phone_lm_weight) && o.phone_lm_weight >= 0 && std::isfinite(o.lm_weight) && o.lm_weight >= 0))
      throw ArgumentError("lt_recognizer_new: phone_lm_weight and lm_weight must be finite and >= 0, got " +
                          std::to_string(o.phone_lm_weight) + " and " + std::to_string(o.lm_weight));
    if (!(std::isfinite(o.phone_bonus) && std::isfinite(o.word_bonus)))
      throw ArgumentError("lt_recognizer_new: phone_bonus and word_bonus must be finite, got " +
                          std::to_string(o.phone_bonus) + " and " + std::to_string(o.word_bonus));
    if (o.word_beam < 1) throw ArgumentError("lt_recognizer_new: word_beam must be >= 1, got " + std::to_string(o.word_beam));
    auto r = std::make_unique<lt_recognizer>();
    const lt::Device device = lt::parse_device(o.device);
    lt::require_device(device);
    r->model = lt::load_speech_model(model_path, device);
    lt::RecognizerOptions& ro = r->options;
    bool bf16 = false, tf32 = false;
    lt::api::parse_precision(o.precision, "options->precision", bf16, tf32);
    ro.precision = lt::training_precision(bf16, tf32, device);
    ro.decoding.beam = ro.phone_search.beam = o.beam;
    ro.phone_search.lm_weight = o.phone_lm_weight;
    ro.phone_search.word_bonus = o.phone_bonus;
    ro.words = {o.word_beam, o.lm_weight, o.word_bonus};
    const int delay = int(lt::delay_positions(r->model.frontend, o.max_delay));
    ro.decoding.max_delay = ro.phone_search.max_delay = ro.words.max_delay = delay;
    ro.decoding.prune = ro.phone_search.prune = ro.words.prune = float(o.prune);
    ro.pause_seconds = o.pause_seconds;
    if (o.phone_lm) {
      r->phone_lm = std::make_unique<lt::LanguageModel>(lt::load_language_model(o.phone_lm));
      ro.phone_lm = r->phone_lm.get();
    }
    if (o.lexicon) {
      r->lexicon = lt::read_lexicon(o.lexicon);
      if (o.word_list) r->lexicon = lt::read_vocabulary(o.word_list, r->lexicon);
      ro.lexicon = &r->lexicon;
      if (o.word_lm) {
        r->word_lm = std::make_unique<lt::LanguageModel>(lt::load_language_model(o.word_lm));
        ro.lm = r->word_lm.get();
      }
      if (o.grammar) {
        r->word_lm = std::make_unique<lt::LanguageModel>(lt::use_grammar(o.grammar, r->lexicon, ro.words));
        ro.lm = r->word_lm.get();
      }
    }
    *recognizer = r.release();
  });
}

void lt_recognizer_free(lt_recognizer* recognizer) { delete recognizer; }

const char* lt_default_lexicon(void) { return lt::default_lexicon_path(); }

// Any file libsndfile reads: lt_audio_read_format without a raw layout (api_audio_input.cpp).
lt_status lt_audio_read(const char* path, float** samples, int64_t* count) {
  return lt_audio_read_format(path, nullptr, samples, count);
}

void lt_audio_free(float* samples) { std::free(samples); }

lt_status lt_transcribe(lt_recognizer* recognizer, const float* samples, int64_t count, lt_transcript** transcript) {
  if (transcript) *transcript = nullptr;
  return lt::api::guarded([&] {
    require(recognizer, "recognizer");
    require(samples, "samples");
    require(transcript, "transcript");
    if (count < 0) throw ArgumentError("lt_transcribe: count must be >= 0, got " + std::to_string(count));
    transcribe(recognizer, std::vector<float>(samples, samples + count), transcript);
  });
}

lt_status lt_transcribe_file(lt_recognizer* recognizer, const char* path, lt_transcript** transcript) {
  if (transcript) *transcript = nullptr;
  return lt::api::guarded([&] {
    require(recognizer, "recognizer");
    require(path, "path");
    require(transcript, "transcript");
    transcribe(recognizer, lt::read_audio(path), transcript);
  });
}

int64_t lt_transcript_phones(const lt_transcript* t) { return t ? int64_t(t->phone_text.size()) : 0; }
int64_t lt_transcript_words(const lt_transcript* t) { return t ? int64_t(t->word_text.size()) : 0; }
lt_token lt_transcript_phone(const lt_transcript* t, int64_t i) {
  return t ? token(t->phone_text, t->phone_start, t->phone_end, i) : lt_token{nullptr, 0, 0};
}
lt_token lt_transcript_word(const lt_transcript* t, int64_t i) {
  return t ? token(t->word_text, t->word_start, t->word_end, i) : lt_token{nullptr, 0, 0};
}
double lt_transcript_seconds(const lt_transcript* t) { return t ? t->seconds : 0; }
lt_timings lt_transcript_timings(const lt_transcript* t) {
  return t ? lt_timings{t->times.frontend, t->times.encoder, t->times.decoder} : lt_timings{0, 0, 0};
}
void lt_transcript_free(lt_transcript* transcript) { delete transcript; }

lt_status lt_stream_new(lt_recognizer* recognizer, lt_stream** stream) {
  if (stream) *stream = nullptr;
  return lt::api::guarded([&] {
    require(recognizer, "recognizer");
    require(stream, "stream");
    auto s = std::make_unique<lt_stream>();
    s->recognizer = recognizer;
    s->stream = std::make_unique<lt::SpeechStream>(recognizer->model, recognizer->options);
    *stream = s.release();
  });
}

lt_status lt_stream_push(lt_stream* stream, const float* samples, int64_t count) {
  return lt::api::guarded([&] {
    require(stream, "stream");
    require(samples, "samples");
    if (count < 0) throw ArgumentError("lt_stream_push: count must be >= 0, got " + std::to_string(count));
    stream->stream->push(samples, count);
  });
}

lt_status lt_stream_set_rate(lt_stream* stream, double sample_rate) {
  return lt::api::guarded([&] {
    require(stream, "stream");
    stream->stream->set_input_rate(sample_rate);
  });
}

lt_status lt_stream_finish(lt_stream* stream) {
  return lt::api::guarded([&] {
    require(stream, "stream");
    stream->stream->finish();
  });
}

lt_status lt_stream_take_settled(lt_stream* stream, lt_transcript** settled) {
  if (settled) *settled = nullptr;
  return lt::api::guarded([&] {
    require(stream, "stream");
    require(settled, "settled");
    std::vector<lt::CtcToken> phones;
    std::vector<lt::RecognizedWord> words;
    stream->stream->take_settled(phones, &words);
    const double seconds = double(stream->stream->samples()) / lt::kSpeechSampleRate;
    *settled = transcript_of(stream->recognizer->model.frontend, phones, words, seconds, stream->stream->times()).release();
  });
}

lt_status lt_stream_tentative(const lt_stream* stream, lt_transcript** tail) {
  if (tail) *tail = nullptr;
  return lt::api::guarded([&] {
    require(stream, "stream");
    require(tail, "tail");
    const double seconds = double(stream->stream->samples()) / lt::kSpeechSampleRate;
    *tail = transcript_of(stream->recognizer->model.frontend, stream->stream->tentative(),
                          stream->stream->tentative_words(), seconds, stream->stream->times())
                .release();
  });
}

void lt_stream_free(lt_stream* stream) { delete stream; }

struct lt_stream_group {
  lt_recognizer* recognizer = nullptr;
  std::unique_ptr<lt::SpeechStreamGroup> group;
};

lt_status lt_stream_group_new(lt_recognizer* recognizer, lt_stream_group** group) {
  if (group) *group = nullptr;
  return lt::api::guarded([&] {
    require(recognizer, "recognizer");
    require(group, "group");
    auto g = std::make_unique<lt_stream_group>();
    g->recognizer = recognizer;
    g->group = std::make_unique<lt::SpeechStreamGroup>(recognizer->model, recognizer->options);
    *group = g.release();
  });
}

lt_status lt_stream_group_open(lt_stream_group* group, lt_stream** stream) {
  if (stream) *stream = nullptr;
  return lt::api::guarded([&] {
    require(group, "group");
    require(stream, "stream");
    auto s = std::make_unique<lt_stream>();
    s->recognizer = group->recognizer;
    s->stream = group->group->open();
    *stream = s.release();
  });
}

lt_status lt_stream_group_step(lt_stream_group* group, lt_stream_group_stats* stats) {
  return lt::api::guarded([&] {
    require(group, "group");
    const lt::StreamStepStats s = group->group->step();
    if (stats) *stats = {s.streams, s.stepped, s.positions, s.rounds, s.finished, s.seconds, s.encoder_seconds};
  });
}

int lt_stream_done(const lt_stream* stream) { return stream && stream->stream->done() ? 1 : 0; }

void lt_stream_group_free(lt_stream_group* group) { delete group; }
