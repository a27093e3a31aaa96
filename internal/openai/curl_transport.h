#pragma once
// CurlTransport: HttpTransport over one reused libcurl easy handle (connection reuse per worker
// slot; a connection the server already closed is reopened by libcurl). TLS verification stays
// on. Not thread-safe: one per slot. REQUIRES: curl_global_init ran (see CurlGlobal).

#include <memory>

#include "internal/openai/http_transport.h"

namespace autonous::openai {

// Runs curl_global_init for its lifetime; create one in main before any thread starts.
class CurlGlobal {
 public:
  CurlGlobal();
  ~CurlGlobal();
  CurlGlobal(const CurlGlobal&) = delete;
  CurlGlobal& operator=(const CurlGlobal&) = delete;
};

class CurlTransport final : public HttpTransport {
 public:
  CurlTransport();
  ~CurlTransport() override;
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  HttpResponse post(const HttpRequest& request) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace autonous::openai
