#include "engine/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cact/codec.h"
#include "cact/error.h"
#include "cact/half.h"
#include "engine/ops.h"

namespace cact::engine {

namespace {

// Symmetric absmax int8 of one vector: scale = absmax/127 (1 when all zero).
float quantize_int8(const float* x, uint32_t n, int8_t* q) {
  float absmax = 0.0f;
  for (uint32_t i = 0; i < n; ++i) absmax = std::max(absmax, std::fabs(x[i]));
  const float scale = absmax > 0.0f ? absmax / 127.0f : 1.0f;
  for (uint32_t i = 0; i < n; ++i) {
    const long v = std::lround(x[i] / scale);
    q[i] = int8_t(std::clamp<long>(v, -128, 127));
  }
  return scale;
}

}  // namespace

void AttendScratch::reserve(uint32_t positions, uint32_t dq, uint32_t dv) {
  const uint32_t width = std::max(dq, dv);
  const uint32_t padded = (width + KvCache::kCqGroup - 1) / KvCache::kCqGroup * KvCache::kCqGroup;
  if (scores.size() < positions) scores.resize(positions);
  if (dots.size() < positions) dots.resize(positions);
  if (q8.size() < dq) q8.resize(dq);
  if (rotated.size() < 2 * size_t(padded)) rotated.resize(2 * size_t(padded));
  if (idx.size() < KvCache::kCqGroup) idx.resize(KvCache::kCqGroup);
}

size_t AttendScratch::bytes() const {
  return scores.capacity() * 4 + dots.capacity() * 4 + q8.capacity() + rotated.capacity() * 4 + idx.capacity();
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

// Calls f(first_row, count, offset) for the contiguous storage runs holding
// positions r.first..r.last; offset counts positions from r.first.
template <typename F>
void KvCache::for_each_segment(PosRange r, F&& f) const {
  uint32_t pos = r.first;
  uint32_t offset = 0;
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

void KvCache::attend(const float* q, uint32_t kv_head, std::span<const PosRange> ranges, float* out,
                     AttendScratch& s) const {
  const size_t rows = this->rows();
  const size_t base = size_t(kv_head) * rows;
  const double inv_sqrt = 1.0 / std::sqrt(double(dq_));
  uint32_t total = 0;
  for (const PosRange& r : ranges) total += r.size();
  float* scores = s.scores.data();

  // Scores.
  float qscale = 0.0f;
  if (format_ == KvFormat::int8) qscale = quantize_int8(q, dq_, s.q8.data());
  float* qrot = s.rotated.data();
  if (format_ == KvFormat::cq) {
    for (uint32_t g = 0; g < kgroups_; ++g) {
      for (uint32_t i = 0; i < kCqGroup; ++i) {
        const uint32_t col = g * kCqGroup + i;
        qrot[col] = col < dq_ ? q[col] : 0.0f;
      }
      codec::fwht(qrot + size_t(g) * kCqGroup, kCqGroup);
    }
  }
  uint32_t done = 0;
  for (const PosRange& r : ranges) {
    for_each_segment(r, [&](uint32_t row, uint32_t count, uint32_t offset) {
      float* sc = scores + done + offset;
      switch (format_) {
        case KvFormat::f32:
          for (uint32_t i = 0; i < count; ++i) {
            sc[i] = float(dot(q, kf_.data() + (base + row + i) * dq_, dq_) * inv_sqrt);
          }
          break;
        case KvFormat::int8: {
          int32_t* dots = s.dots.data();
          kernels_->int8_dots(s.q8.data(), k8_.data() + (base + row) * dq_, dq_, dq_, count, dots);
          for (uint32_t i = 0; i < count; ++i) {
            sc[i] = float(double(dots[i]) * double(qscale) * double(ks_[base + row + i]) * inv_sqrt);
          }
          break;
        }
        case KvFormat::cq:
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
            sc[i] = float(sum * inv_sqrt);
          }
          break;
      }
    });
    done += r.size();
  }
  softmax(scores, total);

  // Weighted values.
  float* acc = format_ == KvFormat::cq ? s.rotated.data() : out;
  const uint32_t width = format_ == KvFormat::cq ? vgroups_ * kCqGroup : dv_;
  std::fill(acc, acc + width, 0.0f);
  done = 0;
  for (const PosRange& r : ranges) {
    for_each_segment(r, [&](uint32_t row, uint32_t count, uint32_t offset) {
      const float* p = scores + done + offset;
      for (uint32_t i = 0; i < count; ++i) {
        const size_t at = base + row + i;
        switch (format_) {
          case KvFormat::f32: {
            const float* v = vf_.data() + at * dv_;
            for (uint32_t j = 0; j < dv_; ++j) acc[j] += p[i] * v[j];
            break;
          }
          case KvFormat::int8: {
            const int8_t* v = v8_.data() + at * dv_;
            const float w = p[i] * vs_[at];
            for (uint32_t j = 0; j < dv_; ++j) acc[j] += w * float(v[j]);
            break;
          }
          case KvFormat::cq:
            for (uint32_t g = 0; g < vgroups_; ++g) {
              codec::unpack_indices(vc_.data() + (at * vgroups_ + g) * group_bytes_, kCqGroup, bits_, s.idx.data());
              const float w = p[i] * half_to_float(vn_[at * vgroups_ + g]);
              float* ag = acc + size_t(g) * kCqGroup;
              for (uint32_t j = 0; j < kCqGroup; ++j) ag[j] += w * codebook_[s.idx[j]];
            }
            break;
        }
      }
    });
    done += r.size();
  }
  if (format_ == KvFormat::cq) {
    for (uint32_t g = 0; g < vgroups_; ++g) codec::fwht(acc + size_t(g) * kCqGroup, kCqGroup);
    std::memcpy(out, acc, dv_ * sizeof(float));
  }
}

}  // namespace cact::engine
