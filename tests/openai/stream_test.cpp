// Streamed replies (#32): the assembler against what providers send (OpenAI's chunks, usage
// last; empty deltas and keep-alives; CRLF; a character or line split across reads; tool calls
// in fragments; an error inside the 200; a stream cut short; a provider that ignores `stream`),
// and the client reading them as the non-streamed reply.
#include "internal/openai/stream.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/openai/errors.h"
#include "tests/openai/client_fixture.h"

namespace autonous::openai {
namespace {

using nlohmann::json;

std::string chunk(const json& delta, const json& finish = nullptr) {
  return "data: " +
         json{{"id", "c1"},
              {"object", "chat.completion.chunk"},
              {"model", "gpt-x"},
              {"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}}
             .dump() +
         "\n\n";
}

const std::string kUsage =
    "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":4,"
    "\"total_tokens\":13}}\n\n";

std::string whole_stream() {
  return chunk({{"role", "assistant"}, {"content", ""}}) + chunk({{"content", "Héllo"}}) +
         ": keep-alive\n\n" + chunk(json::object()) + chunk({{"content", ", wörld"}}) +
         chunk(json::object(), "stop") + kUsage + "data: [DONE]\n\n";
}

json assembled(const StreamAssembler& s) { return json::parse(s.completion_json()); }

TEST(StreamAssemblerTest, JoinsDeltasWhateverTheReadsAndKeepsUsageAndModel) {
  const std::string body = whole_stream();
  for (size_t piece : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, body.size()}) {
    StreamAssembler s;
    for (size_t i = 0; i < body.size(); i += piece) s.feed(std::string_view(body).substr(i, piece));
    ASSERT_TRUE(s.streaming());
    EXPECT_TRUE(s.ended());
    EXPECT_EQ(s.text(), "Héllo, wörld") << "pieces of " << piece;
    const json j = assembled(s);
    EXPECT_EQ(j["choices"][0]["message"]["content"], "Héllo, wörld");
    EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(j["model"], "gpt-x");
    EXPECT_EQ(j["usage"]["prompt_tokens"], 9);
  }
}

TEST(StreamAssemblerTest, ReadsCrLfLinesAndSaysWhenTheTextGrew) {
  StreamAssembler s;
  std::string body = chunk({{"content", "a"}});
  for (size_t p = body.find('\n'); p != std::string::npos; p = body.find('\n', p + 2))
    body.replace(p, 1, "\r\n");
  EXPECT_TRUE(s.feed(body));
  EXPECT_FALSE(s.feed(": ping\r\n\r\n"));
  EXPECT_FALSE(s.feed(chunk(json::object())));
  EXPECT_EQ(s.text(), "a");
  EXPECT_FALSE(s.ended());
}

TEST(StreamAssemblerTest, JoinsToolCallFragmentsByIndex) {
  StreamAssembler s;
  s.feed(chunk({{"tool_calls",
                 {{{"index", 0},
                   {"id", "call_1"},
                   {"type", "function"},
                   {"function", {{"name", "lookup"}, {"arguments", "{\"q\":"}}}}}}}));
  s.feed(chunk({{"tool_calls",
                 {{{"index", 1},
                   {"id", "call_2"},
                   {"function", {{"name", "time"}, {"arguments", "{}"}}}}}}}));
  s.feed(chunk({{"tool_calls", {{{"index", 0}, {"function", {{"arguments", "\"x\"}"}}}}}}}));
  s.feed(chunk(json::object(), "tool_calls") + "data: [DONE]\n\n");
  const json calls = assembled(s)["choices"][0]["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0]["id"], "call_1");
  EXPECT_EQ(calls[0]["function"]["name"], "lookup");
  EXPECT_EQ(calls[0]["function"]["arguments"], "{\"q\":\"x\"}");
  EXPECT_EQ(calls[1]["function"]["name"], "time");
}

TEST(StreamAssemblerTest, RepeatedIdsAndNamesAndFragmentsWithoutAnIndexJoinOnce) {
  StreamAssembler s;
  // Some servers repeat the id and the name in every fragment, and some send no index.
  for (const char* args : {"{\"q\":", "\"x\"}"})
    s.feed(chunk({{"tool_calls",
                   {{{"id", "call_1"},
                     {"type", "function"},
                     {"function", {{"name", "lookup"}, {"arguments", args}}}}}}}));
  s.feed(chunk({{"tool_calls", {{{"id", "call_2"}, {"function", {{"name", "time"}}}}}}}));
  s.feed(chunk(json::object(), "tool_calls") + "data: [DONE]\n\n");
  const json calls = assembled(s)["choices"][0]["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0]["id"], "call_1");
  EXPECT_EQ(calls[0]["function"]["name"], "lookup");
  EXPECT_EQ(calls[0]["function"]["arguments"], "{\"q\":\"x\"}");
  EXPECT_EQ(calls[1]["id"], "call_2");
}

TEST(StreamAssemblerTest, AnEventsDataOverSeveralLinesIsJoinedAndAnUnreadableOneIsALoss) {
  StreamAssembler s;
  s.feed("data: {\"choices\":[{\"index\":0,\n");
  s.feed("data: \"delta\":{\"content\":\"two lines\"}}]}\n\n");
  EXPECT_EQ(s.text(), "two lines");
  EXPECT_FALSE(s.lost());
  s.feed("data: {\"choices\": [trunc\n\n");
  EXPECT_TRUE(s.lost());
}

TEST(StreamAssemblerTest, AnEventThatNeverEndsIsCappedNotReadAgainAndAgain) {
  StreamAssembler s;
  s.feed("data: {\"choices\": [\n");
  const std::string line = "data: " + std::string(100, 'x') + "\n";
  for (int i = 0; i < 20000; ++i) s.feed(line);  // 2 MB of one event's lines, read once each
  EXPECT_TRUE(s.lost());
}

TEST(StreamAssemblerTest, AnErrorInsideTheStreamBecomesTheResult) {
  StreamAssembler s;
  s.feed(chunk({{"content", "par"}}));
  s.feed("data: {\"error\":{\"message\":\"upstream failed\",\"code\":502}}\n\n");
  EXPECT_TRUE(s.ended());
  EXPECT_EQ(assembled(s)["error"]["code"], 502);
  StreamAssembler named;
  named.feed("event: error\ndata: {\"type\":\"overloaded_error\",\"message\":\"busy\"}\n\n");
  EXPECT_EQ(assembled(named)["error"]["type"], "overloaded_error");
}

TEST(StreamAssemblerTest, AJsonBodyIsNoStreamAndAHostileIndexIsNoSize) {
  StreamAssembler s;
  EXPECT_FALSE(s.feed("  {\"choices\":[]}"));
  EXPECT_FALSE(s.streaming());
  StreamAssembler h;
  h.feed(chunk({{"tool_calls", {{{"index", 4000000000u}, {"function", {{"name", "x"}}}}}}}));
  h.feed("data: not json\n\n");
  EXPECT_TRUE(assembled(h)["choices"][0]["message"].value("tool_calls", json::array()).empty());
}

using testing_support::ClientFixture;
using StreamClientTest = ClientFixture;

TEST_F(StreamClientTest, AStreamedReplyIsReadAsTheWholeOneWithItsTextAsItGrew) {
  transport_.push({200, {{"content-type", "text/event-stream"}}, whole_stream()});
  CallOptions call;
  call.stream = true;
  std::vector<std::string> seen;
  call.on_text = [&](const std::string& t) { seen.push_back(t); };
  const ChatResult r = client().chat(messages_, {}, call);
  EXPECT_EQ(r.content, "Héllo, wörld");
  ASSERT_TRUE(r.usage);
  EXPECT_EQ(r.usage->prompt_tokens, 9);
  ASSERT_TRUE(r.ttft);
  ASSERT_GE(seen.size(), 2u);
  EXPECT_EQ(seen.back(), "Héllo, wörld");
  for (const std::string& t : seen) EXPECT_EQ(r.content.rfind(t, 0), 0u) << t;  // prefixes
  const json sent = json::parse(transport_.requests.at(0).body);
  EXPECT_EQ(sent["stream"], true);
  EXPECT_EQ(sent["stream_options"]["include_usage"], true);
}

TEST_F(StreamClientTest, AStreamCutShortIsANetworkErrorToRetry) {
  transport_.push({200, {}, chunk({{"content", "half a rep"}})});
  CallOptions call;
  call.stream = true;
  try {
    client().chat(messages_, {}, call);
    ADD_FAILURE() << "no error";
  } catch (const TransportError& e) {
    EXPECT_TRUE(e.retryable());
  }
}

TEST_F(StreamClientTest, AChunkThatDoesNotReadIsABrokenStreamAndTheTextIsToldAtMostSoOften) {
  transport_.push({200,
                   {},
                   chunk({{"content", "a"}}) + "data: {not json}\n\n" +
                       chunk(json::object(), "stop") + "data: [DONE]\n\n"});
  CallOptions call;
  call.stream = true;
  EXPECT_THROW(client().chat(messages_, {}, call), TransportError);
  transport_.push({200, {}, whole_stream()});
  int told = 0;
  call.on_text = [&](const std::string&) { ++told; };
  call.on_text_every = std::chrono::hours(1);
  client().chat(messages_, {}, call);
  EXPECT_EQ(told, 1);  // the first text at once, then not again within the hour
  EXPECT_EQ(transport_.requests.back().headers.at(1).second, "text/event-stream");
}

TEST_F(StreamClientTest, AnErrorInTheStreamIsTheProvidersErrorAndAPlainBodyStillWorks) {
  transport_.push({200,
                   {},
                   chunk({{"content", "x"}}) +
                       "data: {\"error\":{\"message\":\"mid-stream\",\"code\":503}}\n\n"});
  transport_.push({200, {}, testing_support::kOk});  // a provider that ignores "stream"
  CallOptions call;
  call.stream = true;
  try {
    client().chat(messages_, {}, call);
    ADD_FAILURE() << "no error";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 503);
    EXPECT_TRUE(e.retryable());
  }
  EXPECT_EQ(client().chat(messages_, {}, call).content, "Hello!");
}

TEST_F(StreamClientTest, NotAskedNoStreamFields) {
  transport_.push({200, {}, testing_support::kOk});
  client().chat(messages_);
  EXPECT_FALSE(json::parse(transport_.requests.at(0).body).contains("stream"));
  EXPECT_FALSE(transport_.requests.at(0).on_body);
}

}  // namespace
}  // namespace autonous::openai
