// cact_tokenize / cact_detokenize and the tokenizer's special ids.
#include <string_view>

#include "capi/handles.h"
#include "capi/options.h"

using cact::capi::fail_with;
using cact::capi::guarded;
using cact::capi::need;

namespace {

constexpr uint32_t kTokenizeFlags = CACT_TOKENIZE_ADD_BOS | CACT_TOKENIZE_AS_DATA;

std::string_view text_arg(const char* text, size_t length) {
  if (length != 0) need(text, "text");
  return std::string_view(text == nullptr ? "" : text, length);
}

}  // namespace

extern "C" {

cact_status cact_tokenizer_new(const cact_model* model, cact_tokenizer** out) noexcept {
  if (out != nullptr) *out = nullptr;
  return guarded(__func__, nullptr, CACT_ERROR_BAD_MODEL, [&] {
    need(out, "out");
    const cact::Model& m = need(model, "model").data->model;
    // The Tokenizer copies the parsed blob: it does not keep the model alive.
    *out = new cact_tokenizer{std::make_shared<const cact::Tokenizer>(m.tokenizer_model())};
  });
}

void cact_tokenizer_free(cact_tokenizer* tokenizer) noexcept { delete tokenizer; }

cact_status cact_tokenize(const cact_tokenizer* tokenizer, const char* text, size_t length, uint32_t flags,
                          int32_t* ids, size_t capacity, size_t* count) noexcept {
  return guarded(__func__, nullptr, CACT_ERROR_INVALID_ARGUMENT, [&] {
    const cact::Tokenizer& tok = *need(tokenizer, "tokenizer").tok;
    const std::string_view t = text_arg(text, length);
    if ((flags & ~kTokenizeFlags) != 0)
      fail_with(CACT_ERROR_INVALID_ARGUMENT, "unknown flags " + std::to_string(flags));
    std::vector<int32_t> out;
    if ((flags & CACT_TOKENIZE_ADD_BOS) != 0) out.push_back(int32_t(tok.model().bos_id));
    const std::vector<int32_t> body =
        (flags & CACT_TOKENIZE_AS_DATA) != 0 ? tok.encode_data(t, /*at_start=*/true) : tok.encode(t);
    out.insert(out.end(), body.begin(), body.end());
    cact::capi::copy_out(out.data(), out.size(), ids, capacity, count, "ids");
  });
}

cact_status cact_detokenize(const cact_tokenizer* tokenizer, const int32_t* ids, size_t count, char* text,
                            size_t capacity, size_t* length) noexcept {
  return guarded(__func__, nullptr, CACT_ERROR_INVALID_ARGUMENT, [&] {
    const cact::Tokenizer& tok = *need(tokenizer, "tokenizer").tok;
    if (count != 0) need(ids, "ids");
    const std::string out = tok.decode(std::span<const int32_t>(ids, count));
    need(length, "length") = out.size();
    if (out.size() >= capacity) {
      fail_with(
          CACT_ERROR_BUFFER_TOO_SMALL,
          std::to_string(out.size()) + " bytes and the NUL do not fit the capacity of " + std::to_string(capacity));
    }
    std::memcpy(&need(text, "text"), out.c_str(), out.size() + 1);
  });
}

cact_status cact_tokenizer_special(const cact_tokenizer* tokenizer, cact_special_token which, int32_t* id) noexcept {
  return guarded(__func__, nullptr, CACT_ERROR_INTERNAL, [&] {
    const cact::Tokenizer& tok = *need(tokenizer, "tokenizer").tok;
    need(id, "id");
    const cact::TokenizerModel& m = tok.model();
    switch (which) {
      case CACT_TOKEN_BOS:
        *id = int32_t(m.bos_id);
        return;
      case CACT_TOKEN_EOS:
        *id = int32_t(m.eos_id);
        return;
      case CACT_TOKEN_PAD:
        *id = int32_t(m.pad_id);
        return;
      case CACT_TOKEN_UNK:
        *id = int32_t(m.unk_id);
        return;
      case CACT_TOKEN_IM_END: {
        const int32_t found = tok.find("<|im_end|>");
        if (found < 0) fail_with(CACT_ERROR_UNSUPPORTED, "this tokenizer has no <|im_end|> (not a chat model)");
        *id = found;
        return;
      }
      default:
        break;
    }
    fail_with(CACT_ERROR_INVALID_ARGUMENT, "which " + std::to_string(int(which)) + " is not a cact_special_token");
  });
}

cact_status cact_tokenizer_size(const cact_tokenizer* tokenizer, size_t* size) noexcept {
  return guarded(__func__, nullptr, CACT_ERROR_INTERNAL,
                 [&] { need(size, "size") = need(tokenizer, "tokenizer").tok->size(); });
}

}  // extern "C"
