// Loading lt-server's models as lt-asr and lt-sample-image load theirs (models.h).
#include "models.h"

#include <filesystem>

#include "common_options.h"
#include "shipped_model.h"

namespace lt::server {

namespace {
constexpr const char* kOfflineModel = "asr.safetensors";
constexpr const char* kStreamingModel = "asr-stream.safetensors";
constexpr const char* kImageModel = "mnist.safetensors";
constexpr const char* kWordModel = "speech-words.arpa.gz";
constexpr const char* kPhoneModel = "speech-phones.arpa.gz";
// OpenAI's clients name their model; this one means the server's own.
constexpr const char* kOpenAiModelAlias = "whisper-1";
}  // namespace

std::string model_name(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  const std::string ext = ".safetensors";
  if (name.size() > ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0)
    name.resize(name.size() - ext.size());
  return name;
}

Models load_models(const ServerOptions& o) {
  Models m;
  lt_set_threads(o.threads);
  // lt-asr's default decoding with --words.
  lt_recognizer_options ro = lt_recognizer_default_options();
  ro.device = o.device.c_str();
  ro.beam = o.beam;
  ro.precision = lt::app::precision_name(o.bf16, o.tf32);
  std::string phone_lm = o.phone_lm, lexicon = o.lexicon, lm = o.lm;
  if (o.beam > 1 && phone_lm != "none") {
    if (phone_lm.empty()) phone_lm = lt::app::find_shipped_model(kPhoneModel);
    ro.phone_lm = phone_lm.c_str();
  }
  if (lexicon.empty()) lexicon = lt_default_lexicon();
  ro.lexicon = lexicon.c_str();
  if (lm != "none") {
    if (lm.empty()) lm = lt::app::find_shipped_model(kWordModel);
    ro.word_lm = lm.c_str();
  }
  m.stream_path = o.stream_model.empty() ? lt::app::find_shipped_model(kStreamingModel) : o.stream_model;
  m.offline_path = o.model.empty() ? lt::app::find_shipped_model(kOfflineModel) : o.model;
  m.image_path = o.image_model.empty() ? lt::app::find_shipped_model(kImageModel) : o.image_model;
  m.stream = lt::api::new_recognizer(m.stream_path, ro);
  lt::api::new_stream(m.stream.get());  // refuses a model that cannot stream, now rather than per client
  m.offline = lt::api::new_recognizer(m.offline_path, ro);
  m.image = lt::api::load_model(m.image_path, {o.device.c_str(), "fp32"});
  m.image_info = lt::api::model_info(m.image.get());  // a model of another family: the image batch refuses it
  m.stream_names = {model_name(m.stream_path)};
  m.offline_names = {model_name(m.offline_path), kOpenAiModelAlias};
  m.image_names = {model_name(m.image_path)};
  return m;
}

}  // namespace lt::server
