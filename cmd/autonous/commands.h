#pragma once
// The bodies of autonous's subcommands. main.cpp parses argv into these option structs; each
// function returns the exit code and throws ConfigError (→ 2) or anything else (→ 1).

#include <cstdint>
#include <optional>
#include <string>

#include "internal/config/config.h"
#include "internal/context/policy.h"

namespace autonous::cmd {

// A usage error found after parsing (empty text, a missing flag): exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct EnqueueOptions {
  std::string chat_id;
  int priority = 0;
  std::optional<std::string> text;  // nullopt: read stdin
};

struct EventsOptions {
  std::optional<int64_t> task_id;
  std::optional<std::string> type;
  bool follow = false;
};

struct ContextOptions {
  std::string chat_id;
  std::string text;
};

struct TokensOptions {
  std::optional<std::string> encoding;  // a TOKEN_COUNTER value; nullopt: the configured one
  std::string file = "-";               // "-": stdin
};

struct RequeueOptions {
  std::optional<int64_t> task_id;
  bool failed = false;
};

int run_migrate(const config::Config& config);
int run_enqueue(const config::Config& config, const EnqueueOptions& options);
int run_status(const config::Config& config, bool json);
int run_events(const config::Config& config, const EventsOptions& options);
int run_context(const config::Config& config, const ContextOptions& options);

struct ContextStatsOptions {
  std::optional<std::string> chat_id;
  std::optional<std::string> since;
};
int run_context_stats(const config::Config& config, const ContextStatsOptions& options);
// `autonous chat show|set|reset|clear ID` (chat_commands.cpp).
struct ChatOptions {
  std::string chat_id;
  std::optional<std::string> strategy;  // parsed (and refused when unknown) by `chat set`
  context::ChatOverrides values;        // --max-tokens, --recent, --soft, --warn, --hard, --target
};
int run_chat_show(const config::Config& config, const ChatOptions& options);
int run_chat_set(const config::Config& config, const ChatOptions& options);
int run_chat_reset(const config::Config& config, const ChatOptions& options);
int run_chat_clear(const config::Config& config, const ChatOptions& options);

int run_requeue(const config::Config& config, const RequeueOptions& options);
int run_worker(const config::Config& config, bool drain);
int run_tokens(const config::Config& config, const TokensOptions& options);

}  // namespace autonous::cmd
