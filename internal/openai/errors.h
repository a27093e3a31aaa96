#pragma once
// The LLM call's failures, classified once here so the worker only asks: retry or fail, and
// when. TransportError: no HTTP response (network, timeout, abort). ApiError: an HTTP error
// status (the server's own message kept). ResponseError: a 2xx whose body is unusable.

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>

#include "internal/openai/overflow.h"
#include "internal/openai/types.h"

namespace autonous::openai {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  // Whether trying again later may succeed.
  virtual bool retryable() const noexcept = 0;
  // How long the server asked us to wait, when it said.
  virtual std::optional<std::chrono::milliseconds> retry_after() const noexcept {
    return std::nullopt;
  }
  // A short machine-readable reason for events: "timeout", "network", "http_429", ….
  virtual std::string reason() const = 0;
};

// libcurl's CURLcode values, as a std::error_category.
const std::error_category& curl_category() noexcept;

class TransportError final : public Error {
 public:
  TransportError(int curl_code, const std::string& message);
  // Network trouble is worth another try; an abort (shutdown, lost lease) and a TLS certificate
  // the client refuses are not: a bad certificate stays bad.
  bool retryable() const noexcept override { return !aborted() && !tls_refused(); }
  std::string reason() const override;
  std::error_code code() const noexcept { return code_; }
  bool timed_out() const noexcept;
  bool aborted() const noexcept;      // keep_going returned false
  bool tls_refused() const noexcept;  // the server's certificate failed verification

 private:
  std::error_code code_;
};

// The error an abort by keep_going gives (shutdown, lost lease), for code that stops before
// a transfer starts.
TransportError aborted_error(const std::string& message);
// A streamed reply that stopped before its end (no [DONE], no finish_reason): network trouble,
// tried again like any.
TransportError broken_stream_error(const std::string& message);

class ApiError final : public Error {
 public:
  ApiError(long status, std::string type, std::string code, const std::string& message,
           std::optional<std::chrono::milliseconds> retry_after, std::optional<bool> should_retry,
           bool in_success_body = false, std::optional<Overflow> overflow = std::nullopt);
  // The error object came inside a 2xx body (classified as a 500): the server answered, so it
  // is not an outage the retry budget should wait out.
  bool in_success_body() const noexcept { return in_success_body_; }
  long status() const noexcept { return status_; }
  const std::string& type() const noexcept { return type_; }
  const std::string& api_code() const noexcept { return code_; }
  // The prompt was larger than the model's window (overflow.h: the providers' wordings).
  bool context_overflow() const noexcept { return overflow_.has_value(); }
  // What the overflow answer stated (the window, the tokens counted), when it is one.
  const std::optional<Overflow>& overflow() const noexcept { return overflow_; }
  bool retryable() const noexcept override;
  std::optional<std::chrono::milliseconds> retry_after() const noexcept override {
    return retry_after_;
  }
  std::string reason() const override;

 private:
  long status_;
  std::string type_;
  std::string code_;
  std::optional<std::chrono::milliseconds> retry_after_;
  std::optional<bool> should_retry_;
  bool in_success_body_ = false;
  std::optional<Overflow> overflow_;
};

// A 2xx whose body is unusable (reason "malformed_response") or holds no answer ("empty_reply":
// content null, tool calls only). Retryable: another try may answer.
class ResponseError final : public Error {
 public:
  explicit ResponseError(const std::string& message, std::string reason = "malformed_response",
                         std::optional<ChatResult> answered = std::nullopt)
      : Error(message), reason_(std::move(reason)), answered_(std::move(answered)) {}
  // An empty reply's response (its usage is billed: its llm.response is recorded); unset for a
  // body that could not be read.
  const std::optional<ChatResult>& answered() const noexcept { return answered_; }
  void set_latency(std::chrono::milliseconds latency) noexcept {
    if (answered_) answered_->latency = latency;
  }
  bool retryable() const noexcept override { return true; }
  std::string reason() const override { return reason_; }

 private:
  std::string reason_;
  std::optional<ChatResult> answered_;
};

// A 2xx whose answer the provider withheld: its content filter emptied it (finish_reason
// "content_filter" with no text: Azure, Gemini; reason "content_filter") or the model refused
// (message.refusal: reason "refusal", the refusal's text in the message). Not retryable: the
// same prompt is filtered or refused again, so the task fails at once.
class ReplyWithheldError final : public Error {
 public:
  // `answered`: the response as far as it went (status, model, finish_reason, usage: a
  // withheld reply is billed, so its llm.response and cost are recorded).
  ReplyWithheldError(const std::string& message, std::string reason, ChatResult answered = {})
      : Error(message), reason_(std::move(reason)), answered_(std::move(answered)) {}
  bool retryable() const noexcept override { return false; }
  std::string reason() const override { return reason_; }
  const ChatResult& answered() const noexcept { return answered_; }
  void set_latency(std::chrono::milliseconds latency) noexcept { answered_.latency = latency; }

 private:
  std::string reason_;
  ChatResult answered_;
};

// A response body over the configured cap (MAX_RESPONSE_BYTES, counted after decoding): the
// transfer is stopped there. Not retryable: a server that sends that much will again.
class ResponseTooLargeError final : public Error {
 public:
  using Error::Error;
  bool retryable() const noexcept override { return false; }
  std::string reason() const override { return "response_too_large"; }
};

}  // namespace autonous::openai
