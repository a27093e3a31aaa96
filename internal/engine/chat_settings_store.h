#pragma once
// The chat_settings table: a chat's own context settings and its clear point, and its pins.
// Writers validate before they save overrides; readers validate again (a row may be written by
// hand). Each backend stores them (backend/sqlite/stores.h, backend/postgres/stores.h).

#include <cstdint>
#include <string>

namespace autonous::engine {

// A chat's pinned facts (chat_pins), oldest first: what `chat show` lists and every prompt of
// the chat carries. `chat clear` keeps them.
struct Pin {
  int64_t id = 0;
  std::string text;
  std::string created_at;
};

}  // namespace autonous::engine
