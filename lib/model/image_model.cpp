// ImageModel: the image family on SequenceModel. Images add their geometry,
// the first subpixel's histogram and the shift of a row of subpixels into
// inputs x[:-1] and targets x[1:]; metadata image_height, image_width,
// image_channels and first_subpixel_histogram (docs/checkpoint-format.md).
#include "model/image_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "io/safetensors.h"

namespace lt {

OutputHead ImageModelConfig::output_head() const {
  OutputHead h;
  h.kind = head;
  h.mixtures = mixtures;
  h.classes = 256;
  return h;
}

void ImageModelConfig::validate() const {
  check(height >= 1 && width >= 1 && (channels == 1 || channels == 3),
        "image must be at least 1x1 with 1 or 3 channels, got " + std::to_string(height) + "x" +
            std::to_string(width) + "x" + std::to_string(channels));
  check(height <= 4096 && width <= 4096, "images up to 4096x4096, got " + std::to_string(height) + "x" +
                                             std::to_string(width));
  check(subpixels() >= 2, "an image model needs at least 2 subpixels");
  check(mixtures >= 1, "mixtures must be >= 1");
  check(first_subpixel_histogram.empty() || first_subpixel_histogram.size() == 256,
        "first_subpixel_histogram needs 256 counts or none");
  check(transformer.direction == Direction::causal, "an image model is causal");
  sequence_config().validate();
}

SequenceModelConfig ImageModelConfig::sequence_config() const {
  SequenceModelConfig c;
  c.family = "image";
  c.vocabulary = 256;
  c.max_positions = sequence_length();
  c.transformer = transformer;
  c.head = output_head();
  c.family_metadata = metadata();
  return c;
}

std::map<std::string, std::string> ImageModelConfig::metadata() const {
  std::map<std::string, std::string> m = {{"image_height", std::to_string(height)},
                                          {"image_width", std::to_string(width)},
                                          {"image_channels", std::to_string(channels)}};
  if (!first_subpixel_histogram.empty()) {
    std::string h;
    for (double v : first_subpixel_histogram) h += (h.empty() ? "" : ",") + std::to_string(int64_t(v));
    m["first_subpixel_histogram"] = h;
  }
  return m;
}

ImageModelConfig ImageModelConfig::preset(const std::string& name) {
  ImageModelConfig c;
  c.transformer.heads = 8;
  c.transformer.head_dim = 32;
  c.transformer.d_model = 256;
  c.transformer.ff_dim = 1024;
  if (name == "mnist") {
    c.transformer.layers = 8;
  } else if (name == "cifar10") {
    c.height = c.width = 32;
    c.channels = 3;
    c.transformer.layers = 16;
  } else {
    throw Error("unknown image model preset '" + name + "' (expected mnist or cifar10)");
  }
  return c;
}

ImageModel::ImageModel(const ImageModelConfig& config, Device device) : image_(config) {
  image_.validate();
  owned_ = std::make_unique<SequenceModel>(image_.sequence_config(), device);
  core_ = owned_.get();
}

ImageModel::ImageModel(std::unique_ptr<SequenceModel> core) : ImageModel(*core) { owned_ = std::move(core); }

ImageModel::ImageModel(ImageModel&&) noexcept = default;
ImageModel::~ImageModel() = default;

ImageModelConfig ImageModel::config() const {
  ImageModelConfig c = image_;
  const SequenceModelConfig& s = core_->config();
  c.transformer = s.transformer;
  c.head = s.head.kind;
  c.mixtures = s.head.mixtures;
  return c;
}

SequenceBatch ImageModel::batch(const std::vector<int32_t>& images, int64_t rows) const {
  const int64_t S = image_.subpixels(), L = image_.sequence_length();
  check(int64_t(images.size()) == rows * S, "image batch holds " + std::to_string(images.size()) +
                                                " subpixels, not " + std::to_string(rows) + " x " + std::to_string(S));
  SequenceBatch b;
  b.rows = rows;
  b.length = L;
  b.inputs.resize(rows * L);
  b.targets.resize(rows * L);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t t = 0; t < L; ++t) {
      const int32_t v = images[i * S + t + 1];
      check(v >= 0 && v <= 255, "image bytes must be in 0..255, got " + std::to_string(v));
      b.inputs[i * L + t] = images[i * S + t];
      b.targets[i * L + t] = v;
    }
  return b;
}

SequenceBatch ImageModel::batch(const Tensor& images) const {
  const int64_t S = image_.subpixels();
  check(images.ndim() == 2 && images.dim(1) == S && images.dtype() == DType::i32,
        "images must be int32 [B, " + std::to_string(S) + "] for a " + std::to_string(image_.height) + "x" +
            std::to_string(image_.width) + "x" + std::to_string(image_.channels) + " model, got " +
            shape_str(images.shape()));
  return batch(images.to_vector_i32(), images.dim(0));
}

void ImageModel::recompute_head(const std::vector<int32_t>& prefix, int64_t rows, Tensor& head,
                                const Precision& precision) {
  check(rows >= 1 && !prefix.empty() && int64_t(prefix.size()) % rows == 0,
        "a prefix of " + std::to_string(prefix.size()) + " subpixels is not " + std::to_string(rows) + " equal rows");
  const int64_t T = int64_t(prefix.size()) / rows, P = core_->config().head.width();
  check_shape(head, {rows, P}, "recompute_head head");
  SequenceBatch b;
  b.rows = rows, b.length = T, b.inputs = prefix;
  ForwardOptions options;  // seed 0, evaluation's: the same LSH rotations at every prefix length
  options.precision = precision;
  const Tensor heads = core_->predict(b, options).reshape({rows * T, P});
  for (int64_t r = 0; r < rows; ++r) head.rows(r, r + 1).copy_from(heads.rows(r * T + T - 1, r * T + T));
}

void ImageModel::sample(const Tensor& head, uint64_t seed, int64_t step, Tensor& bytes) const {
  core_->config().head.sample(head, seed, step, bytes);
}

void ImageModel::sample_rows(const Tensor& head, const uint64_t* seeds, const int64_t* steps, Tensor& bytes) const {
  core_->config().head.sample_rows(head, seeds, steps, bytes);
}

void ImageModel::log_loss(const Tensor& head, const Tensor& bytes, Tensor& nll) const {
  check_shape(head, {bytes.numel(), core_->config().head.width()}, "log_loss head");
  HeadTargets targets;
  targets.positions = bytes;
  LossBuffers buffers;  // bytes and nll on the head's device need none
  core_->config().head.loss_forward(head.reshape({head.dim(0), 1, head.dim(1)}), targets, buffers, &nll);
}

namespace {
// Image size from the metadata, or for the reference's checkpoints from the
// sequence length its pos_embedding.pe carries.
void read_image_size(const Checkpoint& ck, ImageModelConfig& c) {
  if (ck.metadata.count("image_height")) {
    c.height = ck.meta_int("image_height");
    c.width = ck.meta_int("image_width");
    c.channels = ck.meta_int("image_channels");
    check(c.height >= 1 && c.height <= 4096 && c.width >= 1 && c.width <= 4096 && (c.channels == 1 || c.channels == 3),
          ck.path + ": metadata image size " + std::to_string(c.height) + "x" + std::to_string(c.width) + "x" +
              std::to_string(c.channels) + " is not 1..4096 x 1..4096 x 1 or 3");
    return;
  }
  check(ck.has("pos_embedding.pe") && ck.tensors.at("pos_embedding.pe").ndim() >= 2,
        ck.path + ": missing metadata 'image_height' (and no 2-D pos_embedding.pe to infer it)");
  const int64_t S = ck.tensors.at("pos_embedding.pe").dim(-2) + 1;
  if (S == 784) c.height = c.width = 28, c.channels = 1;
  else if (S == 3072) c.height = c.width = 32, c.channels = 3;
  else throw Error(ck.path + ": cannot infer the image size from a sequence of " + std::to_string(S) +
                   " subpixels: add image_height, image_width, image_channels metadata");
}

std::vector<double> read_histogram(const Checkpoint& ck) {
  std::vector<double> counts;
  if (!ck.metadata.count("first_subpixel_histogram")) return counts;
  const std::string h = ck.meta("first_subpixel_histogram");
  size_t pos = 0;
  while (pos <= h.size() && counts.size() <= 256) {
    size_t comma = std::min(h.find(',', pos), h.size());
    char* end = nullptr;
    std::string item = h.substr(pos, comma - pos);
    double v = std::strtod(item.c_str(), &end);
    check(!item.empty() && end == item.c_str() + item.size() && v >= 0 && std::isfinite(v),
          ck.path + ": metadata first_subpixel_histogram has a bad count '" + item + "'");
    counts.push_back(v);
    pos = comma + 1;
  }
  check(counts.size() == 256, ck.path + ": metadata first_subpixel_histogram needs 256 counts, has " +
                                  (counts.size() > 256 ? std::string("more") : std::to_string(counts.size())));
  return counts;
}

// The geometry and histogram of metadata (a checkpoint's, or a model's
// family_metadata in view).
ImageModelConfig image_of(const Checkpoint& ck) {
  ImageModelConfig c;
  read_image_size(ck, c);
  c.first_subpixel_histogram = read_histogram(ck);
  return c;
}
}  // namespace

std::unique_ptr<SequenceModel> load_image_model(const Checkpoint& ck, Device device) {
  const std::string& path = ck.path;
  const std::string family = ck.meta("lt.model", "image");
  check(family == "image", path + ": " + with_article(family) + " model, not an image model (metadata lt.model)");
  ImageModelConfig c = image_of(ck);
  auto core = SequenceModel::load(ck, device, c.sequence_length(), c.metadata());
  const SequenceModelConfig& s = core->config();
  check(s.vocabulary == 256, path + ": value_embedding.weight has " + std::to_string(s.vocabulary) +
                                 " rows, an image model 256");
  c.transformer = s.transformer;
  c.head = s.head.kind;
  c.mixtures = s.head.mixtures;
  check(c.head != HeadKind::categorical || s.head.classes == 256,
        path + ": a categorical image head has 256 classes, this one " + std::to_string(s.head.classes));
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  return core;
}

ImageModel::ImageModel(SequenceModel& core) : core_(&core) {
  check(core.config().family == "image", with_article(core.config().family) + " model is not an image model");
  Checkpoint metadata;  // the family's entries, as its checkpoint had them
  metadata.path = "an image model's metadata";
  metadata.metadata = core.config().family_metadata;
  image_ = image_of(metadata);
}

std::unique_ptr<ImageModel> ImageModel::load(const std::string& path, Device device) {
  return std::make_unique<ImageModel>(load_image_model(load_safetensors(path), device));
}

}  // namespace lt
