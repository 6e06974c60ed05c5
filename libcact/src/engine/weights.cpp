// Prepared view of an archive for the forward pass (see weights.h).
#include "engine/weights.h"

#include <bit>
#include <cmath>
#include <string>

#include "cact/error.h"

namespace cact::engine {

namespace {

Geometry geometry_of(const Header& h) {
  Geometry g;
  g.D = h.d_model;
  g.H = h.num_heads;
  g.K = h.num_kv_heads;
  g.dq = h.qk_head_dim;
  g.dv = h.v_head_dim;
  g.L = h.num_layers;
  g.n = h.mhc_lanes;
  g.N = h.hada_n;
  g.T = h.qkv_conv_taps;
  g.vocab = h.vocab;
  g.out_rows = h.output_rows();
  g.max_seq = h.max_seq_len;
  g.sliding_window = h.sliding_window;
  g.kv_window = h.kv_window;
  g.kv_bits = h.kv_bits;
  g.E = h.num_engram_tables;
  g.Z = h.engram_slots;
  g.sd = h.engram_sub_dim;
  g.etaps = h.engram_conv_taps;
  g.edil = h.engram_conv_dilation;
  g.orders = h.num_engram_orders;
  for (uint32_t i = 0; i < g.orders && i < 4; ++i) g.order[i] = h.engram_orders[i];
  g.max_order = h.max_engram_order();
  g.ba = h.hada_rows();
  g.bb = h.hada_cols();
  g.rope_theta = h.rope_theta;
  if (h.num_engram_sites > 0) {
    if (g.orders == 0 || g.E % g.orders != 0) fail("header: num_engram_tables must be a multiple of num_engram_orders");
    g.heads_per_order = g.E / g.orders;
    g.seed_stride = h.engram_seed_stride();
    if (g.etaps == 0) fail("header: engram_conv_taps is 0 but the archive has engram sites");
  }
  if (g.dq % 2 != 0) fail("header: qk_head_dim " + std::to_string(g.dq) + " must be even (rotate-half RoPE)");
  if (g.H % g.K != 0) fail("header: num_heads must be a multiple of num_kv_heads");
  if (g.D > g.N) fail("header: hada_n is smaller than d_model");
  return g;
}

// A permutation stored as floats: every entry an exact integer, each of 0..N-1 once.
std::vector<uint32_t> permutation(const Model& model, size_t index, uint32_t N) {
  const std::vector<float> v = model.values(index);
  std::vector<uint32_t> p(v.size());
  std::vector<bool> seen(N, false);
  if (v.size() != N) fail(model.label(index) + ": expected " + std::to_string(N) + " entries");
  for (size_t i = 0; i < v.size(); ++i) {
    const float f = v[i];
    if (!(f >= 0.0f && f < float(N)) || std::floor(f) != f || seen[size_t(f)]) {
      fail(model.label(index) + ": entry " + std::to_string(i) + " (" + std::to_string(f) +
           ") breaks the permutation of 0.." + std::to_string(N - 1));
    }
    p[i] = uint32_t(f);
    seen[p[i]] = true;
  }
  return p;
}

// An FP16 tensor in place: its blob (64-byte aligned in the file) as halves.
const uint16_t* halves(const Model& model, size_t index) {
  const Record& r = model.record(index);
  if (r.dtype != Dtype::FP16) fail(model.label(index) + " is " + kind_name(r) + ", not FP16");
  return reinterpret_cast<const uint16_t*>(model.blob(index).data());
}

}  // namespace

const HeadWeights* Weights::head(HeadKind kind) const {
  for (const HeadWeights& h : heads) {
    if (h.kind == kind) return &h;
  }
  return nullptr;
}

Weights load_weights(const Model& model) {
  const Header& h = model.header();
  const Canon& c = model.canon();
  Weights w;
  w.g = geometry_of(h);
  const Geometry& g = w.g;

  for (size_t i = 0; i < model.records().size(); ++i) {
    const Record& r = model.record(i);
    if (r.dtype != Dtype::CQ) continue;
    if (r.group != codec::kGroup) {
      fail(model.label(i) + ": CQ group " + std::to_string(r.group) + " (the engine runs group " +
           std::to_string(codec::kGroup) + ")");
    }
    if (r.bits >= w.has_width.size()) fail(model.label(i) + ": unsupported CQ width " + std::to_string(r.bits));
    if (!w.has_width[r.bits]) {
      w.has_width[r.bits] = true;
      w.codebook[r.bits] = model.codebook_for(r.bits);
      w.int8_codebook[r.bits] = kernels::make_int8_codebook(w.codebook[r.bits], r.bits);
    }
  }
  if (g.kv_bits != 8) w.kv_codebook = codec::codebook_for(g.kv_bits, model.codebooks(), 64);

  w.embedding = model.matrix(c.embedding());
  w.layers.resize(g.L);
  for (uint32_t l = 0; l < g.L; ++l) {
    LayerWeights& lw = w.layers[l];
    auto cq = [&](LayerSlot s) { return model.matrix(c.layer(l, s)); };
    auto fp = [&](LayerSlot s) { return model.values(c.layer(l, s)); };
    lw.q_proj = cq(LayerSlot::q_proj);
    lw.k_proj = cq(LayerSlot::k_proj);
    lw.v_proj = cq(LayerSlot::v_proj);
    lw.gate_proj = cq(LayerSlot::gate_proj);
    lw.out_proj = cq(LayerSlot::out_proj);
    lw.norm_in = fp(LayerSlot::norm_in);
    if (g.T > 0) {
      lw.q_taps = fp(LayerSlot::q_taps);
      lw.k_taps = fp(LayerSlot::k_taps);
      lw.v_taps = fp(LayerSlot::v_taps);
    }
    lw.q_norm = fp(LayerSlot::q_norm);
    lw.k_norm = fp(LayerSlot::k_norm);
    lw.post_norm = fp(LayerSlot::post_norm);
    lw.pre_hada = fp(LayerSlot::pre_hada);
    lw.d1 = fp(LayerSlot::d1);
    lw.d2 = fp(LayerSlot::d2);
    lw.b2 = fp(LayerSlot::b2);
    lw.d3 = fp(LayerSlot::d3);
    lw.d4 = fp(LayerSlot::d4);
    lw.w1a = fp(LayerSlot::w1a);
    lw.w1b = fp(LayerSlot::w1b);
    lw.w2a = fp(LayerSlot::w2a);
    lw.w2b = fp(LayerSlot::w2b);
    lw.w3a = fp(LayerSlot::w3a);
    lw.w3b = fp(LayerSlot::w3b);
    lw.cond_v = halves(model, c.layer(l, LayerSlot::cond_v));
    lw.cond_u = halves(model, c.layer(l, LayerSlot::cond_u));
    const float gate = fp(LayerSlot::attn_gate)[0];
    lw.attn_gate_sigmoid = float(1.0 / (1.0 + std::exp(-double(gate))));
    lw.global = h.is_global(l);
    lw.site = h.site_of_layer(l);
  }
  w.a_pre = model.values(c.shared(SharedSlot::mhc_a_pre));
  w.a_post = model.values(c.shared(SharedSlot::mhc_a_post));
  w.a_res = model.values(c.shared(SharedSlot::mhc_a_res));
  w.b_pre = model.values(c.shared(SharedSlot::mhc_b_pre));
  w.b_post = model.values(c.shared(SharedSlot::mhc_b_post));
  w.b_res = model.values(c.shared(SharedSlot::mhc_b_res));
  w.phi_pre = model.matrix(c.shared(SharedSlot::mhc_phi_pre));
  w.phi_post = model.matrix(c.shared(SharedSlot::mhc_phi_post));
  w.phi_res = model.matrix(c.shared(SharedSlot::mhc_phi_res));
  w.p1 = permutation(model, c.shared(SharedSlot::hada_p1), g.N);
  w.p2 = permutation(model, c.shared(SharedSlot::hada_p2), g.N);

  w.sites.resize(h.num_engram_sites);
  for (uint32_t s = 0; s < h.num_engram_sites; ++s) {
    SiteWeights& sw = w.sites[s];
    sw.tables = model.matrix(c.site(s, SiteSlot::tables));
    sw.key_proj = model.matrix(c.site(s, SiteSlot::key_proj));
    sw.value_proj = model.matrix(c.site(s, SiteSlot::value_proj));
    sw.taps = model.values(c.site(s, SiteSlot::taps));
    sw.layer = h.engram_sites[s];
  }
  w.final_norm = model.values(c.final_norm());

  for (const HeadLayout& hl : c.heads()) {
    HeadWeights hw;
    hw.kind = hl.kind;
    hw.k = hl.k;
    hw.q = hl.q;
    hw.out = hl.out;
    hw.probes = model.matrix(hl.at(HeadSlot::probes));
    hw.query = model.matrix(hl.at(HeadSlot::query));
    hw.proj = model.matrix(hl.at(HeadSlot::proj));
    hw.gain = model.values(hl.at(HeadSlot::gain));
    hw.row_bias = model.values(hl.at(HeadSlot::row_bias));
    hw.bias = model.values(hl.at(HeadSlot::bias));
    if (hl.kind == HeadKind::router) hw.calibration = model.values(hl.at(HeadSlot::calibration));
    w.heads.push_back(std::move(hw));
  }

  w.rope_freq.resize(g.dq / 2);
  for (uint32_t i = 0; i < g.dq / 2; ++i) {
    w.rope_freq[i] = std::pow(double(g.rope_theta), -2.0 * double(i) / double(g.dq));
  }
  return w;
}

}  // namespace cact::engine
