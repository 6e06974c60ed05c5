#include "archive_diff.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "cact/inspect.h"

namespace cact::inspect {

namespace {

std::vector<FieldChange> header_changes(const Header& ha, const Header& hb) {
  uint8_t ra[kHeaderBytes], rb[kHeaderBytes];
  encode_header(ha, ra);
  encode_header(hb, rb);
  std::vector<FieldChange> out;
  for (size_t i = 0; i < kHeaderFields; ++i) {
    if (std::memcmp(ra + 4 * i, rb + 4 * i, 4) == 0) continue;
    std::string va, vb;
    if (i + 1 == kHeaderFields) {  // rope_theta, the one float
      va = fmt::format("{}", ha.rope_theta);
      vb = fmt::format("{}", hb.rope_theta);
    } else {
      uint32_t ua, ub;
      std::memcpy(&ua, ra + 4 * i, 4);
      std::memcpy(&ub, rb + 4 * i, 4);
      va = std::to_string(ua);
      vb = std::to_string(ub);
    }
    out.push_back({header_field_name(i), va, vb});
  }
  return out;
}

bool numeric(const Record& r) { return r.dtype != Dtype::RAW; }

void value_difference(const Model& a, size_t ia, const Model& b, size_t ib, TensorChange& c) {
  if (!numeric(a.record(ia)) || !numeric(b.record(ib))) return;
  const std::vector<float> va = a.values(ia), vb = b.values(ib);
  if (va.size() != vb.size()) return;
  double max_abs = 0.0, scale = 0.0;
  for (size_t k = 0; k < va.size(); ++k) {
    max_abs = std::max(max_abs, std::fabs(double(va[k]) - double(vb[k])));
    scale = std::max(scale, std::fabs(double(va[k])));
  }
  c.max_abs = max_abs;
  c.max_rel = scale > 0.0 ? max_abs / scale : 0.0;
}

}  // namespace

size_t ArchiveDiff::count(TensorChange::What what) const {
  return size_t(std::count_if(tensors.begin(), tensors.end(), [&](const TensorChange& t) { return t.what == what; }));
}

bool ArchiveDiff::identical() const {
  return geometry.empty() && !codebooks_differ && count(TensorChange::What::same) == tensors.size();
}

ArchiveDiff diff_archives(const Model& a, const Model& b, std::string a_name, std::string b_name) {
  ArchiveDiff d;
  d.a = std::move(a_name);
  d.b = std::move(b_name);
  d.geometry = header_changes(a.header(), b.header());
  d.codebooks_differ = a.codebooks().size() != b.codebooks().size() ||
                       std::memcmp(a.codebooks().data(), b.codebooks().data(), a.codebooks().size_bytes()) != 0;
  const std::vector<TensorRow> rows_a = tensor_rows(a, true), rows_b = tensor_rows(b, true);
  std::map<std::string, size_t> in_b;
  for (const TensorRow& r : rows_b) in_b[r.name] = r.index;
  using What = TensorChange::What;
  for (const TensorRow& ra : rows_a) {
    TensorChange c;
    c.name = ra.name;
    c.kind_a = ra.kind;
    c.shape_a = ra.shape;
    c.xxh64_a = ra.xxh64;
    const auto it = in_b.find(ra.name);
    if (it == in_b.end()) {
      c.what = What::removed;
    } else {
      const TensorRow& rb = rows_b[it->second];
      c.kind_b = rb.kind;
      c.shape_b = rb.shape;
      c.xxh64_b = rb.xxh64;
      // Equal digests of equal kinds and shapes: the same tensor.
      const bool same = ra.kind == rb.kind && ra.shape == rb.shape && ra.xxh64 == rb.xxh64;
      c.what = same ? What::same : What::changed;
      if (!same) value_difference(a, ra.index, b, rb.index, c);
      in_b.erase(it);
    }
    d.tensors.push_back(std::move(c));
  }
  for (const TensorRow& rb : rows_b) {
    if (!in_b.contains(rb.name)) continue;
    TensorChange c;
    c.what = What::added;
    c.name = rb.name;
    c.kind_b = rb.kind;
    c.shape_b = rb.shape;
    c.xxh64_b = rb.xxh64;
    d.tensors.push_back(std::move(c));
  }
  return d;
}

}  // namespace cact::inspect
