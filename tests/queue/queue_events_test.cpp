// The events both queue backends record, built once (queue_events.h).
#include "internal/queue/queue_events.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/events/event_types.h"

namespace autonous::queue {
namespace {

TEST(QueueEventsTest, AgentStartedCarriesTheClaimsFigures) {
  Task t;
  t.id = 42;
  t.chat_id = "chat-1";
  t.attempts = 3;
  t.reclaimed = true;
  t.priority = -7;
  const events::Event e = agent_started(t, "host:1234:slot-2");
  EXPECT_EQ(e.type, events::kAgentStarted);
  EXPECT_EQ(e.task_id, 42);
  EXPECT_EQ(e.chat_id, "chat-1");
  const auto p = nlohmann::json::parse(e.payload);
  EXPECT_EQ(p.at("attempt"), 3);
  EXPECT_EQ(p.at("worker_id"), "host:1234:slot-2");
  EXPECT_EQ(p.at("reclaimed"), true);
  EXPECT_EQ(p.at("priority"), -7);
  EXPECT_EQ(p.size(), 4u);
}

TEST(QueueEventsTest, AWorkerIdWithInvalidUtf8StillMakesValidJson) {
  Task t;
  t.id = 1;
  t.chat_id = "c";
  const events::Event e = agent_started(t, std::string("w\xff\xfe", 3));
  const auto p = nlohmann::json::parse(e.payload);  // throws on invalid UTF-8
  EXPECT_EQ(p.at("worker_id"), "w\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(QueueEventsTest, TaskRequeuedNamesTheTaskAndChat) {
  const events::Event e = task_requeued(9, "chat-9");
  EXPECT_EQ(e.type, events::kTaskRequeued);
  EXPECT_EQ(e.task_id, 9);
  EXPECT_EQ(e.chat_id, "chat-9");
  EXPECT_EQ(e.payload, "{}");
}

}  // namespace
}  // namespace autonous::queue
