// The positional canon of MODEL.md, built once from the geometry.
#include "cact/canon.h"

#include <cmath>
#include <cstdio>

#include "cact/error.h"
#include "cact/half.h"

namespace cact {

namespace {
constexpr const char* kLayerSlotNames[] = {
    "norm_in",   "q_proj",   "k_proj",    "v_proj",    "q_taps",   "k_taps", "v_taps", "q_norm", "k_norm",
    "gate_proj", "out_proj", "post_norm", "attn_gate", "pre_hada", "d1",     "d2",     "b2",     "d3",
    "d4",        "w1a",      "w1b",       "w2a",       "w2b",      "w3a",    "w3b",    "cond_v", "cond_u"};
constexpr const char* kSharedSlotNames[] = {"mhc_a_pre",   "mhc_a_post", "mhc_a_res",   "mhc_b_pre",
                                            "mhc_b_post",  "mhc_b_res",  "mhc_phi_pre", "mhc_phi_post",
                                            "mhc_phi_res", "hada_p1",    "hada_p2"};
constexpr const char* kSiteSlotNames[] = {"tables", "key_proj", "value_proj", "taps"};
constexpr const char* kHeadSlotNames[] = {"probes", "gain", "query", "row_bias", "proj", "bias", "calibration"};

TensorSpec spec(std::string name, Dtype dtype, std::initializer_list<uint32_t> shape) {
  TensorSpec s;
  s.name = std::move(name);
  s.dtype = dtype;
  s.ndim = uint8_t(shape.size());
  size_t i = 0;
  for (uint32_t v : shape) s.shape[i++] = v;
  return s;
}

std::string layer_name(uint32_t l, const char* slot) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "layer%02u.%s", l, slot);
  return buf;
}
}  // namespace

const char* layer_slot_name(LayerSlot s) { return kLayerSlotNames[size_t(s)]; }
const char* shared_slot_name(SharedSlot s) { return kSharedSlotNames[size_t(s)]; }
const char* site_slot_name(SiteSlot s) { return kSiteSlotNames[size_t(s)]; }
const char* head_slot_name(HeadSlot s) { return kHeadSlotNames[size_t(s)]; }
const char* head_kind_name(HeadKind k) {
  switch (k) {
    case HeadKind::embedding:
      return "embedding";
    case HeadKind::confidence:
      return "confidence";
    case HeadKind::router:
      return "router";
  }
  return "unknown";
}

size_t Canon::core_count(const Header& h) {
  const size_t per_layer = h.qkv_conv_taps > 0 ? 27 : 24;
  return 1 + size_t(h.num_layers) * per_layer + 11 + size_t(h.num_engram_sites) * 4 + 1;
}

size_t Canon::layer(uint32_t l, LayerSlot s) const {
  size_t slot = size_t(s);
  if (!has_taps()) {
    if (s == LayerSlot::q_taps || s == LayerSlot::k_taps || s == LayerSlot::v_taps) {
      fail("this archive has no qkv conv taps");
    }
    if (slot > size_t(LayerSlot::v_taps)) slot -= 3;
  }
  return layer_begin(l) + slot;
}

size_t Canon::find(std::string_view name) const {
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (specs_[i].name == name) return i;
  }
  return SIZE_MAX;
}

void Canon::build_core(const Header& h, bool block_untied) {
  const uint32_t D = h.d_model, H = h.num_heads, K = h.num_kv_heads, dq = h.qk_head_dim, dv = h.v_head_dim;
  const uint32_t L = h.num_layers, n = h.mhc_lanes, N = h.hada_n, T = h.qkv_conv_taps;
  const uint32_t ba = h.hada_rows(), bb = h.hada_cols();
  block_untied_ = block_untied;
  per_layer_ = T > 0 ? 27 : 24;
  specs_.clear();
  specs_.reserve(core_count(h) + 16);
  specs_.push_back(spec("embedding", Dtype::CQ, {h.vocab, D}));
  for (uint32_t l = 0; l < L; ++l) {
    auto add = [&](LayerSlot s, Dtype dt, std::initializer_list<uint32_t> shape) {
      specs_.push_back(spec(layer_name(l, layer_slot_name(s)), dt, shape));
    };
    add(LayerSlot::norm_in, Dtype::FP16, {D});
    add(LayerSlot::q_proj, Dtype::CQ, {H * dq, D});
    add(LayerSlot::k_proj, Dtype::CQ, {K * dq, D});
    add(LayerSlot::v_proj, Dtype::CQ, {K * dv, D});
    if (T > 0) {
      add(LayerSlot::q_taps, Dtype::FP16, {T, H * dq});
      add(LayerSlot::k_taps, Dtype::FP16, {T, K * dq});
      add(LayerSlot::v_taps, Dtype::FP16, {T, K * dv});
    }
    add(LayerSlot::q_norm, Dtype::FP16, {dq});
    add(LayerSlot::k_norm, Dtype::FP16, {dq});
    add(LayerSlot::gate_proj, Dtype::CQ, {H * dv, D});
    add(LayerSlot::out_proj, Dtype::CQ, {D, H * dv});
    add(LayerSlot::post_norm, Dtype::FP16, {D});
    add(LayerSlot::attn_gate, Dtype::FP16, {1});
    add(LayerSlot::pre_hada, Dtype::FP16, {D});
    for (LayerSlot s : {LayerSlot::d1, LayerSlot::d2, LayerSlot::b2, LayerSlot::d3, LayerSlot::d4})
      add(s, Dtype::FP16, {N});
    for (LayerSlot s :
         {LayerSlot::w1a, LayerSlot::w1b, LayerSlot::w2a, LayerSlot::w2b, LayerSlot::w3a, LayerSlot::w3b}) {
      const bool is_a = s == LayerSlot::w1a || s == LayerSlot::w2a || s == LayerSlot::w3a;
      if (block_untied) {
        if (is_a)
          add(s, Dtype::FP16, {bb, ba, ba});
        else
          add(s, Dtype::FP16, {ba, bb, bb});
      } else {
        if (is_a)
          add(s, Dtype::FP16, {ba, ba});
        else
          add(s, Dtype::FP16, {bb, bb});
      }
    }
    add(LayerSlot::cond_v, Dtype::FP16, {D, 8});
    add(LayerSlot::cond_u, Dtype::FP16, {8, N});
  }
  shared_begin_ = specs_.size();
  specs_.push_back(spec("mhc_a_pre", Dtype::FP16, {L}));
  specs_.push_back(spec("mhc_a_post", Dtype::FP16, {L}));
  specs_.push_back(spec("mhc_a_res", Dtype::FP16, {L}));
  specs_.push_back(spec("mhc_b_pre", Dtype::FP16, {L, n}));
  specs_.push_back(spec("mhc_b_post", Dtype::FP16, {L, n}));
  specs_.push_back(spec("mhc_b_res", Dtype::FP16, {L, n, n}));
  specs_.push_back(spec("mhc_phi_pre", Dtype::CQ, {L * n, n * D}));
  specs_.push_back(spec("mhc_phi_post", Dtype::CQ, {L * n, n * D}));
  specs_.push_back(spec("mhc_phi_res", Dtype::CQ, {L * n * n, n * D}));
  specs_.push_back(spec("hada_p1", Dtype::FP32, {N}));
  specs_.push_back(spec("hada_p2", Dtype::FP32, {N}));
  sites_begin_ = specs_.size();
  const uint32_t E = h.num_engram_tables, Z = h.engram_slots, sd = h.engram_sub_dim;
  for (uint32_t s = 0; s < h.num_engram_sites; ++s) {
    const std::string prefix = "engram" + std::to_string(s) + ".";
    specs_.push_back(spec(prefix + "tables", Dtype::CQ, {E * Z, sd}));
    specs_.push_back(spec(prefix + "key_proj", Dtype::CQ, {D, E * sd}));
    specs_.push_back(spec(prefix + "value_proj", Dtype::CQ, {D, E * sd}));
    specs_.push_back(spec(prefix + "taps", Dtype::FP16, {h.engram_conv_taps, D}));
  }
  final_norm_ = specs_.size();
  specs_.push_back(spec("final_norm", Dtype::FP16, {D}));
}

void Canon::add_head(const Header& h, const HeadRequest& r) {
  const uint32_t D = h.d_model, rows = h.num_layers + 1;
  const std::string prefix = std::string(head_kind_name(r.kind)) + "_head.";
  HeadLayout layout;
  layout.kind = r.kind;
  layout.k = r.k;
  layout.q = r.q;
  layout.out = r.out;
  layout.index.fill(SIZE_MAX);
  auto add = [&](HeadSlot s, Dtype dt, std::initializer_list<uint32_t> shape) {
    layout.index[size_t(s)] = specs_.size();
    specs_.push_back(spec(prefix + head_slot_name(s), dt, shape));
  };
  add(HeadSlot::probes, Dtype::CQ, {rows * r.k, D});
  add(HeadSlot::gain, Dtype::FP16, {rows, r.k});
  add(HeadSlot::query, Dtype::CQ, {r.q, D});
  add(HeadSlot::row_bias, Dtype::FP16, {r.q, rows, r.k});
  add(HeadSlot::proj, Dtype::CQ, {r.out, r.q * D});
  add(HeadSlot::bias, Dtype::FP16, {r.out});
  if (r.kind == HeadKind::router) add(HeadSlot::calibration, Dtype::FP16, {3});
  heads_.push_back(layout);
}

Canon Canon::make(const Header& h, std::span<const HeadRequest> heads, bool block_untied) {
  Canon c;
  c.build_core(h, block_untied);
  if (!heads.empty()) {
    c.specs_.push_back(spec("heads.manifest", Dtype::FP16, {uint32_t(heads.size())}));
    for (const HeadRequest& r : heads) c.add_head(h, r);
  }
  c.specs_.push_back(spec("tokenizer", Dtype::RAW, {}));
  c.specs_.back().ndim = 0;
  return c;
}

Canon Canon::derive(const Header& h, std::span<const Record> dir, std::span<const uint8_t> file) {
  const size_t core = core_count(h);
  if (dir.size() < core + 1) {
    fail("directory: " + std::to_string(dir.size()) + " tensors, but the geometry needs at least " +
         std::to_string(core + 1) + " (" + std::to_string(core) + " through final_norm, then the tokenizer)");
  }
  // Block-untied factors are told apart by ndim (MODEL.md); layer 0's w1a decides.
  const size_t w1a = 1 + (h.qkv_conv_taps > 0 ? 19 : 16);
  const bool untied = dir[w1a].ndim == 3;
  const size_t extra = dir.size() - core - 1;
  std::vector<HeadRequest> requests;
  if (extra > 0) {
    const Record& m = dir[core];
    auto where = [&](size_t i, const std::string& what) { return "record " + std::to_string(i) + " (" + what + ")"; };
    if (m.dtype != Dtype::FP16 || m.ndim != 1 || m.shape[0] == 0 || m.shape[0] > 16 ||
        m.nbytes != uint64_t(m.shape[0]) * 2 || m.offset > file.size() || m.nbytes > file.size() - m.offset) {
      fail(where(core, "heads.manifest") + ": expected FP16 [h] with 1 <= h <= 16 inside the file");
    }
    size_t at = core + 1;
    for (uint32_t j = 0; j < m.shape[0]; ++j) {
      const float code = load_half(file.data() + m.offset, j);
      if (code != 1.0f && code != 2.0f && code != 3.0f) {
        fail(where(core, "heads.manifest") + ": entry " + std::to_string(j) + " is " + std::to_string(code) +
             ", not a head code (1 embedding, 2 confidence, 3 router)");
      }
      HeadRequest r{HeadKind(uint32_t(code)), 0, 0, 0};
      const size_t needed = r.kind == HeadKind::router ? 7 : 6;
      if (at + needed > dir.size() - 1) {
        fail(where(at, std::string(head_kind_name(r.kind)) + "_head") + ": the heads walk runs past the tokenizer (" +
             std::to_string(dir.size()) + " tensors)");
      }
      const Record& gain = dir[at + 1];
      const Record& query = dir[at + 2];
      const Record& proj = dir[at + 4];
      if (gain.ndim != 2 || query.ndim != 2 || proj.ndim != 2) {
        fail(where(at + 1, std::string(head_kind_name(r.kind)) + "_head.gain") + ": gain, query and proj must be 2-D");
      }
      r.k = gain.shape[1];
      r.q = query.shape[0];
      r.out = r.kind == HeadKind::confidence ? 1 : r.kind == HeadKind::router ? 3 : proj.shape[0];
      if (r.k == 0 || r.q == 0 || r.out == 0 || r.k > 4096 || r.q > 4096 || r.out > (1u << 16)) {
        fail(where(at + 1, std::string(head_kind_name(r.kind)) + "_head.gain") + ": head sizes k, q, out out of range");
      }
      requests.push_back(r);
      at += needed;
    }
    if (at != dir.size() - 1) {
      fail("heads: the walk consumed " + std::to_string(at - core) + " tensors, but the directory holds " +
           std::to_string(extra) + " between final_norm and the tokenizer");
    }
  }
  return make(h, requests, untied);
}

std::vector<std::string> check_against_canon(const Canon& canon, std::span<const Record> records) {
  std::vector<std::string> p;
  if (records.size() != canon.size()) {
    p.push_back("directory: " + std::to_string(records.size()) + " tensors, the canon expects " +
                std::to_string(canon.size()));
    return p;
  }
  for (size_t i = 0; i < records.size(); ++i) {
    const TensorSpec& s = canon[i];
    const Record& r = records[i];
    const std::string who = "record " + std::to_string(i) + " (" + s.name + "): ";
    if (r.dtype != s.dtype) {
      p.push_back(who + "dtype " + kind_name(r) + ", expected " + dtype_name(s.dtype));
      continue;
    }
    bool same = r.ndim == s.ndim;
    for (size_t d = 0; same && d < s.ndim; ++d) same = r.shape[d] == s.shape[d];
    if (!same) {
      Record expected;
      expected.ndim = s.ndim;
      expected.shape = s.shape;
      p.push_back(who + "shape " + shape_string(r) + ", expected " + shape_string(expected));
    }
  }
  return p;
}

}  // namespace cact
