#include "internal/openai/curl_transport.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <stdexcept>

#include <curl/curl.h>

#include "internal/common/text.h"
#include "internal/openai/errors.h"

namespace autonous::openai {
namespace {

struct EasyDeleter {
  void operator()(CURL* h) const noexcept { curl_easy_cleanup(h); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const noexcept { curl_slist_free_all(l); }
};

// State of one transfer, shared with the C callbacks. Callbacks are noexcept: they stash an
// exception and return a value that makes libcurl stop.
struct Transfer {
  HttpResponse response;
  const std::function<bool()>* keep_going = nullptr;
  const std::function<bool(std::string_view)>* on_body = nullptr;
  size_t max_body_bytes = 0;
  bool keep_body = true;
  bool too_large = false;  // the body passed max_body_bytes: the transfer was stopped there
  std::exception_ptr error;
};

size_t on_body(char* data, size_t size, size_t count, void* user) noexcept {
  auto* t = static_cast<Transfer*>(user);
  try {
    // A reader of the body as it arrives may take a piece whole (a stream it puts together
    // itself, and caps itself): then it is neither kept nor counted here.
    if (t->on_body != nullptr && *t->on_body &&
        !(*t->on_body)(std::string_view(data, size * count)))
      return size * count;
    if (!t->keep_body) return size * count;
    if (t->response.body.size() + size * count > t->max_body_bytes) {
      t->too_large = true;
      return 0;  // stops the transfer (CURLE_WRITE_ERROR); post() decides what it means
    }
    t->response.body.append(data, size * count);
    return size * count;
  } catch (...) {
    t->error = std::current_exception();
    return 0;
  }
}

size_t on_header(char* data, size_t size, size_t count, void* user) noexcept {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  try {
    std::string line(data, n);
    // A new status line (after a 100 Continue, say) starts a new header block.
    if (line.rfind("HTTP/", 0) == 0) t->response.headers.clear();
    const auto colon = line.find(':');
    if (colon == std::string::npos) return n;
    t->response.headers[common::to_lower_ascii(line.substr(0, colon))] =
        common::trim(std::string_view(line).substr(colon + 1));
    return n;
  } catch (...) {
    t->error = std::current_exception();
    return 0;
  }
}

int on_progress(void* user, curl_off_t /*dltotal*/, curl_off_t /*dlnow*/, curl_off_t /*ultotal*/,
                curl_off_t /*ulnow*/) noexcept {
  auto* t = static_cast<Transfer*>(user);
  if (t->keep_going == nullptr || !*t->keep_going) return 0;
  try {
    return (*t->keep_going)() ? 0 : 1;  // non-zero aborts: CURLE_ABORTED_BY_CALLBACK
  } catch (...) {
    t->error = std::current_exception();
    return 1;
  }
}

}  // namespace

CurlGlobal::CurlGlobal() {
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
    throw std::runtime_error("curl_global_init failed");
}
CurlGlobal::~CurlGlobal() { curl_global_cleanup(); }

struct CurlTransport::Impl {
  std::unique_ptr<CURL, EasyDeleter> easy{curl_easy_init()};
};

CurlTransport::CurlTransport() : impl_(std::make_unique<Impl>()) {
  if (!impl_->easy) throw std::runtime_error("curl_easy_init failed");
}

CurlTransport::~CurlTransport() = default;

HttpResponse CurlTransport::post(const HttpRequest& request) {
  CURL* h = impl_->easy.get();
  // Options are reset per request, but the handle keeps its connection cache.
  curl_easy_reset(h);
  Transfer t;
  t.keep_going = &request.keep_going;
  t.on_body = &request.on_body;
  t.max_body_bytes = request.max_body_bytes;
  t.keep_body = request.keep_body;
  std::unique_ptr<curl_slist, SlistDeleter> headers;
  for (const auto& [name, value] : request.headers) {
    curl_slist* next = curl_slist_append(headers.get(), (name + ": " + value).c_str());
    if (next == nullptr) throw std::bad_alloc();
    (void)headers.release();
    headers.reset(next);
  }
  // Without this, libcurl sends "Expect: 100-continue" for large bodies and waits for it.
  curl_slist* next = curl_slist_append(headers.get(), "Expect:");
  if (next == nullptr) throw std::bad_alloc();
  (void)headers.release();
  headers.reset(next);

  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM-based DNS timeouts
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::min<int64_t>(request.timeout.count(), 30000)));
  // Whatever libcurl can decode; on_body's cap counts decoded bytes, so a gzip bomb stops at it.
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, &on_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "autonous/0.1");

  const CURLcode rc = curl_easy_perform(h);
  if (t.error) std::rethrow_exception(t.error);
  if (t.too_large) {
    // An error status keeps its meaning (a 502's oversized HTML page is still a 502, retried),
    // its body cut at the cap; an oversized answer is refused.
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &t.response.status);
    if (t.response.status >= 300) return std::move(t.response);
    throw ResponseTooLargeError("response body over " + std::to_string(request.max_body_bytes) +
                                " bytes (MAX_RESPONSE_BYTES); transfer stopped");
  }
  if (rc != CURLE_OK) {
    // errbuf and curl_easy_strerror never hold request headers, so the key cannot leak here.
    std::string detail = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc);
    throw TransportError(rc, "HTTP transport: " + detail);
  }
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &t.response.status);
  return std::move(t.response);
}

}  // namespace autonous::openai
