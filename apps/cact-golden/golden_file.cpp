// The golden file (schema cact-golden/1): written so that the same results
// give the same bytes on any machine and in any directory, read back for checks.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "cact/error.h"
#include "cact/json_input.h"
#include "golden.h"

namespace cact::golden {

namespace {

constexpr size_t kMaxGoldenBytes = size_t(1) << 30;

std::string dump(const Json& v) { return v.dump(-1, ' ', false, Json::error_handler_t::replace); }

// %.9g: a float's text that reads back as the same float.
std::string float_text(float f) {
  if (!std::isfinite(f)) fail("a logit is not finite: the archive's output is broken");
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", double(f));
  return buf;
}

std::string ids_text(const std::vector<int32_t>& ids) { return dump(Json(ids)); }

std::string top_text(const std::vector<std::pair<int32_t, float>>& row) {
  std::string s = "[";
  for (size_t i = 0; i < row.size(); ++i)
    s += (i ? ", [" : "[") + std::to_string(row[i].first) + ", " + float_text(row[i].second) + "]";
  return s + "]";
}

std::vector<std::pair<int32_t, float>> top_of(const std::vector<float>& row) {
  std::vector<int32_t> order(row.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t k = std::min(kTopLogits, row.size());
  std::partial_sort(order.begin(), order.begin() + long(k), order.end(), [&](int32_t a, int32_t b) {
    return row[size_t(a)] > row[size_t(b)] || (row[size_t(a)] == row[size_t(b)] && a < b);
  });
  std::vector<std::pair<int32_t, float>> top;
  for (size_t i = 0; i < k; ++i) top.emplace_back(order[i], row[size_t(order[i])]);
  return top;
}

const Json& need(const Json& object, const char* key, const std::string& where) {
  if (!object.is_object() || !object.contains(key)) fail(where + ": no \"" + key + "\"");
  return object.at(key);
}

std::vector<int32_t> read_ids(const Json& v, const std::string& where) {
  if (!v.is_array()) fail(where + ": expected a list of token ids");
  std::vector<int32_t> ids;
  for (const Json& id : v) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      fail(where + ": expected token ids");
    ids.push_back(id.get<int32_t>());
  }
  return ids;
}

std::string read_string(const Json& v, const std::string& where) {
  if (!v.is_string()) fail(where + ": expected a string");
  return v.get<std::string>();
}

GoldenTurn read_turn(const Json& j, const std::string& where) {
  GoldenTurn t;
  t.ids = read_ids(need(j, "ids", where), where + ": ids");
  t.text = read_string(need(j, "text", where), where + ": text");
  t.stop = read_string(need(j, "stop", where), where + ": stop");
  t.calls = need(j, "calls", where);
  const Json& logits = need(j, "logits", where);
  if (!logits.is_array()) fail(where + ": logits: expected a list");
  for (const Json& row : logits) {
    std::vector<std::pair<int32_t, float>> top;
    if (!row.is_array()) fail(where + ": logits: expected [id, logit] pairs");
    for (const Json& pair : row) {
      if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() || !pair[1].is_number()) {
        fail(where + ": logits: expected [id, logit] pairs");
      }
      top.emplace_back(pair[0].get<int32_t>(), float(pair[1].get<double>()));
    }
    t.top.push_back(std::move(top));
  }
  return t;
}

}  // namespace

GoldenCase to_golden(const CaseResult& r) {
  GoldenCase g;
  g.name = r.name;
  g.input = r.input;
  g.prompt_ids = r.prompt_ids;
  for (const TurnResult& t : r.turns) {
    GoldenTurn gt;
    gt.ids = t.ids;
    gt.text = t.text;
    gt.stop = t.stop;
    gt.calls = t.calls;
    for (const std::vector<float>& row : t.logits) gt.top.push_back(top_of(row));
    g.turns.push_back(std::move(gt));
  }
  return g;
}

std::string render_golden(const RunInfo& info, const std::vector<GoldenCase>& cases) {
  std::string o = "{\n";
  o += " \"schema\": \"" + std::string(kGoldenSchema) + "\",\n";
  o += " \"archive\": " + dump(Json{{"xxh64", info.archive_xxh64}, {"bytes", info.archive_bytes}}) + ",\n";
  o += " \"numerics\": " + dump(Json(info.numerics)) + ",\n";
  o += " \"kernels\": " + dump(Json(info.kernels)) + ",\n";
  o += " \"cases\": [";
  for (size_t c = 0; c < cases.size(); ++c) {
    const GoldenCase& g = cases[c];
    o += c ? ",\n  {\n" : "\n  {\n";
    o += "   \"name\": " + dump(Json(g.name)) + ",\n";
    o += "   \"input\": " + dump(g.input) + ",\n";
    if (!g.prompt_ids.empty()) o += "   \"prompt_ids\": " + ids_text(g.prompt_ids) + ",\n";
    o += "   \"turns\": [";
    for (size_t t = 0; t < g.turns.size(); ++t) {
      const GoldenTurn& turn = g.turns[t];
      o += t ? ",\n    {\n" : "\n    {\n";
      o += "     \"ids\": " + ids_text(turn.ids) + ",\n";
      o += "     \"text\": " + dump(Json(turn.text)) + ",\n";
      o += "     \"stop\": " + dump(Json(turn.stop)) + ",\n";
      o += "     \"calls\": " + dump(turn.calls) + ",\n";
      o += "     \"logits\": [";
      for (size_t p = 0; p < turn.top.size(); ++p) o += (p ? ",\n      " : "\n      ") + top_text(turn.top[p]);
      o += turn.top.empty() ? "]\n" : "\n     ]\n";
      o += "    }";
    }
    o += "\n   ]\n  }";
  }
  o += "\n ]\n}\n";
  return o;
}

GoldenFile parse_golden(const std::string& text, const std::string& origin) {
  const Json j = parse_json_limited(text, origin, kMaxGoldenBytes);
  if (!j.is_object() || !j.contains("schema") || j.at("schema") != kGoldenSchema) {
    fail(origin + ": not a golden file (schema \"" + kGoldenSchema + "\")");
  }
  GoldenFile g;
  const Json& archive = need(j, "archive", origin);
  g.info.archive_xxh64 = read_string(need(archive, "xxh64", origin + ": archive"), origin + ": archive: xxh64");
  const Json& bytes = need(archive, "bytes", origin + ": archive");
  if (!bytes.is_number_unsigned()) fail(origin + ": archive: bytes: expected a size");
  g.info.archive_bytes = bytes.get<uint64_t>();
  g.info.numerics = read_string(need(j, "numerics", origin), origin + ": numerics");
  g.info.kernels = read_string(need(j, "kernels", origin), origin + ": kernels");
  const Json& cases = need(j, "cases", origin);
  if (!cases.is_array()) fail(origin + ": cases: expected a list");
  for (const Json& c : cases) {
    GoldenCase gc;
    gc.name = read_string(need(c, "name", origin + ": case"), origin + ": case: name");
    const std::string where = origin + ": case \"" + gc.name + "\"";
    gc.input = need(c, "input", where);
    if (c.contains("prompt_ids")) gc.prompt_ids = read_ids(c.at("prompt_ids"), where + ": prompt_ids");
    const Json& turns = need(c, "turns", where);
    if (!turns.is_array()) fail(where + ": turns: expected a list");
    for (size_t t = 0; t < turns.size(); ++t)
      gc.turns.push_back(read_turn(turns[t], where + ": turn " + std::to_string(t + 1)));
    g.cases.push_back(std::move(gc));
  }
  return g;
}

}  // namespace cact::golden
