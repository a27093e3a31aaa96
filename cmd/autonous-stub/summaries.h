#pragma once
// Summary requests (autonous's summarizer: the system message starts "You maintain a running
// summary") get a deterministic summary: the user lines holding a digit or "name". Faults for
// them only, counted by directive: sum500 · sumgarbage (blank content) · sumhang (no answer) ·
// sumslow:MS (answers after MS milliseconds).

#include <optional>
#include <string>

#include "cmd/autonous-stub/faults.h"
#include "cmd/autonous-stub/http.h"
#include "cmd/autonous-stub/replies.h"

namespace autonous::stub {

// Whether `messages` (a JSON array) is a summarizer request.
bool is_summary_request(const json& messages);

// Whether `fault` is one of the sum* faults, the only ones summary requests get.
bool is_summary_fault(const Fault& fault);

// The deterministic "summary" of a summarizer request: every "user:" line of its input (the new
// messages, or the previous summary's list) that holds a digit or the word "name" (the facts a
// test or bench plants), without list markers, at most 200 bytes each, each once, the newest 40
// kept. It checks autonous's plumbing, not a model's quality.
std::string stub_summary(const std::string& input);

// Answers a summary request on fd with a sum* `fault`, as answer_fault does.
std::optional<bool> answer_summary_fault(int fd, const Fault& fault, ReplyShape& shape);

}  // namespace autonous::stub
