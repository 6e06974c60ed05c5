// The int8 KV cache (kv_bits 8, MODEL.md "Decoding state and numerics"): the
// quantiser and the attention of a pass of query tokens over one KV head.
//
// A pass (tokens × heads query rows, one KV head):
//  1. each query row quantised like the cache rows (absmax/127), with its
//     coefficient q_scale / sqrt(dq) and bias 128·Σq;
//  2. scores: for each 16-row tile of K that a token of the pass sees, that
//     token's heads' integer dots (VPDPBUSD of the stored k + 128 against the
//     broadcast query, minus the bias; SDOT of the signed codes on aarch64;
//     or the same sums in portable code: all exact), as float(dot) · k_scale
//     · coef, stored at the token's own index of the position (its visible
//     positions in order);
//  3. per row, the arithmetic of softmax<float> (ops.cpp): the same bits;
//  4. values: each block of 64 V rows converted to float once (in a one-token
//     pass, where the CPU has a kernel for it, each row's codes are converted
//     inside the sums instead: it reads each row once); each token's output
//     += (p · v_scale) · float(v), one fused multiply-add per term, over its
//     visible positions in ascending order.
// So each output depends only on its token's query and visible positions: the
// same bits whatever the pass (chunking, threads, batching) and the vector width
// (integer dots are exact; the float work is lane-wise, its sums run in
// position order or over softmax's fixed 16 partial sums).

#include "engine/kv_int8.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "cact/float_kernels.h"
#include "engine/vmath.h"

namespace cact::engine {

float quantize_int8(const float* x, uint32_t n, int8_t* q) {
  const float scale = detail::int8_scale(x, n);
  detail::int8_codes(x, n, scale, q);
  return scale;
}

namespace detail {

// The portable quantiser (CPUs without a KV table in cact/float_kernels.h): loops that vectorise in
// the baseline build (lround's rounding, half away from zero, written without
// a library call: |x / scale| <= 128 after the clamp, so x/scale − trunc(x/scale)
// is exact).
float int8_scale_portable(const float* x, uint32_t n) {
  constexpr uint32_t L = 16;
  float mx[L] = {};
  uint32_t i = 0;
  for (; i + L <= n; i += L) {
    for (uint32_t k = 0; k < L; ++k) mx[k] = std::max(mx[k], std::fabs(x[i + k]));
  }
  for (uint32_t k = 0; i < n; ++i, ++k) mx[k] = std::max(mx[k], std::fabs(x[i]));
  const float absmax = *std::max_element(mx, mx + L);
  return absmax > 0.0f ? absmax / 127.0f : 1.0f;
}

void int8_codes_portable(const float* x, uint32_t n, float scale, int8_t* q) {
  for (uint32_t i = 0; i < n; ++i) {
    // Clamped before the conversion (which is undefined for NaN or out of
    // range): a NaN (from a non-finite x) becomes 0, anything beyond ±128 the
    // bound; finite vectors already satisfy |x / scale| <= ~127, so their
    // codes are unchanged.
    const float q0 = x[i] / scale;
    const float r = std::min(128.0f, std::max(-128.0f, select_bits(q0 == q0, q0, 0.0f)));
    const int32_t t = int32_t(r);
    const float f = r - float(t);
    const int32_t v = t + (f >= 0.5f ? 1 : 0) - (f <= -0.5f ? 1 : 0);
    q[i] = int8_t(std::clamp(v, -128, 127));
  }
}

namespace {

constexpr uint32_t kTile = AttendScratch::kTile, kBlock = AttendScratch::kBlock;

// Tests: score with the portable code even where the CPU has dot products.
std::atomic<bool> portable_scores{false};

// Portable scores of a tile (cact/float_kernels.h KvScoreTile): 16 int32
// lanes, each of the 4 bytes of a dword in turn.
CACT_VEC_INLINE void score_tile_portable(const kernels::KvScoreTile& t) {
  using U = VecOf<uint32_t, kTile>::type;
  using I = VecOf<int32_t, kTile>::type;
  using F = VecOf<float, kTile>::type;
  F ksv;
  std::memcpy(&ksv, t.ks, sizeof ksv);
  for (uint32_t r = 0; r < t.rows; ++r) {
    const int8_t* q = t.q8 + size_t(r) * t.dq4;
    I acc = {};
    for (uint32_t g = 0; g < t.dq4 / 4; ++g) {
      U d;
      std::memcpy(&d, t.kt + size_t(g) * 64, sizeof d);
      for (uint32_t b = 0; b < 4; ++b) acc += (I)((d >> (8 * b)) & 0xFFu) * int32_t(q[4 * g + b]);
    }
    const F sc = __builtin_convertvector(acc - t.bias[r], F) * ksv * t.coef[r];
    for (uint32_t l = t.la; l < t.lb; ++l) t.dst[r * t.stride + l] = sc[l];
  }
}

// The dot-product table's scores where there is one (exact integer dots: the
// same bits).
CACT_VEC_INLINE void score_tile(const kernels::KvInt8Kernels& kv, const kernels::KvScoreTile& t) {
  if (kv.scores != nullptr && !portable_scores.load(std::memory_order_relaxed)) return kv.scores(t);
  score_tile_portable(t);
}

// softmax<float> of ops.cpp (the same operations on each lane, so the same
// bits), 16 lanes at a time in vector registers, the tail included: lanes
// past n count as −inf for the maximum and add +0 to the partial sums (which
// leaves them unchanged). Reads and writes up to 15 floats past x[n − 1] (the
// score rows' margin).
template <typename I, typename F>
CACT_VEC_INLINE F select(const I& mask, const F& a, const F& b) {
  return (F)(((I)a & mask) | ((I)b & ~mask));
}

CACT_VEC_INLINE void softmax_row(float* x, uint32_t n) {
  if (n == 0) return;
  constexpr uint32_t L = 16;
  // The 16 lanes as NG vectors of G: aarch64's GCC lowers the comparisons
  // and selects of a 16-float vector lane by lane, so it gets its native 4.
  constexpr uint32_t G = CACT_VEC_X86 ? L : 4, NG = L / G;
  using F = VecOf<float, G>::type;
  using I = VecOf<int32_t, G>::type;
  I lane;
  for (uint32_t k = 0; k < G; ++k) lane[k] = int32_t(k);
  const F minus_inf = F{} - std::numeric_limits<float>::infinity();
  F mv[NG];
#pragma GCC unroll 4
  for (uint32_t g = 0; g < NG; ++g) mv[g] = F{} + x[0];
  for (uint32_t i = 0; i < n; i += L) {
#pragma GCC unroll 4
    for (uint32_t g = 0; g < NG; ++g) {
      F v;
      std::memcpy(&v, x + i + g * G, sizeof v);
      v = select(lane < int32_t(n - i) - int32_t(g * G), v, minus_inf);
      mv[g] = select(v > mv[g], v, mv[g]);
    }
  }
  float mx[L];
  std::memcpy(mx, mv, sizeof mx);
  const float m = *std::max_element(mx, mx + L);
  F pv[NG] = {};
  for (uint32_t i = 0; i < n; i += L) {
#pragma GCC unroll 4
    for (uint32_t g = 0; g < NG; ++g) {
      F d, e;
      std::memcpy(&d, x + i + g * G, sizeof d);
      d -= m;
      for (uint32_t k = 0; k < G; ++k) e[k] = exp_approx(d[k]);  // a loop over one vector's lanes vectorises
      e = select(lane < int32_t(n - i) - int32_t(g * G), e, F{});
      std::memcpy(x + i + g * G, &e, sizeof e);
      pv[g] += e;
    }
  }
  float part[L];
  std::memcpy(part, pv, sizeof part);
  for (uint32_t width = L / 2; width > 0; width /= 2) {
    for (uint32_t k = 0; k < width; ++k) part[k] += part[k + width];
  }
  const float inv = 1.0f / part[0];
  for (uint32_t i = 0; i < n; ++i) x[i] = x[i] * inv;
}

// out[h][j] (HB rows dv apart, columns j0 .. j0 + NV·L) += Σ_i w[h][i] · v[i][j]
// for i in [ia, ib), in order, one fused multiply-add per term.
template <uint32_t L, uint32_t HB, uint32_t NV>
CACT_VEC_INLINE void value_tile(float* out, uint32_t dv, const float* w, const float* v, uint32_t ia, uint32_t ib,
                                uint32_t j0) {
  using W = Lanes<float, L>;
  // Unrolled so that the accumulators stay in registers.
  typename W::V acc[HB][NV];
#pragma GCC unroll 8
  for (uint32_t h = 0; h < HB; ++h) {
#pragma GCC unroll 4
    for (uint32_t c = 0; c < NV; ++c) acc[h][c] = W::load(out + h * dv + j0 + c * L);
  }
  for (uint32_t i = ia; i < ib; ++i) {
    typename W::V x[NV];
#pragma GCC unroll 4
    for (uint32_t c = 0; c < NV; ++c) x[c] = W::load(v + i * dv + j0 + c * L);
#pragma GCC unroll 8
    for (uint32_t h = 0; h < HB; ++h) {
      const typename W::V a = w[h * kBlock + i] - typename W::V{};  // w − (+0) = w: a plain broadcast
#pragma GCC unroll 4
      for (uint32_t c = 0; c < NV; ++c) acc[h][c] = fused_madd(a, x[c], acc[h][c]);
    }
  }
#pragma GCC unroll 8
  for (uint32_t h = 0; h < HB; ++h) {
#pragma GCC unroll 4
    for (uint32_t c = 0; c < NV; ++c) W::store(out + h * dv + j0 + c * L, acc[h][c]);
  }
}

template <uint32_t L, uint32_t HB, uint32_t NV>
CACT_VEC_INLINE void value_cols(float* out, uint32_t dv, const float* w, const float* v, uint32_t ia, uint32_t ib) {
  uint32_t j0 = 0;
  for (; j0 + NV * L <= dv; j0 += NV * L) value_tile<L, HB, NV>(out, dv, w, v, ia, ib, j0);
  for (; j0 + L <= dv; j0 += L) value_tile<L, HB, 1>(out, dv, w, v, ia, ib, j0);
  for (; j0 < dv; ++j0) value_tile<1, HB, 1>(out, dv, w, v, ia, ib, j0);
}

// Tiles of 6 heads × 4 vectors with AVX-512 and NEON (24 of their 32 registers
// accumulate), 6 × 2 with AVX2; 1 × 1 in x86-64's baseline build (the fallback,
// whose fused multiply-adds are fmaf calls: small code rather than fast).
template <uint32_t Bytes>
CACT_VEC_INLINE void value_rows(float* out, uint32_t dv, uint32_t heads, const float* w, const float* v, uint32_t ia,
                                uint32_t ib) {
  constexpr bool kFmaCalls = Bytes == 16 && CACT_VEC_X86;
  constexpr uint32_t L = Bytes / sizeof(float), HB = kFmaCalls ? 1 : 6;
  constexpr uint32_t NV = Bytes == 32 ? 2 : kFmaCalls ? 1 : 4;
  uint32_t h = 0;
  for (; h + HB <= heads; h += HB) value_cols<L, HB, NV>(out + h * dv, dv, w + h * kBlock, v, ia, ib);
  if constexpr (HB > 1) {
    for (; h < heads; ++h) value_cols<L, 1, NV>(out + h * dv, dv, w + h * kBlock, v, ia, ib);
  }
}

// out[i] = a[i] · b[i] for i < n.
CACT_VEC_INLINE void multiply(float* __restrict out, const float* __restrict a, const float* __restrict b, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}

// Where token t sees positions [a, b) of a block, at its own index `own` for a.
struct Visible {
  uint32_t t, a, b, own;
};

// The (token, range) pairs that meet positions [p0, p1), into out (room for
// 2 · tokens); returns their count. (No lambdas in the width-specific bodies:
// a lambda is compiled without the body's target.)
CACT_VEC_INLINE uint32_t visible_in(const Int8Pass& p, uint32_t p0, uint32_t p1, Visible* out) {
  uint32_t n = 0;
  for (uint32_t t = 0; t < p.tokens; ++t) {
    const TokenRanges& tr = p.ranges[t];
    uint32_t base = 0;
    for (uint32_t k = 0; k < tr.n; ++k) {
      const PosRange& r = tr.r[k];
      const uint32_t a = std::max(p0, r.first), b = std::min(p1, r.last + 1);
      if (a < b) out[n++] = {t, a, b, base + (a - r.first)};
      base += r.size();
    }
  }
  return n;
}

template <typename Acc, uint32_t Bytes>
CACT_VEC_INLINE void attend8_body(const Int8Pass& p) {
  AttendScratch& s = *p.s;
  const uint32_t heads = p.heads, dq4 = p.dq4, dv = p.dv;
  // 1. Queries.
  const float inv_sqrt = float(1.0 / std::sqrt(double(p.dq)));
  for (uint32_t t = 0; t < p.tokens; ++t) {
    for (uint32_t h = 0; h < heads; ++h) {
      const uint32_t r = t * heads + h;
      const float* x = p.q + t * p.q_stride + size_t(h) * p.dq;
      int8_t* q8 = s.q8.data() + size_t(r) * dq4;
      const float scale = int8_scale(x, p.dq);
      int8_codes(x, p.dq, scale, q8);
      std::fill(q8 + p.dq, q8 + dq4, int8_t(0));
      int32_t sum = 0;
      for (uint32_t i = 0; i < p.dq; ++i) sum += q8[i];
      s.coef[r] = scale * inv_sqrt;
      s.bias[r] = 128 * sum;
    }
  }
  // Score rows: row r at scores + r·stride, with kMargin spare floats either side.
  uint32_t width = 0;
  for (uint32_t t = 0; t < p.tokens; ++t) width = std::max(width, p.ranges[t].size());
  constexpr uint32_t kMargin = AttendScratch::kMargin;
  const size_t stride = width + 2 * kMargin;
  float* const scores = s.scores.data() + kMargin;

  // 2. Scores, a tile of K rows at a time.
  const kernels::KvInt8Kernels& kv = kernels::kv_int8_kernels();
  for (uint32_t si = 0; si < p.nsegments; ++si) {
    const Int8Segment& seg = p.segments[si];
    const uint32_t end = seg.row + seg.count;
    for (uint32_t tile0 = seg.row / kTile * kTile; tile0 < end; tile0 += kTile) {
      const uint32_t lo = std::max(seg.row, tile0) - tile0, hi = std::min(end, tile0 + kTile) - tile0;
      const uint32_t p0 = seg.pos + (tile0 + lo - seg.row);  // the position of lane lo
      const uint8_t* kt = p.k8 + size_t(tile0) * dq4;
      Visible vis[2 * AttendScratch::kTokens];
      const uint32_t nvis = visible_in(p, p0, p0 + (hi - lo), vis);
      for (uint32_t j = 0; j < nvis; ++j) {
        const uint32_t t = vis[j].t, own = vis[j].own;
        const uint32_t la = lo + (vis[j].a - p0), lb = la + (vis[j].b - vis[j].a);
        // Lane l of row r goes to own index own + (l − la) (la <= 15 < kMargin).
        float* dst = s.scores.data() + (kMargin - la + size_t(t) * heads * stride + own);
        score_tile(kv, {heads, kt, dq4, s.q8.data() + size_t(t) * heads * dq4, s.bias.data() + t * heads,
                        s.coef.data() + t * heads, p.ks + tile0, dst, stride, la, lb});
      }
    }
  }

  // 3. Softmax per row.
  for (uint32_t t = 0; t < p.tokens; ++t) {
    for (uint32_t h = 0; h < heads; ++h) softmax_row(scores + size_t(t * heads + h) * stride, p.ranges[t].size());
  }

  // 4. Value sums, a block of V rows at a time.
  for (uint32_t t = 0; t < p.tokens; ++t) std::fill_n(p.out + t * p.out_stride, size_t(heads) * dv, 0.0f);
  float* const vf = s.vblock.data();
  float* const w = s.weights.data();
  // One token reads each row once: the kernel converts its codes in the sums.
  // (On x86-64 the 512-bit build only: the narrower ones run on CPUs without
  // the kernel. NEON has one width.)
  const bool one =
      (Bytes == 64 || !CACT_VEC_X86) && p.tokens == 1 && kv.values_one != nullptr && dv == 64 && heads % 6 == 0;
  for (uint32_t si = 0; si < p.nsegments; ++si) {
    const Int8Segment& seg = p.segments[si];
    for (uint32_t b0 = 0; b0 < seg.count; b0 += kBlock) {
      const uint32_t n = std::min(kBlock, seg.count - b0), row0 = seg.row + b0, p0 = seg.pos + b0;
      const int8_t* v8 = p.v8 + size_t(row0) * dv;
      if (one) {
        // (no widened copy)
      } else if (kv.widen != nullptr) {
        kv.widen(v8, size_t(n) * dv, vf);
      } else {
        for (size_t i = 0; i < size_t(n) * dv; ++i) vf[i] = float(v8[i]);
      }
      const float* vs = p.vs + row0;
      Visible vis[2 * AttendScratch::kTokens];
      const uint32_t nvis = visible_in(p, p0, p0 + n, vis);
      for (uint32_t j = 0; j < nvis; ++j) {
        const uint32_t t = vis[j].t, own = vis[j].own, ia = vis[j].a - p0, ib = vis[j].b - p0;
        for (uint32_t h = 0; h < heads; ++h) {
          multiply(w + h * kBlock + ia, scores + size_t(t * heads + h) * stride + own, vs + ia, ib - ia);
        }
        if (one) {
          kv.values_one(p.out + t * p.out_stride, heads, w, kBlock, v8, ia, ib);
        } else {
          value_rows<Bytes>(p.out + t * p.out_stride, dv, heads, w, vf, ia, ib);
        }
      }
    }
  }
}

CACT_VEC_DISPATCH(attend8, Int8Pass)

struct SoftmaxRow {
  float* x;
  uint32_t n;
};
template <typename, uint32_t>
CACT_VEC_INLINE void softmax_one_body(const SoftmaxRow& a) {
  softmax_row(a.x, a.n);
}
CACT_VEC_DISPATCH(softmax_one, SoftmaxRow)

}  // namespace

float int8_scale(const float* x, uint32_t n) {
  if (const auto wide = kernels::kv_int8_kernels().scale) return wide(x, n);
  return int8_scale_portable(x, n);
}

void int8_codes(const float* x, uint32_t n, float scale, int8_t* q) {
  if (const auto wide = kernels::kv_int8_kernels().codes) return wide(x, n, scale, q);
  int8_codes_portable(x, n, scale, q);
}

float store_k_row(const float* k, uint32_t dq, uint32_t dq4, uint8_t* k8, uint32_t row) {
  const float scale = int8_scale(k, dq);
  uint8_t* tile = k8 + size_t(row / kTile) * kTile * dq4;
  const uint32_t lane = row % kTile;
  int8_t codes[64];
  for (uint32_t c = 0; c < dq4; c += 64) {
    std::fill(codes, codes + 64, int8_t(0));
    if (c < dq) int8_codes(k + c, std::min(64u, dq - c), scale, codes);
    const uint32_t n = std::min(64u, dq4 - c);
    for (uint32_t b = 0; b < n; ++b) tile[size_t((c + b) / 4) * 64 + lane * 4 + b % 4] = uint8_t(codes[b]) ^ 0x80u;
  }
  return scale;
}

void int8_pass(VecIsa isa, const Int8Pass& p) { attend8<float>(isa, p); }

void attention_softmax(VecIsa isa, float* x, uint32_t n) { softmax_one<float>(isa, {x, n}); }

void use_portable_scores(bool on) { portable_scores.store(on, std::memory_order_relaxed); }

}  // namespace detail
}  // namespace cact::engine
