// docs/providers.md's recipes, each run as written (#31): the recipe's variables, its base URL's
// host pointed at the stub (path and query kept), the stub answering as that provider does (its
// overflow words, its filter, its cache fields, its silent cut). Every request must reach the
// recipe's path and query with the key in the recipe's header, every task must be answered, and
// what the provider says of a too-long prompt must be learned. A recipe edited into something
// that no longer works fails here.

#include <cctype>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/e2e/e2e_support.h"

namespace autonous::testing {
namespace {

using nlohmann::json;

// Each "### Title" of the Recipes section with its ```sh block as variables.
std::map<std::string, Env> read_recipes() {
  std::ifstream in(std::string(AUTONOUS_SOURCE_DIR) + "/docs/providers.md");
  std::map<std::string, Env> out;
  std::string line;
  std::string title;
  bool in_recipes = false;
  bool in_block = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) in_recipes = line == "## Recipes";
    if (!in_recipes) continue;
    if (line.rfind("### ", 0) == 0) title = line.substr(4);
    if (line == "```sh") {
      in_block = true;
    } else if (line == "```") {
      in_block = false;
    } else if (in_block && !title.empty()) {
      const auto eq = line.find('=');
      if (eq == std::string::npos) continue;
      std::string value = line.substr(eq + 1);
      if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'')
        value = value.substr(1, value.size() - 2);  // a shell's quotes
      out[title][line.substr(0, eq)] = value;
    }
  }
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct UrlParts {
  std::string path;   // as the recipe gives it, without a trailing slash
  std::string query;  // without the '?'
};

UrlParts split(const std::string& url) {
  static const std::regex kUrl(R"(^https?://[^/?]+([^?]*)(?:\?(.*))?$)");
  std::smatch m;
  EXPECT_TRUE(std::regex_match(url, m, kUrl)) << url;
  std::string path = m[1].str();
  while (!path.empty() && path.back() == '/') path.pop_back();
  return {path, m[2].str()};
}

// What each provider's documentation says its requests look like (the path before
// /chat/completions, the query, where the key goes), checked against the recipe, and how the
// stub answers as that provider: its overflow words at a small window, or Ollama's silent cut.
struct StubFor {
  std::string path;               // the base URL's path
  std::string key_header;         // "authorization" (a bearer token), "api-key", or ""
  std::vector<std::string> args;  // the stub's
  bool learns = true;             // an overflow answer is learned (else: a silent cut)
  std::string query_prefix;       // the query starts with this
};

const std::map<std::string, StubFor>& stub_for() {
  const auto overflow = [](const char* style) {
    return std::vector<std::string>{"--context-limit", "1500", "--overflow-style", style};
  };
  static const std::map<std::string, StubFor> k = {
      {"OpenAI", {"/v1", "authorization", overflow("openai"), true, ""}},
      {"Azure OpenAI (classic)",
       {"/openai/deployments/DEPLOYMENT", "api-key", overflow("openai"), true, "api-version="}},
      {"Azure OpenAI (v1)", {"/openai/v1", "authorization", overflow("openai"), true, ""}},
      {"Anthropic (OpenAI-compatible endpoint)",
       {"/v1", "authorization", overflow("anthropic"), true, ""}},
      {"Google Gemini (OpenAI-compatible endpoint)",
       {"/v1beta/openai", "authorization", overflow("gemini"), true, ""}},
      {"DeepSeek", {"/v1", "authorization", overflow("deepseek"), true, ""}},
      {"OpenRouter", {"/api/v1", "authorization", overflow("openrouter"), true, ""}},
      {"LiteLLM proxy", {"/v1", "authorization", overflow("openai"), true, ""}},
      {"vLLM", {"/v1", "authorization", overflow("vllm"), true, ""}},
      {"llama.cpp server", {"/v1", "", overflow("llamacpp"), true, ""}},
      {"Ollama", {"/v1", "", {"--silent-limit", "1000"}, false, ""}}};
  return k;
}

class ProviderRecipeE2eTest : public E2eTest, public ::testing::WithParamInterface<std::string> {};

TEST(ProviderRecipes, EveryRecipeInTheDocsIsTested) {
  const auto recipes = read_recipes();
  ASSERT_EQ(recipes.size(), stub_for().size());
  for (const auto& [title, env] : recipes) {
    EXPECT_EQ(stub_for().count(title), 1u) << title;
    EXPECT_EQ(env.count("OPENAI_BASE_URL"), 1u) << title;
    EXPECT_EQ(env.count("OPENAI_MODEL"), 1u) << title;
  }
}

TEST_P(ProviderRecipeE2eTest, WorksAsWritten) {
  const auto recipes = read_recipes();
  ASSERT_EQ(recipes.count(GetParam()), 1u) << "docs/providers.md has no recipe " << GetParam();
  const Env recipe = recipes.at(GetParam());
  const StubFor& how = stub_for().at(GetParam());
  StubServer stub(dir_.path().string(), 0, how.args);
  const UrlParts url = split(recipe.at("OPENAI_BASE_URL"));
  // The recipe says what the provider's documentation says.
  EXPECT_EQ(url.path, how.path);
  EXPECT_EQ(url.query.rfind(how.query_prefix, 0), 0u) << url.query;
  if (how.key_header == "api-key") {
    EXPECT_EQ(recipe.count("OPENAI_API_KEY_HEADER") ? recipe.at("OPENAI_API_KEY_HEADER") : "",
              "api-key");
  } else {
    EXPECT_EQ(recipe.count("OPENAI_API_KEY_HEADER"), 0u);
    EXPECT_EQ(recipe.count("OPENAI_API_KEY"), how.key_header.empty() ? 0u : 1u);
  }
  Env e = env(stub, recipe);
  e["OPENAI_BASE_URL"] = "http://127.0.0.1:" + std::to_string(stub.port()) + url.path +
                         (url.query.empty() ? "" : "?" + url.query);
  if (recipe.count("OPENAI_API_KEY") == 0) e.erase("OPENAI_API_KEY");
  // A long chat: its later prompts pass the stub's window.
  const int turns = how.learns ? 10 : 12;
  for (int i = 0; i < turns; ++i)
    enqueue("r", "turn " + std::to_string(i) + " " + std::string(how.learns ? 900 : 1200, 'w'));
  const bool azure_classic = GetParam() == "Azure OpenAI (classic)";
  const bool deepseek = GetParam() == "DeepSeek";
  const int64_t filtered = azure_classic ? enqueue("f", "hello [[stub:filtered]]") : 0;
  const int64_t cached = deepseek ? enqueue("d", "hello [[stub:deepseek]]") : 0;
  drain(e);

  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE chat_id = 'r' AND status = 'done'"), turns);
  const auto lines = stub.log_lines();
  ASSERT_FALSE(lines.empty());
  for (const auto& line : lines) {
    const json j = json::parse(line);
    EXPECT_EQ(j["path"], url.path + "/chat/completions");
    EXPECT_EQ(j["query"].is_string() ? j["query"].get<std::string>() : "", url.query);
    EXPECT_EQ(j["body"]["model"], recipe.at("OPENAI_MODEL"));
    if (recipe.count("OPENAI_API_KEY_HEADER") != 0) {
      EXPECT_EQ(j["headers"][recipe.at("OPENAI_API_KEY_HEADER")], recipe.at("OPENAI_API_KEY"));
      EXPECT_TRUE(j["authorization"].is_null());
    } else if (recipe.count("OPENAI_API_KEY") != 0) {
      EXPECT_EQ(j["authorization"], "Bearer " + recipe.at("OPENAI_API_KEY"));
    } else {
      EXPECT_TRUE(j["authorization"].is_null());
    }
    if (recipe.count("OPENAI_EXTRA_HEADERS") != 0) {
      const json extra = json::parse(recipe.at("OPENAI_EXTRA_HEADERS"));
      for (auto it = extra.begin(); it != extra.end(); ++it)
        EXPECT_EQ(j["headers"][lower(it.key())], it.value()) << it.key();
    }
    if (recipe.count("OPENAI_SEND_USER") != 0) {
      EXPECT_TRUE(j["body"]["user"].is_string()) << j["body"].dump().substr(0, 300);
      EXPECT_EQ(j["body"]["user"].get<std::string>().find("r"), std::string::npos);
    }
  }
  if (how.learns) {
    EXPECT_GE(num("SELECT count(*) FROM events WHERE type = 'context.limit_learned'"), 1)
        << GetParam() << ": the provider's overflow answer was not learned";
  } else {
    EXPECT_GE(num("SELECT count(*) FROM events WHERE type = 'context.warning' AND "
                  "CAST(payload AS TEXT) LIKE '%server_truncated%'"),
              1);
  }
  if (azure_classic) {
    EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(filtered)), "failed");
    EXPECT_EQ(payloads("turn.failed", filtered).at(0)["reason"], "content_filter");
  }
  if (deepseek) {
    const auto r = payloads("llm.response", cached);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_TRUE(r[0]["usage"]["cached_tokens"].is_number_integer()) << r[0].dump();
  }
}

INSTANTIATE_TEST_SUITE_P(Recipes, ProviderRecipeE2eTest,
                         ::testing::Values("OpenAI", "Azure OpenAI (classic)", "Azure OpenAI (v1)",
                                           "Anthropic (OpenAI-compatible endpoint)",
                                           "Google Gemini (OpenAI-compatible endpoint)", "DeepSeek",
                                           "OpenRouter", "LiteLLM proxy", "vLLM",
                                           "llama.cpp server", "Ollama"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string name;
                           for (const char c : p.param)
                             if (std::isalnum(static_cast<unsigned char>(c)) != 0) name += c;
                           return name;
                         });

}  // namespace
}  // namespace autonous::testing
