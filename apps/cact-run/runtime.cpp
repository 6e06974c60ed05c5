// The opened archive, engine and tokenizer every mode runs on; the prompt and
// sampler settings shared by the modes.
#include <future>
#include <random>

#include <system_error>

#include "common/error_policy.h"
#include "common/input.h"
#include "run.h"

namespace cact::run {

Runtime::Runtime(const Options& o)
    : o_(o),
      bundled_(o.archive.empty() || is_default_model(o.archive)),
      archive_(o.archive.empty() ? default_model().string() : o.archive),
      model_(Model::open(archive_)) {
  // The tokenizer's tables (BPE merges, piece index) are built on a second thread while
  // this one maps the weight pages and prepares the Engine: both only read the (checked) archive.
  std::future<Tokenizer> tok_ready;
  try {
    tok_ready = std::async(std::launch::async, [this] { return Tokenizer(model_.tokenizer_model()); });
  } catch (const std::system_error&) {
    // No thread to spare (a process limit): the tables are built below instead.
  }
  // One madvise maps what the first prefill reads instead of many fault-around faults during it.
  model_.prefault_dense();
  EngineOptions eo;
  eo.numerics = o.float_path ? Numerics::reference : Numerics::int8;
  eo.kernels = o.scalar ? &kernels::scalar_kernels() : nullptr;
  engine_.emplace(model_, eo);
  tok_.emplace(tok_ready.valid() ? tok_ready.get() : Tokenizer(model_.tokenizer_model()));
}

SessionOptions Runtime::session_options(uint32_t context) const {
  SessionOptions so;
  so.context = context;
  const uint32_t positions = context != 0 ? context : model_.header().max_seq_len;
  if (o_.sinks > positions) {
    app::usage_error("--sinks " + std::to_string(o_.sinks) + " is beyond the context of " + std::to_string(positions) +
                     " positions");
  }
  so.sinks = o_.sinks;
  so.kv_window = o_.kv_window;
  so.threads = o_.threads;
  return so;
}

std::string prompt_text(const Options& o) {
  std::string text = !o.file.empty()   ? app::read_input(o.file, "-f " + o.file)
                     : o.prompt == "-" ? app::read_input("-", "-p -")
                                       : o.prompt;
  // The newline `echo` and editors end a file with is not part of the prompt.
  if ((!o.file.empty() || o.prompt == "-") && !text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

SamplerOptions turn_sampler(const Options& o) {
  SamplerOptions s = o.sampler;
  if (o.seed) {
    s.seed = *o.seed;
  } else if (s.temperature > 0.0f) {
    std::random_device rd;
    s.seed = (uint64_t(rd()) << 32) ^ uint64_t(rd());
  } else {
    s.seed = 0;  // greedy: the seed is unused
  }
  return s;
}

}  // namespace cact::run
