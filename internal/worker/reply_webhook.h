#pragma once
// ReplyWebhook: delivers the reply outbox (queue/reply_outbox.h) to REPLY_WEBHOOK_URL. One
// thread per worker process, with its own database session and HTTP transport, apart from the
// slots: a receiver that is down or slow never holds up a reply. It claims due rows, POSTs each
// body as it was written when its task ended (Content-Type: application/json, Idempotency-Key:
// the task id, X-Autonous-Signature: sha256=<hex HMAC-SHA256 of the body> with
// REPLY_WEBHOOK_SECRET), and reports: a 2xx is delivered; anything else (a status, a timeout,
// a closed connection) is tried again after REPLY_WEBHOOK_RETRY_BASE_MS doubling per attempt
// (at most 5 minutes, or a 429/503's Retry-After), with jitter, until
// REPLY_WEBHOOK_MAX_ATTEMPTS, then given up. A worker killed mid-POST leaves its rows leased
// for the POST's timeout; any worker takes them after.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>
#include <stop_token>
#include <string>

#include "internal/config/config.h"
#include "internal/queue/reply_outbox.h"

namespace autonous::openai {
class HttpTransport;
}
namespace autonous::backend {
class Session;
}

namespace autonous::worker {

// The headers a delivery of `body` carries (the signature only with a secret).
std::vector<std::pair<std::string, std::string>> webhook_headers(const queue::OutboxRow& row,
                                                                 const std::string& secret);

class ReplyWebhook {
 public:
  // REQUIRES: config.reply_webhook_url is set. Opens its own session.
  ReplyWebhook(const config::Config& config, std::unique_ptr<openai::HttpTransport> transport);
  ~ReplyWebhook();

  // Delivers until `stop` fires, or, once finish() was called: at once when not draining, else
  // once nothing is left to deliver (given-up rows aside). `hard` aborts a POST in flight.
  void run(const std::stop_token& stop, const std::atomic<bool>& hard);
  // A task ended here: look at the outbox now rather than at the next poll.
  void poke();
  // The slots have stopped; `drain`: deliver what is left first (autonous worker --drain).
  void finish(bool drain);

 private:
  // Delivers one claimed row and records the outcome.
  void deliver(const queue::OutboxRow& row, const std::atomic<bool>& hard);
  // Waits up to the poll interval, or until poked or stopped.
  void idle(const std::stop_token& stop);

  const config::Config& config_;
  std::unique_ptr<openai::HttpTransport> transport_;
  std::unique_ptr<backend::Session> session_;
  std::mt19937_64 rng_;
  std::mutex mu_;
  std::condition_variable_any cv_;
  bool poked_ = false;     // guarded by mu_
  bool finished_ = false;  // guarded by mu_
  bool drain_ = false;     // guarded by mu_
};

}  // namespace autonous::worker
