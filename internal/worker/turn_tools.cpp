// Turn's tool loop (#29): the model's calls run, their results appended, the model called again.
#include <algorithm>
#include <random>
#include <set>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "internal/engine/built_context.h"
#include "internal/openai/client.h"
#include "internal/openai/errors.h"
#include "internal/tokens/scaled_counter.h"
#include "internal/tokens/truncate.h"
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

// Makes the calls' ids unique within the task: servers that number their calls per reply
// ("call_0" each time) would otherwise answer two calls with one id, which no replay could pair
// (and history stores a call's result once per task). A repeated id becomes "call_" and 9
// random letters and digits, in the call and in the JSON stored with it.
void unique_ids(openai::ChatResult& asked, std::set<std::string>& used) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr std::string_view kAlnum =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  nlohmann::json calls = nlohmann::json::parse(asked.tool_calls_json, nullptr, false);
  bool changed = false;
  for (size_t i = 0; i < asked.tool_calls.size(); ++i) {
    std::string& id = asked.tool_calls[i].id;
    while (!used.insert(id).second) {
      id = "call_";
      for (int k = 0; k < 9; ++k) id += kAlnum[rng() % kAlnum.size()];
      if (calls.is_array() && i < calls.size() && calls[i].is_object()) {
        calls[i]["id"] = id;
        changed = true;
      }
    }
  }
  if (changed) asked.tool_calls_json = calls.dump();
}

}  // namespace

ToolRun Turn::run_tool(const openai::ToolCall& call, const std::function<bool()>& keep_going,
                       common::Message& result) {
  ToolRun run;
  run.id = call.id;
  run.name = call.name;
  const tools::HttpTool* tool =
      parts_.toolset != nullptr ? parts_.toolset->find(call.name) : nullptr;
  if (tool == nullptr || !parts_.tool_post) {
    run.error = "no tool named " + call.name;
    result.content = "error: there is no tool named \"" + call.name + "\"";
    return run;
  }
  const tools::ToolOutcome out =
      tools::call_http_tool(*tool, call.arguments, parts_.tool_post,
                            static_cast<size_t>(parts_.config.tool_result_max_bytes), keep_going);
  if (out.aborted) throw openai::aborted_error("aborted during tool " + call.name);
  run.ok = out.ok;
  run.http_status = out.status;
  run.latency = out.latency;
  run.result_bytes = out.bytes;
  if (!out.ok) run.error = out.content;
  result.content = out.content;
  return run;
}

void Turn::run_tools(const queue::Task& task, const std::function<bool()>& keep_going,
                     TurnOutcome& o) {
  const engine::BuiltContext& built = o.contexts.back().built;
  const int64_t cap = result_cap(built);
  int64_t calls = 1;  // model calls so far in this task
  std::set<std::string> used_ids;
  while (!o.result->tool_calls.empty()) {
    if (calls >= parts_.config.tool_max_steps) {
      // The last allowed call was told to answer in text and still called tools.
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
    unique_ids(asked, used_ids);
    common::Message call{common::Role::kAssistant, asked.content};
    call.tool_calls = asked.tool_calls_json;
    o.steps.push_back(std::move(call));
    for (const openai::ToolCall& c : asked.tool_calls) {
      common::Message result{common::Role::kTool, ""};
      result.tool_call_id = c.id;
      ToolRun run = run_tool(c, keep_going, result);
      run.step = step;
      // Stored and sent cut to the cap, head and tail kept, a marker between.
      const int64_t tokens = parts_.counter.count_text(result.content);
      if (tokens > cap) {
        result.content = tokens::cut_middle_to_tokens(result.content, cap, tokens, parts_.counter);
        run.cut = true;
      }
      run.result_tokens = parts_.counter.count_text(result.content);
      o.steps.push_back(std::move(result));
      o.tool_runs.push_back(std::move(run));
      if (!keep_going()) throw openai::aborted_error("aborted between tool calls");
    }
    // The next request: the built prompt, then the steps; while over the budget the oldest
    // results are sent cleared (the calls stay, so every call keeps its result).
    std::vector<common::Message> messages = built.messages;
    const size_t first_step = messages.size();
    messages.insert(messages.end(), o.steps.begin(), o.steps.end());
    int64_t tokens = parts_.counter.count_prompt(messages);
    for (size_t i = first_step; i < messages.size() && tokens > built.figures.budget_tokens; ++i) {
      if (messages[i].role != common::Role::kTool) continue;
      const int64_t before = parts_.counter.count_message(messages[i]);
      messages[i].content = std::string(kClearedResult);
      tokens += parts_.counter.count_message(messages[i]) - before;
    }
    o.step_tokens.push_back(tokens);
    openai::CallOptions options = call_options(task.chat_id);
    if (++calls >= parts_.config.tool_max_steps) options.tool_choice = "none";
    o.result.reset();  // recorded in tool_replies: a failed next call must not show it twice
    o.result = parts_.client.chat(messages, keep_going, options);
  }
  o.finished_at = parts_.clock.now();
}

}  // namespace autonous::worker
