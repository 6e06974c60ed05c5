// Slicing an archive down to a set of kept blocks (MODEL.md "Slicing a ladder
// rung"). A plan lists, for every output tensor, the byte ranges of one source
// blob that form it; executing the plan only copies bytes.
#include "cact/slice.h"

#include <algorithm>
#include <cstring>

#include "cact/atomic_file.h"
#include "cact/canon.h"
#include "cact/codec.h"
#include "cact/error.h"
#include "cact/model.h"
#include "cact/validate.h"

namespace cact {

bool SliceTensor::verbatim() const {
  return segments.size() == 1 && segments[0].offset == 0 && segments[0].length == record.nbytes;
}

namespace {

void add_segment(std::vector<SliceSegment>& segments, uint64_t offset, uint64_t length) {
  if (length == 0) return;
  if (!segments.empty() && segments.back().offset + segments.back().length == offset) {
    segments.back().length += length;
  } else {
    segments.push_back({offset, length});
  }
}

class Planner {
 public:
  Planner(const Model& model, SlicePlan& plan) : model_(model), plan_(plan) {}

  // The whole source tensor, unchanged.
  void verbatim(size_t source) {
    SliceTensor t = start(source);
    add_segment(t.segments, 0, t.record.nbytes);
    finish(std::move(t));
  }

  // Units of `unit_bytes` along axis 0 (FP16 [L], [L, n], [L, n, n], [L+1, k]).
  void rows(size_t source, std::span<const uint32_t> units, uint64_t unit_bytes, uint32_t units_per_axis0) {
    SliceTensor t = start(source);
    t.record.shape[0] = uint32_t(units.size()) * (t.record.shape[0] / units_per_axis0);
    for (uint32_t u : units) add_segment(t.segments, u * unit_bytes, unit_bytes);
    finish(std::move(t));
  }

  // A CQ matrix keeping `rows_per_unit` rows per kept unit: the packed rows,
  // then (the blob's second half) the FP16 norms of the same rows.
  void cq_rows(size_t source, std::span<const uint32_t> units, uint32_t rows_per_unit) {
    SliceTensor t = start(source);
    const Record& r = model_.record(source);
    const uint32_t in_pad = codec::padded_in(r.shape[1], r.group);
    const uint64_t packed_row = codec::packed_row_bytes(in_pad, r.bits);
    const uint64_t norm_row = uint64_t(in_pad / r.group) * 2;
    const uint64_t packed_total = uint64_t(r.shape[0]) * packed_row;
    for (uint32_t u : units)
      add_segment(t.segments, uint64_t(u) * rows_per_unit * packed_row, rows_per_unit * packed_row);
    for (uint32_t u : units) {
      add_segment(t.segments, packed_total + uint64_t(u) * rows_per_unit * norm_row, rows_per_unit * norm_row);
    }
    t.record.shape[0] = uint32_t(units.size()) * rows_per_unit;
    finish(std::move(t));
  }

  // FP16 [q, rows, k]: the kept units along the second axis, for every q.
  void second_axis(size_t source, std::span<const uint32_t> units) {
    SliceTensor t = start(source);
    const Record& r = model_.record(source);
    const uint64_t unit_bytes = uint64_t(r.shape[2]) * 2;
    const uint64_t outer_bytes = uint64_t(r.shape[1]) * unit_bytes;
    for (uint32_t j = 0; j < r.shape[0]; ++j) {
      for (uint32_t u : units) add_segment(t.segments, j * outer_bytes + u * unit_bytes, unit_bytes);
    }
    t.record.shape[1] = uint32_t(units.size());
    finish(std::move(t));
  }

 private:
  SliceTensor start(size_t source) const {
    SliceTensor t;
    t.source = source;
    t.record = model_.record(source);
    t.record.offset = 0;
    return t;
  }
  void finish(SliceTensor t) {
    const Record& src = model_.record(t.source);
    uint64_t total = 0;
    for (const SliceSegment& s : t.segments) {
      if (s.offset > src.nbytes || s.length > src.nbytes - s.offset) {
        fail("internal: slice of " + model_.label(t.source) + " reads past its blob");
      }
      total += s.length;
    }
    if (total != implied_nbytes(t.record)) {
      fail("internal: slice of " + model_.label(t.source) + " selects " + std::to_string(total) +
           " bytes, its new shape " + shape_string(t.record) + " needs " + std::to_string(implied_nbytes(t.record)));
    }
    t.record.nbytes = total;
    plan_.tensors.push_back(std::move(t));
  }
  const Model& model_;
  SlicePlan& plan_;
};

}  // namespace

SlicePlan plan_slice(const Model& model, std::span<const uint32_t> blocks, uint32_t context) {
  const Header& src = model.header();
  const Canon& canon = model.canon();
  const uint32_t L = src.num_layers, n = src.mhc_lanes;
  SlicePlan plan;
  plan.source_layers = L;
  plan.source_bytes = model.bytes().size();
  plan.warnings = check_blocks(blocks, L);
  plan.blocks.assign(blocks.begin(), blocks.end());
  const uint32_t d = uint32_t(plan.blocks.size());

  // Header: depth, global mask, engram sites, context.
  Header h = src;
  h.num_layers = d;
  h.global_mask_lo = h.global_mask_hi = 0;
  std::vector<bool> kept(L, false);
  for (uint32_t i = 0; i < d; ++i) {
    const uint32_t old = plan.blocks[i];
    kept[old] = true;
    if (src.is_global(old)) {
      h.set_global(i, true);
      plan.global_layers.push_back({old, i});
    }
  }
  for (uint32_t l = 0; l < L; ++l) {
    if (src.is_global(l) && !kept[l]) plan.dropped_global.push_back(l);
  }
  h.engram_sites.fill(0);
  h.num_engram_sites = 0;
  for (uint32_t s = 0; s < src.num_engram_sites; ++s) {
    const uint32_t layer = src.engram_sites[s];
    if (!kept[layer]) {
      plan.dropped_sites.push_back(layer);
      continue;
    }
    const uint32_t new_layer = uint32_t(std::find(plan.blocks.begin(), plan.blocks.end(), layer) - plan.blocks.begin());
    plan.sites.push_back({s, layer, h.num_engram_sites, new_layer});
    h.engram_sites[h.num_engram_sites++] = new_layer;
  }
  if (context > 0) {
    h.max_seq_len = std::min(h.max_seq_len, context);
    h.sliding_window = std::min(h.sliding_window, context);
    h.kv_window = std::min(h.kv_window, context);
  }

  // Tensors in canon order.
  Planner p(model, plan);
  p.verbatim(canon.embedding());
  for (uint32_t l : plan.blocks) {
    for (size_t i = 0; i < canon.per_layer(); ++i) p.verbatim(canon.layer_begin(l) + i);
  }
  p.rows(canon.shared(SharedSlot::mhc_a_pre), plan.blocks, 2, L);
  p.rows(canon.shared(SharedSlot::mhc_a_post), plan.blocks, 2, L);
  p.rows(canon.shared(SharedSlot::mhc_a_res), plan.blocks, 2, L);
  p.rows(canon.shared(SharedSlot::mhc_b_pre), plan.blocks, uint64_t(n) * 2, L);
  p.rows(canon.shared(SharedSlot::mhc_b_post), plan.blocks, uint64_t(n) * 2, L);
  p.rows(canon.shared(SharedSlot::mhc_b_res), plan.blocks, uint64_t(n) * n * 2, L);
  p.cq_rows(canon.shared(SharedSlot::mhc_phi_pre), plan.blocks, n);
  p.cq_rows(canon.shared(SharedSlot::mhc_phi_post), plan.blocks, n);
  p.cq_rows(canon.shared(SharedSlot::mhc_phi_res), plan.blocks, n * n);
  p.verbatim(canon.shared(SharedSlot::hada_p1));
  p.verbatim(canon.shared(SharedSlot::hada_p2));
  for (const SitePlan& s : plan.sites) {
    for (uint8_t slot = 0; slot < uint8_t(SiteSlot::count); ++slot) p.verbatim(canon.site(s.old_site, SiteSlot(slot)));
  }
  p.verbatim(canon.final_norm());
  std::vector<Canon::HeadRequest> requests;
  if (canon.has_heads()) {
    // Cell rows: 0 is the embedding, l + 1 is block l.
    std::vector<uint32_t> cells{0};
    for (uint32_t l : plan.blocks) cells.push_back(l + 1);
    p.verbatim(canon.manifest());
    for (const HeadLayout& head : canon.heads()) {
      requests.push_back({head.kind, head.k, head.q, head.out});
      p.cq_rows(head.at(HeadSlot::probes), cells, head.k);
      p.rows(head.at(HeadSlot::gain), cells, uint64_t(head.k) * 2, L + 1);
      p.verbatim(head.at(HeadSlot::query));
      p.second_axis(head.at(HeadSlot::row_bias), cells);
      p.verbatim(head.at(HeadSlot::proj));
      p.verbatim(head.at(HeadSlot::bias));
      if (head.kind == HeadKind::router) p.verbatim(head.at(HeadSlot::calibration));
    }
  }
  p.verbatim(canon.tokenizer());

  // Layout, exactly as the writer places blobs.
  h.num_tensors = uint32_t(plan.tensors.size());
  uint64_t position = kHeaderBytes + uint64_t(h.codebook_len) * 4 + plan.tensors.size() * kRecordBytes;
  for (SliceTensor& t : plan.tensors) {
    t.record.offset = align_up(position, kBlobAlign);
    position = t.record.offset + t.record.nbytes;
    plan.copied_bytes += t.record.nbytes;
  }
  plan.output_bytes = position;
  plan.header = h;

  // The plan must already be a valid archive layout: header rules and canon.
  std::vector<std::string> problems = check_header(h);
  if (problems.empty()) {
    std::vector<Record> records;
    records.reserve(plan.tensors.size());
    for (const SliceTensor& t : plan.tensors) records.push_back(t.record);
    problems = check_against_canon(Canon::make(h, requests, canon.block_untied()), records);
  }
  if (!problems.empty()) fail("the sliced archive would be invalid: " + problems.front());
  return plan;
}

SlicedArchive slice_archive(const Model& model, const SlicePlan& plan) {
  SlicedArchive out;
  out.header = plan.header;
  out.codebooks.assign(model.codebooks().begin(), model.codebooks().end());
  out.tensors.reserve(plan.tensors.size());
  size_t assembled = 0;
  for (const SliceTensor& t : plan.tensors) assembled += t.verbatim() ? 0 : 1;
  out.owned.reserve(assembled);  // spans into `owned` must not move
  for (const SliceTensor& t : plan.tensors) {
    const std::span<const uint8_t> source = model.blob(t.source);
    Record r = t.record;
    if (t.verbatim()) {
      out.tensors.push_back({r, source});
      continue;
    }
    std::vector<uint8_t>& buffer = out.owned.emplace_back(t.record.nbytes);
    uint8_t* at = buffer.data();
    for (const SliceSegment& s : t.segments) {
      std::memcpy(at, source.data() + s.offset, s.length);
      at += s.length;
    }
    out.tensors.push_back({r, buffer});
  }
  return out;
}

std::vector<uint8_t> slice_bytes(const Model& model, const SlicePlan& plan) {
  // The plan already holds the writer's layout (writer.h): place everything
  // straight into one zeroed buffer, copying each segment once.
  std::vector<uint8_t> bytes(plan.output_bytes);
  encode_header(plan.header, bytes.data());
  const std::span<const float> codebooks = model.codebooks();
  if (codebooks.size() != plan.header.codebook_len) fail("internal: codebook length differs from the plan's header");
  std::memcpy(bytes.data() + kHeaderBytes, codebooks.data(), codebooks.size() * 4);
  uint8_t* directory = bytes.data() + kHeaderBytes + codebooks.size() * 4;
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const SliceTensor& t = plan.tensors[i];
    encode_record(t.record, directory + i * kRecordBytes);
    const std::span<const uint8_t> source = model.blob(t.source);
    uint8_t* at = bytes.data() + t.record.offset;
    for (const SliceSegment& s : t.segments) {
      std::memcpy(at, source.data() + s.offset, s.length);
      at += s.length;
    }
  }
  return bytes;
}

void write_slice(const std::filesystem::path& path, const Model& model, const SlicePlan& plan,
                 std::span<const std::filesystem::path> inputs) {
  AtomicFile file(path, inputs);  // refuses an input as the target before any work
  const std::vector<uint8_t> bytes = slice_bytes(model, plan);
  const std::vector<std::string> problems = check_archive(bytes);
  if (!problems.empty()) fail("internal: the sliced archive fails the archive check: " + problems.front());
  file.write(bytes);
  file.commit();
}

}  // namespace cact
