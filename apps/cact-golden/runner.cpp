// Runs the cases of a case file on its archive (one engine, one tokenizer).
#include <algorithm>

#include "cact/error.h"
#include "cact/inspect.h"
#include "cact/kernels.h"
#include "cact/model.h"
#include "cact/tokenizer.h"
#include "golden.h"

namespace cact::golden {

struct Runner::Impl {
  Model model;
  Engine engine;
  Tokenizer tok;
  RunInfo info;

  Impl(const CaseFile& f, Model m)
      : model(std::move(m)),
        engine(model, EngineOptions{f.numerics, f.scalar_kernels ? &kernels::scalar_kernels() : nullptr}),
        tok(Tokenizer::from_blob(model.tokenizer_blob())) {
    info.archive_xxh64 = xxh64_hex(model.bytes());
    info.archive_bytes = model.bytes().size();
    info.numerics = numerics_name(f.numerics);
    info.kernels = f.numerics == Numerics::reference ? "reference" : f.scalar_kernels ? "scalar" : "best";
    info.kernel_table = f.numerics == Numerics::reference ? "reference" : engine.kernels().name;
  }

  // Greedy (or seeded) continuation of bos + prompt, as cact-run -p does it.
  CaseResult complete(const Case& c) const {
    CaseResult r;
    r.prompt_ids.push_back(int32_t(tok.model().bos_id));
    const std::vector<int32_t> body = tok.encode(c.turns.front());
    r.prompt_ids.insert(r.prompt_ids.end(), body.begin(), body.end());
    const uint32_t max_seq = model.header().max_seq_len;
    if (r.prompt_ids.size() >= max_seq) {
      fail("the prompt has " + std::to_string(r.prompt_ids.size()) + " tokens; the archive's context is " +
           std::to_string(max_seq));
    }
    SessionOptions so;
    so.context = uint32_t(std::min<uint64_t>(max_seq, r.prompt_ids.size() + uint64_t(c.max_tokens)));
    Session session(engine, so);
    TurnResult t;
    const int32_t eos = int32_t(tok.model().eos_id), im_end = tok.find("<|im_end|>");
    Sampler sampler(c.sampler);
    StreamDecoder decoder(tok, StreamStart::continuation);
    std::vector<int32_t> recent = r.prompt_ids;  // what the repeat penalty sees
    std::span<const float> logits = session.prefill(r.prompt_ids);
    const size_t limit = std::min<size_t>(tok.size(), logits.size());
    t.stop = chat::stop_reason_name(chat::StopReason::max_tokens);
    while (t.ids.size() < c.max_tokens) {
      t.logits.emplace_back(logits.begin(), logits.end());
      const int32_t next = sampler.sample(logits, limit, recent, nullptr);
      if (next == eos || next == im_end) {
        t.stop = chat::stop_reason_name(next == eos ? chat::StopReason::eos : chat::StopReason::im_end);
        break;
      }
      t.ids.push_back(next);
      recent.push_back(next);
      t.text += decoder.push(next);
      if (t.ids.size() >= c.max_tokens) break;
      if (session.remaining() == 0) {
        t.stop = chat::stop_reason_name(chat::StopReason::context);
        break;
      }
      logits = session.step(next);
    }
    t.text += decoder.finish();
    r.turns.push_back(std::move(t));
    return r;
  }

  // The user turns of one conversation through the chat layer.
  CaseResult converse(const Case& c) const {
    CaseResult r;
    chat::ChatSession session(engine, tok);
    session.set_system(c.system);
    session.set_tools(c.tools);
    chat::GenerateOptions g;
    g.max_tokens = c.max_tokens;
    g.sampler = c.sampler;
    g.tool_choice = c.tool_choice;
    g.constrain = c.constrain;
    g.every_step_logits = true;  // a logit row per generated id, read from the callback
    for (const std::string& query : c.turns) {
      TurnResult t;
      // The logits after each generated token: captured when the answer's
      // text callback runs, which is after the token was fed.
      uint32_t seen = session.position();
      const chat::Answer a = session.ask(query, g, [&](std::string_view) {
        if (session.position() != seen) {
          const std::span<const float> row = session.session().logits();
          t.logits.emplace_back(row.begin(), row.end());
          seen = session.position();
        }
        return true;
      });
      t.ids = a.ids;
      t.text = a.raw;
      t.stop = chat::stop_reason_name(a.stop);
      for (size_t i = 0; i < a.parsed.calls.size(); ++i) {
        const chat::Call& call = a.parsed.calls[i];
        const bool checked = i < a.validation.size();
        t.calls.push_back({{"name", call.name},
                           {"arguments", Json::parse(call.arguments)},
                           {"check", checked ? chat::violation_name(a.validation[i].violation) : "unchecked"}});
      }
      r.turns.push_back(std::move(t));
    }
    return r;
  }
};

namespace {
Model open_archive(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) fail(path.string() + ": no such archive");
  return Model::open(path);
}
}  // namespace

Runner::Runner(const CaseFile& file) : impl_(std::make_unique<Impl>(file, open_archive(file.archive))) {}
Runner::~Runner() = default;
const RunInfo& Runner::info() const { return impl_->info; }
const Tokenizer& Runner::tokenizer() const { return impl_->tok; }

CaseResult Runner::run(const Case& c) const {
  CaseResult r;
  try {
    r = c.chat ? impl_->converse(c) : impl_->complete(c);
  } catch (const Error& e) {
    fail("case \"" + c.name + "\": " + e.what());
  }
  r.name = c.name;
  r.input = c.input;
  return r;
}

}  // namespace cact::golden
