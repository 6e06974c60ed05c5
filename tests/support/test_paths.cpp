#include "support/test_paths.h"

#include <unistd.h>
#include <atomic>

namespace cact::test {
std::filesystem::path source_dir() { return CACT_SOURCE_DIR; }
std::filesystem::path binary_dir() { return CACT_BINARY_DIR; }
std::filesystem::path models_dir() { return source_dir() / "models"; }
std::filesystem::path golden_dir() { return source_dir() / "golden"; }
std::filesystem::path scratch_dir(const std::string& tag) {
  static std::atomic<int> counter{0};
  auto dir = binary_dir() / "scratch" / (tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}
}  // namespace cact::test
