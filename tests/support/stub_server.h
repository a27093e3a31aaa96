#pragma once
// StubServer: runs the real autonous-stub binary on a free loopback port for a test, and reads
// back the requests it logged.

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace autonous::testing {

class StubServer {
 public:
  // Starts the stub with `latency_ms`, logging requests into `dir`. Throws if it does not
  // come up within 10 s.
  explicit StubServer(const std::string& dir, int latency_ms = 0,
                      const std::vector<std::string>& extra_args = {});

  int port() const noexcept { return port_; }
  // The value for OPENAI_BASE_URL.
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  // Every logged request as a JSON text line.
  std::vector<std::string> log_lines() const;

 private:
  std::string log_path_;
  int port_ = 0;
  std::unique_ptr<Process> process_;
};

// The stub binary's path, set by CMake (only targets that link the stub support depend on it).
std::string stub_bin();

#ifdef AUTONOUS_BIN
// The autonous binary's path: e2e tests and end-to-end benchmarks only (CMake defines it there).
// AUTONOUS_TEST_BIN, when set, names another build of it: scripts/test's sanitizer pass runs
// these suites against the ASan + UBSan binary without compiling them a second time.
inline std::string autonous_bin() {
  const char* other = std::getenv("AUTONOUS_TEST_BIN");
  return other != nullptr && *other != '\0' ? std::string(other) : std::string(AUTONOUS_BIN);
}
#endif

}  // namespace autonous::testing
