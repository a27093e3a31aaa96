#include "cmd/autonous-stub/embeddings.h"

#include <cctype>
#include <cmath>
#include <cstdint>

namespace autonous::stub {

std::vector<float> stub_vector(const std::string& text) {
  std::string t = " ";
  for (const char c : text) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  t += ' ';
  std::vector<float> v(kDimensions, 0.0F);
  for (size_t i = 0; i + 3 <= t.size(); ++i) {
    uint64_t h = 1469598103934665603ULL;  // FNV-1a
    for (size_t k = i; k < i + 3; ++k) {
      h ^= static_cast<unsigned char>(t[k]);
      h *= 1099511628211ULL;
    }
    v[h % kDimensions] += (h >> 32) & 1 ? 1.0F : -1.0F;
  }
  double sum = 0;
  for (const float x : v) sum += static_cast<double>(x) * x;
  if (sum > 0)
    for (float& x : v) x = static_cast<float>(x / std::sqrt(sum));
  return v;
}

std::string embeddings_response(const json& body) {
  if (!body.is_object() || !body.contains("input") || !body.contains("model") ||
      !body["model"].is_string())
    return response(
        400, openai_error("body is not an embeddings request", "invalid_request_error", nullptr));
  json inputs = body["input"];
  if (inputs.is_string()) inputs = json::array({inputs});
  if (!inputs.is_array() || inputs.empty())
    return response(400, openai_error("input must be a string or a non-empty array",
                                      "invalid_request_error", nullptr));
  bool bad = false;
  json data = json::array();
  int64_t tokens = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].is_string() || inputs[i].get<std::string>().empty())
      return response(400, openai_error("each input must be a non-empty string",
                                        "invalid_request_error", nullptr));
    const std::string text = inputs[i].get<std::string>();
    if (text.find("[[stub:embed500]]") != std::string::npos)
      return response(500, openai_error("embeddings failed (stub fault)", "server_error", nullptr));
    if (text.find("[[stub:embedtoolong]]") != std::string::npos)
      return response(400, openai_error("This model's maximum context length is 512 tokens",
                                        "invalid_request_error", "context_length_exceeded"));
    bad = bad || text.find("[[stub:embedbad]]") != std::string::npos;
    tokens += static_cast<int64_t>(text.size() / 4 + 1);
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", stub_vector(text)}});
  }
  if (bad) data.erase(data.size() - 1);
  const json out = {{"object", "list"},
                    {"data", std::move(data)},
                    {"model", body["model"]},
                    {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
  return response(200, out.dump());
}

}  // namespace autonous::stub
