// SpeechStream and SpeechStreamGroup (speech/recognizer.h): samples -> filterbank
// frames as they complete -> normalised -> each position's window of frames
// once its last frame (its future context included) is there -> one batched
// encoder step per position over the group's StatePool (each row at its own
// position; a row restarts after every pause, speech/causal_encoder.h says
// why) -> the CTC decoder and word search frame by frame. Buffers grow to
// the largest step and are reused, so a stream of any length runs in
// constant memory.
#include <algorithm>
#include <chrono>

#include "audio/audio_file.h"
#include "common/error.h"
#include "core/clock.h"
#include "model/state_pool.h"
#include "speech/recognizer.h"
#include "speech/stream_member.h"

namespace lt {

namespace {
// A stream of its own decodes a long push in pieces of this many samples,
// so its buffers stay small (about 8 positions a piece).
constexpr int64_t kPiece = 4096;
}  // namespace

struct SpeechStreamGroup::Impl {
  // A row to start with: a stream alone is a group of one, and a group doubles as it fills.
  explicit Impl(SpeechModel& model, const RecognizerOptions& options) : pool(*model.model, options.precision, 1) {}
  StatePool pool;
  std::shared_ptr<const WordVocabulary> words;  // the lexicon's, made once for every stream
  std::mutex members_mutex;  // members: opened and closed from any thread
  std::vector<std::shared_ptr<speech::StreamMember>> members;
  std::mutex step_mutex;  // steps one at a time
  // The step's own, grown and reused.
  std::vector<std::shared_ptr<speech::StreamMember>> work;
  std::vector<int64_t> rows;
  std::vector<speech::StreamMember*> stepping;
  Tensor inputs, heads;
};

SpeechStreamGroup::SpeechStreamGroup(SpeechModel& model, const RecognizerOptions& options)
    : model_(model), options_(options) {
  const SequenceModelConfig& c = model.model->config();
  check(c.family == "speech", "streaming recognition needs a speech model");
  check(c.runs_as_rnn(), "streaming needs a causal-linear model (its state has a fixed size); this one is " +
                            c.encoder_name() + ": transcribe whole files instead");
  impl_ = std::make_unique<Impl>(model, options);
  if (options.lexicon) impl_->words = WordSearch::vocabulary(*options.lexicon, options.lm);
}

SpeechStreamGroup::~SpeechStreamGroup() = default;

std::unique_ptr<SpeechStream> SpeechStreamGroup::open() {
  auto m = std::make_shared<speech::StreamMember>(model_, options_, positions_in(model_.frontend, options_.pause_seconds),
                                                  impl_->words);
  {
    std::lock_guard<std::mutex> lock(impl_->members_mutex);
    impl_->members.push_back(m);
  }
  return std::unique_ptr<SpeechStream>(new SpeechStream(m));
}

int64_t SpeechStreamGroup::streams() const {
  std::lock_guard<std::mutex> lock(impl_->members_mutex);
  return int64_t(impl_->members.size());
}

int64_t SpeechStreamGroup::state_bytes() const { return impl_->pool.row_bytes(); }

namespace {
// The front end of one stream's taken samples: the positions they complete
// (all that are left once it finishes) as windows of frames in m.inputs.
void front_end(speech::StreamMember& m, const SpeechFrontEnd& fe) {
  auto t0 = std::chrono::steady_clock::now();
  const int bins = fe.fbank_config().bins;
  const FrameWindow& w = fe.window();
  const std::vector<float>* audio = &m.taken;
  if (m.resampler) {
    m.resampled.clear();
    m.resampler->process(m.taken.data(), m.taken.size(), m.resampled);
    if (m.finishing) m.resampler->flush(m.resampled);
    audio = &m.resampled;
  }
  m.raw.clear();
  m.fbank.push(audio->data(), int64_t(audio->size()), m.raw);
  m.samples += int64_t(audio->size());
  fe.normalize(m.raw.data(), int64_t(m.raw.size()) / bins);
  m.frames.insert(m.frames.end(), m.raw.begin(), m.raw.end());
  const int64_t held = int64_t(m.frames.size()) / bins, frames = m.first + held;
  // Position p is complete once frame p k + k - 1 + future has arrived; at
  // the end the last positions read past it (the last frame repeats, as in window_frames).
  int64_t end = m.t;
  if (m.finishing)
    end = fe.positions(frames);
  else if (frames > w.future)
    end = (frames - w.future) / w.stack;
  m.ready = std::max<int64_t>(0, end - m.t);
  m.inputs.resize(size_t(m.ready * fe.features()));
  if (m.ready > 0) window_frames(m.frames.data(), m.first, held, frames - 1, bins, w, m.t, m.ready, m.inputs.data());
  m.t += m.ready;
  // Later positions read from frame t k - past on.
  const int64_t drop = std::clamp<int64_t>(m.t * w.stack - w.past - m.first, 0, held);
  m.frames.erase(m.frames.begin(), m.frames.begin() + drop * bins);
  m.first += drop;
  m.times.frontend += seconds_since(t0);
}

// The decoders over the step's logits, and what settles handed out.
void decode(speech::StreamMember& m, int64_t classes) {
  auto t0 = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(m.out);
  for (int64_t i = 0; i < m.ready; ++i) m.decoder.push(m.logits.data() + i * classes);
  if (m.finishing) m.decoder.finish();
  m.decoder.take_settled(m.settled, &m.settled_words);
  m.times.decoder += seconds_since(t0);
  if (m.finishing) m.finished = true;
  m.done = m.finished;
  m.samples_out = m.samples;
  m.positions_out = m.t;
  m.times_out = m.times;
}
}  // namespace

StreamStepStats SpeechStreamGroup::step() {
  std::lock_guard<std::mutex> step_lock(impl_->step_mutex);
  auto t0 = std::chrono::steady_clock::now();
  Impl& g = *impl_;
  StatePool& pool = g.pool;
  StreamStepStats stats;
  // The open streams; the rows of closed ones go back to the pool.
  g.work.clear();
  {
    std::lock_guard<std::mutex> lock(g.members_mutex);
    auto closed = [&](const std::shared_ptr<speech::StreamMember>& m) {
      if (!m->closed) return false;
      if (m->row >= 0) pool.release(m->row);
      return true;
    };
    g.members.erase(std::remove_if(g.members.begin(), g.members.end(), closed), g.members.end());
    g.work = g.members;
  }
  stats.streams = int64_t(g.work.size());
  // Take what each stream queued; a new stream gets its row.
  g.stepping.clear();
  for (auto& m : g.work) {
    if (m->row < 0) m->row = pool.acquire();
    m->taken.clear();
    {
      std::lock_guard<std::mutex> lock(m->in);
      m->taken.swap(m->queued);
      m->finishing = m->finish_asked && !m->finished;
    }
    if (!m->taken.empty() || m->finishing) g.stepping.push_back(m.get());
  }
  const SpeechFrontEnd& fe = model_.frontend;
  const int64_t n = int64_t(g.stepping.size());
#pragma omp parallel for schedule(dynamic) if (n > 1)
  for (int64_t i = 0; i < n; ++i) front_end(*g.stepping[size_t(i)], fe);

  // One batched step for every position ready: a stream's positions follow
  // one another (a run of its row), so its state is read once for all of
  // them. A pause restarts the row before its next position, which the
  // step cannot know ahead: the positions after one are stepped again, from
  // the restarted row, in the next round (pauses are rare; a round costs
  // what its positions do).
  const int64_t F = fe.features(), C = model_.model->config().head.width();
  for (speech::StreamMember* m : g.stepping) {
    m->logits.resize(size_t(m->ready * C));
    m->redo = 0;
    if (m->ready > 0) ++stats.stepped;
    stats.positions += m->ready;
  }
  auto te = std::chrono::steady_clock::now();
  int64_t rounds = 0;
  for (bool more = stats.positions > 0; more; ++rounds) {
    g.rows.clear();
    for (speech::StreamMember* m : g.stepping)
      for (int64_t p = m->redo; p < m->ready; ++p) g.rows.push_back(m->row);
    const int64_t b = int64_t(g.rows.size());
    if (!g.inputs.defined() || g.inputs.dim(0) < b) {
      g.inputs = Tensor::empty({std::max<int64_t>(b, 2 * (g.inputs.defined() ? g.inputs.dim(0) : 0)), F});
      g.heads = Tensor::empty({g.inputs.dim(0), C});
    }
    Tensor in = g.inputs.rows(0, b), out = g.heads.rows(0, b);
    int64_t i = 0;
    for (speech::StreamMember* m : g.stepping)
      for (int64_t p = m->redo; p < m->ready; ++p) std::copy_n(m->inputs.data() + p * F, F, in.data() + (i++) * F);
    pool.step(g.rows, in, out);
    i = 0;
    more = false;
    for (speech::StreamMember* m : g.stepping) {
      const int64_t from = m->redo;
      m->redo = m->ready;
      for (int64_t p = from; p < m->ready; ++p) {
        float* row = m->logits.data() + p * C;
        std::copy_n(out.data() + (i++) * C, C, row);
        if (p >= m->redo) continue;  // stepped before its row restarted: stepped again next round
        if (m->pauses.ends_pause(row, C)) {
          pool.reset(m->row);
          m->redo = p + 1;
          more |= m->redo < m->ready;
        }
      }
    }
  }
  stats.rounds = rounds;
  stats.encoder_seconds = seconds_since(te);
  // The encoder's time shared out by positions.
  if (stats.positions > 0)
    for (speech::StreamMember* m : g.stepping)
      m->times.encoder += stats.encoder_seconds * double(m->ready) / double(stats.positions);
  // In runs of kDecodeRun streams a thread: each asks for the next one's
  // search state before decoding its own, so that it arrives meanwhile.
  constexpr int64_t kDecodeRun = 4;
#pragma omp parallel for schedule(dynamic, kDecodeRun) if (n > 1)
  for (int64_t i = 0; i < n; ++i) {
    if ((i + 1) % kDecodeRun != 0 && i + 1 < n) g.stepping[size_t(i + 1)]->decoder.prefetch();
    decode(*g.stepping[size_t(i)], C);
  }
  for (speech::StreamMember* m : g.stepping) stats.finished += m->finishing;
  stats.seconds = seconds_since(t0);
  return stats;
}

// ---- SpeechStream ----

SpeechStream::SpeechStream(SpeechModel& model, const RecognizerOptions& options)
    : own_(std::make_unique<SpeechStreamGroup>(model, options)) {
  std::unique_ptr<SpeechStream> mine = own_->open();
  member_ = std::move(mine->member_);
}

SpeechStream::SpeechStream(std::shared_ptr<speech::StreamMember> member) : member_(std::move(member)) {}

SpeechStream::~SpeechStream() {
  if (member_) member_->closed = true;
}

void SpeechStream::push(const float* samples, int64_t n) {
  if (n < 0) throw Error("SpeechStream: a push of " + std::to_string(n) + " samples");
  int64_t at = 0;
  do {
    // Alone, a long push is decoded a piece at a time; in a group it is queued whole.
    const int64_t take = own_ ? std::min(kPiece, n - at) : n - at;
    {
      std::lock_guard<std::mutex> lock(member_->in);
      if (member_->finish_asked) throw Error("SpeechStream: push after finish");
      member_->pushed = true;
      member_->queued.insert(member_->queued.end(), samples + at, samples + at + take);
    }
    at += take;
    if (own_) own_->step();
  } while (at < n);
}

void SpeechStream::set_input_rate(double rate) {
  if (!(rate >= 1000 && rate <= 384000))
    throw Error("SpeechStream: a sample rate of " + std::to_string(rate) + " Hz (1000 to 384000 are read)");
  std::lock_guard<std::mutex> lock(member_->in);
  if (member_->pushed) throw Error("SpeechStream: the sample rate is set before the first push");
  // The step's front end reads it only once audio is queued, which this lock orders after.
  member_->resampler = rate == kSpeechSampleRate ? nullptr : std::make_unique<audio::Resampler>(rate, "stream");
}

void SpeechStream::finish() {
  {
    std::lock_guard<std::mutex> lock(member_->in);
    if (member_->finish_asked) return;
    member_->finish_asked = true;
  }
  if (own_) own_->step();
}

void SpeechStream::take_settled(std::vector<CtcToken>& phones, std::vector<RecognizedWord>* words) {
  std::lock_guard<std::mutex> lock(member_->out);
  phones.insert(phones.end(), member_->settled.begin(), member_->settled.end());
  member_->settled.clear();
  if (words) words->insert(words->end(), member_->settled_words.begin(), member_->settled_words.end());
  member_->settled_words.clear();
}

std::vector<CtcToken> SpeechStream::tentative() const {
  std::lock_guard<std::mutex> lock(member_->out);
  return member_->decoder.tentative_phones();
}

std::vector<RecognizedWord> SpeechStream::tentative_words() const {
  std::lock_guard<std::mutex> lock(member_->out);
  return member_->decoder.tentative_words();
}

bool SpeechStream::done() const {
  std::lock_guard<std::mutex> lock(member_->out);
  return member_->done;
}

int64_t SpeechStream::samples() const {
  std::lock_guard<std::mutex> lock(member_->out);
  return member_->samples_out;
}

int64_t SpeechStream::positions() const {
  std::lock_guard<std::mutex> lock(member_->out);
  return member_->positions_out;
}

RecognitionTimes SpeechStream::times() const {
  std::lock_guard<std::mutex> lock(member_->out);
  return member_->times_out;
}

}  // namespace lt
