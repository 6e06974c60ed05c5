#pragma once
// Reading input files: a read-only memory map of a whole file (archives,
// checkpoints), or the bytes of a small one (JSON, tokenizer models). Both
// refuse anything but a regular file before reading a byte: a FIFO would block
// or stream, a device such as /dev/zero never ends.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace cact {

// A map of the whole file (or an empty map for an empty file). A file of
// 2 MiB or more is mapped at a 2 MiB-aligned address.
class MappedFile {
 public:
  MappedFile() = default;
  // Throws cact::Error naming the path on any failure.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  static constexpr size_t kHugeAlign = size_t(2) << 20;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  // Drops the resident pages that lie wholly inside `part` (a range of
  // bytes()); a later read faults them in from the file again. A reader that
  // passes over a large file once calls it behind itself, so that what it
  // has read does not stay in its resident set.
  void drop_pages(std::span<const uint8_t> part) const noexcept;

 private:
  void release() noexcept;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  int slot_ = -1;  // entry in the table mapped_path_at() searches, -1 = none
};

// MappedFile::drop_pages for any read-only private mapping of a file (a
// MappedFile's, or a memfd's): never for ordinary memory, whose contents
// MADV_DONTNEED would discard.
void drop_mapped_pages(std::span<const uint8_t> part) noexcept;

// The path of the live MappedFile whose bytes contain `address`, or nullptr.
// Async-signal-safe: a SIGBUS handler uses it to tell "the file was truncated
// by another process while mapped" from any other bus error.
const char* mapped_path_at(const void* address) noexcept;

// The whole of a regular file of at most `max_bytes`. Throws cact::Error
// "LABEL: ..." (LABEL: `label`, or else the path) when it cannot be opened, is
// not a regular file (naming what it is), is larger than `max_bytes` (checked
// before reading) or cannot be read.
std::string read_regular_file(const std::filesystem::path& path, size_t max_bytes, const std::string& label = {});

}  // namespace cact
