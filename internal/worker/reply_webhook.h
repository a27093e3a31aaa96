#pragma once
// ReplyWebhook: delivers the reply outbox (queue/reply_outbox.h) to REPLY_WEBHOOK_URL. One
// thread per worker process, with its own database session and HTTP transport, apart from the
// slots: a receiver that is down or slow never holds up a reply. It claims due rows, POSTs each
// body as it was written when its task ended (Content-Type: application/json, Idempotency-Key:
// the task id, X-Autonous-Delivery: the outbox row's id, one per ending, X-Autonous-Signature:
// sha256=<hex HMAC-SHA256 of the body> with REPLY_WEBHOOK_SECRET), and reports: a 2xx is delivered;
// anything else (a status, a timeout, a closed connection) is tried again after
// REPLY_WEBHOOK_RETRY_BASE_MS doubling per attempt (at most 5 minutes, or a 429/503's Retry-After),
// with jitter, until REPLY_WEBHOOK_MAX_ATTEMPTS, then given up. One row is claimed at a time,
// leased for the POST's timeout and a margin: a worker killed mid-POST leaves it to any worker
// after that. The receiver's answer is not kept (a 2xx with any body is delivered). While it runs
// it keeps the webhook on in the database (reply_delivery.webhook_until, kWebhookSpan ahead): a
// worker without REPLY_WEBHOOK_URL never turns it off for the others.

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

// How long the webhook stays on in the database after a worker with it last said so.
inline constexpr std::chrono::minutes kWebhookSpan{60};
// `worker --drain` waits out a delivery's backoff up to this; a longer one is left for later.
inline constexpr std::chrono::seconds kDrainWait{60};

class ReplyWebhook {
 public:
  // REQUIRES: config.reply_webhook_url is set. Opens its own session.
  ReplyWebhook(const config::Config& config, std::unique_ptr<openai::HttpTransport> transport);
  ~ReplyWebhook();

  // Delivers until `stop` fires, or, once finish() was called: at once when not draining, else
  // once nothing is left to deliver (given-up rows aside) or the next try of what is left is
  // more than kDrainWait away (left to the next worker). `hard` aborts a POST in flight.
  void run(const std::stop_token& stop, const std::atomic<bool>& hard);
  // Endings leave outbox rows for the next kWebhookSpan (run() says so again every minute). A
  // database that refuses now is logged; run() tries again.
  void keep_on();
  // A task ended here: look at the outbox now rather than at the next poll.
  void poke();
  // The slots have stopped; `drain`: deliver what is left first (autonous worker --drain).
  void finish(bool drain);

 private:
  // Delivers one claimed row and records the outcome.
  void deliver(const queue::OutboxRow& row, const std::stop_token& stop,
               const std::atomic<bool>& hard);
  // Waits up to `most` (the poll interval), or until poked or stopped.
  void idle(const std::stop_token& stop, std::chrono::milliseconds most);

  const config::Config& config_;
  std::unique_ptr<openai::HttpTransport> transport_;
  std::unique_ptr<backend::Session> session_;
  std::mt19937_64 rng_;
  std::mutex mu_;
  std::condition_variable_any cv_;
  bool poked_ = false;                               // guarded by mu_
  std::chrono::steady_clock::time_point kept_on_{};  // when keep_on() last succeeded
  bool finished_ = false;                            // guarded by mu_
  bool drain_ = false;                               // guarded by mu_
};

}  // namespace autonous::worker
