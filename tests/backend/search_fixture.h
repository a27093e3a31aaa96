#pragma once
// The search suites' fixture (search_conformance_test.cpp, turn_index_conformance_test.cpp): a
// backend with its engine storage and that storage's searcher, rows added by plain SQL on the
// test's own connection, and the overall term counts as the searches read them.
#include <cstdint>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "internal/engine/engine_storage.h"
#include "internal/recall/recall.h"
#include "tests/backend/backend_fixture.h"

namespace autonous::recall {

// A backend with its engine storage and that storage's searcher, and rows added by plain SQL on
// the test's own connection.
template <typename B>
class SearchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if constexpr (B::kPostgres) PG_TEST_OR_SKIP();
    b_ = std::make_unique<B>();
    storage_ = b_->s->engine_storage();
  }
  Searcher& searcher() { return storage_->searcher(); }
  int64_t add(const std::string& chat, const std::string& text, const std::string& role = "user") {
    return b_->add_history(chat, role, text);
  }
  // Runs `f` in one transaction of the test's own connection (bulk inserts).
  template <typename F>
  void in_transaction(F&& f) {
    b_->exec("BEGIN");
    f();
    b_->exec("COMMIT");
  }
  // The overall count of `term` (every chat's rows of the source), as the searches read it: on
  // PostgreSQL the folded counts plus those still buffered in search_term_deltas.
  int64_t overall(const std::string& term) {
    const std::string folded =
        "coalesce((SELECT rows FROM search_term_rows WHERE source = 'history' AND chat = '' AND "
        "term = '" +
        term + "'), 0)";
    if constexpr (!B::kPostgres) return this->b_->scalar("SELECT " + folded);
    return this->b_->scalar("SELECT " + folded +
                            " + coalesce((SELECT sum(rows) FROM search_term_deltas WHERE source = "
                            "'history' AND term = '" +
                            term + "'), 0)");
  }
  std::unique_ptr<B> b_;
  std::unique_ptr<engine::EngineStorage> storage_;
};

}  // namespace autonous::recall
