#include "tests/support/pg_test_db.h"

#include <atomic>
#include <cstdlib>

#include <unistd.h>

#include "internal/backend/postgres/migrator.h"

namespace autonous::testing {
namespace {

std::string server_url() {
  const char* u = std::getenv("AUTONOUS_TEST_PG_URL");
  return u ? u : "";
}

// The server URL with its database name replaced by `name`.
std::string with_database(const std::string& url, const std::string& name) {
  const auto slash = url.find('/', url.find("://") + 3);
  const auto query = url.find('?');
  const std::string base = slash == std::string::npos ? url : url.substr(0, slash);
  return base + "/" + name + (query == std::string::npos ? "" : url.substr(query));
}

}  // namespace

bool PgTestDb::available() { return !server_url().empty(); }
bool PgTestDb::required() {
  const char* r = std::getenv("AUTONOUS_REQUIRE_PG");
  return r != nullptr && std::string(r) == "1";
}

PgTestDb::PgTestDb() {
  static std::atomic<int> n{0};
  name_ = "autonous_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++);
  auto admin = db::pg::Connection::open(server_url());
  admin->exec("CREATE DATABASE " + name_ + " TEMPLATE template0 ENCODING 'UTF8'");
  url_ = with_database(server_url(), name_);
  db_ = open_connection();
  db::pg_migrate(*db_);
}

PgTestDb::~PgTestDb() {
  db_.reset();
  try {
    auto admin = db::pg::Connection::open(server_url());
    admin->exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  } catch (...) {  // the server is removed with its data directory after the run anyway
  }
}

std::unique_ptr<db::pg::Connection> PgTestDb::open_connection() const {
  return db::pg::Connection::open(url_);
}

int64_t PgTestDb::scalar(const std::string& sql) { return db_->query(sql).int64(0, 0); }

}  // namespace autonous::testing
