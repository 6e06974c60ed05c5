#pragma once
// Stop strings over streamed text: text is passed on as soon as it can no
// longer be the start of a stop string, and generation ends before the first
// complete match, so no part of a stop string is ever printed.
#include <string>
#include <string_view>
#include <vector>

namespace cact::chat {

class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops);
  // Add generated text; returns what is safe to pass on now. After a match,
  // matched() is true and the text before it has been returned.
  std::string push(std::string_view text);
  // The held-back tail, once generation has ended without a match.
  std::string finish();
  bool matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool matched_ = false;
};

}  // namespace cact::chat
