// kv_bits 2/3/4: the KV cache as CQ codes (order-64 rotation, FP16 norm,
// codebook of that width). The tiny archive is int8-KV; a copy with the
// header's kv_bits patched exercises the CQ cache (the width always comes
// from the file, never from a runtime flag).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "cact/engine.h"
#include "cact/sampler.h"
#include "cact/tokenizer.h"
#include "support/test_paths.h"

namespace {
std::vector<uint8_t> archive_with_kv_bits(uint32_t bits) {
  std::ifstream in(cact::test::models_dir() / "license-tiny.cact", std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::memcpy(bytes.data() + 4 * 4, &bits, 4);  // header field #4: kv_bits
  return bytes;
}
}  // namespace

TEST_CASE("CQ KV cache (kv_bits 2, 3, 4) stays near the float path") {
  const auto base = cact::Model::open(cact::test::models_dir() / "license-tiny.cact");
  const cact::Tokenizer tok = cact::Tokenizer::from_blob(base.tokenizer_blob());
  std::ifstream in(cact::test::models_dir() / "corpus.txt");
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<int32_t> ids{2};
  for (int32_t id : tok.encode(ss.str().substr(20000, 500))) ids.push_back(id);
  cact::Engine ref(base, {cact::Numerics::reference, nullptr});
  cact::Session rs(ref, {.context = 256});
  const auto want = rs.prefill_all(ids);
  const size_t V = ref.output_rows();
  double previous = 0.0;
  for (uint32_t bits : {4u, 3u, 2u}) {
    const std::vector<uint8_t> bytes = archive_with_kv_bits(bits);
    const auto model = cact::Model::from_bytes(bytes);
    cact::Engine engine(model, {cact::Numerics::int8, nullptr});
    cact::Session s(engine, {.context = 256, .max_chunk = 1});
    double sum = 0.0;
    size_t agree = 0;
    for (size_t t = 0; t < ids.size(); ++t) {
      const auto got = s.step(ids[t]);
      const std::span<const float> w(want.data() + t * V, V);
      double d = 0.0;
      for (size_t i = 0; i < V; ++i) d = std::max(d, double(std::fabs(got[i] - w[i])));
      sum += d;
      agree += cact::argmax(got) == cact::argmax(w);
    }
    const double mean = sum / double(ids.size());
    MESSAGE("kv_bits " << bits << ": mean max|Δlogit| " << mean << ", top-1 agreement " << agree << "/" << ids.size());
    if (bits == 3) {  // full-sequence recompute equals token by token for the CQ cache too
      cact::Session whole(engine, {.context = 256, .max_chunk = 256});
      const auto last = whole.prefill(ids);
      CHECK(std::equal(last.begin(), last.end(), s.logits().begin()));
    }
    CHECK(agree >= ids.size() * (bits == 2 ? 6 : 8) / 10);
    CHECK(mean >= previous * 0.8);  // fewer bits, not much better
    previous = mean;
  }
}
