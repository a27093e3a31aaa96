#pragma once
// Sets the default spdlog logger from LOG_LEVEL / LOG_FORMAT, writing to stderr.
// `json`: one object a line {time, level, message, fields…}, where `key=value` words at the end
// of a message become fields. Invalid UTF-8 is replaced, never thrown.

#include "internal/config/config.h"

namespace autonous::cmd {

void setup_logging(const config::Config& config);

}  // namespace autonous::cmd
