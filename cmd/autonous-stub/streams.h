#pragma once
// Streamed replies in the stub (#32): a chat request with "stream": true gets its completion as
// server-sent events, as OpenAI sends them (Content-Type: text/event-stream, chunked): a first
// chunk with the role, the content in pieces, tool calls in fragments, a chunk with the
// finish_reason, then, when stream_options.include_usage, one with usage and no choices, then
// `data: [DONE]`. Faults in the user's message shape the stream:
//   slowstream:MS (a piece a word, MS apart) · sse-utf8 (every event written in two reads split
//   inside a multi-byte character) · sse-empty (empty deltas and keep-alive comments between
//   pieces) · sse-error (an error event after the first piece, OpenRouter's mid-stream
//   failure) · sse-break (the connection closed after the first piece, no [DONE]) · sse-hang
//   (nothing more after the first piece until the client gives up) · nostream (the provider
//   ignores "stream": one JSON body).

#include <optional>

#include "cmd/autonous-stub/faults.h"
#include "cmd/autonous-stub/http.h"

namespace autonous::stub {

// True when `body` asks for a stream and `fault` does not say to ignore it.
bool wants_stream(const json& body, const std::optional<Fault>& fault);

// Streams `reply` (a chat.completion object) on fd; false when the connection is to close.
bool stream_reply(int fd, const json& body, const json& reply, const std::optional<Fault>& fault);

}  // namespace autonous::stub
