// A Session on DATABASE_URL's PostgreSQL: a pooled db::pg::Connection (the process's pool,
// pool.h: a connection borrowed per statement or transaction), which a server restart, a
// failover or a terminated session can break; reconnect() borrows a sound one again. Also
// the dashboard's PageDb, and the follow feed that waits out gaps in the event ids.
#include <algorithm>
#include <chrono>
#include <thread>

#include "internal/backend/drivers.h"
#include "internal/backend/postgres/connection.h"
#include "internal/backend/postgres/events.h"
#include "internal/backend/postgres/migrator.h"
#include "internal/backend/postgres/page_db.h"
#include "internal/backend/postgres/pool.h"
#include "internal/backend/postgres/queue.h"
#include "internal/backend/postgres/reply_outbox.h"
#include "internal/backend/postgres/search.h"
#include "internal/backend/postgres/settled_ids.h"
#include "internal/backend/postgres/stores.h"
#include "internal/engine/engine_storage.h"

namespace autonous::backend {
namespace {

using Clock = std::chrono::steady_clock;

// Ids are given out at insert and transactions commit in any order: an event with a lower id
// may become visible after a higher one was read. Following, a gap in the ids is waited for
// until SettledIds says no transaction that could fill it is still running (a rolled-back
// insert's gap is passed at once), but at most kGapWait (a transaction left open elsewhere holds
// the settled id back). A filtered follow reads the settled events through the filter, then
// every newer one (returning those that match), so its gaps show too.
constexpr std::chrono::seconds kGapWait{5};

// The settled id after waiting up to a second for what is visible now to settle.
int64_t settle_now(events::SettledIds& ids) {
  ids.poll();  // a checkpoint of what is visible now
  const int64_t visible = ids.pending();
  const auto until = Clock::now() + std::chrono::seconds(1);
  while (ids.poll() < visible && !ids.standby() && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (ids.standby()) ids.give_up();  // a replica: what it shows now is what it has
  return ids.settled();
}

class PgFeed final : public EventFeed {
 public:
  PgFeed(db::pg::Connection& c, const events::EventFilter& filter, bool follow)
      : c_(c), want_(filter), follow_(follow), ids_(c) {
    if (!follow_) {
      filter_ = filter;
    } else {
      filter_.limit = filter.limit;
      filter_.after_id = filter.after_id;  // as on SQLite: only events after it
      if (filter.task_id || filter.type) {
        // The settled events through the filter first, then every newer one.
        settled_upto_ = settle_now(ids_);
        filtered_ = want_;
      }
    }
  }

  // A call that throws (a lost connection: the follow connects again and calls once more) leaves
  // the feed where it was, so the events of the batch it read are read again, none skipped.
  std::vector<events::StoredEvent> next(bool& more) override {
    const events::EventFilter filter = filter_;
    const std::optional<events::EventFilter> filtered = filtered_;
    const int64_t settled_upto = settled_upto_;
    const Clock::time_point gap_since = gap_since_;
    try {
      return read(more);
    } catch (...) {
      filter_ = filter;
      filtered_ = filtered;
      settled_upto_ = settled_upto;
      gap_since_ = gap_since;
      throw;
    }
  }

 private:
  std::vector<events::StoredEvent> read(bool& more) {
    more = false;
    if (filtered_) {
      std::vector<events::StoredEvent> out = events::query(c_, *filtered_);
      size_t keep = 0;
      while (keep < out.size() && out[keep].id <= settled_upto_) ++keep;
      const bool full = out.size() == static_cast<size_t>(filtered_->limit);
      if (keep < out.size() || !full) {
        out.resize(keep);
        filtered_.reset();
        filter_.after_id = std::max(filter_.after_id, settled_upto_);
        more = true;  // the newer events follow at once
      } else {
        filtered_->after_id = out.back().id;
        more = true;
      }
      return out;
    }
    const std::vector<events::StoredEvent> batch = events::query(c_, filter_);
    std::vector<events::StoredEvent> out;
    bool gap = false;
    for (const auto& e : batch) {
      if (follow_ && e.id != filter_.after_id + 1 && e.id - 1 > ids_.settled() &&
          ids_.poll() < e.id - 1) {
        const auto now = Clock::now();
        if (gap_since_ == Clock::time_point{}) gap_since_ = now;
        if (now - gap_since_ < kGapWait) {
          gap = true;
          break;
        }
        ids_.give_up();  // a transaction left open: the gaps it holds back are passed too
      }
      gap_since_ = Clock::time_point{};
      if (!follow_ || matches(e)) out.push_back(e);
      filter_.after_id = e.id;
    }
    more = !gap && batch.size() == static_cast<size_t>(filter_.limit);
    return out;
  }

 private:
  bool matches(const events::StoredEvent& e) const {
    return (!want_.task_id || e.event.task_id == want_.task_id) &&
           (!want_.type || e.event.type == *want_.type);
  }

  db::pg::Connection& c_;
  const events::EventFilter want_;
  const bool follow_;
  events::SettledIds ids_;
  events::EventFilter filter_;                   // what is read next
  std::optional<events::EventFilter> filtered_;  // a filtered follow's settled part, while read
  int64_t settled_upto_ = 0;
  Clock::time_point gap_since_{};  // when the first unreturned gap was seen; {} none
};

std::unique_ptr<db::pg::Connection> migrated_then_pooled(const std::string& url, int pool_size,
                                                         bool migrate) {
  if (migrate) db::pg_migrate(*db::pg::Connection::open(url));
  return db::pg::Connection::pooled(db::pg::Pool::shared(url, pool_size));
}

class PgSession final : public Session, public EventLog, public ChatAdmin {
 public:
  // Migrates on a connection of its own (the migrator holds a session lock), then borrows from
  // the process's pool.
  PgSession(const std::string& url, int pool_size, bool migrate)
      : c_(migrated_then_pooled(url, pool_size, migrate)),
        queue_(*c_, &pair_indexed_),
        outbox_(*c_) {}

  queue::TaskQueue& queue() override { return queue_; }
  queue::ReplyOutbox& outbox() override { return outbox_; }
  std::unique_ptr<engine::EngineStorage> engine_storage() override {
    return store::make_pg_storage(*c_, &pair_indexed_);
  }
  bool lost() const noexcept override { return c_->broken(); }
  bool transient(const std::exception& error) const noexcept override {
    if (c_->broken()) return true;
    const auto* pg = dynamic_cast<const db::pg::PgError*>(&error);
    return pg != nullptr && pg->transient();
  }
  int64_t reconnect() override {
    c_->reconnect();
    return queue_.after_reconnect();
  }
  void check_still_there() override {}  // a server's database cannot be unlinked under us

  bool write_if(const std::function<bool()>& body) override {
    db::pg::Transaction tx(*c_);
    queue_.transaction_begins();
    if (!body()) return false;  // rolled back
    queue_.commit(tx);          // claims confirmed, endings notified
    return true;
  }
  EventLog& events() override { return *this; }
  ChatAdmin& chats() override { return *this; }
  int schema_version() override { return db::pg_schema_version(*c_); }
  int64_t index_search() override { return store::PgSearchIndex(*c_).index_all(); }

  // EventLog
  int64_t append(const events::Event& event) override { return events::append(*c_, event); }
  std::vector<events::StoredEvent> query(const events::EventFilter& filter) override {
    return events::query(*c_, filter);
  }
  std::vector<events::EstimateStats> estimate_stats(const events::StatsFilter& filter) override {
    return events::estimate_stats(*c_, filter);
  }
  events::CompressionStats compression_stats(const events::StatsFilter& filter) override {
    return events::compression_stats(*c_, filter);
  }
  std::vector<events::CostStats> cost_stats(const events::StatsFilter& filter) override {
    return events::cost_stats(*c_, filter);
  }
  std::unique_ptr<EventFeed> feed(const events::EventFilter& filter, bool follow) override {
    return std::make_unique<PgFeed>(*c_, filter, follow);
  }

  // ChatAdmin
  engine::ChatState chat_state(const std::string& chat) override {
    return store::make_pg_storage(*c_)->provider().chat_state(chat);
  }
  std::vector<engine::Pin> pins(const std::string& chat) override {
    return store::load_pins(*c_, chat);
  }
  void save_overrides(const std::string& chat, const std::string& settings_json) override {
    store::save_overrides(*c_, chat, settings_json);
  }
  bool reset_overrides(const std::string& chat) override {
    return store::reset_overrides(*c_, chat);
  }
  int64_t clear_context(const std::string& chat) override {
    return store::clear_context(*c_, chat);
  }
  int64_t add_pin(const std::string& chat, const std::string& text) override {
    return store::add_pin(*c_, chat, text);
  }
  bool remove_pin(const std::string& chat, int64_t pin_id) override {
    return store::remove_pin(*c_, chat, pin_id);
  }
  std::vector<engine::LearnedLimitRow> learned_limits() override {
    return store::learned_limits(*c_);
  }
  int64_t forget_limits() override { return store::forget_limits(*c_); }

 private:
  std::unique_ptr<db::pg::Connection> c_;
  // Set by queue_'s completion that indexed the turn's rows itself, for the engine storage's
  // write in the same transaction (PgSearchIndex::index_in_transaction); declared before both.
  bool pair_indexed_ = false;
  queue::PgQueue queue_;
  queue::PgOutbox outbox_;
};

}  // namespace

// A session whose first statements fail because the server ended it at once (a restart, a
// terminated session, a failover) is opened again, up to three tries: a worker (re)started in
// that instant starts instead of exiting. A server that cannot be reached still fails (after
// about half a second).
std::unique_ptr<Session> open_pg_session(const std::string& url, int pool_size,
                                         const OpenOptions& options) {
  for (int tries = 1;; ++tries) {
    try {
      return std::make_unique<PgSession>(url, pool_size, options.migrate);
    } catch (const db::pg::PgError& e) {
      if (tries >= 3 || !(e.sqlstate().empty() || e.transient())) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  }
}

std::unique_ptr<ops::PageDb> open_pg_page_db(const std::string& url) {
  return ops::pg_page_db(db::pg::Connection::open(url));
}

}  // namespace autonous::backend
