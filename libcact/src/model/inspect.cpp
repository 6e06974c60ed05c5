#include "cact/inspect.h"

#include <xxhash.h>
#include <cmath>
#include <cstdio>

#include "cact/error.h"
#include "cact/tokenizer.h"

namespace cact {

ArchiveSummary summarize(const Model& model) {
  ArchiveSummary s;
  const Header& h = model.header();
  s.generation = "Needle 3";
  s.file_bytes = model.bytes().size();
  s.tensors = model.records().size();
  for (const Record& r : model.records()) {
    KindTotal& t = s.by_kind[kind_name(r)];
    ++t.count;
    t.bytes += r.nbytes;
  }
  for (uint32_t l = 0; l < h.num_layers; ++l) {
    if (h.sliding_window > 0 && h.is_global(l)) s.global_layers.push_back(l);
  }
  s.heads = model.canon().heads();
  const TokenizerModel tok = parse_tokenizer_blob(model.tokenizer_blob());
  s.tokenizer.pieces = tok.pieces.size();
  s.tokenizer.pad_id = tok.pad_id;
  s.tokenizer.eos_id = tok.eos_id;
  s.tokenizer.bos_id = tok.bos_id;
  s.tokenizer.unk_id = tok.unk_id;
  s.tokenizer.add_dummy_prefix = tok.add_dummy_prefix;
  s.tokenizer.byte_fallback = tok.byte_fallback;
  for (const Piece& p : tok.pieces) {
    if (p.type == PieceType::Byte) ++s.tokenizer.byte_pieces;
    if (p.type == PieceType::UserDefined) s.tokenizer.user_defined.push_back(p.surface);
  }
  return s;
}

std::string xxh64_hex(std::span<const uint8_t> bytes) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(XXH64(bytes.data(), bytes.size(), 0)));
  return buf;
}

std::vector<TensorRow> tensor_rows(const Model& model, bool digests) {
  std::vector<TensorRow> rows;
  rows.reserve(model.records().size());
  for (size_t i = 0; i < model.records().size(); ++i) {
    const Record& r = model.record(i);
    TensorRow row{i, model.name(i), kind_name(r), shape_string(r), r.offset, r.nbytes, {}};
    if (digests) row.xxh64 = xxh64_hex(model.blob(i));
    rows.push_back(std::move(row));
  }
  return rows;
}

TensorStats tensor_stats(const Model& model, const std::string& name) {
  const size_t i = model.canon().find(name);
  if (i == SIZE_MAX) fail("no tensor named '" + name + "' (cact-inspect --tensors lists the names)");
  TensorStats s;
  s.values = model.values(i);
  s.count = s.values.size();
  if (s.count == 0) return s;
  double sum = 0, sum_sq = 0;
  s.min = s.max = s.values[0];
  for (float v : s.values) {
    s.min = std::min<double>(s.min, v);
    s.max = std::max<double>(s.max, v);
    sum += v;
    sum_sq += double(v) * v;
  }
  s.mean = sum / double(s.count);
  s.rms = std::sqrt(sum_sq / double(s.count));
  return s;
}

}  // namespace cact
