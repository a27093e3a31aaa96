#include "internal/common/log.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace autonous::log {
namespace {

thread_local const Line* t_line = nullptr;

spdlog::level::level_enum to_spdlog(Level level) {
  switch (level) {
    case Level::kDebug:
      return spdlog::level::debug;
    case Level::kInfo:
      return spdlog::level::info;
    case Level::kWarn:
      return spdlog::level::warn;
    case Level::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

struct ValueText {
  std::string& out;
  void operator()(std::int64_t v) const { out += fmt::format("{}", v); }
  void operator()(std::uint64_t v) const { out += fmt::format("{}", v); }
  void operator()(double v) const { out += fmt::format("{}", v); }
  void operator()(bool v) const { out += v ? "true" : "false"; }
  void operator()(const std::string& v) const { out += fmt::format("{:?}", v); }
};

}  // namespace

std::string text_of(std::string_view message, Fields fields) {
  std::string out(message);
  for (const Field& f : fields) {
    out += ' ';
    out += f.key;
    out += '=';
    std::visit(ValueText{out}, f.value);
  }
  return out;
}

void write(Level level, std::string_view message, Fields fields) {
  spdlog::logger* logger = spdlog::default_logger_raw();
  const auto l = to_spdlog(level);
  if (logger == nullptr || !logger->should_log(l)) return;
  const Line line{message, fields};
  t_line = &line;
  try {
    logger->log(l, "{}", text_of(message, fields));
  } catch (...) {
    t_line = nullptr;
    throw;
  }
  t_line = nullptr;
}

const Line* current_line() { return t_line; }

}  // namespace autonous::log
