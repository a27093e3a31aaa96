#pragma once
// The provider's headers from the environment (#31): OPENAI_API_KEY_HEADER names the header that
// carries the key as it is (Azure's `api-key`; unset: `Authorization: Bearer <key>`), and
// OPENAI_EXTRA_HEADERS is a JSON object of headers sent on every call (OpenRouter's
// `HTTP-Referer` and `X-Title`, a gateway's own). The same for EMBEDDING_* with
// EMBEDDING_BASE_URL. Values are secrets as much as the key: never logged.

#include <string>
#include <utility>
#include <vector>

namespace autonous::config {

using Headers = std::vector<std::pair<std::string, std::string>>;

// `name` checked as a header name (RFC 9110 token characters) that autonous does not write
// itself, for `variable`. Throws ConfigError (without echoing a bad name).
void check_header_name(const std::string& variable, const std::string& name);

// The headers of `json_text` (`variable`'s value: a JSON object of strings), in the object's
// order. Throws ConfigError naming `variable`: not a JSON object, a value that is not a string or
// is empty or holds a control character (tab allowed), a bad name, a name given twice (in any
// case), a header autonous writes itself (Content-Type, Content-Length, Host, Transfer-Encoding,
// Connection, Accept, Accept-Encoding, Expect) or the key's own header (`key_header`, when a
// key is set). A bad name is not echoed (it may hold a key typed in the wrong place).
Headers parse_extra_headers(const std::string& variable, const std::string& json_text,
                            const std::string& key_header, bool key_set);

}  // namespace autonous::config
