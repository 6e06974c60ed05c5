// cact-run: generate text with a .cact archive (docs/ENGINE.md "cact-run").
#include <cstdio>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cact/error.h"
#include "cact/tokenizer.h"
#include "common/error_policy.h"
#include "common/small_flags.h"
#include "run.h"

namespace {

std::string read_tools(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) cact::fail("--tools " + path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  try {
    // ordered_json: the one json type cact-run already instantiates for --json and --dump-golden.
    const nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(text);
    (void)parsed;
  } catch (const nlohmann::ordered_json::parse_error& e) {
    cact::fail("--tools " + path + ": not valid JSON (" + e.what() + ")");
  }
  // The file's own text goes into the prompt (no re-serialisation), minus trailing whitespace.
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' || text.back() == '\t')) {
    text.pop_back();
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  cact::run::Options o;
  cact::app::SmallFlags cli("cact-run", "cact-run: generate text with a .cact archive (default: the bundled license-tiny.cact)");
  cli.positional("archive", &o.archive, "the .cact file (default: the bundled models/license-tiny.cact)");
  cli.option("-p,--prompt", &o.prompt, "prompt text (bos is added in front)");
  cli.flag("--chat", &o.chat, "wrap the prompt in the Needle chat format");
  cli.option("--system", &o.system, "with --chat: system message");
  cli.option("--tools", &o.tools_file, "with --chat: JSON file with the tool list");
  cli.option("-n,--max-tokens", &o.max_tokens, "tokens to generate at most", true);
  cli.option("--temperature", &o.sampler.temperature, "0 = greedy", true);
  cli.option("--top-k", &o.sampler.top_k, "keep the k best ids (0 = all)", true);
  cli.option("--top-p", &o.sampler.top_p, "nucleus mass (1 = all)", true);
  cli.option("--seed", &o.sampler.seed, "sampling seed (same seed, same text)", true);
  cli.option("--context", &o.context, "positions for prompt + output (0 = prompt + --max-tokens, at most the archive's max_seq_len)");
  cli.option("--sinks", &o.sinks, "leading positions kept visible through the kv_window span");
  cli.option("--kv-window", &o.kv_window, "attention span when the archive leaves it open (kv_window 0)");
  cli.option("--threads", &o.threads, "threads of the engine (0 = the hardware concurrency; same output for any)");
  cli.flag("--stats", &o.stats, "print tokens, prefill/decode tok/s and peak RSS on stderr");
  cli.flag("--json", &o.json, "print one JSON result object instead of streaming text");
  cli.flag("--scalar", &o.scalar, "force the scalar kernels (also: CACT_KERNELS=scalar)");
  cli.flag("--float", &o.float_path, "run the float reference path");
  cli.option("--dump-golden", &o.dump_golden, "write golden top-10 logits (float + int8) for the prompt to FILE");
  cli.option("--golden-steps", &o.golden_steps, "with --dump-golden: greedy tokens after the prompt", true);
  if (const int rc = cli.parse(argc, argv); rc >= 0) return rc;
  return cact::app::run_guarded("cact-run", [&] {
    o.prompt_given = cli.given("--prompt");
    if (!o.prompt_given) cact::fail("no prompt: pass -p TEXT");
    if (!o.chat && (cli.given("--system") || cli.given("--tools"))) {
      cact::fail("--system and --tools need --chat");
    }
    const std::string archive = o.archive.empty() ? cact::run::default_model().string() : o.archive;
    const cact::Model model = cact::Model::open(archive);
    if (!o.dump_golden.empty()) {
      cact::run::dump_golden(model, o.archive.empty() ? "models/license-tiny.cact" : archive, o, o.dump_golden);
      return 0;
    }
    // The tokenizer's tables (BPE merges, piece index) are built on a second thread while
    // this one maps the weight pages and prepares the Engine: both only read the (checked) archive.
    std::future<cact::Tokenizer> tok_ready =
        std::async(std::launch::async, [&model] { return cact::Tokenizer(model.tokenizer_model()); });
    // One madvise maps the ~17 MB the first prefill reads (needle3: 0.4 ms) instead of ~200
    // fault-around faults during it (~1.3 ms); measured on the main thread, where it does not
    // contend with the Engine's page faults as it did on the helper.
    model.prefault_dense();
    if (o.chat) {
      const std::string tools = o.tools_file.empty() ? std::string() : read_tools(o.tools_file);
      o.prompt = cact::render_chat_prompt(o.system, tools, o.prompt);
    }
    cact::EngineOptions eo;
    eo.numerics = o.float_path ? cact::Numerics::reference : cact::Numerics::int8;
    eo.kernels = o.scalar ? &cact::kernels::scalar_kernels() : nullptr;
    const cact::Engine engine(model, eo);
    const cact::Tokenizer tok = tok_ready.get();
    std::vector<int32_t> ids = cact::run::prompt_ids(o, tok);
    cact::SessionOptions so;
    so.context = cact::run::session_context(o, ids.size(), model.header().max_seq_len);
    so.sinks = o.sinks;
    so.kv_window = o.kv_window;
    so.threads = o.threads;
    cact::Session session(engine, so);
    const cact::run::Result r =
        cact::run::generate(session, tok, o, std::move(ids), [&](const std::string& text) {
          if (o.json) return;
          std::fwrite(text.data(), 1, text.size(), stdout);
          std::fflush(stdout);
        });
    if (o.json) {
      const std::string j = cact::run::json_report(o, archive, session, r);
      std::fwrite(j.data(), 1, j.size(), stdout);
    } else {
      std::fputc('\n', stdout);
      if (r.stop == cact::run::Stop::context) {
        std::fprintf(stderr, "cact-run: stopped: the context of %u positions is full\n", session.context());
      }
      if (r.confidence) std::fprintf(stderr, "confidence: %.4f\n", double(*r.confidence));
      if (o.stats) std::fprintf(stderr, "cact-run: %s\n", cact::run::stats_line(r).c_str());
    }
    return 0;
  });
}
