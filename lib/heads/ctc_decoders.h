// The decoders behind make_ctc_decoder (heads/ctc.h), one file each.
#pragma once
#include <memory>

#include "heads/ctc.h"

namespace lt {

std::unique_ptr<CtcDecoder> make_prefix_beam_decoder(int64_t classes, const CtcBeamOptions& options);

}  // namespace lt
