#include "cmd/autonous/service_notify.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include <systemd/sd-daemon.h>

#include "internal/common/log.h"

namespace autonous::cmd {
namespace {

void notify(const std::string& state) { sd_notify(0, state.c_str()); }

}  // namespace

ServiceNotify::ServiceNotify(std::function<bool(std::string& why)> healthy) {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return;
  // Often (every 10 s, or half the period when it is shorter): a check that fails once costs
  // one ping, not the whole period.
  const auto period = std::min<std::chrono::microseconds>(std::chrono::microseconds(usec) / 2,
                                                          std::chrono::seconds(10));
  log::info("systemd watchdog on",
            {{"watchdog_ms",
              std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::microseconds(usec))
                  .count()}});
  pinger_ = std::jthread([period, healthy = std::move(healthy)](const std::stop_token& stop) {
    std::mutex mu;
    std::condition_variable_any cv;
    bool was_healthy = true;
    while (!stop.stop_requested()) {
      std::string why;
      const bool ok = healthy(why);
      if (ok) notify("WATCHDOG=1");
      if (ok != was_healthy) {
        if (ok) {
          log::info("healthy again: pinging systemd's watchdog");
        } else {
          log::error("unhealthy: no watchdog ping (systemd restarts the worker when it expires)",
                     {{"reason", why}});
        }
        was_healthy = ok;
      }
      std::unique_lock lock(mu);
      cv.wait_for(lock, stop, period, [] { return false; });
    }
  });
}

ServiceNotify::~ServiceNotify() = default;

void ServiceNotify::ready(const std::string& status) const { notify("READY=1\nSTATUS=" + status); }

void ServiceNotify::stopping() const { notify("STOPPING=1\nSTATUS=stopping"); }

}  // namespace autonous::cmd
