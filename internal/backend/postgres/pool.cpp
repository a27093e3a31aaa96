#include "internal/backend/postgres/pool.h"

#include <map>
#include <stdexcept>

#include "internal/backend/postgres/connection.h"

namespace autonous::db::pg {

Pool::Pool(std::string url, int size, std::chrono::milliseconds wait)
    : url_(std::move(url)), size_(size), wait_(wait) {
  if (size_ < 1) throw std::invalid_argument("a connection pool needs at least one connection");
}

Pool::~Pool() = default;

std::shared_ptr<Pool> Pool::shared(const std::string& url, int size) {
  static std::mutex m;
  static std::map<std::string, std::weak_ptr<Pool>> pools;
  const std::lock_guard lock(m);
  std::weak_ptr<Pool>& slot = pools[url];
  if (std::shared_ptr<Pool> p = slot.lock()) return p;
  auto p = std::make_shared<Pool>(url, size);
  slot = p;
  return p;
}

std::unique_ptr<Connection> Pool::take() {
  std::vector<std::unique_ptr<Connection>> stale;  // closed outside the lock
  uint64_t generation = 0;
  {
    std::unique_lock lock(m_);
    const auto until = std::chrono::steady_clock::now() + wait_;
    for (;;) {
      while (!idle_.empty()) {
        Idle i = std::move(idle_.back());  // the warmest
        idle_.pop_back();
        if (i.generation == generation_ && i.c->idle_and_sound()) {
          lent_[i.c.get()] = i.generation;
          return std::move(i.c);
        }
        stale.push_back(std::move(i.c));
        --open_;
      }
      if (open_ < size_) break;
      if (freed_.wait_until(lock, until) == std::cv_status::timeout && idle_.empty() &&
          open_ >= size_)
        throw PgError("PostgreSQL: all " + std::to_string(size_) +
                          " connections of the pool (DATABASE_POOL_SIZE) stayed busy for " +
                          std::to_string(wait_.count()) + " ms",
                      "53300");
    }
    ++open_;
    generation = generation_;
  }
  try {
    std::unique_ptr<Connection> c = Connection::open(url_);
    const std::lock_guard lock(m_);
    lent_[c.get()] = generation;
    return c;
  } catch (...) {
    {
      const std::lock_guard lock(m_);
      --open_;
    }
    freed_.notify_one();
    throw;
  }
}

void Pool::give(std::unique_ptr<Connection> c) {
  {
    const std::lock_guard lock(m_);
    const auto it = lent_.find(c.get());
    const uint64_t generation = it != lent_.end() ? it->second : 0;
    if (it != lent_.end()) lent_.erase(it);
    if (generation == generation_) {
      idle_.push_back({std::move(c), generation});
    } else {
      --open_;  // opened before a break: closed (below, outside the lock)
    }
  }
  c.reset();
  freed_.notify_one();
}

void Pool::drop(std::unique_ptr<Connection> c, bool retire) {
  {
    const std::lock_guard lock(m_);
    const auto it = lent_.find(c.get());
    if (it != lent_.end()) {
      if (retire && it->second == generation_) ++generation_;  // (an older one retires nothing)
      lent_.erase(it);
    }
    --open_;
  }
  c.reset();
  freed_.notify_one();
}

void Pool::retire() {
  const std::lock_guard lock(m_);
  ++generation_;
}

int Pool::open_now() {
  const std::lock_guard lock(m_);
  return open_;
}

}  // namespace autonous::db::pg
