// MCP servers through the real binary (#29): the MCP project's reference server
// (@modelcontextprotocol/server-everything, installed by scripts/bootstrap) over stdio and over
// Streamable HTTP, a server that dies mid-call, and servers left out at start.

#include <fstream>
#include <memory>
#include <thread>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/e2e/e2e_support.h"

namespace autonous::testing {
namespace {

std::string node_bin() {
  for (const char* p : {"/usr/bin/node", "/usr/local/bin/node", "/usr/bin/nodejs"})
    if (std::ifstream(p).good()) return p;
  return "/usr/bin/node";
}

std::string everything_js() {
  const char* dir = std::getenv("AUTONOUS_TEST_NODE_DIR");
  return std::string(dir != nullptr && *dir != '\0' ? dir : "/usr/local/share/autonous/test-node") +
         "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
}

// A port no one listens on now: the kernel's pick for port 0 on loopback, released.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0) ::close(fd);
  return port;
}

// The reference server over Streamable HTTP, listening on *port. It takes its port from PORT
// and cannot report one of its own choosing, so a free one is picked, and picked again when
// another process took it in between (ctest runs tests side by side).
std::unique_ptr<Process> start_http_server(const std::string& node, const std::string& js,
                                           const std::string& dir, int* port) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    *port = free_port();
    auto server = std::make_unique<Process>(
        std::vector<std::string>{node, js, "streamableHttp"},
        std::map<std::string, std::string>{{"PORT", std::to_string(*port)}}, dir);
    for (int i = 0; i < 150; ++i) {
      const std::string err = server->stderr_text();
      if (err.find("listening") != std::string::npos) return server;
      if (err.find("in use") != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return nullptr;
}

class McpE2eTest : public E2eTest {
 protected:
  void SetUp() override {
    E2eTest::SetUp();
    ASSERT_TRUE(std::ifstream(everything_js()).good())
        << everything_js() << " is missing: scripts/bootstrap installs it";
  }
  Env tools_env(const StubServer& stub, const nlohmann::json& file) {
    const std::string path = dir_.file("tools.json");
    std::ofstream(path) << file.dump();
    Env e = env(stub);
    e["TOOLS_FILE"] = path;
    e["OPENAI_MODEL"] = "gpt-4o-mini";
    e["AUTONOUS_TEST_WORKER_SECRET"] = "worker-secret-42";  // must not reach a tool's process
    return e;
  }
};

TEST_F(McpE2eTest, TheReferenceServerOverStdioAnswersWithOnlyTheEnvironmentTheFileGives) {
  StubServer stub(dir_.path().string());
  const Env e = tools_env(stub, {{"tools", {{{"name", "echo"}, {"url", "http://127.0.0.1:1/"}}}},
                                 {"mcp_servers",
                                  {{{"name", "everything"},
                                    {"command", {node_bin(), everything_js(), "stdio"}},
                                    {"env", {{"GREETING", "from the file"}}}}}}});
  const int64_t t =
      enqueue("c", R"(sum [[stub:tool:get-sum:{"a":40,"b":2}]] env [[stub:tool:get-env]])");
  const ProcessResult r = drain(e);
  // Its echo is left out: the file's HTTP tool has that name.
  EXPECT_NE(r.err.find("tool \"echo\" left out: an earlier tool has that name"), std::string::npos)
      << r.err;
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(t)), "done");
  const auto calls = payloads("tool.call", t);
  ASSERT_EQ(calls.size(), 2u);
  for (const auto& c : calls) {
    EXPECT_EQ(c["source"], "mcp");
    EXPECT_EQ(c["status"], "ok") << c.dump();
  }
  const std::string reply = str("SELECT reply FROM tasks WHERE id = " + std::to_string(t));
  EXPECT_NE(reply.find("The sum of 40 and 2 is 42"), std::string::npos) << reply;
  EXPECT_NE(reply.find("from the file"), std::string::npos) << reply;
  std::string results;
  for (int64_t id = 1; id <= num("SELECT max(id) FROM history"); ++id)
    results += str("SELECT text FROM history WHERE role = 'tool' AND id = " + std::to_string(id));
  EXPECT_NE(results.find("GREETING"), std::string::npos) << results;
  EXPECT_EQ(results.find("worker-secret-42"), std::string::npos) << results;
  EXPECT_EQ(results.find("OPENAI_API_KEY"), std::string::npos) << results;
}

TEST_F(McpE2eTest, TheReferenceServerOverStreamableHttpAndAnUnreachableOneLeftOut) {
  StubServer stub(dir_.path().string());
  int port = 0;
  const auto server = start_http_server(node_bin(), everything_js(), dir_.path().string(), &port);
  ASSERT_TRUE(server) << "the reference server did not start listening";
  const Env e = tools_env(
      stub, {{"mcp_servers",
              {{{"name", "remote"}, {"url", "http://127.0.0.1:" + std::to_string(port) + "/mcp"}},
               {{"name", "down"}, {"url", "http://127.0.0.1:1/mcp"}}}}});
  const int64_t t = enqueue("c", R"(echo [[stub:tool:echo:{"message":"over http"}]])");
  const ProcessResult r = drain(e);
  EXPECT_NE(r.err.find("MCP server \"down\" left out"), std::string::npos) << r.err;
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(t)), "done");
  const auto calls = payloads("tool.call", t);
  ASSERT_EQ(calls.size(), 1u) << r.err;
  EXPECT_EQ(calls[0]["status"], "ok") << calls[0].dump();
  EXPECT_NE(str("SELECT reply FROM tasks WHERE id = " + std::to_string(t)).find("Echo: over http"),
            std::string::npos);
}

TEST_F(McpE2eTest, AServerThatDiesMidCallIsStartedAgainAndTheCallIsAnErrorResult) {
  StubServer stub(dir_.path().string());
  const Env e = tools_env(
      stub,
      {{"mcp_servers",
        {{{"name", "dying"},
          {"command",
           {node_bin(), std::string(AUTONOUS_SOURCE_DIR) + "/tests/e2e/data/dying_mcp.mjs"}}}}}});
  const int64_t t = enqueue("c", "[[stub:tool:ok]] [[stub:tool:die]]");
  const int64_t after = enqueue("c", "again [[stub:tool:ok]]");
  const ProcessResult r = drain(e);
  // A name the wire does not take is left out, said at start.
  EXPECT_NE(r.err.find("tool \"bad.name\" left out"), std::string::npos) << r.err;
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'done'"), 2);
  const auto calls = payloads("tool.call", t);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0]["status"], "ok");
  EXPECT_EQ(calls[1]["status"], "error");
  EXPECT_NE(calls[1]["error"].get<std::string>().find("not repeated"), std::string::npos)
      << calls[1].dump();
  const auto later = payloads("tool.call", after);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0]["status"], "ok") << later[0].dump();  // the server runs again
}

}  // namespace
}  // namespace autonous::testing
