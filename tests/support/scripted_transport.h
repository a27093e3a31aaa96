#pragma once
// ScriptedTransport: an HttpTransport that answers from a script, for client and worker unit
// tests without a socket. Records every request it was given.

#include <deque>
#include <functional>
#include <stdexcept>
#include <string_view>
#include <variant>
#include <vector>

#include "internal/openai/errors.h"
#include "internal/openai/http_transport.h"

namespace autonous::testing {

class ScriptedTransport final : public openai::HttpTransport {
 public:
  using Step = std::variant<openai::HttpResponse, openai::TransportError>;

  void push(openai::HttpResponse r) { script_.emplace_back(std::move(r)); }
  void push_error(int curl_code, const std::string& message) {
    script_.emplace_back(openai::TransportError(curl_code, message));
  }
  openai::HttpResponse post(const openai::HttpRequest& request) override {
    requests.push_back(request);
    if (script_.empty()) throw std::logic_error("ScriptedTransport: script exhausted");
    Step step = std::move(script_.front());
    script_.pop_front();
    if (auto* e = std::get_if<openai::TransportError>(&step)) throw *e;
    openai::HttpResponse r = std::get<openai::HttpResponse>(std::move(step));
    // A reader of the body as it arrives gets it in small pieces cut anywhere (inside a line,
    // inside a UTF-8 character), as a network delivers it.
    if (request.on_body)
      for (size_t i = 0; i < r.body.size(); i += kPiece)
        (void)request.on_body(std::string_view(r.body).substr(i, kPiece));
    return r;
  }

  std::vector<openai::HttpRequest> requests;
  size_t kPiece = 7;

 private:
  std::deque<Step> script_;
};

}  // namespace autonous::testing
