// The context engine's cost per turn, by compression level and chat size, and MustFit's worst
// case. Ratios within one run are what to read (bench/README.md).
//
// BM_EngineTurn/<level>/<N>: one whole build (SQLiteProvider on a real file → LevelCompressor →
//   StandardAssembler) with the exact o200k counter, for a chat of N stored messages, with the
//   budget set so the usage of what is read lands in the level's band (none 0.5, normal 0.78,
//   aggressive 0.9, emergency 2.0). HISTORY_WINDOW 50, the default: what is read is bounded.
// BM_EngineColdTurn/<stored>: the first build of a chat in a process, with the rows' counts
//   stored (migration 0018) or not.
// BM_EngineCompress/<level>/<N>: the compressor alone over N in-memory messages (what a turn
//   costs when HISTORY_WINDOW reaches back over the whole chat), chars4 counter.
// BM_MustFitWorstCase: everything oversized at once with the exact counter: 50 messages at the
//   4 000-character cap, a 1 MB user message, a budget that barely holds the system prompt.

#include <filesystem>
#include <functional>
#include <map>
#include <memory>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <benchmark/benchmark.h>

#include "internal/backend/sqlite/database.h"
#include "internal/backend/sqlite/migrator.h"
#include "internal/backend/sqlite/search_index.h"
#include "internal/backend/sqlite/sqlite_provider.h"
#include "internal/backend/sqlite/stores.h"
#include "internal/engine/context_state_store.h"
#include "internal/engine/engine.h"
#include "internal/engine/level_compressor.h"
#include "internal/tokens/bpe_counter.h"
#include "internal/tokens/memo_counter.h"
#include "internal/tokens/token_counter.h"

namespace {

using namespace autonous;  // NOLINT(google-build-using-namespace): benchmark file

constexpr const char* kSystem = "You are a helpful assistant.";
constexpr const char* kUser = "What did we talk about?";
constexpr double kUsage[] = {0.5, 0.78, 0.9, 2.0};  // one per engine::Level

// Chat-sized word messages (40-400 characters); every fifth one is long (4 000 characters, the
// default per-message cap), so the normal level has oversized messages to cut.
std::string text_of(int64_t i) {
  static constexpr const char* kWords[] = {"the",   "bread", "order",   "Saturday", "chocolate",
                                           "cake",  "we",    "deliver", "fresh",    "sourdough",
                                           "thank", "you",   "what",    "time",     "open?"};
  std::string out = "message " + std::to_string(i);
  const auto target = static_cast<size_t>(i % 5 == 4 ? 4000 : 40 + (i * 37) % 360);
  for (int64_t k = i; out.size() < target; ++k) {
    out += ' ';
    out += kWords[static_cast<size_t>(k * 7 + i) % std::size(kWords)];
  }
  return out;
}

// The exact o200k counter, bare or behind the memo the worker uses (memo_counter.h).
const tokens::TokenCounter& exact_counter(bool memo) {
  static const auto kBare =
      tokens::load_bpe_counter("o200k_base", tokens::kDefaultTokenizerDataDir);
  static const tokens::MemoCounter kMemo(
      tokens::load_bpe_counter("o200k_base", tokens::kDefaultTokenizerDataDir));
  if (memo) return kMemo;
  return *kBare;
}

// Appends `rows` messages to `chat` in one transaction, user and assistant in turn.
void insert_history(SQLite::Database& db, const std::string& chat, int64_t rows,
                    const std::function<std::string(int64_t)>& text) {
  SQLite::Transaction tx(db);
  SQLite::Statement ins(db, "INSERT INTO history(chat_id, role, text) VALUES (?, ?, ?)");
  for (int64_t i = 0; i < rows; ++i) {
    ins.bind(1, chat);
    ins.bind(2, i % 2 == 0 ? "user" : "assistant");
    ins.bind(3, text(i));
    ins.exec();
    ins.reset();
  }
  tx.commit();
}

SQLite::Database& db_with_rows(int64_t rows) {
  static std::map<int64_t, std::unique_ptr<SQLite::Database>> dbs;
  auto& slot = dbs[rows];
  if (slot) return *slot;
  const std::string path = "/tmp/autonous-engine-bench-" + std::to_string(rows) + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  slot = db::open(path, db::OpenOptions{false, std::chrono::milliseconds(5000)});
  db::migrate(*slot);
  // Numbered from the newest, so the newest messages are the same texts whatever the size:
  // chats of different sizes differ only in how much older history they hold.
  insert_history(*slot, "c", rows, [rows](int64_t i) { return text_of(rows - 1 - i); });
  // Indexed for recall, as a worker leaves a chat it has run: a queued backlog would make each
  // build spend its catch-up budget (kCatchUpBudget) indexing, whatever the engine costs.
  store::SearchIndex(*slot).index_all();
  slot->exec("ANALYZE");
  return *slot;
}

// The prompt's cost with everything the builder reads kept whole.
int64_t uncompressed_cost(engine::Provider& provider, const tokens::TokenCounter& counter,
                          int window) {
  std::vector<common::Message> prompt = {{common::Role::kSystem, kSystem, 0}};
  for (auto& m : provider.get_history("c", window, 0)) prompt.push_back(std::move(m));
  prompt.push_back({common::Role::kUser, kUser, 0});
  return counter.count_prompt(prompt);
}

void BM_EngineTurn(benchmark::State& state) {
  const auto level = static_cast<engine::Level>(state.range(0));
  SQLite::Database& db = db_with_rows(state.range(1));
  store::SQLiteProvider provider(db);
  const tokens::TokenCounter& counter = exact_counter(state.range(2) == 1);
  engine::EngineSettings settings;
  settings.context.system_prompt = kSystem;
  settings.context.history_window = 50;
  settings.context.policy.max_tokens = static_cast<int64_t>(
      static_cast<double>(uncompressed_cost(provider, counter, 50)) / kUsage[state.range(0)]);
  // Between compactions: the chat's verbatim part is its newest 50 messages (the state a
  // compaction left), whatever the chat's size.
  const int64_t newest = db.execAndGet("SELECT coalesce(max(id), 0) FROM history").getInt64();
  engine::ContextState at_rest;
  at_rest.verbatim_after = std::max<int64_t>(newest - 50, 0);
  // ... by tokens, so the normal level cuts its oversized messages (#28: the cut mark).
  at_rest.last_reason = engine::CompactionReason::kThreshold;
  at_rest.cut_through = newest;
  store::save_context_state(db, "c", at_rest);
  const engine::Engine builder(store::make_sqlite_storage(db), settings,
                               counter);  // the worker's own wiring (a dry run)
  engine::BuiltContext built;
  for (auto _ : state) {
    built = builder.build("c", kUser);
    benchmark::DoNotOptimize(built.messages.data());
  }
  if (built.figures.level != level)
    state.SkipWithError("the budget did not land in the level's band");
  state.SetLabel(std::string(engine::to_string(built.figures.level)));
  state.counters["kept"] = static_cast<double>(built.figures.compressed_count);
  state.counters["cut"] = static_cast<double>(built.figures.cut_messages);
  state.counters["usage_after"] = static_cast<double>(built.figures.estimated_tokens) /
                                  static_cast<double>(built.figures.budget_tokens);
}
// Chats of 1 000 and 100 000 messages (a 10-message chat cannot reach the upper levels: its
// floor of KEEP_RECENT_MESSAGES holds most of it).
// memo: 0 the bare counter (every turn counts every message), 1 the worker's MemoCounter.
BENCHMARK(BM_EngineTurn)
    ->ArgsProduct({{0, 1, 2, 3}, {1000, 100000}, {0, 1}})
    ->ArgNames({"level", "messages", "memo"})
    ->Unit(benchmark::kMicrosecond);

// Forwards to a counter it does not own (a fresh MemoCounter per iteration over one bare one).
class Borrowed final : public tokens::TokenCounter {
 public:
  explicit Borrowed(const tokens::TokenCounter& inner) : inner_(inner) {}
  int64_t count_text(std::string_view text) const override { return inner_.count_text(text); }
  int64_t per_message() const noexcept override { return inner_.per_message(); }
  int64_t per_request() const noexcept override { return inner_.per_request(); }
  std::string_view name() const noexcept override { return inner_.name(); }

 private:
  const tokens::TokenCounter& inner_;
};

// BM_EngineColdTurn/stored/fresh: a build of a 1 000-message chat with the rows' exact counts
// stored (migration 0018: stored 1) or not (stored 0), the first in a process (fresh 1: a new
// memo each iteration, as after a restart or in a process that has not met the chat) or a later
// one (fresh 0: one memo, warm: what stored counts cost a turn that needs none). Level none,
// the window 50.
void BM_EngineColdTurn(benchmark::State& state) {
  SQLite::Database& db = db_with_rows(1000);
  const tokens::TokenCounter& bare = exact_counter(false);
  if (state.range(0) == 1) {
    SQLite::Transaction tx(db);
    SQLite::Statement rows(db, "SELECT id, text FROM history");
    SQLite::Statement set(db, "UPDATE history SET token_count = ?, token_counter = ? WHERE id = ?");
    while (rows.executeStep()) {
      set.bind(1, bare.count_text(rows.getColumn(1).getString()));
      set.bind(2,
               std::string(bare.name()) + "@" + std::to_string(tokens::MemoCounter::kCountVersion));
      set.bind(3, rows.getColumn(0).getInt64());
      set.exec();
      set.reset();
    }
    tx.commit();
  } else {
    db.exec("UPDATE history SET token_count = NULL, token_counter = NULL");
  }
  store::SQLiteProvider provider(db);
  engine::EngineSettings settings;
  settings.context.system_prompt = kSystem;
  settings.context.history_window = 50;
  settings.context.policy.max_tokens =
      static_cast<int64_t>(static_cast<double>(uncompressed_cost(provider, bare, 50)) / kUsage[0]);
  const int64_t newest = db.execAndGet("SELECT coalesce(max(id), 0) FROM history").getInt64();
  engine::ContextState at_rest;
  at_rest.verbatim_after = std::max<int64_t>(newest - 50, 0);
  store::save_context_state(db, "c", at_rest);
  engine::BuiltContext built;
  const bool fresh = state.range(1) == 1;
  auto memo = std::make_unique<tokens::MemoCounter>(std::make_unique<Borrowed>(bare));
  auto builder = std::make_unique<engine::Engine>(store::make_sqlite_storage(db), settings, *memo);
  if (!fresh) built = builder->build("c", kUser);  // warm
  for (auto _ : state) {
    if (fresh) {
      state.PauseTiming();
      builder.reset();
      memo = std::make_unique<tokens::MemoCounter>(std::make_unique<Borrowed>(bare));
      builder = std::make_unique<engine::Engine>(store::make_sqlite_storage(db), settings, *memo);
      state.ResumeTiming();
    }
    built = builder->build("c", kUser);
    benchmark::DoNotOptimize(built.messages.data());
  }
  state.counters["counted"] = static_cast<double>(built.counted.size());
  state.counters["kept"] = static_cast<double>(built.figures.compressed_count);
}
BENCHMARK(BM_EngineColdTurn)
    ->ArgsProduct({{0, 1}, {1, 0}})
    ->ArgNames({"stored", "fresh"})
    ->Unit(benchmark::kMicrosecond);

void BM_EngineCompress(benchmark::State& state) {
  const auto level = static_cast<engine::Level>(state.range(0));
  std::vector<common::Message> messages;
  for (int64_t i = 0; i < state.range(1); ++i)
    messages.push_back(
        {i % 2 == 0 ? common::Role::kUser : common::Role::kAssistant, text_of(i), i + 1});
  const tokens::CharsOver4Counter counter(tokens::kFramingPerMessage, tokens::kFramingPerRequest);
  int64_t total = 0;
  for (const auto& m : messages) total += counter.count_message(m);
  const engine::LevelCompressor compressor(counter);
  engine::TokenBudget budget;
  budget.max_tokens = static_cast<int64_t>(static_cast<double>(total) / kUsage[state.range(0)]);
  budget.max_chars = 4000;
  engine::Compression out;
  for (auto _ : state) {
    out = compressor.compress(messages, budget);
    benchmark::DoNotOptimize(out.messages.data());
  }
  if (out.level != level) state.SkipWithError("the budget did not land in the level's band");
  state.SetLabel(std::string(engine::to_string(out.level)));
  state.counters["kept"] = static_cast<double>(out.messages.size());
  state.SetItemsProcessed(state.iterations() * state.range(1));
}
BENCHMARK(BM_EngineCompress)
    ->ArgsProduct({{0, 1, 2, 3}, {10, 1000, 100000}})
    ->ArgNames({"level", "messages"})
    ->Unit(benchmark::kMicrosecond);

void BM_MustFitWorstCase(benchmark::State& state) {
  // 50 messages at the 4 000-character cap, all oversized for a budget this small.
  static SQLite::Database& db = []() -> SQLite::Database& {
    SQLite::Database& d = db_with_rows(0);
    insert_history(d, "w", 50, [](int64_t i) {
      std::string t;
      for (int64_t k = 0; t.size() < 4000; ++k) t += text_of(i * 100 + k * 5 + 1) + " ";
      return t;
    });
    return d;
  }();
  const tokens::TokenCounter& counter = exact_counter(false);
  engine::EngineSettings settings;
  settings.context.system_prompt = kSystem;
  settings.context.policy.max_tokens = state.range(0);
  const engine::Engine builder(store::make_sqlite_storage(db), settings, counter);
  std::string user;
  if (state.range(1) != 0)
    for (int64_t k = 0; user.size() < 1'000'000; ++k) user += text_of(k * 5 + 1) + " ";
  else
    user = kUser;
  engine::BuiltContext built;
  for (auto _ : state) {
    built = builder.build("w", user);
    benchmark::DoNotOptimize(built.messages.data());
  }
  if (built.figures.estimated_tokens > built.figures.budget_tokens)
    state.SkipWithError("MustFit broken");
  state.SetLabel(std::string(engine::to_string(built.figures.level)));
  state.counters["kept"] = static_cast<double>(built.figures.compressed_count);
  state.counters["cut"] = static_cast<double>(built.figures.cut_messages);
  state.counters["user_cut"] = built.figures.user_truncated ? 1 : 0;
}
// budget tokens, 1 MB user message or not
BENCHMARK(BM_MustFitWorstCase)
    ->Args({8000, 0})
    ->Args({2000, 0})
    ->Args({600, 0})
    ->Args({8000, 1})
    ->Args({600, 1})
    ->ArgNames({"budget", "mb_user"})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

// main(): bench/bench_main.cpp
