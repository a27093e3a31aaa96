#pragma once
// Sets the default spdlog logger from LOG_LEVEL / LOG_FORMAT, writing to stderr.
// `json`: one object a line {time, level, message, fields…}; the fields are those passed to
// log::write() (internal/common/log.h), with their types. Invalid UTF-8 is replaced, never thrown.
// When stderr is the journal's stream ($JOURNAL_STREAM names it), every line starts with its
// sd-daemon priority ("<3>" error … "<7>" debug), so `journalctl -p err` finds the errors.

#include <optional>
#include <string>

#include "internal/config/config.h"

namespace autonous::cmd {

void setup_logging(const config::Config& config);

// Says why the process exits with `code`: "autonous: <text>" on stderr, or, once LOG_FORMAT=json
// is in effect, one more JSON line ("autonous exiting", exit_code, error). Returns `code`.
int report_exit(int code, const std::string& text);

// Before the configuration is read: report_exit() writes JSON when LOG_FORMAT (as set in the
// environment) is json, so even a refused configuration ends in a JSON line.
void prefer_json_errors(const std::optional<std::string>& log_format);

}  // namespace autonous::cmd
