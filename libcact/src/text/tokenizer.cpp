// Tokenizer construction: validate the model once and build the lookup tables.
#include <algorithm>
#include <string>

#include "cact/error.h"
#include "cact/tokenizer.h"
#include "text/model_check.h"
#include "text/tokenizer_impl.h"

namespace cact {

void UserPieceTrie::insert(std::string_view surface, int32_t id) {
  if (surface.empty()) return;
  first_[static_cast<uint8_t>(surface[0])] = true;
  uint32_t node = 0;
  for (const char ch : surface) {
    const auto c = static_cast<uint8_t>(ch);
    auto& kids = nodes_[node].kids;
    auto it = std::lower_bound(kids.begin(), kids.end(), c,
                               [](const std::pair<uint8_t, uint32_t>& k, uint8_t v) { return k.first < v; });
    if (it != kids.end() && it->first == c) {
      node = it->second;
    } else {
      const auto next = static_cast<uint32_t>(nodes_.size());
      kids.insert(it, {c, next});
      nodes_.emplace_back();  // invalidates `kids`; not used again below
      node = next;
    }
  }
  nodes_[node].id = id;
}

size_t UserPieceTrie::longest_prefix(std::string_view s, int32_t* id) const {
  if (s.empty() || !first_[static_cast<uint8_t>(s[0])]) return 0;
  size_t best = 0;
  uint32_t node = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<uint8_t>(s[i]);
    const auto& kids = nodes_[node].kids;
    auto it = std::lower_bound(kids.begin(), kids.end(), c,
                               [](const std::pair<uint8_t, uint32_t>& k, uint8_t v) { return k.first < v; });
    if (it == kids.end() || it->first != c) break;
    node = it->second;
    if (nodes_[node].id >= 0) {
      best = i + 1;
      *id = nodes_[node].id;
    }
  }
  return best;
}

Tokenizer::Impl::Impl(const TokenizerModel& model) {
  const size_t n = model.pieces.size();
  surfaces.reserve(n);
  bytes_of.reserve(n);
  for (const Piece& p : model.pieces) surfaces.push_back(p.surface);
  bpe.build(model, surfaces);
  by_surface.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<int32_t>(i);
    const std::string_view s = surfaces[i];
    by_surface.emplace(s, id);
    switch (model.pieces[i].type) {
      case PieceType::UserDefined:
        user.insert(s, id);
        bytes_of.emplace_back(s);
        break;
      case PieceType::Normal:
        bytes_of.emplace_back(s);
        break;
      case PieceType::Byte:
        bytes_of.emplace_back(1, static_cast<char>(text::byte_piece_value(s)));
        break;
      case PieceType::Control:
      case PieceType::Unknown:
        bytes_of.emplace_back();
        break;
    }
  }
}

Tokenizer::Tokenizer(TokenizerModel model) : model_(std::move(model)) {
  check_tokenizer_model(model_, "tokenizer");
  impl_ = std::make_shared<const Impl>(model_);
}

std::string_view Tokenizer::piece_bytes(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->bytes_of.size()) {
    fail("tokenizer: id " + std::to_string(id) + " is outside the vocabulary (" +
         std::to_string(impl_->bytes_of.size()) + " pieces)");
  }
  return impl_->bytes_of[static_cast<size_t>(id)];
}

int32_t Tokenizer::find(std::string_view surface) const { return impl_->by_surface.find(surface); }

}  // namespace cact
