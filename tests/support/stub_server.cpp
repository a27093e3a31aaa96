#include "tests/support/stub_server.h"

#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/support/temp_dir.h"

namespace autonous::testing {

std::string stub_bin() { return AUTONOUS_STUB_BIN; }

StubServer::StubServer(const std::string& dir, int latency_ms,
                       const std::vector<std::string>& extra_args) {
  static int counter = 0;
  const std::string tag = std::to_string(counter++);
  log_path_ = dir + "/stub" + tag + ".log";
  const std::string port_file = dir + "/stub" + tag + ".port";
  std::vector<std::string> argv = {stub_bin(),
                                   "--port-file",
                                   port_file,
                                   "--log",
                                   log_path_,
                                   "--latency-ms",
                                   std::to_string(latency_ms)};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  process_ = std::make_unique<Process>(argv, std::map<std::string, std::string>{}, dir);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!std::filesystem::exists(port_file)) {
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("stub did not start");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  port_ = std::stoi(read_file(port_file));
}

std::vector<std::string> StubServer::log_lines() const {
  std::vector<std::string> out;
  std::istringstream in(read_file(log_path_));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

}  // namespace autonous::testing
