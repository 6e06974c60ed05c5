// One-shot text continuation: -p TEXT / -p - / -f FILE without --chat.
#include "common/output.h"
#include "interrupt.h"
#include "run.h"

namespace cact::run {

int run_complete(const Runtime& rt, const Options& o) {
  const std::string prompt = prompt_text(o);
  std::vector<int32_t> ids = completion_prompt_ids(rt.tok(), prompt);
  Session session(rt.engine(), rt.session_options(completion_context(o, ids.size(), rt.model().header().max_seq_len)));
  Completion c;
  {
    const Generating generating;
    c = complete(session, rt.tok(), o, std::move(ids), [&](std::string_view text) {
      if (!o.json && !app::write_out(text)) return false;
      return !interrupted();
    });
  }
  if (o.json) {
    app::write_out(completion_json(o, rt.archive(), session, c));
  } else {
    app::write_out("\n");
  }
  app::check_out();
  warn_nonfinite_logits(session);
  report_completion(o, c, session.context());
  return interrupted() ? 130 : 0;
}

}  // namespace cact::run
