// CACT_ISA: one level per kernel table, capping what the kernels and the
// engine may use; an unknown name is an error that lists the valid ones.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "base/cpu_features.h"
#include "cact/error.h"
#include "cact/kernels.h"

namespace {

cact::CpuFeatures everything() {
  cact::CpuFeatures f;
  f.avx2 = f.fma = f.f16c = f.avx_vnni = true;
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512vnni = f.avx512vbmi = f.amx_int8 = true;
  f.neon = f.dotprod = true;
  return f;
}

bool any(const cact::CpuFeatures& f) {
  return f.avx2 || f.fma || f.f16c || f.avx_vnni || f.avx512f || f.avx512bw || f.avx512vl || f.avx512vnni ||
         f.avx512vbmi || f.amx_int8 || f.neon || f.dotprod;
}

}  // namespace

TEST_CASE("CACT_ISA levels: scalar first, and every table this CPU runs is one") {
  const auto levels = cact::isa_levels();
  REQUIRE(!levels.empty());
  CHECK(levels.front() == "scalar");
  for (const cact::kernels::KernelTable* t : cact::kernels::available_kernels()) {
    CAPTURE(t->name);
    CHECK(std::find(levels.begin(), levels.end(), std::string_view(t->name)) != levels.end());
  }
}

TEST_CASE("CACT_ISA caps: scalar leaves nothing, each level keeps what is below it") {
  CHECK(!any(cact::capped_features(everything(), "scalar")));
  const auto levels = cact::isa_levels();
  const cact::CpuFeatures top = cact::capped_features(everything(), levels.back());
  CHECK(any(top));
#if defined(__x86_64__)
  const cact::CpuFeatures avx2 = cact::capped_features(everything(), "avx2");
  CHECK((avx2.avx2 && avx2.fma && avx2.f16c));
  CHECK((!avx2.avx_vnni && !avx2.avx512f && !avx2.avx512vnni && !avx2.amx_int8));
  const cact::CpuFeatures vnni512 = cact::capped_features(everything(), "avx512-vnni");
  CHECK((vnni512.avx512f && vnni512.avx512bw && vnni512.avx512vl && vnni512.avx512vnni));
  CHECK((!vnni512.avx512vbmi && !vnni512.amx_int8));
  CHECK(top.amx_int8);
#elif defined(__aarch64__)
  const cact::CpuFeatures neon = cact::capped_features(everything(), "neon");
  CHECK((neon.neon && !neon.dotprod));
  CHECK(top.dotprod);
#endif
}

TEST_CASE("CACT_ISA: an unknown name is an error naming the valid ones") {
  std::string message;
  try {
    cact::capped_features(everything(), "avx9");
  } catch (const cact::Error& e) {
    message = e.what();
  }
  CHECK(message.find("CACT_ISA=\"avx9\"") != std::string::npos);
  for (std::string_view level : cact::isa_levels()) {
    CAPTURE(level);
    CHECK(message.find(level) != std::string::npos);
  }
}
