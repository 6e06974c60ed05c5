#include "engine/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cact/codec.h"
#include "cact/error.h"
#include "cact/half.h"
#include "engine/ops.h"
#include "engine/vmath.h"

namespace cact::engine {

// lround's rounding (half away from zero) written without a library call so
// that the loop vectorises: |x / scale| < 2^23, so x/scale − trunc(x/scale) is exact.
CACT_VEC_CLONES float quantize_int8(const float* x, uint32_t n, int8_t* q) {
  constexpr uint32_t L = 16;
  float mx[L] = {};
  uint32_t i = 0;
  for (; i + L <= n; i += L) {
    for (uint32_t k = 0; k < L; ++k) mx[k] = std::max(mx[k], std::fabs(x[i + k]));
  }
  for (uint32_t k = 0; i < n; ++i, ++k) mx[k] = std::max(mx[k], std::fabs(x[i]));
  const float absmax = *std::max_element(mx, mx + L);
  const float scale = absmax > 0.0f ? absmax / 127.0f : 1.0f;
  for (i = 0; i < n; ++i) {
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
  return scale;
}

namespace detail {

// One batch of query heads over one KV head's int8 rows.
struct Int8Batch {
  const kernels::KernelTable* kernels;
  const int8_t* k8;  // rows of the KV head, [row][dq]
  const int8_t* v8;  // [row][dv]
  const float* ks;   // [row]
  const float* vs;   // [row]
  uint32_t dq, dv, heads;
  const int8_t* q8;    // [heads][dq]
  const float* coef;   // [heads]: q_scale / sqrt(dq)
  float* scores;       // [heads][stride]
  size_t stride;
  int32_t* dots;       // [kBlock]
  float* vblock;       // [kBlock][dv]
  float* weights;      // [kBlock]
};

// scores[h][at + i] = float(q8_h · k_(row+i)) · k_scale · coef[h] for i < count,
// a block of K rows at a time for every head.
CACT_VEC_CLONES void int8_scores(const Int8Batch& b, uint32_t row, uint32_t count, uint32_t at) {
  for (uint32_t b0 = 0; b0 < count; b0 += AttendScratch::kBlock) {
    const uint32_t n = std::min(AttendScratch::kBlock, count - b0);
    const int8_t* k = b.k8 + size_t(row + b0) * b.dq;
    const float* ks = b.ks + row + b0;
    for (uint32_t h = 0; h < b.heads; ++h) {
      b.kernels->int8_dots(b.q8 + size_t(h) * b.dq, k, b.dq, b.dq, n, b.dots);
      float* sc = b.scores + h * b.stride + at + b0;
      const float c = b.coef[h];
      for (uint32_t i = 0; i < n; ++i) sc[i] = float(b.dots[i]) * ks[i] * c;
    }
  }
}

// acc[j] += w[i] · v[i][j] for i < n in row order, j < dv: 16 columns at a time
// held in registers over all n rows (the order of each acc[j]'s sum is the rows').
inline void weighted_rows(float* __restrict acc, const float* __restrict w, const float* __restrict v, uint32_t n,
                          uint32_t dv) {
  constexpr uint32_t W = 16;
  uint32_t j0 = 0;
  for (; j0 + W <= dv; j0 += W) {
    float a[W];
    for (uint32_t j = 0; j < W; ++j) a[j] = acc[j0 + j];
    for (uint32_t i = 0; i < n; ++i) {
      const float wi = w[i];
      const float* vi = v + size_t(i) * dv + j0;
      for (uint32_t j = 0; j < W; ++j) a[j] += wi * vi[j];
    }
    for (uint32_t j = 0; j < W; ++j) acc[j0 + j] = a[j];
  }
  for (; j0 < dv; ++j0) {
    float a = acc[j0];
    for (uint32_t i = 0; i < n; ++i) a += w[i] * v[size_t(i) * dv + j0];
    acc[j0] = a;
  }
}

// out[h][j] += Σ_i p[h][at + i] · v_scale · float(v_(row+i)[j]), rows in order:
// a block of V rows is converted to float once for every head.
CACT_VEC_CLONES void int8_values(const Int8Batch& b, uint32_t row, uint32_t count, uint32_t at, float* out) {
  for (uint32_t b0 = 0; b0 < count; b0 += AttendScratch::kBlock) {
    const uint32_t n = std::min(AttendScratch::kBlock, count - b0);
    const int8_t* v = b.v8 + size_t(row + b0) * b.dv;
    const float* vs = b.vs + row + b0;
    float* vf = b.vblock;
    for (size_t i = 0; i < size_t(n) * b.dv; ++i) vf[i] = float(v[i]);
    for (uint32_t h = 0; h < b.heads; ++h) {
      const float* p = b.scores + h * b.stride + at + b0;
      for (uint32_t i = 0; i < n; ++i) b.weights[i] = p[i] * vs[i];
      weighted_rows(out + size_t(h) * b.dv, b.weights, vf, n, b.dv);
    }
  }
}

}  // namespace detail

void AttendScratch::reserve(uint32_t positions, uint32_t dq, uint32_t dv) {
  const uint32_t width = std::max(dq, dv);
  const uint32_t padded = (width + KvCache::kCqGroup - 1) / KvCache::kCqGroup * KvCache::kCqGroup;
  if (this->positions() < positions) scores.resize(size_t(kHeads) * positions);
  if (dots.size() < kBlock) dots.resize(kBlock);
  if (q8.size() < size_t(kHeads) * dq) q8.resize(size_t(kHeads) * dq);
  if (vblock.size() < size_t(kBlock) * dv) vblock.resize(size_t(kBlock) * dv);
  if (weights.size() < kBlock) weights.resize(kBlock);
  if (rotated.size() < 2 * size_t(padded)) rotated.resize(2 * size_t(padded));
  if (idx.size() < KvCache::kCqGroup) idx.resize(KvCache::kCqGroup);
}

size_t AttendScratch::bytes() const {
  return (scores.capacity() + dots.capacity() + vblock.capacity() + weights.capacity() + rotated.capacity()) * 4 +
         q8.capacity() + idx.capacity();
}

void KvCache::init(KvFormat format, uint32_t kv_heads, uint32_t dq, uint32_t dv, uint32_t pinned, uint32_t ring,
                   uint32_t cq_bits, std::span<const float> cq_codebook, const kernels::KernelTable* kernels) {
  if (ring == 0) fail("internal: a KV cache needs at least one ring row");
  format_ = format;
  K_ = kv_heads;
  dq_ = dq;
  dv_ = dv;
  pinned_ = pinned;
  ring_ = ring;
  kernels_ = kernels;
  const size_t rows = size_t(pinned) + ring;
  switch (format) {
    case KvFormat::f32:
      kf_.assign(rows * K_ * dq_, 0.0f);
      vf_.assign(rows * K_ * dv_, 0.0f);
      break;
    case KvFormat::int8:
      if (kernels == nullptr) fail("internal: the int8 KV cache needs a kernel table");
      k8_.assign(rows * K_ * dq_, 0);
      v8_.assign(rows * K_ * dv_, 0);
      ks_.assign(rows * K_, 0.0f);
      vs_.assign(rows * K_, 0.0f);
      break;
    case KvFormat::cq:
      if (cq_bits < 2 || cq_bits > 4) fail("KV cache: CQ width " + std::to_string(cq_bits) + " is not 2, 3 or 4");
      bits_ = cq_bits;
      codebook_.assign(cq_codebook.begin(), cq_codebook.end());
      kgroups_ = (dq + kCqGroup - 1) / kCqGroup;
      vgroups_ = (dv + kCqGroup - 1) / kCqGroup;
      group_bytes_ = uint32_t(codec::packed_row_bytes(kCqGroup, bits_));
      kc_.assign(rows * K_ * kgroups_ * group_bytes_, 0);
      vc_.assign(rows * K_ * vgroups_ * group_bytes_, 0);
      kn_.assign(rows * K_ * kgroups_, 0);
      vn_.assign(rows * K_ * vgroups_, 0);
      break;
  }
}

size_t KvCache::bytes() const {
  return (kf_.capacity() + vf_.capacity() + ks_.capacity() + vs_.capacity() + codebook_.capacity()) * 4 +
         k8_.capacity() + v8_.capacity() + kc_.capacity() + vc_.capacity() + (kn_.capacity() + vn_.capacity()) * 2;
}

void KvCache::quantize_cq(const float* x, uint32_t dim, uint8_t* packed, uint16_t* norms, float* scratch) const {
  const uint32_t groups = (dim + kCqGroup - 1) / kCqGroup;
  uint8_t idx[kCqGroup];
  for (uint32_t g = 0; g < groups; ++g) {
    for (uint32_t i = 0; i < kCqGroup; ++i) {
      const uint32_t col = g * kCqGroup + i;
      scratch[i] = col < dim ? x[col] : 0.0f;
    }
    codec::fwht(scratch, kCqGroup);
    double sum = 0.0;
    for (uint32_t i = 0; i < kCqGroup; ++i) sum += double(scratch[i]) * scratch[i];
    const float norm = float(std::sqrt(sum));
    norms[g] = float_to_half(norm);
    const float inv = 1.0f / std::max(norm, 1e-12f);
    for (uint32_t i = 0; i < kCqGroup; ++i) idx[i] = codec::nearest_index(scratch[i] * inv, codebook_);
    codec::pack_indices(idx, kCqGroup, bits_, packed + size_t(g) * group_bytes_);
  }
}

void KvCache::write(uint32_t pos, const float* k, const float* v) {
  const size_t row = row_of(pos);
  const size_t rows = this->rows();
  for (uint32_t h = 0; h < K_; ++h) {
    const size_t at = size_t(h) * rows + row;
    const float* kh = k + size_t(h) * dq_;
    const float* vh = v + size_t(h) * dv_;
    switch (format_) {
      case KvFormat::f32:
        std::memcpy(kf_.data() + at * dq_, kh, dq_ * sizeof(float));
        std::memcpy(vf_.data() + at * dv_, vh, dv_ * sizeof(float));
        break;
      case KvFormat::int8:
        ks_[at] = quantize_int8(kh, dq_, k8_.data() + at * dq_);
        vs_[at] = quantize_int8(vh, dv_, v8_.data() + at * dv_);
        break;
      case KvFormat::cq: {
        float scratch[kCqGroup];
        quantize_cq(kh, dq_, kc_.data() + at * kgroups_ * group_bytes_, kn_.data() + at * kgroups_, scratch);
        quantize_cq(vh, dv_, vc_.data() + at * vgroups_ * group_bytes_, vn_.data() + at * vgroups_, scratch);
        break;
      }
    }
  }
}

// Calls f(first_row, count, offset) for the contiguous storage runs holding the
// positions of `ranges`, in order; offset counts positions from the first one.
template <typename F>
void KvCache::for_each_segment(std::span<const PosRange> ranges, F&& f) const {
  uint32_t offset = 0;
  for (const PosRange& r : ranges) {
    uint32_t pos = r.first;
    while (pos <= r.last) {
      uint32_t row, count;
      if (pos < pinned_) {
        row = pos;
        count = std::min(r.last, pinned_ - 1) - pos + 1;
      } else {
        row = row_of(pos);
        const uint32_t to_end = pinned_ + ring_ - row;
        count = std::min(r.last - pos + 1, to_end);
      }
      f(row, count, offset);
      pos += count;
      offset += count;
    }
  }
}

void KvCache::attend_group(const float* q, uint32_t heads, uint32_t kv_head, std::span<const PosRange> ranges,
                           float* out, AttendScratch& s) const {
  for (uint32_t h0 = 0; h0 < heads; h0 += AttendScratch::kHeads) {
    const uint32_t n = std::min(AttendScratch::kHeads, heads - h0);
    const float* qb = q + size_t(h0) * dq_;
    float* ob = out + size_t(h0) * dv_;
    if (format_ == KvFormat::int8) {
      attend_int8(qb, n, kv_head, ranges, ob, s);
    } else {
      for (uint32_t h = 0; h < n; ++h) attend_one(qb + size_t(h) * dq_, kv_head, ranges, ob + size_t(h) * dv_, s);
    }
  }
}

// int8: every head's scores in float (one pass over each block of K rows for all
// heads), a float softmax per head, then the value sums (one pass over each block
// of V rows for all heads). Per head the operations do not depend on the others.
void KvCache::attend_int8(const float* q, uint32_t heads, uint32_t kv_head, std::span<const PosRange> ranges,
                          float* out, AttendScratch& s) const {
  const size_t base = size_t(kv_head) * rows();
  const float inv_sqrt = float(1.0 / std::sqrt(double(dq_)));
  float coef[AttendScratch::kHeads];
  for (uint32_t h = 0; h < heads; ++h) {
    coef[h] = quantize_int8(q + size_t(h) * dq_, dq_, s.q8.data() + size_t(h) * dq_) * inv_sqrt;
  }
  const detail::Int8Batch b{kernels_,    k8_.data() + base * dq_, v8_.data() + base * dv_, ks_.data() + base,
                            vs_.data() + base, dq_, dv_, heads, s.q8.data(), coef, s.scores.data(), s.positions(),
                            s.dots.data(), s.vblock.data(), s.weights.data()};
  uint32_t total = 0;
  for_each_segment(ranges, [&](uint32_t row, uint32_t count, uint32_t offset) {
    detail::int8_scores(b, row, count, offset);
    total = offset + count;
  });
  for (uint32_t h = 0; h < heads; ++h) softmax<float>(b.scores + h * b.stride, total);
  std::fill(out, out + size_t(heads) * dv_, 0.0f);
  for_each_segment(ranges,
                   [&](uint32_t row, uint32_t count, uint32_t offset) { detail::int8_values(b, row, count, offset, out); });
}

// One head, f32 (double dot products and softmax sum: the reference numerics)
// or cq (in the rotated domain, float softmax).
void KvCache::attend_one(const float* q, uint32_t kv_head, std::span<const PosRange> ranges, float* out,
                         AttendScratch& s) const {
  const size_t base = size_t(kv_head) * rows();
  const double inv_sqrt = 1.0 / std::sqrt(double(dq_));
  uint32_t total = 0;
  for (const PosRange& r : ranges) total += r.size();
  float* scores = s.scores.data();

  if (format_ == KvFormat::f32) {
    for_each_segment(ranges, [&](uint32_t row, uint32_t count, uint32_t offset) {
      for (uint32_t i = 0; i < count; ++i) {
        scores[offset + i] = float(dot(q, kf_.data() + (base + row + i) * dq_, dq_) * inv_sqrt);
      }
    });
    softmax<double>(scores, total);
    std::fill(out, out + dv_, 0.0f);
    for_each_segment(ranges, [&](uint32_t row, uint32_t count, uint32_t offset) {
      for (uint32_t i = 0; i < count; ++i) {
        const float p = scores[offset + i];
        const float* v = vf_.data() + (base + row + i) * dv_;
        for (uint32_t j = 0; j < dv_; ++j) out[j] += p * v[j];
      }
    });
    return;
  }

  // cq: the query rotated per 64-group once; scores and value sums in the rotated domain.
  float* qrot = s.rotated.data();
  for (uint32_t g = 0; g < kgroups_; ++g) {
    for (uint32_t i = 0; i < kCqGroup; ++i) {
      const uint32_t col = g * kCqGroup + i;
      qrot[col] = col < dq_ ? q[col] : 0.0f;
    }
    codec::fwht(qrot + size_t(g) * kCqGroup, kCqGroup);
  }
  for_each_segment(ranges, [&](uint32_t row, uint32_t count, uint32_t offset) {
    for (uint32_t i = 0; i < count; ++i) {
      const size_t at = base + row + i;
      double sum = 0.0;
      for (uint32_t g = 0; g < kgroups_; ++g) {
        codec::unpack_indices(kc_.data() + (at * kgroups_ + g) * group_bytes_, kCqGroup, bits_, s.idx.data());
        const float* qg = qrot + size_t(g) * kCqGroup;
        double part = 0.0;
        for (uint32_t j = 0; j < kCqGroup; ++j) part += double(qg[j]) * codebook_[s.idx[j]];
        sum += part * double(half_to_float(kn_[at * kgroups_ + g]));
      }
      scores[offset + i] = float(sum * inv_sqrt);
    }
  });
  softmax<float>(scores, total);
  float* acc = s.rotated.data();
  const uint32_t width = vgroups_ * kCqGroup;
  std::fill(acc, acc + width, 0.0f);
  for_each_segment(ranges, [&](uint32_t row, uint32_t count, uint32_t offset) {
    for (uint32_t i = 0; i < count; ++i) {
      const size_t at = base + row + i;
      const float p = scores[offset + i];
      for (uint32_t g = 0; g < vgroups_; ++g) {
        codec::unpack_indices(vc_.data() + (at * vgroups_ + g) * group_bytes_, kCqGroup, bits_, s.idx.data());
        const float w = p * half_to_float(vn_[at * vgroups_ + g]);
        float* ag = acc + size_t(g) * kCqGroup;
        for (uint32_t j = 0; j < kCqGroup; ++j) ag[j] += w * codebook_[s.idx[j]];
      }
    }
  });
  for (uint32_t g = 0; g < vgroups_; ++g) codec::fwht(acc + size_t(g) * kCqGroup, kCqGroup);
  std::memcpy(out, acc, dv_ * sizeof(float));
}

}  // namespace cact::engine
