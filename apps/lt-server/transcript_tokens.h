// A library transcript's phones or words as the protocol's tokens, for both
// the live streams (compute_loop.cpp) and the file endpoints.
#pragma once
#include <vector>

#include "lt.h"
#include "vosk_protocol.h"

namespace lt::server {

std::vector<Token> tokens_of(const lt_transcript* t, bool words);

}  // namespace lt::server
