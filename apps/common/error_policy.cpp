#include "common/error_policy.h"

#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include "cact/error.h"
#include "common/output.h"

namespace cact::app {

void usage_error(const std::string& message) { throw UsageError(message); }

int run_guarded(const char* tool, const std::function<int()>& body) {
  try {
    const int rc = body();
    check_out();
    return rc;
  } catch (const UsageError& e) {
    note(tool, std::string(e.what()) + " (see --help)");
    return 2;
  } catch (const cact::Error& e) {
    note(tool, e.what());
  } catch (const std::bad_alloc&) {
    note(tool, "out of memory");
  } catch (const std::exception& e) {
    note(tool, e.what());
  }
  return 1;
}

}  // namespace cact::app
