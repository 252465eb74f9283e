// Writes the seed corpora (corpus/<harness>/) with lt's own writers: small
// valid files, so the fuzzer starts from inputs that pass every check.
// Run once by hand when a format changes: lt-fuzz-seeds tests/fuzz/corpus
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/tensor.h"
#include "fuzz_util.h"
#include "io/image_dataset.h"
#include "io/png.h"
#include "io/safetensors.h"
#include "model/image_model.h"
#include "speech/speech_model.h"
#include "train/copy_task.h"

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

namespace {

Bytes read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void put(const fs::path& path, const Bytes& bytes) {
  fs::create_directories(path.parent_path());
  lt::fuzz::write_file(path.string(), bytes.data(), bytes.size());
}

Bytes gzip_file(const std::string& path) {
  const std::string gz = path + ".gz";
  gzFile f = gzopen(gz.c_str(), "wb9");
  const Bytes plain = read_all(path);
  gzwrite(f, plain.data(), unsigned(plain.size()));
  gzclose(f);
  return read_all(gz);
}

Bytes joined(const std::vector<Bytes>& files, uint8_t first) {
  Bytes out = {first};
  for (size_t i = 0; i < files.size(); ++i) {
    if (i) out.insert(out.end(), lt::fuzz::kFileSeparator.begin(), lt::fuzz::kFileSeparator.end());
    out.insert(out.end(), files[i].begin(), files[i].end());
  }
  return out;
}

lt::Image image(int w, int h, int c) {
  lt::Image img{w, h, c, {}};
  for (int i = 0; i < w * h * c; ++i) img.pixels.push_back(uint8_t(i * 37));
  return img;
}

lt::ImageSet idx_images(int64_t count, int64_t side) {
  lt::ImageSet set;
  set.count = count, set.height = side, set.width = side, set.channels = 1;
  for (int64_t i = 0; i < count * side * side; ++i) set.pixels.push_back(uint8_t(i * 13));
  return set;
}

Bytes cifar_batch(int records) {
  Bytes out;
  for (int r = 0; r < records; ++r) {
    out.push_back(uint8_t(r % 10));
    for (int i = 0; i < 3072; ++i) out.push_back(uint8_t(i + r));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const fs::path out = argv[1];
  const std::string tmp = lt::fuzz::scratch_dir();

  // safetensors: F32 tensors with and without metadata, an empty file, a scalar.
  auto floats = [](std::vector<float> v, lt::Shape shape) { return lt::Tensor::from_vector(v, shape); };
  lt::save_safetensors(tmp + "/a", {{"w", floats({0.5f, 1, 2, 3, 4, -5}, {2, 3})}, {"b", floats({-1, 0, 1}, {3})}},
                       {{"model", "image"}, {"heads", "4"}});
  put(out / "safetensors/two-tensors", read_all(tmp + "/a"));
  lt::save_safetensors(tmp + "/b", {});
  put(out / "safetensors/empty", read_all(tmp + "/b"));
  lt::save_safetensors(tmp + "/c", {{"x", floats({2}, {1})}}, {{"k", "v"}});
  put(out / "safetensors/one", read_all(tmp + "/c"));

  // Models: the families as lt writes them (image with elu, FAVOR+, softmax;
  // copy), and a reference-style image checkpoint without lt's metadata. The
  // harness's first byte picks the loader (0 image, 1 copy, 2 speech).
  auto model_seed = [&](const std::string& name, uint8_t loader, auto&& save) {
    save(tmp + "/m");
    Bytes b = read_all(tmp + "/m");
    b.insert(b.begin(), loader);
    put(out / ("model/" + name), b);
  };
  lt::ImageModelConfig ic;
  ic.height = 2, ic.width = 2, ic.mixtures = 1;
  ic.transformer = lt::TransformerConfig{1, 1, 4, 4, 4, lt::AttentionKind::linear, lt::Direction::causal, "elu", 0.1f};
  for (const char* phi : {"elu", "favor"}) {
    ic.transformer.feature_map = phi;
    ic.transformer.features = std::string(phi) == "favor" ? 2 : 0;
    lt::ImageModel m(ic, lt::Device::cpu);
    model_seed(std::string("image-") + phi, 0, [&](const std::string& p) { m.core().save(p); });
  }
  ic.transformer.attention = lt::AttentionKind::softmax;
  ic.transformer.feature_map = "elu";
  ic.transformer.features = 0;
  {
    lt::ImageModel m(ic, lt::Device::cpu);
    model_seed("image-softmax", 0, [&](const std::string& p) { m.core().save(p); });
    auto tensors = m.core().params().named_values();
    tensors["pos_embedding.pe"] = lt::Tensor::zeros({3, 2});
    model_seed("image-reference", 0, [&](const std::string& p) {
      lt::save_safetensors(p, tensors, {{"heads", "1"}, {"attention", "full"}, {"image_height", "2"},
                                        {"image_width", "2"}, {"image_channels", "1"}});
    });
  }
  lt::CopyTaskConfig cc;
  cc.sequence_length = 8;
  cc.symbols = 2;
  cc.transformer = lt::TransformerConfig{1, 1, 4, 4, 4, lt::AttentionKind::linear, lt::Direction::causal, "elu", 0.1f};
  {
    lt::SequenceModel m(cc.sequence_config(), lt::Device::cpu);
    model_seed("copy", 1, [&](const std::string& p) { m.save(p); });
  }

  {
    lt::SpeechFrontEnd frontend({}, lt::FrameWindow{2});
    lt::FeatureStats stats(40);
    const std::vector<float> frames(80, 0.5f);
    stats.add(frames.data(), 2);
    frontend.set_statistics(stats);
    const lt::TransformerConfig t{1, 1, 4, 4, 4, lt::AttentionKind::linear, lt::Direction::bidirectional, "elu", 0.1f};
    lt::SequenceModel m(lt::speech_model_config(t, frontend.features(), 40, 16), lt::Device::cpu);
    model_seed("speech", 2, [&](const std::string& p) { m.save(p, frontend.metadata(), frontend.tensors()); });
    lt::SequenceModel lstm(lt::speech_model_config(lt::LstmConfig{1, 2, 0.f}, frontend.features(), 40, 16),
                           lt::Device::cpu);
    model_seed("speech-bilstm", 2, [&](const std::string& p) { lstm.save(p, frontend.metadata(), frontend.tensors()); });
  }

  // Audio: a 16 kHz mono 16-bit WAV of a ramp (read as a file and as a
  // stream), and the same samples as raw PCM (byte 1 = 1: 16 kHz, mono, s16le).
  {
    Bytes pcm;
    for (int i = 0; i < 600; ++i) {
      const int16_t v = int16_t(i * 50 - 15000);
      pcm.push_back(uint8_t(v & 0xff));
      pcm.push_back(uint8_t(uint16_t(v) >> 8));
    }
    auto le32 = [](Bytes& b, uint32_t v) {
      for (int k = 0; k < 4; ++k) b.push_back(uint8_t(v >> (8 * k)));
    };
    Bytes wav = {'R', 'I', 'F', 'F'};
    le32(wav, uint32_t(36 + pcm.size()));
    for (char c : std::string("WAVEfmt ")) wav.push_back(uint8_t(c));
    le32(wav, 16);
    wav.insert(wav.end(), {1, 0, 1, 0});  // PCM, mono
    le32(wav, 16000);
    le32(wav, 32000);
    wav.insert(wav.end(), {2, 0, 16, 0});
    for (char c : std::string("data")) wav.push_back(uint8_t(c));
    le32(wav, uint32_t(pcm.size()));
    wav.insert(wav.end(), pcm.begin(), pcm.end());
    for (uint8_t mode : {0, 2}) {
      Bytes b = {mode, 0};
      b.insert(b.end(), wav.begin(), wav.end());
      put(out / ("audio/wav-" + std::to_string(mode)), b);
    }
    for (uint8_t mode : {1, 3}) {
      Bytes b = {mode, 1};
      b.insert(b.end(), pcm.begin(), pcm.end());
      put(out / ("audio/raw-" + std::to_string(mode)), b);
    }
    // Float samples behind the harness's header (4), at 16 kHz mono.
    Bytes floats = {4, 1};
    for (int i = 0; i < 600; ++i) {
      const float v = float(i % 100) / 50.f - 1.f;
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      le32(floats, bits);
    }
    put(out / "audio/float-4", floats);
    // 17 x 3 empty chunks before fmt and data (5); the WAV in pieces (6).
    Bytes chunks = {5, 3, 'j', 'u', 'n', 'k', 0, 0, 0, 0};
    chunks.insert(chunks.end(), lt::fuzz::kFileSeparator.begin(), lt::fuzz::kFileSeparator.end());
    chunks.insert(chunks.end(), wav.begin() + 12, wav.end());
    put(out / "audio/chunks-5", chunks);
    Bytes pieces = {6, 0};
    pieces.insert(pieces.end(), wav.begin(), wav.end());
    put(out / "audio/pieces-6", pieces);
  }

  // Recognition: 0.1 s of a tone as raw 16 kHz s16le (byte 1 = 1), for
  // each model, phone model on and off (byte 0 = 0..5).
  {
    Bytes pcm;
    for (int i = 0; i < 1600; ++i) {
      const int16_t v = int16_t(8000 * std::sin(0.07 * i) * (i % 400 < 300));
      pcm.push_back(uint8_t(v & 0xff));
      pcm.push_back(uint8_t(uint16_t(v) >> 8));
    }
    for (uint8_t kind = 0; kind < 6; ++kind) {
      Bytes b = {kind, 1};
      b.insert(b.end(), pcm.begin(), pcm.end());
      put(out / ("recognizer/tone-" + std::to_string(kind)), b);
    }
  }

  // Speech corpora: a manifest alone, and a lexicon with a manifest that needs it.
  {
    const std::string manifest = "path\tduration_s\tspeaker\twords\tphones\na.wav\t1.5\tv1\tHI THERE\tHH AY DH EH R\n";
    put(out / "manifest/phones", Bytes(manifest.begin(), manifest.end()));
    const std::string both = ";;; lexicon\nhi HH AY1\nthere DH EH1 R\nthere(2) DH ER0\n" + lt::fuzz::kFileSeparator +
                             "path\twords\nb.wav\thi there\n";
    put(out / "manifest/lexicon-words", Bytes(both.begin(), both.end()));
  }

  // ARPA language models (the harness's first byte: even = the rest as is,
  // odd = the rest gzipped by the harness at level byte >> 1): a bigram, a
  // trigram whose context is missing, and a gzip file.
  {
    const std::string bigram = "\\data\\\nngram 1=4\nngram 2=2\n\n\\1-grams:\n-99 <s> -0.3\n-0.7 </s>\n"
                               "-1.2 <unk>\n-0.4 HELLO -0.2\n\n\\2-grams:\n-0.1 <s> HELLO\n-0.3 HELLO </s>\n\n\\end\\\n";
    const std::string trigram = "\\data\\\nngram 1=4\nngram 2=1\nngram 3=1\n\n\\1-grams:\n-99 <s> -0.5\n"
                                "-0.5 </s>\n-0.3 hello -0.2\n-0.9 World\n\n\\2-grams:\n-0.1 <s> HELLO -0.4\n\n"
                                "\\3-grams:\n-0.05 hello world </s>\n\\end\\\n";
    Bytes plain = {0};
    plain.insert(plain.end(), bigram.begin(), bigram.end());
    put(out / "language_model/bigram", plain);
    Bytes missing = {0};
    missing.insert(missing.end(), trigram.begin(), trigram.end());
    put(out / "language_model/trigram-missing-context", missing);
    Bytes by_harness = {1 | (6 << 1)};
    by_harness.insert(by_harness.end(), bigram.begin(), bigram.end());
    put(out / "language_model/bigram-raw", by_harness);
    Bytes gz = lt::fuzz::gzip(reinterpret_cast<const uint8_t*>(trigram.data()), trigram.size(), 9);
    gz.insert(gz.begin(), 0);
    put(out / "language_model/trigram-gz", gz);
  }

  // PNG: every channel count, a few sizes.
  std::vector<Bytes> pngs;
  for (int c = 1; c <= 4; ++c) {
    lt::write_png(tmp + "/p.png", image(2 + c, 3, c));
    pngs.push_back(read_all(tmp + "/p.png"));
    put(out / ("png/c" + std::to_string(c)), pngs.back());
  }

  // IDX: images and labels, plain and gzip (the harness's first byte: 0 = as is).
  lt::write_idx_images(tmp + "/i", idx_images(3, 4));
  lt::write_idx_labels(tmp + "/l", {1, 2, 3});
  const Bytes images = read_all(tmp + "/i"), labels = read_all(tmp + "/l");
  put(out / "idx/images", images);
  put(out / "idx/labels", labels);
  for (const auto& [name, plain] : {std::pair{"images", tmp + "/i"}, std::pair{"labels", tmp + "/l"}}) {
    Bytes gz = gzip_file(plain);
    gz.insert(gz.begin(), 0);
    put(out / ("idx_gzip/" + std::string(name) + "-gz"), gz);
    Bytes raw = read_all(plain);
    raw.insert(raw.begin(), 1 | (6 << 1));  // the harness gzips it at level 6
    put(out / ("idx_gzip/" + std::string(name) + "-raw"), raw);
  }

  // CIFAR-10: one and two batches.
  put(out / "cifar10/one", cifar_batch(1));
  {
    Bytes two = joined({cifar_batch(1), cifar_batch(2)}, 0);
    two.erase(two.begin());  // no layout byte in this harness
    put(out / "cifar10/two", two);
  }

  // image_dataset: the harness's first byte is the layout (0 flat PNG, 1 split PNG, 2 IDX, 3 CIFAR).
  put(out / "image_dataset/png-flat", joined({pngs[0], pngs[0], pngs[0]}, 0));
  lt::write_png(tmp + "/q.png", image(4, 3, 1));
  const Bytes same = read_all(tmp + "/q.png");
  put(out / "image_dataset/png-split", joined({same, same, same, same}, 1));
  lt::write_idx_images(tmp + "/t", idx_images(2, 4));
  lt::write_idx_labels(tmp + "/tl", {5, 6});
  put(out / "image_dataset/idx", joined({images, labels, read_all(tmp + "/t"), read_all(tmp + "/tl")}, 2));
  put(out / "image_dataset/cifar10", joined(std::vector<Bytes>(6, cifar_batch(1)), 3));
  fs::remove_all(tmp);
  return 0;
}
