#pragma once
// POST …/embeddings: deterministic vectors, so recall's vector search is tested end to end.
// A text's vector counts its lower-cased character trigrams hashed into kDimensions signed
// buckets, at unit length: texts that share spelling (also misspelt) are similar, unrelated
// texts are not. An input holding [[stub:embed500]] makes the call answer 500; one holding
// [[stub:embedbad]] makes it answer 200 with one vector too few; [[stub:embedtoolong]] makes
// it answer 400 (an input over the model's length, as OpenAI words it).

#include <string>
#include <vector>

#include "cmd/autonous-stub/http.h"

namespace autonous::stub {

inline constexpr int kDimensions = 256;

// The vector for `text`.
std::vector<float> stub_vector(const std::string& text);

// The response to an embeddings request `body` (status and body).
std::string embeddings_response(const json& body);

}  // namespace autonous::stub
