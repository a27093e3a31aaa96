#pragma once
// EventLog: appends typed events to the `events` table and reads them back.
// Payloads are JSON object text; append() refuses anything else so `json_extract` always works.
// Holds no connection: callers pass theirs, inside their own transaction when they have one.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace autonous::events {

struct Event {
  std::string type;
  std::optional<int64_t> task_id;
  std::optional<std::string> chat_id;
  std::optional<int64_t> parent_id;
  std::string payload = "{}";  // JSON object text
  // When it happened, in Unix ms; 0 means "now" (the insert's time). Events buffered until a
  // commit set it, so created_at tells when the step happened, not when it was written.
  int64_t at_unix_ms = 0;
};

struct StoredEvent {
  int64_t id = 0;
  std::string created_at;
  Event event;
};

struct EventFilter {
  std::optional<int64_t> task_id;
  std::optional<std::string> type;
  int64_t after_id = 0;  // only events with a larger id
  int limit = 1000;
};

// One JSON line for `autonous events`: id, created_at, type, task_id, chat_id, parent_id,
// payload (as an object).
std::string to_json_line(const StoredEvent& e);

// `json_text` (valid JSON) with C1 controls (U+0080-U+009F, e.g. U+009B, a one-character
// escape-sequence start some terminals honour) written as \u escapes: JSON escapes C0 controls
// already, so the text is then safe to print to a terminal.
std::string escape_c1(const std::string& json_text);

}  // namespace autonous::events
