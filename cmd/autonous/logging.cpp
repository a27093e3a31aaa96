#include "cmd/autonous/logging.h"

#include <cstdio>
#include <ctime>
#include <mutex>
#include <string_view>
#include <vector>

#include <fmt/chrono.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "internal/common/text.h"

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

// A word of a log message: `key=value`, `key="quoted value"` (values written with {:?}: user
// and server text, which may hold spaces, '=' or quotes), or a plain word (key empty).
struct Word {
  std::string key;
  std::string value;
};

// The quoted value starting at text[i] (a '"'), without its quotes, \" and \\ undone; i ends
// past the closing quote. Other escapes (\n, \x1b) stay as written.
std::string quoted_value(std::string_view text, size_t& i) {
  std::string out;
  for (++i; i < text.size() && text[i] != '"'; ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && (text[i + 1] == '"' || text[i + 1] == '\\')) {
      out += text[++i];
    } else {
      out += text[i];
    }
  }
  ++i;
  return out;
}

std::vector<Word> split_words(std::string_view text) {
  std::vector<Word> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    if (i == text.size()) break;
    const size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '=' && text[i] != '"') ++i;
    Word w;
    if (i < text.size() && text[i] == '=' && is_key(text.substr(start, i - start))) {
      w.key = std::string(text.substr(start, i - start));
      ++i;
      if (i < text.size() && text[i] == '"') {
        w.value = quoted_value(text, i);
        words.push_back(std::move(w));
        continue;
      }
    } else {
      i = start;
    }
    const size_t value_start = i;
    while (i < text.size() && text[i] != ' ') ++i;
    w.value = std::string(text.substr(value_start, i - value_start));
    words.push_back(std::move(w));
  }
  return words;
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
    std::string last;  // the field that words without '=' continue (an unquoted error text)
    for (const Word& w : split_words(text)) {
      if (!w.key.empty()) {
        last = w.key;
        // A field may not pose as the line's own time, level or message.
        if (last == "time" || last == "level" || last == "message") last = "field_" + last;
        fields[last] = w.value;
      } else if (last.empty()) {
        if (!message.empty()) message += ' ';
        message += w.value;
      } else {
        fields[last] = fields[last].get<std::string>() + " " + w.value;
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

bool g_json_logs = false;  // set once, before any thread starts

}  // namespace

int report_exit(int code, const std::string& text) {
  if (g_json_logs) {
    // Written here, not through the logger: LOG_LEVEL=off must not silence why it exits.
    nlohmann::ordered_json j;
    j["time"] = fmt::format("{:%Y-%m-%dT%H:%M:%S}Z", fmt::gmtime(std::time(nullptr)));
    j["level"] = "error";
    j["message"] = "autonous exiting";
    j["exit_code"] = code;
    j["error"] = text;
    const std::string line =
        j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
  } else {
    std::fputs(("autonous: " + text + "\n").c_str(), stderr);
  }
  return code;
}

void prefer_json_errors(const std::optional<std::string>& log_format) {
  g_json_logs = log_format && common::to_lower_ascii(common::trim(*log_format)) == "json";
}

void setup_logging(const config::Config& config) {
  g_json_logs = config.log_format == config::LogFormat::kJson;
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
