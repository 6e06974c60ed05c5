#pragma once
// The full archive check a tool runs on what it built, before the output
// replaces its target.
#include <span>
#include <string>

#include "cact/atomic_file.h"
#include "cact/error.h"
#include "cact/mapped_file.h"
#include "cact/model.h"

namespace cact {

// Throws "`what` fails its own check: <first problem>".
inline void check_built(std::span<const uint8_t> bytes, const std::string& what) {
  const auto issues = check_archive(bytes);
  if (!issues.empty()) fail(what + " fails its own check: " + issues.front());
}

// finish() and check_built on the finished temporary, read back through a map:
// the archive was streamed out, and no copy of it is held.
inline void finish_checked(AtomicFile& file, const std::string& what) {
  file.finish();
  check_built(MappedFile(file.temporary()).bytes(), what);
}

}  // namespace cact
