#include "cact/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <vector>

#include "cact/error.h"
#include "container/file_type.h"

namespace cact {

namespace {

// Temporaries not yet renamed or removed, for remove_pending_temporaries():
// fixed slots, so that a signal handler can walk them without locks or
// allocation. A writer that finds no free slot (more than kTempSlots files
// open at once, or a path longer than a slot) still works; only an interrupt
// would leave its temporary, as SIGKILL does.
struct TempSlot {
  std::atomic<int> state{0};  // 0 free, 1 being filled in, 2 live (name complete or being made by mkstemp)
  char name[4096] = {};
};
constexpr int kTempSlots = 8;
TempSlot temp_slots[kTempSlots];
static_assert(std::atomic<int>::is_always_lock_free);

int claim_temp_slot(const std::string& pattern) {
  if (pattern.size() >= sizeof(TempSlot::name)) return -1;
  for (int i = 0; i < kTempSlots; ++i) {
    int expected = 0;
    if (temp_slots[i].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(temp_slots[i].name, pattern.c_str(), pattern.size() + 1);
      return i;
    }
  }
  return -1;
}

// TARGET.tmp-XXXXXX in the target's directory (same file system, so the rename
// is atomic). A target name near NAME_MAX is shortened in the temporary's name
// only: the suffix must not make an otherwise valid output fail.
std::string temp_pattern(const std::filesystem::path& target) {
  static constexpr char kSuffix[] = ".tmp-XXXXXX";
  const std::filesystem::path dir = target.parent_path();
  long name_max = ::pathconf(dir.empty() ? "." : dir.c_str(), _PC_NAME_MAX);
  if (name_max <= 0) name_max = 255;
  std::string name = target.filename().string();
  const size_t room = size_t(name_max) > sizeof kSuffix ? size_t(name_max) - (sizeof kSuffix - 1) : 1;
  if (name.size() > room) name.resize(room);
  return (dir / (name + kSuffix)).string();
}

}  // namespace

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ec;
  if (std::filesystem::exists(a, ec) && std::filesystem::exists(b, ec)) {
    return std::filesystem::equivalent(a, b, ec);
  }
  return std::filesystem::weakly_canonical(a, ec) == std::filesystem::weakly_canonical(b, ec);
}

void remove_pending_temporaries() noexcept {
  for (TempSlot& s : temp_slots) {
    if (s.state.load(std::memory_order_acquire) == 2) ::unlink(s.name);
  }
}

AtomicFile::AtomicFile(const std::filesystem::path& target, std::span<const std::filesystem::path> inputs)
    : target_(target) {
  for (const auto& input : inputs) {
    if (same_file(target, input)) fail(target.string() + ": output path is the input file; refusing to overwrite it");
  }
  // The rename would replace a device, FIFO or directory entry itself (as
  // root, /dev/null): refused. Writing through it instead is the caller's
  // business ("-" for stdout), never a side effect of naming it.
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    fail(target.string() + ": is " + file_type_name(st.st_mode) + ", not a regular file; refusing to replace it");
  }
  const std::string pattern = temp_pattern(target);
  slot_ = claim_temp_slot(pattern);
  std::vector<char> local;
  char* name = nullptr;
  if (slot_ >= 0) {
    name = temp_slots[slot_].name;
  } else {
    local.assign(pattern.begin(), pattern.end());
    local.push_back('\0');
    name = local.data();
  }
  // The temporary must never exist unregistered while a termination signal
  // can run the handlers: the slot is live before mkstemp fills in the name
  // (a handler then unlinks a name not created yet, harmlessly), and this
  // thread takes those signals only once the name is complete.
  sigset_t termination, previous;
  sigemptyset(&termination);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&termination, sig);
  ::pthread_sigmask(SIG_BLOCK, &termination, &previous);
  if (slot_ >= 0) temp_slots[slot_].state.store(2, std::memory_order_release);
  fd_ = ::mkstemp(name);
  const int mkstemp_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (fd_ < 0) {
    if (slot_ >= 0) temp_slots[slot_].state.store(0);
    slot_ = -1;
    fail(target.string() + ": cannot create a temporary file beside it: " + std::strerror(mkstemp_errno));
  }
  temp_ = name;
  ::fchmod(fd_, 0644);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
  if (slot_ >= 0) temp_slots[slot_].state.store(0, std::memory_order_release);
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

void AtomicFile::finish() {
  if (finished_) return;
  flush();
  if (::fsync(fd_) != 0) fail(target_.string() + ": fsync failed: " + std::strerror(errno));
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail(target_.string() + ": close failed: " + std::strerror(errno));
  finished_ = true;
}

void AtomicFile::commit() {
  finish();
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    fail(target_.string() + ": cannot rename the finished file into place: " + std::strerror(errno));
  }
  committed_ = true;
  if (slot_ >= 0) temp_slots[slot_].state.store(0, std::memory_order_release);
  slot_ = -1;
  // Make the rename itself durable: without this a power loss after success
  // could leave the old target (never a partial one).
  const std::filesystem::path dir = target_.has_parent_path() ? target_.parent_path() : std::filesystem::path(".");
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

void AtomicFile::commit_all(std::span<AtomicFile* const> files) {
  for (AtomicFile* f : files) f->finish();
  for (AtomicFile* f : files) f->commit();
}

}  // namespace cact
