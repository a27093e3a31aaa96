#pragma once
// Structured log lines: a fixed message and its fields, passed as typed values.
//   log::info("task claimed", {{"task_id", id}, {"chat_id", chat}, {"reclaimed", false}});
// writes `task claimed task_id=3 chat_id="a" reclaimed=false` in the text format and
// {"message":"task claimed","task_id":3,"chat_id":"a","reclaimed":false} under LOG_FORMAT=json:
// numbers stay numbers, booleans booleans; nothing is parsed back out of text. The process's
// sinks (cmd/autonous/logging.cpp) read the line being written through current_line().

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <variant>

namespace autonous::log {

enum class Level { kDebug, kInfo, kWarn, kError };

struct Field {
  using Value = std::variant<std::int64_t, std::uint64_t, double, bool, std::string>;

  template <std::signed_integral T>
  Field(std::string_view k, T v) : key(k), value(static_cast<std::int64_t>(v)) {}
  template <std::unsigned_integral T>
  requires(!std::same_as<T, bool>) Field(std::string_view k, T v)
      : key(k), value(static_cast<std::uint64_t>(v)) {}
  Field(std::string_view k, bool v) : key(k), value(v) {}
  Field(std::string_view k, double v) : key(k), value(v) {}
  Field(std::string_view k, std::string_view v) : key(k), value(std::string(v)) {}
  Field(std::string_view k, const char* v) : key(k), value(std::string(v)) {}
  Field(std::string_view k, std::string v) : key(k), value(std::move(v)) {}

  std::string_view key;  // lower_snake_case
  Value value;
};

using Fields = std::initializer_list<Field>;

// Writes one line through the default spdlog logger (nothing when its level is below).
void write(Level level, std::string_view message, Fields fields);
inline void debug(std::string_view message, Fields fields = {}) {
  write(Level::kDebug, message, fields);
}
inline void info(std::string_view message, Fields fields = {}) {
  write(Level::kInfo, message, fields);
}
inline void warn(std::string_view message, Fields fields = {}) {
  write(Level::kWarn, message, fields);
}
inline void error(std::string_view message, Fields fields = {}) {
  write(Level::kError, message, fields);
}

// The text form: message, then ` key=value` per field (strings quoted and escaped as fmt's {:?}).
std::string text_of(std::string_view message, Fields fields);

// For a sink: the line this thread is writing through write(), or null when the line came from
// spdlog directly (then its whole text is the message and it has no fields).
struct Line {
  std::string_view message;
  Fields fields;
};
const Line* current_line();

}  // namespace autonous::log
