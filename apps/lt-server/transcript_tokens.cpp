// Transcripts as tokens (transcript_tokens.h).
#include "transcript_tokens.h"

namespace lt::server {

std::vector<Token> tokens_of(const lt_transcript* t, bool words) {
  std::vector<Token> out;
  const int64_t n = words ? lt_transcript_words(t) : lt_transcript_phones(t);
  for (int64_t i = 0; i < n; ++i) {
    const lt_token k = words ? lt_transcript_word(t, i) : lt_transcript_phone(t, i);
    if (k.text) out.push_back({k.text, k.start, k.end});
  }
  return out;
}

}  // namespace lt::server
