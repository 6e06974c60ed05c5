#include "common/std_paths.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cact/atomic_file.h"
#include "cact/error.h"
#include "common/error_policy.h"
#include "common/output.h"

namespace cact::app {

void refuse_stdout(const std::string& path, const std::string& what) {
  if (is_dash(path)) {
    usage_error(what +
                " -: this output is written to a temporary file and renamed into place, so it cannot go to "
                "standard output; give a file path");
  }
}

void refuse_stdin(const std::string& path, const std::string& what) {
  if (is_dash(path)) usage_error(what + " -: this input cannot be read from standard input; give a file path");
}

void write_output(const std::string& path, std::string_view bytes, std::string_view what,
                  std::span<const std::filesystem::path> inputs) {
  if (is_dash(path)) {
    if (!write_out(bytes)) check_out();
    return;
  }
  AtomicFile file(path, inputs);
  file.write({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  file.commit();
  wrote(path, what);
}

namespace {

// Closes the descriptor whatever happens.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string os_error(const char* what) {
  return std::string("standard input: ") + what + " (" + std::strerror(errno) + ")";
}

}  // namespace

InputFile::InputFile(const std::string& path) : name_(is_dash(path) ? "standard input" : path) {
  if (!is_dash(path)) {
    file_ = MappedFile(path);
    bytes_ = file_.bytes();
    return;
  }
  const Fd spool{::memfd_create("cact-stdin", MFD_CLOEXEC)};
  if (spool.fd < 0) fail(os_error("cannot create a memory file to spool it"));
  char buf[1 << 16];
  size_t total = 0;
  while (true) {
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(os_error("cannot read"));
    }
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(spool.fd, buf + done, size_t(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) fail(os_error("cannot spool"));
      done += w;
    }
    total += size_t(n);
  }
  if (total == 0) return;  // an empty input: no mapping (checks report the 0 bytes)
  void* map = ::mmap(nullptr, total, PROT_READ, MAP_PRIVATE, spool.fd, 0);
  if (map == MAP_FAILED) fail(os_error("cannot map the spooled bytes"));
  spooled_ = map;
  spooled_size_ = total;
  bytes_ = {static_cast<const uint8_t*>(map), total};
}

InputFile::~InputFile() {
  if (spooled_ != nullptr) ::munmap(spooled_, spooled_size_);
}

Model open_model(const InputFile& file) {
  try {
    return Model::from_bytes(file.bytes(), /*file_mapping=*/true);  // a MappedFile, or the spooled memfd's mapping
  } catch (const Error& e) {
    fail(file.name() + ": " + e.what());
  }
}

}  // namespace cact::app
