#include "internal/config/http_headers.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include <nlohmann/json.hpp>

#include "internal/config/config.h"

namespace autonous::config {
namespace {

std::string header_key(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool token_char(unsigned char c) {
  return std::isalnum(c) != 0 ||
         std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

}  // namespace

void check_header_name(const std::string& variable, const std::string& name) {
  if (name.empty() || name.size() > 256 ||
      !std::all_of(name.begin(), name.end(), [](char c) { return token_char(c); }))
    throw ConfigError(variable, "'" + name +
                                    "' is not a header name (letters, digits and !#$%&'*+-.^_`|~ "
                                    "only; e.g. api-key)");
}

Headers parse_extra_headers(const std::string& variable, const std::string& json_text,
                            const std::string& key_header, bool key_set) {
  Headers out;
  if (json_text.find_first_not_of(" \t\r\n") == std::string::npos) return out;
  const nlohmann::ordered_json j =
      nlohmann::ordered_json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    throw ConfigError(variable,
                      "is not a JSON object of header names and values; expected e.g. "
                      "{\"HTTP-Referer\": \"https://example.com\", \"X-Title\": \"My bot\"}");
  static const std::vector<std::string> kOwn = {"content-type",      "content-length", "host",
                                                "transfer-encoding", "connection",     "accept",
                                                "accept-encoding"};
  const std::string key = header_key(key_header.empty() ? "Authorization" : key_header);
  std::vector<std::string> seen;
  for (const auto& [name, value] : j.items()) {
    check_header_name(variable, name);
    const std::string l = header_key(name);
    if (std::find(kOwn.begin(), kOwn.end(), l) != kOwn.end())
      throw ConfigError(variable, "sets '" + name + "', which autonous writes itself");
    if (key_set && l == key)
      throw ConfigError(variable, "sets '" + name +
                                      "', the header that carries the API key (set the key, or "
                                      "leave the key unset and send this header instead)");
    if (std::find(seen.begin(), seen.end(), l) != seen.end())
      throw ConfigError(variable, "sets '" + name + "' twice");
    // The value is never written into a message: it may be a secret.
    if (!value.is_string())
      throw ConfigError(variable, "the value of '" + name + "' is not a JSON string");
    const std::string v = value.get<std::string>();
    if (v.find_first_of(std::string("\r\n\0", 3)) != std::string::npos)
      throw ConfigError(variable, "the value of '" + name + "' holds a line break or NUL");
    seen.push_back(l);
    out.emplace_back(name, v);
  }
  return out;
}

}  // namespace autonous::config
