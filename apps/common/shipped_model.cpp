#include "shipped_model.h"

#include "lt.hpp"

namespace lt::app {

std::string find_shipped_model(const std::string& file) { return lt::api::find_shipped(file); }

}  // namespace lt::app
