#include "cact/atomic_file.h"

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "cact/error.h"

namespace cact {

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ec;
  if (std::filesystem::exists(a, ec) && std::filesystem::exists(b, ec)) {
    return std::filesystem::equivalent(a, b, ec);
  }
  return std::filesystem::weakly_canonical(a, ec) == std::filesystem::weakly_canonical(b, ec);
}

AtomicFile::AtomicFile(const std::filesystem::path& target, std::span<const std::filesystem::path> inputs)
    : target_(target) {
  for (const auto& input : inputs) {
    if (same_file(target, input)) fail(target.string() + ": output path is the input file; refusing to overwrite it");
  }
  std::string pattern = target.string() + ".tmp-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  fd_ = ::mkstemp(name.data());
  if (fd_ < 0) fail(target.string() + ": cannot create a temporary file beside it: " + std::strerror(errno));
  temp_ = name.data();
  ::fchmod(fd_, 0644);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFile::write_out(const uint8_t* p, size_t left) {
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(target_.string() + ": write failed: " + std::strerror(errno));
    }
    p += n;
    left -= size_t(n);
  }
}

void AtomicFile::flush() {
  write_out(pending_.data(), pending_.size());
  pending_.clear();
}

void AtomicFile::write(std::span<const uint8_t> bytes) {
  const uint8_t* p = bytes.data();
  size_t left = bytes.size();
  written_ += left;
  // Top up the current chunk; whole chunks of a large write go out directly.
  if (!pending_.empty() || left < kChunk) {
    const size_t take = std::min(left, kChunk - pending_.size());
    if (pending_.capacity() < kChunk) pending_.reserve(kChunk);
    pending_.insert(pending_.end(), p, p + take);
    p += take;
    left -= take;
    if (pending_.size() < kChunk) return;
    flush();
  }
  const size_t whole = left - left % kChunk;
  write_out(p, whole);
  pending_.insert(pending_.end(), p + whole, p + left);
}

void AtomicFile::write_zeros(uint64_t count) {
  static const uint8_t kZeros[4096] = {};
  while (count > 0) {
    const uint64_t n = std::min<uint64_t>(count, sizeof kZeros);
    write({kZeros, size_t(n)});
    count -= n;
  }
}

void AtomicFile::commit() {
  flush();
  if (::fsync(fd_) != 0) fail(target_.string() + ": fsync failed: " + std::strerror(errno));
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail(target_.string() + ": close failed: " + std::strerror(errno));
  }
  fd_ = -1;
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    fail(target_.string() + ": cannot rename the finished file into place: " + std::strerror(errno));
  }
  committed_ = true;
  // Make the rename itself durable: without this a power loss after success
  // could leave the old target (never a partial one).
  const std::filesystem::path dir = target_.has_parent_path() ? target_.parent_path() : std::filesystem::path(".");
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace cact
