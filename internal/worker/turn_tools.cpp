// Turn's tool loop (#29): the model's calls run, their results appended, the model called again.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "internal/engine/built_context.h"
#include "internal/engine/compaction.h"
#include "internal/openai/client.h"
#include "internal/openai/errors.h"
#include "internal/tokens/scaled_counter.h"
#include "internal/tokens/truncate.h"
#include "internal/tools/mcp_client.h"
#include "internal/tools/toolset.h"
#include "internal/worker/turn.h"

namespace autonous::worker {

using Kind = TurnOutcome::Kind;
using std::chrono::milliseconds;

int64_t Turn::result_cap(const engine::BuiltContext& built) const {
  if (parts_.config.tool_result_max_tokens > 0) return parts_.config.tool_result_max_tokens;
  return std::clamp<int64_t>(built.figures.budget_tokens / 4, 64, kMaxToolResultTokens);
}

namespace {

bool wire_id(const std::string& id) {
  if (id.empty() || id.size() > kMaxToolCallIdBytes) return false;
  for (const unsigned char c : id)
    if (!(std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == ':')) return false;
  return true;
}

void strip_nul(nlohmann::json& j) {
  if (j.is_string()) {
    std::string& s = j.get_ref<std::string&>();
    s.erase(std::remove(s.begin(), s.end(), '\0'), s.end());
  } else if (j.is_array() || j.is_object()) {
    for (auto& x : j) strip_nul(x);
  }
}

// Makes the calls storable and replayable whatever the server sent: an id that repeats one of
// the task's (servers that number each reply's calls from 0), is empty, long or not plain
// ASCII becomes "call_" and 9 random letters and digits; NUL is removed from every field (a
// JSON column refuses it); arguments that are not a JSON object, or are over
// kMaxToolArgumentBytes, are stored as {} (the call is not run: its result says why), as
// servers parse every replayed call's arguments. The calls' JSON follows.
void sanitize_calls(openai::ChatResult& asked, std::set<std::string>& used) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr std::string_view kAlnum =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  nlohmann::json calls = nlohmann::json::parse(asked.tool_calls_json, nullptr, false);
  if (!calls.is_array() || calls.size() != asked.tool_calls.size()) {
    // Written again from the parsed calls, so that the stored calls are the ones run.
    calls = nlohmann::json::array();
    for (const openai::ToolCall& c : asked.tool_calls)
      calls.push_back({{"id", c.id},
                       {"type", "function"},
                       {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  }
  // At most kMaxToolCallsPerReply calls are kept: the rest are neither run nor stored (their
  // JSON alone could outgrow every later request).
  if (asked.tool_calls.size() > kMaxToolCallsPerReply) {
    asked.tool_calls.resize(kMaxToolCallsPerReply);
    if (calls.is_array())
      calls.erase(calls.begin() + static_cast<ptrdiff_t>(kMaxToolCallsPerReply), calls.end());
  }
  if (calls.is_array()) strip_nul(calls);
  for (size_t i = 0; i < asked.tool_calls.size(); ++i) {
    openai::ToolCall& c = asked.tool_calls[i];
    while (!wire_id(c.id) || !used.insert(c.id).second) {
      c.id = "call_";
      for (int k = 0; k < 9; ++k) c.id += kAlnum[rng() % kAlnum.size()];
    }
    const nlohmann::json args = nlohmann::json::parse(c.arguments, nullptr, false);
    const bool usable = args.is_object() && c.arguments.size() <= kMaxToolArgumentBytes;
    if (!calls.is_array() || !calls[i].is_object()) continue;
    calls[i]["id"] = c.id;
    if (!usable && calls[i].contains("function") && calls[i]["function"].is_object())
      calls[i]["function"]["arguments"] = "{}";
  }
  if (calls.is_array())
    asked.tool_calls_json = calls.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

ToolRun Turn::run_tool(const openai::ToolCall& call, const engine::ToolNames& tools,
                       const std::function<bool()>& keep_going, common::Message& result) {
  ToolRun run;
  run.id = call.id;
  run.name = call.name;
  const std::optional<tools::OfferedTool> tool =
      parts_.toolset != nullptr ? parts_.toolset->find(call.name, tools) : std::nullopt;
  if (!tool || (tool->http != nullptr && !parts_.tool_post)) {
    run.error = "no tool named " + call.name;
    result.content = "error: there is no tool named \"" + call.name + "\"";
    return run;
  }
  if (call.arguments.size() > kMaxToolArgumentBytes) {
    run.error = "arguments over " + std::to_string(kMaxToolArgumentBytes) + " bytes";
    result.content = "error: the arguments are over " + std::to_string(kMaxToolArgumentBytes) +
                     " bytes; the tool was not called";
    return run;
  }
  tools::ToolOutcome out;
  if (tool->http != nullptr) {
    out =
        tools::call_http_tool(*tool->http, call.arguments, parts_.tool_post,
                              static_cast<size_t>(parts_.config.tool_result_max_bytes), keep_going);
  } else {
    run.source = "mcp";
    out = tool->mcp->call(call.name, call.arguments, tool->timeout, keep_going);
  }
  if (out.aborted) throw openai::aborted_error("aborted during tool " + call.name);
  if (out.content.size() > static_cast<size_t>(parts_.config.tool_result_max_bytes)) {
    out.ok = false;
    out.bytes = static_cast<int64_t>(out.content.size());
    out.content = "error: the tool's answer is over " +
                  std::to_string(parts_.config.tool_result_max_bytes) + " bytes; it was not read";
  }
  // A tool's answer may echo its request's secrets (a 401 body quoting Authorization): the
  // declared header values never reach the prompt, history or an event.
  if (tool->http != nullptr) out.content = tools::redact_headers(out.content, tool->http->headers);
  run.ok = out.ok;
  run.http_status = out.status;
  run.latency = out.latency;
  run.result_bytes = out.bytes;
  if (!out.ok) {
    // The event says what went wrong, never the tool's body (the result carries that).
    static constexpr std::string_view kAnswered = "error: the tool answered HTTP ";
    run.error = out.content.rfind(kAnswered, 0) == 0
                    ? out.content.substr(0, out.content.find(':', kAnswered.size()))
                    : out.content.substr(0, 200);
  }
  result.content = out.content;
  return run;
}

void Turn::run_calls(const openai::ChatResult& asked, size_t count, const engine::ToolNames& tools,
                     const std::function<bool()>& keep_going, std::vector<ToolRun>& runs,
                     std::vector<common::Message>& results) {
  if (count == 1) {
    runs[0] = run_tool(asked.tool_calls[0], tools, keep_going, results[0]);
    return;
  }
  // One thread a call; this one keeps the lease meanwhile (keep_going renews it and is not
  // shared), and the calls see the stop it saw. Every thread is joined whatever happens here (a
  // renewal that throws, a thread that cannot start): a joinable thread left would terminate
  // the process. A call that throws stops the others too.
  std::atomic<bool> stop{false};
  const std::function<bool()> go_on = [&stop] { return !stop.load(); };
  std::exception_ptr first_error;  // the first a call threw: the others then stop for it
  std::exception_ptr renewal;
  std::mutex mu;
  std::condition_variable cv;
  size_t done = 0;
  std::vector<std::thread> threads;
  threads.reserve(count);
  const auto finish = [&] {
    stop = true;
    for (std::thread& t : threads)
      if (t.joinable()) t.join();
  };
  try {
    for (size_t k = 0; k < count; ++k)
      threads.emplace_back([&, k] {
        try {
          runs[k] = run_tool(asked.tool_calls[k], tools, go_on, results[k]);
        } catch (...) {
          const std::lock_guard lock(mu);
          if (!first_error && !stop) first_error = std::current_exception();
          stop = true;
        }
        const std::lock_guard lock(mu);
        ++done;
        cv.notify_one();
      });
    std::unique_lock lock(mu);
    while (done < threads.size()) {
      cv.wait_for(lock, std::chrono::milliseconds(100));
      lock.unlock();
      try {
        if (!stop && !keep_going()) stop = true;
      } catch (...) {
        renewal = std::current_exception();
        stop = true;
      }
      lock.lock();
    }
  } catch (...) {
    finish();
    throw;
  }
  const bool stopped = stop;
  finish();
  if (renewal) std::rethrow_exception(renewal);
  if (first_error) std::rethrow_exception(first_error);
  if (stopped) throw openai::aborted_error("aborted during tool calls");
}

void Turn::run_step(const openai::ChatResult& asked, size_t step, int64_t cap,
                    std::chrono::milliseconds& spent, const std::function<bool()>& keep_going,
                    TurnOutcome& o) {
  const engine::BuiltContext& built = o.contexts.back().built;
  const size_t n = asked.tool_calls.size();
  std::vector<ToolRun> runs(n);
  std::vector<common::Message> results(n, common::Message{common::Role::kTool, ""});
  // The reply's calls run at once (at most kMaxToolCallsPerReply); the task's time for tools
  // counts their wall time.
  const size_t count = spent >= kMaxToolTimePerTask ? 0 : n;
  for (size_t k = 0; k < n; ++k) results[k].tool_call_id = asked.tool_calls[k].id;
  const auto started = std::chrono::steady_clock::now();
  if (count > 0) run_calls(asked, count, built.chat.policy.tools, keep_going, runs, results);
  spent += std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 started);
  int64_t used = parts_.counter.count_prompt(built.messages);
  for (const common::Message& m : o.steps) used += parts_.counter.count_message(m);
  for (size_t k = 0; k < n; ++k) {
    const openai::ToolCall& c = asked.tool_calls[k];
    common::Message& result = results[k];
    ToolRun& run = runs[k];
    if (k >= count) {
      run.id = c.id;
      run.name = c.name;
      run.error = "the task's time for tools is spent";
      result.content = "error: not run: " + run.error;
    }
    run.step = step;
    // Stored and sent cut, head and tail kept, a marker between: to the cap, and to a share
    // of the room the budget has left for this reply's results, so that the newest results
    // reach the model.
    const auto left = static_cast<int64_t>(asked.tool_calls.size() - k);
    // The result's own framing (its role, its call id) comes out of its room.
    common::Message framing = result;
    framing.content.clear();
    const int64_t room =
        (built.figures.budget_tokens - used) / left - parts_.counter.count_message(framing);
    const int64_t limit = std::min(cap, std::max(room, kMinToolResultTokens));
    const int64_t tokens = parts_.counter.count_text(result.content);
    if (tokens > limit) {
      result.content = tokens::cut_middle_to_tokens(result.content, limit, tokens, parts_.counter);
      run.cut = true;
    }
    run.result_tokens = parts_.counter.count_text(result.content);
    used += parts_.counter.count_message(result);
    o.steps.push_back(std::move(result));
    o.tool_runs.push_back(std::move(run));
    if (!keep_going()) throw openai::aborted_error("aborted between tool calls");
  }
}

std::vector<common::Message> Turn::next_request(const openai::ChatResult& asked,
                                                const TurnOutcome& o) const {
  const engine::BuiltContext& built = o.contexts.back().built;
  // The next request: the built prompt, then the steps; while over the budget the results of
  // earlier steps are sent cleared, oldest first (the calls stay, so every call keeps its
  // result); this step's results are never cleared.
  std::vector<common::Message> messages = built.messages;
  const size_t first_step = messages.size();
  messages.insert(messages.end(), o.steps.begin(), o.steps.end());
  const size_t this_step = messages.size() - 1 - asked.tool_calls.size();
  int64_t tokens = parts_.counter.count_prompt(messages);
  for (size_t i = first_step; i < this_step && tokens > built.figures.budget_tokens; ++i) {
    if (messages[i].role != common::Role::kTool) continue;
    const int64_t before = parts_.counter.count_message(messages[i]);
    messages[i].content = std::string(kClearedResult);
    tokens += parts_.counter.count_message(messages[i]) - before;
  }
  // Still over (a prompt built near its budget, this step's results at their least): the oldest
  // history goes, a user turn at a time, so no tool unit is split (as a compaction would; the
  // stored history keeps it).
  size_t question = first_step - 1;
  while (tokens > built.figures.budget_tokens) {
    size_t from = 0;
    while (from < question && messages[from].history_id == 0) ++from;
    if (from >= question) break;  // no history left: nothing more can go
    const size_t to = engine::user_start(std::span(messages.data(), question), from + 1);
    messages.erase(messages.begin() + static_cast<ptrdiff_t>(from),
                   messages.begin() + static_cast<ptrdiff_t>(to));
    question -= to - from;
    tokens = parts_.counter.count_prompt(messages);
  }
  // No history left: the question is cut in the middle, its beginning and end kept, as the
  // engine's last resort cuts it.
  if (tokens > built.figures.budget_tokens) {
    common::Message& q = messages[question];
    const int64_t text = parts_.counter.count_text(q.content);
    const int64_t keep = std::max<int64_t>(text - (tokens - built.figures.budget_tokens), 16);
    q.content = tokens::cut_middle_to_tokens(q.content, keep, text, parts_.counter);
  }
  return messages;
}

void Turn::run_tools(const queue::Task& task, const std::function<bool()>& keep_going,
                     TurnOutcome& o) {
  const engine::BuiltContext& built = o.contexts.back().built;
  const int64_t cap = result_cap(built);
  int64_t calls = 1;  // model calls so far in this task
  std::set<std::string> used_ids;
  std::chrono::milliseconds spent{0};  // in tools, this task
  while (!o.result->tool_calls.empty()) {
    if (calls >= parts_.config.tool_max_steps) {
      // The last allowed call was told to answer in text and still called tools: its text is
      // the answer, the calls are dropped; without text the task fails.
      if (!o.result->content.empty()) {
        o.result->tool_calls.clear();
        o.result->tool_calls_json.clear();
        break;
      }
      o.kind = Kind::kFailed;
      o.error = "the model still called tools after TOOL_MAX_STEPS=" +
                std::to_string(parts_.config.tool_max_steps) + " model calls";
      o.failure = TurnFailure{"tool_steps",    o.error,      std::nullopt,
                              milliseconds(0), std::nullopt, parts_.clock.now()};
      o.finished_at = parts_.clock.now();
      return;
    }
    const size_t step = o.tool_replies.size();
    o.tool_replies.push_back(*o.result);
    openai::ChatResult& asked = o.tool_replies.back();
    sanitize_calls(asked, used_ids);
    common::Message call{common::Role::kAssistant, asked.content};
    call.tool_calls = asked.tool_calls_json;
    o.steps.push_back(std::move(call));
    run_step(asked, step, cap, spent, keep_going, o);
    std::vector<common::Message> messages = next_request(asked, o);
    const int64_t tokens = parts_.counter.count_prompt(messages);
    if (tokens > built.figures.budget_tokens) {
      // Nothing more can go (a reply whose calls' JSON alone outgrows the budget): the task
      // fails rather than send a request over it.
      o.kind = Kind::kFailed;
      o.error = "the tool steps outgrew the prompt budget: " + std::to_string(tokens) +
                " tokens of " + std::to_string(built.figures.budget_tokens);
      o.failure = TurnFailure{"tool_budget",   o.error,      std::nullopt,
                              milliseconds(0), std::nullopt, parts_.clock.now()};
      o.finished_at = parts_.clock.now();
      o.result.reset();  // recorded in tool_replies: its llm.response is not repeated
      return;
    }
    o.step_tokens.push_back(tokens);  // the request sent (its llm.request event)
    openai::CallOptions options = call_options(task.chat_id, built.chat.policy.tools);
    if (++calls >= parts_.config.tool_max_steps) options.tool_choice = "none";
    stream_into(options, task);
    o.result.reset();  // recorded in tool_replies: a failed next call must not show it twice
    o.result = parts_.client.chat(messages, keep_going, options);
  }
  o.finished_at = parts_.clock.now();
}

}  // namespace autonous::worker
