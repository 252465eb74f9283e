// SequenceModel checkpoints: safetensors with the reference's tensor names;
// the shapes give layers, widths, vocabulary and head width, the metadata
// what shapes cannot (heads, attention, direction, feature map, head kind,
// positions). The input part shows in its tensor: value_embedding (tokens)
// or input_projection (feature frames); the metadata "encoder" names the body
// (transformer when absent, or bilstm: torch.nn.LSTM's tensors under lstm.,
// reading the frames themselves). docs/checkpoint-format.md.
#include <set>

#include "model/sequence_model.h"

namespace lt {

std::map<std::string, std::string> SequenceModel::metadata() const {
  std::map<std::string, std::string> m = {{"lt.format_version", "1"},
                                          {"lt.model", config_.family},
                                          {"encoder", encoder_kind_name(config_.encoder)},
                                          {"output_head", config_.head.name()},
                                          {"max_positions", std::to_string(config_.max_positions)}};
  if (config_.encoder == EncoderKind::bilstm) {  // its sizes are in its tensors' shapes
    m["dropout"] = std::to_string(config_.lstm.dropout);
  } else {
    const TransformerConfig& t = config_.transformer;
    m.insert({{"attention", attention_name(t)},
              {"direction", direction_name(t.direction)},
              {"heads", std::to_string(t.heads)},
              {"feature_map", t.feature_map},
              {"dropout", std::to_string(t.dropout)}});
    if (!stack_->feature_tensors().empty()) m["feature_dim"] = std::to_string(stack_->feature_dim());
    if (t.attention == AttentionKind::lsh) {  // the rounds are in the attention's name, lsh-N
      m["lsh_buckets"] = std::to_string(t.lsh_buckets);
      m["lsh_chunk"] = std::to_string(t.lsh_chunk);
    }
  }
  m.insert(config_.family_metadata.begin(), config_.family_metadata.end());  // the model's own entries first
  return m;
}

void SequenceModel::save(const std::string& path, const std::map<std::string, std::string>& extra,
                         const std::map<std::string, Tensor>& extra_tensors) const {
  std::map<std::string, std::string> meta = metadata();
  for (const auto& [k, v] : extra) meta[k] = v;
  std::map<std::string, Tensor> tensors = params_.named_values();
  for (const auto& [k, v] : encoder_->feature_tensors()) tensors[k] = v;
  for (const auto& [k, v] : extra_tensors) tensors[k] = v;
  save_safetensors(path, tensors, meta);
}

namespace {
// Layers from the names {prefix}{i}{suffix} (transformer.layers.{i}.linear1.weight,
// lstm.weight_ih_l{i}): they must be 0..n-1, so that the count is bounded by
// the tensors the file holds.
int64_t count_layers(const Checkpoint& ck, const std::string& prefix, const std::string& suffix) {
  std::set<int64_t> seen;
  for (const auto& [name, tensor] : ck.tensors) {
    if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string index = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (index.empty() || index.size() > 9 || index.find_first_not_of("0123456789") != std::string::npos) continue;
    seen.insert(std::stoll(index));
  }
  check(!seen.empty(), ck.path + ": no " + prefix + "*" + suffix + " tensors: not an lt model checkpoint");
  const int64_t layers = *seen.rbegin() + 1;
  check(layers == int64_t(seen.size()),
        ck.path + ": " + prefix + std::to_string(layers - 1) + suffix + " without layers 0.." +
            std::to_string(layers - 2) + " (" + std::to_string(seen.size()) + " layers in the file)");
  return layers;
}

const Tensor& need(const Checkpoint& ck, const std::string& name) {
  auto it = ck.tensors.find(name);
  check(it != ck.tensors.end(), ck.path + ": missing tensor '" + name + "' (not an lt model checkpoint?)");
  return it->second;
}

OutputHead read_head(const Checkpoint& ck, int64_t width) {
  // The reference's image checkpoints and lt's older copy-task ones carry no
  // output_head: a 256-wide predictor or a copy model is categorical.
  const bool categorical_default = width == 256 || ck.meta("lt.model", "image") != "image";
  const std::string name = ck.meta("output_head", categorical_default ? "categorical" : "mol");
  check(name == "mol" || name == "categorical" || name == "ctc",
        ck.path + ": metadata output_head='" + name + "', expected mol, categorical or ctc");
  OutputHead head;
  if (name == "categorical" || name == "ctc") {
    head.kind = name == "ctc" ? HeadKind::ctc : HeadKind::categorical;
    head.classes = width;
  } else {
    check(width % 3 == 0, ck.path + ": predictor.weight has " + std::to_string(width) + " rows, not 3 x mixtures");
    head.kind = HeadKind::mixture_of_logistics;
    head.mixtures = width / 3;
  }
  return head;
}
}  // namespace

namespace {
// The transformer's sizes from its tensors and metadata: the values its
// input part and stack hold.
int64_t read_transformer(const Checkpoint& ck, SequenceModelConfig& c) {
  TransformerConfig& t = c.transformer;
  t.layers = count_layers(ck, "transformer.layers.", ".linear1.weight");
  // The input part from its tensor: token embeddings, or a projection of feature frames.
  const bool frames = ck.tensors.count("input_projection.weight") > 0;
  const std::string input_name = frames ? "input_projection.weight" : "value_embedding.weight";
  const Tensor& input = need(ck, input_name);
  check(input.ndim() == 2 && input.dim(0) >= 1 && input.dim(1) >= 1,
        ck.path + ": " + input_name + " has shape " + shape_str(input.shape()) +
            (frames ? ", expected [d/2, features]" : ", expected [vocabulary, d/2]"));
  if (frames) {
    c.input_features = input.dim(1);
    t.d_model = 2 * input.dim(0);
  } else {
    c.vocabulary = input.dim(0);
    t.d_model = 2 * input.dim(1);
  }
  const Tensor& ff = need(ck, "transformer.layers.0.linear1.weight");
  check(ff.ndim() == 2, ck.path + ": transformer.layers.0.linear1.weight must be 2-D, is " + shape_str(ff.shape()));
  t.ff_dim = ff.dim(0);
  if (ck.tensors.count("transformer.layers.0.ff_conv.weight")) {
    const Tensor& conv = ck.tensors.at("transformer.layers.0.ff_conv.weight");
    check(conv.ndim() == 2 && conv.dim(0) == t.ff_dim,
          ck.path + ": transformer.layers.0.ff_conv.weight has shape " + shape_str(conv.shape()) + ", expected [" +
              std::to_string(t.ff_dim) + ", taps]");
    t.ff_conv = conv.dim(1);
  }
  t.heads = ck.meta_int("heads");
  check(t.heads >= 1 && t.d_model % t.heads == 0,
        ck.path + ": metadata heads=" + std::to_string(t.heads) + " does not divide d_model " + std::to_string(t.d_model));
  t.head_dim = t.d_model / t.heads;
  try {
    t.set_attention(ck.meta("attention"));
    t.direction = parse_direction(ck.meta("direction", "causal"));
  } catch (const Error& e) {
    throw Error(ck.path + ": metadata " + e.what());
  }
  if (ck.metadata.count("lsh_buckets")) t.lsh_buckets = ck.meta_int("lsh_buckets");
  if (ck.metadata.count("lsh_chunk")) t.lsh_chunk = ck.meta_int("lsh_chunk");
  t.feature_map = ck.meta("feature_map", "elu");
  if (ck.metadata.count("feature_dim")) t.features = ck.meta_int("feature_dim");
  check(t.layers <= 4096 && t.d_model <= (int64_t(1) << 20) && t.ff_dim <= (int64_t(1) << 22),
        ck.path + ": its sizes (" + std::to_string(t.layers) + " layers, d_model " + std::to_string(t.d_model) +
            ", ff " + std::to_string(t.ff_dim) + ") are past lt's limits");
  return t.parameter_count() + input.numel();
}

// The Bi-LSTM's sizes from nn.LSTM's tensor shapes: the values it holds.
int64_t read_bilstm(const Checkpoint& ck, SequenceModelConfig& c) {
  LstmConfig& l = c.lstm;
  l.layers = count_layers(ck, "lstm.weight_ih_l", "");
  const Tensor &w_ih = need(ck, "lstm.weight_ih_l0"), &w_hh = need(ck, "lstm.weight_hh_l0");
  check(w_hh.ndim() == 2 && w_hh.dim(1) >= 1 && w_hh.dim(0) == 4 * w_hh.dim(1) && w_ih.ndim() == 2 &&
            w_ih.dim(0) == w_hh.dim(0) && w_ih.dim(1) >= 1,
        ck.path + ": lstm.weight_ih_l0 " + shape_str(w_ih.shape()) + " and lstm.weight_hh_l0 " +
            shape_str(w_hh.shape()) + ", expected [4H, features] and [4H, H]");
  l.hidden = w_hh.dim(1);
  c.input_features = w_ih.dim(1);
  return l.parameter_count(c.input_features);
}
}  // namespace

std::unique_ptr<SequenceModel> SequenceModel::load(const Checkpoint& ck, Device device, int64_t max_positions,
                                                   const std::map<std::string, std::string>& family_metadata) {
  SequenceModelConfig c;
  c.family = ck.meta("lt.model", "image");
  c.family_metadata = family_metadata;
  try {
    c.encoder = parse_encoder_kind(ck.meta("encoder", "transformer"));
  } catch (const Error& e) {
    throw Error(ck.path + ": metadata " + e.what());
  }
  const bool bilstm = c.encoder == EncoderKind::bilstm;
  const int64_t encoder_values = bilstm ? read_bilstm(ck, c) : read_transformer(ck, c);
  if (ck.metadata.count("dropout")) {
    const double p = ck.meta_double("dropout");
    check(p >= 0 && p < 1, ck.path + ": metadata 'dropout' is '" + ck.meta("dropout") + "', not in [0, 1)");
    (bilstm ? c.lstm.dropout : c.transformer.dropout) = float(p);
  }
  const Tensor& predictor = need(ck, "predictor.weight");
  check(predictor.ndim() == 2 && predictor.dim(0) >= 1,
        ck.path + ": predictor.weight has shape " + shape_str(predictor.shape()));
  c.head = read_head(ck, predictor.dim(0));
  c.max_positions = max_positions > 0 ? max_positions : ck.meta_int("max_positions");
  // The sizes come from tensors and metadata; nothing is built for sizes
  // the file's own tensors could not hold (a d_model of 2^19 from one
  // embedding row would otherwise ask for terabytes of weights). The slack
  // lets a file short of a few tensors reach the message naming them.
  int64_t held = 0;
  for (const auto& [name, tensor] : ck.tensors) held += tensor.numel();
  const int64_t needed = encoder_values + c.head.width() * (c.width() + 1);
  check(needed <= held + (int64_t(1) << 24), ck.path + ": its sizes (" + c.describe_encoder() +
                                                 ") need more values than its " + std::to_string(held) +
                                                 " tensor values hold");
  std::unique_ptr<SequenceModel> model;
  try {
    c.validate();
    model = std::make_unique<SequenceModel>(c, device);  // a feature map's name is checked here
  } catch (const Error& e) {
    throw Error(ck.path + ": " + e.what());
  }
  std::set<std::string> used;
  for (size_t i = 0; i < model->params_.size(); ++i) {
    const std::string& name = model->params_.name(i);
    model->params_.value(i).copy_from(ck.get(name, model->params_.shape(i)));
    used.insert(name);
  }
  for (auto& [name, t] : model->feature_tensors()) {
    Tensor dst = t;
    dst.copy_from(ck.get(name, t.shape()));
    used.insert(name);
  }
  for (const auto& [name, tensor] : ck.tensors)
    // Besides the model: the reference's position table, a trainer's state,
    // a speech front end's statistics (speech/speech_model.h).
    check(used.count(name) || name == "pos_embedding.pe" || name.rfind("optimizer.", 0) == 0 ||
              name.rfind("frontend.", 0) == 0,
          ck.path + ": unexpected tensor '" + name + "' for a " + c.family + " model (" + c.describe_encoder() + ")");
  return model;
}

}  // namespace lt
