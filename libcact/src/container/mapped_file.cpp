#include "cact/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "cact/error.h"
#include "container/file_type.h"

namespace cact {
namespace {

// The file mapped read-only at a multiple of kHugeAlign when it is at least
// that large, so that file offset and address agree modulo 2 MiB and a 2 MiB
// page-cache folio can be mapped by one page-table entry (docs/ENGINE.md "Page
// cache"). A reservation kHugeAlign larger is mapped first and trimmed around
// the file. MAP_FAILED with errno on failure.
void* map_aligned(int fd, size_t size) {
  if (size < MappedFile::kHugeAlign) return ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const size_t span = size + MappedFile::kHugeAlign;
  void* r = ::mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r == MAP_FAILED) return r;
  const auto base = reinterpret_cast<uintptr_t>(r);
  const uintptr_t at = (base + MappedFile::kHugeAlign - 1) & ~uintptr_t(MappedFile::kHugeAlign - 1);
  void* p = ::mmap(reinterpret_cast<void*>(at), size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    ::munmap(r, span);
    errno = e;
    return p;
  }
  // Trim the reservation: before the file, and after its last page.
  const auto page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t end = (at + size + page - 1) & ~(page - 1);
  if (at > base) ::munmap(r, at - base);
  if (base + span > end) ::munmap(reinterpret_cast<void*>(end), base + span - end);
  return p;
}

// Opens `path` for reading, refusing anything but a regular file. O_NONBLOCK:
// opening a FIFO (or a device) must not block waiting for a writer; it is
// refused by its type right after. Returns the descriptor; fills `st`.
int open_regular(const std::filesystem::path& path, struct stat& st, const std::string& who) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(who + ": cannot open: " + std::strerror(errno));
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    fail(who + ": cannot stat: " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(who + ": not a regular file (" + file_type_name(st.st_mode) + ")");
  }
  return fd;
}

// Live mappings, for mapped_path_at(): fixed slots so that a signal handler
// can search them without locks or allocation. A mapping that finds no free
// slot is simply not named by a bus error (the tools map a few files at most).
struct MapSlot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 live
  uintptr_t begin = 0, end = 0;
  char path[1024] = {};
};
constexpr int kMapSlots = 16;
MapSlot map_slots[kMapSlots];
static_assert(std::atomic<int>::is_always_lock_free);

int register_mapping(const uint8_t* data, size_t size, const std::filesystem::path& path) {
  for (int i = 0; i < kMapSlots; ++i) {
    int expected = 0;
    MapSlot& s = map_slots[i];
    if (!s.state.compare_exchange_strong(expected, 1)) continue;
    s.begin = reinterpret_cast<uintptr_t>(data);
    s.end = s.begin + size;
    const std::string name = path.string();
    const size_t n = std::min(name.size(), sizeof s.path - 1);
    std::memcpy(s.path, name.data(), n);
    s.path[n] = '\0';
    s.state.store(2, std::memory_order_release);
    return i;
  }
  return -1;
}

}  // namespace

const char* mapped_path_at(const void* address) noexcept {
  const auto a = reinterpret_cast<uintptr_t>(address);
  for (const MapSlot& s : map_slots) {
    if (s.state.load(std::memory_order_acquire) == 2 && a >= s.begin && a < s.end) return s.path;
  }
  return nullptr;
}

MappedFile::MappedFile(const std::filesystem::path& path) {
  struct stat st {};
  const int fd = open_regular(path, st, path.string());
  size_ = size_t(st.st_size);
  if (size_ > 0) {
    void* p = map_aligned(fd, size_);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      fail(path.string() + ": cannot map: " + std::strerror(e));
    }
    data_ = static_cast<const uint8_t*>(p);
    slot_ = register_mapping(data_, size_, path);
  }
  ::close(fd);
}

void MappedFile::release() noexcept {
  if (slot_ >= 0) map_slots[slot_].state.store(0, std::memory_order_release);
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
  slot_ = -1;
}

MappedFile::~MappedFile() { release(); }

void drop_mapped_pages(std::span<const uint8_t> part) noexcept {
  if (part.empty()) return;
  const auto begin = uintptr_t(part.data()), end = begin + part.size();
  // Whole pages only: the pages at either end may hold bytes still to be read.
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t from = (begin + page - 1) & ~(page - 1), to = end & ~(page - 1);
  // Legal on a read-only private file mapping: nothing was written to it, so
  // the pages come back from the file as they were.
  if (to > from) (void)::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
}

void MappedFile::drop_pages(std::span<const uint8_t> part) const noexcept {
  const auto begin = uintptr_t(part.data()), end = begin + part.size();
  if (part.empty() || begin < uintptr_t(data_) || end > uintptr_t(data_) + size_) return;
  drop_mapped_pages(part);
}

MappedFile::MappedFile(MappedFile&& other) noexcept : data_(other.data_), size_(other.size_), slot_(other.slot_) {
  other.data_ = nullptr;
  other.size_ = 0;
  other.slot_ = -1;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    data_ = other.data_;
    size_ = other.size_;
    slot_ = other.slot_;
    other.data_ = nullptr;
    other.size_ = 0;
    other.slot_ = -1;
  }
  return *this;
}

std::string read_regular_file(const std::filesystem::path& path, size_t max_bytes, const std::string& label) {
  const std::string who = label.empty() ? path.string() : label;
  struct stat st {};
  const int fd = open_regular(path, st, who);
  auto refuse_size = [&](uint64_t size) {
    ::close(fd);
    fail(who + ": " + std::to_string(size) + " bytes, more than the limit of " + std::to_string(max_bytes) +
         " for this input");
  };
  if (uint64_t(st.st_size) > max_bytes) refuse_size(uint64_t(st.st_size));
  // Read to the end, not to st_size: a file that grows meanwhile is still
  // bounded (one byte past st_size confirms the end in the common case).
  std::string bytes(size_t(st.st_size) + 1, '\0');
  size_t got = 0;
  for (;;) {
    if (got == bytes.size()) {
      if (got > max_bytes) refuse_size(got);
      bytes.resize(std::min(max_bytes + 1, 2 * got));
    }
    const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      fail(who + ": cannot read: " + std::strerror(e));
    }
    if (n == 0) break;
    got += size_t(n);
  }
  ::close(fd);
  bytes.resize(got);
  return bytes;
}

}  // namespace cact
