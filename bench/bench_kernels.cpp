// Kernel benchmark: every table usable on this CPU, one thread, on the CQ2
// and CQ4 matrices of a small LM ([768, 768] and [1024, 768]): matvec (one
// activation vector, decode) and a 16-vector matmul (prefill; also 128
// vectors for the first matrix); matvecs over ~6.5 MB of weights (streamed
// from beyond L2, as in a real decode step); the activation quantiser and
// dequantize_row (the engine's per-token embedding and engram rows). Prints time per call, GB/s of weight bytes (packed
// indices + FP16 norms) streamed per call, GMAC/s, and the speed-up over the scalar table from the same run.
//
//   bench_kernels [--min-time SECONDS] [--tables NAME,NAME...] [--decode | --prefill | --peak | --once]
//     --min-time  per measurement (default 0.25)
//     --tables    only these tables (and always scalar, the reference of "x scalar"
//                 unless --decode is given)
//     --decode    the decode set instead: one vector, the matrix shapes of a decode
//                 step ([768, 768], [2304, 768], [768, 3072] CQ2, [8192, 768] CQ4,
//                 the 4- and 24-row [n, 3072] CQ4 slices of the mHC Phi matrices),
//                 each resident in L2 (the same matrix every call) and streamed
//                 (copies of it cycled so that >= 48 MB pass between reuses), plus
//                 the 1-vector activation quantiser and dequantize_row
//     --prefill   the prefill set instead: [768, 768], [2304, 768], [768, 3072],
//                 CQ2 and CQ4, and the [4, 3072] and [8, 3072] CQ4 slices of the
//                 mHC Phi tasks, 16 / 32 / 64 vectors, the SIMD tables (no scalar:
//                 too slow), "x vnni" = speed-up over avx512-vnni
//     --peak      MACs per cycle against the ISA's peak: the core clock (a chain of
//                 dependent multiplies), each SIMD table's dot-product instruction at full
//                 throughput, and the table's products at the prefill shape
//                 ([768, 3072] CQ2, 64 vectors) and the decode shape ([768, 768] CQ2,
//                 one vector, in L2), as MACs per cycle and their fraction of the peak
//     --once      one product of each --peak shape per SIMD table, between calls of
//                 count_marker(), on matrices of random indices (no quantiser), and no
//                 timing: for instruction counts under an emulator (bench/count_neon.sh)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "cact/codec.h"
#include "cact/kernels.h"
#include "count_marker.h"
#include "isa_peak.h"
#include "thread_seconds.h"

namespace {

using cact::bench::count_marker;
using cact::bench::thread_seconds;
using cact::kernels::KernelTable;
using cact::kernels::QuantizedActivations;
namespace codec = cact::codec;

double g_min_time = 0.25;
volatile float g_sink = 0.0f;

// Seconds per call of each of `fns` (one per table): calls are batched until
// a batch takes >= 1/5 of the minimum time; then 5 rounds run every table's
// batch in turn and the best batch of each is kept, so a disturbance hits all
// tables alike and the speed-up ratios come from the same conditions.
template <class Fn>
std::vector<double> seconds_per_call(std::vector<Fn>& fns) {
  std::vector<long> reps(fns.size(), 1);
  for (size_t t = 0; t < fns.size(); ++t) {
    fns[t]();  // warm caches and scratch buffers
    for (;;) {
      const double t0 = thread_seconds();
      for (long i = 0; i < reps[t]; ++i) fns[t]();
      if (thread_seconds() - t0 >= g_min_time / 5) break;
      reps[t] *= 2;
    }
  }
  std::vector<double> best(fns.size(), 1e30);
  for (int round = 0; round < 5; ++round) {
    for (size_t t = 0; t < fns.size(); ++t) {
      const double t0 = thread_seconds();
      for (long i = 0; i < reps[t]; ++i) fns[t]();
      best[t] = std::min(best[t], (thread_seconds() - t0) / double(reps[t]));
    }
  }
  return best;
}

std::string cpu_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

// A blob copy at a 64-byte aligned address, as blobs are in an archive
// (FORMAT.md); a std::vector of this size sits 16 bytes past a page boundary.
struct AlignedBlob {
  std::vector<uint8_t> storage;
  size_t offset = 0, size = 0;
  AlignedBlob() = default;
  explicit AlignedBlob(const std::vector<uint8_t>& blob) : storage(blob.size() + 64), size(blob.size()) {
    offset = (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
    std::memcpy(storage.data() + offset, blob.data(), size);
  }
  std::span<const uint8_t> span() const { return {storage.data() + offset, size}; }
};

struct Matrix {
  std::string label;
  uint32_t out, in, bits;
  AlignedBlob blob;
  codec::CqMatrix m;
  cact::kernels::Int8Codebook cb;
};

// Copies of a matrix's blob cycled call by call, so that every call streams
// its weights from beyond L2 (as a decode step does).
struct Copies {
  std::vector<AlignedBlob> blobs;
  std::vector<codec::CqMatrix> views;
  size_t next = 0;
  Copies(const AlignedBlob& blob, uint32_t out, uint32_t in, uint32_t bits, size_t total_bytes) {
    const size_t n = std::max<size_t>(2, total_bytes / blob.size + 1);
    const std::vector<uint8_t> bytes(blob.span().begin(), blob.span().end());
    for (size_t i = 0; i < n; ++i) blobs.emplace_back(bytes);
    for (auto& b : blobs) views.push_back(codec::view_matrix(b.span(), out, in, bits));
  }
  const codec::CqMatrix& take() {
    const codec::CqMatrix& m = views[next];
    next = next + 1 == views.size() ? 0 : next + 1;
    return m;
  }
};

bool table_wanted(const KernelTable* t, const std::string& wanted, bool keep_scalar) {
  if (wanted.empty() || (keep_scalar && std::strcmp(t->name, "scalar") == 0)) return true;
  size_t pos = 0;
  while (pos <= wanted.size()) {
    const size_t comma = std::min(wanted.find(',', pos), wanted.size());
    if (wanted.compare(pos, comma - pos, t->name) == 0) return true;
    pos = comma + 1;
  }
  return false;
}

// A Matrix over a copy of `blob`, with its label and int8 codebook.
Matrix matrix_of(uint32_t out, uint32_t in, uint32_t bits, const std::vector<uint8_t>& blob) {
  char label[64];  // (snprintf, not string +: GCC 12 -Wrestrict false positive at -O3)
  std::snprintf(label, sizeof label, "[%u, %u] CQ%u", out, in, bits);
  Matrix mx{label, out, in, bits, AlignedBlob(blob), {}, {}};
  mx.m = codec::view_matrix(mx.blob.span(), out, in, bits);
  mx.cb = cact::kernels::make_int8_codebook(codec::codebook_for(bits, codec::standard_codebooks()), bits);
  return mx;
}

// A matrix of random packed indices and unit norms: what the kernels read, made
// without the quantiser (whose cost would swamp an emulator's instruction count).
Matrix random_matrix(uint32_t out, uint32_t in, uint32_t bits, std::mt19937& rng) {
  std::vector<uint8_t> bytes(codec::blob_bytes(out, in, bits, codec::kGroup));
  for (auto& b : bytes) b = uint8_t(rng());
  const codec::CqMatrix view = codec::view_matrix(bytes, out, in, bits);
  const size_t norms_at = size_t(view.norms - bytes.data()), norms = size_t(out) * view.groups_per_row();
  for (size_t k = 0; k < norms; ++k) bytes[norms_at + 2 * k] = 0x00, bytes[norms_at + 2 * k + 1] = 0x3C;  // FP16 1.0
  return matrix_of(out, in, bits, bytes);
}

// A matrix of normal weights (sd 0.05) through the quantiser.
Matrix make_matrix(uint32_t out, uint32_t in, uint32_t bits, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 0.05f);
  std::vector<float> w(size_t(out) * in);
  for (auto& v : w) v = nd(rng);
  const auto codebook = codec::codebook_for(bits, codec::standard_codebooks());
  return matrix_of(out, in, bits, codec::quantize_matrix(w.data(), out, in, bits, codebook));
}

// Seconds per cq_matmul of each table: the whole matrix times `count` random activation vectors.
std::vector<double> seconds_per_product(const std::vector<const KernelTable*>& tables, const Matrix& mx, uint32_t count,
                                        std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(size_t(mx.in) * count);
  for (auto& v : x) v = nd(rng);
  std::vector<float> y(size_t(mx.out) * count);
  std::vector<QuantizedActivations> acts(tables.size());
  std::vector<std::function<void()>> fns;
  for (size_t i = 0; i < tables.size(); ++i) {
    tables[i]->quantize_activations(x.data(), mx.in, count, acts[i]);
    fns.emplace_back([&, i] {
      tables[i]->cq_matmul(mx.m, mx.cb, acts[i], 0, mx.out, y.data(), mx.out);
      g_sink = g_sink + y[0];
    });
  }
  return seconds_per_call(fns);
}

// Multi-vector products of a prefill chunk on the SIMD tables (AMX among them).
void bench_prefill(const std::vector<const KernelTable*>& tables, std::mt19937& rng) {
  size_t ref = 0;
  for (size_t i = 0; i < tables.size(); ++i) {
    if (std::strcmp(tables[i]->name, "avx512-vnni") == 0) ref = i;
  }
  std::printf("%-18s %-7s %-13s %10s %9s %9s\n", "matrix", "vectors", "table", "us/call", "GMAC/s", "x vnni");
  // The last two: the 4- and 8-row CQ4 slices a prefill chunk's mHC Phi tasks run (Linear::apply_small).
  const uint32_t shapes[][3] = {{768, 768, 2},  {2304, 768, 2}, {768, 3072, 2}, {768, 768, 4},
                                {2304, 768, 4}, {768, 3072, 4}, {4, 3072, 4},   {8, 3072, 4}};
  for (const auto& shape : shapes) {
    const Matrix mx = make_matrix(shape[0], shape[1], shape[2], rng);
    for (uint32_t count : {16u, 32u, 64u}) {
      const auto secs = seconds_per_product(tables, mx, count, rng);
      for (size_t i = 0; i < tables.size(); ++i) {
        const double macs = double(mx.out) * mx.m.in_pad * count;
        std::printf("%-18s %-7u %-13s %10.1f %9.2f %9.2f\n", mx.label.c_str(), count, tables[i]->name, secs[i] * 1e6,
                    macs / secs[i] / 1e9, secs[ref] / secs[i]);
      }
    }
  }
}

void bench_once(const std::vector<const KernelTable*>& tables, std::mt19937& rng) {
  struct Shape {
    uint32_t out, in, count;
  };
  for (const Shape& sh : {Shape{768, 3072, 64}, Shape{768, 768, 1}}) {
    const Matrix mx = random_matrix(sh.out, sh.in, 2, rng);
    std::vector<float> x(size_t(sh.in) * sh.count), y(size_t(sh.out) * sh.count);
    for (auto& v : x) v = float(int(rng() % 255) - 127) / 64.0f;
    for (const KernelTable* t : tables) {
      QuantizedActivations a;
      t->quantize_activations(x.data(), sh.in, sh.count, a);
      std::printf("product %s x %u on %s\n", mx.label.c_str(), sh.count, t->name);
      std::fflush(stdout);
      count_marker("begin");
      t->cq_matmul(mx.m, mx.cb, a, 0, mx.out, y.data(), mx.out);
      count_marker("end");
      g_sink = g_sink + y[0];
    }
  }
}

// --peak: each table's products in MACs per cycle against its instruction's peak.
// The 1-vector products of avx512-amx run avx512-vnni's code, so their peak is
// that of vpdpbusd zmm.
void bench_peak(const std::vector<const KernelTable*>& tables, std::mt19937& rng) {
  const double hz = cact::bench::cycles_per_second();
  std::printf("core clock: %.2f GHz (a chain of dependent integer operations, thread CPU time)\n\n", hz / 1e9);
  std::printf("%-13s %-24s %9s %-26s %9s %7s\n", "table", "peak instruction", "MAC/cyc", "product", "MAC/cyc",
              "of peak");
  const Matrix prefill = make_matrix(768, 3072, 2, rng), decode = make_matrix(768, 768, 2, rng);
  const auto prefill_secs = seconds_per_product(tables, prefill, 64, rng);
  const auto decode_secs = seconds_per_product(tables, decode, 1, rng);
  for (size_t i = 0; i < tables.size(); ++i) {
    const std::string name = tables[i]->name;
    const cact::bench::IsaPeak peak = cact::bench::isa_peak(name);
    const cact::bench::IsaPeak matvec_peak = name == "avx512-amx" ? cact::bench::isa_peak("avx512-vnni") : peak;
    const auto row = [&](const Matrix& mx, uint32_t count, double secs, const cact::bench::IsaPeak& pk) {
      const double per_cycle = double(mx.out) * mx.m.in_pad * count / secs / hz;
      char product[64];
      std::snprintf(product, sizeof product, "%s x %u", mx.label.c_str(), count);
      const double pk_cycle = pk.macs_per_second / hz;
      std::printf("%-13s %-24s %9.1f %-26s %9.1f", name.c_str(), pk.instruction.empty() ? "-" : pk.instruction.c_str(),
                  pk_cycle, product, per_cycle);
      if (pk_cycle > 0.0) std::printf(" %6.0f%%", 100.0 * per_cycle / pk_cycle);
      std::printf("\n");
    };
    row(prefill, 64, prefill_secs[i], peak);
    row(decode, 1, decode_secs[i], matvec_peak);
  }
}

// dequantize_row as a decode step calls it: one embedding row ([8192, 768]
// CQ4, the tied head) and one engram site's six table rows ([18432, 128] CQ2),
// random rows each call. Prints "x scalar" when the scalar table is measured.
void dequantize_rows(const std::vector<const KernelTable*>& tables, std::mt19937& rng) {
  struct Shape {
    uint32_t out, in, bits, rows;
  };
  for (const Shape sh : {Shape{8192, 768, 4, 1}, Shape{18432, 128, 2, 6}}) {
    const Matrix mx = make_matrix(sh.out, sh.in, sh.bits, rng);
    const auto codebook = codec::codebook_for(sh.bits, codec::standard_codebooks());
    std::vector<float> out(sh.in);
    std::vector<std::function<void()>> fns;
    for (size_t i = 0; i < tables.size(); ++i) {
      fns.emplace_back([&, i] {
        for (uint32_t k = 0; k < sh.rows; ++k) {
          tables[i]->dequantize_row(mx.m, codebook.data(), uint32_t(rng() % sh.out), out.data());
          g_sink = g_sink + out[0];
        }
      });
    }
    const auto secs = seconds_per_call(fns);
    char label[64];
    std::snprintf(label, sizeof label, "dequantize_row %s x %u", mx.label.c_str(), sh.rows);
    const bool ratio = std::strcmp(tables[0]->name, "scalar") == 0;
    for (size_t i = 0; i < tables.size(); ++i) {
      std::printf("%-36s %-13s %10.3f", label, tables[i]->name, secs[i] * 1e6);
      if (ratio) std::printf(" %9.2f", secs[0] / secs[i]);
      std::printf("\n");
    }
  }
}

// The decode set (--decode): 1-vector products, L2-resident and streamed.
void decode_set(const std::vector<const KernelTable*>& tables, std::mt19937& rng) {
  struct Shape {
    uint32_t out, in, bits;
  };
  const Shape shapes[] = {{768, 768, 2}, {2304, 768, 2}, {768, 3072, 2}, {8192, 768, 4}, {4, 3072, 4}, {24, 3072, 4}};
  std::printf("%-18s %-9s %-13s %10s %9s %9s\n", "matrix", "weights", "table", "us/call", "GB/s", "GMAC/s");
  for (const Shape& sh : shapes) {
    Matrix mx = make_matrix(sh.out, sh.in, sh.bits, rng);
    Copies copies(mx.blob, sh.out, sh.in, sh.bits, size_t(48) << 20);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x(sh.in);
    for (auto& v : x) v = nd(rng);
    std::vector<float> y(sh.out);
    std::vector<QuantizedActivations> acts(tables.size());
    for (size_t i = 0; i < tables.size(); ++i) tables[i]->quantize_activations(x.data(), sh.in, 1, acts[i]);
    for (bool streamed : {false, true}) {
      std::vector<std::function<void()>> fns;
      for (size_t i = 0; i < tables.size(); ++i) {
        fns.emplace_back([&, i, streamed] {
          tables[i]->cq_matmul(streamed ? copies.take() : mx.m, mx.cb, acts[i], 0, mx.out, y.data(), mx.out);
          g_sink = g_sink + y[0];
        });
      }
      const auto secs = seconds_per_call(fns);
      for (size_t i = 0; i < tables.size(); ++i) {
        const double s = secs[i];
        std::printf("%-18s %-9s %-13s %10.2f %9.2f %9.2f\n", mx.label.c_str(), streamed ? "streamed" : "reused",
                    tables[i]->name, s * 1e6, double(mx.blob.size) / s / 1e9, double(mx.out) * mx.m.in_pad / s / 1e9);
      }
    }
  }
  for (uint32_t in : {768u, 3072u}) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x(in);
    for (auto& v : x) v = nd(rng);
    std::vector<QuantizedActivations> acts(tables.size());
    std::vector<std::function<void()>> fns;
    for (size_t i = 0; i < tables.size(); ++i) {
      fns.emplace_back([&, i] {
        tables[i]->quantize_activations(x.data(), in, 1, acts[i]);
        g_sink = g_sink + acts[i].scale[0];
      });
    }
    const auto secs = seconds_per_call(fns);
    for (size_t i = 0; i < tables.size(); ++i) {
      std::printf("quantize_activations 1 x %-8u %-13s %10.3f\n", in, tables[i]->name, secs[i] * 1e6);
    }
  }
  dequantize_rows(tables, rng);
}

}  // namespace

int main(int argc, char** argv) {
  std::string wanted;
  bool decode = false, prefill = false, peak = false, once = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--min-time") == 0 && i + 1 < argc) {
      g_min_time = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--tables") == 0 && i + 1 < argc) {
      wanted = argv[++i];
    } else if (std::strcmp(argv[i], "--decode") == 0) {
      decode = true;
    } else if (std::strcmp(argv[i], "--prefill") == 0) {
      prefill = true;
    } else if (std::strcmp(argv[i], "--peak") == 0) {
      peak = true;
    } else if (std::strcmp(argv[i], "--once") == 0) {
      once = true;
    } else {
      std::fprintf(stderr,
                   "usage: bench_kernels [--min-time SECONDS] [--tables NAME,NAME...] [--decode | --prefill | --peak | "
                   "--once]\n");
      return 2;
    }
  }
  std::vector<const KernelTable*> tables;
  for (const KernelTable* t : cact::kernels::available_kernels()) {
    if ((prefill || peak || once) && std::strcmp(t->name, "scalar") == 0) continue;
    if (table_wanted(t, wanted, !decode && !prefill)) tables.push_back(t);
  }
  std::mt19937 rng(42);
  if (once) {
    bench_once(tables, rng);
    return 0;
  }
  std::printf("CPU: %s\ntables:", cpu_name().c_str());
  for (const KernelTable* t : tables) std::printf(" %s", t->name);
  std::printf("  (one thread, thread CPU time, best of 5 interleaved rounds, min time %.2f s)\n\n", g_min_time);

  if (decode) {
    decode_set(tables, rng);
    return 0;
  }
  if (prefill) {
    bench_prefill(tables, rng);
    return 0;
  }
  if (peak) {
    bench_peak(tables, rng);
    return 0;
  }
  std::vector<Matrix> matrices;
  for (uint32_t bits : {2u, 4u}) {
    matrices.push_back(make_matrix(768, 768, bits, rng));
    matrices.push_back(make_matrix(1024, 768, bits, rng));
  }
  // Matvecs over ~6.5 MB of weights: more than the L2 of one core, as in a
  // real decode step (the small matrices above stay in L2 across calls).
  const size_t first_streamed = matrices.size();
  matrices.push_back(make_matrix(32768, 768, 2, rng));
  matrices.push_back(make_matrix(16384, 768, 4, rng));

  std::printf("%-18s %-7s %-13s %10s %9s %9s %9s\n", "matrix", "vectors", "table", "us/call", "GB/s", "GMAC/s",
              "x scalar");
  for (const Matrix& mx : matrices) {
    for (uint32_t count : {1u, 16u, 128u}) {
      if (count == 128 && &mx != &matrices.front()) continue;       // one long prefill case
      if (count > 1 && &mx >= &matrices[first_streamed]) continue;  // streamed: matvec only
      const auto secs = seconds_per_product(tables, mx, count, rng);
      for (size_t i = 0; i < tables.size(); ++i) {
        const double s = secs[i];
        const double macs = double(mx.out) * mx.m.in_pad * count;
        std::printf("%-18s %-7u %-13s %10.1f %9.2f %9.2f %9.2f\n", mx.label.c_str(), count, tables[i]->name, s * 1e6,
                    double(mx.blob.size) / s / 1e9, macs / s / 1e9, secs[0] / s);
      }
    }
  }

  std::printf("\n%-32s %-13s %10s %9s\n", "other kernels", "table", "us/call", "x scalar");
  {
    const uint32_t in = 768, count = 16;
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x(size_t(in) * count);
    for (auto& v : x) v = nd(rng);
    std::vector<QuantizedActivations> acts(tables.size());
    std::vector<std::function<void()>> fns;
    for (size_t i = 0; i < tables.size(); ++i) {
      fns.emplace_back([&, i] {
        tables[i]->quantize_activations(x.data(), in, count, acts[i]);
        g_sink = g_sink + acts[i].scale[0];
      });
    }
    const auto secs = seconds_per_call(fns);
    for (size_t i = 0; i < tables.size(); ++i) {
      std::printf("%-32s %-13s %10.2f %9.2f\n", "quantize_activations 16 x 768", tables[i]->name, secs[i] * 1e6,
                  secs[0] / secs[i]);
    }
  }
  dequantize_rows(tables, rng);
  return 0;
}
