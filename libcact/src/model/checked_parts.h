#pragma once
// What a passing check_archive has already built, for Model to keep instead of
// deriving the canon and parsing the tokenizer a second time (private to the
// model layer).
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cact/canon.h"
#include "cact/tokenizer.h"

namespace cact {

struct CheckedParts {
  std::shared_ptr<const Canon> canon;
  std::shared_ptr<const TokenizerModel> tokenizer;
};

// check_archive(file), and when it finds no problem, the canon and the parsed
// tokenizer in *parts (untouched otherwise).
std::vector<std::string> check_archive(std::span<const uint8_t> file, CheckedParts* parts);

}  // namespace cact
