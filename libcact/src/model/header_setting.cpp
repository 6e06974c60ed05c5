// One header field set from "field=value" text (cact-build synth --set).
#include <charconv>
#include <cstring>

#include "cact/error.h"
#include "cact/synth.h"

namespace cact {

void set_header_field(Header& h, std::string_view assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string_view::npos) fail("'" + std::string(assignment) + "': expected field=value");
  const std::string key(assignment.substr(0, eq)), value(assignment.substr(eq + 1));
  for (size_t i = 0; i < kHeaderFields; ++i) {
    if (key != header_field_name(i)) continue;
    if (i == 0 || i == 1 || i == 2) fail(key + ": this field is computed by the writer");
    uint8_t raw[kHeaderBytes];
    encode_header(h, raw);
    const char* first = value.data();
    const char* last = first + value.size();
    if (i == kHeaderFields - 1) {
      float f = 0;
      const auto [end, ec] = std::from_chars(first, last, f);
      if (ec == std::errc::result_out_of_range) fail(key + ": " + value + " is out of range for a float");
      if (ec != std::errc() || end != last) fail(key + ": '" + value + "' is not a number");
      std::memcpy(raw + 4 * i, &f, 4);
    } else {
      // Decimal only: "010" is ten, not octal eight (strtoul's base 0 would read it so).
      uint32_t u = 0;
      const auto [end, ec] = std::from_chars(first, last, u, 10);
      if (ec == std::errc::result_out_of_range) fail(key + ": " + value + " is out of range (0..4294967295)");
      if (ec != std::errc() || end != last) fail(key + ": '" + value + "' is not a non-negative decimal integer");
      std::memcpy(raw + 4 * i, &u, 4);
    }
    h = decode_header({raw, kHeaderBytes});
    return;
  }
  fail("'" + key + "' is not a header field (see docs/spec/FORMAT.md)");
}

}  // namespace cact
