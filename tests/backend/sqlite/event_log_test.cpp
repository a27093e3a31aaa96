#include "internal/events/event_log.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/backend/sqlite/events.h"
#include "tests/support/test_db.h"

namespace autonous::events {
namespace {

TEST(EventLogTest, AppendsAndQueriesWithFilters) {
  testing::TestDb t;
  const int64_t parent =
      append(t.db(), Event{"agent.started", 1, "c1", std::nullopt, R"({"attempt":1})"});
  append(t.db(), Event{"turn.started", 1, "c1", parent, "{}"});
  append(t.db(), Event{"turn.started", 2, "c2", std::nullopt, "{}"});

  EXPECT_EQ(query(t.db(), {}).size(), 3u);
  const auto by_task = query(t.db(), EventFilter{1, std::nullopt, 0, 100});
  ASSERT_EQ(by_task.size(), 2u);
  EXPECT_EQ(by_task[1].event.parent_id, parent);
  const auto by_type = query(t.db(), EventFilter{std::nullopt, "turn.started", 0, 100});
  ASSERT_EQ(by_type.size(), 2u);
  EXPECT_EQ(by_type[1].event.chat_id, "c2");
  const auto both = query(t.db(), EventFilter{2, "turn.started", 0, 100});
  ASSERT_EQ(both.size(), 1u);
  EXPECT_EQ(query(t.db(), EventFilter{std::nullopt, std::nullopt, both[0].id, 100}).size(), 0u);
}

TEST(EventLogTest, RefusesPayloadsThatAreNotJsonObjects) {
  testing::TestDb t;
  EXPECT_THROW(append(t.db(), Event{"x", 1, "c", std::nullopt, "[1,2]"}), std::invalid_argument);
  EXPECT_THROW(append(t.db(), Event{"x", 1, "c", std::nullopt, "{oops"}), std::invalid_argument);
  EXPECT_TRUE(query(t.db(), {}).empty());
}

TEST(EventLogTest, JsonExtractWorksOnStoredPayloads) {
  testing::TestDb t;
  append(t.db(), Event{"llm.response", 7, "c", std::nullopt,
                       R"({"usage":{"prompt_tokens":123},"latency_ms":45})"});
  EXPECT_EQ(t.db()
                .execAndGet("SELECT json_extract(payload, '$.usage.prompt_tokens') FROM events")
                .getInt(),
            123);
}

TEST(EventLogTest, ExplicitTimeIsStoredAsIsoUtc) {
  testing::TestDb t;
  Event e{"turn.started", 1, "c", std::nullopt, "{}"};
  e.at_unix_ms = 1767225600123;  // 2026-01-01T00:00:00.123Z
  append(t.db(), e);
  EXPECT_EQ(query(t.db(), {})[0].created_at, "2026-01-01T00:00:00.123Z");
}

TEST(EventLogTest, JsonLineIsValidJsonWithPayloadAsObject) {
  testing::TestDb t;
  append(t.db(), Event{"turn.failed", 3, "chat \"x\"", std::nullopt, R"({"error":"bad \u00e9"})"});
  const auto line = to_json_line(query(t.db(), {})[0]);
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["type"], "turn.failed");
  EXPECT_EQ(j["task_id"], 3);
  EXPECT_EQ(j["chat_id"], "chat \"x\"");
  EXPECT_TRUE(j["parent_id"].is_null());
  EXPECT_EQ(j["payload"]["error"], "bad \xC3\xA9");
}

}  // namespace
}  // namespace autonous::events
