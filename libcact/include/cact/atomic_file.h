#pragma once
// Failure-safe output: bytes go to a temporary file beside the target, which is
// fsynced and renamed over the target only when complete. On any error (or if
// commit() is never called) the temporary is removed and the target untouched.
// Bytes reach the file in whole 2 MiB chunks at 2 MiB offsets (the last one
// shorter): Linux filesystems with large folios (ext4, xfs) then cache the new
// file in 2 MiB folios, which a mapping of it reads faster (docs/ENGINE.md
// "Page cache").
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace cact {

class AtomicFile {
 public:
  // Refuses (cact::Error naming the target) a target that is the same file as
  // any of `inputs`, and an existing target that is not a regular file (a
  // device, a FIFO, a directory: renaming over it would replace the special
  // file itself; symlinks are followed for this check).
  explicit AtomicFile(const std::filesystem::path& target, std::span<const std::filesystem::path> inputs = {});
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::span<const uint8_t> bytes);
  void write_zeros(uint64_t count);
  uint64_t written() const { return written_; }  // bytes accepted so far
  // The temporary, complete once finish() returned: a writer may read back
  // and check what it wrote before commit().
  const std::filesystem::path& temporary() const { return temp_; }
  static constexpr size_t kChunk = size_t(2) << 20;
  // Flush, fsync and close the temporary (the target is not touched yet).
  // Idempotent; commit() calls it. Throws cact::Error on failure.
  void finish();
  // finish() + rename over the target. Throws cact::Error on failure.
  void commit();
  // A multi-file output, all or nothing: every file is finished before any is
  // renamed, so a failure while writing (a full disk) leaves no new target.
  static void commit_all(std::span<AtomicFile* const> files);

 private:
  std::filesystem::path target_, temp_;
  void write_out(const uint8_t* p, size_t n);  // straight to the file
  void flush();                                // pending_ to the file
  int fd_ = -1;
  int slot_ = -1;  // entry in the table remove_pending_temporaries() walks
  uint64_t written_ = 0;
  std::vector<uint8_t> pending_;  // the current chunk, < kChunk bytes
  bool finished_ = false, committed_ = false;
};

// True when the two paths name the same existing file (or the same path).
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);

// Unlinks the temporary of every AtomicFile not yet committed or destroyed.
// Async-signal-safe: the tools' SIGINT/SIGTERM handlers call it before they
// exit, so an interrupted write leaves nothing behind (SIGKILL cannot be
// caught: its temporary stays, docs/RELIABILITY.md).
void remove_pending_temporaries() noexcept;

}  // namespace cact
