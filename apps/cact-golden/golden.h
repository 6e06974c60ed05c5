#pragma once
// cact-golden (docs/GUIDE.md "Golden checks in CI"): a case file the user keeps
// next to their archive, the results of its cases, the golden file that
// records them, and the verdict of a re-run against that file.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cact/chat.h"
#include "cact/engine.h"
#include "cact/sampler.h"
#include "cact/tools.h"

namespace cact::golden {

using Json = nlohmann::ordered_json;

inline constexpr const char* kTool = "cact-golden";
inline constexpr const char* kGoldenSchema = "cact-golden/1";
inline constexpr const char* kCheckSchema = "cact-golden-check/1";
inline constexpr uint32_t kDefaultMaxTokens = 32;
inline constexpr size_t kTopLogits = 8;  // logits recorded per generated position
// Default tolerance per numerics: |got - golden| <= tol * max(1, |golden|).
// int8: the kernel tables give the same bits (docs/KERNELS.md), but another
// compiler or libm may flip the int8 rounding of a rare activation.
inline constexpr double kFloatTolerance = 1e-4;
inline constexpr double kInt8Tolerance = 2e-3;
double default_tolerance(Numerics n);

// One case of a case file: a text continuation or a chat of user turns.
struct Case {
  std::string name;
  bool chat = false;
  std::vector<std::string> turns;  // the prompt (one), or the user turns
  std::string system;
  chat::ToolList tools;
  chat::ToolChoice tool_choice;
  bool constrain = true;
  uint32_t max_tokens = kDefaultMaxTokens;
  SamplerOptions sampler;
  std::optional<double> tolerance;
  Json input;  // everything above that determines the result, as the golden file records it
};

struct CaseFile {
  std::string path;               // as given ("-": standard input)
  std::filesystem::path archive;  // resolved: relative to the case file's directory, or --archive
  Numerics numerics = Numerics::int8;
  bool scalar_kernels = false;  // "kernels": "scalar" (default "best")
  std::optional<double> tolerance;
  std::vector<Case> cases;
};

// Parses a case file (docs/GUIDE.md "The case file"). `text` is its content,
// `archive_override` replaces its "archive" (relative to the current
// directory). Throws cact::Error "PATH: ..." naming the case and key at fault.
CaseFile parse_case_file(const std::string& path, const std::string& text, const std::string& archive_override);

// The result of one turn (a continuation is one turn).
struct TurnResult {
  std::vector<int32_t> ids;  // generated, the stop excluded
  std::string text;
  std::string stop;                        // chat::stop_reason_name
  Json calls = Json::array();              // chat: [{"name", "arguments", "check"}]
  std::vector<std::vector<float>> logits;  // full rows, one per generated position
};

struct CaseResult {
  std::string name;
  Json input;
  std::vector<int32_t> prompt_ids;  // text continuation only
  std::vector<TurnResult> turns;
};

// What identifies the run besides the inputs.
struct RunInfo {
  std::string archive_xxh64;
  uint64_t archive_bytes = 0;
  std::string numerics;  // "int8" / "float"
  std::string
      kernels;  // the class asked for: int8 "best" or "scalar" (every table gives the same bits); float "reference"
  std::string kernel_table;  // the table that ran (reports only: it depends on the CPU, the golden file never holds it)
};

// Opens the archive once and runs cases on it.
class Runner {
 public:
  explicit Runner(const CaseFile& file);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;
  const RunInfo& info() const;
  const Tokenizer& tokenizer() const;
  CaseResult run(const Case& c) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The golden file as stored (its results keep only the top logits).
struct GoldenTurn {
  std::vector<int32_t> ids;
  std::string text, stop;
  Json calls = Json::array();
  std::vector<std::vector<std::pair<int32_t, float>>> top;  // per position: (id, logit), best first
};
struct GoldenCase {
  std::string name;
  Json input;
  std::vector<int32_t> prompt_ids;
  std::vector<GoldenTurn> turns;
};
struct GoldenFile {
  RunInfo info;
  std::vector<GoldenCase> cases;
};

// A run's results as stored: top logits per position (ties to the lower id).
GoldenCase to_golden(const CaseResult& r);
// Byte-identical for the same results: fixed key order, one line per position.
std::string render_golden(const RunInfo& info, const std::vector<GoldenCase>& cases);
// Throws cact::Error "ORIGIN: ..." when the text is not a cact-golden/1 file.
GoldenFile parse_golden(const std::string& text, const std::string& origin);

// The verdict of one case.
struct Verdict {
  std::string name;
  bool ok = false;
  std::string message;      // why it failed (empty when ok)
  double worst = 0.0;       // worst |got - golden| / max(1, |golden|) over the recorded logits
  std::string worst_where;  // "turn 1, token 3, id 412"
  double tolerance = 0.0;
  Json first_difference;  // null, or {"turn", "token", "expected", "got"}
};
Verdict compare(const GoldenCase& golden, const CaseResult& got, double tolerance, const Tokenizer& tok);

}  // namespace cact::golden
