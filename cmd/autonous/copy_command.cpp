// `autonous copy --from SQLITE_PATH [--to postgresql://…]`: moves a SQLite deployment's data to
// PostgreSQL (internal/backend/copy.h), prints each table's counts; exits 1, writing nothing,
// unless every table then holds exactly the source's rows.

#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cmd/autonous/commands.h"
#include "internal/backend/copy.h"
#include "internal/config/config.h"

namespace autonous::cmd {
namespace {

struct CopyOptions {
  std::string from;
  std::string to;  // empty: DATABASE_URL
};

int run_copy(const config::Config& config, const CopyOptions& options) {
  backend::CopyResult copied;
  bool verified = true;
  try {
    copied = backend::copy_deployment(config, options.from, options.to);
  } catch (const backend::TargetRefused& e) {
    throw UsageError(std::string("--to: ") + e.what());
  } catch (const backend::SourceRefused& e) {
    throw UsageError(std::string("--from: ") + e.what());
  } catch (const backend::CopyNotVerified& e) {
    copied.tables = e.tables();
    verified = false;
  }
  for (const backend::CopiedTable& t : copied.tables) {
    std::cout << fmt::format("{:<18} {:>9} in SQLite {:>9} written {:>9} in PostgreSQL{}\n",
                             t.table, t.source_rows, t.inserted, t.target_rows,
                             t.target_rows == t.source_rows ? "" : "  DIFFERS");
    if (t.normalised > 0)
      std::cout << fmt::format(
          "{:<18} {:>9} row(s) normalised: a number stored as text read as the worker reads it, "
          "a priority outside 32 bits at its bound\n",
          "", t.normalised);
  }
  if (!verified) {
    std::cerr << "autonous: copy not verified, nothing written: the target holds other rows than "
                 "the source (is it in use already, or were rows deleted from the source since "
                 "an earlier copy?)\n";
    return 1;
  }
  std::cout << "verified: every table holds exactly the source's rows (" << copied.target << ")\n";
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
