#pragma once
// Tells systemd how the worker is doing when it runs under a `Type=notify` unit
// ($NOTIFY_SOCKET set; elsewhere every call does nothing): READY=1 once it migrated, caught up and
// is about to start its slots, STOPPING=1 when a signal stops it, STATUS= lines, and — when the
// unit sets WatchdogSec= — WATCHDOG=1 every 10 s (or half the period) while `healthy()` says so
// (every slot showed a sign of life within a stall limit longer than any bounded wait of a
// slot). A wedged worker stops pinging and systemd kills and restarts it; a database that is
// down does not count (the slots reconnect on their own; restarting would not bring it back).

#include <functional>
#include <string>
#include <thread>

namespace autonous::cmd {

class ServiceNotify {
 public:
  // `healthy` is called from the pinging thread; it may say why not.
  explicit ServiceNotify(std::function<bool(std::string& why)> healthy);
  ~ServiceNotify();  // stops pinging
  ServiceNotify(const ServiceNotify&) = delete;
  ServiceNotify& operator=(const ServiceNotify&) = delete;

  void ready(const std::string& status) const;
  void stopping() const;

 private:
  std::jthread pinger_;
};

}  // namespace autonous::cmd
