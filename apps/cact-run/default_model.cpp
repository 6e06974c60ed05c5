// Where the bundled archive lives (docs/CHAT.md "The bundled model").
#include <optional>
#include <system_error>

#include "cact/atomic_file.h"
#include "cact/error.h"
#include "run.h"

#ifndef CACT_DEFAULT_MODEL
#define CACT_DEFAULT_MODEL "models/tools/tools-tiny.cact"
#endif

namespace cact::run {

namespace {

std::vector<std::filesystem::path> default_candidates() {
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
  return candidates;
}

std::optional<std::filesystem::path> find_default_model() {
  std::error_code ec;
  for (const std::filesystem::path& p : default_candidates()) {
    if (std::filesystem::is_regular_file(p, ec)) return p;
  }
  return std::nullopt;
}

}  // namespace

std::filesystem::path default_model() {
  if (const auto found = find_default_model()) return *found;
  std::string looked;
  for (const std::filesystem::path& p : default_candidates()) looked += (looked.empty() ? "" : ", ") + p.string();
  fail("no archive given and the bundled " + std::filesystem::path(CACT_DEFAULT_MODEL).filename().string() +
       " was not found (looked in " + looked + ")");
}

bool is_default_model(const std::filesystem::path& archive) {
  const auto found = find_default_model();
  return found && same_file(archive, *found);
}

std::filesystem::path default_tools(const std::filesystem::path& model) { return model.parent_path() / "tools.json"; }

}  // namespace cact::run
