#pragma once
// "-" as a path (docs/GUIDE.md "Conventions"): standard input where a tool
// reads a file, standard output where it writes one and the output can
// stream. Archive writers cannot: they write a temporary file and rename it
// into place (never a half-written output), so "-" is refused there.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "cact/mapped_file.h"
#include "cact/model.h"

namespace cact::app {

inline bool is_dash(std::string_view path) { return path == "-"; }

// UsageError (exit 2) when `path` is "-": `what` names the argument ("OUT").
void refuse_stdout(const std::string& path, const std::string& what);
void refuse_stdin(const std::string& path, const std::string& what);

// A whole output: to stdout for "-", else written atomically to the file
// (then "wrote PATH: what" on stderr); a file that is one of `inputs` is refused.
void write_output(const std::string& path, std::string_view bytes, std::string_view what,
                  std::span<const std::filesystem::path> inputs = {});

// The bytes of an input file, mapped read-only. "-" reads standard input to
// the end into an anonymous memory file (memfd) and maps that, so a pipe
// (`cat m.cact | cact-inspect -`) is read like a file.
class InputFile {
 public:
  explicit InputFile(const std::string& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  std::span<const uint8_t> bytes() const { return bytes_; }
  // The path, or "standard input" for "-": for messages.
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  MappedFile file_;          // a path
  void* spooled_ = nullptr;  // "-": the mapping of the memfd
  size_t spooled_size_ = 0;
  std::span<const uint8_t> bytes_;
};

// The checked archive in `file` (which must outlive it); errors start with the file's name.
Model open_model(const InputFile& file);

}  // namespace cact::app
