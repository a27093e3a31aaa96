#include "internal/events/event_log.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

namespace autonous::events {

std::string to_json_line(const StoredEvent& e) {
  nlohmann::ordered_json j;
  j["id"] = e.id;
  j["created_at"] = e.created_at;
  j["type"] = e.event.type;
  j["task_id"] = e.event.task_id ? nlohmann::ordered_json(*e.event.task_id) : nullptr;
  j["chat_id"] = e.event.chat_id ? nlohmann::ordered_json(*e.event.chat_id) : nullptr;
  j["parent_id"] = e.event.parent_id ? nlohmann::ordered_json(*e.event.parent_id) : nullptr;
  j["payload"] = nlohmann::ordered_json::parse(e.event.payload, nullptr, false);
  return escape_c1(j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
}

std::string escape_c1(const std::string& line) {
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    const auto u = static_cast<unsigned char>(line[i]);
    if (u == 0xC2 && i + 1 < line.size() &&
        (static_cast<unsigned char>(line[i + 1]) & 0xE0) == 0x80) {
      static constexpr char kHex[] = "0123456789abcdef";
      const auto c = static_cast<unsigned char>(line[++i]);
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    } else {
      out += line[i];
    }
  }
  return out;
}

}  // namespace autonous::events
