// libcact.so exports exactly the functions cact.h declares (nothing of the
// C++ layers, the standard library or the JSON parser), under a SONAME with
// the major version.
#include <doctest/doctest.h>

#include <cctype>
#include <cstdio>
#include <set>
#include <string>

#include "cact/cact.h"
#include "support/run_app.h"

namespace {

std::string command_output(const std::string& command) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  CHECK(::pclose(p) == 0);
  return out;
}

// The name before the '(' of every declaration, a line `CACT_API ... name(`.
std::set<std::string> declared_functions() {
  const std::string header = cact::test::slurp(CACT_C_HEADER);
  auto is_name = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
  std::set<std::string> names;
  for (size_t at = header.find("CACT_API "); at != std::string::npos; at = header.find("CACT_API ", at + 1)) {
    if (at == 0 || header[at - 1] != '\n') continue;  // declarations start a line
    size_t end = header.find('(', at);
    while (end > at && !is_name(header[end - 1])) --end;
    size_t begin = end;
    while (begin > at && is_name(header[begin - 1])) --begin;
    names.insert(header.substr(begin, end - begin));
  }
  return names;
}

}  // namespace

TEST_CASE("capi: libcact.so exports the functions of cact.h and nothing else") {
  const std::set<std::string> declared = declared_functions();
  REQUIRE(declared.size() > 50);
  // Global and weak definitions only: link-time optimisation may put local
  // symbols in the dynamic table too (thread-locals shared between its
  // partitions), which no other object can bind to.
  const std::string symbols =
      command_output("readelf --dyn-syms -W " + cact::test::shell_quote(CACT_LIBRARY_FILE) +
                     " | awk '$1 ~ /^[0-9]+:$/ && $5 != \"LOCAL\" && $7 != \"UND\" {print $8}'");
  std::set<std::string> exported;
  size_t start = 0;
  for (size_t end; (end = symbols.find('\n', start)) != std::string::npos; start = end + 1) {
    std::string name = symbols.substr(start, end - start);
    name = name.substr(0, name.find('@'));  // the version node, CACT_1
    if (!name.empty() && name != "CACT_1") exported.insert(name);
  }
  for (const std::string& name : exported) {
    CAPTURE(name);
    CHECK(declared.count(name) == 1);
  }
  for (const std::string& name : declared) {
    CAPTURE(name);
    CHECK(exported.count(name) == 1);
  }
}

TEST_CASE("capi: the SONAME carries the major version") {
  const std::string dynamic = command_output("readelf -d " + cact::test::shell_quote(CACT_LIBRARY_FILE));
  CHECK(dynamic.find("[libcact.so." + std::to_string(CACT_VERSION_MAJOR) + "]") != std::string::npos);
}
