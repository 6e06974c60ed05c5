#include "engine/heads.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cact/error.h"
#include "engine/head_fold.h"
#include "engine/ops.h"

namespace cact::engine {

void HeadPool::init(const HeadWeights& head, const Geometry& g) {
  head_ = &head;
  rows_ = g.cell_rows();
  k_ = head.k;
  D_ = g.D;
  max_.assign(size_t(rows_) * k_, 0.0);
  sum_.assign(size_t(rows_) * k_, 0.0);
  acc_.assign(size_t(rows_) * k_ * D_, 0.0);
  reset();
}

void HeadPool::reset() {
  std::fill(max_.begin(), max_.end(), -std::numeric_limits<double>::infinity());
  std::fill(sum_.begin(), sum_.end(), 0.0);
  std::fill(acc_.begin(), acc_.end(), 0.0);
  tokens_ = 0;
}

void HeadPool::add_row(uint32_t r, const float* cells, uint32_t count, Linear& linear, LinearInput& input,
                       std::vector<float>& scores) {
  const double inv_sqrt = 1.0 / std::sqrt(double(D_));
  const size_t width = size_t(rows_) * k_;
  if (scores.size() < count * width) scores.resize(count * width);
  // scores[c·(L+1)·k + p] = probe p = (r, i) · cell (c, r).
  linear.load_here(input, cells, D_, count);
  linear.apply_here(input, head_->probes, r * k_, (r + 1) * k_, scores.data(), width);
  // Token by token, the row's k probes side by side: their accumulator rows
  // (k·D doubles) stay in L1 across the tokens, and each cell is read once.
  // Each probe sees the tokens in order, with the same operations as alone.
  const size_t p0 = size_t(r) * k_;
  double* const acc0 = acc_.data() + p0 * D_;
  double e[4];
  for (uint32_t c = 0; c < count; ++c) {
    const float* cell = cells + size_t(c) * D_;
    for (uint32_t i0 = 0; i0 < k_; i0 += 4) {
      const uint32_t n = std::min<uint32_t>(4, k_ - i0);
      for (uint32_t i = 0; i < n; ++i) {
        const size_t p = p0 + i0 + i;
        const double s = double(scores[c * width + p]) * inv_sqrt;
        if (s > max_[p]) {
          const double shrink = std::exp(max_[p] - s);  // 0 on the first token
          sum_[p] *= shrink;
          scale_doubles(acc0 + size_t(i0 + i) * D_, shrink, D_);
          max_[p] = s;
        }
        e[i] = std::exp(s - max_[p]);
        sum_[p] += e[i];
      }
      double* acc = acc0 + size_t(i0) * D_;
      if (n == 4) {
        add_scaled4(acc, e, cell, D_);
      } else {
        for (uint32_t i = 0; i < n; ++i) add_scaled1(acc + size_t(i) * D_, e[i], cell, D_);
      }
    }
  }
}

std::vector<float> HeadPool::output(Linear& linear) const {
  if (tokens_ == 0) fail("the " + std::string(head_kind_name(head_->kind)) + " head needs at least one token");
  const HeadWeights& h = *head_;
  const uint32_t P = rows_ * k_, D = D_;
  const double inv_sqrt = 1.0 / std::sqrt(double(D));
  // ρ[r,i] = rms(Σ softmax · c) · gain[r,i].
  std::vector<float> rho(size_t(P) * D);
  for (uint32_t p = 0; p < P; ++p) {
    float* dst = rho.data() + size_t(p) * D;
    for (uint32_t d = 0; d < D; ++d) dst[d] = float(acc_[size_t(p) * D + d] / sum_[p]);
    const double r = inv_rms(dst, D);
    for (uint32_t d = 0; d < D; ++d) dst[d] = float(double(dst[d]) * r * double(h.gain[p]));
  }
  // Query attention over the (r, i) pool.
  LinearInput in;
  linear.reserve(in, std::max(D, h.q * D), P);
  linear.load(in, rho.data(), D, P);
  std::vector<float> qs(size_t(P) * h.q);
  linear.apply(in, h.query, qs.data(), h.q);  // qs[p·q + j] = ρ_p · Q_j
  std::vector<float> pooled(size_t(h.q) * D, 0.0f);
  std::vector<float> wts(P);
  for (uint32_t j = 0; j < h.q; ++j) {
    for (uint32_t p = 0; p < P; ++p) {
      wts[p] = float(double(qs[size_t(p) * h.q + j]) * inv_sqrt + double(h.row_bias[size_t(j) * P + p]));
    }
    softmax(wts.data(), P);
    for (uint32_t d = 0; d < D; ++d) {
      double s = 0.0;
      for (uint32_t p = 0; p < P; ++p) s += double(wts[p]) * double(rho[size_t(p) * D + d]);
      pooled[size_t(j) * D + d] = float(s);
    }
  }
  LinearInput pin;
  linear.reserve(pin, h.q * D, 1);
  linear.load(pin, pooled.data(), h.q * D, 1);
  std::vector<float> out(h.out);
  linear.apply(pin, h.proj, out.data(), 0);
  for (uint32_t o = 0; o < h.out; ++o) out[o] += h.bias[o];
  return out;
}

}  // namespace cact::engine
