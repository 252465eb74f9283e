// The Bi-LSTM encoder (the paper's Table 3 baseline): its forward pass
// against a float64 LSTM written here from the equations, its BPTT against
// central differences, padding, and a speech model built on it: checkpoints
// with PyTorch's names, and no recurrent form.
#include <cmath>

#include "io/temp_dir.h"
#include "model/bilstm.h"
#include "speech/speech_model.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

// Row r's outputs [n, 2H] from torch.nn.LSTM's equations in float64, over
// its own n frames x [n, F] alone.
std::vector<double> reference_bilstm(const Parameters& p, int64_t layers, int64_t H, std::vector<double> x,
                                     int64_t n) {
  auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
  for (int64_t l = 0; l < layers; ++l) {
    const int64_t in = int64_t(x.size()) / n;
    std::vector<double> out(n * 2 * H, 0.0);
    for (int d = 0; d < 2; ++d) {
      const std::string k = "lstm.%_l" + std::to_string(l) + (d ? "_reverse" : "");
      auto get = [&](const char* what) {
        std::string name = k;
        name.replace(name.find('%'), 1, what);
        return to_double(p.value(name));
      };
      const std::vector<double> w_ih = get("weight_ih"), w_hh = get("weight_hh"), b_ih = get("bias_ih"),
                                b_hh = get("bias_hh");
      std::vector<double> h(H, 0.0), c(H, 0.0), a(4 * H);
      for (int64_t s = 0; s < n; ++s) {
        const int64_t t = d ? n - 1 - s : s;
        for (int64_t g = 0; g < 4 * H; ++g) {
          a[g] = b_ih[g] + b_hh[g];
          for (int64_t i = 0; i < in; ++i) a[g] += w_ih[g * in + i] * x[t * in + i];
          for (int64_t j = 0; j < H; ++j) a[g] += w_hh[g * H + j] * h[j];
        }
        for (int64_t j = 0; j < H; ++j) {
          const double i = sigmoid(a[j]), f = sigmoid(a[H + j]), g = std::tanh(a[2 * H + j]), o = sigmoid(a[3 * H + j]);
          c[j] = f * c[j] + i * g;
          h[j] = o * std::tanh(c[j]);
          out[t * 2 * H + d * H + j] = h[j];
        }
      }
    }
    x = out;
  }
  return x;
}

struct Lstm {
  Parameters params;
  std::unique_ptr<BiLstm> lstm;
  Lstm(const LstmConfig& c, int64_t features, uint64_t seed) {
    lstm = std::make_unique<BiLstm>(c, features, params);
    params.allocate(Device::cpu);
    lstm->init_parameters(seed);
    pass = lstm->new_pass();
  }
  std::unique_ptr<EncoderPass> pass;  // what a forward leaves for its backward
};

SequenceModelConfig small_bilstm_config(int64_t features) {
  return speech_model_config(LstmConfig{2, 4, 0.f}, features, 5, 64);
}

}  // namespace

TEST_CASE("a BiLstm's outputs are torch.nn.LSTM's equations in float64, each row over its own frames") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t B = 3, L = 9, F = 4, H = 5, layers = 3;
  Lstm m(LstmConfig{layers, H, 0.f}, F, seed);
  const Tensor x = rng.randn({B, L, F});
  const std::vector<int32_t> lengths = {int32_t(L), int32_t(rng.integer(1, L - 1)), int32_t(rng.integer(1, L - 1))};
  Tensor y = Tensor::empty({B, L, 2 * H});
  m.lstm->forward(x, Tensor::from_vector(lengths, {B}), y, ForwardOptions{}, *m.pass);
  const std::vector<double> xs = to_double(x);
  std::vector<double> want(B * L * 2 * H, 0.0);  // padded positions stay zero
  for (int64_t r = 0; r < B; ++r) {
    const int64_t n = lengths[r];
    const std::vector<double> row =
        reference_bilstm(m.params, layers, H, std::vector<double>(xs.begin() + r * L * F, xs.begin() + (r * L + n) * F), n);
    std::copy(row.begin(), row.end(), want.begin() + r * L * 2 * H);
  }
  CHECK(rel_error(y, want) < 1e-5);
  const std::vector<float> got = y.to_vector();
  for (int64_t r = 0; r < B; ++r)
    for (int64_t i = lengths[r] * 2 * H; i < L * 2 * H; ++i) REQUIRE(got[r * L * 2 * H + i] == 0.f);
}

TEST_CASE("BiLstm backpropagation through time matches central differences, padded frames passing no gradient") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t B = 2, L = 6, F = 3, H = 3;
  for (const float dropout : {0.f, 0.3f}) {  // nn.LSTM's dropout between layers: its masks are the seed's
    INFO("dropout " << dropout);
    Lstm m(LstmConfig{2, H, dropout}, F, seed);
    Tensor x = rng.randn({B, L, F});
    const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{int32_t(L), int32_t(rng.integer(2, L - 1))}, {B});
    const std::vector<float> w = rng.normals(B * L * 2 * H);  // loss = sum(w * y), padded outputs included
    const ForwardOptions options = pass(dropout > 0, seed);
    Tensor y = Tensor::empty({B, L, 2 * H}), dx = Tensor::empty({B, L, F});
    auto loss = [&] {
      m.lstm->forward(x, lengths, y, options, *m.pass);
      return dot(y, w);
    };
    loss();
    m.params.zero_grad();
    m.lstm->backward(*m.pass, Tensor::from_vector(w, {B, L, 2 * H}), dx);
    const Tensor grads = m.params.grads().clone(), input_grads = dx.clone();
    Tensor values = m.params.values();
    CHECK(rel_error(grads, numeric_grad(values, loss)) < 2e-2);
    const std::vector<double> numeric_dx = numeric_grad(x, loss);
    CHECK(rel_error(input_grads, numeric_dx) < 2e-2);
    const std::vector<float> g = input_grads.to_vector();
    const int64_t n = lengths.to_vector_i32()[1];
    for (int64_t i = (L + n) * F; i < 2 * L * F; ++i) REQUIRE(g[i] == 0.f);
  }
}

TEST_CASE("a bilstm speech model scores a padded row as the row alone, loss and gradients") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t B = 3, L = 10, F = 6;
  SequenceModel model(small_bilstm_config(F), Device::cpu);
  model.init_parameters(seed);
  SequenceBatch batch;
  batch.rows = B, batch.length = L;
  batch.features = rng.normals(B * L * F);
  batch.labels.offsets = {0};
  for (int64_t r = 0; r < B; ++r) {
    batch.lengths.push_back(r == 0 ? int32_t(L) : int32_t(rng.integer(4, L - 1)));
    for (int64_t i = 0; i < 2; ++i) batch.labels.labels.push_back(int32_t(rng.integer(1, 4)));
    batch.labels.offsets.push_back(int64_t(batch.labels.labels.size()));
  }
  model.params().zero_grad();
  ForwardPass fp;
  const double loss = model.forward(batch, ForwardOptions{}, fp);
  model.backward(fp);
  const std::vector<float> grads = model.params().grads().to_vector();
  double nats = 0;
  std::vector<double> want(grads.size(), 0.0);
  for (int64_t r = 0; r < B; ++r) {
    SequenceBatch one = batch.slice(r, r + 1);
    one.length = batch.lengths[r];
    one.features.resize(size_t(one.length * F));
    one.lengths.clear();
    nats += model.forward(one, ForwardOptions{}, fp) * 2;
    model.params().zero_grad();
    model.backward(fp);
    const std::vector<float> g = model.params().grads().to_vector();
    for (size_t i = 0; i < g.size(); ++i) want[i] += double(g[i]) * 2 / double(2 * B);
  }
  CHECK(loss == doctest::Approx(nats / double(2 * B)).epsilon(1e-5));
  CHECK(rel_error(grads, want) < 1e-4);
}

TEST_CASE("a bilstm speech checkpoint has nn.LSTM's names, loads back, and the model has no recurrent form") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  SpeechFrontEnd frontend(FbankConfig{});
  FeatureStats stats(40);
  const std::vector<float> frames = rng.normals(30 * 40, 3);
  stats.add(frames.data(), 30);
  frontend.set_statistics(stats);
  SequenceModel model(small_bilstm_config(40), Device::cpu);
  model.init_parameters(seed);
  const std::string path = tmp.file("bilstm.safetensors");
  model.save(path, frontend.metadata(), frontend.tensors());
  const Checkpoint ck = load_safetensors(path);
  CHECK(ck.meta("encoder") == "bilstm");
  CHECK(shape_str(ck.tensors.at("lstm.weight_ih_l0").shape()) == shape_str({16, 40}));
  CHECK(shape_str(ck.tensors.at("lstm.weight_hh_l1_reverse").shape()) == shape_str({16, 4}));
  CHECK(shape_str(ck.tensors.at("predictor.weight").shape()) == shape_str({5, 8}));  // over both directions' 2H
  SpeechModel loaded = load_speech_model(path, Device::cpu);
  const SequenceModelConfig& c = loaded.model->config();
  CHECK(c.encoder == EncoderKind::bilstm);
  CHECK(c.lstm.layers == 2);
  CHECK(c.lstm.hidden == 4);
  CHECK(c.input_features == 40);
  CHECK(loaded.model->params().values().to_vector() == model.params().values().to_vector());
  SequenceBatch batch;
  batch.rows = 1, batch.length = 7;
  batch.features = rng.normals(7 * 40);
  CHECK(loaded.model->predict(batch, ForwardOptions{}).to_vector() == model.predict(batch, ForwardOptions{}).to_vector());

  const Tensor chunk = rng.randn({1, 3, 40});
  Tensor heads = Tensor::empty({1, 3, 5});
  for (const std::string& msg : {error_of([&] { model.new_state(1); }),
                                 error_of([&] { model.prepare_step(Precision{}); }),
                                 error_of([&] {
                                   RecurrentState s;
                                   model.continue_chunk(s, chunk, heads);
                                 })}) {
    CHECK(msg.find("bilstm model has no recurrent form") != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  }
}
