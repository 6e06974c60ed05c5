#pragma once
// Options structs of the C API: a caller's struct may be older (smaller) than
// this library's; the fields it lacks keep their defaults (docs/API.md "ABI").
#include <algorithm>
#include <cstring>
#include <string>

#include "capi/guard.h"

namespace cact::capi {

// The options `given` (NULL: the defaults `init` sets). `name` names the
// struct and its init function in the message for a struct that was never
// initialised (struct_size below the first version's size).
template <typename T>
T read_options(const T* given, void (*init)(T*), size_t first_version_size, const char* name) {
  T options;
  init(&options);
  if (given == nullptr) return options;
  if (given->struct_size < first_version_size) {
    fail_with(CACT_ERROR_INVALID_ARGUMENT, std::string(name) + ".struct_size is " + std::to_string(given->struct_size) +
                                               ": initialise the struct with " + name + "_init");
  }
  std::memcpy(&options, given, std::min<size_t>(given->struct_size, sizeof options));
  options.struct_size = sizeof options;
  return options;
}

// Copies `values` to out[0, capacity) and sets *count, or fails with
// BUFFER_TOO_SMALL (nothing written) when they do not fit.
template <typename T>
void copy_out(const T* values, size_t n, T* out, size_t capacity, size_t* count, const char* what) {
  need(count, "count");
  *count = n;
  if (n > capacity) {
    fail_with(CACT_ERROR_BUFFER_TOO_SMALL,
              std::to_string(n) + " " + what + " do not fit the capacity of " + std::to_string(capacity));
  }
  if (n != 0) std::memcpy(&need(out, what), values, n * sizeof(T));
}

}  // namespace cact::capi
