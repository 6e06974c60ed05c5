// caller_string (text.h).
#include "capi/text.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace cact::capi {

char* caller_string(const std::string& text) {
  auto* out = static_cast<char*>(std::malloc(text.size() + 1));
  if (out == nullptr) throw std::bad_alloc();
  std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

}  // namespace cact::capi
