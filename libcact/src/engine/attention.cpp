// Attention_l over a chunk (MODEL.md "Attention_l"): projections from one
// prepared input, causal q/k/v taps, per-head zero-centred norms, rotate-half
// RoPE, the KV cache write, GQA attention over the visible positions, the
// sigmoid output gate and out_proj.
#include <algorithm>
#include <cstring>

#include "engine/forward.h"
#include "engine/ops.h"

namespace cact::engine {

uint32_t Visibility::ranges(uint32_t t, bool global, PosRange out[2]) const {
  const uint32_t lo_win = (!global && sliding_window > 0 && t + 1 > sliding_window) ? t + 1 - sliding_window : 0;
  if (span == 0) {
    out[0] = {lo_win, t};
    return 1;
  }
  const uint32_t lo_kv = t + 1 > span ? t + 1 - span : 0;
  uint32_t count = 0;
  const uint32_t sink_end = std::min(sinks, lo_kv);  // pinned positions the span dropped
  if (sink_end > lo_win) out[count++] = {lo_win, sink_end - 1};
  out[count++] = {std::max(lo_win, lo_kv), t};
  return count;
}

namespace {
// Rotate-half RoPE of one head in place.
void rope(float* x, uint32_t dq, const float* cosv, const float* sinv) {
  const uint32_t half = dq / 2;
  for (uint32_t i = 0; i < half; ++i) {
    const float a = x[i], b = x[i + half];
    x[i] = a * cosv[i] - b * sinv[i];
    x[i + half] = b * cosv[i] + a * sinv[i];
  }
}

// Zero-centred norm (double sums in both numerics: float sums here moved the
// int8 golden logits by up to 9e-3 for no measurable time) then RoPE of
// `heads` consecutive heads of one token.
void norm_rope(float* x, uint32_t heads, uint32_t dq, const float* scale, const float* cosv, const float* sinv) {
  for (uint32_t h = 0; h < heads; ++h) {
    float* xh = x + size_t(h) * dq;
    zc_norm(xh, scale, dq, xh);
    rope(xh, dq, cosv, sinv);
  }
}
}  // namespace

void Forward::attention(uint32_t l, uint32_t count) {
  const Weights& w = *w_;
  const Geometry& g = w.g;
  const LayerWeights& lw = w.layers[l];
  LayerState& st = layers_[l];
  Workspace::Attention& ws = ws_.attention;
  const uint32_t qdim = g.qdim(), kdim = g.kdim(), vdim = g.vdim(), odim = g.odim(), half = g.dq / 2;

  // q, k, v and the gate all read the same prepared a = norm(u; norm_in)
  // (input_prepared, loaded by layer()).
  const bool taps = g.T > 0;
  float* const q_in = taps ? st.q.input(count, ws.q_window.data()) : ws.q.data();
  float* const k_in = taps ? st.k.input(count, ws.k_window.data()) : ws.k.data();
  float* const v_in = taps ? st.v.input(count, ws.v_window.data()) : ws.v.data();
  linear_.apply_many(ws.input_prepared, {{&lw.q_proj, 0, lw.q_proj.out, q_in, qdim},
                                         {&lw.k_proj, 0, lw.k_proj.out, k_in, kdim},
                                         {&lw.v_proj, 0, lw.v_proj.out, v_in, vdim},
                                         {&lw.gate_proj, 0, lw.gate_proj.out, ws.gate.data(), odim}});

  const uint32_t group = g.H / g.K;
  const bool reference = engine_->numerics() == Numerics::reference;
  // The q/k/v taps, q/k norms and RoPE and the KV write of token c, for the
  // KV heads [kv0, kv1) and their query heads (distinct positions and heads
  // -> distinct cache rows).
  const auto prepare = [&](uint32_t c, uint32_t kv0, uint32_t kv1) {
    float* q = ws.q.data() + size_t(c) * qdim;
    float* k = ws.k.data() + size_t(c) * kdim;
    float* v = ws.v.data() + size_t(c) * vdim;
    if (taps) {
      st.q.rows(lw.q_taps.data(), c, kv0 * group * g.dq, kv1 * group * g.dq, q);
      st.k.rows(lw.k_taps.data(), c, kv0 * g.dq, kv1 * g.dq, k);
      st.v.rows(lw.v_taps.data(), c, kv0 * g.dv, kv1 * g.dv, v);
    }
    const float* cosv = ws.rope_cos.data() + size_t(c) * half;
    const float* sinv = ws.rope_sin.data() + size_t(c) * half;
    norm_rope(q + size_t(kv0) * group * g.dq, (kv1 - kv0) * group, g.dq, lw.q_norm.data(), cosv, sinv);
    norm_rope(k + size_t(kv0) * g.dq, kv1 - kv0, g.dq, lw.k_norm.data(), cosv, sinv);
    for (uint32_t kv = kv0; kv < kv1; ++kv) {
      st.cache.write_head(pos_ + c, kv, k + size_t(kv) * g.dq, v + size_t(kv) * g.dv);
    }
  };
  // One attention task per (KV head, run of up to `per` tokens): the query
  // heads h = kv·group .. (kv+1)·group − 1 share KV head kv (consecutive in q,
  // att and gate), and the int8 cache attends a run's tokens in one pass. The
  // bits do not depend on the split (KvCache::attend_tokens). With one run
  // (decoding) on several threads, a task first prepares its own heads of
  // every token: no other task reads them, and the per-token work, which a
  // single token would leave to one thread, is split by head.
  const uint32_t per = std::clamp<uint32_t>(count * g.K / pool_->size(), 1, AttendScratch::kTokens);
  const uint32_t runs = (count + per - 1) / per;
  const bool by_head = runs == 1 && pool_->size() > 1;
  if (!by_head) pool_->run(count, [&](uint32_t c, uint32_t) { prepare(c, 0, g.K); });
  pool_->run(runs * g.K, [&](uint32_t task, uint32_t t) {
    const uint32_t c0 = task / g.K * per, kv = task % g.K, n = std::min(per, count - c0);
    if (by_head) {
      for (uint32_t c = 0; c < count; ++c) prepare(c, kv, kv + 1);
    }
    TokenRanges ranges[AttendScratch::kTokens];
#pragma GCC unroll 1
    for (uint32_t c = 0; c < n; ++c) ranges[c].n = vis_.ranges(pos_ + c0 + c, lw.global, ranges[c].r);
    const size_t at = size_t(c0) * odim + size_t(kv) * group * g.dv, width = size_t(group) * g.dv;
    st.cache.attend_tokens(ws.q.data() + size_t(c0) * qdim + size_t(kv) * group * g.dq, qdim, n, group, kv, ranges,
                           ws.gated.data() + at, odim, ws.scratch[t], isa_);
    for (uint32_t c = 0; c < n; ++c) {
      float* att = ws.gated.data() + at + size_t(c) * odim;
      const float* gate = ws.gate.data() + at + size_t(c) * odim;
      if (reference) {
        mul_sigmoid<double>(att, gate, width);
      } else {
        mul_sigmoid<float>(att, gate, width);
      }
    }
  });
  if (taps) {
    st.q.slide(count);
    st.k.slide(count);
    st.v.slide(count);
  }
  linear_.load(ws.gated_prepared, ws.gated.data(), odim, count);
  linear_.apply(ws.gated_prepared, lw.out_proj, ws.out.data(), g.D);
}

}  // namespace cact::engine
