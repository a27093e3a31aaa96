// `autonous copy --from SQLITE_PATH [--to postgresql://…]`: moves a SQLite deployment's data to
// PostgreSQL (internal/db/pg_copy.h), prints each table's counts; exits 1, writing nothing,
// unless every table then holds exactly the source's rows.

#include <filesystem>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <SQLiteCpp/Database.h>
#include <fmt/format.h>

#include "cmd/autonous/command_support.h"
#include "cmd/autonous/commands.h"
#include "internal/db/migrations.h"
#include "internal/db/migrator.h"
#include "internal/db/pg_connection.h"
#include "internal/db/pg_copy.h"
#include "internal/db/pg_migrator.h"

namespace autonous::cmd {
namespace {

struct CopyOptions {
  std::string from;
  std::string to;  // empty: DATABASE_URL
};

int run_copy(const config::Config& config, const CopyOptions& options) {
  const std::string to = options.to.empty() ? config.database_url : options.to;
  if (to.empty()) throw UsageError("--to: give a postgresql:// URL (or set DATABASE_URL)");
  if (!to.starts_with("postgresql://") && !to.starts_with("postgres://"))
    throw UsageError("--to: must be a postgresql:// URL");
  if (!std::filesystem::is_regular_file(options.from))
    throw UsageError("--from: " + options.from + " is not a SQLite file");
  // Read with its -wal (not as an immutable copy, which would miss the newest commits).
  SQLite::Database from(options.from, SQLite::OPEN_READONLY);
  from.setBusyTimeout(static_cast<int>(config.sqlite_busy_timeout.count()));
  try {
    from.execAndGet("SELECT count(*) FROM sqlite_schema");
  } catch (const SQLite::Exception& e) {
    throw UsageError("--from: cannot read " + options.from + " with its newest commits (" +
                     e.what() + "; the folder must be writable for its -shm file)");
  }
  const int version = db::schema_version(from);
  if (version != db::embedded_migrations().back().version)
    throw UsageError(
        fmt::format("--from: {} is at schema version {}; run `DB_PATH={} autonous "
                    "migrate` first (this binary's is {})",
                    options.from, version, options.from, db::embedded_migrations().back().version));
  auto target = db::pg::Connection::open(to);
  db::pg_migrate(*target);
  std::vector<db::CopiedTable> tables;
  bool verified = true;
  try {
    tables = db::copy_to_postgres(from, *target);
  } catch (const db::CopyNotVerified& e) {
    tables = e.tables();
    verified = false;
  }
  for (const db::CopiedTable& t : tables)
    std::cout << fmt::format("{:<18} {:>9} in SQLite {:>9} written {:>9} in PostgreSQL{}\n",
                             t.table, t.source_rows, t.inserted, t.target_rows,
                             t.target_rows == t.source_rows ? "" : "  DIFFERS");
  if (!verified) {
    std::cerr << "autonous: copy not verified, nothing written: the target holds other rows than "
                 "the source (is it in use already, or were rows deleted from the source since "
                 "an earlier copy?)\n";
    return 1;
  }
  std::cout << "verified: every table holds exactly the source's rows (" << db::pg::redact_url(to)
            << ")\n";
  return 0;
}

}  // namespace

void add_copy_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<CopyOptions>();
  auto* copy = app.add_subcommand(
      "copy", "Copy a SQLite deployment's data into PostgreSQL (re-runnable, verified by counts)");
  copy->add_option("--from", o->from, "the SQLite file (DB_PATH of the deployment)")->required();
  copy->add_option("--to", o->to, "postgresql:// URL (default: DATABASE_URL)");
  copy->callback(
      [&action, o] { action = [o](const config::Config& c) { return run_copy(c, *o); }; });
}

}  // namespace autonous::cmd
