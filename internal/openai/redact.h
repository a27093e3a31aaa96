#pragma once
// What the client keeps out of everything a server's answer could echo into a log, an event or
// a table: the API key and the values of credential-like extra headers (a name holding key,
// token, secret, auth, cookie, password, signature, credential or session). Other headers'
// values (OpenRouter's X-Title, a referer) are the operator's public words, kept in replies.

#include <string>
#include <utility>
#include <vector>

namespace autonous::openai {

using Secrets = std::vector<std::string>;

// The key and the credential-like headers' values, longest first.
Secrets secrets_of(const std::string& api_key,
                   const std::vector<std::pair<std::string, std::string>>& extra_headers);

// `text` with each secret of 4 bytes or more replaced by "[redacted]", in one pass, the
// secrets tried longest first at each position (`secrets` as secrets_of() orders them): a short
// secret cannot leave part of a longer one, and a mark put in is never searched again.
std::string redacted(const std::string& text, const Secrets& secrets);

}  // namespace autonous::openai
