#include "internal/worker/client_options.h"

namespace autonous::worker {

openai::ClientOptions chat_client_options(const config::Config& c) {
  return {c.openai_base_url,
          c.openai_api_key,
          c.openai_model,
          c.llm_timeout,
          static_cast<size_t>(c.max_response_bytes),
          c.openai_api_key_header,
          c.openai_extra_headers};
}

std::optional<openai::ClientOptions> embedding_client_options(const config::Config& c) {
  if (c.embedding_model.empty() || c.embedding_base_url.empty()) return std::nullopt;
  return openai::ClientOptions{c.embedding_base_url,
                               c.embedding_api_key,
                               c.embedding_model,
                               c.llm_timeout,
                               static_cast<size_t>(c.max_response_bytes),
                               c.embedding_api_key_header,
                               c.embedding_extra_headers};
}

}  // namespace autonous::worker
