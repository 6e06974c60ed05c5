#pragma once
// cact-run pieces: the options the flags fill in, the generation loop, the
// bundled default archive, reports (stats line, JSON) and golden dumps.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cact/engine.h"
#include "cact/sampler.h"
#include "cact/tokenizer.h"

namespace cact::run {

struct Options {
  std::string archive;  // empty: the bundled default
  std::string prompt;
  bool prompt_given = false;
  bool chat = false;
  std::string system, tools_file;
  uint32_t max_tokens = 64;
  SamplerOptions sampler;
  uint32_t context = 0, sinks = 0, kv_window = 0;
  uint32_t threads = 0;  // 0 = the hardware concurrency
  bool stats = false, json = false, scalar = false, float_path = false;
  std::string dump_golden;
  uint32_t golden_steps = 8;
};

// The bundled archive: next to the executable, in ../share/cact/ from it, or
// the source tree's models/ (compile definition CACT_DEFAULT_MODEL).
std::filesystem::path default_model();

enum class Stop { eos, im_end, max_tokens, context };
const char* stop_name(Stop s);

struct Result {
  std::vector<int32_t> prompt_ids, generated;
  std::string text;
  Stop stop = Stop::max_tokens;
  double prefill_seconds = 0.0, decode_seconds = 0.0;
  uint32_t decode_steps = 0;  // tokens fed after the prompt
  std::optional<float> confidence;
};

// The prompt's ids: bos + encode(text), text chat-rendered when asked.
std::vector<int32_t> prompt_ids(const Options& o, const Tokenizer& tok);

// Positions of the session: --context when given, else what the prompt and
// --max-tokens can use (prompt + max_tokens), at most the archive's max_seq_len.
// Generation stops at max_tokens before such a context is full, so the output
// is that of a max_seq_len session, without sizing (and zeroing) the state of
// positions that are never fed.
uint32_t session_context(const Options& o, size_t prompt_tokens, uint32_t max_seq_len);

// Prefill, then sample until eos / <|im_end|> / max_tokens / the context;
// `emit` receives the text as it completes (UTF-8 safe).
Result generate(Session& session, const Tokenizer& tok, const Options& o, std::vector<int32_t> ids,
                const std::function<void(const std::string&)>& emit);

// Peak resident set (VmHWM of /proc/self/status) in bytes, 0 if unknown.
uint64_t peak_rss_bytes();
std::string stats_line(const Result& r);
std::string json_report(const Options& o, const std::string& archive, const Session& s, const Result& r);

// Top-10 logits of every prompt position and `steps` greedy ones, float and
// int8 (scalar kernels), as golden/logits JSON.
void dump_golden(const Model& model, const std::string& archive_name, const Options& o, const std::filesystem::path& out);

}  // namespace cact::run
