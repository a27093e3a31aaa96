// Context build cost against stored history size. DESIGN.md: the cost must not grow with a
// chat's total stored history, only with what fits the budget. BM_BuildContext/N builds the
// prompt of a chat holding N history rows (the whole table is that chat: the worst case),
// through the real SQLiteProvider on a real file. BM_Compress/10000 is the compressor alone.

#include <filesystem>
#include <map>
#include <memory>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <benchmark/benchmark.h>

#include "internal/backend/sqlite/database.h"
#include "internal/backend/sqlite/migrator.h"
#include "internal/backend/sqlite/stores.h"
#include "internal/engine/engine.h"
#include "internal/engine/level_compressor.h"
#include "internal/tokens/bpe_counter.h"
#include "internal/tokens/token_counter.h"

namespace {

using namespace autonous;  // NOLINT(google-build-using-namespace): benchmark file

std::string text_of(int64_t i) {
  // Chat-sized messages of varying length (about 40-400 characters) made of ordinary words;
  // a run of one repeated letter would be a single pathological BPE piece instead.
  static constexpr const char* kWords[] = {"the",   "bread", "order",   "Saturday", "chocolate",
                                           "cake",  "we",    "deliver", "fresh",    "sourdough",
                                           "thank", "you",   "what",    "time",     "open?"};
  std::string out = "message " + std::to_string(i);
  const auto target = static_cast<size_t>(40 + (i * 37) % 360);
  for (int64_t k = i; out.size() < target; ++k) {
    out += ' ';
    out += kWords[static_cast<size_t>(k * 7 + i) % std::size(kWords)];
  }
  return out;
}

// One database per size, built once and kept for the whole run.
SQLite::Database& db_with_rows(int64_t rows) {
  static std::map<int64_t, std::unique_ptr<SQLite::Database>> dbs;
  auto& slot = dbs[rows];
  if (slot) return *slot;
  const std::string path = "/tmp/autonous-context-bench-" + std::to_string(rows) + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  slot = db::open(path, db::OpenOptions{false, std::chrono::milliseconds(5000)});
  db::migrate(*slot);
  SQLite::Transaction tx(*slot);
  SQLite::Statement ins(*slot, "INSERT INTO history(chat_id, role, text) VALUES ('big', ?, ?)");
  for (int64_t i = 0; i < rows; ++i) {
    ins.bind(1, i % 2 == 0 ? "user" : "assistant");
    ins.bind(2, text_of(i));
    ins.exec();
    ins.reset();
  }
  tx.commit();
  slot->exec("ANALYZE");
  return *slot;
}

// The same build with the exact o200k counter, as `TOKEN_COUNTER=auto` uses for gpt-4o-mini.
const tokens::TokenCounter& exact_counter() {
  static const auto kCounter =
      tokens::load_bpe_counter("o200k_base", tokens::kDefaultTokenizerDataDir);
  return *kCounter;
}

void build_context(benchmark::State& state, const tokens::TokenCounter& counter) {
  SQLite::Database& db = db_with_rows(state.range(0));
  // Defaults from DESIGN.md: window 50, 8000-token budget, 4000 characters per message.
  engine::EngineSettings settings;
  settings.context.system_prompt = "You are a helpful assistant.";
  settings.context.policy.max_tokens = 8000;
  const engine::Engine builder(store::make_sqlite_storage(db), settings,
                               counter);  // the worker's own wiring
  int64_t kept = 0;
  for (auto _ : state) {
    const auto built = builder.build("big", "What did we talk about?");
    kept = built.figures.compressed_count;
    benchmark::DoNotOptimize(built.messages.data());
  }
  state.counters["kept_messages"] = static_cast<double>(kept);
}

void BM_BuildContext(benchmark::State& state) {
  const tokens::CharsOver4Counter counter;
  build_context(state, counter);
}
BENCHMARK(BM_BuildContext)->Arg(1000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMicrosecond);

void BM_BuildContextExactO200k(benchmark::State& state) { build_context(state, exact_counter()); }
BENCHMARK(BM_BuildContextExactO200k)
    ->Arg(1000)
    ->Arg(100000)
    ->Arg(1000000)
    ->Unit(benchmark::kMicrosecond);

void BM_Compress(benchmark::State& state) {
  std::vector<common::Message> messages;
  for (int64_t i = 0; i < state.range(0); ++i)
    messages.push_back(
        {i % 2 == 0 ? common::Role::kUser : common::Role::kAssistant, text_of(i), i + 1});
  const tokens::CharsOver4Counter counter;
  const engine::LevelCompressor compressor(counter);
  for (auto _ : state) {
    // A budget that holds everything: the compressor touches all 10 000 messages.
    auto out = compressor.compress(
        messages, engine::TokenBudget{100'000'000, 4000, 0, {}, engine::Level::kNone});
    benchmark::DoNotOptimize(out.messages.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Compress)->Arg(10000)->Unit(benchmark::kMicrosecond);

}  // namespace

// main(): bench/bench_main.cpp
