#include "cmd/autonous/logging.h"

#include <cstdio>
#include <mutex>
#include <sstream>

#include <fmt/chrono.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace autonous::cmd {
namespace {

bool is_key(std::string_view k) {
  if (k.empty()) return false;
  for (const char c : k) {
    if (!((c >= 'a' && c <= 'z') || c == '_' || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}

class JsonLinesSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string text(msg.payload.data(), msg.payload.size());
    nlohmann::ordered_json j;
    const auto secs =
        std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count();
    j["time"] = fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03d}Z",
                            fmt::gmtime(std::chrono::system_clock::to_time_t(msg.time)),
                            static_cast<int>(secs % 1000));
    j["level"] = std::string(spdlog::level::to_string_view(msg.level).data(),
                             spdlog::level::to_string_view(msg.level).size());
    // "task claimed task_id=3 chat_id=a" → message "task claimed", fields {task_id, chat_id}.
    std::string message;
    nlohmann::ordered_json fields = nlohmann::ordered_json::object();
    std::istringstream words(text);
    std::string word;
    bool in_fields = false;
    while (words >> word) {
      const auto eq = word.find('=');
      if (eq != std::string::npos && is_key(word.substr(0, eq))) {
        in_fields = true;
        fields[word.substr(0, eq)] = word.substr(eq + 1);
      } else if (!in_fields) {
        if (!message.empty()) message += ' ';
        message += word;
      } else {
        // Words after the first field belong to the last field's value (error messages).
        auto last = fields.end() - 1;
        *last = last->get<std::string>() + " " + word;
      }
    }
    j["message"] = message;
    for (auto& [k, v] : fields.items()) j[k] = v;
    const std::string line =
        j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
  void flush_() override { std::fflush(stderr); }
};

}  // namespace

void setup_logging(const config::Config& config) {
  std::shared_ptr<spdlog::logger> logger;
  if (config.log_format == config::LogFormat::kJson) {
    logger = std::make_shared<spdlog::logger>("autonous", std::make_shared<JsonLinesSink>());
  } else {
    logger = std::make_shared<spdlog::logger>("autonous",
                                              std::make_shared<spdlog::sinks::stderr_sink_mt>());
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  }
  logger->set_level(spdlog::level::from_str(config.log_level));
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace autonous::cmd
