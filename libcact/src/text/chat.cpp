// The Needle chat format (TOKENIZER.md). The system turn appears only when a
// system text is given (the template brackets only that part as optional); the
// <tools>...</tools> line is always there, so empty tools render as
// "<tools></tools>\n". No escaping: the caller's texts are inserted verbatim.
#include <string>

#include "cact/tokenizer.h"

namespace cact {

std::string render_chat_prompt(std::string_view system, std::string_view tools_json, std::string_view query) {
  std::string out;
  out.reserve(system.size() + tools_json.size() + query.size() + 96);
  if (!system.empty()) {
    out += "<|im_start|>system\n";
    out += system;
    out += "<|im_end|>\n";
  }
  out += "<|im_start|>user\n<tools>";
  out += tools_json;
  out += "</tools>\n";
  out += query;
  out += "<|im_end|>\n<|im_start|>assistant\n";
  return out;
}

}  // namespace cact
