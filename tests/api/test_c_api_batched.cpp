// lt.h's batched forms with the shipped models: a stream group's streams
// against lt_stream_new on the same audio, and an image batch's images
// against lt_image_sample and lt_image_complete for the same seeds.
#include <cstring>
#include <string>
#include <vector>

#include "api/c_api_util.h"
#include "apps/cli.h"
#include "audio/audio_file.h"
#include "lt.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

const std::string kStreaming = std::string(LT_WEIGHTS_DIR) + "/asr-stream.safetensors";

// The phones and words settled from a stream since the last call, as "text start end" lines.
struct Settled {
  std::string phones, words;
  bool operator==(const Settled& o) const { return phones == o.phones && words == o.words; }
};
void drain(lt_stream* s, Settled& out) {
  lt_transcript* t = nullptr;
  REQUIRE(lt_stream_take_settled(s, &t) == LT_OK);
  auto line = [](lt_token k) { return std::string(k.text) + " " + std::to_string(k.start) + " " + std::to_string(k.end) + "\n"; };
  for (int64_t i = 0; i < lt_transcript_phones(t); ++i) out.phones += line(lt_transcript_phone(t, i));
  for (int64_t i = 0; i < lt_transcript_words(t); ++i) out.words += line(lt_transcript_word(t, i));
  lt_transcript_free(t);
}

}  // namespace

TEST_CASE("lt.h stream group: streams stepped together settle what each settles alone") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const std::vector<std::string> texts = {"open the door", "seven three nine", "turn the lights off please"};
  std::vector<std::vector<float>> audio;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string wav = dir.file("s" + std::to_string(i) + ".wav");
    REQUIRE(std::system(("espeak-ng -v en-us -w '" + wav + "' '" + texts[i] + "' 2>/dev/null").c_str()) == 0);
    audio.push_back(read_audio(wav));
  }
  const std::string lexicon = "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict";
  lt_recognizer_options o = lt_recognizer_default_options();
  o.beam = 8;
  o.lexicon = lexicon.c_str();
  lt_recognizer* r = nullptr;
  REQUIRE_MESSAGE(lt_recognizer_new(kStreaming.c_str(), &o, &r) == LT_OK, std::string(lt_last_error()));
  std::vector<Settled> alone(audio.size());
  for (const auto& a : audio) {
    lt_stream* s = nullptr;
    REQUIRE(lt_stream_new(r, &s) == LT_OK);
    REQUIRE(lt_stream_push(s, a.data(), int64_t(a.size())) == LT_OK);
    REQUIRE(lt_stream_finish(s) == LT_OK);
    CHECK(lt_stream_done(s) == 1);
    drain(s, alone[&a - audio.data()]);
    lt_stream_free(s);
  }
  lt_stream_group* g = nullptr;
  REQUIRE(lt_stream_group_new(r, &g) == LT_OK);
  std::vector<lt_stream*> streams(audio.size());
  std::vector<size_t> at(audio.size(), 0);
  std::vector<Settled> got(audio.size());
  for (auto& s : streams) REQUIRE(lt_stream_group_open(g, &s) == LT_OK);
  int64_t most = 0;
  for (bool left = true; left;) {
    left = false;
    for (size_t i = 0; i < audio.size(); ++i) {
      if (lt_stream_done(streams[i])) continue;
      left = true;
      const size_t n = std::min(audio[i].size() - at[i], size_t(rng.integer(100, 1600)));
      if (n > 0) REQUIRE(lt_stream_push(streams[i], audio[i].data() + at[i], int64_t(n)) == LT_OK);
      else REQUIRE(lt_stream_finish(streams[i]) == LT_OK);
      at[i] += n;
    }
    lt_stream_group_stats stats{};
    REQUIRE(lt_stream_group_step(g, &stats) == LT_OK);
    most = std::max(most, stats.stepped);
    for (size_t i = 0; i < audio.size(); ++i) drain(streams[i], got[i]);
  }
  CHECK(most == int64_t(audio.size()));
  for (size_t i = 0; i < audio.size(); ++i) {
    CHECK(got[i].phones == alone[i].phones);
    CHECK(got[i].words == alone[i].words);
    lt_stream_free(streams[i]);
  }
  CHECK(!alone[0].words.empty());  // words were decoded and compared too
  lt_stream_group_free(g);
  lt_recognizer_free(r);
}

TEST_CASE("lt.h image batch: images joining a running batch are lt_image_sample's and lt_image_complete's") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir dir;
  // 120 subpixels: the batch and each image alone run in milliseconds, under ASan too.
  Model m(tiny_image_checkpoint(dir, "m.safetensors", 12, 10, 1, AttentionKind::linear, seed));
  lt_model_info info;
  REQUIRE(lt_model_get_info(m.m, &info) == LT_OK);
  const int64_t S = info.height * info.width * info.channels;
  const uint64_t seeds[3] = {rng.gen(), rng.gen(), rng.gen()};
  // A completion of the lower rows of a sampled image.
  std::vector<uint8_t> image(static_cast<size_t>(S)), known(static_cast<size_t>(S), 0);
  REQUIRE(lt_image_sample(m.m, 1, nullptr, image.data(), nullptr) == LT_OK);
  std::fill(known.begin(), known.begin() + S / 2, 1);

  lt_image_batch* b = nullptr;
  REQUIRE_MESSAGE(lt_image_batch_new(m.m, &b) == LT_OK, std::string(lt_last_error()));
  lt_image_job* jobs[4] = {};
  REQUIRE(lt_image_batch_add(b, seeds[0], nullptr, nullptr, &jobs[0]) == LT_OK);
  int64_t running = 0;
  const int64_t second = S / 8, third = S / 3;  // the steps at which the others join
  for (int64_t step = 0; step < 3 * S && !(jobs[1] && lt_image_job_done(jobs[1]) && lt_image_job_done(jobs[0])); ++step) {
    if (step == second) REQUIRE(lt_image_batch_add(b, seeds[1], nullptr, nullptr, &jobs[1]) == LT_OK);
    if (step == third) REQUIRE(lt_image_batch_add(b, seeds[2], image.data(), known.data(), &jobs[2]) == LT_OK);
    REQUIRE(lt_image_batch_step(b, &running) == LT_OK);
    // Its first subpixel at add, then one a step.
    if (step > second && step - second + 2 <= S) CHECK(lt_image_job_decided(jobs[1]) == step - second + 2);
    if (step == second) CHECK(running == 2);
  }
  while (!lt_image_job_done(jobs[2])) REQUIRE(lt_image_batch_step(b, &running) == LT_OK);
  CHECK(running == 0);
  for (int j = 0; j < 2; ++j) {
    std::vector<uint8_t> want(static_cast<size_t>(S));
    lt_image_options o = lt_image_default_options();
    o.seed = seeds[j];
    REQUIRE(lt_image_sample(m.m, 1, &o, want.data(), nullptr) == LT_OK);
    CHECK(std::memcmp(lt_image_job_pixels(jobs[j]), want.data(), size_t(S)) == 0);
  }
  std::vector<uint8_t> want(static_cast<size_t>(S));
  lt_image_options o = lt_image_default_options();
  o.seed = seeds[2];
  REQUIRE(lt_image_complete(m.m, image.data(), known.data(), 1, &o, want.data()) == LT_OK);
  CHECK(std::memcmp(lt_image_job_pixels(jobs[2]), want.data(), size_t(S)) == 0);
  CHECK(std::memcmp(lt_image_job_pixels(jobs[2]), image.data(), size_t(S / 2)) == 0);
  for (lt_image_job* j : jobs) lt_image_job_free(j);
  CHECK(lt_image_batch_add(b, 1, image.data(), nullptr, &jobs[0]) == LT_ERROR_ARGUMENT);
  lt_image_batch_free(b);
}
