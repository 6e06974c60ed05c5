// The library as a whole: its version and the release of strings it hands out.
#include <cstdlib>

#include "cact/cact.h"

#define CACT_STRINGIFY2(x) #x
#define CACT_STRINGIFY(x) CACT_STRINGIFY2(x)

extern "C" {

const char* cact_version(void) noexcept {
  return CACT_STRINGIFY(CACT_VERSION_MAJOR) "." CACT_STRINGIFY(CACT_VERSION_MINOR) "." CACT_STRINGIFY(
      CACT_VERSION_PATCH);
}

uint32_t cact_version_number(void) noexcept { return CACT_VERSION_NUMBER; }

// Strings handed to the caller are malloc'd (capi/text.h), so that any
// language's runtime can release them here without knowing ours.
void cact_string_free(char* text) noexcept { std::free(text); }

}  // extern "C"
