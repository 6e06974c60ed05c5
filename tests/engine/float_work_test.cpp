// The per-token float work of the forward pass (docs/ENGINE.md "Float work of
// the int8 path"): the Hadamard MLP batched over tokens equals token by token
// bit for bit, every vector width gives the same bits, the float32 path stays
// within a stated bound of the double path; silu_approx, Sinkhorn in the
// exponential domain and the mHC lane mixing against their references; and
// end to end, int8 logits do not depend on the vector width.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cact/engine.h"
#include "cact/synth.h"
#include "engine/forward.h"
#include "engine/hadamard_mlp.h"
#include "engine/mhc.h"
#include "engine/ops.h"
#include "engine/vmath.h"
#include "engine/weights.h"
#include "random_vector.h"
#include "support/test_paths.h"

using namespace cact::engine;

namespace {

using cact::test::random_vector;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<VecIsa> widths() {
  std::vector<VecIsa> out{VecIsa::base};
  if (vec_isa() >= VecIsa::avx2) out.push_back(VecIsa::avx2);
  if (vec_isa() >= VecIsa::avx512) out.push_back(VecIsa::avx512);
  return out;
}

// A micro archive whose Hadamard width leaves padding (d_model 44 < hada_n 64,
// not a multiple of bb = 8) and whose lane count (3) has no specialised loop.
const std::vector<uint8_t>& odd_archive() {
  static const std::vector<uint8_t> bytes = [] {
    cact::SynthSpec spec = cact::synth_preset("micro");
    spec.geometry.d_model = 44;
    spec.geometry.engram_sub_dim = 11;
    spec.geometry.mhc_lanes = 3;
    spec.seed = 7;
    return cact::synth_archive_bytes(spec);
  }();
  return bytes;
}

struct Archive {
  std::string name;
  cact::Model model;
};

std::vector<Archive> archives() {
  std::vector<Archive> out;
  out.push_back({"license-tiny", cact::Model::open(cact::test::models_dir() / "license-tiny.cact")});
  const auto mixed = cact::test::golden_dir() / "archives" / "micro-mixed.cact";  // block-untied factors
  if (std::filesystem::exists(mixed)) out.push_back({"micro-mixed", cact::Model::open(mixed)});
  out.push_back({"odd", cact::Model::from_bytes(odd_archive())});
  return out;
}

template <typename Acc>
std::vector<float> mlp_outputs(const Weights& w, bool untied, const std::vector<float>& m, uint32_t count,
                               uint32_t batch, VecIsa isa) {
  const uint32_t D = w.g.D;
  HadaScratch s;
  s.reserve(w.g.N, 3);  // blocks of 3 tokens (batch 1: one token at a time)
  std::vector<float> out(size_t(w.g.L) * count * D);
  for (uint32_t l = 0; l < w.g.L; ++l) {
    float* o = out.data() + size_t(l) * count * D;
    for (uint32_t c = 0; c < count; c += batch) {
      const uint32_t n = std::min(batch, count - c);
      hadamard_mlp<Acc>(w, l, untied, m.data() + size_t(c) * D, D, n, o + size_t(c) * D, D, s, isa);
    }
  }
  return out;
}

// out[i] = fused_madd(a[i], x[i], acc[i]), whole vectors of the width then lane by lane.
struct Madd {
  const float *a, *x, *acc;
  float* out;
  uint32_t n;
};
template <typename Acc, uint32_t Bytes>
CACT_VEC_INLINE void madd_body(const Madd& m) {
  constexpr uint32_t L = Bytes / sizeof(float);
  using W = Lanes<float, L>;
  uint32_t i = 0;
  for (; i + L <= m.n; i += L) W::store(m.out + i, fused_madd(W::load(m.a + i), W::load(m.x + i), W::load(m.acc + i)));
  for (; i < m.n; ++i) m.out[i] = fused_madd(m.a[i], m.x[i], m.acc[i]);
}
CACT_VEC_DISPATCH(madd, Madd)

}  // namespace

TEST_CASE("fused_madd rounds once, like std::fma, in every vector width") {
  const uint32_t n = 1000;
  std::mt19937 rng(5);
  const std::vector<float> a = random_vector(rng, n), x = random_vector(rng, n), acc = random_vector(rng, n);
  std::vector<float> want(n);
  uint32_t unfused_differs = 0;
  for (uint32_t i = 0; i < n; ++i) {
    want[i] = std::fma(a[i], x[i], acc[i]);
    volatile float product = a[i] * x[i];  // rounded on its own
    unfused_differs += float(product + acc[i]) != want[i] ? 1u : 0u;
  }
  CHECK(unfused_differs > 10);  // the inputs tell a fused from an unfused multiply-add
  for (VecIsa isa : widths()) {
    CAPTURE(vec_isa_name(isa));
    std::vector<float> got(n);
    madd<float>(isa, {a.data(), x.data(), acc.data(), got.data(), n});
    CHECK(same_bits(got, want));
  }
}

TEST_CASE("scaled_dot adds in index order and scale_by rounds as written (engram α, embedding scale)") {
  std::mt19937 rng(11);
  for (const uint32_t n : {0u, 1u, 31u, 32u, 33u, 768u, 1001u}) {
    CAPTURE(n);
    // Magnitudes over 2^±20, so that another order of the sum gives other bits.
    std::vector<float> a = random_vector(rng, n), b = random_vector(rng, n);
    std::uniform_int_distribution<int> exponent(-20, 20);
    for (float& v : a) v = std::ldexp(v, exponent(rng));
    const double ra = 0.7310585786300049, rb = 1.3862943611198906;
    double want = 0.0;
    for (uint32_t i = 0; i < n; ++i) {
      volatile double term = double(a[i]) * ra * double(b[i]) * rb;  // rounded on its own (aarch64 GCC would fuse)
      want += term;
    }
    CHECK(scaled_dot(a.data(), ra, b.data(), rb, n) == want);
    std::vector<float> scaled = a;
    scale_by(scaled.data(), ra, n);
    for (uint32_t i = 0; i < n; ++i) CHECK(scaled[i] == float(double(a[i]) * ra));
  }
}

TEST_CASE("hadamard MLP: a batch equals token by token, every width gives the same bits, float32 near double") {
  for (const Archive& a : archives()) {
    CAPTURE(a.name);
    const cact::Engine engine(a.model);
    const Weights& w = weights_of(engine);
    const bool untied = a.model.canon().block_untied();
    std::mt19937 rng(11);
    const uint32_t count = 7;
    const auto m = random_vector(rng, size_t(count) * w.g.D);
    for (const bool f32 : {true, false}) {
      CAPTURE(f32);
      const auto mlp = [&](uint32_t batch, VecIsa isa) {
        return f32 ? mlp_outputs<float>(w, untied, m, count, batch, isa)
                   : mlp_outputs<double>(w, untied, m, count, batch, isa);
      };
      const std::vector<float> one = mlp(1, VecIsa::base);
      for (const VecIsa isa : widths()) {
        CAPTURE(vec_isa_name(isa));
        CHECK(same_bits(one, mlp(1, isa)));
        CHECK(same_bits(one, mlp(4, isa)));
        CHECK(same_bits(one, mlp(count, isa)));
      }
    }
    // The int8 path's float sums against the reference's double sums: relative rms < 2e-6.
    const auto f = mlp_outputs<float>(w, untied, m, count, count, vec_isa());
    const auto d = mlp_outputs<double>(w, untied, m, count, count, vec_isa());
    double err = 0.0, ref = 0.0;
    for (size_t i = 0; i < f.size(); ++i) {
      err += (double(f[i]) - d[i]) * (double(f[i]) - d[i]);
      ref += double(d[i]) * d[i];
    }
    const double rel = std::sqrt(err / ref);
    MESSAGE(a.name << ": Hadamard MLP, float vs double accumulation, relative rms " << rel);
    CHECK(rel < 2e-6);
  }
}

TEST_CASE("hada_factor: float sums against the direct formula; skipped zero rows and unread outputs are exact") {
  std::mt19937 rng(3);
  for (const bool untied : {false, true}) {
    const uint32_t ba = 8, bb = 16;
    auto w = random_vector(rng, ba * bb);
    const auto A = random_vector(rng, untied ? bb * ba * ba : ba * ba);
    const auto B = random_vector(rng, untied ? ba * bb * bb : bb * bb);
    for (uint32_t i = 5 * bb; i < ba * bb; ++i) w[i] = 0.0f;  // rows 5.. of W are zero
    for (const VecIsa isa : widths()) {
      std::vector<float> full(ba * bb), part(ba * bb, -1.0f), tmp(ba * bb);
      hada_factor<float>(w.data(), A.data(), B.data(), ba, bb, untied, full.data(), tmp.data(), nullptr, 0, 0, isa);
      hada_factor<float>(w.data(), A.data(), B.data(), ba, bb, untied, part.data(), tmp.data(), nullptr, 5, 3, isa);
      CHECK(std::memcmp(full.data(), part.data(), 3 * bb * sizeof(float)) == 0);
      for (uint32_t k = 0; k < ba; ++k) {
        for (uint32_t l = 0; l < bb; ++l) {
          double want = 0.0;
          for (uint32_t i = 0; i < ba; ++i) {
            for (uint32_t j = 0; j < bb; ++j) {
              const double a = untied ? A[(size_t(j) * ba + i) * ba + k] : A[i * ba + k];
              const double b = untied ? B[(size_t(k) * bb + j) * bb + l] : B[j * bb + l];
              want += double(w[i * bb + j]) * a * b;
            }
          }
          CHECK(full[k * bb + l] == doctest::Approx(want).epsilon(1e-4).scale(8.0));
        }
      }
    }
  }
}

TEST_CASE("hada_factor in float: every output is one chain of fused multiply-adds in index order") {
  // The contract every width and every tile (NEON's by-lane ones too) keeps:
  // tmp[k][j] = fma chain over i of A[i][k]·W[i][j] from +0, then
  // out[k][l] = fma chain over j of tmp[k][j]·B[j][l] from +0.
  std::mt19937 rng(5);
  struct Shape {
    uint32_t ba, bb, rows_in, rows_out;
  };
  for (const Shape sh :
       {Shape{32, 32, 0, 0}, Shape{32, 32, 24, 24}, Shape{8, 16, 5, 3}, Shape{12, 20, 0, 0}, Shape{16, 18, 13, 0}}) {
    const uint32_t ba = sh.ba, bb = sh.bb, rin = sh.rows_in ? sh.rows_in : ba, rout = sh.rows_out ? sh.rows_out : ba;
    auto w = random_vector(rng, ba * bb);
    for (uint32_t i = rin * bb; i < ba * bb; ++i) w[i] = 0.0f;
    const auto A = random_vector(rng, ba * ba);
    const auto B = random_vector(rng, bb * bb);
    std::vector<float> want_tmp(size_t(ba) * bb), want(size_t(ba) * bb);
    for (uint32_t k = 0; k < rout; ++k) {
      for (uint32_t j = 0; j < bb; ++j) {
        float sum = 0.0f;
        for (uint32_t i = 0; i < rin; ++i) sum = std::fma(A[i * ba + k], w[i * bb + j], sum);
        want_tmp[k * bb + j] = sum;
      }
      for (uint32_t l = 0; l < bb; ++l) {
        float sum = 0.0f;
        for (uint32_t j = 0; j < bb; ++j) sum = std::fma(want_tmp[k * bb + j], B[j * bb + l], sum);
        want[k * bb + l] = sum;
      }
    }
    for (const VecIsa isa : widths()) {
      INFO("ba " << ba << " bb " << bb << " rows " << rin << "/" << rout << " width " << int(isa));
      std::vector<float> got(size_t(ba) * bb), tmp(size_t(ba) * bb);
      hada_factor<float>(w.data(), A.data(), B.data(), ba, bb, false, got.data(), tmp.data(), nullptr, sh.rows_in,
                         sh.rows_out, isa);
      CHECK(std::memcmp(got.data(), want.data(), size_t(rout) * bb * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("silu_approx against the double function") {
  double worst_silu = 0.0;
  for (int i = -870000; i <= 880000; i += 7) {
    const float x = float(i) * 1e-4f;
    const double s = double(x) / (1.0 + std::exp(-double(x)));
    worst_silu = std::max(worst_silu, std::fabs(double(silu_approx(x)) - s) / std::max(std::fabs(s), 1e-30));
  }
  MESSAGE("silu_approx max relative error " << worst_silu);
  CHECK(worst_silu < 1e-6);
  CHECK(silu_approx(-1000.0f) == doctest::Approx(0.0));
  CHECK(silu_approx(1000.0f) == 1000.0f);
}

TEST_CASE("sinkhorn in the exponential domain equals the log-domain iteration; underflow falls back") {
  std::mt19937 rng(9);
  for (const uint32_t n : {2u, 3u, 4u, 16u}) {
    for (int trial = 0; trial < 20; ++trial) {
      const auto r = random_vector(rng, n * n, 3.0f);
      std::vector<double> a(r.begin(), r.end()), b = a;
      sinkhorn(a.data(), n);
      sinkhorn_exp(b.data(), n);
      for (size_t i = 0; i < a.size(); ++i) CHECK(b[i] == doctest::Approx(a[i]).epsilon(1e-12));
    }
  }
  // Column 0 is ~1000 below its rows' maxima: exp underflows, the log domain copes.
  double a[9] = {-1000, 0, 1, -1001, 2, 0, -999, 1, 1};
  double b[9];
  std::copy(a, a + 9, b);
  sinkhorn(a, 3);
  sinkhorn_exp(b, 3);
  for (int i = 0; i < 9; ++i) CHECK(b[i] == a[i]);
  double col = 0.0;
  for (int i = 0; i < 3; ++i) col += b[i * 3];
  CHECK(col == doctest::Approx(1.0));
}

TEST_CASE("sinkhorn of 4x4 matrices side by side: each matrix gets sinkhorn_exp's bits, underflow included") {
  std::mt19937 rng(12);
  for (uint32_t count = 1; count <= kMhcTokens; ++count) {
    CAPTURE(count);
    std::vector<std::vector<double>> lanes(count), want(count);
    std::vector<double*> ptrs(count);
    for (uint32_t t = 0; t < count; ++t) {
      const auto r = random_vector(rng, 16, 6.0f);
      lanes[t].assign(r.begin(), r.end());
      // Every third matrix (which ones shifts with count, so that every lane
      // has one) has a column ~1000 below its rows' maxima: exp underflows
      // there and that matrix alone takes the log-domain iteration.
      if ((t + count) % 3 == 0) {
        for (uint32_t i = 0; i < 4; ++i) lanes[t][i * 4] -= 1000.0;
      }
      want[t] = lanes[t];
      sinkhorn_exp(want[t].data(), 4);
      ptrs[t] = lanes[t].data();
    }
    sinkhorn_exp4_tokens(ptrs.data(), count);
    for (uint32_t t = 0; t < count; ++t) {
      CAPTURE(t);
      CHECK(std::memcmp(lanes[t].data(), want[t].data(), 16 * sizeof(double)) == 0);
    }
  }
}

TEST_CASE("mHC lanes: double sums equal the direct formula bit for bit, float (fused) within 1e-6; widths agree") {
  std::mt19937 rng(4);
  for (const uint32_t n : {2u, 3u, 4u}) {
    CAPTURE(n);
    const uint32_t D = 37;  // a vector part and a scalar tail in every width
    const auto X0 = random_vector(rng, n * D), u = random_vector(rng, D), u_in = random_vector(rng, D);
    const auto P = random_vector(rng, n * n, 0.3f), hpre = random_vector(rng, n), hpost = random_vector(rng, n);
    // The direct double formulation, unvectorised.
    std::vector<float> want_u(D), want_X(n * D), want_cell(D);
    for (uint32_t d = 0; d < D; ++d) {
      double s = 0.0;
      for (uint32_t j = 0; j < n; ++j) s += double(hpre[j]) * double(X0[j * D + d]);
      want_u[d] = float(s);
      double c = 0.0;
      for (uint32_t i = 0; i < n; ++i) {
        double t = double(hpost[i]) * (double(u[d]) - double(u_in[d]));
        for (uint32_t j = 0; j < n; ++j) t += double(P[i * n + j]) * double(X0[j * D + d]);
        want_X[i * D + d] = float(t);
        c += double(want_X[i * D + d]);
      }
      want_cell[d] = float(c / double(n));
    }
    std::vector<float> f32_X, f32_cell, f32_u;
    for (const VecIsa isa : widths()) {
      CAPTURE(vec_isa_name(isa));
      std::vector<float> got_u(D);
      mhc_pre(n, D, X0.data(), hpre.data(), got_u.data(), false, isa);
      CHECK(same_bits(got_u, want_u));
      mhc_pre(n, D, X0.data(), hpre.data(), got_u.data(), true, isa);
      if (f32_u.empty()) f32_u = got_u;
      CHECK(same_bits(got_u, f32_u));
      for (size_t d = 0; d < D; ++d) CHECK(got_u[d] == doctest::Approx(want_u[d]).epsilon(1e-6).scale(1.0));
      for (const bool f32 : {false, true}) {
        std::vector<float> X = X0, cell(D);
        mhc_post(n, D, X.data(), P.data(), hpost.data(), u.data(), u_in.data(), cell.data(), f32, isa);
        if (!f32) {
          CHECK(same_bits(X, want_X));
          CHECK(same_bits(cell, want_cell));
          continue;
        }
        if (f32_X.empty()) {
          f32_X = X;
          f32_cell = cell;
        }
        CHECK(same_bits(X, f32_X));
        CHECK(same_bits(cell, f32_cell));
        for (size_t i = 0; i < X.size(); ++i) {
          CHECK(X[i] == doctest::Approx(want_X[i]).epsilon(1e-6).scale(1.0));
        }
      }
    }
  }
}

TEST_CASE("int8 logits do not depend on the vector width, nor on threads or chunking") {
  const auto run = [](const cact::Engine& engine, VecIsa cap, uint32_t threads, uint32_t chunk) {
    cap_session_vec_isa(cap);
    cact::SessionOptions so;
    so.threads = threads;
    so.max_chunk = chunk;
    so.context = 128;
    cact::Session s(engine, so);
    cap_session_vec_isa(VecIsa::avx512);
    std::vector<int32_t> ids;
    for (int i = 0; i < 40; ++i) ids.push_back(int32_t((i * 53 + 7) % engine.output_rows()));
    std::vector<float> out = s.prefill_all(ids);
    for (int i = 0; i < 3; ++i) {
      const auto lg = s.step(ids[size_t(i)]);
      out.insert(out.end(), lg.begin(), lg.end());
    }
    return out;
  };
  for (const Archive& a : archives()) {
    CAPTURE(a.name);
    const cact::Engine engine(a.model);
    const std::vector<float> best = run(engine, VecIsa::avx512, 1, 32);
    CHECK(same_bits(best, run(engine, VecIsa::base, 1, 32)));
    if (vec_isa() > VecIsa::avx2) CHECK(same_bits(best, run(engine, VecIsa::avx2, 2, 5)));
    CHECK(same_bits(best, run(engine, VecIsa::base, 3, 9)));
  }
}
