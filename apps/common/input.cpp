#include "common/input.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cact/error.h"
#include "cact/mapped_file.h"

namespace cact::app {

namespace {

std::string read_stdin(const std::string& what, size_t max_bytes) {
  std::string text;
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) {
    text.append(buf, n);
    if (text.size() > max_bytes)
      fail(what + ": more than " + std::to_string(max_bytes) + " bytes on standard input, the limit");
  }
  if (std::ferror(stdin) != 0) fail(what + ": cannot read (" + std::strerror(errno) + ")");
  return text;
}

}  // namespace

bool read_line(std::istream& in, std::string& line, size_t limit, bool& too_long) {
  line.clear();
  too_long = false;
  std::streambuf* buf = in.rdbuf();
  bool any = false;
  for (int c = buf->sbumpc(); c != std::char_traits<char>::eof(); c = buf->sbumpc()) {
    any = true;
    if (c == '\n') return true;
    if (line.size() < limit) {
      line.push_back(char(c));
    } else {
      too_long = true;
    }
  }
  return any;
}

std::string read_input(const std::string& path, const std::string& what, size_t max_bytes) {
  if (path == "-") return read_stdin(what, max_bytes);
  return read_regular_file(path, max_bytes, what);
}

}  // namespace cact::app
