#pragma once
// Writes archives: header + codebooks + directory + 64-aligned blobs with zero
// padding, deterministic bytes. Files go through AtomicFile (temp + rename),
// so a failure never leaves a half-written output or touches an input.
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "cact/format.h"

namespace cact {

struct TensorData {
  Record record;                   // dtype, ndim, shape, group, bits; offset/nbytes are set by the writer
  std::span<const uint8_t> bytes;  // the blob (caller keeps it alive until the write returns)
};

// Header fields num_tensors and codebook_len are set from the arguments; the
// rest is written as given. Records get their offsets and nbytes.
void write_archive(const std::filesystem::path& path, Header header, std::span<const float> codebooks,
                   std::span<const TensorData> tensors, std::span<const std::filesystem::path> inputs = {});
std::vector<uint8_t> archive_bytes(Header header, std::span<const float> codebooks,
                                   std::span<const TensorData> tensors);

}  // namespace cact
