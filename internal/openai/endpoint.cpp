#include "internal/openai/endpoint.h"

#include <algorithm>
#include <cctype>

namespace autonous::openai {

std::string url_host(const std::string& base_url) {
  const size_t start = base_url.find("://");
  if (start == std::string::npos) return "";
  const size_t from = start + 3;
  std::string host = base_url.substr(from, base_url.find_first_of("/?#", from) - from);
  if (const size_t at = host.rfind('@'); at != std::string::npos) host.erase(0, at + 1);
  if (!host.empty() && host[0] == '[') {
    host = host.substr(0, host.find(']') + 1);  // an IPv6 literal keeps its brackets
  } else if (const size_t colon = host.find(':'); colon != std::string::npos) {
    host.resize(colon);
  }
  for (char& c : host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return host;
}

std::string endpoint_url(const std::string& base_url, const std::string& path) {
  const size_t q = std::min(base_url.find('?'), base_url.size());
  return base_url.substr(0, q) + path + base_url.substr(q);
}

bool list_prices_apply(const std::string& mode, const std::string& base_url) {
  if (mode == "on") return true;
  if (mode != "auto") return false;
  const std::string host = url_host(base_url);
  for (const char* vendor :
       {"api.openai.com", "api.anthropic.com", "generativelanguage.googleapis.com",
        "api.deepseek.com", "api.mistral.ai", "openrouter.ai", "dashscope.aliyuncs.com",
        "dashscope-intl.aliyuncs.com"})
    if (host == vendor) return true;
  return false;
}

}  // namespace autonous::openai
