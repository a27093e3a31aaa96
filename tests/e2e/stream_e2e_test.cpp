// Partial replies (#32, STREAM_REPLIES=on) through the real binary on both backends: the text
// so far in tasks.partial_reply while a reply streams, cleared once it is stored; the same
// replies as without streaming through hostile streams (a character split across reads, empty
// deltas, an error event, a broken connection, a stream that never ends within the timeout, a
// provider that ignores `stream`); time to first token in llm.response; a streamed tool call.
#include <chrono>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/e2e/tools_e2e_fixture.h"

namespace autonous::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class StreamE2eTest : public ToolsE2eTest {};

TEST_F(StreamE2eTest, TheTextSoFarIsWrittenWhileItStreamsThenTheReplyAsAlways) {
  StubServer stub(dir_.path().string());
  autonous(dir_, {"migrate"}, db_env());
  const int64_t slow = enqueue("a", "tell me a long story about the sea [[stub:slowstream:150]]");
  Process worker({autonous_bin(), "worker", "--drain"},
                 env(stub, {{"STREAM_REPLIES", "on"}, {"STREAM_FLUSH_MS", "100"}}),
                 dir_.path().string());
  std::set<std::string> partials;
  const auto deadline = std::chrono::steady_clock::now() + seconds(30);
  while (std::chrono::steady_clock::now() < deadline &&
         str("SELECT status FROM tasks WHERE id = " + std::to_string(slow)) != "done") {
    const std::string p = str("SELECT partial_reply FROM tasks WHERE id = " + std::to_string(slow));
    if (!p.empty()) partials.insert(p);
    std::this_thread::sleep_for(milliseconds(40));
  }
  const auto r = worker.wait(seconds(20));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 0) << r->err.substr(0, 2000);
  const std::string reply = str("SELECT reply FROM tasks WHERE id = " + std::to_string(slow));
  ASSERT_GE(partials.size(), 2u) << "the partial reply must grow while the reply streams";
  for (const std::string& p : partials) {
    EXPECT_EQ(reply.rfind(p, 0), 0u) << "'" << p << "' is no start of '" << reply << "'";
  }
  EXPECT_LT(partials.begin()->size(), reply.size());  // seen before the reply was whole
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE partial_reply IS NOT NULL"), 0);
  const auto responses = payloads("llm.response", slow);
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_TRUE(responses[0].contains("ttft_ms"));
  EXPECT_LT(responses[0]["ttft_ms"].get<int64_t>(), responses[0]["latency_ms"].get<int64_t>());
  EXPECT_GT(responses[0]["usage"]["prompt_tokens"].get<int64_t>(), 0);  // include_usage
  const nlohmann::json sent = nlohmann::json::parse(stub.log_lines().back())["body"];
  EXPECT_EQ(sent["stream"], true);
}

TEST_F(StreamE2eTest, HostileStreamsEndInTheSameRepliesAsPlainOnes) {
  StubServer stub(dir_.path().string());
  autonous(dir_, {"migrate"}, db_env());
  const std::vector<std::string> texts = {"naïve café 😀 [[stub:sse-utf8]]",
                                          "empty deltas [[stub:sse-empty]]",
                                          "an error event [[stub:sse-error*1]]",
                                          "a broken stream [[stub:sse-break*1]]",
                                          "a stream that never ends [[stub:sse-hang*1]]",
                                          "no stream at all [[stub:nostream]]"};
  std::vector<int64_t> ids;
  for (size_t i = 0; i < texts.size(); ++i)
    ids.push_back(enqueue("c" + std::to_string(i), texts[i]));
  drain(env(stub,
            {{"STREAM_REPLIES", "on"}, {"LLM_TIMEOUT_SECONDS", "1"}, {"WORKER_CONCURRENCY", "6"}}));
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string id = std::to_string(ids[i]);
    EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + id), "done") << texts[i];
    // What the stub answers without a stream: the reply is whole and the same.
    EXPECT_EQ(str("SELECT reply FROM tasks WHERE id = " + id),
              "reply to: " + texts[i] + " (saw 2 messages)");
  }
  // The error event, the broken stream and the endless one were retried, each once.
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE attempts = 2"), 3);
  EXPECT_EQ(field("llm.retry", ids[2], "reason"), "http_502");
  EXPECT_EQ(field("llm.retry", ids[3], "reason"), "network");
  EXPECT_EQ(field("llm.retry", ids[4], "reason"), "timeout");
  EXPECT_EQ(field("llm.response", ids[5], "ttft_ms"), "");  // not streamed: no first token
  EXPECT_NE(field("llm.response", ids[0], "ttft_ms"), "");
}

TEST_F(StreamE2eTest, AStreamsEventsAreNotCountedAgainstTheResponseCapOnlyItsText) {
  // A word an event: the raw stream is many times the reply, which fits MAX_RESPONSE_BYTES.
  StubServer stub(dir_.path().string());
  std::string words;
  for (int i = 0; i < 300; ++i) words += "w" + std::to_string(i) + " ";
  const int64_t t = enqueue("a", words + "[[stub:slowstream:1]]");
  drain(env(stub, {{"STREAM_REPLIES", "on"}, {"MAX_RESPONSE_BYTES", "8192"}}));
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(t)), "done");
  EXPECT_EQ(num("SELECT attempts FROM tasks WHERE id = " + std::to_string(t)), 1);
}

TEST_F(StreamE2eTest, AStreamedToolCallRunsAsAPlainOne) {
  StubServer stub(dir_.path().string());
  const int64_t t = enqueue("c", R"(Where is order 42? [[stub:tool:echo:{"q":"order 42"}]])");
  drain(tools_env(stub, {{"STREAM_REPLIES", "on"}}));
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(t)), "done");
  EXPECT_EQ(num("SELECT count(*) FROM history WHERE task_id = " + std::to_string(t)), 4);
  EXPECT_NE(str("SELECT reply FROM tasks WHERE id = " + std::to_string(t)).find("order 42"),
            std::string::npos);
  EXPECT_EQ(payloads("tool.call", t).size(), 1u);
}

}  // namespace
}  // namespace autonous::testing
