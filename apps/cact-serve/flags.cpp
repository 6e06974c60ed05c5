// cact-serve's flags (docs/SERVE.md "Flags") and the defaults that depend on
// the machine and the archive.
#include <arpa/inet.h>
#include <algorithm>
#include <cmath>

#include "common/error_policy.h"
#include "options.h"

namespace cact::serve {

void add_flags(CLI::App& cli, Options& o) {
  cli.add_option("archive,-m,--model", o.archive, "the .cact file (default: the bundled tools-tiny.cact)")
      ->type_name("FILE");
  cli.add_option("--alias", o.alias,
                 "the model id in /v1/models and responses (default: the archive's file name stem)");
  cli.add_option("--host", o.host, "address to listen on")->capture_default_str();
  cli.add_option("--port", o.port, "port to listen on (0: any free port, printed on stderr)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  cli.add_option("--api-key", o.api_key, "require \"Authorization: Bearer KEY\" (needed when --host is not loopback)")
      ->envname("CACT_API_KEY");
  cli.add_option("--parallel", o.parallel, "requests generated at once, one chat session each (0: the number of cores)")
      ->capture_default_str();
  cli.add_option("--queue", o.queue, "requests that may wait for a session before 503 (0: 4 x --parallel)")
      ->capture_default_str();
  cli.add_option("-t,--threads", o.threads, "engine threads per session (0: cores / --parallel, at least 1)")
      ->capture_default_str();
  cli.add_option("-c,--context", o.context, "positions per session (0: the archive's max_seq_len)")
      ->capture_default_str();
  cli.add_option("--max-body", o.max_body, "largest request body in bytes (larger: 413)")->capture_default_str();
  cli.add_option("--max-messages", o.limits.max_messages, "most messages in one request")->capture_default_str();
  cli.add_option("--max-tokens", o.limits.max_tokens, "the most max_tokens a request may ask for (0: the context)")
      ->default_val(0);
  cli.add_option("--default-max-tokens", o.limits.default_max_tokens, "max_tokens of a request that gives none")
      ->capture_default_str();
  cli.add_option("--timeout", o.timeout,
                 "seconds: a request must arrive whole within it, a write may stall this long, an idle connection is "
                 "closed after it")
      ->capture_default_str();
  cli.add_flag("--scalar", o.scalar, "force the scalar kernels");
}

bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

void resolve(Options& o, uint32_t cores, uint32_t max_seq_len) {
  cores = std::max(cores, 1u);
  if (!is_loopback(o.host) && o.api_key.empty()) {
    app::usage_error("--host " + o.host + " is reachable from other machines: give --api-key (or CACT_API_KEY)");
  }
  if (o.parallel == 0) o.parallel = cores;
  if (o.queue == 0) o.queue = 4 * o.parallel;
  if (o.threads == 0) o.threads = std::max(1u, cores / o.parallel);
  if (o.context > max_seq_len) {
    app::usage_error("--context " + std::to_string(o.context) + " is above the archive's max_seq_len " +
                     std::to_string(max_seq_len));
  }
  if (o.context == 0) o.context = max_seq_len;
  if (o.limits.max_tokens == 0) o.limits.max_tokens = o.context;
  if (o.limits.max_tokens > o.context) {
    app::usage_error("--max-tokens " + std::to_string(o.limits.max_tokens) + " is above the context of " +
                     std::to_string(o.context));
  }
  if (o.limits.default_max_tokens == 0) app::usage_error("--default-max-tokens must be at least 1");
  o.limits.default_max_tokens = std::min(o.limits.default_max_tokens, o.limits.max_tokens);
  if (o.max_body < 1024) app::usage_error("--max-body must be at least 1024 bytes");
  if (o.limits.max_messages == 0) app::usage_error("--max-messages must be at least 1");
  if (!std::isfinite(o.timeout) || o.timeout < 0.1 || o.timeout > 3600)
    app::usage_error("--timeout must be in [0.1, 3600] seconds");
}

}  // namespace cact::serve
