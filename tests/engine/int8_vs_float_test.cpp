// The CQ-W2A8 path (int8 activations, int8 KV cache) against the float path.
// The bound (docs/ENGINE.md "Tolerances"): on these prompts, per position,
// max_i |int8 - float| logit < 1.0 and on average < 12% of the logits' spread
// (std over the vocabulary); top-1 agrees at >= 97% of positions; every cell
// row is within 3% relative rms.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "cact/engine.h"
#include "cact/sampler.h"
#include "cact/tokenizer.h"
#include "support/test_paths.h"

namespace {
std::string corpus_excerpt(size_t offset, size_t bytes) {
  std::ifstream in(cact::test::models_dir() / "corpus.txt");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str().substr(offset, bytes);
}
}  // namespace

TEST_CASE("int8 path stays close to the float path") {
  const auto model = cact::Model::open(cact::test::models_dir() / "license-tiny.cact");
  const cact::Tokenizer tok = cact::Tokenizer::from_blob(model.tokenizer_blob());
  cact::Engine ref(model, {cact::Numerics::reference, nullptr});
  const std::vector<std::string> prompts{"This program is free software", "Licensed under the Apache License",
                                         corpus_excerpt(1000, 600), corpus_excerpt(50000, 900)};
  // The float side once per prompt; then the scalar table (the oracle) and the best one.
  struct Float {
    std::vector<int32_t> ids;
    std::vector<float> logits, cells;
  };
  std::vector<Float> floats;
  for (const std::string& p : prompts) {
    Float f;
    f.ids.push_back(2);
    for (int32_t id : tok.encode(p)) f.ids.push_back(id);
    cact::Session a(ref, {.keep_cells = true});
    f.logits = a.prefill_all(f.ids);
    f.cells.assign(a.cells().begin(), a.cells().end());
    floats.push_back(std::move(f));
  }
  std::vector<const cact::kernels::KernelTable*> tables{&cact::kernels::scalar_kernels()};
  if (&cact::kernels::best_kernels() != tables[0]) tables.push_back(&cact::kernels::best_kernels());
  for (const cact::kernels::KernelTable* table : tables) {
    cact::Engine q8(model, {cact::Numerics::int8, table});
    double worst = 0.0, worst_rel = 0.0, sum_rel = 0.0, worst_cell = 0.0;
    size_t positions = 0, top1_agree = 0;
    for (const Float& f : floats) {
      const std::vector<int32_t>& ids = f.ids;
      cact::Session b(q8, {.keep_cells = true});
      const auto& fa = f.logits;
      const auto fb = b.prefill_all(ids);
      const uint32_t D = ref.header().d_model, R = ref.header().num_layers + 1;
      for (uint32_t r = 0; r < R; ++r) {
        double num = 0.0, den = 0.0;
        for (size_t t = 0; t < ids.size(); ++t) {
          for (uint32_t d = 0; d < D; ++d) {
            const double x = f.cells[(t * R + r) * D + d], y = b.cells()[(t * R + r) * D + d];
            num += (x - y) * (x - y);
            den += x * x;
          }
        }
        worst_cell = std::max(worst_cell, std::sqrt(num / den));
      }
      const size_t V = ref.output_rows();
      for (size_t t = 0; t < ids.size(); ++t) {
        std::span<const float> la(fa.data() + t * V, V), lb(fb.data() + t * V, V);
        double maxabs = 0.0, spread = 0.0, mean = 0.0;
        for (size_t i = 0; i < V; ++i) mean += la[i];
        mean /= double(V);
        for (size_t i = 0; i < V; ++i) {
          maxabs = std::max(maxabs, double(std::fabs(la[i] - lb[i])));
          spread += (la[i] - mean) * (la[i] - mean);
        }
        spread = std::sqrt(spread / double(V));
        worst = std::max(worst, maxabs);
        worst_rel = std::max(worst_rel, maxabs / spread);
        sum_rel += maxabs / spread;
        top1_agree += cact::argmax(la) == cact::argmax(lb);
        ++positions;
      }
    }
    MESSAGE(std::string(table->name) << ": " << positions << " positions, max |int8 - float| logit " << worst
                                     << ", max / logit std " << worst_rel << ", mean " << sum_rel / double(positions)
                                     << ", top-1 agreement " << top1_agree << "/" << positions
                                     << ", worst cell rel rms " << worst_cell);
    CHECK(worst < 1.0);
    CHECK(sum_rel / double(positions) < 0.12);
    CHECK(double(top1_agree) >= 0.97 * double(positions));
    CHECK(worst_cell < 0.03);
  }
}
