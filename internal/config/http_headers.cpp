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

// Headers autonous writes itself (curl's Expect included): never set from the environment.
bool own_header(const std::string& name) {
  static const std::vector<std::string> kOwn = {"content-type",      "content-length", "host",
                                                "transfer-encoding", "connection",     "accept",
                                                "accept-encoding",   "expect"};
  return std::find(kOwn.begin(), kOwn.end(), header_key(name)) != kOwn.end();
}

}  // namespace

void check_header_name(const std::string& variable, const std::string& name) {
  // The name is not echoed: a mistake such as "Authorization: Bearer sk-…" holds the key.
  if (name.empty() || name.size() > 256 ||
      !std::all_of(name.begin(), name.end(), [](char c) { return token_char(c); }))
    throw ConfigError(variable,
                      "holds a header name with a character a header name cannot have (letters, "
                      "digits and !#$%&'*+-.^_`|~ only, e.g. api-key; a value goes elsewhere)");
  if (own_header(name))
    throw ConfigError(variable, "names '" + name + "', a header autonous writes itself");
}

Headers parse_extra_headers(const std::string& variable, const std::string& json_text,
                            const std::string& key_header, bool key_set) {
  Headers out;
  if (json_text.find_first_not_of(" \t\r\n") == std::string::npos) return out;
  // Every name at the top level, duplicates included (the parse keeps only the last).
  std::vector<std::string> names;
  const nlohmann::ordered_json::parser_callback_t collect =
      [&names](int depth, nlohmann::ordered_json::parse_event_t event,
               nlohmann::ordered_json& parsed) {
        if (depth == 1 && event == nlohmann::ordered_json::parse_event_t::key && parsed.is_string())
          names.push_back(header_key(parsed.get<std::string>()));
        return true;
      };
  const nlohmann::ordered_json j =
      nlohmann::ordered_json::parse(json_text, collect, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    throw ConfigError(variable,
                      "is not a JSON object of header names and values; expected e.g. "
                      "{\"HTTP-Referer\": \"https://example.com\", \"X-Title\": \"My bot\"}");
  const std::string key = header_key(key_header.empty() ? "Authorization" : key_header);
  for (size_t i = 0; i < names.size(); ++i)
    if (std::find(names.begin() + static_cast<ptrdiff_t>(i) + 1, names.end(), names[i]) !=
        names.end())
      throw ConfigError(variable, "sets a header twice (names are not case-sensitive)");
  for (const auto& [name, value] : j.items()) {
    check_header_name(variable, name);
    if (key_set && header_key(name) == key)
      throw ConfigError(variable, "sets '" + name +
                                      "', the header that carries the API key (set the key, or "
                                      "leave the key unset and send this header instead)");
    // The value is never written into a message: it may be a secret.
    if (!value.is_string())
      throw ConfigError(variable, "the value of '" + name + "' is not a JSON string");
    const std::string v = value.get<std::string>();
    if (v.empty())
      throw ConfigError(variable, "the value of '" + name + "' is empty (curl would not send it)");
    if (std::any_of(v.begin(), v.end(), [](char c) {
          const auto u = static_cast<unsigned char>(c);
          return (u < 0x20 && c != '\t') || u == 0x7f;
        }))
      throw ConfigError(
          variable, "the value of '" + name + "' holds a control character (a line break, NUL, …)");
    out.emplace_back(name, v);
  }
  return out;
}

}  // namespace autonous::config
