#include <cstring>
#include <nlohmann/json.hpp>

#include "render.h"

namespace cact::inspect {
namespace {

using nlohmann::ordered_json;

ordered_json header_json(const Header& h) {
  ordered_json g = ordered_json::object();
  uint8_t raw[kHeaderBytes];
  encode_header(h, raw);
  for (size_t i = 0; i + 1 < kHeaderFields; ++i) {
    uint32_t v;
    std::memcpy(&v, raw + 4 * i, 4);
    g[header_field_name(i)] = v;
  }
  g["rope_theta"] = h.rope_theta;
  return g;
}

ordered_json summary_json(const Model& m) {
  const Header& h = m.header();
  const ArchiveSummary s = summarize(m);
  ordered_json j;
  j["generation"] = s.generation;
  j["file_bytes"] = s.file_bytes;
  j["num_tensors"] = s.tensors;
  j["header"] = header_json(h);
  j["global_layers"] = s.global_layers;
  j["engram_sites"] = std::vector<uint32_t>(h.engram_sites.begin(), h.engram_sites.begin() + h.num_engram_sites);
  j["engram_orders"] = std::vector<uint32_t>(h.engram_orders.begin(), h.engram_orders.begin() + h.num_engram_orders);
  j["block_untied"] = m.canon().block_untied();
  ordered_json kinds = ordered_json::object();
  for (const auto& [kind, t] : s.by_kind) kinds[kind] = {{"count", t.count}, {"bytes", t.bytes}};
  j["bytes_by_kind"] = kinds;
  ordered_json heads = ordered_json::array();
  for (const HeadLayout& hl : s.heads)
    heads.push_back({{"kind", head_kind_name(hl.kind)}, {"k", hl.k}, {"q", hl.q}, {"out", hl.out}});
  j["heads"] = heads;
  const TokenizerSummary& t = s.tokenizer;
  j["tokenizer"] = {{"pieces", t.pieces},
                    {"pad_id", t.pad_id},
                    {"eos_id", t.eos_id},
                    {"bos_id", t.bos_id},
                    {"unk_id", t.unk_id},
                    {"add_dummy_prefix", t.add_dummy_prefix},
                    {"byte_fallback", t.byte_fallback},
                    {"byte_pieces", t.byte_pieces},
                    {"user_defined", t.user_defined}};
  return j;
}

}  // namespace

std::string render_json(const Report& r) {
  ordered_json j;
  j["schema"] = "cact-inspect/1";
  j["path"] = r.path;
  if (r.problems) j["check"] = {{"ok", r.problems->empty()}, {"problems", *r.problems}};
  if (r.model) {
    j["summary"] = summary_json(*r.model);
    if (r.tensors) {
      ordered_json rows = ordered_json::array();
      for (const TensorRow& row : tensor_rows(*r.model, true)) {
        const Record& rec = r.model->record(row.index);
        rows.push_back({{"index", row.index},
                        {"name", row.name},
                        {"kind", row.kind},
                        {"shape", std::vector<uint32_t>(rec.shape.begin(), rec.shape.begin() + rec.ndim)},
                        {"offset", row.offset},
                        {"nbytes", row.nbytes},
                        {"xxh64", row.xxh64}});
      }
      j["tensors"] = rows;
    }
  }
  if (r.tensor) {
    const auto& [name, st] = *r.tensor;
    const size_t n = r.value_limit ? std::min(r.value_limit, st.count) : st.count;
    j["tensor"] = {{"name", name},
                   {"count", st.count},
                   {"min", st.min},
                   {"max", st.max},
                   {"mean", st.mean},
                   {"rms", st.rms},
                   {"values", std::vector<float>(st.values.begin(), st.values.begin() + long(n))}};
  }
  return j.dump(2) + "\n";
}

}  // namespace cact::inspect
