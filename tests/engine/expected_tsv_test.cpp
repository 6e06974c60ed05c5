// Greedy continuations of models/expected.tsv, token for token, in both
// numerics (and every kernel table this CPU has, for the int8 path).
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

#include "cact/engine.h"
#include "cact/sampler.h"
#include "cact/tokenizer.h"
#include "support/test_paths.h"

namespace {

struct Line {
  std::string prompt, continuation;
};

std::vector<Line> expected_lines() {
  std::ifstream in(cact::test::models_dir() / "expected.tsv");
  REQUIRE(in.good());
  std::vector<Line> lines;
  std::string line;
  while (std::getline(in, line)) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    lines.push_back({line.substr(0, tab), line.substr(tab + 1)});
  }
  return lines;
}

// Greedy tokens until a prefix decodes to `want` (or 40 tokens); returns that
// prefix's text, or the text of all 40 on a mismatch.
std::string greedy_until(cact::Session& s, const cact::Tokenizer& tok, const std::string& prompt,
                         const std::string& want) {
  std::vector<int32_t> ids{int32_t(tok.model().bos_id)};
  for (int32_t id : tok.encode(prompt)) ids.push_back(id);
  s.reset();
  std::span<const float> logits = s.prefill(ids);
  std::vector<int32_t> gen;
  std::string text;
  for (int i = 0; i < 40; ++i) {
    const int32_t next = cact::argmax(logits.first(tok.size()));
    gen.push_back(next);
    text = tok.decode(gen);
    if (text == want || text.size() >= want.size() + 8) break;
    logits = s.step(next);
  }
  return text;
}

}  // namespace

TEST_CASE("expected.tsv: greedy continuations, float and int8 paths") {
  const auto model = cact::Model::open(cact::test::models_dir() / "license-tiny.cact");
  const cact::Tokenizer tok = cact::Tokenizer::from_blob(model.tokenizer_blob());
  const auto lines = expected_lines();
  REQUIRE(lines.size() >= 6);
  std::vector<cact::EngineOptions> configs{{cact::Numerics::reference, nullptr}};
  for (const cact::kernels::KernelTable* t : cact::kernels::available_kernels())
    configs.push_back({cact::Numerics::int8, t});
  for (const auto& cfg : configs) {
    cact::Engine engine(model, cfg);
    cact::Session s(engine, {.context = 256});
    for (const Line& l : lines) {
      INFO(cact::numerics_name(cfg.numerics) << "/" << engine.kernels().name << ": " << l.prompt);
      CHECK(greedy_until(s, tok, l.prompt, l.continuation) == l.continuation);
    }
  }
}
