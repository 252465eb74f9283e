// The decoders behind make_ctc_decoder (lt/ctc.h), one file each.
#pragma once
#include <memory>

#include "lt/ctc.h"

namespace lt {

std::unique_ptr<CtcDecoder> make_prefix_beam_decoder(int64_t classes, const CtcBeamOptions& options);

}  // namespace lt
