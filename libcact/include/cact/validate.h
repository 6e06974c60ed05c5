#pragma once
// Structural checks of FORMAT.md's last section. Each returns every problem
// found (empty = fine), one message per problem naming the field or record.
// The canon checks (names, shapes, heads) are in model.h.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "cact/format.h"

namespace cact {

// Tag first: a Needle 2 or unknown tag is the only problem reported.
std::vector<std::string> check_header(const Header& h);
std::vector<std::string> check_codebooks(std::span<const float> codebooks);

// Names a record for messages, e.g. "record 37 (layer01.v_proj)".
using RecordNamer = std::function<std::string(size_t index)>;

// Every record: pad, ndim, dtype, unused shape entries, CQ group/bits,
// nbytes against shape, 64-aligned offset past the directory, inside the file,
// exact placement in directory order (no overlap), zero padding between blobs.
std::vector<std::string> check_records(std::span<const Record> records, std::span<const uint8_t> file,
                                       uint64_t directory_end, const RecordNamer& name);

// Byte offset where the directory ends (header + codebooks + records), or 0
// when the counts overflow.
uint64_t directory_end(const Header& h);

}  // namespace cact
