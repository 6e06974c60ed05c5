#pragma once
// Independent check of a sliced archive against its source: every tensor the
// slice should carry verbatim is compared byte for byte, every row-selected
// tensor row by row (CQ: the packed row and its FP16 norms; FP16: the raw
// halves), and the header's depth, global mask and engram sites are recomputed
// from the kept blocks. Used by the slice tests of several suites.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "cact/canon.h"
#include "cact/codec.h"
#include "cact/model.h"

namespace cact::test {

inline bool same_bytes(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

// Row `r` of a CQ matrix: its packed bytes and its FP16 norms, as raw bytes.
inline std::vector<uint8_t> cq_row_bytes(const Model& m, size_t tensor, uint32_t r) {
  const codec::CqMatrix x = m.matrix(tensor);
  std::vector<uint8_t> out(x.row(r), x.row(r) + x.row_bytes);
  const uint8_t* norms = x.norms + size_t(r) * x.groups_per_row() * 2;
  out.insert(out.end(), norms, norms + size_t(x.groups_per_row()) * 2);
  return out;
}

// FP16 unit `u` of `unit` halves.
inline std::span<const uint8_t> fp16_unit(const Model& m, size_t tensor, size_t u, size_t unit) {
  return m.blob(tensor).subspan(u * unit * 2, unit * 2);
}

// Checks `out` as the slice of `src` keeping `blocks`; returns the number of
// tensors compared verbatim (for the caller's own expectations).
inline size_t check_slice(const Model& src, const Model& out, const std::vector<uint32_t>& blocks) {
  const Header& hs = src.header();
  const Header& ho = out.header();
  const Canon& cs = src.canon();
  const Canon& co = out.canon();
  const uint32_t d = uint32_t(blocks.size()), n = hs.mhc_lanes;
  size_t verbatim = 0;
  auto same = [&](size_t i_src, size_t i_out) {
    INFO("source " << src.label(i_src) << ", output " << out.label(i_out));
    CHECK(src.name(i_src) == out.name(i_out));
    CHECK(same_bytes(src.blob(i_src), out.blob(i_out)));
    const Record& a = src.record(i_src);
    const Record& b = out.record(i_out);
    CHECK((a.dtype == b.dtype && a.ndim == b.ndim && a.shape == b.shape && a.group == b.group && a.bits == b.bits));
    ++verbatim;
  };

  // Header.
  REQUIRE(ho.num_layers == d);
  CHECK(ho.num_tensors == out.records().size());
  // Everything through final_norm for the new depth, then the heads (same count as the source's), the tokenizer.
  CHECK(ho.num_tensors == Canon::core_count(ho) + (cs.size() - Canon::core_count(hs)));
  for (uint32_t i = 0; i < d; ++i) CHECK(ho.is_global(i) == hs.is_global(blocks[i]));
  std::vector<uint32_t> site_layers;  // new layers of surviving sites
  std::vector<uint32_t> site_sources;
  for (uint32_t s = 0; s < hs.num_engram_sites; ++s) {
    const auto it = std::find(blocks.begin(), blocks.end(), hs.engram_sites[s]);
    if (it != blocks.end()) {
      site_layers.push_back(uint32_t(it - blocks.begin()));
      site_sources.push_back(s);
    }
  }
  REQUIRE(ho.num_engram_sites == site_layers.size());
  for (uint32_t s = 0; s < 16; ++s) CHECK(ho.engram_sites[s] == (s < site_layers.size() ? site_layers[s] : 0));
  CHECK(std::equal(src.codebooks().begin(), src.codebooks().end(), out.codebooks().begin(), out.codebooks().end()));
  CHECK(co.has_taps() == cs.has_taps());
  CHECK(co.block_untied() == cs.block_untied());

  // Verbatim tensors.
  same(cs.embedding(), co.embedding());
  for (uint32_t i = 0; i < d; ++i) {
    for (size_t k = 0; k < cs.per_layer(); ++k) {
      // Names carry the layer number, so compare the slot part only.
      const size_t a = cs.layer_begin(blocks[i]) + k, b = co.layer_begin(i) + k;
      CHECK(src.name(a).substr(8) == out.name(b).substr(8));
      CHECK(same_bytes(src.blob(a), out.blob(b)));
      CHECK(src.record(a).shape == out.record(b).shape);
      ++verbatim;
    }
  }
  same(cs.shared(SharedSlot::hada_p1), co.shared(SharedSlot::hada_p1));
  same(cs.shared(SharedSlot::hada_p2), co.shared(SharedSlot::hada_p2));
  for (size_t s = 0; s < site_sources.size(); ++s) {
    for (uint8_t slot = 0; slot < uint8_t(SiteSlot::count); ++slot) {
      const size_t a = cs.site(site_sources[s], SiteSlot(slot)), b = co.site(uint32_t(s), SiteSlot(slot));
      CHECK(same_bytes(src.blob(a), out.blob(b)));
      CHECK(src.record(a).shape == out.record(b).shape);
      ++verbatim;
    }
  }
  same(cs.final_norm(), co.final_norm());
  same(cs.tokenizer(), co.tokenizer());

  // mHC rows.
  const struct {
    SharedSlot slot;
    size_t unit;
  } fp16_rows[] = {{SharedSlot::mhc_a_pre, 1}, {SharedSlot::mhc_a_post, 1}, {SharedSlot::mhc_a_res, 1},
                   {SharedSlot::mhc_b_pre, n}, {SharedSlot::mhc_b_post, n}, {SharedSlot::mhc_b_res, size_t(n) * n}};
  for (const auto& [slot, unit] : fp16_rows) {
    const size_t a = cs.shared(slot), b = co.shared(slot);
    INFO(out.label(b));
    CHECK(out.record(b).shape[0] == d);
    CHECK(out.blob(b).size() == d * unit * 2);
    for (uint32_t i = 0; i < d; ++i) CHECK(same_bytes(fp16_unit(src, a, blocks[i], unit), fp16_unit(out, b, i, unit)));
  }
  const struct {
    SharedSlot slot;
    uint32_t rows;
  } cq_rows[] = {{SharedSlot::mhc_phi_pre, n}, {SharedSlot::mhc_phi_post, n}, {SharedSlot::mhc_phi_res, n * n}};
  for (const auto& [slot, rows] : cq_rows) {
    const size_t a = cs.shared(slot), b = co.shared(slot);
    INFO(out.label(b));
    CHECK(out.record(b).shape[0] == d * rows);
    CHECK(out.record(b).bits == src.record(a).bits);
    for (uint32_t i = 0; i < d; ++i) {
      for (uint32_t j = 0; j < rows; ++j)
        CHECK(cq_row_bytes(src, a, blocks[i] * rows + j) == cq_row_bytes(out, b, i * rows + j));
    }
  }

  // Heads: cell rows 0 and l + 1 of kept layers.
  REQUIRE(co.heads().size() == cs.heads().size());
  if (cs.has_heads()) same(cs.manifest(), co.manifest());
  std::vector<uint32_t> cells{0};
  for (uint32_t l : blocks) cells.push_back(l + 1);
  for (size_t h = 0; h < cs.heads().size(); ++h) {
    const HeadLayout& a = cs.heads()[h];
    const HeadLayout& b = co.heads()[h];
    CHECK(a.kind == b.kind);
    CHECK(a.k == b.k);
    CHECK(a.q == b.q);
    const uint32_t k = a.k;
    for (size_t c = 0; c < cells.size(); ++c) {
      for (uint32_t i = 0; i < k; ++i) {
        CHECK(cq_row_bytes(src, a.at(HeadSlot::probes), cells[c] * k + i) ==
              cq_row_bytes(out, b.at(HeadSlot::probes), uint32_t(c) * k + i));
      }
      CHECK(same_bytes(fp16_unit(src, a.at(HeadSlot::gain), cells[c], k), fp16_unit(out, b.at(HeadSlot::gain), c, k)));
      for (uint32_t j = 0; j < a.q; ++j) {
        CHECK(same_bytes(fp16_unit(src, a.at(HeadSlot::row_bias), size_t(j) * (hs.num_layers + 1) + cells[c], k),
                         fp16_unit(out, b.at(HeadSlot::row_bias), size_t(j) * (d + 1) + c, k)));
      }
    }
    CHECK(out.record(b.at(HeadSlot::probes)).shape[0] == (d + 1) * k);
    CHECK(out.record(b.at(HeadSlot::row_bias)).shape[1] == d + 1);
    for (HeadSlot s : {HeadSlot::query, HeadSlot::proj, HeadSlot::bias}) same(a.at(s), b.at(s));
    if (a.kind == HeadKind::router) same(a.at(HeadSlot::calibration), b.at(HeadSlot::calibration));
  }
  return verbatim;
}

}  // namespace cact::test
