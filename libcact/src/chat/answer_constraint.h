#pragma once
// Schema-constrained decoding of an answer (docs/TOOLS.md "Constrained
// decoding"): which token ids may come next so that the answer stays a prefix
// of a well-formed answer whose <tool_call> lists are schema-valid calls.
//
// The answer's outer shape, by tool choice:
//   auto     : [<think>free text</think>]free text[<tool_call>calls</tool_call>];
//              a call whose name turns out not to be listed is cut off when its
//              name closes (event unlisted_name: the caller stops and reports it
//              as suppressed). The piece that closes it is taken whole, so the
//              answer may hold a few bytes past the name's quote; the cut call
//              starts at the last {"name": of the list.
//   none     : [<think>free text</think>]free text; <tool_call> is never allowed.
//   required : [<think>free text</think>[\n]]<tool_call>calls</tool_call>, names
//              constrained to the listed ones.
//   named    : as required, every call's name is that one tool.
// <think> only opens the answer, and <|im_end|>/eos never come inside it. Free
// text never spells a marker's surface with ordinary pieces ("<tool_call>"
// typed as text would be split as a marker by parse_answer).
// Inside <tool_call>: compact JSON only (no whitespace outside strings), the
// list [{"name":...,"arguments":{...}},...] with "name" first, argument keys from
// the tool's properties (each at most once, every required one before '}'),
// values as the Schema says (chat/call_grammar.h has the details: numbers of at
// most 15 digits without exponent, bounds held on every prefix, enum values as
// their literal texts). After </tool_call> only <|im_end|> or eos.
//
// Budget: allows() takes the tokens left; a token is refused when what it
// leaves could not be closed in the remaining tokens, counting one token per
// byte (every byte has a piece or a byte-fallback piece) and one per marker
// still due, so a call list opened is always closed (under auto: or cut at an
// unlisted name), and under required/named an open <think> too. When the
// budget is already short of that (a max_tokens below the shortest call), only
// tokens that shorten what is owed are allowed: never none, and the answer
// heads for its close.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cact/sampler.h"
#include "cact/tokenizer.h"
#include "cact/tools.h"

namespace cact::chat {

class AnswerConstraint {
 public:
  // `tok` and `tools` must outlive the constraint. Builds the vocabulary's byte
  // surfaces (▁ as a space, BYTE pieces as their byte, CONTROL/UNKNOWN as none).
  // Throws cact::Error when the tokenizer lacks a marker the mode needs or a
  // one-byte piece for a byte a call list may need (printable ASCII, the bytes
  // of names, keys and enum values), when a named tool is not listed, when no
  // listed tool can be called (required/named), or when an object schema
  // declares more than 64 properties.
  AnswerConstraint(const Tokenizer& tok, const ToolList& tools, ToolChoice choice);
  ~AnswerConstraint();
  AnswerConstraint(AnswerConstraint&&) noexcept;
  AnswerConstraint& operator=(AnswerConstraint&&) noexcept;

  void reset();  // back to the start of an answer

  // May `id` come next, with `budget` tokens left including this one?
  bool allows(int32_t id, uint32_t budget) const;
  // mask[id] = allows(id, budget) for every id < mask.size() (same result,
  // faster than calling allows() per id).
  void fill_mask(std::span<uint8_t> mask, uint32_t budget) const;

  enum class Event : uint8_t {
    none,
    call_list_closed,  // </tool_call> accepted
    unlisted_name,     // auto: a call's name just closed and is not listed (see unlisted_name())
  };
  // Take `id` (allowed; the budget is not checked here). Returns what it
  // completed. Throws cact::Error, changing nothing, when `id` may not come next.
  Event accept(int32_t id);
  const std::string& unlisted_name() const;

  // True while inside <tool_call> (the constraint is doing work).
  bool in_call_list() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The constraint as the sampler's filter, with the tokens the answer has left.
class BudgetFilter final : public TokenFilter {
 public:
  BudgetFilter(const AnswerConstraint& c, uint32_t budget) : c_(&c), budget_(budget) {}
  bool allows(int32_t id) const override { return c_->allows(id, budget_); }
  void fill_mask(std::span<uint8_t> mask) const override { c_->fill_mask(mask, budget_); }

 private:
  const AnswerConstraint* c_;
  uint32_t budget_;
};

}  // namespace cact::chat
