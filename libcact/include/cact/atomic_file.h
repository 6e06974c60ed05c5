#pragma once
// Failure-safe output: bytes go to a temporary file beside the target, which is
// fsynced and renamed over the target only when complete. On any error (or if
// commit() is never called) the temporary is removed and the target untouched.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace cact {

class AtomicFile {
 public:
  // Refuses (cact::Error) a target that is the same file as any of `inputs`.
  explicit AtomicFile(const std::filesystem::path& target,
                      std::span<const std::filesystem::path> inputs = {});
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::span<const uint8_t> bytes);
  void write_zeros(uint64_t count);
  uint64_t written() const { return written_; }
  // fsync + rename over the target. Throws cact::Error on failure.
  void commit();

 private:
  std::filesystem::path target_, temp_;
  int fd_ = -1;
  uint64_t written_ = 0;
  bool committed_ = false;
};

// True when the two paths name the same existing file (or the same path).
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);

}  // namespace cact
