// What cact-run reports: the --stats lines, the --json objects, the context
// notices, peak RSS.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/output.h"
#include "run.h"

namespace cact::run {

uint64_t peak_rss_bytes() {
  std::FILE* in = std::fopen("/proc/self/status", "r");
  if (in == nullptr) return 0;
  char line[256];
  unsigned long long kb = 0;
  while (std::fgets(line, sizeof line, in) != nullptr) {
    if (std::sscanf(line, "VmHWM: %llu", &kb) == 1) break;
  }
  std::fclose(in);
  return uint64_t(kb) * 1024;
}

namespace {

double rate(double tokens, double seconds) { return seconds > 0.0 ? tokens / seconds : 0.0; }

std::string tail_of_stats(double prefill_tokens, double prefill_s, double decode_tokens, double decode_s,
                          uint64_t seed) {
  char buf[192];
  std::snprintf(buf, sizeof buf, "prefill %.1f tok/s, decode %.1f tok/s; seed %llu; peak RSS %.1f MiB",
                rate(prefill_tokens, prefill_s), rate(decode_tokens, decode_s), (unsigned long long)seed,
                double(peak_rss_bytes()) / (1024.0 * 1024.0));
  return buf;
}

std::string confidence_text(const std::optional<float>& c) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "confidence: %.4f", double(*c));
  return buf;
}

}  // namespace

std::string stats_line(const Completion& c) {
  return std::to_string(c.prompt_ids.size()) + " prompt tokens, " + std::to_string(c.generated.size()) +
         " generated; " +
         tail_of_stats(double(c.prompt_ids.size()), c.prefill_seconds, double(c.decode_steps), c.decode_seconds,
                       c.seed);
}

std::string stats_line(const chat::Answer& a) {
  // Decode steps: every generated id but the last was fed back.
  const double steps = a.ids.empty() ? 0.0 : double(a.ids.size() - 1);
  return std::to_string(a.prompt_tokens) + " prompt tokens (" + std::to_string(a.cached_tokens) + " cached), " +
         std::to_string(a.ids.size()) + " generated; " +
         tail_of_stats(double(a.prompt_tokens), a.prefill_seconds, steps, a.decode_seconds, a.seed);
}

std::string completion_json(const Options& o, const std::string& archive, const Session& s, const Completion& c) {
  nlohmann::ordered_json j;
  j["schema"] = "cact-run/1";
  j["archive"] = archive;
  j["numerics"] = numerics_name(s.engine().numerics());
  j["kernels"] = s.engine().numerics() == Numerics::int8 ? s.engine().kernels().name : "none";
  j["chat"] = o.chat;
  j["context"] = s.context();
  j["prompt_tokens"] = c.prompt_ids.size();
  j["generated_tokens"] = c.generated.size();
  j["prompt_ids"] = c.prompt_ids;
  j["generated_ids"] = c.generated;
  j["text"] = c.text;
  j["stop"] = chat::stop_reason_name(c.stop);
  j["seed"] = c.seed;
  j["confidence"] = c.confidence ? nlohmann::ordered_json(*c.confidence) : nlohmann::ordered_json(nullptr);
  j["stats"] = {{"prefill_seconds", c.prefill_seconds},
                {"decode_seconds", c.decode_seconds},
                {"prefill_tokens_per_second", rate(double(c.prompt_ids.size()), c.prefill_seconds)},
                {"decode_tokens_per_second", rate(double(c.decode_steps), c.decode_seconds)},
                {"peak_rss_bytes", peak_rss_bytes()},
                {"state_bytes", s.state_bytes()}};
  // Invalid UTF-8 never reaches here (the decoder repairs it), but be safe.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::string answer_line(const chat::Answer& a) {
  std::string text = chat::answer_json(a);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (text.find('\n') != std::string::npos) {
    text = nlohmann::ordered_json::parse(text).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  }
  return text + "\n";
}

void report_answer(const Options& o, const chat::Answer& a, uint32_t context) {
  if (!o.quiet && a.dropped_turns > 0) {
    app::note(kTool, "the context of " + std::to_string(context) + " positions was full: dropped the " +
                         std::to_string(a.dropped_turns) + " oldest turn" + (a.dropped_turns == 1 ? "" : "s"));
  }
  if (!o.quiet && a.stop == chat::StopReason::context) {
    app::note(kTool, "stopped: the context of " + std::to_string(context) + " positions is full");
  }
  if (o.stats) {
    app::note(kTool, stats_line(a));
    if (a.confidence) app::note(kTool, confidence_text(a.confidence));
  }
}

void warn_nonfinite_logits(const Session& session) {
  static bool warned = false;  // once per process: every later answer would repeat it
  if (warned || !session.nonfinite_logits()) return;
  warned = true;
  app::note(kTool,
            "warning: the model's logits are not finite (NaN or inf; cact-inspect --check names the tensors): "
            "the output is meaningless");
}

void report_completion(const Options& o, const Completion& c, uint32_t context) {
  if (!o.quiet && c.stop == chat::StopReason::context) {
    app::note(kTool, "stopped: the context of " + std::to_string(context) + " positions is full");
  }
  if (o.stats) {
    app::note(kTool, stats_line(c));
    if (c.confidence) app::note(kTool, confidence_text(c.confidence));
  }
}

}  // namespace cact::run
