#include "common/input.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "cact/error.h"

namespace cact::app {

std::string read_input(const std::string& path, const std::string& what) {
  const bool std_in = path == "-";
  if (!std_in && std::filesystem::is_directory(path)) fail(what + ": is a directory");
  std::FILE* in = std_in ? stdin : std::fopen(path.c_str(), "rb");
  if (in == nullptr) fail(what + ": cannot open (" + std::strerror(errno) + ")");
  std::string text;
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, in)) > 0) text.append(buf, n);
  const bool failed = std::ferror(in) != 0;
  const int err = errno;
  if (!std_in) std::fclose(in);
  if (failed) fail(what + ": cannot read (" + std::strerror(err) + ")");
  return text;
}

}  // namespace cact::app
