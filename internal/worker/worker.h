#pragma once
// Worker: the daemon. WORKER_CONCURRENCY slots (slot.h), each a thread with its own database
// session (backend/session.h) and HTTP transport, each doing claim → turn (turn.h) → apply the
// outcome. Threads rather than one curl multi loop: every step of a turn is blocking I/O on a
// resource the slot owns (a connection must not be shared across threads), slots are few (≤ 256)
// and mostly wait on the network, and a thread per slot keeps a turn's code straight-line.
// Stop: when the stop token fires, slots stop claiming; in-flight calls get `shutdown_grace`,
// then are aborted and their leases released so another worker takes them at once.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <vector>

#include "internal/config/config.h"
#include "internal/engine/engine.h"
#include "internal/events/event_log.h"

namespace autonous::common {
class Clock;
}
namespace autonous::tokens {
class TokenCounter;
}
namespace autonous::openai {
class HttpTransport;
}

namespace autonous::tools {
class Toolset;
}

namespace autonous::worker {

class ReplyWebhook;

struct WorkerStats {
  explicit WorkerStats(int slot_count = 0)
      : slots(slot_count),
        beats(std::make_unique<std::atomic<int64_t>[]>(slot_count)),
        offline_since(std::make_unique<std::atomic<int64_t>[]>(slot_count)) {}
  // A slot's sign of life, in steady-clock milliseconds (now_ms()): every pass of its loop and
  // every poll during an HTTP call. 0 until the slot runs. /healthz calls a slot silent for
  // long wedged.
  static int64_t now_ms() noexcept;
  const int slots;
  std::unique_ptr<std::atomic<int64_t>[]> beats;
  // Since when (now_ms()) a slot has been connecting to the database again; 0 when connected.
  std::unique_ptr<std::atomic<int64_t>[]> offline_since;
  std::atomic<int> busy{0};  // slots inside a task
  std::atomic<int64_t> claimed{0};
  std::atomic<int64_t> completed{0};
  std::atomic<int64_t> retried{0};
  std::atomic<int64_t> failed{0};
  std::atomic<int64_t> released{0};
};

struct WorkerDeps {
  // Makes one transport per slot (CurlTransport in production).
  std::function<std::unique_ptr<openai::HttpTransport>()> make_transport;
  const tokens::TokenCounter* counter = nullptr;  // must outlive run()
  // The counter for a chat's own model (`chat set --model`): thread-safe, what it returns must
  // outlive run(). Unset: `counter` for every model.
  std::function<const tokens::TokenCounter&(const std::string& model)> counter_for;
  const common::Clock* clock = nullptr;  // must outlive run()
  // Told every event trail a slot committed (the operator surface's metrics), on the slot's
  // thread, after the commit. Optional; must be thread-safe; what it throws is logged.
  std::function<void(const std::vector<events::Event>&)> on_trail;
  // The declared tools (TOOLS_FILE, loaded and checked at start), shared by the slots. Unset or
  // empty: no tools are offered.
  std::shared_ptr<const tools::Toolset> toolset;
};

class Worker {
 public:
  // REQUIRES: config passed load_config and require_llm_endpoint; the schema is migrated.
  // Throws config::ConfigError when the context settings are bad (engine/engine.h).
  Worker(config::Config config, WorkerDeps deps, bool drain);

  // Runs the slots until `stop` fires or, with drain, until no task is queued or running.
  // Throws when a slot cannot start (the database cannot be opened) or when a slot died of an
  // error outside any task (the database stayed locked past its busy timeout, say): the other
  // slots are stopped gracefully first, then the first such error is rethrown (exit code 1).
  // `hard` ends the grace period at once (a second SIGTERM): in-flight calls are aborted and
  // their leases released.
  void run(const std::stop_token& stop, const std::stop_token& hard = {});

  const WorkerStats& stats() const noexcept { return stats_; }

 private:
  std::unique_ptr<ReplyWebhook> start_webhook();

  config::Config config_;
  WorkerDeps deps_;
  engine::EngineSettings engine_;
  bool drain_;
  WorkerStats stats_;
};

}  // namespace autonous::worker
