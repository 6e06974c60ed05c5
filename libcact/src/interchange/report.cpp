// The per-tensor error report: a human table and JSON (docs/QUANT.md).
#include <cmath>
#include <cstdio>

#include "cact/json_input.h"
#include "cact/quantize.h"

namespace cact {

namespace {

bool is_cq(const std::string& kind) { return kind.starts_with("CQ") || kind == "TERNARY"; }

std::string shape_text(const std::vector<uint32_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string fmt_double(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string rel_mse_text(const ErrorStats& e) {
  const double v = e.relative_mse();
  if (v == 0.0) return "0";
  if (std::isinf(v)) return "inf";
  return fmt_double("%.3e", v);
}

std::string snr_text(const ErrorStats& e) {
  const double v = e.snr_db();
  if (std::isinf(v)) return v > 0 ? "exact" : "-inf";
  return fmt_double("%.2f", v);
}

Json finite_or_null(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

std::string pad(std::string s, size_t width, bool right = false) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

std::string size_change(uint64_t before, uint64_t after) {
  const double pct = before ? 100.0 * (double(after) - double(before)) / double(before) : 0.0;
  return std::to_string(before) + " -> " + std::to_string(after) + " bytes (" + fmt_double("%+.1f", pct) + "%)";
}

}  // namespace

ErrorStats Report::cq_error() const {
  ErrorStats total;
  for (const auto& t : tensors) {
    if (t.measured && is_cq(t.kind)) total.add(t.error);
  }
  return total;
}

uint64_t Report::cq_weights() const {
  uint64_t n = 0;
  for (const auto& t : tensors) {
    if (is_cq(t.kind)) n += t.weights;
  }
  return n;
}

uint64_t Report::cq_bytes() const {
  uint64_t n = 0;
  for (const auto& t : tensors) {
    if (is_cq(t.kind)) n += t.bytes;
  }
  return n;
}

std::string format_report_text(const Report& r, bool all_tensors) {
  struct Row {
    std::string index, name, kind, shape, bpw, rel, snr;
  };
  std::vector<Row> rows;
  rows.push_back({"#", "tensor", "kind", "shape", "bits/w", "rel.MSE", "SNR dB"});
  for (const auto& t : r.tensors) {
    if (!all_tensors && !t.measured && !is_cq(t.kind)) continue;
    Row row;
    row.index = std::to_string(t.index);
    row.name = t.name;
    row.kind = (!t.kind_before.empty() && t.kind_before != t.kind) ? t.kind_before + "->" + t.kind : t.kind;
    row.shape = shape_text(t.shape);
    row.bpw = fmt_double("%.3f", t.bits_per_weight());
    if (!t.changed) {
      row.rel = "copied";
      row.snr = "";
    } else if (t.measured) {
      row.rel = rel_mse_text(t.error);
      row.snr = snr_text(t.error);
    } else {
      row.rel = "-";
      row.snr = "-";
    }
    rows.push_back(row);
  }
  size_t w[7] = {};
  for (const auto& row : rows) {
    const std::string* cells[7] = {&row.index, &row.name, &row.kind, &row.shape, &row.bpw, &row.rel, &row.snr};
    for (size_t c = 0; c < 7; ++c) w[c] = std::max(w[c], cells[c]->size());
  }
  std::string out;
  if (!r.title.empty()) out += r.title + "\n";
  if (!r.reference.empty()) out += "error measured against " + r.reference + "\n";
  for (const auto& row : rows) {
    std::string line = pad(row.index, w[0], true) + "  " + pad(row.name, w[1]) + "  " + pad(row.kind, w[2]) + "  " +
                       pad(row.shape, w[3]) + "  " + pad(row.bpw, w[4], true) + "  " + pad(row.rel, w[5], true) + "  " +
                       pad(row.snr, w[6], true);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  size_t cq = 0;
  for (const auto& t : r.tensors) cq += is_cq(t.kind) ? 1 : 0;
  const uint64_t weights = r.cq_weights();
  const ErrorStats e = r.cq_error();
  out += "CQ total: " + std::to_string(cq) + " tensors, " + std::to_string(weights) + " weights, " +
         fmt_double("%.3f", weights ? 8.0 * double(r.cq_bytes()) / double(weights) : 0.0) + " bits/weight";
  if (e.count > 0)
    out += ", rel.MSE " + rel_mse_text(e) + ", SNR " + snr_text(e) + (std::isinf(e.snr_db()) ? "" : " dB");
  out += "\n";
  if (r.file_bytes_before && r.file_bytes_after)
    out += "file: " + size_change(r.file_bytes_before, r.file_bytes_after) + "\n";
  else if (r.file_bytes_after)
    out += "file: " + std::to_string(r.file_bytes_after) + " bytes\n";
  return out;
}

std::string format_report_json(const Report& r) {
  Json j = Json::object();
  if (!r.title.empty()) j["title"] = r.title;
  j["reference"] = r.reference.empty() ? Json(nullptr) : Json(r.reference);
  Json tensors = Json::array();
  for (const auto& t : r.tensors) {
    Json e = Json::object();
    e["index"] = t.index;
    e["name"] = t.name;
    e["kind"] = t.kind;
    if (!t.kind_before.empty()) e["kind_before"] = t.kind_before;
    e["shape"] = t.shape;
    e["weights"] = t.weights;
    e["bytes"] = t.bytes;
    if (t.bytes_before) e["bytes_before"] = t.bytes_before;
    e["bits_per_weight"] = t.bits_per_weight();
    if (!t.kind_before.empty()) e["changed"] = t.changed;
    e["measured"] = t.measured;
    if (t.measured) {
      e["relative_mse"] = finite_or_null(t.error.relative_mse());
      e["snr_db"] = finite_or_null(t.error.snr_db());
      e["exact"] = t.error.error == 0.0;
    }
    tensors.push_back(e);
  }
  j["tensors"] = tensors;
  Json totals = Json::object();
  size_t cq = 0;
  for (const auto& t : r.tensors) cq += is_cq(t.kind) ? 1 : 0;
  const ErrorStats e = r.cq_error();
  totals["cq_tensors"] = cq;
  totals["cq_weights"] = r.cq_weights();
  totals["cq_bytes"] = r.cq_bytes();
  totals["bits_per_weight"] = r.cq_weights() ? 8.0 * double(r.cq_bytes()) / double(r.cq_weights()) : 0.0;
  if (e.count > 0) {
    totals["relative_mse"] = finite_or_null(e.relative_mse());
    totals["snr_db"] = finite_or_null(e.snr_db());
    totals["exact"] = e.error == 0.0;
  }
  j["totals"] = totals;
  j["file_bytes_before"] = r.file_bytes_before ? Json(r.file_bytes_before) : Json(nullptr);
  j["file_bytes_after"] = r.file_bytes_after ? Json(r.file_bytes_after) : Json(nullptr);
  return j.dump(2) + "\n";
}

}  // namespace cact
