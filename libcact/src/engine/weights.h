#pragma once
// The Engine's prepared view of an archive: CQ matrices as zero-copy views of
// the mapped file, the small FP16/FP32 tensors converted to float once (but
// the Hadamard MLP's cond_v and cond_u, read as FP16 in place), the
// codebooks of every width in use (float and int8), the geometry spelled out.
#include <array>
#include <cstdint>
#include <vector>

#include "cact/canon.h"
#include "cact/codec.h"
#include "cact/kernels.h"
#include "cact/model.h"

namespace cact::engine {

struct Geometry {
  uint32_t D = 0, H = 0, K = 0, dq = 0, dv = 0, L = 0, n = 0, N = 0, T = 0;
  uint32_t vocab = 0, out_rows = 0, max_seq = 0, sliding_window = 0, kv_window = 0, kv_bits = 8;
  uint32_t E = 0, Z = 0, sd = 0, etaps = 0, edil = 0, orders = 0, heads_per_order = 0, seed_stride = 0;
  std::array<uint32_t, 4> order{};
  uint32_t max_order = 0;
  uint32_t ba = 0, bb = 0;
  float rope_theta = 10000.0f;
  uint32_t qdim() const { return H * dq; }
  uint32_t kdim() const { return K * dq; }
  uint32_t vdim() const { return K * dv; }
  uint32_t odim() const { return H * dv; }
  uint32_t cell_rows() const { return L + 1; }
};

struct LayerWeights {
  codec::CqMatrix q_proj, k_proj, v_proj, gate_proj, out_proj;
  std::vector<float> norm_in, q_taps, k_taps, v_taps, q_norm, k_norm, post_norm, pre_hada;
  std::vector<float> d1, d2, b2, d3, d4, w1a, w1b, w2a, w2b, w3a, w3b;
  // FP16 straight from the mapped file (half the bytes of floats per token;
  // converted exactly where they are read): cond_v [D][8], cond_u [8][N].
  const uint16_t* cond_v = nullptr;
  const uint16_t* cond_u = nullptr;
  float attn_gate_sigmoid = 0.0f;  // σ(attn_gate)
  bool global = true;              // attends over all visible positions (no sliding window)
  int site = -1;                   // engram site index, or -1
};

struct SiteWeights {
  codec::CqMatrix tables, key_proj, value_proj;
  std::vector<float> taps;  // [etaps, D]
  uint32_t layer = 0;
};

struct HeadWeights {
  HeadKind kind = HeadKind::confidence;
  uint32_t k = 0, q = 0, out = 0;
  codec::CqMatrix probes, query, proj;
  std::vector<float> gain, row_bias, bias, calibration;
};

struct Weights {
  Geometry g;
  codec::CqMatrix embedding;
  std::vector<LayerWeights> layers;
  std::vector<float> a_pre, a_post, a_res, b_pre, b_post, b_res;
  codec::CqMatrix phi_pre, phi_post, phi_res;
  std::vector<uint32_t> p1, p2;
  std::vector<SiteWeights> sites;
  std::vector<float> final_norm;
  std::vector<HeadWeights> heads;
  std::vector<double> rope_freq;  // dq/2 inverse frequencies theta^(-2i/dq)
  // Unit codebooks (group 128) and their int8 forms, indexed by CQ width 1..5.
  std::array<std::vector<float>, 6> codebook;
  std::array<kernels::Int8Codebook, 6> int8_codebook;
  std::array<bool, 6> has_width{};
  // The KV codebook (width kv_bits, group 64) when kv_bits is 2, 3 or 4.
  std::vector<float> kv_codebook;

  const std::vector<float>& codebook_of(const codec::CqMatrix& m) const { return codebook[m.bits]; }
  const kernels::Int8Codebook& int8_codebook_of(const codec::CqMatrix& m) const { return int8_codebook[m.bits]; }
  const HeadWeights* head(HeadKind kind) const;
};

// Views and converts everything; throws cact::Error naming the record for
// anything the forward pass cannot use (e.g. a permutation that is not one).
Weights load_weights(const Model& model);

}  // namespace cact::engine
