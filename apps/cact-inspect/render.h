#pragma once
// Text and JSON renderings of what cact-inspect gathers (docs/INSPECT.md
// documents the JSON schema; golden/ pins both outputs).
#include <optional>
#include <string>
#include <vector>

#include "cact/inspect.h"

namespace cact::inspect {

struct Report {
  std::string path;
  const Model* model = nullptr;                               // null when only --check ran on an invalid file
  bool tensors = false;                                       // --tensors table (with digests)
  std::optional<std::vector<std::string>> problems;           // --check results
  std::optional<std::pair<std::string, TensorStats>> tensor;  // --tensor NAME
  size_t value_limit = 64;
};

std::string render_text(const Report& report);
std::string render_json(const Report& report);

}  // namespace cact::inspect
