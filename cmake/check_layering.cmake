cmake_minimum_required(VERSION 3.25)
# The layering of internal/ and cmd/ (docs/architecture.md), checked from every source file
# (every folder, found recursively; a folder the table below does not know is refused):
# - a folder includes only the folders below it; no include climbs with "..";
# - each database client library has one folder: SQLite (SQLiteCpp, sqlite3.h, however spelled)
#   only internal/backend/sqlite, libpq only internal/backend/postgres; neither driver includes
#   the other; ICU only tokens and recall, curl only openai;
# - above the seam (everything but the two driver folders and the seam's openers in
#   internal/backend) no code, comments aside, names a backend: its types or functions
#   (SQLite::, sqlite3_, PGconn, PQ…, db::pg, Pg…, SQLite…, open_/make_ pg|sqlite …), the
#   drivers' entry points (backend/drivers.h), or the variables that choose one (database_url,
#   db_path).
# Run by ctest as `layering` (and proved by `layering_selftest`); fails naming each file and line.
# Usage: cmake -DSRC_DIR=<repo> -P cmake/check_layering.cmake

set(layers common config tokens recall engine events queue openai tools ops backend backend/sqlite
           backend/postgres worker cmd/autonous cmd/autonous-stub)
# Where a backend may be named: its driver, the seam's openers (backend/session.cpp and
# drivers.h, in internal/backend), and config, which reads the variables that choose one.
set(naming_allowed config backend/sqlite backend/postgres)
# ... and in internal/backend only the openers, not the seam's public headers.
set(naming_allowed_files internal/backend/session.cpp internal/backend/drivers.h)

set(allowed_common "")
set(allowed_config "common")
set(allowed_tokens "common")
set(allowed_recall "common;tokens")
# The engine calls recall (its pipeline gathers evidence through recall's Searcher seam) and reads
# its settings from config (engine_settings); nothing above it.
set(allowed_engine "common;tokens;recall;config")
set(allowed_events "common")
set(allowed_queue "common;events")
set(allowed_openai "common")
# Declared HTTP tools and MCP clients: below the worker, which runs them.
set(allowed_tools "common")
# The operator surface reads the database through ops::PageDb; it knows nothing of the worker.
set(allowed_ops "common;config;engine;events")
# The seam (backend/*.h, session.cpp): what a session offers, and the one place that chooses a
# driver (its openers call the drivers' entry points, declared in backend/drivers.h).
set(allowed_backend "common;config;recall;engine;events;queue;ops")
# A driver implements the seam and the interfaces below it; it never includes the other driver.
set(allowed_backend/sqlite "common;config;tokens;recall;engine;events;queue;ops;backend")
set(allowed_backend/postgres "common;config;tokens;recall;engine;events;queue;ops;backend")
# The worker and the commands reach the database only through the seam.
set(allowed_worker "common;config;backend;tokens;recall;engine;events;queue;openai;tools")
set(allowed_cmd/autonous "common;config;backend;tokens;recall;engine;events;queue;openai;tools;worker;ops")
set(allowed_cmd/autonous-stub "common")

# Third-party headers by what they are (matched anywhere in the include's path).
set(sqlite_re "(^|/)sqlite3\\.h$|(^|/)sqlite3ext\\.h$|(^|/)SQLiteCpp/")
set(pq_re "(^|/)libpq-fe\\.h$|(^|/)libpq-events\\.h$|(^|/)libpq/|(^|/)libpq-fs\\.h$")
set(curl_re "(^|/)curl/")
set(icu_re "(^|/)unicode/")
# A backend named in code.
set(named_re "SQLite[ \t]*::|namespace[ \t]+SQLite|sqlite3|PG(conn|result|notify)|PQ[a-z]|db[ \t]*::[ \t]*pg|(^|[^a-z_])pg[ \t]*::|Pg[A-Z]|SQLite[A-Z]|(open|make)_(pg|sqlite)_|(sqlite|pg)_page_db|database_url|db_path|backend/drivers\\.h")
# ... the SQLite driver's classes that carry no SQLite in their names, and reading the variables
# that choose a backend from the environment (two patterns: CMake's allows 9 groups in one).
set(named2_re "queue[ \t]*::[ \t]*Queue[^A-Za-z_]|store[ \t]*::[ \t]*SearchIndex[^A-Za-z_]|db[ \t]*::[ \t]*(WriteTransaction|StatementCache|open[ \t]*\\(|schema_version[ \t]*\\()|(getenv|env)[ \t]*\\([ \t]*\"(DATABASE_URL|DB_PATH)\"")

set(violations "")
set(checked 0)
file(GLOB_RECURSE files RELATIVE "${SRC_DIR}" "${SRC_DIR}/internal/*" "${SRC_DIR}/cmd/*")
foreach(rel ${files})
  if(NOT rel MATCHES "\\.(h|hh|hpp|hxx|c|cc|cpp|cxx|inc|ipp)$")
    continue()
  endif()
  get_filename_component(dir "${rel}" DIRECTORY)
  string(REGEX REPLACE "^internal/" "" layer "${dir}")
  if(NOT layer IN_LIST layers)
    list(APPEND violations "${rel}: in ${dir}, a folder the layering does not know (add it to cmake/check_layering.cmake and docs/architecture.md)")
    continue()
  endif()
  math(EXPR checked "${checked} + 1")
  set(f "${SRC_DIR}/${rel}")
  file(STRINGS "${f}" includes REGEX "^[ \t]*#[ \t]*include")
  foreach(line ${includes})
    if(NOT line MATCHES "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"]")
      list(APPEND violations "${rel}: ${line} (an include the check cannot read)")
      continue()
    endif()
    set(path "${CMAKE_MATCH_1}")
    if(path MATCHES "(^|/)\\.\\.(/|$)")
      list(APPEND violations "${rel}: ${line} (no include climbs with ..: write it from the root)")
    endif()
    set(dep "")
    if(path MATCHES "^internal/backend/(sqlite|postgres)/")
      set(dep "backend/${CMAKE_MATCH_1}")
    elseif(path MATCHES "^internal/([a-z_]+)/")
      set(dep "${CMAKE_MATCH_1}")
    elseif(path MATCHES "^cmd/([a-z_-]+)/")
      set(dep "cmd/${CMAKE_MATCH_1}")
    endif()
    if(dep AND NOT dep STREQUAL layer AND NOT dep IN_LIST allowed_${layer})
      list(APPEND violations "${rel}: ${line} (${layer} may use: ${allowed_${layer}})")
    endif()
    if(path MATCHES "${sqlite_re}" AND NOT layer STREQUAL "backend/sqlite")
      list(APPEND violations "${rel}: ${line} (SQLite only in internal/backend/sqlite)")
    endif()
    if(path MATCHES "${pq_re}" AND NOT layer STREQUAL "backend/postgres")
      list(APPEND violations "${rel}: ${line} (libpq only in internal/backend/postgres)")
    endif()
    if(path MATCHES "${curl_re}" AND NOT layer STREQUAL "openai")
      list(APPEND violations "${rel}: ${line} (curl only in internal/openai)")
    endif()
    if(path MATCHES "${icu_re}" AND NOT layer STREQUAL "tokens" AND NOT layer STREQUAL "recall")
      list(APPEND violations "${rel}: ${line} (ICU only in internal/tokens and internal/recall)")
    endif()
  endforeach()
  if(NOT layer IN_LIST naming_allowed AND NOT rel IN_LIST naming_allowed_files)
    file(STRINGS "${f}" named REGEX "${named_re}|${named2_re}")
    foreach(line ${named})
      # A // comment (not the // of a URL such as "postgresql://host") is not code.
      string(REGEX REPLACE "(^|[ \t])//.*$" "\\1" code "${line} ")
      if(code MATCHES "${named_re}" OR code MATCHES "${named2_re}")
        list(APPEND violations "${rel}: ${line} (only internal/backend and its drivers name a backend)")
      endif()
    endforeach()
  endif()
endforeach()

if(violations)
  list(JOIN violations "\n" text)
  message(FATAL_ERROR "layering violations:\n${text}")
endif()
message(STATUS "layering: ${checked} files of internal/ and cmd/ follow the layering")
