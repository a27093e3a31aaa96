#pragma once
// StreamAssembler: a chat completion streamed as server-sent events (`stream: true`), put back
// together as the chat.completion object the non-streamed call returns, so one parser reads
// both (client.cpp). Fed the body's bytes as they arrive, in pieces cut anywhere (a UTF-8
// character or a line split between two reads is joined first). It reads `data:` lines (CRLF
// or LF; an event's data over several lines is joined), ignores comments (`:`) and other
// fields, stops at `data: [DONE]`, and joins per
// choice 0: the content and refusal deltas, the tool calls' fragments by index (id, name,
// arguments), the finish_reason, the model, and usage from whichever chunk carries it
// (stream_options.include_usage sends it last, with no choices). An error object in the stream
// (a provider's failure after the 200: `data: {"error": …}` or `event: error`) makes the result
// that error object. A body that is not a stream (a provider that ignores `stream`: one JSON
// object) is left alone: streaming() stays false. Not thread-safe.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace autonous::openai {

// An event's data at most this long (a longer one is a chunk lost: the stream is broken).
inline constexpr size_t kMaxEventBytes = 1u << 20;

class StreamAssembler {
 public:
  // Reads the next bytes of the body. Returns true when the reply's text grew.
  bool feed(std::string_view bytes);
  // True once the body reads as an event stream (its first byte is not '{' or '[').
  bool streaming() const noexcept { return streaming_; }
  // True once `data: [DONE]` came, or a chunk said finish_reason, or an error object came.
  bool ended() const noexcept { return done_ || !finish_reason_.empty() || error_.has_value(); }
  // True when an event's data never read as a JSON object: a piece of the reply may be missing.
  bool lost() const noexcept { return lost_ || !data_.empty(); }
  // The reply's text so far (content deltas joined; the refusal's when there is no content).
  const std::string& text() const noexcept { return content_; }
  // The chat.completion object the stream adds up to (or {"error": …} after an error event).
  std::string completion_json() const;

 private:
  void line(std::string_view l);
  void dispatch(nlohmann::json chunk);
  void event(const nlohmann::json& chunk);

  bool decided_ = false;
  bool streaming_ = false;
  bool done_ = false;
  bool lost_ = false;
  std::string data_;        // the current event's data lines that do not read as JSON yet
  std::string pending_;     // a line not yet ended
  std::string event_name_;  // the current event's `event:` field
  std::string id_;
  std::string model_;
  std::string content_;
  std::string refusal_;
  std::string finish_reason_;
  nlohmann::json tool_calls_ = nlohmann::json::array();
  std::optional<nlohmann::json> usage_;
  std::optional<nlohmann::json> error_;
};

}  // namespace autonous::openai
