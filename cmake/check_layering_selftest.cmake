cmake_minimum_required(VERSION 3.25)
# The layering check refuses what it promises. On a throwaway tree that passes it, each bad line
# below, written into one file at a time, must make it fail: a backend named above the seam (a
# driver header or entry point, however the include is spelled, indented or climbing with "..";
# SQLite or libpq; a backend's types or functions; the variables that choose one), a driver that
# uses the other's client library or includes the other driver, and a folder the check does not
# know. Run by ctest as `layering_selftest`.
# Usage: cmake -DSRC_DIR=<repo> -DWORK_DIR=<scratch dir> -P cmake/check_layering_selftest.cmake

file(REMOVE_RECURSE "${WORK_DIR}")
foreach(d internal/worker internal/backend internal/backend/sqlite internal/backend/postgres
          cmd/autonous)
  file(MAKE_DIRECTORY "${WORK_DIR}/${d}")
endforeach()
file(WRITE "${WORK_DIR}/internal/backend/session.h"
     "#pragma once\n#include \"internal/queue/task_queue.h\"\n")
file(WRITE "${WORK_DIR}/internal/backend/session.cpp"
     "#include \"internal/backend/drivers.h\"\nauto s = open_pg_session(config.database_url);\n")
file(WRITE "${WORK_DIR}/internal/worker/ok.cpp"
     "#include \"internal/backend/session.h\"\n// SQLite::Database in a comment is fine\n"
     "auto u = \"see DATABASE_URL\";  // PGconn in a trailing comment too\nqueue::TaskQueue& q();\n")
file(WRITE "${WORK_DIR}/internal/backend/sqlite/ok.cpp"
     "#include <SQLiteCpp/Database.h>\n#include \"internal/backend/session.h\"\nvoid f(SQLite::Database& db);\n")
file(WRITE "${WORK_DIR}/internal/backend/postgres/ok.cpp"
     "#include <libpq-fe.h>\nPGconn* c = PQconnectdb(\"\");\n")
file(WRITE "${WORK_DIR}/cmd/autonous/ok.cpp" "#include \"internal/backend/session.h\"\n")

function(expect_check outcome what)
  execute_process(COMMAND ${CMAKE_COMMAND} -DSRC_DIR=${WORK_DIR} -P ${SRC_DIR}/cmake/check_layering.cmake
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(outcome STREQUAL "pass" AND NOT rc EQUAL 0)
    message(FATAL_ERROR "a clean tree failed the layering check: ${err}")
  elseif(outcome STREQUAL "fail" AND rc EQUAL 0)
    message(FATAL_ERROR "the layering check let through: ${what}")
  endif()
endfunction()

expect_check(pass "")
# "<file>|<line>": one bad line in one file (no semicolons: they would split the list).
set(cases
  "internal/worker/bad.cpp|#include \"internal/backend/drivers.h\""
  "internal/worker/bad.cpp|#include \"internal/backend/postgres/queue.h\""
  "internal/worker/bad.cpp|#include \"internal/backend/sqlite/database.h\""
  "internal/worker/bad.cpp|  #  include \"internal/backend/postgres/search.h\""
  "internal/worker/bad.cpp|#include \"../backend/postgres/queue.h\""
  "internal/worker/bad.cpp|#include \"internal/store/../backend/postgres/queue.h\""
  "internal/worker/bad.cpp|#include <SQLiteCpp/Database.h>"
  "internal/worker/bad.cpp|#include \"sqlite3.h\""
  "internal/worker/bad.cpp|#include <libpq-fe.h>"
  "internal/worker/bad.cpp|  #include <postgresql/libpq-fe.h>"
  "internal/worker/bad.cpp|void f(SQLite::Database& db)"
  "internal/worker/bad.cpp|void f(SQLite :: Database& db)"
  "internal/worker/bad.cpp|namespace autonous::db::pg {"
  "internal/worker/bad.cpp|void f(pg::Connection& c)"
  "internal/worker/bad.cpp|PGconn* c = nullptr"
  "internal/worker/bad.cpp|auto r = PQexec(c, sql)"
  "internal/worker/bad.cpp|sqlite3_open(path, &db)"
  "internal/worker/bad.cpp|queue::PgQueue q(c)"
  "internal/worker/bad.cpp|store::SQLiteProvider p(db)"
  "internal/worker/bad.cpp|auto s = store::make_pg_storage(c)"
  "internal/worker/bad.cpp|auto s = backend::open_pg_session(url)"
  "internal/worker/bad.cpp|if (config.database_url.empty()) {}"
  "cmd/autonous/bad.cpp|#include \"internal/backend/sqlite/database.h\""
  "cmd/autonous/bad.cpp|#include \"internal/backend/drivers.h\""
  "cmd/autonous/bad.cpp|std::unique_ptr<SQLite::Database> db"
  "cmd/autonous/bad.cpp|if (std::filesystem::exists(config.db_path)) {}"
  "internal/backend/postgres/bad.cpp|#include <SQLiteCpp/Database.h>"
  "internal/backend/postgres/bad.cpp|#include \"internal/backend/sqlite/database.h\""
  "internal/backend/sqlite/bad.cpp|#include <libpq-fe.h>"
  "internal/backend/sqlite/bad.cpp|#include \"internal/backend/postgres/connection.h\""
  "internal/recall/bad.cpp|#include \"internal/engine/engine.h\""
  "internal/engine/bad.cpp|#include \"internal/backend/session.h\""
  "internal/engine/bad.cpp|#include \"internal/queue/task_queue.h\""
  "internal/engine/bad.cpp|#include <unicode/brkiter.h>"
  "internal/store/bad.cpp|int unknown_folder = 0"
  "internal/worker/bad.cpp|const char* u = std::getenv(\"DATABASE_URL\")"
  "internal/worker/bad.cpp|auto p = env(\"DB_PATH\")"
  "internal/worker/bad.cpp|queue::Queue q(db)"
  "internal/worker/bad.cpp|store::SearchIndex s(db)"
  "internal/worker/bad.cpp|db::WriteTransaction tx(db)"
  "internal/worker/bad.cpp|auto u = \"postgresql://h\"   PGconn* c = nullptr"
  "internal/backend/bad.h|PGconn* c = nullptr"
  "internal/worker/deeper/bad.cpp|int unknown_folder = 0")
foreach(c ${cases})
  string(FIND "${c}" "|" bar)
  string(SUBSTRING "${c}" 0 ${bar} where)
  math(EXPR from "${bar} + 1")
  string(SUBSTRING "${c}" ${from} -1 text)
  file(WRITE "${WORK_DIR}/${where}" "${text}\n")
  expect_check(fail "${c}")
  file(REMOVE "${WORK_DIR}/${where}")
endforeach()
expect_check(pass "")
file(REMOVE_RECURSE "${WORK_DIR}")
list(LENGTH cases n)
message(STATUS "layering self-test: all ${n} ways of naming a backend above the seam, of mixing "
               "the drivers and of adding an unknown folder were refused")
