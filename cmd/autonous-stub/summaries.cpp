#include "cmd/autonous-stub/summaries.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <vector>

namespace autonous::stub {
namespace {

// Whether `line` states a fact: holds a digit or the word "name".
bool states_fact(const std::string& line) {
  std::string lower = line;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return lower.find("name") != std::string::npos ||
         std::any_of(line.begin(), line.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

}  // namespace

bool is_summary_request(const json& messages) {
  // autonous's summarizer requests start with this system text (worker/llm_summarizer.cpp).
  const auto& first = messages.empty() ? json() : messages[0];
  return first.is_object() && first.value("role", "") == "system" &&
         first.value("content", "").rfind("You maintain a running summary", 0) == 0;
}

bool is_summary_fault(const Fault& fault) { return fault.kind.rfind("sum", 0) == 0; }

std::string stub_summary(const std::string& input) {
  // The transcript (worker/llm_summarizer.cpp): the previous summary's "- user: ..." lines, then
  // one JSON object per message. Facts the user stated are kept, as "user: <text>".
  std::vector<std::string> lines;
  std::set<std::string> seen;
  size_t pos = 0;
  while (pos <= input.size()) {
    size_t end = input.find('\n', pos);
    if (end == std::string::npos) end = input.size();
    std::string line = input.substr(pos, end - pos);
    pos = end + 1;
    const json message = json::parse(line, nullptr, false);
    if (message.is_object() && message.value("role", "") == "user" && message.contains("content") &&
        message["content"].is_string())
      line = "user: " + message["content"].get<std::string>();
    while (!line.empty() && (line[0] == '-' || line[0] == ' ')) line.erase(0, 1);
    const bool fact = states_fact(line);
    if (line.size() > 200) line.resize(200);
    if (!fact || line.rfind("user:", 0) != 0 || !seen.insert(line).second) continue;
    lines.push_back(line);
  }
  if (lines.size() > 40) lines.erase(lines.begin(), lines.end() - 40);
  std::string out = "Facts stated:";
  for (const auto& l : lines) out += "\n- " + l;
  return out;
}

std::optional<bool> answer_summary_fault(int fd, const Fault& fault, ReplyShape& shape) {
  const std::string& k = fault.kind;
  if (k == "sumgarbage") shape.content = "   ";
  if (k == "sumhang") {
    wait_for_peer_close(fd, Clock::time_point::max());
    return false;
  }
  if (k == "sum500")
    return send_all(fd, response(500, openai_error("stub fault", "server_error", nullptr)));
  return std::nullopt;
}

}  // namespace autonous::stub
