// lt-bench asr: the real-time factor of recognition, offline (whole
// recordings through SpeechRecognizer) and streaming (SpeechStream fed
// pieces of --chunk-ms as a live source would), per thread count, with the
// front end, encoder and decoder apart. A stream also reports the compute
// per piece (the latency the recognizer adds) and its memory early and at
// the end, which stays flat however long the stream.
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <random>

#include "audio/audio_file.h"
#include "backend/device.h"
#include "benchmarks.h"
#include "common/error.h"
#include "core/precision_flags.h"
#include "speech/recognizer.h"
#include "speech/speech_corpus.h"

namespace lt::bench {
namespace {


// Resident memory of this process in MB (Linux /proc), the honest measure of
// what a stream holds: tensors, decoder, buffers and all.
double resident_mb() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

// Speech-like audio: gliding voiced tones in syllable-long bursts, with noise.
std::vector<float> bench_audio(double seconds, uint64_t seed) {
  std::mt19937 gen{uint32_t(seed)};
  std::normal_distribution<float> noise(0, 0.01f);
  std::vector<float> x(size_t(seconds * kSpeechSampleRate));
  double phase = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double t = double(i) / kSpeechSampleRate;
    phase += 2 * M_PI * (120 + 60 * std::sin(2 * M_PI * 0.4 * t)) / kSpeechSampleRate;
    const double syllable = 0.5 + 0.5 * std::sin(2 * M_PI * 4 * t);
    x[i] = float(0.3 * syllable * (std::sin(phase) + 0.5 * std::sin(3 * phase)) + noise(gen));
  }
  return x;
}

// -m's model, or a random one of the given shape with statistics of its own audio.
SpeechModel bench_model(const AsrBenchOptions& o, bool streaming, Device dev) {
  if (!o.model.empty()) return load_speech_model(o.model, dev);
  SpeechModel m;
  m.frontend = SpeechFrontEnd(FbankConfig{}, FrameWindow{o.stack, o.context, streaming ? 0 : o.context});
  const std::vector<float> raw = m.frontend.filterbank(bench_audio(10, 3));
  FeatureStats stats(m.frontend.fbank_config().bins);
  stats.add(raw.data(), int64_t(raw.size()) / m.frontend.fbank_config().bins);
  m.frontend.set_statistics(stats);
  TransformerConfig t{o.layers, o.heads, o.d_model / o.heads, o.d_model, 4 * o.d_model,
                      AttentionKind::linear, streaming ? Direction::causal : Direction::bidirectional, "elu", 0.1f};
  t.ff_conv = o.ff_conv;
  m.model = std::make_unique<SequenceModel>(
      speech_model_config(t, m.frontend.features(), kPhoneClasses, (2400 + o.stack - 1) / o.stack), dev);
  m.model->init_parameters(5);
  return m;
}

Row asr_row(const std::string& dev, int threads, const SpeechModel& m, const std::string& mode, int beam) {
  const TransformerConfig& t = m.model->config().transformer;
  Row row = environment_row(dev, threads);
  row.set("mode", mode).set("attention", attention_name(t)).set("layers", t.layers).set("d_model", t.d_model);
  row.set("params", m.model->params().numel()).set("frame_stack", int64_t(m.frontend.stack()));
  row.set("frame_past", int64_t(m.frontend.window().past)).set("frame_future", int64_t(m.frontend.window().future));
  row.set("ff_conv", t.ff_conv).set("beam", beam);
  return row;
}

// Every row has the stream's columns too (empty offline), so one table holds both modes.
void set_times(Row& row, const RecognitionTimes& times, double audio_s) {
  row.set("audio_s", audio_s).set("frontend_s", times.frontend).set("encoder_s", times.encoder);
  row.set("decoder_s", times.decoder).set("rtf", times.total() / audio_s).set("x_real_time", audio_s / times.total());
  for (const char* stream_only :
       {"chunk_ms", "compute_ms_per_chunk", "compute_ms_per_chunk_max", "rss_mb_at_10s", "rss_mb_at_end"})
    row.set(stream_only, "");
}

RecognizerOptions recognizer_options(const AsrBenchOptions& o, Device dev) {
  RecognizerOptions ro;
  ro.decoding.beam = o.beam;
  ro.precision = training_precision(o.bf16, false, dev);
  return ro;
}

void offline(const AsrBenchOptions& o, const std::string& dname, Writer& out) {
  const Device dev = parse_device(dname);
  SpeechModel m = bench_model(o, false, dev);
  const RecognizerOptions ro = recognizer_options(o, dev);
  const std::vector<float> audio = bench_audio(o.seconds, 11);
  for (int threads : o.thread_counts) {
    set_num_threads(threads);
    SpeechRecognizer r(m, ro);
    r.transcribe(audio);  // plans the buffers
    RecognitionTimes sum;
    for (int i = 0; i < o.repetitions; ++i) {
      const RecognitionTimes t = r.transcribe(audio).times;
      sum.frontend += t.frontend / o.repetitions;
      sum.encoder += t.encoder / o.repetitions;
      sum.decoder += t.decoder / o.repetitions;
    }
    Row row = asr_row(dname, threads, m, "offline", o.beam);
    set_times(row, sum, o.seconds);
    if (o.verbose) std::cerr << "asr offline, " << threads << " threads: RTF " << sum.total() / o.seconds << "\n";
    out.add(row);
  }
}

void streaming(const AsrBenchOptions& o, const std::string& dname, Writer& out) {
  const Device dev = parse_device(dname);
  SpeechModel m = bench_model(o, true, dev);
  const RecognizerOptions ro = recognizer_options(o, dev);
  const int64_t piece = int64_t(o.chunk_ms * kSpeechSampleRate / 1000);
  // One minute of audio repeated: a long stream without minutes of setup.
  const std::vector<float> audio = bench_audio(std::min(o.stream_seconds, 60.0), 13);
  const int64_t total = int64_t(o.stream_seconds * kSpeechSampleRate);
  for (int threads : o.thread_counts) {
    set_num_threads(threads);
    SpeechStream s(m, ro);
    std::vector<CtcToken> phones;
    std::vector<double> piece_ms;
    double rss_early = 0;
    for (int64_t at = 0; at < total; at += piece) {
      const int64_t n = std::min(piece, total - at);
      const int64_t from = at % int64_t(audio.size());
      const int64_t take = std::min(n, int64_t(audio.size()) - from);  // pieces divide a minute; the tail may be short
      const auto t0 = Clock::now();
      s.push(audio.data() + from, take);
      s.take_settled(phones);
      piece_ms.push_back(1e3 * seconds_since(t0));
      phones.clear();
      if (rss_early == 0 && at + n >= 10 * kSpeechSampleRate) rss_early = resident_mb();
    }
    s.finish();
    const double audio_s = double(s.samples()) / kSpeechSampleRate;
    Row row = asr_row(dname, threads, m, "stream", o.beam);
    set_times(row, s.times(), audio_s);
    const Stats p = Stats::of(piece_ms);
    row.set("chunk_ms", o.chunk_ms).set("compute_ms_per_chunk", p.mean);
    row.set("compute_ms_per_chunk_max", *std::max_element(piece_ms.begin(), piece_ms.end()));
    row.set("rss_mb_at_10s", rss_early).set("rss_mb_at_end", resident_mb());
    if (o.verbose) std::cerr << "asr stream, " << threads << " threads: RTF " << s.times().total() / audio_s << "\n";
    out.add(row);
  }
}

}  // namespace

void run_asr_bench(const AsrBenchOptions& o, Writer& out) {
  check(o.stream_seconds >= 10 || !o.has_mode("stream"), "--stream-seconds must be at least 10 (memory is read at 10 s)");
  for (const std::string& dname : o.devices) {
    require_device(parse_device(dname));
    for (const std::string& mode : o.modes) {
      check(mode == "offline" || mode == "stream", "--mode is offline or stream, not '" + mode + "'");
      if (mode == "offline") offline(o, dname, out);
      else streaming(o, dname, out);
    }
  }
}

}  // namespace lt::bench
