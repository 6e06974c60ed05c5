#include "engine/engram.h"

#include <algorithm>
#include <cmath>

#include "engine/ops.h"

namespace cact::engine {

void engram_slots(const Geometry& g, const int32_t* tok, uint32_t t, int32_t* slots) {
  for (uint32_t oi = 0; oi < g.orders; ++oi) {
    const uint32_t order = g.order[oi];
    for (uint32_t h = 0; h < g.heads_per_order; ++h) {
      const uint32_t e = oi * g.heads_per_order + h;
      if (t + 1 < order) {
        slots[e] = -1;
        continue;
      }
      // Exact uint32 arithmetic: unsigned overflow wraps mod 2^32.
      uint32_t acc = 0x9E3779B9u * (oi * g.seed_stride + h + 1u);
      for (uint32_t j = 0; j < order; ++j) acc = (acc ^ uint32_t(tok[-int64_t(j)])) * 0x01000193u;
      acc ^= acc >> 15;
      slots[e] = int32_t(acc % g.Z);
    }
  }
}

void engram_prefetch(const SiteWeights& site, const Geometry& g, const int32_t* slots, uint32_t count) {
  const codec::CqMatrix& m = site.tables;
  const size_t groups = m.groups_per_row();
  for (size_t i = 0; i < size_t(count) * g.E; ++i) {
    if (slots[i] < 0) continue;
    const uint32_t r = uint32_t(i % g.E) * g.Z + uint32_t(slots[i]);
    const uint8_t* codes = m.row(r);
    for (size_t off = 0; off < m.row_bytes; off += 64) __builtin_prefetch(codes + off);
    __builtin_prefetch(codes + m.row_bytes - 1);  // a row that straddles a cache line
    __builtin_prefetch(m.norms + 2 * size_t(r) * groups);
  }
}

void engram_gather(const SiteWeights& site, const Geometry& g, const int32_t* slots, const Linear& linear, float* e) {
  for (uint32_t table = 0; table < g.E; ++table) {
    float* dst = e + size_t(table) * g.sd;
    if (slots[table] < 0) {
      std::fill(dst, dst + g.sd, 0.0f);
    } else {
      linear.row(site.tables, table * g.Z + uint32_t(slots[table]), dst);
    }
  }
}

void engram_update(float* u, const float* k, const float* v_conv, uint32_t D) {
  const double ru = inv_rms(u, D), rk = inv_rms(k, D);
  const double d = scaled_dot(u, ru, k, rk, D);
  const float alpha = float(1.0 / (1.0 + std::exp(-d / std::sqrt(double(D)))));
  add_scaled(u, alpha, v_conv, D);
}

}  // namespace cact::engine
