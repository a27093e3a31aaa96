cmake_minimum_required(VERSION 3.25)
# The layering check refuses what it promises: a throwaway tree whose worker names a backend
# (a driver header or entry point, SQLite or libpq, an indented include, a backend's type) must
# fail it, as must a driver that uses the other's client library or includes the other driver;
# the same tree without those lines must pass. Run by ctest as `layering_selftest`.
# Usage: cmake -DSRC_DIR=<repo> -DWORK_DIR=<scratch dir> -P cmake/check_layering_selftest.cmake

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/internal/worker" "${WORK_DIR}/internal/backend")
file(WRITE "${WORK_DIR}/internal/backend/session.h" "#pragma once\n#include \"internal/queue/task_queue.h\"\n")
file(WRITE "${WORK_DIR}/internal/worker/ok.cpp" "#include \"internal/backend/session.h\"\n")

function(expect_check outcome)
  execute_process(COMMAND ${CMAKE_COMMAND} -DSRC_DIR=${WORK_DIR} -P ${SRC_DIR}/cmake/check_layering.cmake
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(outcome STREQUAL "pass" AND NOT rc EQUAL 0)
    message(FATAL_ERROR "a clean tree failed the layering check: ${err}")
  elseif(outcome STREQUAL "fail" AND rc EQUAL 0)
    message(FATAL_ERROR "the layering check let through: ${ARGN}")
  endif()
endfunction()

expect_check(pass)
foreach(bad "#include \"internal/backend/drivers.h\"" "#include \"internal/backend/postgres/queue.h\""
            "#include \"internal/backend/sqlite/queue.h\"" "#include \"internal/backend/sqlite/database.h\""
            "#include <SQLiteCpp/Database.h>" "#include <libpq-fe.h>"
            "#  include \"internal/backend/postgres/search.h\"" "void f(SQLite::Database& db);"
            "namespace autonous::db::pg { class Connection; }")
  file(WRITE "${WORK_DIR}/internal/worker/bad.cpp" "${bad}\n")
  expect_check(fail "${bad}")
endforeach()
file(REMOVE "${WORK_DIR}/internal/worker/bad.cpp")
# Each driver is the only user of its client library and never includes the other driver.
file(MAKE_DIRECTORY "${WORK_DIR}/internal/backend/sqlite" "${WORK_DIR}/internal/backend/postgres")
file(WRITE "${WORK_DIR}/internal/backend/sqlite/ok.cpp" "#include <SQLiteCpp/Database.h>\nvoid f(SQLite::Database& db);\n")
file(WRITE "${WORK_DIR}/internal/backend/postgres/ok.cpp" "#include <libpq-fe.h>\n")
expect_check(pass)
foreach(bad "postgres/bad.cpp:#include <SQLiteCpp/Database.h>" "sqlite/bad.cpp:#include <libpq-fe.h>"
            "postgres/bad.cpp:#include \"internal/backend/sqlite/database.h\""
            "sqlite/bad.cpp:#include \"internal/backend/postgres/connection.h\"")
  string(FIND "${bad}" ":" colon)
  string(SUBSTRING "${bad}" 0 ${colon} where)
  math(EXPR from "${colon} + 1")
  string(SUBSTRING "${bad}" ${from} -1 text)
  file(WRITE "${WORK_DIR}/internal/backend/${where}" "${text}\n")
  expect_check(fail "${bad}")
  file(REMOVE "${WORK_DIR}/internal/backend/${where}")
endforeach()
# Nor do the commands.
file(MAKE_DIRECTORY "${WORK_DIR}/cmd/autonous")
file(WRITE "${WORK_DIR}/cmd/autonous/ok.cpp" "#include \"internal/backend/session.h\"\n")
expect_check(pass)
foreach(bad "#include \"internal/backend/sqlite/database.h\"" "#include \"internal/backend/drivers.h\""
            "#include <SQLiteCpp/Database.h>" "#include <libpq-fe.h>" "std::unique_ptr<SQLite::Database> db;")
  file(WRITE "${WORK_DIR}/cmd/autonous/bad.cpp" "${bad}\n")
  expect_check(fail "cmd: ${bad}")
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
message(STATUS "layering self-test: every backend include or type above the seam and in the "
               "commands, and every client library or driver include in the other driver, was refused")
