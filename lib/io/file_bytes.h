// Whole-file reads and atomic whole-file writes for the io readers and writers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lt::io {

// The bytes of path; throws lt::Error naming it when it cannot be opened or read.
std::vector<uint8_t> read_file_bytes(const std::string& path);
// Writes path.tmp, then renames it over path: readers never see a partial
// file, and a failed write leaves path as it was.
void write_file_atomically(const std::string& path, const void* data, size_t size);

}  // namespace lt::io
