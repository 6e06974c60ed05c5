// Where the bundled archive lives (docs/ENGINE.md "cact-run").
#include <array>
#include <system_error>

#include "cact/error.h"
#include "run.h"

#ifndef CACT_DEFAULT_MODEL
#define CACT_DEFAULT_MODEL "models/license-tiny.cact"
#endif

namespace cact::run {

std::filesystem::path default_model() {
  namespace fs = std::filesystem;
  const fs::path name = fs::path(CACT_DEFAULT_MODEL).filename();
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path() / name);
    candidates.push_back(exe.parent_path().parent_path() / "share" / "cact" / name);
  }
  candidates.emplace_back(CACT_DEFAULT_MODEL);
  std::string looked;
  for (const fs::path& p : candidates) {
    if (fs::is_regular_file(p, ec)) return p;
    looked += (looked.empty() ? "" : ", ") + p.string();
  }
  fail("no archive given and the bundled " + name.string() + " was not found (looked in " + looked + ")");
}

}  // namespace cact::run
