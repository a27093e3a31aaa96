#pragma once
// Every event type string, once. Operators filter on these with `autonous events --type`.

#include <string_view>

namespace autonous::events {

inline constexpr std::string_view kAgentStarted = "agent.started";    // task claimed
inline constexpr std::string_view kAgentReleased = "agent.released";  // lease given back (shutdown)
inline constexpr std::string_view kTurnStarted = "turn.started";
inline constexpr std::string_view kContextCompressed = "context.compressed";
// Something about the context the operator should know: a strategy that fell back, chat
// settings that were ignored. Recorded before the turn's context.compressed.
inline constexpr std::string_view kContextWarning = "context.warning";
// The summarize strategy: a compaction folded older history into a new summary, or failed (the
// leaving messages are dropped; a back-off decides when a compaction tries again).
inline constexpr std::string_view kContextSummarized = "context.summarized";
inline constexpr std::string_view kContextSummaryFailed = "context.summary_failed";
// A provider refused a prompt as too long: the budget learned for its endpoint and model.
inline constexpr std::string_view kContextLimitLearned = "context.limit_learned";
inline constexpr std::string_view kLlmRequest = "llm.request";
inline constexpr std::string_view kLlmResponse = "llm.response";
inline constexpr std::string_view kLlmRetry = "llm.retry";
// An attempt answered by OPENAI_FALLBACK_MODEL: the main model's attempts before it kept
// failing with provider errors (worker/fallback.h).
inline constexpr std::string_view kLlmFallback = "llm.fallback";
// A tool the model called, run (#29): name, source, tool_call_id, latency, status, result size.
inline constexpr std::string_view kToolCall = "tool.call";
inline constexpr std::string_view kTurnCompleted = "turn.completed";
inline constexpr std::string_view kTurnFailed = "turn.failed";
inline constexpr std::string_view kTaskRequeued = "task.requeued";  // `autonous requeue`
// A task cancelled (`autonous cancel`, or a front end's UPDATE): written by the database's
// trigger (migrations/*/0020) in the cancelling transaction: {was, attempts}.
inline constexpr std::string_view kTaskCancelled = "task.cancelled";
// The reply webhook (worker/reply_webhook.h): {attempt, ending, status, latency_ms} and
// {attempt, ending, error, status?, final, retry_in_ms?}.
inline constexpr std::string_view kReplyDelivered = "reply.delivered";
inline constexpr std::string_view kReplyDeliveryFailed = "reply.delivery_failed";
inline constexpr std::string_view kChatSettings = "chat.settings";  // `autonous chat set|reset`
inline constexpr std::string_view kChatCleared = "chat.cleared";    // `autonous chat clear`

}  // namespace autonous::events
