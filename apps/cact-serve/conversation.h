#pragma once
// One request's conversation on a slot's ChatSession: continued when the slot
// already holds it, else replayed (ChatSession::load) behind the prefix the
// cache restores; then the answer, with the token counts OpenAI's usage reports.
#include <cstdint>

#include "cact/chat.h"
#include "cact/openai.h"
#include "slots.h"

namespace cact::serve {

struct Usage {
  uint32_t prompt = 0;      // tokens the answer was conditioned on
  uint32_t cached = 0;      // of which restored (prefix snapshot) or already held (continued conversation)
  uint32_t completion = 0;  // tokens generated
};

struct Outcome {
  chat::Answer answer;
  Usage usage;
};

// Refuses (HttpError 400, code context_length_exceeded) a request whose prefix
// and new turn cannot fit `context` positions with room for one token of
// answer, before it waits for a slot. Older turns never cause this: the
// session drops them to make room (cact.tokens.dropped_turns).
void check_fits(const Tokenizer& tok, const chat::openai::ChatRequest& request, uint32_t context);

// `fit`: what the slot held when it was picked (slot_fit). A sampled request
// without a seed gets a random one (reported in the answer). Throws
// cact::Error when the conversation does not fit the context; the slot is then
// left with no conversation, never a half-loaded one.
Outcome answer_request(chat::ChatSession& chat, SlotFit fit, const chat::openai::ChatRequest& request,
                       const Tokenizer& tok, const chat::OnPiece& on_piece);

}  // namespace cact::serve
