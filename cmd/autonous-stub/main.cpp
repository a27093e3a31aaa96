// autonous-stub: a loopback OpenAI-compatible server for the demo, the e2e tests and the load
// benchmark. Binds 127.0.0.1 only. Requests: server.h; replies: replies.h; the
// [[stub:KIND[:ARG][*N]]] fault directives: faults.h; summaries: summaries.h; --log: request_log.h.

#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#include "cmd/autonous-stub/server.h"

namespace autonous::stub {
namespace {

constexpr char kUsage[] =
    "usage: autonous-stub [--port N] [--latency-ms N] [--log FILE] [--port-file FILE] "
    "[--usage-scale X] [--hidden-prompt N]\n"
    "                     [--rules openai|strict] [--context-limit N [--overflow-style STYLE]] "
    "[--silent-limit N] [--overloaded MODEL]\n"
    "STYLE: openai, vllm, llamacpp, gemini, anthropic, mistral, openrouter, deepseek, groq\n";

int usage(const std::string& why) {
  std::cerr << "autonous-stub: " << why << "\n" << kUsage;
  return 2;
}

// Reads the flags into `options`; an exit code when the program must stop instead.
std::optional<int> parse_args(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    try {
      if (a == "--help" || a == "-h") {
        std::cout << "autonous-stub: loopback OpenAI-compatible server (127.0.0.1 only)\n"
                  << kUsage
                  << "Prints 127.0.0.1:PORT on stdout once listening. See the source header for "
                     "the\n[[stub:KIND[:ARG][*N]]] fault directives.\n";
        return 0;
      }
      if (i + 1 >= argc) return usage("missing value for " + a);
      const std::string v = argv[++i];
      if (a == "--port")
        options.port = std::stoi(v);
      else if (a == "--latency-ms")
        options.latency_ms = std::stoi(v);
      else if (a == "--log")
        options.log_path = v;
      else if (a == "--port-file")
        options.port_file = v;
      else if (a == "--usage-scale")
        options.usage_scale = std::stod(v);
      else if (a == "--hidden-prompt")
        options.hidden_prompt = std::stoll(v);
      else if (a == "--rules" && v == "openai")
        options.rules.openai = true;
      else if (a == "--rules" && v == "strict")
        options.rules.strict = true;
      else if (a == "--context-limit")
        options.rules.context_limit = std::stoll(v);
      else if (a == "--overflow-style" && known_overflow_style(v))
        options.rules.overflow_style = v;
      else if (a == "--overloaded")
        options.overloaded_model = v;
      else if (a == "--silent-limit")
        options.rules.silent_limit = std::stoll(v);
      else if (a == "--rules" || a == "--overflow-style")
        return usage("bad value for " + a);
      else
        return usage("unknown option " + a);
    } catch (const std::exception&) {
      return usage("bad value for " + a);
    }
  }
  return std::nullopt;
}

}  // namespace
}  // namespace autonous::stub

int main(int argc, char** argv) {
  using namespace autonous::stub;
  Options options;
  if (const auto exit_code = parse_args(argc, argv, options)) return *exit_code;
  Server server(options);  // opens --log first, as before listening
  int port = 0;
  const int listener = listen_loopback(options.port, port);
  if (listener < 0) return 1;
  if (!options.port_file.empty()) {  // written whole, then renamed: never seen half done
    std::ofstream(options.port_file + ".tmp") << port << "\n";
    std::rename((options.port_file + ".tmp").c_str(), options.port_file.c_str());
  }
  std::cout << "127.0.0.1:" << port << std::endl;
  for (;;) {
    const int fd = accept_client(listener);
    if (fd >= 0) std::thread([&server, fd] { server.serve(fd); }).detach();
  }
}
