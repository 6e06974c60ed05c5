#include "answer_view.h"

#include <array>
#include <utility>

namespace cact::run {

namespace {

constexpr std::string_view kThink = "<think>", kThinkEnd = "</think>", kCall = "<tool_call>", kCallEnd = "</tool_call>";
constexpr std::array<std::string_view, 4> kMarkers{kThink, kThinkEnd, kCall, kCallEnd};
constexpr std::string_view kDim = "\033[2m", kRed = "\033[31m", kPlain = "\033[0m";

// Length of the longest tail of `s` that begins a marker (it may complete later).
size_t partial_marker(std::string_view s) {
  size_t keep = 0;
  for (std::string_view m : kMarkers) {
    for (size_t n = std::min(m.size() - 1, s.size()); n > keep; --n) {
      if (s.substr(s.size() - n) == m.substr(0, n)) {
        keep = n;
        break;
      }
    }
  }
  return keep;
}

}  // namespace

std::string AnswerView::take(std::string_view text) {
  if (in_call_ || text.empty()) return {};
  at_line_start_ = text.back() == '\n';
  return std::string(text);
}

std::string AnswerView::push(std::string_view piece) {
  held_ += piece;
  std::string out;
  while (true) {
    size_t at = std::string::npos;
    std::string_view marker;
    for (std::string_view m : kMarkers) {
      const size_t p = held_.find(m);
      if (p < at) {
        at = p;
        marker = m;
      }
    }
    if (at == std::string::npos) break;
    out += take(std::string_view(held_).substr(0, at));
    if (marker == kCall) in_call_ = true;
    if (marker == kCallEnd) in_call_ = false;
    const bool think_edge = marker == kThink || marker == kThinkEnd;
    if (think_edge) in_think_ = marker == kThink;
    if (think_edge && color_) {
      out += in_think_ ? kDim : kPlain;
    } else if (think_edge) {
      out += take(marker);  // no colour: the tags show where the reasoning is
    }
    held_.erase(0, at + marker.size());
  }
  const size_t keep = partial_marker(held_);
  out += take(std::string_view(held_).substr(0, held_.size() - keep));
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string AnswerView::finish(bool new_line) {
  std::string out = take(std::exchange(held_, {}));
  if (in_think_ && color_) out += kPlain;
  in_call_ = in_think_ = false;
  if (!at_line_start_ || new_line) out += '\n';
  at_line_start_ = true;
  return out;
}

std::string call_lines(const chat::Answer& a, bool color) {
  std::string out;
  const auto bad = [&](const std::string& what) {
    out += color ? std::string(kRed) + "✗ " + what + std::string(kPlain) + "\n" : "✗ " + what + "\n";
  };
  for (size_t i = 0; i < a.parsed.calls.size(); ++i) {
    const chat::Call& c = a.parsed.calls[i];
    const bool ok = i >= a.validation.size() || a.validation[i].violation == chat::Violation::ok;
    if (ok) {
      out += "→ " + c.name + " " + c.arguments + "\n";
    } else {
      bad(c.name + " " + c.arguments + " (invalid: " + a.validation[i].message + ")");
    }
  }
  for (const chat::CallCheck& c : a.parsed.call_json) bad("tool call that is not JSON: " + c.message);
  for (const chat::SuppressedCall& s : a.suppressed_calls) bad(s.name + " (suppressed: " + s.reason + ")");
  return out;
}

}  // namespace cact::run
