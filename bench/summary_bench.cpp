// The summaries issue's measured targets, end to end: the real `autonous worker --drain`, the
// loopback stub, a real SQLite file. One scripted 300-turn conversation (facts first: a name,
// a number, a date; then questions of ordinary words), prompt budget 4 000 tokens, exact token
// counting (TOKEN_COUNTER=auto), run once with `summarize` and once with `token_budget`.
// Reported per strategy:
//  - prefix share: of each chat request's prompt (its messages' roles and texts, in order), the
//    share that is a byte-identical prefix of the previous request's prompt, averaged over the
//    turns after the first compaction (target >= 0.85 for summarize);
//  - summary calls per 100 turns, and total prompt tokens sent (chat + summary calls, by the
//    stub's usage) and the stub's cached tokens;
//  - recall: whether the name, the number and the date are still in the prompt at turn 300.
// Run with HISTORY_WINDOW 50 (the default: compactions also come from the window) and 400 (only
// the budget triggers them).
// Usage: build/bench/summary_bench [TURNS]   (default 300; needs scripts/bootstrap's rank files)

#include <iostream>
#include <string>
#include <vector>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "internal/backend/sqlite/database.h"
#include "internal/backend/sqlite/migrator.h"
#include "tests/support/process.h"
#include "tests/support/stub_server.h"
#include "tests/support/temp_dir.h"

namespace {

using namespace autonous;  // NOLINT(google-build-using-namespace): benchmark program
using nlohmann::json;

const char* const kFacts[] = {"Hi! My name is Ada Lovelace.", "My order number is 4471.",
                              "Please deliver it on 2026-12-24."};

std::string question(int turn) {
  static constexpr const char* kWords[] = {"sourdough", "starter", "flour", "water", "salt",
                                           "proof",     "oven",    "crust", "crumb", "rye",
                                           "knead",     "rest",    "shape", "score", "steam"};
  // The turn's number spelled in words (base 15): every question is distinct, and no digit
  // makes the stub's summary keep it as a fact.
  std::string out = "Question ";
  out += kWords[static_cast<size_t>(turn / 225) % 15];
  out += '-';
  out += kWords[static_cast<size_t>(turn / 15) % 15];
  out += '-';
  out += kWords[static_cast<size_t>(turn) % 15];
  out += " about baking:";
  for (int k = 0; k < 40; ++k) {
    out += ' ';
    out += kWords[static_cast<size_t>(turn * 7 + k * 3) % std::size(kWords)];
  }
  return out + "?";
}

struct Result {
  double prefix_share = 0;
  int first_compaction = -1;
  int64_t summary_calls = 0;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  bool recall[3] = {false, false, false};
  int turns = 0;
};

std::string serialise(const json& messages) {
  std::string s;
  for (const auto& m : messages)
    s += m.value("role", "") + '\x1f' + m.value("content", "") + '\x1e';
  return s;
}

Result run(const std::string& strategy, int turns, int window) {
  testing::TempDir dir;
  const std::string db_path = dir.file("bench.db");
  {
    auto db = db::open(db_path, db::OpenOptions{false, std::chrono::milliseconds(5000)});
    db::migrate(*db);
    SQLite::Transaction tx(*db);
    SQLite::Statement ins(*db, "INSERT INTO tasks(chat_id, text) VALUES ('bench', ?)");
    for (int t = 0; t < turns; ++t) {
      ins.bind(1, t < 3 ? std::string(kFacts[t]) : question(t));
      ins.exec();
      ins.reset();
    }
    tx.commit();
  }
  testing::StubServer stub(dir.path().string());
  const std::map<std::string, std::string> env = {{"DB_PATH", db_path},
                                                  {"OPENAI_BASE_URL", stub.base_url()},
                                                  {"CONTEXT_STRATEGY", strategy},
                                                  {"MAX_CONTEXT_TOKENS", "4000"},
                                                  {"WORKER_CONCURRENCY", "1"},
                                                  {"POLL_INTERVAL_MS", "5"},
                                                  {"SQLITE_SYNCHRONOUS", "NORMAL"},
                                                  {"LOG_LEVEL", "warn"},
                                                  {"HISTORY_WINDOW", std::to_string(window)}};
  const auto r = testing::run({testing::autonous_bin(), "worker", "--drain"}, env,
                              dir.path().string(), "", std::chrono::minutes(10));
  if (r.exit_code != 0) throw std::runtime_error("worker failed: " + r.err);

  Result out;
  std::vector<std::string> prompts;
  for (const auto& line : stub.log_lines()) {
    const json j = json::parse(line);
    const json& messages = j["body"]["messages"];
    const bool summary =
        messages[0]["content"].get<std::string>().rfind("You maintain a running summary", 0) == 0;
    if (summary) {
      ++out.summary_calls;
      if (out.first_compaction < 0) out.first_compaction = static_cast<int>(prompts.size());
      continue;
    }
    prompts.push_back(serialise(messages));
  }
  out.turns = static_cast<int>(prompts.size());
  auto db = db::open(db_path, db::OpenOptions{false, std::chrono::milliseconds(5000)});
  if (strategy != "summarize") {
    // token_budget's "compaction": the first turn whose prompt lost its oldest message, by the
    // budget (dropped) or by HISTORY_WINDOW (50 read).
    SQLite::Statement q(*db,
                        "SELECT min(t.rank) FROM (SELECT row_number() OVER (ORDER BY id) - 1 AS "
                        "rank, dropped_count, original_count FROM context_compressions) t "
                        "WHERE dropped_count > 0 OR original_count >= " +
                            std::to_string(window));
    if (q.executeStep() && !q.getColumn(0).isNull()) out.first_compaction = q.getColumn(0).getInt();
  }
  double share_sum = 0;
  int counted = 0;
  for (size_t i = std::max(1, out.first_compaction + 1); i < prompts.size(); ++i) {
    const std::string& a = prompts[i - 1];
    const std::string& b = prompts[i];
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    share_sum += static_cast<double>(n) / static_cast<double>(b.size());
    ++counted;
  }
  out.prefix_share = counted > 0 ? share_sum / counted : 0;
  out.prompt_tokens =
      db->execAndGet("SELECT coalesce(sum(prompt_tokens), 0) FROM llm_calls WHERE call = 'chat'")
          .getInt64();
  out.cached_tokens =
      db->execAndGet("SELECT coalesce(sum(cached_tokens), 0) FROM llm_calls WHERE call = 'chat'")
          .getInt64();
  out.prompt_tokens +=
      db->execAndGet(
            "SELECT coalesce(sum(json_extract(u.value, '$.prompt_tokens')), 0) FROM "
            "events e, json_each(json_extract(e.payload, '$.usage')) u "
            "WHERE e.type = 'context.summarized'")
          .getInt64();
  const std::string& last = prompts.back();
  const char* const needles[] = {"Ada Lovelace", "4471", "2026-12-24"};
  for (int k = 0; k < 3; ++k) out.recall[k] = last.find(needles[k]) != std::string::npos;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  const int turns = argc > 1 ? std::stoi(argv[1]) : 300;
  std::cout << fmt::format("{} turns, prompt budget 4000 tokens, exact counting\n\n", turns);
  std::cout << fmt::format("{:<7} {:<14} {:>12} {:>16} {:>12} {:>14} {:>14} {:>7}\n", "window",
                           "strategy", "prefix share", "first compaction", "summary/100",
                           "prompt tokens", "cached tokens", "recall");
  for (const int window : {50, 400})
    for (const std::string strategy : {"summarize", "token_budget"}) {
      const Result r = run(strategy, turns, window);
      std::cout << fmt::format("{:<7} {:<14} {:>12.3f} {:>16} {:>12.2f} {:>14} {:>14} {:>4}{}{}\n",
                               window, strategy, r.prefix_share, r.first_compaction,
                               100.0 * static_cast<double>(r.summary_calls) / r.turns,
                               r.prompt_tokens, r.cached_tokens, r.recall[0] ? "N" : "-",
                               r.recall[1] ? "#" : "-", r.recall[2] ? "D" : "-");
    }
  std::cout << "\nrecall: N = the name, # = the number, D = the date, still in the last prompt\n";
  return 0;
}
