// lt.h: version, errors, and loading models.
#include <cstdio>
#include <cstring>

#include "api_internal.h"
#include "lt/backend.h"
#include "lt/copy_task.h"
#include "lt/safetensors.h"

namespace {
thread_local std::string g_last_error;
}

void lt::api::set_error(const std::string& message) { g_last_error = message; }

const char* lt_version(void) {
  static const std::string version = std::string(lt::build_version()) + " (" + lt::build_commit() + ")";
  return version.c_str();
}

const char* lt_last_error(void) { return g_last_error.c_str(); }

lt_status lt_model_load(const char* path, const char* device, lt_model** model) {
  if (model) *model = nullptr;
  return lt::api::guarded([&] {
    lt::api::require(path, "path");
    lt::api::require(device, "device");
    lt::api::require(model, "model");
    auto m = std::make_unique<lt_model>();
    m->path = path;
    m->device = lt::parse_device(device);
    lt::require_device(m->device);
    // A checkpoint without lt.model is the reference's image model.
    m->family = lt::load_safetensors(path).meta("lt.model", "image");
    if (m->family == "image")
      m->image = lt::ImageModel::load(path, m->device);
    else if (m->family == "copy")
      m->sequence = lt::load_copy_model(path, m->device);
    else
      throw lt::Error(std::string(path) + ": a " + m->family + " model; lt_model_load takes image and copy models");
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
    if (model->image) {
      info->height = model->image->config().height;
      info->width = model->image->config().width;
      info->channels = model->image->config().channels;
    }
  });
}

void lt_model_free(lt_model* model) { delete model; }
