// lt.h: version, errors, and loading models.
#include <cstdio>
#include <cstring>

#include "api_internal.h"
#include "backend/device.h"
#include "core/precision_flags.h"
#include "io/safetensors.h"
#include "train/copy_task.h"

using lt::api::ArgumentError;

namespace {
thread_local std::string g_last_error;
}

void lt::api::set_error(const std::string& message) { g_last_error = message; }

const char* lt_version(void) {
  static const std::string version = std::string(lt::build_version()) + " (" + lt::build_commit() + ")";
  return version.c_str();
}

const char* lt_last_error(void) { return g_last_error.c_str(); }

void lt::api::parse_precision(const char* text, const char* what, bool& bf16, bool& tf32) {
  const std::string p = text ? text : "fp32";
  bf16 = p == "bf16" || p == "bf16+tf32";
  tf32 = p == "tf32" || p == "bf16+tf32";
  if (!bf16 && !tf32 && p != "fp32")
    throw ArgumentError(std::string(what) + ": \"" + p + "\" is not a precision (fp32, bf16, tf32 or bf16+tf32)");
}

lt_model_options lt_model_default_options(void) { return {"cpu", "fp32"}; }

lt_status lt_model_load(const char* path, const lt_model_options* options, lt_model** model) {
  if (model) *model = nullptr;
  return lt::api::guarded([&] {
    lt::api::require(path, "path");
    lt::api::require(model, "model");
    const lt_model_options o = options ? *options : lt_model_default_options();
    lt::api::require(o.device, "options->device");
    auto m = std::make_unique<lt_model>();
    m->path = path;
    m->device = lt::parse_device(o.device);
    lt::require_device(m->device);
    bool bf16 = false, tf32 = false;
    lt::api::parse_precision(o.precision, "options->precision", bf16, tf32);
    m->precision = lt::generation_precision(bf16, tf32, m->device);
    // A checkpoint without lt.model is the reference's image model.
    const lt::Checkpoint ck = lt::load_safetensors(path);
    m->family = ck.meta("lt.model", "image");
    if (m->family == "image") {
      m->sequence = lt::load_image_model(ck, m->device);
      m->image.emplace(*m->sequence);  // what images add, over the one model
    } else if (m->family == "copy") {
      m->sequence = lt::load_copy_model(ck, m->device);
    } else {
      throw lt::Error(std::string(path) + ": " + lt::with_article(m->family) +
                      " model, not an image or copy model (speech models: lt_recognizer_new)");
    }
    *model = m.release();
  });
}

lt_status lt_model_get_info(const lt_model* model, lt_model_info* info) {
  return lt::api::guarded([&] {
    lt::api::require(model, "model");
    lt::api::require(info, "info");
    *info = lt_model_info{};
    std::snprintf(info->family, sizeof info->family, "%s", model->family.c_str());
    const lt::SequenceModelConfig& c = model->core().config();
    info->vocabulary = c.vocabulary;
    info->positions = c.max_positions;
    info->head_width = c.head.width();
    info->parameters = model->core().params().numel();
    info->layers = c.transformer.layers;
    std::snprintf(info->attention, sizeof info->attention, "%s", c.encoder_name().c_str());
    std::snprintf(info->device, sizeof info->device, "%s", lt::device_description(model->device).c_str());
    std::snprintf(info->precision, sizeof info->precision, "%s", model->precision.describe().c_str());
    if (model->image) {
      info->height = model->image->config().height;
      info->width = model->image->config().width;
      info->channels = model->image->config().channels;
    }
  });
}

void lt_model_free(lt_model* model) { delete model; }

void lt_set_threads(int threads) { lt::set_num_threads(threads); }
