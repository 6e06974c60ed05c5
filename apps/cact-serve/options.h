#pragma once
// cact-serve's settings (docs/SERVE.md "Flags"): what the flags fill in.
#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <string>

#include "cact/openai.h"

namespace cact::serve {

inline constexpr const char* kTool = "cact-serve";

struct Options {
  std::string archive;  // empty: the bundled tools-tiny.cact
  std::string alias;    // the model id of /v1/models and responses; default: the archive's stem
  std::string host = "127.0.0.1";
  int port = 8080;        // 0: any free port (printed on stderr)
  std::string api_key;    // empty: no key (only allowed on a loopback host)
  uint32_t parallel = 0;  // slots; 0: the number of cores
  uint32_t queue = 0;     // requests waiting for a slot; 0: 4 x parallel
  uint32_t threads = 0;   // engine threads per slot; 0: cores / parallel (at least 1)
  uint32_t context = 0;   // positions per slot; 0: the archive's max_seq_len
  size_t max_body = size_t(1) << 20;
  double timeout = 10.0;  // seconds: to receive a request, per write, keep-alive idle
  chat::openai::RequestLimits limits;
  bool scalar = false;
};

void add_flags(CLI::App& cli, Options& o);
// Fills in the defaults that depend on the machine and the archive's context,
// and refuses combinations (UsageError): a non-loopback host without a key.
void resolve(Options& o, uint32_t cores, uint32_t max_seq_len);
bool is_loopback(const std::string& host);

}  // namespace cact::serve
