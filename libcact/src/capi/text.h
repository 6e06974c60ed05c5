#pragma once
// Strings handed to the caller: malloc'd copies, released by cact_string_free.
#include <string>

namespace cact::capi {

// A NUL-terminated copy the caller owns; throws std::bad_alloc.
char* caller_string(const std::string& text);

}  // namespace cact::capi
