// What cact-run reports: the --stats line, the --json object, peak RSS.
#include <cstdio>
#include <nlohmann/json.hpp>

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
}  // namespace

std::string stats_line(const Result& r) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%zu prompt tokens, %zu generated; prefill %.1f tok/s, decode %.1f tok/s; peak RSS %.1f MiB",
                r.prompt_ids.size(), r.generated.size(), rate(double(r.prompt_ids.size()), r.prefill_seconds),
                rate(double(r.decode_steps), r.decode_seconds), double(peak_rss_bytes()) / (1024.0 * 1024.0));
  return buf;
}

std::string json_report(const Options& o, const std::string& archive, const Session& s, const Result& r) {
  nlohmann::ordered_json j;
  j["schema"] = "cact-run/1";
  j["archive"] = archive;
  j["numerics"] = numerics_name(s.engine().numerics());
  j["kernels"] = s.engine().numerics() == Numerics::int8 ? s.engine().kernels().name : "none";
  j["chat"] = o.chat;
  j["context"] = s.context();
  j["prompt_tokens"] = r.prompt_ids.size();
  j["generated_tokens"] = r.generated.size();
  j["prompt_ids"] = r.prompt_ids;
  j["generated_ids"] = r.generated;
  j["text"] = r.text;
  j["stop"] = stop_name(r.stop);
  j["confidence"] = r.confidence ? nlohmann::ordered_json(*r.confidence) : nlohmann::ordered_json(nullptr);
  j["stats"] = {{"prefill_seconds", r.prefill_seconds},
                {"decode_seconds", r.decode_seconds},
                {"prefill_tokens_per_second", rate(double(r.prompt_ids.size()), r.prefill_seconds)},
                {"decode_tokens_per_second", rate(double(r.decode_steps), r.decode_seconds)},
                {"peak_rss_bytes", peak_rss_bytes()},
                {"state_bytes", s.state_bytes()}};
  // Invalid UTF-8 never reaches here (the decoder repairs it), but be safe.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace cact::run
