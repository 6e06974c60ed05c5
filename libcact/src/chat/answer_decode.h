#pragma once
// One answer's decoding loop: sample (under the tool-call constraint when one
// is given), feed, stream, stop; then split and validate what was said.
#include "cact/chat.h"
#include "chat/answer_constraint.h"
#include "chat/render.h"

namespace cact::chat {

// Decodes from the session's current logits (the turn's prompt is fed). Every
// generated id is fed to the session, the stop token (<|im_end|>, eos) is not;
// ids the constraint forces are fed in one call with the id before them.
// Fills a's text, ids, stop, calls, validation and decode time.
void decode_answer(Session& session, const Tokenizer& tok, const ChatMarkers& markers, const ToolList& tools,
                   const GenerateOptions& options, AnswerConstraint* constraint, const OnPiece& on_piece, Answer& a);

}  // namespace cact::chat
