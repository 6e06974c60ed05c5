// The vectorised float pieces of the int8 attention path against double
// references: exp_approx, the float softmax (masked and large inputs),
// the sigmoid gate and silu, the norms' partial sums, the int8 quantiser's
// rounding (the AVX-512 form against the portable one), attend_group (one pass
// for a GQA group) against attend() per head (bit for bit) and against the f32
// reference cache, and attend_tokens (passes of several tokens) against each
// token alone in every vector width.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cact/codec.h"
#include "engine/kv_cache.h"
#include "engine/kv_int8.h"
#include "engine/ops.h"
#include "engine/vmath.h"
#include "random_vector.h"

using namespace cact::engine;
using cact::test::random_vector;

namespace {

// |got − want| in units of the float spacing at want (ulp of a float near want).
double ulps(float got, double want) {
  const float w = float(want);
  if (w == 0.0f) return got == 0.0f ? 0.0 : std::numeric_limits<double>::infinity();
  int e = 0;
  std::frexp(double(w), &e);  // |w| in [2^(e-1), 2^e)
  const double ulp = std::ldexp(1.0, std::max(e - 24, -149));
  return std::fabs(double(got) - want) / ulp;
}

std::vector<double> softmax_reference(const std::vector<float>& x) {
  double m = -std::numeric_limits<double>::infinity();
  for (float v : x) m = std::max(m, double(v));
  std::vector<double> p(x.size());
  double sum = 0.0;
  for (size_t i = 0; i < x.size(); ++i) sum += (p[i] = std::exp(double(x[i]) - m));
  for (double& v : p) v /= sum;
  return p;
}

constexpr float kInf = std::numeric_limits<float>::infinity();

}  // namespace

TEST_CASE("exp_approx: within 2 ulp of e^x on [-87, 88.37], 0 below, finite above") {
  double worst = 0.0;
  float at = 0.0f;
  std::vector<float> xs, ys;
  for (float x = -87.0f; x <= 88.37f; x += 0.0007f) xs.push_back(x);
  for (float x : {-87.0f, -1e-30f, 0.0f, 1e-30f, 0.5f, -0.5f, 0.34657359f, -0.34657359f, 88.3762f}) xs.push_back(x);
  ys.resize(xs.size());
  // Through a loop, as the engine calls it (the vectorised form).
  for (size_t i = 0; i < xs.size(); ++i) ys[i] = exp_approx(xs[i]);
  for (size_t i = 0; i < xs.size(); ++i) {
    const double u = ulps(ys[i], std::exp(double(xs[i])));
    if (u > worst) {
      worst = u;
      at = xs[i];
    }
  }
  INFO("worst " << worst << " ulp at x = " << at);
  CHECK(worst <= 2.0);
  CHECK(exp_approx(0.0f) == 1.0f);
  for (float x : {-87.01f, -100.0f, -1e30f, -kInf, std::numeric_limits<float>::quiet_NaN()}) {
    CHECK(exp_approx(x) == 0.0f);
  }
  for (float x : {88.5f, 1000.0f, kInf}) {
    CHECK(std::isfinite(exp_approx(x)));
    CHECK(exp_approx(x) > 2.3e38f);
  }
  CHECK(sigmoid_approx(-kInf) < 1e-38f);  // 1 / (1 + e^88.37)
  CHECK(sigmoid_approx(kInf) == 1.0f);
}

// Score rows for the softmax tests: random, masked (-inf and -1e30), far
// above the rest, at lengths around the 16-lane blocks.
std::vector<std::vector<float>> softmax_cases() {
  std::mt19937 rng(11);
  std::vector<std::vector<float>> cases;
  for (size_t n : {1u, 2u, 7u, 15u, 16u, 17u, 33u, 64u, 255u, 256u, 1000u}) {
    cases.push_back(random_vector(rng, n, 3.0f));
    std::vector<float> masked = random_vector(rng, n, 10.0f);
    for (size_t i = 1; i < n; i += 3) masked[i] = -kInf;  // masked positions
    for (size_t i = 2; i < n; i += 5) masked[i] = -1e30f;
    cases.push_back(masked);
    std::vector<float> large = random_vector(rng, n, 1.0f);
    for (size_t i = 0; i < n; i += 4) large[i] = 1e4f + float(i);  // far above the rest, and large
    cases.push_back(large);
  }
  cases.push_back({-kInf, 0.0f, -kInf});
  cases.push_back({3e38f, -3e38f, 3e38f});
  cases.push_back({100.0f, 100.0f - 80.0f, 100.0f - 90.0f, 100.0f - 200.0f});  // e^-80 kept, e^-90 flushed
  return cases;
}

TEST_CASE("softmax<float> and softmax<double> match a double softmax, masked and large inputs included") {
  double worst_f = 0.0, worst_d = 0.0;
  for (const std::vector<float>& x : softmax_cases()) {
    const std::vector<double> want = softmax_reference(x);
    const float m = *std::max_element(x.begin(), x.end());
    std::vector<float> pf = x, pd = x;
    softmax<float>(pf.data(), pf.size());
    softmax<double>(pd.data(), pd.size());
    double sum = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
      // Relative to the value, less what the float exp flushes (< e^-87 ≈ 1.6e-38).
      // The float form also rounds x − max to float: a relative error of up to
      // |x − max|·2^-24 in e^(x − max), counted separately.
      const double err_f = std::fabs(pf[i] - want[i]) - 1.7e-38;
      const double err_d = std::fabs(pd[i] - want[i]) - 1.2e-38;
      const double shift = std::fabs(double(x[i]) - double(m)) * 0x1p-24;
      worst_f = std::max(worst_f, err_f / want[i] - shift);
      worst_d = std::max(worst_d, err_d / want[i]);
      CHECK(pf[i] >= 0.0f);
      if (std::isinf(x[i]) || x[i] == -1e30f) {
        CHECK(pf[i] == 0.0f);
        CHECK(pd[i] == 0.0f);
      }
      sum += pf[i];
    }
    CHECK(std::fabs(sum - 1.0) < 1e-5);
  }
  INFO("float worst relative " << worst_f << ", double worst relative " << worst_d);
  CHECK(worst_f < 3e-7);    // measured 1.5e-7: exp (≤ 1 ulp), float sum, 1/sum and the product
  CHECK(worst_d < 1.2e-7);  // the result's own float rounding
  std::vector<float> empty;
  softmax<float>(empty.data(), 0);  // no-op
}

TEST_CASE("the attention's softmax gives softmax<float>'s bits in every vector width") {
  std::vector<VecIsa> widths{VecIsa::base};
  if (vec_isa() >= VecIsa::avx2) widths.push_back(VecIsa::avx2);
  if (vec_isa() >= VecIsa::avx512) widths.push_back(VecIsa::avx512);
  for (const std::vector<float>& x : softmax_cases()) {
    std::vector<float> want = x;
    softmax<float>(want.data(), want.size());
    for (const VecIsa isa : widths) {
      std::vector<float> row((x.size() + 15) / 16 * 16, 123.0f);  // the margin past n holds garbage
      std::copy(x.begin(), x.end(), row.begin());
      detail::attention_softmax(isa, row.data(), uint32_t(x.size()));
      INFO("n = " << x.size() << ", width " << int(isa));
      CHECK(std::memcmp(row.data(), want.data(), x.size() * sizeof(float)) == 0);
      for (size_t i = x.size(); i < row.size(); ++i) CHECK(row[i] == 0.0f);
    }
  }
}

TEST_CASE("sigmoid gate and silu: float form within 3 ulp, double form equal to the scalar sigmoid") {
  std::mt19937 rng(5);
  std::vector<float> g = random_vector(rng, 1001, 6.0f);
  g.insert(g.end(), {0.0f, -30.0f, 30.0f, -90.0f, 90.0f, -kInf, kInf});
  const std::vector<float> x = random_vector(rng, g.size(), 2.0f);
  std::vector<float> yf = x, yd = x, sf = g;
  mul_sigmoid<float>(yf.data(), g.data(), g.size());
  mul_sigmoid<double>(yd.data(), g.data(), g.size());
  for (float& v : sf) v = silu_approx(v);  // the int8 path's silu (the MLP)
  double worst = 0.0;
  for (size_t i = 0; i < g.size(); ++i) {
    CHECK(yd[i] == x[i] * sigmoid(g[i]));
    const double sig = 1.0 / (1.0 + std::exp(-double(g[i])));
    if (sig > 1e-30) {  // below, the float result is a flushed 0 or a subnormal
      worst = std::max(worst, ulps(yf[i], double(x[i]) * sig));
      if (std::isfinite(g[i])) worst = std::max(worst, ulps(sf[i], double(g[i]) * sig));
    }
  }
  INFO("worst " << worst << " ulp");
  CHECK(worst <= 3.0);
}

TEST_CASE("norms: partial sums equal a double sum to rounding") {
  std::mt19937 rng(3);
  for (size_t n : {1u, 5u, 16u, 48u, 768u, 3073u}) {
    const std::vector<float> x = random_vector(rng, n, 1.5f);
    const std::vector<float> s = random_vector(rng, n, 0.1f);
    long double want = 0.0L;
    for (float v : x) want += (long double)v * v;
    CHECK(double(std::fabs(sum_squares<double>(x.data(), n) - want) / want) < 1e-13);  // another order of double sums
    CHECK(double(std::fabs(sum_squares<float>(x.data(), n) - want) / want) < 1e-5);
    std::vector<float> out(n);
    zc_norm(x.data(), s.data(), n, out.data());
    const double r = 1.0 / std::sqrt(double(want) / double(n) + kRmsEps);
    for (size_t i = 0; i < n; ++i) CHECK(ulps(out[i], (1.0 + s[i]) * x[i] * r) <= 0.5 + 1e-6);
  }
}

TEST_CASE("quantize_int8: absmax/127 scale and lround's rounding, ties away from zero") {
  std::mt19937 rng(9);
  std::vector<std::vector<float>> cases;
  for (size_t n : {1u, 3u, 16u, 48u, 64u, 100u}) cases.push_back(random_vector(rng, n, 2.0f));
  // absmax 127: every x is its own x/scale, so these are exact ties.
  cases.push_back({127.0f, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, 126.5f, -126.5f, 0.49999997f, -0.49999997f});
  cases.push_back(std::vector<float>(20, 0.0f));
  cases.push_back({-3.0f});
  for (const std::vector<float>& x : cases) {
    std::vector<int8_t> q(x.size());
    const float scale = quantize_int8(x.data(), uint32_t(x.size()), q.data());
    std::vector<int8_t> portable(x.size());
    CHECK(scale == detail::int8_scale_portable(x.data(), uint32_t(x.size())));
    detail::int8_codes_portable(x.data(), uint32_t(x.size()), scale, portable.data());
    CHECK(q == portable);
    float absmax = 0.0f;
    for (float v : x) absmax = std::max(absmax, std::fabs(v));
    CHECK(scale == (absmax > 0.0f ? absmax / 127.0f : 1.0f));
    for (size_t i = 0; i < x.size(); ++i)
      CHECK(int(q[i]) == int(std::clamp<long>(std::lround(x[i] / scale), -128, 127)));
  }
}

TEST_CASE("quantize_int8: non-finite values give in-range codes, never an undefined conversion") {
  // A corrupt archive can make activations NaN or infinite; the codes must stay
  // defined (UBSan in CI checks the float -> int conversion) and in range.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const std::vector<float>& x :
       {std::vector<float>{1.0f, nan, -2.0f, 3.0f}, std::vector<float>{inf, 1.0f, -inf}, std::vector<float>(40, nan)}) {
    std::vector<int8_t> q(x.size(), 99), portable(x.size(), 99);
    const float scale = quantize_int8(x.data(), uint32_t(x.size()), q.data());
    CHECK(std::bit_cast<uint32_t>(scale) ==
          std::bit_cast<uint32_t>(detail::int8_scale_portable(x.data(), uint32_t(x.size()))));
    detail::int8_codes_portable(x.data(), uint32_t(x.size()), scale, portable.data());
    CHECK(q == portable);
    for (size_t i = 0; i < x.size(); ++i) {
      // NaN, or anything over an infinite scale (x / inf is 0 or NaN), codes as 0;
      // the finite values of a finite scale keep lround's code.
      const bool zero = std::isnan(x[i]) || std::isinf(scale);
      CHECK(int(q[i]) == (zero ? 0 : int(std::clamp<long>(std::lround(x[i] / scale), -128, 127))));
    }
  }
}

TEST_CASE("attend_group: a GQA group in one pass equals attend() per head, bit for bit; int8 near f32") {
  std::mt19937 rng(17);
  const uint32_t K = 2, G = 6, dq = 48, dv = 64, pinned = 3, ring = 150, total = 400;
  const std::vector<float> cb4 = cact::codec::codebook_for(4, cact::codec::standard_codebooks(), 64);
  KvCache c8, c32, ccq;
  c8.init(KvFormat::int8, K, dq, dv, pinned, ring, 8, {}, &cact::kernels::best_kernels());
  c32.init(KvFormat::f32, K, dq, dv, pinned, ring, 8, {}, nullptr);
  ccq.init(KvFormat::cq, K, dq, dv, pinned, ring, 4, cb4, nullptr);
  AttendScratch scratch;
  scratch.reserve(pinned + ring, dq, dv);
  double worst = 0.0;
  uint32_t checked = 0;
  for (uint32_t p = 0; p < total; ++p) {
    const std::vector<float> k = random_vector(rng, K * dq), v = random_vector(rng, K * dv);
    c8.write(p, k.data(), v.data());
    c32.write(p, k.data(), v.data());
    ccq.write(p, k.data(), v.data());
    if (p % 37 != 5 && p != total - 1) continue;
    // Sinks 0..2, then up to the last 140 positions (crossing the ring's end and
    // more than two 64-row blocks); early on one range.
    PosRange ranges[2];
    uint32_t nr = 0;
    if (p >= 143) ranges[nr++] = {0, 2};
    ranges[nr++] = {p >= 143 ? p - 139 : 0, p};
    const std::span<const PosRange> rs(ranges, nr);
    for (uint32_t kv = 0; kv < K; ++kv) {
      const std::vector<float> q = random_vector(rng, G * dq, 2.0f);
      for (const KvCache* cache : {&c8, &c32, &ccq}) {
        std::vector<float> group(G * dv, -1.0f), single(G * dv, -2.0f);
        cache->attend_group(q.data(), G, kv, rs, group.data(), scratch);
        for (uint32_t h = 0; h < G; ++h) cache->attend(q.data() + h * dq, kv, rs, single.data() + h * dv, scratch);
        CHECK(std::equal(group.begin(), group.end(), single.begin()));
        if (cache == &c8) {
          std::vector<float> ref(G * dv);
          c32.attend_group(q.data(), G, kv, rs, ref.data(), scratch);
          for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, double(std::fabs(group[i] - ref[i])));
        }
      }
      // More heads than one pass takes (AttendScratch::kHeads): batches give the same bits.
      const uint32_t many = AttendScratch::kHeads + 3;
      std::vector<float> qm = random_vector(rng, many * dq, 2.0f);
      std::vector<float> group(many * dv), single(many * dv);
      c8.attend_group(qm.data(), many, kv, rs, group.data(), scratch);
      for (uint32_t h = 0; h < many; ++h) c8.attend(qm.data() + h * dq, kv, rs, single.data() + h * dv, scratch);
      CHECK(std::equal(group.begin(), group.end(), single.begin()));
    }
    ++checked;
  }
  CHECK(checked > 10);
  // The int8 cache carries its quantisation error (values ~N(0,1), dq 48).
  INFO("int8 vs f32 worst |Δ| " << worst);
  CHECK(worst < 0.05);
}

TEST_CASE("attend_tokens: a pass of several tokens equals each token alone, bit for bit, in every vector width") {
  // Shapes: needle3's (dq 48, dv 64, 6 heads per KV head), and odd ones (dq not
  // a multiple of 4, dv not of 16, more heads than one pass takes). Visibility
  // as Forward's: sinks, a span, a sliding window; tokens past the ring's end.
  // A token alone is a one-token pass (in needle3's shape its V codes are
  // converted inside the value sums where the CPU has that kernel), a pass of
  // several widens each block first: the two must agree bit for bit.
  struct Shape {
    uint32_t dq, dv, group, pinned, span, window;
  };
  std::vector<VecIsa> widths{VecIsa::base};
  if (vec_isa() >= VecIsa::avx2) widths.push_back(VecIsa::avx2);
  if (vec_isa() >= VecIsa::avx512) widths.push_back(VecIsa::avx512);
  std::mt19937 rng(23);
  for (const Shape sh : {Shape{48, 64, 6, 0, 100, 0}, Shape{18, 40, 11, 3, 70, 0}, Shape{48, 64, 6, 2, 90, 25}}) {
    CAPTURE(sh.dq);
    const uint32_t K = 2, chunk = 13, ring = sh.span + chunk - 1, total = 260;
    KvCache cache;
    cache.init(KvFormat::int8, K, sh.dq, sh.dv, sh.pinned, ring, 8, {}, nullptr);
    AttendScratch roomy, tight;  // 8 tokens a pass; 1 token a pass (scores for 5000 positions)
    roomy.reserve(cache.rows(), sh.dq, sh.dv);
    tight.reserve(5000, sh.dq, sh.dv);
    REQUIRE(tight.tokens_fitting(8, AttendScratch::kHeads, 5000) == 1);
    // Like Visibility::ranges (sinks kept through the span, a sliding window).
    const auto visible = [&](uint32_t t) {
      TokenRanges tr;
      const uint32_t lo_win = sh.window > 0 && t + 1 > sh.window ? t + 1 - sh.window : 0;
      const uint32_t lo_kv = t + 1 > sh.span ? t + 1 - sh.span : 0;
      const uint32_t sink_end = std::min(sh.pinned, lo_kv);
      if (sink_end > lo_win) tr.r[tr.n++] = {lo_win, sink_end - 1};
      tr.r[tr.n++] = {std::max(lo_win, lo_kv), t};
      return tr;
    };
    const uint32_t H = sh.group, qdim = H * sh.dq, odim = H * sh.dv;
    uint32_t checked = 0;
    for (uint32_t c0 = 0; c0 < total; c0 += chunk) {
      const uint32_t n = std::min(chunk, total - c0);
      for (uint32_t c = 0; c < n; ++c) {
        const std::vector<float> k = random_vector(rng, K * sh.dq), v = random_vector(rng, K * sh.dv);
        cache.write(c0 + c, k.data(), v.data());
      }
      if (c0 % 3 != 0 && c0 + n != total) continue;
      const std::vector<float> q = random_vector(rng, size_t(n) * qdim, 2.0f);
      std::vector<TokenRanges> ranges(n);
      for (uint32_t c = 0; c < n; ++c) ranges[c] = visible(c0 + c);
      for (uint32_t kv = 0; kv < K; ++kv) {
        std::vector<float> alone(size_t(n) * odim, -1.0f);
        for (uint32_t c = 0; c < n; ++c) {
          cache.attend_group(q.data() + c * qdim, H, kv, {ranges[c].r, ranges[c].n}, alone.data() + c * odim, roomy);
        }
        for (VecIsa isa : widths) {
          for (AttendScratch* s : {&roomy, &tight}) {
            CAPTURE(vec_isa_name(isa));
            std::vector<float> pass(size_t(n) * odim, -2.0f);
            // Tokens 0..n-1 in runs of up to 8 (the rest of the chunk in a second call).
            const uint32_t first = std::min<uint32_t>(n, 8);
            cache.attend_tokens(q.data(), qdim, first, H, kv, ranges.data(), pass.data(), odim, *s, isa);
            cache.attend_tokens(q.data() + first * qdim, qdim, n - first, H, kv, ranges.data() + first,
                                pass.data() + first * odim, odim, *s, isa);
            CHECK(std::memcmp(pass.data(), alone.data(), pass.size() * sizeof(float)) == 0);
          }
        }
      }
      ++checked;
    }
    CHECK(checked > 5);
  }
}

TEST_CASE("attention scores: each instruction path (VNNI, VPMADDWD, SDOT, SMULL) gives the portable code's bits") {
  // Ranges that start and end inside 16-row K tiles (partial lanes), a sink
  // range, dq not a multiple of 4, and 1 to 7 query heads per KV head.
  std::mt19937 rng(31);
  for (const uint32_t dq : {48u, 18u, 7u}) {
    CAPTURE(dq);
    const uint32_t dv = 40, pinned = 3, ring = 200;
    KvCache cache;
    cache.init(KvFormat::int8, 1, dq, dv, pinned, ring, 8, {}, nullptr);
    AttendScratch scratch;
    scratch.reserve(cache.rows(), dq, dv);
    for (uint32_t p = 0; p < 150; ++p) {
      const std::vector<float> k = random_vector(rng, dq), v = random_vector(rng, dv);
      cache.write(p, k.data(), v.data());
    }
    for (uint32_t heads = 1; heads <= 7; heads += 3) {
      for (const uint32_t lo : {0u, 5u, 21u, 37u}) {
        const uint32_t t = 149 - lo / 2;
        const PosRange r[2] = {{0, pinned - 1}, {std::max(lo, pinned), t}};
        const std::vector<float> q = random_vector(rng, size_t(heads) * dq, 2.0f);
        std::vector<float> fast(size_t(heads) * dv), portable(size_t(heads) * dv);
        cache.attend_group(q.data(), heads, 0, {r, 2}, fast.data(), scratch);
        detail::use_portable_scores(true);
        cache.attend_group(q.data(), heads, 0, {r, 2}, portable.data(), scratch);
        detail::use_portable_scores(false);
        CAPTURE(heads);
        CAPTURE(lo);
        CHECK(std::memcmp(fast.data(), portable.data(), fast.size() * sizeof(float)) == 0);
      }
    }
  }
}
