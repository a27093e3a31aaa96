#include "internal/openai/redact.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace autonous::openai {
namespace {

bool secret_header(const std::string& name) {
  std::string l;
  for (const char c : name) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* word : {"key", "token", "secret", "auth", "cookie", "password", "signature",
                           "credential", "session"})
    if (l.find(word) != std::string::npos) return true;
  return false;
}

}  // namespace

Secrets secrets_of(const std::string& api_key,
                   const std::vector<std::pair<std::string, std::string>>& extra_headers) {
  Secrets out{api_key};
  for (const auto& [name, value] : extra_headers)
    if (secret_header(name)) out.push_back(value);
  std::sort(out.begin(), out.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  return out;
}

std::string redacted(const std::string& text, const Secrets& secrets) {
  static constexpr std::string_view kMark = "[redacted]";
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    const std::string* hit = nullptr;
    for (const std::string& secret : secrets)
      if (secret.size() >= 4 && text.compare(at, secret.size(), secret) == 0) {
        hit = &secret;
        break;
      }
    if (hit != nullptr) {
      out += kMark;
      at += hit->size();
    } else {
      out += text[at++];
    }
  }
  return out;
}

}  // namespace autonous::openai
