// A re-run against its golden result: inputs, tokens, stop, calls and text
// exactly; the recorded logits within the tolerance.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cact/json_input.h"
#include "cact/tokenizer.h"
#include "golden.h"

namespace cact::golden {

namespace {

Json token_json(const Tokenizer& tok, int32_t id) { return {{"id", id}, {"piece", std::string(tok.piece_bytes(id))}}; }

std::string token_text(const Tokenizer& tok, int32_t id) {
  return std::to_string(id) + " " + json_quoted(tok.piece_bytes(id));
}

// The first key whose value differs, for "inputs changed (key)".
std::string changed_keys(const Json& before, const Json& now) {
  std::string keys;
  for (const auto& [key, value] : now.items()) {
    if (!before.contains(key) || before.at(key) != value) keys += (keys.empty() ? "" : ", ") + key;
  }
  for (const auto& [key, value] : before.items()) {
    if (!now.contains(key)) keys += (keys.empty() ? "" : ", ") + key;
  }
  return keys;
}

}  // namespace

Verdict compare(const GoldenCase& golden, const CaseResult& got, double tolerance, const Tokenizer& tok) {
  Verdict v;
  v.name = got.name;
  v.tolerance = tolerance;
  if (golden.input != got.input) {
    v.message = "the case's inputs changed since the golden file was written (" +
                changed_keys(golden.input, got.input) + "); cact-golden update rewrites it";
    return v;
  }
  const size_t prompt_n = std::max(golden.prompt_ids.size(), got.prompt_ids.size());
  for (size_t k = 0; k < prompt_n; ++k) {
    if (k < golden.prompt_ids.size() && k < got.prompt_ids.size() && golden.prompt_ids[k] == got.prompt_ids[k])
      continue;
    v.message =
        "prompt token " + std::to_string(k + 1) + " differs: the archive's tokenizer encodes the prompt differently";
    return v;
  }
  const bool several = golden.turns.size() > 1;
  for (size_t t = 0; t < golden.turns.size() && t < got.turns.size(); ++t) {
    const GoldenTurn& want = golden.turns[t];
    const TurnResult& have = got.turns[t];
    const std::string turn = several ? "turn " + std::to_string(t + 1) + ", " : "";
    const size_t n = std::max(want.ids.size(), have.ids.size());
    for (size_t k = 0; k < n; ++k) {
      const bool w = k < want.ids.size(), h = k < have.ids.size();
      if (w && h && want.ids[k] == have.ids[k]) continue;
      v.message = turn + "token " + std::to_string(k + 1) + ": expected " +
                  (w ? token_text(tok, want.ids[k]) : "the end (stop: " + want.stop + ")") + ", got " +
                  (h ? token_text(tok, have.ids[k]) : "the end (stop: " + have.stop + ")");
      v.first_difference = {{"turn", t + 1},
                            {"token", k + 1},
                            {"expected", w ? token_json(tok, want.ids[k]) : Json(nullptr)},
                            {"got", h ? token_json(tok, have.ids[k]) : Json(nullptr)}};
      return v;
    }
    const std::string at = several ? "turn " + std::to_string(t + 1) + ": " : "";
    if (want.stop != have.stop) {
      v.message = at + "stop: expected " + want.stop + ", got " + have.stop;
      return v;
    }
    if (want.calls != have.calls) {
      v.message = at + "tool calls: expected " + compact(want.calls) + ", got " + compact(have.calls);
      return v;
    }
    if (want.text != have.text) {
      v.message = at + "the same tokens decode to another text: expected " + json_quoted(want.text) + ", got " +
                  json_quoted(have.text);
      return v;
    }
    if (want.top.size() != have.logits.size()) {
      v.message = at + std::to_string(have.logits.size()) + " logit rows, the golden file has " +
                  std::to_string(want.top.size());
      return v;
    }
    for (size_t p = 0; p < want.top.size(); ++p) {
      for (const auto& [id, expected] : want.top[p]) {
        if (id < 0 || size_t(id) >= have.logits[p].size()) {
          v.message = at + "the golden file names logit id " + std::to_string(id) + ", past the archive's output rows";
          return v;
        }
        const float actual = have.logits[p][size_t(id)];
        const double d = std::fabs(double(actual) - double(expected)) / std::max(1.0, std::fabs(double(expected)));
        if (d > v.worst || !std::isfinite(d)) {
          v.worst = std::isfinite(d) ? d : INFINITY;
          char values[96];
          std::snprintf(values, sizeof values, ": expected %.9g, got %.9g", double(expected), double(actual));
          v.worst_where = turn + "token " + std::to_string(p + 1) + ", id " + std::to_string(id) + values;
        }
      }
    }
  }
  if (v.worst > tolerance) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "logits differ by %.3g (scaled by max(1, |logit|)), more than the tolerance %.3g",
                  v.worst, tolerance);
    v.message = std::string(buf) + " at " + v.worst_where;
    return v;
  }
  v.ok = true;
  return v;
}

}  // namespace cact::golden
