#include "internal/worker/reply_webhook.h"

#include <algorithm>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "internal/backend/session.h"
#include "internal/common/log.h"
#include "internal/common/sha256.h"
#include "internal/events/event_types.h"
#include "internal/openai/errors.h"
#include "internal/openai/http_transport.h"
#include "internal/openai/retry_after.h"
#include "internal/worker/backoff.h"

namespace autonous::worker {
namespace {

using std::chrono::milliseconds;

constexpr int kBatch = 1;  // each row's lease covers its own POST
constexpr std::chrono::minutes kKeepOnEvery{1};
constexpr milliseconds kMaxDelay{300000};
// A claimed row stays leased this much longer than its POST may take.
constexpr milliseconds kLeaseMargin{5000};
constexpr milliseconds kDatabasePause{1000};

events::Event delivery_event(const queue::OutboxRow& row, const std::string& type,
                             nlohmann::json payload) {
  payload["attempt"] = row.attempts;
  payload["ending"] = row.status;
  return {type, row.task_id, row.chat_id, std::nullopt, payload.dump(), 0};
}

}  // namespace

std::vector<std::pair<std::string, std::string>> webhook_headers(const queue::OutboxRow& row,
                                                                 const std::string& secret) {
  std::vector<std::pair<std::string, std::string>> h = {
      {"Content-Type", "application/json"},
      {"User-Agent", "autonous-webhook"},
      {"Idempotency-Key", std::to_string(row.task_id)},
      {"X-Autonous-Task", std::to_string(row.task_id)},
      {"X-Autonous-Attempt", std::to_string(row.attempts)},
      {"X-Autonous-Delivery", std::to_string(row.id)}};
  if (!secret.empty())
    h.emplace_back("X-Autonous-Signature", "sha256=" + common::hmac_sha256_hex(secret, row.body));
  return h;
}

ReplyWebhook::ReplyWebhook(const config::Config& config,
                           std::unique_ptr<openai::HttpTransport> transport)
    : config_(config),
      transport_(std::move(transport)),
      session_(backend::open_session(config)),
      rng_(std::random_device{}()) {}

ReplyWebhook::~ReplyWebhook() = default;

void ReplyWebhook::poke() {
  {
    const std::lock_guard lock(mu_);
    poked_ = true;
  }
  cv_.notify_all();
}

void ReplyWebhook::keep_on() {
  try {
    session_->outbox().keep_webhook_on(kWebhookSpan);
    kept_on_ = std::chrono::steady_clock::now();
  } catch (const std::exception& e) {
    spdlog::warn("reply webhook: could not turn it on in the database yet ({})", e.what());
  }
}

void ReplyWebhook::finish(bool drain) {
  {
    const std::lock_guard lock(mu_);
    finished_ = true;
    drain_ = drain;
    poked_ = true;  // look now
  }
  cv_.notify_all();
}

void ReplyWebhook::idle(const std::stop_token& stop, milliseconds most) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, stop, most, [this] { return poked_; });
  poked_ = false;
}

void ReplyWebhook::run(const std::stop_token& stop, const std::atomic<bool>& hard) {
  queue::ReplyOutbox& outbox = session_->outbox();
  const milliseconds lease = config_.reply_webhook_timeout + kLeaseMargin;
  while (!stop.stop_requested() && !hard.load()) {
    try {
      if (std::chrono::steady_clock::now() - kept_on_ >= kKeepOnEvery) keep_on();
      bool finished = false;
      bool drain = false;
      {
        const std::lock_guard lock(mu_);
        finished = finished_;
        drain = drain_;
      }
      milliseconds wait = config_.poll_interval;
      if (finished) {
        if (!drain) return;
        const std::optional<milliseconds> next = outbox.next_due();
        if (!next) return;  // delivered (or given up) everything
        if (*next > kDrainWait) {
          log::warn("drain: reply webhook deliveries left for the next worker",
                    {{"pending", outbox.pending(false)}, {"next_try_in_ms", next->count()}});
          return;
        }
        wait = std::clamp(*next, milliseconds(1), config_.poll_interval);
      }
      const std::vector<queue::OutboxRow> rows = outbox.claim(lease, kBatch);
      for (const queue::OutboxRow& row : rows) {
        if (stop.stop_requested() || hard.load()) return;  // the rest wait out their lease
        deliver(row, stop, hard);
      }
      if (rows.empty()) idle(stop, wait);
    } catch (const std::exception& e) {
      // The database refused for now, or the connection broke: the rows wait; replies go on.
      spdlog::warn("reply webhook: the outbox could not be read or updated ({}); trying again",
                   e.what());
      if (session_->lost()) {
        try {
          session_->reconnect();
        } catch (const std::exception& again) {
          spdlog::warn("reply webhook: reconnecting failed ({})", again.what());
        }
      }
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, stop, kDatabasePause, [] { return false; });
    }
  }
}

void ReplyWebhook::deliver(const queue::OutboxRow& row, const std::stop_token& stop,
                           const std::atomic<bool>& hard) {
  openai::HttpRequest req;
  req.url = config_.reply_webhook_url;
  req.headers = webhook_headers(row, config_.reply_webhook_secret);
  req.body = row.body;
  req.timeout = config_.reply_webhook_timeout;
  req.keep_body = false;  // a 2xx is delivered whatever its body says (an echo, a page)
  // A stop (SIGTERM) or a hard stop ends a POST in flight: the row waits out its lease and is
  // delivered again, rather than a slow receiver holding up the shutdown.
  req.keep_going = [&hard, &stop] { return !hard.load() && !stop.stop_requested(); };
  const auto started = std::chrono::steady_clock::now();
  std::string error;
  long status = 0;
  std::optional<milliseconds> retry_after;
  try {
    const openai::HttpResponse r = transport_->post(req);
    status = r.status;
    if (status >= 200 && status < 300) {
      const auto latency =
          std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - started);
      session_->outbox().delivered(
          row, delivery_event(row, std::string(events::kReplyDelivered),
                              {{"status", status}, {"latency_ms", latency.count()}}));
      log::info("reply webhook delivered",
                {{"task_id", row.task_id}, {"status", row.status}, {"attempt", row.attempts}});
      return;
    }
    error = "HTTP " + std::to_string(status);
    if (status == 429 || status == 503)
      retry_after = openai::parse_retry_after(r.headers, std::chrono::system_clock::now());
  } catch (const openai::TransportError& e) {
    if (e.aborted()) return;  // shutting down: the row waits out its lease
    error = e.timed_out() ? "timed out" : e.what();
  } catch (const openai::ResponseTooLargeError&) {
    error = "response too large";
  }
  nlohmann::json payload = {{"error", error}};
  if (status != 0) payload["status"] = status;
  if (row.attempts >= config_.reply_webhook_max_attempts) {
    payload["final"] = true;
    session_->outbox().give_up(
        row, error,
        delivery_event(row, std::string(events::kReplyDeliveryFailed), std::move(payload)));
    // The row stays in reply_outbox (gave_up_at set) for an operator to look at.
    log::error("reply webhook gave up",
               {{"task_id", row.task_id}, {"attempts", row.attempts}, {"error", error}});
    return;
  }
  const milliseconds delay = std::min(
      backoff_delay(row.attempts, config_.reply_webhook_retry_base, kMaxDelay, retry_after, rng_),
      openai::kMaxRetryWait);
  payload["final"] = false;
  payload["retry_in_ms"] = delay.count();
  session_->outbox().retry(
      row, delay, error,
      delivery_event(row, std::string(events::kReplyDeliveryFailed), std::move(payload)));
  log::warn("reply webhook failed", {{"task_id", row.task_id},
                                     {"attempt", row.attempts},
                                     {"error", error},
                                     {"retry_in_ms", delay.count()}});
}

}  // namespace autonous::worker
