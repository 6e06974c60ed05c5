#pragma once
// The one error type of libcact. Its message names what is wrong (field, record,
// flag or path); apps print it as one line on stderr and exit non-zero.
#include <stdexcept>
#include <string>

namespace cact {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string& message);

}  // namespace cact
