// autonous-stub: a loopback OpenAI-compatible server for the demo, the e2e tests and the load
// benchmark. Binds 127.0.0.1 only. POST …/chat/completions answers "reply to: <last user
// message> (saw N messages)" after --latency-ms, with usage.
//
// Faults are injected per message: a user message containing [[stub:KIND[:ARG][*N]]] gets that
// fault on its first N requests (every request without *N), then a normal reply. KIND:
//   429[:S] (Retry-After seconds) · 429ms:MS (retry-after-ms) · 429date:S (Retry-After as a date)
//   400 401 403 404 408 409 500 502 503 (OpenAI-shaped error) · llama400 (numeric code)
//   html502 · empty500 · overflow (400 context_length_exceeded) · malformed (bad JSON, 200)
//   truncated (Content-Length larger than the body, then close) · drop (close, no response)
//   hang[:S] (no answer for S seconds, default forever) · slow:MS · null (content null)
//   length (finish_reason length) · nousage · chunked (Transfer-Encoding: chunked)
// Summary requests (autonous's summarizer: the system message starts "You maintain a running
// summary") get a deterministic summary: the user lines holding a digit or "name". Faults for
// them only, counted by directive: sum500 · sumgarbage (blank content) · sumhang (no answer).
// usage.prompt_tokens_details.cached_tokens: the prompt's prefix shared with a recent request.
// --log FILE appends one JSON line per request: time, path, authorization, fault, body.

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_set>
#include <vector>
#include <string>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

using nlohmann::json;
using Clock = std::chrono::system_clock;

struct Options {
  int port = 0;
  int latency_ms = 0;
  double usage_scale = 1.0;  // multiplies reported prompt_tokens (to test calibration)
  std::string log_path;
  std::string port_file;
};

Options g_options;
std::mutex g_mu;  // guards g_fault_counts and the log file
std::map<std::string, int> g_fault_counts;
std::ofstream g_log;

struct Fault {
  std::string kind;
  std::string arg;
  std::optional<int> times;
  std::string directive;
};

struct Request {
  std::string method;
  std::string path;
  std::map<std::string, std::string> headers;
  std::string body;
};

bool send_all(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// Reads one request; false on EOF or a malformed request.
bool read_request(int fd, std::string& buffer, Request& req) {
  size_t header_end = std::string::npos;
  char chunk[65536];
  while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<size_t>(n));
  }
  const std::string head = buffer.substr(0, header_end);
  buffer.erase(0, header_end + 4);
  size_t line_end = head.find("\r\n");
  const std::string request_line = head.substr(0, line_end);
  const auto sp1 = request_line.find(' ');
  const auto sp2 = request_line.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos) return false;
  req.method = request_line.substr(0, sp1);
  req.path = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  req.headers.clear();
  while (line_end != std::string::npos) {
    const size_t start = line_end + 2;
    line_end = head.find("\r\n", start);
    const std::string line =
        head.substr(start, line_end == std::string::npos ? std::string::npos : line_end - start);
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    req.headers[name] = value;
  }
  size_t length = 0;
  if (auto it = req.headers.find("content-length"); it != req.headers.end())
    length = std::stoul(it->second);
  while (buffer.size() < length) {
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<size_t>(n));
  }
  req.body = buffer.substr(0, length);
  buffer.erase(0, length);
  return true;
}

std::string status_text(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

std::string response(int status, const std::string& body,
                     const std::map<std::string, std::string>& extra = {},
                     const std::string& content_type = "application/json") {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) + "\r\n";
  out += "Content-Type: " + content_type + "\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  for (const auto& [k, v] : extra) out += k + ": " + v + "\r\n";
  out += "\r\n" + body;
  return out;
}

std::string openai_error(const std::string& message, const std::string& type, const json& code) {
  return json{{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}}}}
      .dump();
}

std::optional<Fault> find_fault(const std::string& text) {
  const auto start = text.find("[[stub:");
  if (start == std::string::npos) return std::nullopt;
  const auto end = text.find("]]", start);
  if (end == std::string::npos) return std::nullopt;
  Fault f;
  f.directive = text.substr(start, end + 2 - start);
  std::string spec = text.substr(start + 7, end - start - 7);
  if (const auto star = spec.find('*'); star != std::string::npos) {
    f.times = std::stoi(spec.substr(star + 1));
    spec = spec.substr(0, star);
  }
  if (const auto colon = spec.find(':'); colon != std::string::npos) {
    f.arg = spec.substr(colon + 1);
    spec = spec.substr(0, colon);
  }
  f.kind = spec;
  return f;
}

// The deterministic "summary" of a summarizer request: every "user:" line of its input (the new
// messages, or the previous summary's list) that holds a digit or the word "name" (the facts a
// test or bench plants), without list markers, at most 200 bytes each, each once, the newest 40
// kept. It checks autonous's plumbing, not a model's quality.
std::string stub_summary(const std::string& input) {
  std::vector<std::string> lines;
  std::set<std::string> seen;
  size_t pos = 0;
  while (pos <= input.size()) {
    size_t end = input.find('\n', pos);
    if (end == std::string::npos) end = input.size();
    std::string line = input.substr(pos, end - pos);
    pos = end + 1;
    while (!line.empty() && (line[0] == '-' || line[0] == ' ')) line.erase(0, 1);
    std::string lower = line;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const bool fact = lower.find("name") != std::string::npos ||
                      std::any_of(line.begin(), line.end(),
                                  [](char ch) { return ch >= '0' && ch <= '9'; });
    if (line.size() > 200) line.resize(200);
    if (!fact || line.rfind("user:", 0) != 0 || !seen.insert(line).second) continue;
    lines.push_back(line);
  }
  if (lines.size() > 40) lines.erase(lines.begin(), lines.end() - 40);
  std::string out = "Facts stated:";
  for (const auto& l : lines) out += "\n- " + l;
  return out;
}

// A provider-style prefix cache: how many characters of the prompt repeat, message for message,
// the start of an earlier request's prompt. It remembers a hash of every message-boundary prefix
// seen (forgotten all at once past a million), so a request costs one pass over its own text.
int64_t remember_prompt(const std::vector<std::string>& messages) {
  static std::unordered_set<uint64_t> seen;
  uint64_t h = 1469598103934665603ULL;  // FNV-1a over the messages, boundaries included
  std::vector<std::pair<uint64_t, size_t>> prefixes;
  size_t length = 0;
  for (const auto& m : messages) {
    for (const unsigned char ch : m) h = (h ^ ch) * 1099511628211ULL;
    h = (h ^ 0x1eU) * 1099511628211ULL;
    length += m.size();
    prefixes.emplace_back(h, length);
  }
  const std::lock_guard lock(g_mu);
  size_t cached = 0;
  for (const auto& [hash, len] : prefixes)
    if (seen.count(hash) != 0) cached = len;
  if (seen.size() > 1'000'000) seen.clear();
  for (const auto& p : prefixes) seen.insert(p.first);
  return static_cast<int64_t>(cached);
}

std::string http_date(Clock::time_point t) {
  const std::time_t tt = Clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

bool peer_closed(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  char c = 0;
  return ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

void log_request(const Request& req, const json& body, const std::optional<Fault>& fault,
                 bool faulted) {
  if (g_options.log_path.empty()) return;
  json line = {
      {"t_ms",
       std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
           .count()},
      {"path", req.path},
      {"authorization",
       req.headers.count("authorization") ? json(req.headers.at("authorization")) : json(nullptr)},
      {"fault", faulted && fault ? json(fault->directive) : json(nullptr)},
      {"body", body}};
  const std::lock_guard lock(g_mu);
  g_log << line.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  g_log.flush();
}

// Returns false when the connection must close.
bool handle(int fd, const Request& req) {
  if (req.method == "GET" && req.path == "/health")
    return send_all(fd, response(200, "{\"ok\":true}"));
  const std::string suffix = "/chat/completions";
  if (req.method != "POST" || req.path.size() < suffix.size() ||
      req.path.compare(req.path.size() - suffix.size(), suffix.size(), suffix) != 0)
    return send_all(fd, response(404, openai_error("no route " + req.path, "invalid_request_error",
                                                   "not_found")));

  const json body = json::parse(req.body, nullptr, false);
  if (!body.is_object() || !body.contains("messages") || !body["messages"].is_array()) {
    log_request(req, req.body, std::nullopt, false);
    return send_all(fd, response(400, openai_error("body is not a chat request",
                                                   "invalid_request_error", nullptr)));
  }
  std::string last_user;
  size_t prompt_chars = 0;
  std::vector<std::string> prompt_messages;  // role + content of each, for the prefix cache
  for (const auto& m : body["messages"]) {
    const std::string content = m.value("content", "");
    prompt_chars += content.size();
    prompt_messages.push_back(m.value("role", "") + '\x1f' + content);
    if (m.value("role", "") == "user") last_user = content;
  }
  // autonous's summarizer requests start with this system text (worker/llm_summarizer.cpp).
  const auto& first = body["messages"].empty() ? json() : body["messages"][0];
  const bool summary_request =
      first.is_object() && first.value("role", "") == "system" &&
      first.value("content", "").rfind("You maintain a running summary", 0) == 0;
  std::optional<Fault> fault = find_fault(last_user);
  // sum* faults hit summary requests only; other faults never do.
  if (fault && (fault->kind.rfind("sum", 0) == 0) != summary_request) fault.reset();
  bool faulted = false;
  if (fault) {
    const std::lock_guard lock(g_mu);
    // A summary request's text changes each time: count its faults by directive alone.
    int& count =
        g_fault_counts[fault->directive + "|" + (summary_request ? std::string() : last_user)];
    faulted = !fault->times || count < *fault->times;
    ++count;
  }
  const int64_t cached_chars = remember_prompt(prompt_messages);
  log_request(req, body, fault, faulted);

  int latency = g_options.latency_ms;
  if (faulted && fault->kind == "slow") latency += std::stoi(fault->arg);
  if (latency > 0) std::this_thread::sleep_for(std::chrono::milliseconds(latency));

  json content =
      summary_request
          ? json(stub_summary(last_user))
          : json("reply to: " + last_user + " (saw " + std::to_string(body["messages"].size()) +
                 " messages)");
  std::string finish = "stop";
  bool usage = true;
  bool chunked = false;
  if (faulted) {
    const std::string& k = fault->kind;
    const std::string& a = fault->arg;
    if (k == "429")
      return send_all(
          fd, response(429, openai_error("Rate limit reached", "requests", "rate_limit_exceeded"),
                       a.empty() ? std::map<std::string, std::string>{}
                                 : std::map<std::string, std::string>{{"Retry-After", a}}));
    if (k == "429ms")
      return send_all(
          fd, response(429, openai_error("Rate limit reached", "requests", "rate_limit_exceeded"),
                       {{"retry-after-ms", a}}));
    if (k == "429date")
      return send_all(
          fd, response(
                  429, openai_error("Rate limit reached", "requests", "rate_limit_exceeded"),
                  {{"Retry-After", http_date(Clock::now() + std::chrono::seconds(std::stoi(a)))}}));
    if (k == "overflow")
      return send_all(
          fd, response(400, openai_error("This model's maximum context length is 8192 tokens.",
                                         "invalid_request_error", "context_length_exceeded")));
    if (k == "llama400")
      return send_all(fd,
                      response(400, openai_error("llama says no", "invalid_request_error", 400)));
    if (k == "html502")
      return send_all(
          fd, response(502, "<html><body><h1>502 Bad Gateway</h1></body></html>", {}, "text/html"));
    if (k == "empty500") return send_all(fd, response(500, ""));
    if (k == "malformed") return send_all(fd, response(200, "{\"choices\": [ {\"message\": "));
    if (k == "truncated") {
      const std::string partial = "{\"id\":\"x\",\"choices\":[";
      std::string head =
          "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n";
      send_all(fd, head + partial);
      return false;
    }
    if (k == "drop") return false;
    if (k == "hang") {
      const auto until = Clock::now() + std::chrono::seconds(a.empty() ? 86400 : std::stoi(a));
      while (Clock::now() < until && !peer_closed(fd))
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (Clock::now() < until) return false;
    }
    if (k == "sumgarbage") content = "   ";
    if (k == "sumhang") {
      while (!peer_closed(fd)) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      return false;
    }
    if (k == "sum500") return send_all(fd, response(500, openai_error("stub fault", "server_error", nullptr)));
    if (k == "null") content = nullptr;
    if (k == "length") finish = "length";
    if (k == "nousage") usage = false;
    if (k == "chunked") chunked = true;
    const int status = std::atoi(k.c_str());
    if (status >= 400)
      return send_all(fd,
                      response(status, openai_error("stub fault " + k, "server_error", nullptr)));
  }
  json reply = {
      {"id", "chatcmpl-stub"},
      {"object", "chat.completion"},
      {"created",
       std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count()},
      {"model", body.value("model", "stub")},
      {"system_fingerprint", "stub"},
      {"choices", json::array({{{"index", 0},
                                {"message", {{"role", "assistant"}, {"content", content}}},
                                {"finish_reason", finish}}})}};
  if (usage) {
    const auto prompt =
        static_cast<int64_t>(static_cast<double>(prompt_chars / 4 + 1) * g_options.usage_scale);
    const int64_t completion =
        content.is_string() ? static_cast<int64_t>(content.get<std::string>().size() / 4 + 1) : 0;
    reply["usage"] = {{"prompt_tokens", prompt},
                      {"completion_tokens", completion},
                      {"total_tokens", prompt + completion},
                      {"prompt_tokens_details",
                       {{"cached_tokens", std::min<int64_t>(prompt, cached_chars / 4)}}}};
  }
  const std::string text = reply.dump(-1, ' ', false, json::error_handler_t::replace);
  if (chunked) {
    std::string out =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    const size_t half = text.size() / 2;
    for (const std::string& part : {text.substr(0, half), text.substr(half)}) {
      char size[32];
      std::snprintf(size, sizeof size, "%zx\r\n", part.size());
      out += size + part + "\r\n";
    }
    out += "0\r\n\r\n";
    return send_all(fd, out);
  }
  return send_all(fd, response(200, text));
}

void serve(int fd) {
  std::string buffer;
  Request req;
  try {
    while (read_request(fd, buffer, req)) {
      if (!handle(fd, req)) break;
    }
  } catch (const std::exception& e) {
    std::cerr << "autonous-stub: " << e.what() << "\n";
  }
  ::close(fd);
}

int usage(const char* why) {
  std::cerr << "autonous-stub: " << why
            << "\nusage: autonous-stub [--port N] [--latency-ms N] [--log FILE] [--port-file FILE] "
               "[--usage-scale X]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::optional<std::string> {
      if (i + 1 >= argc) return std::nullopt;
      return std::string(argv[++i]);
    };
    try {
      if (a == "--help" || a == "-h") {
        std::cout
            << "autonous-stub: loopback OpenAI-compatible server (127.0.0.1 only)\n"
               "usage: autonous-stub [--port N] [--latency-ms N] [--log FILE] [--port-file FILE] "
               "[--usage-scale X]\n"
               "Prints 127.0.0.1:PORT on stdout once listening. See the source header for the\n"
               "[[stub:KIND[:ARG][*N]]] fault directives.\n";
        return 0;
      }
      const auto v = next();
      if (!v) return usage(("missing value for " + a).c_str());
      if (a == "--port")
        g_options.port = std::stoi(*v);
      else if (a == "--latency-ms")
        g_options.latency_ms = std::stoi(*v);
      else if (a == "--log")
        g_options.log_path = *v;
      else if (a == "--port-file")
        g_options.port_file = *v;
      else if (a == "--usage-scale")
        g_options.usage_scale = std::stod(*v);
      else
        return usage(("unknown option " + a).c_str());
    } catch (const std::exception&) {
      return usage(("bad value for " + a).c_str());
    }
  }
  if (!g_options.log_path.empty()) g_log.open(g_options.log_path, std::ios::app);

  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(g_options.port));
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener, 512) != 0) {
    std::cerr << "autonous-stub: cannot listen on 127.0.0.1:" << g_options.port << ": "
              << std::strerror(errno) << "\n";
    return 1;
  }
  socklen_t len = sizeof addr;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  if (!g_options.port_file.empty()) {
    std::ofstream(g_options.port_file + ".tmp") << port << "\n";
    std::rename((g_options.port_file + ".tmp").c_str(), g_options.port_file.c_str());
  }
  std::cout << "127.0.0.1:" << port << std::endl;
  for (;;) {
    const int fd = ::accept(listener, nullptr, nullptr);
    if (fd < 0) continue;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::thread(serve, fd).detach();
  }
}
