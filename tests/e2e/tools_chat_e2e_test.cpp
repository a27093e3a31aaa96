// Per-chat tool lists through the real binary (#29): `chat set --tools`, what each chat's
// requests offer, what it may call, and the room its budget leaves for the declarations.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/e2e/tools_e2e_fixture.h"

namespace autonous::testing {
namespace {

// The tools each chat request offered, by name, with the request's last message's text.
std::vector<std::pair<std::string, std::vector<std::string>>> offered_tools(
    const StubServer& stub) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const std::string& line : stub.log_lines()) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.value("path", "").find("/chat/completions") == std::string::npos) continue;
    const nlohmann::json& body = j["body"];
    if (!body.is_object()) continue;
    std::vector<std::string> names;
    for (const auto& t : body.value("tools", nlohmann::json::array()))
      names.push_back(t["function"]["name"]);
    const auto& last = body["messages"].back();
    out.emplace_back(last["content"].is_string() ? last["content"].get<std::string>() : "",
                     std::move(names));
  }
  return out;
}

// The tools offered with the request whose last message has `text` (the first such).
std::vector<std::string> offered_with(const StubServer& stub, const std::string& text) {
  for (const auto& [last, names] : offered_tools(stub))
    if (last.find(text) != std::string::npos) return names;
  ADD_FAILURE() << "no request ends with " << text;
  return {};
}

TEST_F(ToolsE2eTest, AChatsOwnToolListIsAllItIsOfferedAndAllItMayCall) {
  StubServer stub(dir_.path().string());
  const Env e = tools_env(stub);
  // Bad lists are refused and write nothing.
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"chat", "set", "only-echo", "--tools", "echo,,fail"},
        {"chat", "set", "only-echo", "--tools", "has space"},
        {"chat", "set", "only-echo", "--tools", "echo,echo"},
        {"chat", "set", "only-echo", "--tools", "nope"}}) {
    const ProcessResult r = autonous(dir_, bad, e);
    EXPECT_EQ(r.exit_code, 2) << bad.back() << r.err;
    EXPECT_NE(r.err.find("--tools"), std::string::npos) << r.err;
  }
  EXPECT_EQ(num("SELECT count(*) FROM chat_settings"), 0);
  ASSERT_EQ(autonous(dir_, {"chat", "set", "only-echo", "--tools", "echo"}, e).exit_code, 0);
  ASSERT_EQ(autonous(dir_, {"chat", "set", "no-tools", "--tools", "none"}, e).exit_code, 0);
  const ProcessResult shown = autonous(dir_, {"chat", "show", "only-echo"}, e);
  EXPECT_EQ(nlohmann::json::parse(shown.out)["effective"]["tools"]["value"],
            nlohmann::json::array({"echo"}))
      << shown.out;

  // A chat limited to echo asks for fail anyway (a model that saw it elsewhere): not run.
  const int64_t limited = enqueue("only-echo", R"(go [[stub:tool:fail:{}]])");
  // A chat with none: no tools in the request, and its budget keeps no room for them.
  const int64_t bare = enqueue("no-tools", "hello bare");
  const int64_t full = enqueue("every-tool", "hello full");
  drain(e);
  const auto calls = payloads("tool.call", limited);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["status"], "error");
  EXPECT_EQ(calls[0]["error"], "no tool named fail");
  for (const std::string& line : stub.log_lines())  // no tool endpoint was called
    EXPECT_NE(nlohmann::json::parse(line).value("path", "").rfind("/tool/", 0), 0u) << line;
  for (const auto& [last, names] : offered_tools(stub)) {
    if (last.find("go") == 0 || last.find("no tool named") != std::string::npos) {
      EXPECT_EQ(names, std::vector<std::string>{"echo"}) << last;
    }
  }
  EXPECT_EQ(offered_with(stub, "go [[stub"), std::vector<std::string>{"echo"});
  EXPECT_TRUE(offered_with(stub, "hello bare").empty());
  EXPECT_EQ(offered_with(stub, "hello full").size(), 7u);
  const auto bare_ctx = payloads("context.compressed", bare);
  const auto full_ctx = payloads("context.compressed", full);
  ASSERT_EQ(bare_ctx.size(), 1u);
  ASSERT_EQ(full_ctx.size(), 1u);
  EXPECT_EQ(bare_ctx[0]["tools_tokens"], 0);
  EXPECT_GT(full_ctx[0]["tools_tokens"].get<int64_t>(), 0);
  EXPECT_EQ(
      bare_ctx[0]["budget_tokens"].get<int64_t>(),
      full_ctx[0]["budget_tokens"].get<int64_t>() + full_ctx[0]["tools_tokens"].get<int64_t>());
  // A chat that called tools and then has none: its next request carries the earlier unit as
  // text (a server that refuses tool blocks without tool definitions takes it).
  ASSERT_EQ(autonous(dir_, {"chat", "set", "only-echo", "--tools", "none"}, e).exit_code, 0);
  enqueue("only-echo", "and now without tools");
  drain(e);
  const nlohmann::json last = nlohmann::json::parse(stub.log_lines().back());
  ASSERT_EQ(last["body"]["messages"].back()["content"], "and now without tools");
  EXPECT_FALSE(last["body"].contains("tools"));
  bool flattened = false;
  for (const auto& m : last["body"]["messages"]) {
    EXPECT_NE(m["role"], "tool") << m.dump();
    EXPECT_FALSE(m.contains("tool_calls")) << m.dump();
    flattened = flattened || m["content"] == "[called tools: fail]";
  }
  EXPECT_TRUE(flattened) << last["body"]["messages"].dump();
  // `--tools all` drops the chat's list: every tool again.
  ASSERT_EQ(autonous(dir_, {"chat", "set", "only-echo", "--tools", "all"}, e).exit_code, 0);
  EXPECT_EQ(str("SELECT settings FROM chat_settings WHERE chat_id = 'only-echo'"), "{}");
}

}  // namespace
}  // namespace autonous::testing
