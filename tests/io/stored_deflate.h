// Minimal gzip and PNG encoders written for the tests, independent of zlib and
// stb: the deflate data is made of stored (uncompressed) blocks (RFC 1951
// section 3.2.4), wrapped as gzip (RFC 1952) or as a zlib stream (RFC 1950) in
// PNG IDAT chunks with filter type 0 on every scanline.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "io/temp_dir.h"

namespace lt::test {

inline uint32_t crc32_of(const uint8_t* p, size_t n, uint32_t crc = 0) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

inline uint32_t adler32_of(const std::vector<uint8_t>& v) {
  uint32_t a = 1, b = 0;
  for (uint8_t x : v) {
    a = (a + x) % 65521;
    b = (b + a) % 65521;
  }
  return b << 16 | a;
}

inline void put_le32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 0; shift < 32; shift += 8) out.push_back(uint8_t(v >> shift));
}

inline std::vector<uint8_t> deflate_stored(const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out;
  size_t pos = 0;
  do {
    const size_t len = std::min<size_t>(65535, data.size() - pos);
    const bool last = pos + len == data.size();
    out.push_back(last ? 1 : 0);  // BFINAL, BTYPE 00
    out.push_back(uint8_t(len));
    out.push_back(uint8_t(len >> 8));
    out.push_back(uint8_t(~len));
    out.push_back(uint8_t(~len >> 8));
    out.insert(out.end(), data.begin() + pos, data.begin() + pos + len);
    pos += len;
  } while (pos < data.size());
  return out;
}

inline std::vector<uint8_t> gzip_stored(const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
  const std::vector<uint8_t> body = deflate_stored(data);
  out.insert(out.end(), body.begin(), body.end());
  put_le32(out, crc32_of(data.data(), data.size()));
  put_le32(out, uint32_t(data.size()));
  return out;
}

inline void png_chunk(std::vector<uint8_t>& out, const char* type, const std::vector<uint8_t>& data) {
  put_be32(out, uint32_t(data.size()));
  std::vector<uint8_t> body(type, type + 4);
  body.insert(body.end(), data.begin(), data.end());
  out.insert(out.end(), body.begin(), body.end());
  put_be32(out, crc32_of(body.data(), body.size()));
}

// samples: height x width x channels values, each < 2^depth (depth 8 or 16).
inline std::vector<uint8_t> png_stored(int width, int height, int channels,
                                       const std::vector<uint16_t>& samples, int depth = 8) {
  static const uint8_t color_type[5] = {0, 0, 4, 2, 6};  // by channel count: grey, grey+alpha, RGB, RGBA
  std::vector<uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<uint8_t> ihdr;
  put_be32(ihdr, uint32_t(width));
  put_be32(ihdr, uint32_t(height));
  ihdr.insert(ihdr.end(), {uint8_t(depth), color_type[channels], 0, 0, 0});
  png_chunk(out, "IHDR", ihdr);

  std::vector<uint8_t> raw;
  for (int y = 0; y < height; ++y) {
    raw.push_back(0);  // filter: none
    for (int i = 0; i < width * channels; ++i) {
      const uint16_t s = samples[size_t(y) * width * channels + i];
      if (depth == 16) raw.push_back(uint8_t(s >> 8));
      raw.push_back(uint8_t(s));
    }
  }
  std::vector<uint8_t> zlib = {0x78, 0x01};
  const std::vector<uint8_t> body = deflate_stored(raw);
  zlib.insert(zlib.end(), body.begin(), body.end());
  put_be32(zlib, adler32_of(raw));
  png_chunk(out, "IDAT", zlib);
  png_chunk(out, "IEND", {});
  return out;
}

}  // namespace lt::test
