#include "internal/engine/tool_units.h"

#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace autonous::engine {
namespace {

using common::Role;

struct Calls {
  std::vector<std::string> ids;    // in the model's order; empty when unreadable
  std::vector<std::string> names;  // for the text of a call that loses its calls
};

Calls read_calls(const std::string& text) {
  Calls out;
  const nlohmann::json calls = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (calls.is_discarded() || !calls.is_array()) return out;
  for (const auto& c : calls) {
    if (!c.is_object() || !c.contains("id") || !c["id"].is_string()) return {};
    out.ids.push_back(c["id"].get<std::string>());
    const auto f = c.find("function");
    if (f != c.end() && f->is_object() && f->contains("name") && (*f)["name"].is_string())
      out.names.push_back((*f)["name"].get<std::string>());
  }
  return out;
}

// The id it claimed stays (a user message's is never sent): it marks the message as no start
// for kept history (compaction.h, user_start).
void as_user_text(common::Message& m) {
  m.role = Role::kUser;
  m.content.insert(0, kToolOutputHeader);
}

void drop_calls(common::Message& m, const Calls& calls) {
  if (m.content.empty()) {
    std::string names;
    for (const std::string& n : calls.names) names += (names.empty() ? "" : ", ") + n;
    m.content = "[called tools: " + (names.empty() ? std::string("unknown") : names) + "]";
  }
  m.tool_calls.clear();
}

}  // namespace

void pair_tool_units(std::vector<common::Message>& messages, bool tools_offered) {
  size_t lead = 0;
  while (lead < messages.size() && messages[lead].role == Role::kTool &&
         !messages[lead].tool_call_id.empty())
    ++lead;
  messages.erase(messages.begin(), messages.begin() + static_cast<ptrdiff_t>(lead));
  for (size_t i = 0; i < messages.size(); ++i) {
    common::Message& m = messages[i];
    if (m.role == Role::kTool) {  // not after a valid unit's call: an orphan
      as_user_text(m);
      continue;
    }
    if (m.role != Role::kAssistant) {
      m.tool_calls.clear();  // only an assistant message calls tools
      continue;
    }
    if (m.tool_calls.empty()) continue;
    const Calls calls = read_calls(m.tool_calls);
    const std::set<std::string> wanted(calls.ids.begin(), calls.ids.end());
    // The unit's results: the tool messages right after it that each answer one of its calls
    // not answered yet; the first that does not ends the run (a front end's row, a repeat).
    std::set<std::string> answered;
    size_t end = i + 1;
    while (end < messages.size() && messages[end].role == Role::kTool &&
           wanted.count(messages[end].tool_call_id) == 1 &&
           answered.insert(messages[end].tool_call_id).second)
      ++end;
    const bool valid =
        !calls.ids.empty() && wanted.size() == calls.ids.size() && answered.size() == wanted.size();
    if (valid && tools_offered) {
      i = end - 1;  // the unit stays whole
      continue;
    }
    drop_calls(m, calls);
    for (size_t j = i + 1; j < end; ++j) as_user_text(messages[j]);
    if (valid && end > i + 2) {  // no tools offered: the results as one user message
      for (size_t j = i + 2; j < end; ++j) messages[i + 1].content += "\n\n" + messages[j].content;
      messages.erase(messages.begin() + static_cast<ptrdiff_t>(i + 2),
                     messages.begin() + static_cast<ptrdiff_t>(end));
      end = i + 2;
    }
    i = end - 1;
  }
}

}  // namespace autonous::engine
