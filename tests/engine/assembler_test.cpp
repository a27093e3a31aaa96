#include "internal/engine/assembler.h"

#include <gtest/gtest.h>

namespace autonous::engine {
namespace {

using common::Message;
using common::Role;

TEST(StandardAssemblerTest, OrdersSystemThenHistoryThenUser) {
  const StandardAssembler a;
  const std::vector<Message> history = {{Role::kUser, "q1", 1}, {Role::kAssistant, "a1", 2}};
  const auto out = a.assemble({Role::kSystem, "sys", 0}, history, {Role::kUser, "q2", 0});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].role, Role::kSystem);
  EXPECT_EQ(out[1].content, "q1");
  EXPECT_EQ(out[2].content, "a1");
  EXPECT_EQ(out[3].role, Role::kUser);
  EXPECT_EQ(out[3].content, "q2");
}

TEST(StandardAssemblerTest, LeavesOutEmptySystemAndUser) {
  const StandardAssembler a;
  const auto out =
      a.assemble({Role::kSystem, "", 0}, {{Role::kUser, "q1", 1}}, {Role::kUser, "", 0});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].content, "q1");
}

}  // namespace
}  // namespace autonous::engine
