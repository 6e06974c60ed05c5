#pragma once
// Paths of the source tree, the build tree and the bundled files, for tests.
#include <filesystem>
#include <string>

namespace cact::test {
std::filesystem::path source_dir();
std::filesystem::path binary_dir();
// The bundled trained archive and its companions (models/ in the repo).
std::filesystem::path models_dir();
std::filesystem::path golden_dir();
// A fresh empty directory under the build tree, unique per call.
std::filesystem::path scratch_dir(const std::string& tag);
}  // namespace cact::test
