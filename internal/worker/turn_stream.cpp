// Turn::stream_into (turn.h): STREAM_REPLIES' partial replies.

#include <spdlog/spdlog.h>

#include "internal/common/log.h"
#include "internal/openai/client.h"
#include "internal/openai/http_transport.h"
#include "internal/worker/turn.h"

namespace autonous::worker {

void Turn::stream_into(openai::CallOptions& call, const queue::Task& task) const {
  if (!parts_.config.stream_replies || !parts_.write_partial) return;
  call.stream = true;
  call.on_text_every = parts_.config.stream_flush;
  call.on_text = [this, &task](const std::string& text) {
    try {
      parts_.write_partial(task, text);
    } catch (const std::exception& e) {
      // A partial reply is a courtesy: the call goes on, the final reply is stored as always.
      log::warn("could not store the partial reply", {{"task_id", task.id}, {"error", e.what()}});
    }
  };
}

}  // namespace autonous::worker
