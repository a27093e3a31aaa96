#include "internal/tools/http_tool.h"

#include <nlohmann/json.hpp>

#include "internal/common/utf8.h"

namespace autonous::tools {
namespace {

std::string head(std::string_view body, size_t n) {
  return prompt_text(body.substr(0, n)) + (body.size() > n ? "…" : "");
}

void replace_all(std::string& text, const std::string& secret) {
  if (secret.size() < 4) return;
  for (size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at))
    text.replace(at, secret.size(), "[redacted]");
}

}  // namespace

std::string prompt_text(std::string_view bytes) {
  std::string out = common::sanitize_utf8(std::string(bytes));
  for (char& c : out)
    if (c == '\0') c = ' ';
  return out;
}

std::string redact_headers(std::string text, const Headers& headers) {
  for (const auto& [name, value] : headers) {
    replace_all(text, value);
    for (const std::string scheme : {"Bearer ", "Basic ", "bearer ", "basic "})
      if (value.rfind(scheme, 0) == 0) replace_all(text, value.substr(scheme.size()));
  }
  return text;
}

ToolOutcome call_http_tool(const HttpTool& tool, std::string_view arguments, const HttpPost& post,
                           size_t max_body_bytes, const std::function<bool()>& keep_going) {
  ToolOutcome out;
  const nlohmann::json args =
      nlohmann::json::parse(arguments.empty() ? std::string_view("{}") : arguments, nullptr,
                            /*allow_exceptions=*/false);
  if (args.is_discarded() || !args.is_object()) {
    out.content = "error: the arguments are not a JSON object; the tool was not called";
    return out;
  }
  HttpCall call;
  call.url = tool.url;
  call.headers = tool.headers;
  call.headers.emplace_back("Content-Type", "application/json");
  call.headers.emplace_back("Accept", "application/json, text/plain;q=0.9, */*;q=0.5");
  call.body = args.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  call.timeout = tool.timeout;
  call.max_body_bytes = max_body_bytes;
  call.keep_going = keep_going;
  const auto started = std::chrono::steady_clock::now();
  try {
    const HttpAnswer a = post(call);
    out.status = a.status;
    out.bytes = static_cast<int64_t>(a.body.size());
    out.ok = a.status >= 200 && a.status < 300;
    out.content = out.ok ? prompt_text(a.body)
                         : "error: the tool answered HTTP " + std::to_string(a.status) + ": " +
                               head(a.body, 2000);
  } catch (const HttpCallError& e) {
    using Kind = HttpCallError::Kind;
    out.aborted = e.kind() == Kind::kAborted;
    switch (e.kind()) {
      case Kind::kTimeout:
        out.content =
            "error: the tool did not answer within " + std::to_string(tool.timeout.count()) + " ms";
        break;
      case Kind::kTooLarge:
        out.content = "error: the tool's answer is over " + std::to_string(max_body_bytes) +
                      " bytes; it was not read";
        break;
      default:
        // The transport's words name the host and the failure, never the headers.
        out.content = "error: the tool could not be reached: " + prompt_text(e.what());
    }
  }
  out.latency = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  return out;
}

}  // namespace autonous::tools
