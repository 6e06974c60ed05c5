#include "engine/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>

#include "cact/codec.h"
#include "cact/error.h"
#include "cact/half.h"
#include "engine/kv_int8.h"
#include "engine/ops.h"

namespace cact::engine {

namespace {
// int8: score memory per thread aimed at (floats): up to kTokens tokens of
// kHeads rows of the widest visibility, at least one token.
constexpr size_t kScoreBudget = 32768;
}  // namespace

void AttendScratch::reserve(uint32_t positions, uint32_t dq, uint32_t dv) {
  const uint32_t width = std::max(dq, dv);
  const uint32_t padded = (width + KvCache::kCqGroup - 1) / KvCache::kCqGroup * KvCache::kCqGroup;
  const size_t per_token = size_t(kHeads) * (positions + 2 * kMargin);
  const size_t tokens = std::clamp<size_t>(kScoreBudget / per_token, 1, kTokens);
  const size_t rows = size_t(kTokens) * kHeads, dq4 = (dq + 3) / 4 * 4;
  positions_ = std::max<size_t>(positions_, positions);
  if (scores.size() < tokens * per_token) scores.resize(tokens * per_token);
  if (q8.size() < rows * dq4) q8.resize(rows * dq4);
  if (coef.size() < rows) coef.resize(rows);
  if (bias.size() < rows) bias.resize(rows);
  if (vblock.size() < size_t(kBlock) * dv) vblock.resize(size_t(kBlock) * dv);
  if (weights.size() < size_t(kHeads) * kBlock) weights.resize(size_t(kHeads) * kBlock);
  if (rotated.size() < 2 * size_t(padded)) rotated.resize(2 * size_t(padded));
  if (idx.size() < KvCache::kCqGroup) idx.resize(KvCache::kCqGroup);
}

uint32_t AttendScratch::tokens_fitting(uint32_t tokens, uint32_t heads, uint32_t width) const {
  const size_t fit = scores.size() / (size_t(heads) * (width + 2 * kMargin));
  return uint32_t(std::clamp<size_t>(fit, 1, std::min(tokens, kTokens)));
}

size_t AttendScratch::bytes() const {
  return (scores.capacity() + coef.capacity() + bias.capacity() + vblock.capacity() + weights.capacity() +
          rotated.capacity()) *
             4 +
         q8.capacity() + idx.capacity();
}

void KvCache::init(KvFormat format, uint32_t kv_heads, uint32_t dq, uint32_t dv, uint32_t pinned, uint32_t ring,
                   uint32_t cq_bits, std::span<const float> cq_codebook, const kernels::KernelTable*) {
  if (ring == 0) fail("internal: a KV cache needs at least one ring row");
  format_ = format;
  K_ = kv_heads;
  dq_ = dq;
  dv_ = dv;
  pinned_ = pinned;
  ring_ = ring;
  const size_t rows = size_t(pinned) + ring;
  switch (format) {
    case KvFormat::f32:
      kf_.assign(rows * K_ * dq_, 0.0f);
      vf_.assign(rows * K_ * dv_, 0.0f);
      break;
    case KvFormat::int8:
      // The integer dots are the engine's own (kv_int8.cpp: exact, so any
      // kernel table would give the same); `kernels` is not needed.
      rows16_ = uint32_t((rows + AttendScratch::kTile - 1) / AttendScratch::kTile * AttendScratch::kTile);
      dq4_ = (dq + 3) / 4 * 4;
      k8_.assign(size_t(rows16_) * K_ * dq4_, 0x80);
      v8_.assign(rows * K_ * dv_, 0);
      ks_.assign(size_t(rows16_) * K_, 0.0f);
      vs_.assign(size_t(rows16_) * K_, 0.0f);
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
  for (uint32_t h = 0; h < K_; ++h) write_head(pos, h, k + size_t(h) * dq_, v + size_t(h) * dv_);
}

void KvCache::write_head(uint32_t pos, uint32_t h, const float* kh, const float* vh) {
  const size_t row = row_of(pos);
  const size_t at = size_t(h) * rows() + row;
  switch (format_) {
    case KvFormat::f32:
      std::memcpy(kf_.data() + at * dq_, kh, dq_ * sizeof(float));
      std::memcpy(vf_.data() + at * dv_, vh, dv_ * sizeof(float));
      break;
    case KvFormat::int8: {
      const size_t at16 = size_t(h) * rows16_ + row;
      ks_[at16] = detail::store_k_row(kh, dq_, dq4_, k8_.data() + size_t(h) * rows16_ * dq4_, uint32_t(row));
      vs_[at16] = quantize_int8(vh, dv_, v8_.data() + at * dv_);
      break;
    }
    case KvFormat::cq: {
      float scratch[kCqGroup];
      quantize_cq(kh, dq_, kc_.data() + at * kgroups_ * group_bytes_, kn_.data() + at * kgroups_, scratch);
      quantize_cq(vh, dv_, vc_.data() + at * vgroups_ * group_bytes_, vn_.data() + at * vgroups_, scratch);
      break;
    }
  }
}

// Calls f(first_row, count, offset, first_pos) for the contiguous storage runs
// holding the positions of `ranges`, in order; offset counts positions from the first one.
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
      f(row, count, offset, pos);
      pos += count;
      offset += count;
    }
  }
}

void KvCache::attend_group(const float* q, uint32_t heads, uint32_t kv_head, std::span<const PosRange> ranges,
                           float* out, AttendScratch& s) const {
  if (format_ == KvFormat::int8) {
    if (ranges.size() > 2) fail("internal: int8 attention takes at most two position ranges");
    TokenRanges tr;
    for (const PosRange& r : ranges) tr.r[tr.n++] = r;
    attend_int8(q, 0, 1, heads, kv_head, &tr, out, 0, s, vec_isa());
    return;
  }
  for (uint32_t h = 0; h < heads; ++h) attend_one(q + size_t(h) * dq_, kv_head, ranges, out + size_t(h) * dv_, s);
}

void KvCache::attend_tokens(const float* q, size_t q_stride, uint32_t tokens, uint32_t heads, uint32_t kv_head,
                            const TokenRanges* ranges, float* out, size_t out_stride, AttendScratch& s,
                            VecIsa isa) const {
  if (format_ == KvFormat::int8) {
    attend_int8(q, q_stride, tokens, heads, kv_head, ranges, out, out_stride, s, isa);
    return;
  }
  for (uint32_t c = 0; c < tokens; ++c) {
    attend_group(q + c * q_stride, heads, kv_head, {ranges[c].r, ranges[c].n}, out + c * out_stride, s);
  }
}

// int8 (kv_int8.cpp): passes of up to kHeads heads × the tokens whose score rows
// fit the scratch; each pass reads the stored runs of the union of its tokens'
// ranges.
void KvCache::attend_int8(const float* q, size_t q_stride, uint32_t tokens, uint32_t heads, uint32_t kv_head,
                          const TokenRanges* ranges, float* out, size_t out_stride, AttendScratch& s,
                          VecIsa isa) const {
  const size_t base = size_t(kv_head) * rows16_;
  for (uint32_t c0 = 0; c0 < tokens;) {
    uint32_t n = std::min(tokens - c0, AttendScratch::kTokens), width = 0;
    for (uint32_t c = 0; c < n; ++c) width = std::max(width, ranges[c0 + c].size());
    n = s.tokens_fitting(n, std::min(heads, AttendScratch::kHeads), width);
    // The union of the tokens' ranges (sorted, overlapping or adjacent ones merged).
    PosRange all[2 * AttendScratch::kTokens];
    uint32_t m = 0;
    for (uint32_t c = c0; c < c0 + n; ++c) {
      for (uint32_t k = 0; k < ranges[c].n; ++k) all[m++] = ranges[c].r[k];
    }
    std::sort(all, all + m, [](const PosRange& a, const PosRange& b) { return a.first < b.first; });
    uint32_t u = 0;
    for (uint32_t i = 0; i < m; ++i) {
      if (u > 0 && all[i].first <= all[u - 1].last + 1) {
        all[u - 1].last = std::max(all[u - 1].last, all[i].last);
      } else {
        all[u++] = all[i];
      }
    }
    // Each merged range is at most three runs (pinned rows, the ring to its end, its start).
    detail::Int8Segment segments[6 * AttendScratch::kTokens];
    uint32_t nseg = 0;
    for_each_segment({all, u}, [&](uint32_t row, uint32_t count, uint32_t, uint32_t pos) {
      if (nseg == std::size(segments)) fail("internal: int8 attention over more positions than the cache holds");
      segments[nseg++] = {pos, row, count};
    });
    for (uint32_t h0 = 0; h0 < heads; h0 += AttendScratch::kHeads) {
      const detail::Int8Pass p{k8_.data() + base * dq4_,
                               v8_.data() + size_t(kv_head) * rows() * dv_,
                               ks_.data() + base,
                               vs_.data() + base,
                               dq_,
                               dq4_,
                               dv_,
                               segments,
                               nseg,
                               q + c0 * q_stride + size_t(h0) * dq_,
                               q_stride,
                               n,
                               std::min(AttendScratch::kHeads, heads - h0),
                               ranges + c0,
                               out + c0 * out_stride + size_t(h0) * dv_,
                               out_stride,
                               &s};
      detail::int8_pass(isa, p);
    }
    c0 += n;
  }
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
    for_each_segment(ranges, [&](uint32_t row, uint32_t count, uint32_t offset, uint32_t) {
      for (uint32_t i = 0; i < count; ++i) {
        scores[offset + i] = float(dot(q, kf_.data() + (base + row + i) * dq_, dq_) * inv_sqrt);
      }
    });
    softmax<double>(scores, total);
    std::fill(out, out + dv_, 0.0f);
    for_each_segment(ranges, [&](uint32_t row, uint32_t count, uint32_t offset, uint32_t) {
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
  for_each_segment(ranges, [&](uint32_t row, uint32_t count, uint32_t offset, uint32_t) {
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
  for_each_segment(ranges, [&](uint32_t row, uint32_t count, uint32_t offset, uint32_t) {
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
