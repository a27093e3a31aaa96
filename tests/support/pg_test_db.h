#pragma once
// PgTestDb: a fresh, migrated PostgreSQL database for one test, on the throwaway server that
// scripts/with-postgres starts (AUTONOUS_TEST_PG_URL); dropped when the test ends.
// Without that variable, PG_TEST_OR_SKIP() skips the test, unless AUTONOUS_REQUIRE_PG=1
// (scripts/test sets it), where a missing server fails the test instead.

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "internal/backend/postgres/connection.h"

namespace autonous::testing {

class PgTestDb {
 public:
  // REQUIRES: available().
  PgTestDb();
  ~PgTestDb();
  PgTestDb(const PgTestDb&) = delete;
  PgTestDb& operator=(const PgTestDb&) = delete;

  static bool available();
  static bool required();

  const std::string& url() const { return url_; }
  db::pg::Connection& db() { return *db_; }
  std::unique_ptr<db::pg::Connection> open_connection() const;
  // The first column of the first row of `sql`, as an integer (0 for NULL).
  int64_t scalar(const std::string& sql);

 private:
  std::string name_;
  std::string url_;
  std::unique_ptr<db::pg::Connection> db_;
};

// Names a typed test's backend parameter (a type with `static constexpr bool kPostgres`):
// TYPED_TEST_SUITE(Suite, Backends, testing::BackendNames) runs Suite/Sqlite and Suite/Postgres.
struct BackendNames {
  template <typename T>
  static std::string GetName(int) {
    return T::kPostgres ? "Postgres" : "Sqlite";
  }
};

}  // namespace autonous::testing

#define PG_TEST_OR_SKIP()                                                                   \
  do {                                                                                      \
    if (!::autonous::testing::PgTestDb::available()) {                                      \
      if (::autonous::testing::PgTestDb::required())                                        \
        FAIL() << "AUTONOUS_REQUIRE_PG=1 but AUTONOUS_TEST_PG_URL is not set";              \
      GTEST_SKIP() << "no PostgreSQL: run under scripts/with-postgres (scripts/test does)"; \
    }                                                                                       \
  } while (0)
