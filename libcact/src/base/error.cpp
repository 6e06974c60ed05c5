#include "cact/error.h"

namespace cact {
void fail(const std::string& message) { throw Error(message); }
}  // namespace cact
