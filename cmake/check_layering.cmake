cmake_minimum_required(VERSION 3.25)
# The layering of internal/ (docs/architecture.md), checked from the
# includes: a folder may include only the folders below it, and the third-party headers some
# layers must never see are refused there. Each database client library has one folder: SQLite
# (SQLiteCpp, sqlite3.h) only internal/backend/sqlite, libpq only internal/backend/postgres; no
# folder above the seam names a backend's types (SQLite::, db::pg::) in its code, and neither
# driver includes the other; nor do the commands in cmd/autonous. Run by ctest as `layering`;
# fails naming each include or line.
# Usage: cmake -DSRC_DIR=<repo> -P cmake/check_layering.cmake

set(layers common config tokens context events queue store openai ops backend backend/sqlite
           backend/postgres worker)
set(drivers backend/sqlite backend/postgres)

set(allowed_common "")
set(allowed_config "common")
set(allowed_tokens "common")
set(allowed_context "common;tokens")
set(allowed_events "common")
set(allowed_queue "common;events")
set(allowed_openai "common")
set(allowed_store "common;tokens;context;config")
# The operator surface reads the database through ops::PageDb; it knows nothing of the worker.
set(allowed_ops "common;config;context;events")
# The seam (backend/*.h, session.cpp): what a session offers, and the one place that chooses a
# driver (its openers call the drivers' entry points, declared in backend/drivers.h).
set(allowed_backend "common;config;context;events;queue;store;ops")
# A driver implements the seam and the interfaces below it; it never includes the other driver.
set(allowed_backend/sqlite "common;config;tokens;context;events;queue;store;ops;backend")
set(allowed_backend/postgres "common;config;tokens;context;events;queue;store;ops;backend")
# The worker reaches the database only through the seam.
set(allowed_worker "common;config;backend;tokens;context;store;events;queue;openai;worker")

# Headers a layer must not include: SQLite only in its driver, libpq only in its driver; ICU
# only in tokens; curl only in openai.
set(sqlite_headers "<sqlite3.h>;<SQLiteCpp/")
set(pq "<libpq-fe.h>")
foreach(layer ${layers})
  set(refused_${layer} "<curl/;<unicode/")
  if(NOT layer STREQUAL "backend/sqlite")
    list(APPEND refused_${layer} ${sqlite_headers})
  endif()
  if(NOT layer STREQUAL "backend/postgres")
    list(APPEND refused_${layer} ${pq})
  endif()
endforeach()
set(refused_tokens "<curl/;${sqlite_headers};${pq}")
set(refused_openai "<unicode/;${sqlite_headers};${pq}")
# Nor a driver's entry points above the seam's openers.
set(refused_worker "${refused_worker};internal/backend/drivers.h")

set(violations "")
set(checked 0)
foreach(layer ${layers})
  file(GLOB files "${SRC_DIR}/internal/${layer}/*.h" "${SRC_DIR}/internal/${layer}/*.cpp")
  list(FIND drivers "${layer}" driver_at)
  foreach(f ${files})
    math(EXPR checked "${checked} + 1")
    file(STRINGS "${f}" includes REGEX "^#[ \t]*include")
    foreach(line ${includes})
      set(dep "")
      if(line MATCHES "^#[ \t]*include[ \t]*\"internal/backend/(sqlite|postgres)/")
        set(dep "backend/${CMAKE_MATCH_1}")
      elseif(line MATCHES "^#[ \t]*include[ \t]*\"internal/([a-z_]+)/")
        set(dep "${CMAKE_MATCH_1}")
      endif()
      if(dep AND NOT dep STREQUAL layer AND NOT dep IN_LIST allowed_${layer})
        list(APPEND violations "${f}: ${line} (internal/${layer} may use: ${allowed_${layer}})")
      endif()
      foreach(prefix ${refused_${layer}})
        string(FIND "${line}" "${prefix}" at)
        if(NOT at EQUAL -1)
          list(APPEND violations "${f}: ${line} (internal/${layer} must not include ${prefix})")
        endif()
      endforeach()
    endforeach()
    # Outside the drivers, no code (comments aside) names a backend's types.
    if(driver_at EQUAL -1)
      file(STRINGS "${f}" named REGEX "SQLite::|namespace SQLite|db::pg|namespace pg")
      foreach(line ${named})
        string(REGEX REPLACE "//.*$" "" code "${line}")
        if(code MATCHES "SQLite::|namespace SQLite|db::pg([^a-z_]|$)|namespace pg([^a-z_]|$)")
          list(APPEND violations "${f}: ${line} (only internal/backend/sqlite and "
                                 "internal/backend/postgres name a backend's types)")
        endif()
      endforeach()
    endif()
  endforeach()
endforeach()

# The commands (cmd/autonous) reach the database only through the seam as well.
file(GLOB files "${SRC_DIR}/cmd/autonous/*.h" "${SRC_DIR}/cmd/autonous/*.cpp")
set(refused_cmd "${sqlite_headers};${pq};internal/backend/sqlite/;internal/backend/postgres/"
                "internal/backend/drivers.h")
foreach(f ${files})
  math(EXPR checked "${checked} + 1")
  file(STRINGS "${f}" includes REGEX "^#[ \t]*include")
  foreach(line ${includes})
    foreach(prefix ${refused_cmd})
      string(FIND "${line}" "${prefix}" at)
      if(NOT at EQUAL -1)
        list(APPEND violations "${f}: ${line} (cmd/autonous must not include ${prefix})")
      endif()
    endforeach()
  endforeach()
  file(STRINGS "${f}" named REGEX "SQLite::|namespace SQLite|db::pg|namespace pg")
  foreach(line ${named})
    string(REGEX REPLACE "//.*$" "" code "${line}")
    if(code MATCHES "SQLite::|namespace SQLite|db::pg([^a-z_]|$)|namespace pg([^a-z_]|$)")
      list(APPEND violations "${f}: ${line} (only the backend folders name a backend's types)")
    endif()
  endforeach()
endforeach()

if(violations)
  list(JOIN violations "\n" text)
  message(FATAL_ERROR "layering violations:\n${text}")
endif()
message(STATUS "layering: ${checked} files of internal/ and cmd/autonous follow the layering")
