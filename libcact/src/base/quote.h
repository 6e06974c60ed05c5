#pragma once
#include <string>
#include <string_view>

namespace cact {

// Bytes for an error message: quoted, printable ASCII kept, every other byte
// \xNN, long ones cut, so hostile input cannot garble a terminal or a log.
std::string quote_bytes(std::string_view s);

}  // namespace cact
