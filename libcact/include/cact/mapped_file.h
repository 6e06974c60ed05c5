#pragma once
// A read-only memory map of a whole file (or an empty map for an empty file).
// A file of 2 MiB or more is mapped at a 2 MiB-aligned address.
#include <cstdint>
#include <filesystem>
#include <span>

namespace cact {

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

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace cact
