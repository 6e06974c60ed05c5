// The REPL's /commands (docs/CHAT.md "Commands").
#include <nlohmann/json.hpp>

#include "cact/atomic_file.h"
#include "cact/error.h"
#include "common/output.h"
#include "common/suggest.h"
#include "repl.h"
#include "tool_result.h"

namespace cact::run {

namespace {

struct Command {
  const char* name;
  const char* args;
  const char* help;
};

constexpr Command kCommands[] = {
    {"/help", "", "this list"},
    {"/reset", "", "start a new conversation (same system message and tools)"},
    {"/system", "[TEXT]", "show the system message, or set it (starts a new conversation)"},
    {"/tools", "[FILE | JSON]", "list the tools, or replace them (starts a new conversation)"},
    {"/result", "JSON | TEXT", "answer the last tool call(s) with a tool result (a list for several calls)"},
    {"/stats", "", "tokens, speed and seed of the last answer; context use"},
    {"/save", "FILE", "write the conversation as a transcript (JSON)"},
    {"/load", "FILE", "resume a saved transcript"},
    {"/quit", "", "leave (also /exit, Ctrl-D, Ctrl-C on an empty line)"},
};

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\n"), b = s.find_last_not_of(" \t\n");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

}  // namespace

bool Repl::command(const std::string& line) {
  const size_t space = line.find_first_of(" \t\n");
  const std::string name = line.substr(0, space);
  const std::string arg = space == std::string::npos ? std::string() : trim(line.substr(space));
  const auto need_arg = [&] {
    if (arg.empty()) fail(name + " needs an argument (see /help)");
  };
  if (name == "/quit" || name == "/exit") return false;
  if (name == "/help") {
    help();
  } else if (name == "/reset") {
    chat_.reset();
    last_.reset();
    say("new conversation");
  } else if (name == "/system") {
    if (arg.empty()) {
      app::write_out(chat_.system().empty() ? "(no system message)\n" : chat_.system() + "\n");
    } else {
      chat_.set_system(arg);
      last_.reset();
      say("new conversation with this system message");
    }
  } else if (name == "/tools") {
    if (arg.empty()) {
      show_tools();
    } else {
      chat_.set_tools(arg[0] == '[' ? chat::parse_tool_list(arg, "/tools") : read_tool_file(arg, "/tools " + arg));
      last_.reset();
      const size_t n = chat_.tools().tools.size();
      say("new conversation with " + std::to_string(n) + (n == 1 ? " tool" : " tools"));
    }
  } else if (name == "/result") {
    need_arg();
    tool_result(arg);
  } else if (name == "/stats") {
    show_stats();
  } else if (name == "/save") {
    need_arg();
    save(arg);
  } else if (name == "/load") {
    need_arg();
    load_transcript(chat_, arg, "/load " + arg);
    last_.reset();
    say("resumed " + std::to_string(chat_.turns().size()) + " turns from " + arg);
  } else {
    std::vector<std::string> names{"/exit"};
    for (const Command& c : kCommands) names.emplace_back(c.name);
    const std::string near = app::nearest(name, names);
    fail("unknown command " + name + (near.empty() ? "" : " (did you mean " + near + "?)") +
         "; //text sends a message starting with /");
  }
  return true;
}

void Repl::help() {
  std::string out;
  for (const Command& c : kCommands) {
    std::string head = std::string(c.name) + (c.args[0] != '\0' ? " " : "") + c.args;
    head.resize(std::max<size_t>(head.size() + 2, 24), ' ');
    out += "  " + head + c.help + "\n";
  }
  out += "  A line ending in \\ continues on the next; //text sends /text.\n";
  app::write_out(out);
}

void Repl::tool_result(const std::string& arg) {
  // JSON when it parses, else the text as it is.
  nlohmann::ordered_json value = nlohmann::ordered_json::parse(arg, nullptr, false);
  if (value.is_discarded()) value = arg;
  const std::vector<std::string> results = tool_result_texts(value, pending_calls(chat_), "/result");
  answer([&](const chat::OnPiece& on_piece) { return chat_.tool_results(results, turn_options(o_), on_piece); });
}

void Repl::show_stats() {
  std::string out;
  if (last_) out += "last answer: " + stats_line(*last_) + "\n";
  out += "conversation: " + std::to_string(chat_.turns().size()) + " turns, " + std::to_string(chat_.position()) +
         " of " + std::to_string(chat_.context()) + " positions; prefix cache hits " +
         std::to_string(chat_.prefix_cache_hits()) + "\n";
  app::write_out(out);
}

void Repl::show_tools() {
  std::string out;
  for (const chat::Tool& t : chat_.tools().tools)
    out += "  " + t.name + (t.description.empty() ? "" : ": " + t.description) + "\n";
  app::write_out(out.empty() ? "(no tools)\n" : out);
}

void Repl::save(const std::string& path) {
  const std::string text = chat_.transcript_json();
  AtomicFile file(path);
  file.write({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  file.commit();
  say("saved " + std::to_string(chat_.turns().size()) + " turns to " + path);
}

}  // namespace cact::run
