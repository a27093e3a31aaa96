#pragma once
// How long a server asks us to wait: `retry-after-ms`, then `retry-after` in seconds or as an
// HTTP date (as the official OpenAI client reads them). Pure.

#include <chrono>
#include <map>
#include <optional>
#include <string>

namespace autonous::openai {

// The longest wait a server can ask for; longer (or infinite) asks are cut to it.
inline constexpr std::chrono::milliseconds kMaxRetryWait{std::chrono::hours(1)};

// The wait the headers ask for, from 0 to kMaxRetryWait (inf and huge values are cut to it);
// nullopt when they say nothing usable (not a number, negative, nan).
// `headers` has lower-case names; `now` resolves HTTP dates.
std::optional<std::chrono::milliseconds> parse_retry_after(
    const std::map<std::string, std::string>& headers, std::chrono::system_clock::time_point now);

}  // namespace autonous::openai
