#pragma once
// `cact-inspect --diff A B` (docs/INSPECT.md "Diff"): what differs between two
// archives by content, not layout (offsets move whenever anything before a
// blob changes): header fields, codebooks, and tensors matched by their
// positional names.
#include <optional>
#include <string>
#include <vector>

#include "cact/model.h"

namespace cact::inspect {

struct FieldChange {
  std::string field, a, b;  // docs/spec/FORMAT.md name, the two values as text
};

struct TensorChange {
  enum class What : uint8_t { added, removed, changed, same };
  What what = What::same;
  std::string name;
  std::string kind_a, kind_b, shape_a, shape_b, xxh64_a, xxh64_b;  // empty for the side that lacks it
  // Dequantised values of both (same count, both numeric): the largest
  // |a - b|, and that divided by the largest |a| (0 when A is all zeros).
  std::optional<double> max_abs, max_rel;
};

struct ArchiveDiff {
  std::string a, b;  // names for the output
  std::vector<FieldChange> geometry;
  bool codebooks_differ = false;
  std::vector<TensorChange> tensors;  // A's order, then tensors only B has
  size_t count(TensorChange::What what) const;
  bool identical() const;
};

ArchiveDiff diff_archives(const Model& a, const Model& b, std::string a_name, std::string b_name);

std::string render_diff_text(const ArchiveDiff& d, bool verbose);
std::string render_diff_json(const ArchiveDiff& d);

}  // namespace cact::inspect
