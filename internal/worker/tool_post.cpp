#include "internal/worker/tool_post.h"

#include "internal/openai/errors.h"

namespace autonous::worker {

tools::HttpAnswer post_tool(openai::HttpTransport& transport, const tools::HttpCall& c) {
  openai::HttpRequest req;
  req.url = c.url;
  req.headers = c.headers;
  req.body = c.body;
  req.timeout = c.timeout;
  req.max_body_bytes = c.max_body_bytes;
  req.keep_going = c.keep_going;
  using CallKind = tools::HttpCallError::Kind;
  try {
    openai::HttpResponse r = transport.post(req);
    tools::HttpAnswer a{r.status, std::move(r.body), {}};
    for (auto& [k, v] : r.headers) a.headers.emplace_back(k, v);
    return a;
  } catch (const openai::TransportError& e) {
    throw tools::HttpCallError(e.aborted()     ? CallKind::kAborted
                               : e.timed_out() ? CallKind::kTimeout
                                               : CallKind::kFailed,
                               e.what());
  } catch (const openai::ResponseTooLargeError& e) {
    throw tools::HttpCallError(CallKind::kTooLarge, e.what());
  }
}

}  // namespace autonous::worker
