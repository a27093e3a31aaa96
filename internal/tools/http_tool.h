#pragma once
// Calling a declared HTTP tool (#29): POST its url with the model's arguments object as the JSON
// body, with the tool's headers; the response body is the result. Whatever goes wrong is a
// result the model reads, never an exception and never a failed task: a non-2xx answer
// ("HTTP 503: …"), a timeout, a refused connection, a body over the size cap, arguments that
// are not a JSON object (no request is made). The result is valid UTF-8 (invalid bytes become
// U+FFFD) without NUL. The transport is a seam (curl lives in internal/openai; the worker adapts
// its transport), so tests script it.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "internal/tools/tools_file.h"

namespace autonous::tools {

struct HttpCall {
  std::string url;
  Headers headers;
  std::string body;
  std::chrono::milliseconds timeout{30'000};
  size_t max_body_bytes = 1u << 20;
  std::function<bool()> keep_going;  // false aborts the call (the lease was lost, a hard stop)
};

struct HttpAnswer {
  long status = 0;
  std::string body;
  Headers headers;  // names lower-cased
  // The value of header `name` (lower-case), "" when absent.
  std::string header(std::string_view name) const {
    for (const auto& [k, v] : headers)
      if (k == name) return v;
    return "";
  }
};

// No answer came. `kind`: why, for the result's text and the event.
class HttpCallError : public std::runtime_error {
 public:
  enum class Kind { kFailed, kTimeout, kTooLarge, kAborted };
  HttpCallError(Kind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  Kind kind() const noexcept { return kind_; }

 private:
  Kind kind_;
};

// Performs one POST; throws HttpCallError when no answer came.
using HttpPost = std::function<HttpAnswer(const HttpCall&)>;

struct ToolOutcome {
  std::string content;  // what the model reads
  bool ok = false;      // the tool answered 2xx
  std::optional<long> status;
  std::chrono::milliseconds latency{0};
  int64_t bytes = 0;     // the answer's body as received
  bool aborted = false;  // the turn is stopping: the result must not be used
};

// A 2xx body of this many bytes or more is a result too large to read.
inline constexpr size_t kDefaultToolResultBytes = 1u << 20;

// `bytes` as a prompt can carry them: valid UTF-8 (U+FFFD for invalid bytes), NUL as a space.
std::string prompt_text(std::string_view bytes);

// `text` with every value of `headers` (and the credential after "Bearer " or "Basic ")
// replaced by "[redacted]": a tool's answer may echo its request. Values under 4 bytes are left.
std::string redact_headers(std::string text, const Headers& headers);

ToolOutcome call_http_tool(const HttpTool& tool, std::string_view arguments, const HttpPost& post,
                           size_t max_body_bytes, const std::function<bool()>& keep_going);

}  // namespace autonous::tools
