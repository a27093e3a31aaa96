#pragma once
// A base URL's parts as the client uses them (#31): where an endpoint's path goes (after the
// URL's path, before its query: Azure's ?api-version=…) and the URL's host.

#include <string>

namespace autonous::openai {

// `base_url` with `path` put after its path, before its query.
std::string endpoint_url(const std::string& base_url, const std::string& path);
// The host of `base_url` (scheme://host[:port]…), lower-cased; "" when it has none.
std::string url_host(const std::string& base_url);

// Whether calls to `base_url` are priced at the presets' list prices (COST_PRICES, #31): "on"
// always, "off" never, "auto" when its host is a vendor's own API that bills at those prices
// (OpenAI, Anthropic, Google's Gemini API, DeepSeek, Mistral, Alibaba's DashScope, OpenRouter).
// A self-hosted server or a gateway that serves a model under a vendor's name is not billed
// at the vendor's list price, and Azure's prices vary by region and deployment type.
bool list_prices_apply(const std::string& mode, const std::string& base_url);

}  // namespace autonous::openai
