#include "internal/common/text.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace autonous::common {
namespace {

bool is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

}  // namespace

std::string trim(std::string_view s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

std::string to_lower_ascii(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  return s;
}

void defuse_block_tags(std::string& text) {
  constexpr std::array<std::string_view, 5> kTags = {"conversation_summary", "recalled_messages",
                                                     "documents", "pinned_facts", "custom_context"};
  const auto space = [&](size_t i) {
    return i < text.size() && std::isspace(static_cast<unsigned char>(text[i]));
  };
  for (size_t at = text.find('<'); at != std::string::npos; at = text.find('<', at + 1)) {
    // "<tag", "</tag", "< / tag": a whole tag name, ended by '>', '/', a space or the text's end.
    size_t name = at + 1;
    while (space(name)) ++name;
    if (name < text.size() && text[name] == '/') ++name;
    while (space(name)) ++name;
    for (const std::string_view tag : kTags) {
      if (text.size() - name < tag.size()) continue;
      bool same = true;
      for (size_t i = 0; i < tag.size() && same; ++i)
        same = std::tolower(static_cast<unsigned char>(text[name + i])) == tag[i];
      const size_t after = name + tag.size();
      if (same && after < text.size() && text[after] != '>' && text[after] != '/' && !space(after))
        same = false;
      if (!same) continue;
      text.replace(at, 1, "\u2039");  // '‹': reads the same, is no tag
      break;
    }
  }
}

}  // namespace autonous::common
