// cact_chat_render: the ids of a conversation's first turn, as cact_chat_ask feeds them.
#include "cact/chat.h"
#include "cact/error.h"
#include "capi/handles.h"
#include "capi/options.h"

using cact::capi::fail_with;
using cact::capi::guarded;
using cact::capi::need;
using cact::capi::need_text;

extern "C" {

cact_status cact_chat_render(const cact_tokenizer* tokenizer, const char* system, const char* tools_json,
                             const char* query, int32_t* ids, size_t capacity, size_t* count) noexcept {
  return guarded(__func__, nullptr, CACT_ERROR_UNSUPPORTED, [&] {
    const cact::Tokenizer& tok = *need(tokenizer, "tokenizer").tok;
    need_text(query, "query");
    cact::chat::ToolList tools;
    if (tools_json != nullptr && *tools_json != '\0') {
      try {
        tools = cact::chat::parse_tool_list(tools_json, "tool list");
      } catch (const cact::Error& e) {
        fail_with(CACT_ERROR_BAD_TOOLS, e.what());
      }
    }
    // UNSUPPORTED (guarded's default) when it is not a chat model's tokenizer.
    const std::vector<int32_t> out = cact::chat::render_first_turn(tok, system == nullptr ? "" : system, tools, query);
    cact::capi::copy_out(out.data(), out.size(), ids, capacity, count, "ids");
  });
}

}  // extern "C"
