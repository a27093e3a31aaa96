cmake_minimum_required(VERSION 3.25)
# The layering check refuses what it promises: a throwaway tree whose worker names a backend
# (a driver header, PostgreSQL's queue, internal/db, SQLite, an indented include) must fail it,
# and the same tree without those lines must pass. Run by ctest as `layering_selftest`.
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
foreach(bad "#include \"internal/backend/drivers.h\"" "#include \"internal/queue/pg_queue.h\""
            "#include \"internal/queue/queue.h\"" "#include \"internal/db/database.h\""
            "#include \"internal/store/sqlite_provider.h\"" "#include \"internal/events/pg_settled_ids.h\""
            "#include <SQLiteCpp/Database.h>" "#include <libpq-fe.h>" "#  include \"internal/store/pg_search.h\"")
  file(WRITE "${WORK_DIR}/internal/worker/bad.cpp" "${bad}\n")
  expect_check(fail "${bad}")
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
message(STATUS "layering self-test: every backend include in internal/worker was refused")
