cmake_minimum_required(VERSION 3.25)
# The layering of internal/ (docs/architecture.md), checked from the
# includes: a folder may include only the folders below it, and the third-party headers some
# layers must never see are refused there. Run by ctest as `layering`; fails naming each include.
# Usage: cmake -DSRC_DIR=<repo> -P cmake/check_layering.cmake

set(allowed_common "")
set(allowed_config "common")
set(allowed_db "common")
set(allowed_tokens "common")
set(allowed_context "common;tokens")
set(allowed_events "common;db")
set(allowed_queue "common;db;events")
set(allowed_openai "common")
set(allowed_store "common;db;tokens;context;config")
# The backend seam: the one place that chooses SQLite or PostgreSQL for a worker (backend/session.h).
set(allowed_backend "common;config;db;events;queue;store")
# The worker reaches the database only through the seam: no db/, no SQLite, no libpq.
set(allowed_worker "common;config;backend;tokens;context;store;events;queue;openai;worker")
# The operator surface reads the database and the engine's settings; it knows nothing of the worker.
set(allowed_ops "common;config;db;context;events")

# Headers a layer must not include: no SQLite in the pure engine, the client or the counters;
# ICU only in tokens; curl only in openai; libpq only in db.
set(sqlite_headers "<sqlite3.h>;<SQLiteCpp/")
# libpq only in db (db/pg_connection.h wraps it).
set(pq "<libpq-fe.h>")
set(refused_common "${sqlite_headers};<curl/;<unicode/;${pq}")
set(refused_config "${sqlite_headers};<curl/;<unicode/;${pq}")
set(refused_tokens "${sqlite_headers};<curl/;${pq}")
set(refused_context "${sqlite_headers};<curl/;<unicode/;${pq}")
set(refused_openai "${sqlite_headers};<unicode/;${pq}")
set(refused_db "<curl/;<unicode/")
set(refused_events "<curl/;<unicode/;${pq}")
set(refused_queue "<curl/;<unicode/;${pq}")
set(refused_store "<curl/;<unicode/;${pq}")
# ... nor any one backend's code above the seam: its drivers, queues, stores and logs.
set(backend_code "internal/backend/drivers.h;internal/queue/pg_;internal/queue/queue.h;internal/store/pg_;internal/store/sqlite_;internal/store/search_index.h;internal/events/pg_;internal/db/")
set(refused_worker "${sqlite_headers};<curl/;<unicode/;${pq};${backend_code}")
set(refused_backend "<curl/;<unicode/;${pq}")
set(refused_ops "<curl/;<unicode/;${pq}")

set(violations "")
set(checked 0)
foreach(layer common config db tokens context events queue openai store backend worker ops)
  file(GLOB files "${SRC_DIR}/internal/${layer}/*.h" "${SRC_DIR}/internal/${layer}/*.cpp")
  foreach(f ${files})
    math(EXPR checked "${checked} + 1")
    file(STRINGS "${f}" includes REGEX "^#[ \t]*include")
    foreach(line ${includes})
      if(line MATCHES "^#[ \t]*include[ \t]*\"internal/([a-z_]+)/")
        set(dep "${CMAKE_MATCH_1}")
        if(NOT dep STREQUAL layer AND NOT dep IN_LIST allowed_${layer})
          list(APPEND violations "${f}: ${line} (internal/${layer} may use: ${allowed_${layer}})")
        endif()
      endif()
      foreach(prefix ${refused_${layer}})
        string(FIND "${line}" "${prefix}" at)
        if(NOT at EQUAL -1)
          list(APPEND violations "${f}: ${line} (internal/${layer} must not include ${prefix})")
        endif()
      endforeach()
    endforeach()
  endforeach()
endforeach()

if(violations)
  list(JOIN violations "\n" text)
  message(FATAL_ERROR "layering violations:\n${text}")
endif()
message(STATUS "layering: ${checked} files follow internal/'s layering")
