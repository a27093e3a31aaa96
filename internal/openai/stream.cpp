#include "internal/openai/stream.h"

namespace autonous::openai {
namespace {

using nlohmann::json;

// Appends `piece` to `into` when it is a string.
void append_text(std::string& into, const json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it != obj.end() && it->is_string()) into += it->get_ref<const std::string&>();
}

// `field` of `obj` when it is a string, else "".
std::string text_of(const json& obj, const char* field) {
  const auto it = obj.find(field);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The tool call fragment `d` joined into `calls` at its index. The id and the name are set by
// the first fragment that has them (some servers repeat them in every fragment); the arguments
// are appended. A fragment without an index continues the last call, unless it names a new id.
void join_tool_call(json& calls, const json& d) {
  if (!d.is_object()) return;
  const auto idx = d.find("index");
  const std::string id = text_of(d, "id");
  size_t i = calls.empty() ? 0 : calls.size() - 1;
  if (idx != d.end() && idx->is_number_unsigned())
    i = idx->get<size_t>();
  else if (!calls.empty() && !id.empty() && calls.back()["id"] != "" && calls.back()["id"] != id)
    i = calls.size();
  if (i > 256) return;  // no reply calls that many tools; a hostile index is not a size
  while (calls.size() <= i)
    calls.push_back(
        {{"id", ""}, {"type", "function"}, {"function", {{"name", ""}, {"arguments", ""}}}});
  json& c = calls[i];
  if (c["id"] == "" && !id.empty()) c["id"] = id;
  const auto f = d.find("function");
  if (f != d.end() && f->is_object()) {
    const std::string name = text_of(*f, "name");
    if (c["function"]["name"] == "" && !name.empty()) c["function"]["name"] = name;
    std::string args = c["function"]["arguments"].get<std::string>();
    append_text(args, *f, "arguments");
    c["function"]["arguments"] = args;
  }
}

}  // namespace

bool StreamAssembler::feed(std::string_view bytes) {
  if (!decided_) {
    const size_t first = bytes.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return false;
    decided_ = true;
    streaming_ = bytes[first] != '{' && bytes[first] != '[';
  }
  if (!streaming_ || done_) return false;
  const size_t before = content_.size() + refusal_.size();
  size_t start = 0;
  for (size_t nl = bytes.find('\n'); nl != std::string_view::npos;
       start = nl + 1, nl = bytes.find('\n', start)) {
    pending_.append(bytes.substr(start, nl - start));
    if (!pending_.empty() && pending_.back() == '\r') pending_.pop_back();
    line(pending_);
    pending_.clear();
    if (done_) break;
  }
  if (!done_) pending_.append(bytes.substr(start));
  return content_.size() + refusal_.size() > before;
}

void StreamAssembler::line(std::string_view l) {
  if (l.empty()) {  // an event ends: its data over several lines is read now
    if (!data_.empty()) {
      json chunk = json::parse(data_, nullptr, /*allow_exceptions=*/false);
      if (!chunk.is_discarded())
        dispatch(std::move(chunk));
      else if (event_name_ == "error")
        error_ = json{{"message", data_}};
      else
        lost_ = true;  // a chunk that never read as JSON: a piece of the reply may be missing
      data_.clear();
    }
    event_name_.clear();
    return;
  }
  if (l.front() == ':') return;  // a comment (a keep-alive)
  const size_t colon = l.find(':');
  const std::string_view field = l.substr(0, colon);
  std::string_view value =
      colon == std::string_view::npos ? std::string_view() : l.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "event") {
    event_name_ = std::string(value);
    return;
  }
  if (field != "data") return;
  if (value == "[DONE]" && data_.empty()) {
    done_ = true;
    return;
  }
  // An event's data may span several lines (joined with a newline, as SSE says): a line that
  // does not read alone waits for the rest, read once at the blank line (never each line
  // again: a hostile stream of short lines must not cost their square). Most servers send one
  // line an event.
  if (!data_.empty()) {
    data_ += '\n';
    data_ += value;
    if (data_.size() > kMaxEventBytes) {
      lost_ = true;
      data_.clear();
    }
    return;
  }
  json chunk = json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (chunk.is_discarded()) {
    data_ = std::string(value);
    return;
  }
  dispatch(chunk);
}

void StreamAssembler::dispatch(json chunk) {
  if (!chunk.is_object()) {
    lost_ = true;
    return;
  }
  if (event_name_ == "error" && !chunk.contains("error")) chunk = json{{"error", chunk}};
  event(chunk);
}

void StreamAssembler::event(const json& chunk) {
  if (const auto e = chunk.find("error"); e != chunk.end() && !chunk.contains("choices")) {
    error_ = *e;
    return;
  }
  if (id_.empty()) append_text(id_, chunk, "id");
  if (const auto m = chunk.find("model"); m != chunk.end() && m->is_string())
    model_ = m->get<std::string>();
  if (const auto u = chunk.find("usage"); u != chunk.end() && u->is_object()) usage_ = *u;
  const auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array()) return;
  for (const json& c : *choices) {
    if (!c.is_object()) continue;
    const auto index = c.find("index");
    if (index != c.end() && !(index->is_number_integer() && index->get<int64_t>() == 0)) continue;
    if (const auto f = c.find("finish_reason"); f != c.end() && f->is_string())
      finish_reason_ = f->get<std::string>();
    const auto delta = c.find("delta");
    const json& d = delta != c.end() && delta->is_object() ? *delta : c.value("message", json());
    if (!d.is_object()) continue;
    append_text(content_, d, "content");
    append_text(refusal_, d, "refusal");
    if (const auto calls = d.find("tool_calls"); calls != d.end() && calls->is_array())
      for (const json& call : *calls) join_tool_call(tool_calls_, call);
  }
}

std::string StreamAssembler::completion_json() const {
  if (error_) return json{{"error", *error_}}.dump(-1, ' ', false, json::error_handler_t::replace);
  json message = {{"role", "assistant"}, {"content", content_}};
  if (!refusal_.empty()) message["refusal"] = refusal_;
  if (!tool_calls_.empty()) message["tool_calls"] = tool_calls_;
  json choice = {{"index", 0}, {"message", message}};
  choice["finish_reason"] = finish_reason_.empty() ? json(nullptr) : json(finish_reason_);
  json out = {{"id", id_}, {"object", "chat.completion"}, {"model", model_}, {"choices", {choice}}};
  if (usage_) out["usage"] = *usage_;
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace autonous::openai
