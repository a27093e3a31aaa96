#pragma once
// The stub's request handling: GET /health, POST …/embeddings (embeddings.h), POST /hook/…
// (a reply webhook's receiver: hooks.h), POST
// …/chat/completions (after --latency-ms, with a
// fault when the last user message asks for one), 404 otherwise. One Server serves every
// connection, each on its own thread.

#include <optional>
#include <string>

#include "cmd/autonous-stub/faults.h"
#include "cmd/autonous-stub/hooks.h"
#include "cmd/autonous-stub/http.h"
#include "cmd/autonous-stub/provider_rules.h"
#include "cmd/autonous-stub/replies.h"
#include "cmd/autonous-stub/request_log.h"

namespace autonous::stub {

struct Options {
  int port = 0;
  int latency_ms = 0;
  double usage_scale = 1.0;   // multiplies reported prompt_tokens (to test calibration)
  int64_t hidden_prompt = 0;  // tokens a proxy adds unseen (a system prompt of its own)
  ProviderRules rules;        // provider behaviour to play (provider_rules.h)
  // Chat requests for this model are answered 529 "overloaded" (Anthropic's words): a model
  // that is down while others on the same endpoint answer (OPENAI_FALLBACK_MODEL's tests).
  std::string overloaded_model;
  std::string log_path;
  std::string port_file;
};

class Server {
 public:
  explicit Server(const Options& options);

  // Answers requests on fd until either side closes it, then closes fd. Thread-safe.
  void serve(int fd);

 private:
  // Each returns false when the connection must close.
  bool handle(int fd, const Request& req);
  bool handle_chat(int fd, const Request& req, const json& body);

  // The fault in the last user message, if it fires on this request.
  std::optional<Fault> fired_fault(const Prompt& prompt, bool summary_request);

  Options options_;
  FaultCounter fault_counts_;
  PrefixCache prefixes_;
  RequestLog log_;
  Hooks hooks_;
};

}  // namespace autonous::stub
