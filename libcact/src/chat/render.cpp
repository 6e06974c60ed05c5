// Rendering of the chat template into ids (render.h).
#include "chat/render.h"

#include <algorithm>

#include "cact/error.h"

namespace cact::chat {
namespace {

int32_t marker_id(const Tokenizer& tok, std::string_view surface) {
  const int32_t id = tok.find(surface);
  if (id < 0 || tok.model().pieces[size_t(id)].type != PieceType::UserDefined) {
    fail("this archive's tokenizer has no " + std::string(surface) + " marker (not a chat model)");
  }
  return id;
}

}  // namespace

ChatMarkers::ChatMarkers(const Tokenizer& tok)
    : bos(int32_t(tok.model().bos_id)),
      eos(int32_t(tok.model().eos_id)),
      im_start(marker_id(tok, "<|im_start|>")),
      im_end(marker_id(tok, "<|im_end|>")),
      tools(marker_id(tok, "<tools>")),
      tools_end(marker_id(tok, "</tools>")),
      result(marker_id(tok, "<tool_result>")),
      result_end(marker_id(tok, "</tool_result>")) {
  for (size_t id = 0; id < tok.size(); ++id) {
    const Piece& p = tok.model().pieces[id];
    if (p.type == PieceType::UserDefined && !p.surface.empty()) all.emplace_back(p.surface, int32_t(id));
  }
  // Longest first, as the encoder matches them.
  std::stable_sort(all.begin(), all.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

PromptBuilder& PromptBuilder::markup(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    bool matched = false;
    for (const auto& [surface, id] : markers_->all) {
      if (s.compare(i, surface.size(), surface) == 0) {
        marker(id);
        i += surface.size();
        matched = true;
        break;
      }
    }
    if (!matched) run_ += s[i++];
  }
  return *this;
}

PromptBuilder& PromptBuilder::marker(int32_t id) {
  flush();
  out_->push_back(id);
  return *this;
}

PromptBuilder& PromptBuilder::ids(const std::vector<int32_t>& ids) {
  flush();
  out_->insert(out_->end(), ids.begin(), ids.end());
  return *this;
}

void PromptBuilder::flush() {
  if (run_.empty()) return;
  // The dummy prefix belongs to the start of a whole text; a conversation's
  // runs all follow a marker or bos, so none is the start.
  const std::vector<int32_t> ids = tok_->encode_data(run_, /*at_start=*/false);
  out_->insert(out_->end(), ids.begin(), ids.end());
  run_.clear();
}

std::vector<int32_t> render_prefix(const Tokenizer& tok, const ChatMarkers& m, std::string_view system,
                                   std::string_view tools_json) {
  std::vector<int32_t> out{m.bos};
  {
    PromptBuilder b(tok, m, out);
    if (!system.empty()) b.marker(m.im_start).text("system\n").text(system).marker(m.im_end).text("\n");
    b.marker(m.im_start).text("user\n").marker(m.tools).text(tools_json).marker(m.tools_end);
  }
  return out;
}

void render_user_turn(PromptBuilder& b, const ChatMarkers& m, std::string_view query, bool first, bool after_answer) {
  if (after_answer) b.marker(m.im_end).text("\n");
  if (!first) b.marker(m.im_start).text("user");
  b.text("\n").text(query).marker(m.im_end).text("\n").marker(m.im_start).text("assistant\n");
}

void render_tool_turn(PromptBuilder& b, const ChatMarkers& m, const std::vector<std::string>& results,
                      bool after_answer) {
  if (after_answer) b.marker(m.im_end).text("\n");
  b.marker(m.im_start).text("user\n");
  for (const std::string& r : results) b.marker(m.result).text(r).marker(m.result_end);
  b.marker(m.im_end).text("\n").marker(m.im_start).text("assistant\n");
}

void render_turns(PromptBuilder& b, const ChatMarkers& m, const std::vector<Turn>& turns, size_t from, size_t first) {
  size_t i = from;
  while (i < turns.size()) {
    const Turn& t = turns[i];
    const bool after_answer = i > first && turns[i - 1].role == Turn::Role::assistant;
    if (t.role == Turn::Role::assistant) {
      if (t.ids.empty()) {
        b.markup(t.content);
      } else {
        b.ids(t.ids);
      }
      ++i;
    } else if (t.role == Turn::Role::user) {
      render_user_turn(b, m, t.content, i == first, after_answer);
      ++i;
    } else {
      std::vector<std::string> results;
      for (; i < turns.size() && turns[i].role == Turn::Role::tool; ++i) results.push_back(turns[i].content);
      render_tool_turn(b, m, results, after_answer);
    }
  }
}

std::vector<int32_t> render_first_turn(const Tokenizer& tok, std::string_view system, const ToolList& tools,
                                       std::string_view query) {
  const ChatMarkers markers(tok);
  std::vector<int32_t> out = render_prefix(tok, markers, system, tools.compact_json);
  {
    PromptBuilder b(tok, markers, out);
    render_user_turn(b, markers, query, /*first=*/true, /*after_answer=*/false);
  }
  return out;
}

}  // namespace cact::chat
