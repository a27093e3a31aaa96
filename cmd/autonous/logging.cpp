#include "cmd/autonous/logging.h"

#include <cstdio>
#include <mutex>
#include <sstream>

#include <fmt/chrono.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/base_sink.h>
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

// Control characters of a message escaped (\n → "\\n"), so no value (a chat id, server text)
// can start a forged log line.
std::string escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7F) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  return out;
}

// The text format: spdlog's pattern over the escaped message.
class TextSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string text = escaped(std::string_view(msg.payload.data(), msg.payload.size()));
    spdlog::details::log_msg safe = msg;
    safe.payload = text;
    spdlog::memory_buf_t line;
    formatter_->format(safe, line);
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
  void flush_() override { std::fflush(stderr); }
};

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
    std::string last;  // the field that words without '=' continue (an error's message)
    while (words >> word) {
      const auto eq = word.find('=');
      if (eq != std::string::npos && is_key(word.substr(0, eq))) {
        last = word.substr(0, eq);
        // A field may not pose as the line's own time, level or message.
        if (last == "time" || last == "level" || last == "message") last = "field_" + last;
        fields[last] = word.substr(eq + 1);
      } else if (last.empty()) {
        if (!message.empty()) message += ' ';
        message += word;
      } else {
        fields[last] = fields[last].get<std::string>() + " " + word;
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
    logger = std::make_shared<spdlog::logger>("autonous", std::make_shared<TextSink>());
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  }
  logger->set_level(spdlog::level::from_str(config.log_level));
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace autonous::cmd
