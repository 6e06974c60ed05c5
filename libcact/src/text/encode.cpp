// Tokenizer::encode (TOKENIZER.md, Encode): normalise, split at USER_DEFINED
// pieces (longest first, via a trie), run BPE on the segments in between.
#include <cstdint>
#include <limits>
#include <string>

#include "base/utf8.h"
#include "cact/error.h"
#include "cact/tokenizer.h"
#include "text/bpe.h"
#include "text/tokenizer_impl.h"

namespace cact {
namespace {

// Step 2: ' ' -> '▁', the dummy prefix, and (like SentencePiece's normaliser) every
// byte that does not start a valid UTF-8 sequence -> U+FFFD, one per byte. After
// this the text is valid UTF-8, so BPE symbols are code points.
std::string normalise(std::string_view text, bool dummy_prefix) {
  std::string norm;
  norm.reserve(text.size() + text.size() / 2 + 3);
  if (dummy_prefix) norm += kSpaceMark;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ') {
      norm += kSpaceMark;
      ++i;
      continue;
    }
    const size_t n = valid_utf8_len(text.substr(i));
    if (n == 0) {
      norm += kReplacement;
      ++i;
    } else {
      norm.append(text.substr(i, n));
      i += n;
    }
  }
  return norm;
}

}  // namespace

std::vector<int32_t> Tokenizer::encode_data(std::string_view text, bool at_start) const {
  std::vector<int32_t> ids;
  if (text.empty()) return ids;
  const std::string norm = normalise(text, at_start && model_.add_dummy_prefix);
  if (norm.size() > std::numeric_limits<uint32_t>::max()) fail("tokenizer: encode input is larger than 4 GiB");
  text::BpeScratch scratch;
  ids.reserve(norm.size() / 3 + 1);
  text::bpe_segment(norm, impl_->bpe, scratch, ids);
  return ids;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  if (text.empty()) return ids;
  const std::string norm = normalise(text, model_.add_dummy_prefix);
  if (norm.size() > std::numeric_limits<uint32_t>::max()) fail("tokenizer: encode input is larger than 4 GiB");
  const std::string_view s = norm;
  ids.reserve(s.size() / 3 + 1);

  text::BpeScratch scratch;
  size_t seg_begin = 0;
  size_t i = 0;
  while (i < s.size()) {
    int32_t id = -1;
    const size_t n = impl_->user.longest_prefix(s.substr(i), &id);
    if (n > 0) {
      text::bpe_segment(s.substr(seg_begin, i - seg_begin), impl_->bpe, scratch, ids);
      ids.push_back(id);
      i += n;
      seg_begin = i;
    } else {
      i += text::utf8_lead_len(static_cast<unsigned char>(s[i]));
    }
  }
  text::bpe_segment(s.substr(seg_begin), impl_->bpe, scratch, ids);
  return ids;
}

}  // namespace cact
