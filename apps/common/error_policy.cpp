#include "common/error_policy.h"

#include <cstdio>
#include <exception>
#include <new>

#include "cact/error.h"

namespace cact::app {

int run_guarded(const char* tool, const std::function<int()>& body) {
  try {
    return body();
  } catch (const cact::Error& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: out of memory\n", tool);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
  }
  return 1;
}

}  // namespace cact::app
