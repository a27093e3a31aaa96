#pragma once
// The OpenAI clients' options from the configuration: the chat's (OPENAI_BASE_URL, its key, the
// key's header and the extra headers) and, when the embeddings have an endpoint of their own
// (EMBEDDING_BASE_URL), theirs (EMBEDDING_*).

#include <optional>

#include "internal/config/config.h"
#include "internal/openai/client.h"

namespace autonous::worker {

openai::ClientOptions chat_client_options(const config::Config& c);
// nullopt when the embeddings are off or use the chat's endpoint.
std::optional<openai::ClientOptions> embedding_client_options(const config::Config& c);

}  // namespace autonous::worker
