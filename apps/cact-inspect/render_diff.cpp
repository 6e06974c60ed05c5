// Text and JSON renderings of an archive diff (docs/INSPECT.md "Diff").
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "archive_diff.h"

namespace cact::inspect {

namespace {

using What = TensorChange::What;

// Added and removed tensors listed without --verbose before "... and N more".
constexpr size_t kListed = 8;

std::string change_text(const TensorChange& t) {
  std::string s;
  const auto part = [&](const std::string& text) { s += (s.empty() ? "" : ", ") + text; };
  if (t.kind_a != t.kind_b) part(t.kind_a + " -> " + t.kind_b);
  if (t.shape_a != t.shape_b) part(t.shape_a + " -> " + t.shape_b);
  if (t.xxh64_a != t.xxh64_b) part("xxh64 " + t.xxh64_a + " -> " + t.xxh64_b);
  if (t.max_abs) part(fmt::format("max abs diff {:.4g}, max rel diff {:.4g}", *t.max_abs, *t.max_rel));
  return s;
}

void list(std::string& o, const ArchiveDiff& d, What what, const char* label, bool verbose) {
  size_t shown = 0, total = d.count(what);
  for (const TensorChange& t : d.tensors) {
    if (t.what != what) continue;
    // Changes are what a diff is for: always listed. Long lists of added or
    // removed tensors (a slice drops whole layers) are cut unless --verbose.
    if (!verbose && what != What::changed && shown == kListed) {
      o += fmt::format("  ... and {} more {} (--verbose lists all)\n", total - shown, label);
      return;
    }
    ++shown;
    const std::string detail = what == What::changed ? change_text(t)
                               : what == What::added ? t.kind_b + " " + t.shape_b
                                                     : t.kind_a + " " + t.shape_a;
    o += fmt::format("  {:<8} {:<28} {}\n", label, t.name, detail);
  }
}

}  // namespace

std::string render_diff_text(const ArchiveDiff& d, bool verbose) {
  std::string o;
  if (d.identical()) {
    o += fmt::format("{} and {}: identical content ({} tensors)\n", d.a, d.b, d.tensors.size());
    return o;
  }
  o += fmt::format("{} -> {}\n", d.a, d.b);
  for (const FieldChange& f : d.geometry) o += fmt::format("  header   {:<28} {} -> {}\n", f.field, f.a, f.b);
  if (d.codebooks_differ) o += "  codebooks differ (every CQ tensor's values change with them)\n";
  list(o, d, What::changed, "changed", verbose);
  list(o, d, What::removed, "removed", verbose);
  list(o, d, What::added, "added", verbose);
  if (verbose) list(o, d, What::same, "same", true);
  o += fmt::format("{} header field{}, {} changed, {} removed, {} added, {} same tensors\n", d.geometry.size(),
                   d.geometry.size() == 1 ? "" : "s", d.count(What::changed), d.count(What::removed),
                   d.count(What::added), d.count(What::same));
  return o;
}

std::string render_diff_json(const ArchiveDiff& d) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["schema"] = "cact-inspect-diff/1";
  j["a"] = d.a;
  j["b"] = d.b;
  j["identical"] = d.identical();
  ordered_json header = ordered_json::array();
  for (const FieldChange& f : d.geometry) header.push_back({{"field", f.field}, {"a", f.a}, {"b", f.b}});
  j["header"] = header;
  j["codebooks_differ"] = d.codebooks_differ;
  ordered_json changed = ordered_json::array(), removed = ordered_json::array(), added = ordered_json::array();
  for (const TensorChange& t : d.tensors) {
    if (t.what == What::changed) {
      ordered_json c = {{"name", t.name},
                        {"kind", {t.kind_a, t.kind_b}},
                        {"shape", {t.shape_a, t.shape_b}},
                        {"xxh64", {t.xxh64_a, t.xxh64_b}}};
      c["max_abs_diff"] = t.max_abs ? ordered_json(*t.max_abs) : ordered_json(nullptr);
      c["max_rel_diff"] = t.max_rel ? ordered_json(*t.max_rel) : ordered_json(nullptr);
      changed.push_back(c);
    } else if (t.what == What::removed) {
      removed.push_back({{"name", t.name}, {"kind", t.kind_a}, {"shape", t.shape_a}});
    } else if (t.what == What::added) {
      added.push_back({{"name", t.name}, {"kind", t.kind_b}, {"shape", t.shape_b}});
    }
  }
  j["changed"] = changed;
  j["removed"] = removed;
  j["added"] = added;
  j["same"] = d.count(What::same);
  return j.dump(2) + "\n";
}

}  // namespace cact::inspect
