// The conversation's prefix (system, tool list, or a resumed transcript) and
// the options of each answer, from the flags.
#include "cact/error.h"
#include "common/input.h"
#include "run.h"

namespace cact::run {

chat::ToolList read_tool_file(const std::string& path, const std::string& origin) {
  return chat::parse_tool_list(app::read_input(path, origin), origin);
}

chat::ToolList cli_tools(const Options& o, bool bundled, const std::filesystem::path& archive) {
  if (!o.tools_file.empty()) return read_tool_file(o.tools_file, "--tools " + o.tools_file);
  if (!o.tools_json.empty()) return chat::parse_tool_list(o.tools_json, "--tools-json");
  // The bundled model comes with the demo list it was trained to use.
  if (bundled) {
    const std::string path = default_tools(archive).string();
    return read_tool_file(path, path);
  }
  return {};
}

chat::GenerateOptions turn_options(const Options& o) {
  chat::GenerateOptions g;
  g.max_tokens = o.max_tokens.value_or(kChatTokens);
  g.sampler = turn_sampler(o);
  g.stop = o.stop;
  g.tool_choice = chat::parse_tool_choice(o.tool_choice);
  g.constrain = !o.no_constrain;
  return g;
}

void load_transcript(chat::ChatSession& chat, const std::string& path, const std::string& origin) {
  chat.load(chat::parse_transcript(app::read_input(path, origin), origin));
}

chat::ChatSession open_chat(const Runtime& rt, const Options& o) {
  chat::ChatOptions co;
  co.session = rt.session_options(o.context);
  chat::ChatSession chat(rt.engine(), rt.tok(), co);
  if (!o.load.empty()) {
    load_transcript(chat, o.load, "--load " + o.load);  // its own system and tools
  } else {
    chat.set_system(o.system);
    chat.set_tools(cli_tools(o, rt.bundled(), rt.archive()));
  }
  return chat;
}

}  // namespace cact::run
