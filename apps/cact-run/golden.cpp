// --dump-golden: the logits file behind tests/engine/golden_logits_test.cpp.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "cact/atomic_file.h"
#include "cact/error.h"
#include "common/output.h"
#include "common/std_paths.h"
#include "run.h"

namespace cact::run {

namespace {
constexpr size_t kTop = 10;

// One line per position: [[id, logit], ...] for the ten largest logits (ties to the lower id).
std::string top_logits(const std::vector<float>& all, size_t positions, size_t V) {
  std::string text = "[\n";
  std::vector<uint32_t> order(V);
  char buf[64];
  for (size_t t = 0; t < positions; ++t) {
    const float* l = all.data() + t * V;
    std::iota(order.begin(), order.end(), 0u);
    std::partial_sort(order.begin(), order.begin() + long(kTop), order.end(),
                      [&](uint32_t a, uint32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
    text += "  [";
    for (size_t i = 0; i < kTop; ++i) {
      std::snprintf(buf, sizeof buf, "%s[%u, %.9g]", i ? ", " : "", order[i], double(l[order[i]]));
      text += buf;
    }
    text += t + 1 < positions ? "],\n" : "]\n";
  }
  return text + " ]";
}
}  // namespace

void dump_golden(const Model& model, const std::filesystem::path& archive_path, const std::string& archive_name,
                 const std::string& prompt, uint32_t steps, const std::filesystem::path& out) {
  // "-": stdout. A file: refuses the archive as the output before any work.
  std::optional<AtomicFile> file;
  if (!app::is_dash(out.string())) file.emplace(out, std::span<const std::filesystem::path>(&archive_path, 1));
  const Tokenizer tok = Tokenizer::from_blob(model.tokenizer_blob());
  std::vector<int32_t> ids = completion_prompt_ids(tok, prompt);
  const size_t prompt_tokens = ids.size();
  const size_t V = model.header().output_rows();
  if (V < kTop) fail("--dump-golden needs at least 10 output rows");
  Engine ref(model, {Numerics::reference, nullptr});
  // The float path's greedy continuation fixes the positions both paths are scored on.
  {
    Session s(ref);
    std::span<const float> logits = s.prefill(ids);
    for (uint32_t i = 0; i < steps && s.remaining() > 0; ++i) {
      const int32_t next = argmax(logits.first(std::min<size_t>(tok.size(), logits.size())));
      ids.push_back(next);
      if (i + 1 < steps && s.remaining() > 0) logits = s.step(next);
    }
  }
  Engine q8(model, {Numerics::int8, &kernels::scalar_kernels()});
  Session a(ref), b(q8);
  const std::vector<float> fa = a.prefill_all(ids), fb = b.prefill_all(ids);
  const nlohmann::ordered_json ids_json = ids;
  std::string text = "{\n";
  text += " \"schema\": \"cact-golden-logits/1\",\n";
  text += " \"archive\": " + nlohmann::ordered_json(archive_name).dump() + ",\n";
  text += " \"prompt\": " + nlohmann::ordered_json(prompt).dump() + ",\n";
  text += " \"prompt_tokens\": " + std::to_string(prompt_tokens) + ",\n";
  text += " \"ids\": " + ids_json.dump() + ",\n";
  text += " \"top\": " + std::to_string(kTop) + ",\n";
  text += " \"float\": " + top_logits(fa, ids.size(), V) + ",\n";
  text += " \"int8_scalar\": " + top_logits(fb, ids.size(), V);
  // Probe heads over every id: their `out` vectors, float and int8.
  if (model.canon().has_heads()) {
    nlohmann::ordered_json heads;
    for (const HeadLayout& h : model.canon().heads()) {
      heads["float"][head_kind_name(h.kind)] = a.head_output(h.kind);
      heads["int8_scalar"][head_kind_name(h.kind)] = b.head_output(h.kind);
    }
    text += ",\n \"heads\": " + heads.dump();
  }
  text += "\n}\n";
  if (!file) {
    app::write_out(text);
    return;
  }
  file->write({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  file->commit();
  app::wrote(out.string(),
             std::to_string(ids.size()) + " positions, float and int8 top-" + std::to_string(kTop) + " logits");
}

}  // namespace cact::run
