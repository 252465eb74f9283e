// The copy task's data and model: embedding 0..S -> d/2 beside the position
// code, the transformer stack, Linear(d, S+1) and a cross-entropy counted on
// the copied span (the reference's SequencePredictor and loss).
#include <algorithm>
#include <cmath>
#include <random>
#include <regex>
#include <set>

#include "lt/copy_task.h"
#include "lt/heads.h"
#include "lt/ops.h"
#include "lt/safetensors.h"

namespace lt {

void CopyTaskConfig::validate() const {
  check(sequence_length >= 8, "copy task sequence length must be >= 8, got " + std::to_string(sequence_length));
  check(symbols >= 1, "copy task needs at least one symbol");
  transformer.validate();
  check(transformer.d_model % 4 == 0, "d_model must be a multiple of 4 (embedding and position code are d/2 each)");
}

void make_copy_batch(const CopyTaskConfig& c, uint64_t seed, int64_t step, int64_t rows, CopyBatch& b) {
  const int64_t L = c.sequence_length, lo = L / 4, hi = (L - 1) / 2;
  b.rows = rows;
  b.x.assign(rows * L, 0);
  b.y.assign(rows * L, 0);
  b.first.resize(rows);
  b.last.resize(rows);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t n = lo + int64_t(sample_uniform(seed, step, r, 0) * double(hi - lo));
    int32_t* x = &b.x[r * L];
    for (int64_t i = 0; i < n; ++i) {
      int32_t s = 1 + int32_t(sample_uniform(seed, step, r, int(1 + i)) * double(c.symbols));
      x[i] = x[n + 1 + i] = s;
    }
    for (int64_t i = 0; i + 1 < L; ++i) b.y[r * L + i] = x[i + 1];
    b.first[r] = n - 1;
    b.last[r] = 2 * n;
  }
}

struct CopyModel::Buffers {
  int64_t B = 0, counted = 0;
  Tensor ids, emb, x, y, head, dhead, dy, dx, demb;
  Tensor picked, dpicked, targets, nll;  // the counted rows of head, compacted
  std::vector<int64_t> first, last;
};

CopyModel::CopyModel(const CopyTaskConfig& config, Device device)
    : config_(config), device_(device), buf_(std::make_unique<Buffers>()) {
  config_.validate();
  require_device(device);
  const int64_t d = config_.transformer.d_model, V = config_.symbols + 1;
  embedding_ = params_.add("value_embedding.weight", {V, d / 2});
  stack_ = std::make_unique<TransformerStack>(config_.transformer, params_, "transformer.");
  predictor_w_ = params_.add("predictor.weight", {V, d});
  predictor_b_ = params_.add("predictor.bias", {V});
  params_.allocate(device);
  pe_ = Tensor::empty({config_.sequence_length, d / 2}, device);
  position_code(0, pe_);
}

CopyModel::~CopyModel() = default;

void CopyModel::set_dropout(float p) {
  stack_->set_dropout(p);
  config_.transformer.dropout = p;
}

void CopyModel::init_parameters(uint64_t seed) {
  stack_->init_parameters(seed);
  std::mt19937_64 gen(seed ^ 0x5DEECE66Dull);
  auto fill = [&](size_t idx, auto dist) {
    Tensor t = params_.value(idx);
    std::vector<float> v(t.numel());
    for (auto& x : v) x = float(dist(gen));
    t.copy_from(Tensor::from_vector(v, t.shape()));
  };
  fill(embedding_, std::normal_distribution<double>(0, 1));
  double bound = 1.0 / std::sqrt(double(config_.transformer.d_model));
  fill(predictor_w_, std::uniform_real_distribution<double>(-bound, bound));
  fill(predictor_b_, std::uniform_real_distribution<double>(-bound, bound));
}

double CopyModel::forward(const CopyBatch& batch, bool train, uint64_t seed, double* accuracy) {
  const int64_t L = config_.sequence_length, d = config_.transformer.d_model, V = config_.symbols + 1;
  const int64_t B = batch.rows;
  check(B >= 1 && int64_t(batch.x.size()) == B * L, "copy batch does not match the model's sequence length");
  Buffers& b = *buf_;
  if (b.B != B) {
    b.B = B;
    b.ids = Tensor::empty({B, L}, device_, DType::i32);
    b.emb = Tensor::empty({B, L, d / 2}, device_);
    b.demb = Tensor::empty({B, L, d / 2}, device_);
    for (Tensor* t : {&b.x, &b.y, &b.dy, &b.dx}) *t = Tensor::empty({B, L, d}, device_);
    b.head = Tensor::empty({B * L, V}, device_);
    b.dhead = Tensor::empty({B * L, V}, device_);
  }
  b.first = batch.first;
  b.last = batch.last;
  int64_t counted = 0;
  std::vector<int32_t> targets;
  for (int64_t r = 0; r < B; ++r)
    for (int64_t i = batch.first[r]; i < batch.last[r]; ++i) targets.push_back(batch.y[r * L + i]), ++counted;
  check(counted > 0, "copy batch counts no positions");
  if (b.counted != counted) {
    b.counted = counted;
    b.picked = Tensor::empty({counted, V}, device_);
    b.dpicked = Tensor::empty({counted, V}, device_);
    b.targets = Tensor::empty({counted}, device_, DType::i32);
    b.nll = Tensor::empty({counted}, device_);
  }
  b.ids.copy_from(Tensor::from_vector(batch.x, {B, L}));
  b.targets.copy_from(Tensor::from_vector(targets, {counted}));

  embedding_forward(b.ids, params_.value(embedding_), b.emb);
  concat_position_forward(b.emb, pe_, b.x);
  stack_->forward(b.x, b.y, train, seed);
  Tensor head3 = b.head.reshape({B, L, V});
  linear_forward(b.y, params_.value(predictor_w_), params_.value(predictor_b_), head3, Products::fp32);
  for (int64_t r = 0, o = 0; r < B; o += b.last[r] - b.first[r], ++r)
    b.picked.rows(o, o + b.last[r] - b.first[r]).copy_from(b.head.rows(r * L + b.first[r], r * L + b.last[r]));
  double loss = categorical_loss_forward(b.picked, b.targets, b.nll);
  if (accuracy) {
    std::vector<float> logits = b.picked.to_vector();
    int64_t right = 0;
    for (int64_t i = 0; i < counted; ++i) {
      const float* row = &logits[i * V];
      right += int64_t(std::max_element(row, row + V) - row) == targets[i];
    }
    *accuracy = double(right) / double(counted);
  }
  return loss;
}

void CopyModel::backward() {
  Buffers& b = *buf_;
  check(b.B > 0, "backward before forward");
  const int64_t L = config_.sequence_length, d = config_.transformer.d_model;
  categorical_loss_backward(b.picked, b.targets, 1.f / float(b.counted), b.dpicked);
  b.dhead.zero();
  for (int64_t r = 0, o = 0; r < b.B; o += b.last[r] - b.first[r], ++r)
    b.dhead.rows(r * L + b.first[r], r * L + b.last[r]).copy_from(b.dpicked.rows(o, o + b.last[r] - b.first[r]));
  Tensor dW = params_.grad(predictor_w_), db = params_.grad(predictor_b_);
  Tensor dy2 = b.dy.reshape({b.B * L, d});
  linear_backward(b.y.reshape({b.B * L, d}), params_.value(predictor_w_), b.dhead, dy2, dW, db, Products::fp32);
  stack_->backward(b.dy, b.dx);
  concat_position_backward(b.dx, b.demb);
  Tensor dtable = params_.grad(embedding_);
  embedding_backward(b.ids, b.demb, dtable);
}

std::map<std::string, std::string> CopyModel::metadata() const {
  const TransformerConfig& t = config_.transformer;
  return {{"lt.format_version", "1"},
          {"lt.model", "copy"},
          {"attention", attention_name(t.attention)},
          {"heads", std::to_string(t.heads)},
          {"feature_map", t.feature_map},
          {"sequence_length", std::to_string(config_.sequence_length)},
          {"dropout", std::to_string(t.dropout)}};
}

void CopyModel::save(const std::string& path, const std::map<std::string, std::string>& extra,
                     const std::map<std::string, Tensor>& extra_tensors) const {
  std::map<std::string, std::string> meta = metadata();
  for (const auto& [k, v] : extra) meta[k] = v;
  std::map<std::string, Tensor> tensors = params_.named_values();
  for (const auto& [k, v] : extra_tensors) tensors[k] = v;
  save_safetensors(path, tensors, meta);
}

std::unique_ptr<CopyModel> CopyModel::load(const std::string& path, Device device) {
  Checkpoint ck = load_safetensors(path);
  check(ck.meta("lt.model", "") == "copy", path + ": not a copy-task checkpoint (metadata lt.model is '" +
                                               ck.meta("lt.model", "") + "')");
  CopyTaskConfig c;
  TransformerConfig& t = c.transformer;
  const std::regex layer_re(R"(transformer\.layers\.(\d+)\.linear1\.weight)");
  t.layers = 0;
  for (const auto& [name, tensor] : ck.tensors) {
    std::smatch m;
    if (std::regex_match(name, m, layer_re)) t.layers = std::max<int64_t>(t.layers, std::stoll(m[1]) + 1);
  }
  check(t.layers > 0, path + ": no transformer.layers.*.linear1.weight tensors");
  check(ck.has("value_embedding.weight") && ck.has("transformer.layers.0.linear1.weight"),
        path + ": missing tensor 'value_embedding.weight' or 'transformer.layers.0.linear1.weight'");
  const Tensor& emb = ck.tensors.at("value_embedding.weight");
  check(emb.ndim() == 2, path + ": value_embedding.weight must be 2-d");
  c.symbols = emb.dim(0) - 1;
  t.d_model = 2 * emb.dim(1);
  t.ff_dim = ck.tensors.at("transformer.layers.0.linear1.weight").dim(0);
  t.heads = ck.meta_int("heads");
  check(t.heads >= 1 && t.d_model % t.heads == 0, path + ": metadata heads does not divide d_model");
  t.head_dim = t.d_model / t.heads;
  t.attention = parse_attention(ck.meta("attention"));
  t.feature_map = ck.meta("feature_map", "elu");
  t.dropout = std::stof(ck.meta("dropout", "0.1"));
  c.sequence_length = ck.meta_int("sequence_length");
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  auto model = std::make_unique<CopyModel>(c, device);
  std::set<std::string> used;
  for (size_t i = 0; i < model->params_.size(); ++i) {
    const std::string& name = model->params_.name(i);
    model->params_.value(i).copy_from(ck.get(name, model->params_.shape(i)));
    used.insert(name);
  }
  for (const auto& [name, tensor] : ck.tensors)
    check(used.count(name) || name.rfind("optimizer.", 0) == 0, path + ": unexpected tensor '" + name + "'");
  return model;
}

}  // namespace lt
