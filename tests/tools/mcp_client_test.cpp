// McpClient against a scripted channel (a hostile or broken server, #29 review): answers of the
// wrong shape are error results the model reads, never exceptions that fail the task; calls to
// one server wait for each other within their own timeout, and one given up is never sent.

#include "internal/tools/mcp_client.h"

#include <atomic>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace autonous::tools {
namespace {

using nlohmann::json;

// Answers initialize and tools/list like a server with one tool, then each tools/call with the
// next scripted result (after `delay`), counting the calls it was sent.
class ScriptedChannel final : public McpChannel {
 public:
  explicit ScriptedChannel(std::vector<json> results, std::chrono::milliseconds delay = {})
      : results_(std::move(results)), delay_(delay) {}
  json exchange(const json& request, std::chrono::milliseconds /*timeout*/,
                const std::function<bool()>& /*keep_going*/, const OnMessage& on_message) override {
    const std::string method = request.value("method", "");
    json answer = {{"jsonrpc", "2.0"}, {"id", request["id"]}};
    if (method == "initialize") {
      answer["result"] = {{"capabilities", {{"tools", json::object()}}}};
    } else if (method == "tools/list") {
      answer["result"] = {{"tools", {{{"name", "t"}}}}};
    } else {
      ++*sent;
      std::this_thread::sleep_for(delay_);
      on_message({{"method", 5}});  // a notification of the wrong shape
      const size_t k = next_++;
      return k < results_.size() ? results_[k] : json(nullptr);
    }
    return answer;
  }
  void send(const json& /*message*/) override {}
  std::shared_ptr<std::atomic<int>> sent = std::make_shared<std::atomic<int>>(0);

 private:
  std::vector<json> results_;
  std::chrono::milliseconds delay_;
  size_t next_ = 0;
};

json answer(json result) { return {{"jsonrpc", "2.0"}, {"id", 3}, {"result", std::move(result)}}; }

TEST(McpClientTest, AnswersOfTheWrongShapeAreErrorResultsNotExceptions) {
  auto channel = std::make_unique<ScriptedChannel>(std::vector<json>{
      answer({{"content", {{{"type", 5}, {"text", "x"}}}}}),
      answer({{"content", {{{"type", "text"}, {"text", "fine"}}}}, {"isError", "yes"}}),
      {{"jsonrpc", "2.0"}, {"id", 5}, {"error", {{"message", 42}}}},
      answer({{"content", "not an array"}}),
      json::array({1, 2})});
  McpClient client("hostile", std::move(channel));
  client.start();
  for (int i = 0; i < 5; ++i) {
    ToolOutcome out;
    EXPECT_NO_THROW(out = client.call("t", "{}", std::chrono::seconds(1), {})) << i;
    if (i == 1) {
      EXPECT_TRUE(out.ok);  // an isError that is not a boolean is no error
      EXPECT_EQ(out.content, "fine");
    } else if (!out.ok) {
      EXPECT_EQ(out.content.rfind("error: ", 0), 0u) << i << " " << out.content;
    }
  }
}

TEST(McpClientTest, CallsToOneServerWaitWithinTheirTimeoutAndOneGivenUpIsNeverSent) {
  auto channel = std::make_unique<ScriptedChannel>(
      std::vector<json>(3, answer({{"content", {{{"type", "text"}, {"text", "ok"}}}}})),
      std::chrono::milliseconds(2500));
  const auto sent = channel->sent;
  McpClient client("slow", std::move(channel));
  client.start();
  ToolOutcome first;
  std::thread busy([&] { first = client.call("t", "{}", std::chrono::seconds(5), {}); });
  while (sent->load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // Waits for the first, past its own 1.2 s: an error result, never sent.
  const ToolOutcome late = client.call("t", "{}", std::chrono::milliseconds(1200), {});
  EXPECT_FALSE(late.ok);
  EXPECT_NE(late.content.find("timed out waiting"), std::string::npos) << late.content;
  // Given up while it waits (a lost lease): aborted, never sent.
  std::atomic<bool> go{true};
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    go = false;
  });
  const ToolOutcome given_up =
      client.call("t", "{}", std::chrono::seconds(5), [&go] { return go.load(); });
  stopper.join();
  busy.join();
  EXPECT_TRUE(given_up.aborted);
  EXPECT_TRUE(first.ok);
  EXPECT_EQ(sent->load(), 1);
}

}  // namespace
}  // namespace autonous::tools
