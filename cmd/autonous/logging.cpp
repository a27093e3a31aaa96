#include "cmd/autonous/logging.h"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <string_view>
#include <vector>

#include <fmt/chrono.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/common/log.h"
#include "internal/common/text.h"

namespace autonous::cmd {
namespace {

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

bool g_journal = false;  // stderr is the journal's stream: lines start with "<N>"

// stderr is connected to the journal when $JOURNAL_STREAM ("device:inode") names it.
bool stderr_is_journal() {
  const char* v = std::getenv("JOURNAL_STREAM");
  if (v == nullptr) return false;
  unsigned long long dev = 0;
  unsigned long long ino = 0;
  if (std::sscanf(v, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st {};
  if (fstat(STDERR_FILENO, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev &&
         static_cast<unsigned long long>(st.st_ino) == ino;
}

// sd-daemon(3)'s priority of a level: what `journalctl -p` filters on.
int journal_priority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::critical:
      return 2;
    case spdlog::level::err:
      return 3;
    case spdlog::level::warn:
      return 4;
    case spdlog::level::info:
      return 6;
    default:
      return 7;
  }
}

void write_line(spdlog::level::level_enum level, std::string_view text) {
  if (g_journal) {
    const std::string prefix = fmt::format("<{}>", journal_priority(level));
    std::fwrite(prefix.data(), 1, prefix.size(), stderr);
  }
  std::fwrite(text.data(), 1, text.size(), stderr);
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
    write_line(msg.level, std::string_view(line.data(), line.size()));
  }
  void flush_() override { std::fflush(stderr); }
};

// Put into the value a field's own type: numbers stay numbers.
struct JsonValue {
  nlohmann::ordered_json operator()(std::int64_t v) const { return v; }
  nlohmann::ordered_json operator()(std::uint64_t v) const { return v; }
  nlohmann::ordered_json operator()(double v) const { return v; }
  nlohmann::ordered_json operator()(bool v) const { return v; }
  nlohmann::ordered_json operator()(const std::string& v) const { return v; }
};

class JsonLinesSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    nlohmann::ordered_json j;
    const auto secs =
        std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count();
    j["time"] = fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03d}Z",
                            fmt::gmtime(std::chrono::system_clock::to_time_t(msg.time)),
                            static_cast<int>(secs % 1000));
    j["level"] = std::string(spdlog::level::to_string_view(msg.level).data(),
                             spdlog::level::to_string_view(msg.level).size());
    // A line written through log::write() brings its message and typed fields; any other line's
    // text is all message.
    if (const log::Line* line = log::current_line()) {
      j["message"] = std::string(line->message);
      for (const log::Field& f : line->fields) {
        std::string key(f.key);
        // A field may not pose as the line's own time, level or message.
        if (key == "time" || key == "level" || key == "message") key = "field_" + key;
        j[key] = std::visit(JsonValue{}, f.value);
      }
    } else {
      j["message"] = std::string(msg.payload.data(), msg.payload.size());
    }
    const std::string text =
        j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    write_line(msg.level, text);
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
    write_line(spdlog::level::err,
               j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
  } else {
    write_line(spdlog::level::err, "autonous: " + text + "\n");
  }
  return code;
}

void prefer_json_errors(const std::optional<std::string>& log_format) {
  g_journal = stderr_is_journal();
  g_json_logs = log_format && common::to_lower_ascii(common::trim(*log_format)) == "json";
}

void setup_logging(const config::Config& config) {
  g_journal = stderr_is_journal();
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
