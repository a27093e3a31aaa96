#pragma once
// How long a server asks us to wait: `retry-after-ms`, then `retry-after` in seconds or as an
// HTTP date (as the official OpenAI client reads them). Pure.

#include <chrono>
#include <map>
#include <optional>
#include <string>

namespace autonous::openai {

// The wait the headers ask for, never negative; nullopt when they say nothing usable.
// `headers` has lower-case names; `now` resolves HTTP dates.
std::optional<std::chrono::milliseconds> parse_retry_after(
    const std::map<std::string, std::string>& headers, std::chrono::system_clock::time_point now);

}  // namespace autonous::openai
