#pragma once
// cact-run pieces (docs/CHAT.md): the options the flags fill in, the mode they
// select, the opened archive, text continuation, the chat modes (one-shot,
// stdin lines, JSONL, the interactive REPL), reports and golden dumps.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cact/chat.h"
#include "cact/engine.h"
#include "cact/sampler.h"
#include "cact/tokenizer.h"

namespace cact::run {

inline constexpr const char* kTool = "cact-run";

struct Options {
  std::string archive, model;  // positional / -m (the same); empty: the bundled one
  std::string prompt, file;    // -p TEXT ("-" = stdin), -f FILE
  bool chat = false, jsonl = false;
  std::string system, tools_file, tools_json, tool_choice = "auto", load;
  bool no_constrain = false;
  std::optional<uint32_t> max_tokens;  // default: kCompleteTokens / kChatTokens
  SamplerOptions sampler;
  std::optional<uint64_t> seed;  // default: random when sampling
  std::vector<std::string> stop;
  uint32_t context = 0, sinks = 0, kv_window = 0, threads = 0;
  bool stats = false, json = false, quiet = false, scalar = false, float_path = false;
  std::string dump_golden;
  uint32_t golden_steps = 8;
};
inline constexpr uint32_t kCompleteTokens = 64, kChatTokens = 256;

// What one invocation does (docs/CHAT.md "Modes").
enum class Mode : uint8_t { golden, complete, chat_once, chat_lines, jsonl, repl };

// Flags (flags.cpp): declares them on `cli`, then checks the combination and
// the values (UsageError, exit 2) and picks the mode.
void add_flags(CLI::App& cli, Options& o);
Mode resolve_mode(Options& o, const CLI::App& cli, bool stdin_terminal);

// The bundled archive (tools-tiny.cact): next to the executable, in
// ../share/cact/ from it, or the source tree's (compile definition
// CACT_DEFAULT_MODEL). Its tools.json lies beside it.
std::filesystem::path default_model();
bool is_default_model(const std::filesystem::path& archive);  // the same file as default_model()
std::filesystem::path default_tools(const std::filesystem::path& model);

// The opened archive, its engine and tokenizer (not movable: the engine
// points into the model).
class Runtime {
 public:
  explicit Runtime(const Options& o);
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  const std::string& archive() const { return archive_; }
  bool bundled() const { return bundled_; }  // the bundled archive (given or by default)
  const Model& model() const { return model_; }
  const Engine& engine() const { return *engine_; }
  const Tokenizer& tok() const { return *tok_; }
  SessionOptions session_options(uint32_t context) const;

 private:
  const Options& o_;
  bool bundled_;
  std::string archive_;
  Model model_;
  std::optional<Engine> engine_;
  std::optional<Tokenizer> tok_;
};

// The prompt text of -p / -f ("-": stdin).
std::string prompt_text(const Options& o);
// The sampler of one answer: --seed, else a fresh random seed when sampling.
SamplerOptions turn_sampler(const Options& o);

// Text continuation (complete.cpp). `emit` gets the text as it completes;
// returning false stops (StopReason::cancelled).
struct Completion {
  std::vector<int32_t> prompt_ids, generated;
  std::string text;  // decoded in context: prompt + text == decode(prompt_ids + generated) (before a stop string)
  chat::StopReason stop = chat::StopReason::max_tokens;
  double prefill_seconds = 0.0, decode_seconds = 0.0;
  uint32_t decode_steps = 0;  // tokens fed after the prompt
  uint64_t seed = 0;
  std::optional<float> confidence;
};
using OnText = std::function<bool(std::string_view)>;
std::vector<int32_t> completion_prompt_ids(const Tokenizer& tok, std::string_view prompt);
// Positions of the session: -c when given, else prompt + -n (at most max_seq_len).
uint32_t completion_context(const Options& o, size_t prompt_tokens, uint32_t max_seq_len);
Completion complete(Session& session, const Tokenizer& tok, const Options& o, std::vector<int32_t> ids,
                    const OnText& emit);
int run_complete(const Runtime& rt, const Options& o);

// Chat (chat_setup.cpp): the conversation's prefix and per-answer options.
chat::ToolList read_tool_file(const std::string& path, const std::string& origin);
chat::ToolList cli_tools(const Options& o, bool bundled, const std::filesystem::path& archive);
chat::GenerateOptions turn_options(const Options& o);
chat::ChatSession open_chat(const Runtime& rt, const Options& o);

// Resume a saved transcript (--load, /load).
void load_transcript(chat::ChatSession& chat, const std::string& path, const std::string& origin);

// The chat modes (chat_batch.cpp, jsonl.cpp, repl.cpp); each returns the exit code.
int run_chat_once(const Runtime& rt, const Options& o);
int run_chat_lines(const Runtime& rt, const Options& o);
int run_jsonl(const Runtime& rt, const Options& o);
int run_repl(const Runtime& rt, const Options& o);

// Reports (report.cpp): stderr lines "cact-run: ..." and the --json objects.
uint64_t peak_rss_bytes();
std::string stats_line(const Completion& c);
std::string stats_line(const chat::Answer& a);
std::string completion_json(const Options& o, const std::string& archive, const Session& s, const Completion& c);
// answer_json as one line (JSONL needs it so).
std::string answer_line(const chat::Answer& a);
// After an answer: the context notices (unless --quiet), then --stats lines.
void report_answer(const Options& o, const chat::Answer& a, uint32_t context);
void report_completion(const Options& o, const Completion& c, uint32_t context);
// Once per process, on stderr: the session's logits held NaN or inf.
void warn_nonfinite_logits(const Session& session);

// Top-10 logits of every prompt position and `steps` greedy ones, float and
// int8 (scalar kernels), as golden/logits JSON. `out` must not be the archive
// read from `archive_path`.
void dump_golden(const Model& model, const std::filesystem::path& archive_path, const std::string& archive_name,
                 const std::string& prompt, uint32_t steps, const std::filesystem::path& out);

}  // namespace cact::run
