// Turn::stream_into (turn.h): STREAM_REPLIES' partial replies.

#include <spdlog/spdlog.h>

#include "internal/worker/turn.h"

namespace autonous::worker {

void Turn::stream_into(openai::CallOptions& call, const queue::Task& task) const {
  if (!parts_.config.stream_replies || !parts_.write_partial) return;
  call.stream = true;
  const auto every = parts_.config.stream_flush;
  auto last = std::make_shared<std::chrono::steady_clock::time_point>();
  call.on_text = [this, &task, every, last](const std::string& text) {
    const auto now = std::chrono::steady_clock::now();
    if (*last != std::chrono::steady_clock::time_point() && now - *last < every) return;
    *last = now;
    try {
      parts_.write_partial(task, text);
    } catch (const std::exception& e) {
      // A partial reply is a courtesy: the call goes on, the final reply is stored as always.
      spdlog::warn("could not store the partial reply task_id={} ({})", task.id, e.what());
    }
  };
}

}  // namespace autonous::worker
