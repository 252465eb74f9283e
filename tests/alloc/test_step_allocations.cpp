// Heap allocations of a state pool's step, counted by this binary's own
// operator new (a binary of its own: the replacement covers all of it).
// Once a pool has stepped its largest batch, a step allocates nothing
// (model/state_pool.h), on one thread or several, with runs of a row,
// whichever thread takes which slice.
#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "backend/device.h"
#include "model/pooled_sequences.h"
#include "model/state_pool.h"
#include "speech/random_speech_model.h"
#include "test_util.h"

namespace {
std::atomic<int64_t> news{0};
}  // namespace

void* operator new(size_t n) {
  news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

using namespace lt;
using namespace lt::test;

namespace {

// Steps of random subsets of 40 rows (some rows two or three positions, a
// run), made before counting, stepped in rounds; the allocations of three
// rounds once they have settled. Inputs: tokens [n] or frames [n, F].
int64_t allocations_of_steps(StatePool& pool, Rng& rng, int64_t features, int64_t head_width) {
  const int64_t live = 40;
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < live; ++i) rows.push_back(pool.acquire());
  struct Step {
    std::vector<int64_t> rows;
    Tensor inputs, heads;
  };
  std::vector<Step> steps;
  for (int s = 0; s < 12; ++s) {
    Step st;
    for (int64_t r : rows) {
      if (s > 0 && rng.uniform(0, 1) < 0.4) continue;  // the first steps every row: the largest batch
      const int64_t take = rng.uniform(0, 1) < 0.2 ? rng.integer(2, 3) : 1;
      for (int64_t j = 0; j < take; ++j) st.rows.push_back(r);
    }
    if (st.rows.empty()) st.rows.push_back(rows[0]);
    const int64_t n = int64_t(st.rows.size());
    if (features == 0) {
      std::vector<int32_t> tokens(static_cast<size_t>(n), 0);
      for (int32_t& t : tokens) t = int32_t(rng.integer(0, kPooledVocabulary - 1));
      st.inputs = Tensor::from_vector(tokens, {n});
    } else {
      st.inputs = Tensor::from_vector(rng.normals(size_t(n * features), 1), {n, features});
    }
    st.heads = Tensor::empty({n, head_width});
    steps.push_back(std::move(st));
  }
  auto round = [&] {
    const int64_t before = news.load();
    for (int64_t r : rows) pool.reset(r);  // a round starts every row afresh: within the model's positions
    for (Step& st : steps) pool.step(st.rows, st.inputs, st.heads);
    return news.load() - before;
  };
  // The first round makes the largest batch's buffers and the threads'
  // team; buffers of a thread's own (each op's, sized by the model, not the
  // batch) are made the first time that thread takes a slice, which one
  // round may not give it. A step that allocates every time never gets
  // two clean rounds.
  int clean = 0;
  for (int r = 0; r < 40 && clean < 2; ++r) clean = round() == 0 ? clean + 1 : 0;
  REQUIRE_MESSAGE(clean == 2, "every round of steps allocated");
  return round() + round() + round();
}

}  // namespace

TEST_CASE("a state pool's step allocates nothing once it has stepped its largest batch") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  struct Setting {
    const char* name;
    Products products;
    DType state;
    int threads;
  };
  const int before = num_threads();
  for (const Setting& s : {Setting{"fp32, two threads", Products::fp32, DType::f32, 2},
                           Setting{"fp32, one thread", Products::fp32, DType::f32, 1},
                           Setting{"bf16 products and state, two threads", Products::bf16, DType::bf16, 2}}) {
    if (s.products == Products::bf16 && !cpu_has_bf16()) continue;
    INFO(std::string(s.name));
    set_num_threads(s.threads);
    Precision precision;
    precision.products = s.products;
    precision.state = s.state;
    {
      INFO("tokens, heads of 32 and a feed-forward convolution");
      auto model = pooled_token_model(Device::cpu, 3, "elu", 32);
      model->init_parameters(seed);
      StatePool pool(*model, precision, 8);
      CHECK(allocations_of_steps(pool, rng, 0, kPooledVocabulary) == 0);
    }
    {
      INFO("a speech model: frames, position codes, a convolution");
      SpeechModel m = random_speech_model(rng, Direction::causal, 64, seed, 6, FrameWindow{3}, 3);
      StatePool pool(*m.model, precision, 8);
      CHECK(allocations_of_steps(pool, rng, m.frontend.features(), m.model->config().head.width()) == 0);
    }
  }
  set_num_threads(before);
}
