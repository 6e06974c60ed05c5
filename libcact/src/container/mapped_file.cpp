#include "cact/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cact/error.h"

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

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) {
  // O_NONBLOCK: opening a FIFO (or a device) named as an archive must not
  // block waiting for a writer; it is refused below as not a regular file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(path.string() + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    fail(path.string() + ": cannot stat: " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path.string() + ": not a regular file");
  }
  size_ = size_t(st.st_size);
  if (size_ > 0) {
    void* p = map_aligned(fd, size_);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      fail(path.string() + ": cannot map: " + std::strerror(e));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept : data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

}  // namespace cact
