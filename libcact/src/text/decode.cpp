// Tokenizer::decode and StreamDecoder (TOKENIZER.md, Decode). Both go through
// render() below, so a stream's concatenated output equals decode() by construction.
#include <string>

#include "base/utf8.h"
#include "cact/tokenizer.h"

namespace cact {
namespace {

// Append the text of `bytes` to `out`: valid sequences as they are (▁ -> ' '),
// each byte that starts no valid sequence as U+FFFD, and, if `drop_space`, the
// first character dropped when it is a space. Unless `final`, stop before a
// trailing incomplete sequence. Returns the bytes consumed.
size_t render(std::string_view bytes, bool final, bool drop_space, bool& at_start, std::string& out) {
  size_t i = 0;
  while (i < bytes.size()) {
    const Utf8Step st = classify_utf8(bytes.substr(i));
    if (st.kind == Utf8Kind::Incomplete && !final) break;
    std::string_view ch;
    size_t used = 1;
    if (st.kind == Utf8Kind::Complete) {
      used = st.len;
      ch = bytes.substr(i, used);
      if (ch == kSpaceMark) ch = " ";
    } else {
      ch = kReplacement;
    }
    i += used;
    if (at_start) {
      at_start = false;
      if (drop_space && ch == " ") continue;
    }
    out += ch;
  }
  return i;
}

}  // namespace

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string bytes;
  for (const int32_t id : ids) bytes += piece_bytes(id);
  std::string out;
  out.reserve(bytes.size());
  bool at_start = true;
  render(bytes, /*final=*/true, model_.add_dummy_prefix, at_start, out);
  return out;
}

std::string StreamDecoder::push(int32_t id) {
  pending_ += tok_->piece_bytes(id);
  std::string out;
  const size_t used = render(pending_, /*final=*/false, tok_->model().add_dummy_prefix, at_start_, out);
  pending_.erase(0, used);
  return out;
}

std::string StreamDecoder::finish() {
  std::string out;
  render(pending_, /*final=*/true, tok_->model().add_dummy_prefix, at_start_, out);
  pending_.clear();
  at_start_ = start_ == StreamStart::text;  // the decoder is ready for a new stream
  return out;
}

}  // namespace cact
