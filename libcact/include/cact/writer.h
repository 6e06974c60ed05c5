#pragma once
// Writes archives: header + codebooks + directory + 64-aligned blobs with zero
// padding, deterministic bytes. Files go through AtomicFile (temp + rename),
// so a failure never leaves a half-written output or touches an input.
#include <cstdint>
#include <filesystem>
#include <functional>
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

// The same layout for blobs made one at a time (cact-build checkpoint,
// cact-quant requantize), so that no more than one is held: the directory
// goes out first, so every record carries its blob's nbytes up front (offsets
// are set here). Bytes go to `sink` in file order.
class ArchiveStream {
 public:
  using Sink = std::function<void(std::span<const uint8_t>)>;
  ArchiveStream(Sink sink, Header header, std::span<const float> codebooks, std::vector<Record> records);
  // The next blob in directory order; throws cact::Error when its size is not
  // its record's nbytes or every blob was already given.
  void add(std::span<const uint8_t> blob);
  // Throws cact::Error unless every blob was given.
  void finish() const;
  uint64_t file_bytes() const { return file_bytes_; }  // the whole archive, known up front

 private:
  Sink sink_;
  std::vector<Record> records_;
  size_t next_ = 0;
  uint64_t position_ = 0, file_bytes_ = 0;
};

}  // namespace cact
