#include "internal/openai/errors.h"

#include <curl/curl.h>

namespace autonous::openai {
namespace {

class CurlCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "curl"; }
  std::string message(int code) const override {
    return curl_easy_strerror(static_cast<CURLcode>(code));
  }
};

}  // namespace

const std::error_category& curl_category() noexcept {
  static const CurlCategory kCategory;
  return kCategory;
}

TransportError::TransportError(int curl_code, const std::string& message)
    : Error(message), code_(curl_code, curl_category()) {}

bool TransportError::timed_out() const noexcept {
  return code_.value() == CURLE_OPERATION_TIMEDOUT;
}
bool TransportError::aborted() const noexcept { return code_.value() == CURLE_ABORTED_BY_CALLBACK; }
TransportError aborted_error(const std::string& message) {
  return TransportError(CURLE_ABORTED_BY_CALLBACK, message);
}

TransportError broken_stream_error(const std::string& message) {
  return TransportError(CURLE_PARTIAL_FILE, message);
}

bool TransportError::tls_refused() const noexcept {
  const int c = code_.value();
  return c == CURLE_PEER_FAILED_VERIFICATION || c == CURLE_SSL_CACERT_BADFILE ||
         c == CURLE_SSL_CERTPROBLEM || c == CURLE_SSL_PINNEDPUBKEYNOTMATCH;
}

std::string TransportError::reason() const {
  if (timed_out()) return "timeout";
  if (aborted()) return "aborted";
  if (tls_refused()) return "tls_certificate";
  return "network";
}

ApiError::ApiError(long status, std::string type, std::string code, const std::string& message,
                   std::optional<std::chrono::milliseconds> retry_after,
                   std::optional<bool> should_retry, bool in_success_body,
                   std::optional<Overflow> overflow)
    : Error(message),
      status_(status),
      type_(std::move(type)),
      code_(std::move(code)),
      retry_after_(retry_after),
      should_retry_(should_retry),
      in_success_body_(in_success_body),
      overflow_(overflow) {}

bool ApiError::retryable() const noexcept {
  if (should_retry_) return *should_retry_;  // the server's own word (x-should-retry)
  // A 402 with Retry-After is a budget that refills (OpenRouter's); without it, no credits.
  if (status_ == 402) return retry_after_.has_value();
  // As the official client: 408, 409, 429 and 5xx are worth another try. A context overflow
  // is not retried as it is: the worker learns the budget, compacts and retries (at most twice).
  return status_ == 408 || status_ == 409 || status_ == 429 || status_ >= 500;
}

std::string ApiError::reason() const {
  if (context_overflow())
    return overflow_->probable ? "probable_context_overflow" : "context_length_exceeded";
  if (status_ == 402) return "payment_required";           // OpenRouter and others: no credits left
  if (code_ == "content_filter") return "content_filter";  // Azure's filter refused the prompt
  return "http_" + std::to_string(status_);
}

}  // namespace autonous::openai
