#pragma once
// A base URL's parts as the client uses them (#31): where an endpoint's path goes (after the
// URL's path, before its query: Azure's ?api-version=…) and the URL's host.

#include <string>

namespace autonous::openai {

// `base_url` with `path` put after its path, before its query.
std::string endpoint_url(const std::string& base_url, const std::string& path);
// The host of `base_url` (scheme://host[:port]…), lower-cased; "" when it has none.
std::string url_host(const std::string& base_url);

}  // namespace autonous::openai
