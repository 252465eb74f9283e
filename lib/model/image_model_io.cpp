// ImageModel checkpoints: safetensors with the reference's tensor names; the
// shapes give layers, width, feed-forward size and mixtures, the metadata
// what shapes cannot (heads, attention, image size). docs/checkpoint-format.md.
#include <cstdlib>
#include <regex>
#include <set>

#include "lt/image_model.h"
#include "lt/safetensors.h"

namespace lt {

const char* output_head_name(OutputHead h) { return h == OutputHead::categorical ? "categorical" : "mol"; }

std::map<std::string, std::string> ImageModel::metadata() const {
  const TransformerConfig& t = config_.transformer;
  std::map<std::string, std::string> m = {{"lt.format_version", "1"},
          {"lt.model", "image"},
          {"attention", attention_name(t.attention)},
          {"heads", std::to_string(t.heads)},
          {"feature_map", t.feature_map},
          {"output_head", output_head_name(config_.head)},
          {"image_height", std::to_string(config_.height)},
          {"image_width", std::to_string(config_.width)},
          {"image_channels", std::to_string(config_.channels)},
          {"dropout", std::to_string(t.dropout)}};
  if (!config_.first_subpixel_histogram.empty()) {
    std::string h;
    for (double v : config_.first_subpixel_histogram) h += (h.empty() ? "" : ",") + std::to_string(int64_t(v));
    m["first_subpixel_histogram"] = h;
  }
  return m;
}

void ImageModel::save(const std::string& path, const std::map<std::string, std::string>& extra,
                      const std::map<std::string, Tensor>& extra_tensors) const {
  std::map<std::string, std::string> meta = metadata();
  for (const auto& [k, v] : extra) meta[k] = v;
  std::map<std::string, Tensor> tensors = params_.named_values();
  for (const auto& [k, v] : extra_tensors) tensors[k] = v;
  save_safetensors(path, tensors, meta);
}

std::unique_ptr<ImageModel> ImageModel::load(const std::string& path, Device device) {
  Checkpoint ck = load_safetensors(path);
  auto need = [&](const std::string& name) -> const Tensor& {
    auto it = ck.tensors.find(name);
    check(it != ck.tensors.end(), path + ": missing tensor '" + name + "' (not an lt image model checkpoint?)");
    return it->second;
  };
  ImageModelConfig c;
  TransformerConfig& t = c.transformer;
  const std::regex layer_re(R"(transformer\.layers\.(\d+)\.linear1\.weight)");
  int64_t layers = 0;
  for (const auto& [name, tensor] : ck.tensors) {
    std::smatch m;
    if (std::regex_match(name, m, layer_re)) layers = std::max<int64_t>(layers, std::stoll(m[1]) + 1);
  }
  check(layers > 0, path + ": no transformer.layers.*.linear1.weight tensors: not an image model checkpoint");
  t.layers = layers;
  const Tensor& emb = need("value_embedding.weight");
  check(emb.ndim() == 2 && emb.dim(0) == 256,
        path + ": value_embedding.weight has shape " + shape_str(emb.shape()) + ", expected [256, d/2]");
  t.d_model = 2 * emb.dim(1);
  t.ff_dim = need("transformer.layers.0.linear1.weight").dim(0);
  t.heads = ck.meta_int("heads");
  check(t.heads >= 1 && t.d_model % t.heads == 0,
        path + ": metadata heads=" + std::to_string(t.heads) + " does not divide d_model " + std::to_string(t.d_model));
  t.head_dim = t.d_model / t.heads;
  t.attention = parse_attention(ck.meta("attention"));
  t.feature_map = ck.meta("feature_map", "elu");
  t.dropout = std::stof(ck.meta("dropout", "0.1"));

  const int64_t P = need("predictor.weight").dim(0);
  std::string head = ck.meta("output_head", P == 256 ? "categorical" : "mol");
  check(head == "mol" || head == "categorical", path + ": metadata output_head='" + head + "', expected mol or categorical");
  c.head = head == "categorical" ? OutputHead::categorical : OutputHead::mixture_of_logistics;
  if (c.head == OutputHead::mixture_of_logistics) {
    check(P % 3 == 0, path + ": predictor.weight has " + std::to_string(P) + " rows, not 3 x mixtures");
    c.mixtures = P / 3;
  }

  if (ck.metadata.count("image_height")) {
    c.height = ck.meta_int("image_height");
    c.width = ck.meta_int("image_width");
    c.channels = ck.meta_int("image_channels");
  } else {
    // The reference's checkpoints carry the sequence length in pos_embedding.pe.
    check(ck.has("pos_embedding.pe"), path + ": missing metadata 'image_height' (and no pos_embedding.pe to infer it)");
    int64_t S = ck.tensors.at("pos_embedding.pe").dim(-2) + 1;
    if (S == 784) c.height = c.width = 28, c.channels = 1;
    else if (S == 3072) c.height = c.width = 32, c.channels = 3;
    else throw Error(path + ": cannot infer the image size from a sequence of " + std::to_string(S) +
                     " subpixels: add image_height, image_width, image_channels metadata");
  }
  if (ck.metadata.count("first_subpixel_histogram")) {
    const std::string h = ck.meta("first_subpixel_histogram");
    size_t pos = 0;
    while (pos <= h.size()) {
      size_t comma = std::min(h.find(',', pos), h.size());
      char* end = nullptr;
      std::string item = h.substr(pos, comma - pos);
      double v = std::strtod(item.c_str(), &end);
      check(!item.empty() && end == item.c_str() + item.size() && v >= 0,
            path + ": metadata first_subpixel_histogram has a bad count '" + item + "'");
      c.first_subpixel_histogram.push_back(v);
      pos = comma + 1;
    }
    check(c.first_subpixel_histogram.size() == 256,
          path + ": metadata first_subpixel_histogram needs 256 counts, has " +
              std::to_string(c.first_subpixel_histogram.size()));
  }
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }

  auto model = std::make_unique<ImageModel>(c, device);
  std::set<std::string> used;
  for (size_t i = 0; i < model->params_.size(); ++i) {
    const std::string& name = model->params_.name(i);
    model->params_.value(i).copy_from(ck.get(name, model->params_.shape(i)));
    used.insert(name);
  }
  for (const auto& [name, tensor] : ck.tensors)
    check(used.count(name) || name == "pos_embedding.pe" || name.rfind("optimizer.", 0) == 0,
          path + ": unexpected tensor '" + name + "' for an image model with " + std::to_string(layers) + " layers");
  return model;
}

}  // namespace lt
