// The operator's tool declarations (TOOLS_FILE): what parses, and every refusal naming its entry
// and field.
#include "internal/tools/tools_file.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace autonous::tools {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_tools_file(text, "tools.json");
  } catch (const ToolsFileError& e) {
    return e.what();
  }
  return "(parsed)";
}

TEST(ToolsFileTest, AFullFileParsesWithItsDefaults) {
  const ToolsFile f = parse_tools_file(R"({
    "tools": [
      {"name": "lookup_order", "description": "Find an order by its number.",
       "parameters": {"type": "object", "properties": {"number": {"type": "string"}},
                      "required": ["number"]},
       "url": "https://orders.example/lookup", "headers": {"Authorization": "Bearer s3cret"},
       "timeout_ms": 2500},
      {"name": "ping", "url": "http://127.0.0.1:9/ping"}],
    "mcp_servers": [
      {"name": "everything", "url": "http://127.0.0.1:3001/mcp", "headers": {"X-Key": "k"}},
      {"name": "files", "command": ["npx", "server-filesystem", "/srv"], "env": {"HOME": "/tmp"}}]
  })",
                                       "tools.json");
  ASSERT_EQ(f.tools.size(), 2u);
  EXPECT_EQ(f.tools[0].name, "lookup_order");
  EXPECT_EQ(f.tools[0].timeout, std::chrono::milliseconds(2500));
  EXPECT_EQ(f.tools[0].headers, (Headers{{"Authorization", "Bearer s3cret"}}));
  EXPECT_NE(f.tools[0].parameters.find(R"("required":["number"])"), std::string::npos);
  EXPECT_EQ(f.tools[1].description, "");
  EXPECT_EQ(f.tools[1].parameters, R"({"properties":{},"type":"object"})");
  EXPECT_EQ(f.tools[1].timeout, kDefaultToolTimeout);
  ASSERT_EQ(f.mcp_servers.size(), 2u);
  EXPECT_FALSE(f.mcp_servers[0].stdio());
  EXPECT_EQ(f.mcp_servers[0].url, "http://127.0.0.1:3001/mcp");
  EXPECT_TRUE(f.mcp_servers[1].stdio());
  EXPECT_EQ(f.mcp_servers[1].command,
            (std::vector<std::string>{"npx", "server-filesystem", "/srv"}));
  EXPECT_EQ(f.mcp_servers[1].env, (Headers{{"HOME", "/tmp"}}));
}

TEST(ToolsFileTest, EachRefusalNamesTheFileTheEntryAndTheField) {
  const struct {
    const char* text;
    const char* expected;
  } cases[] = {
      {"{", "tools.json: not valid JSON at line 1, column 2"},
      {"{\n  \"tools\": [],\n}", "not valid JSON at line 3"},
      {R"({"tools": [], "tools": [{"name": "a", "url": "http://h/x"}]})",
       "the key \"tools\" is given twice in one object"},
      {R"({"mcpServers": {}})", "this file's list is \"mcp_servers\""},
      {"[]", "must be a JSON object"},
      {R"({"tool": []})", "unknown field \"tool\""},
      {R"({"tools": []})", "declares no tools and no MCP servers"},
      {R"({"tools": {}})", "\"tools\" must be an array"},
      {R"({"tools": [{"name": "look up", "url": "http://h/x"}]})",
       "tools[0] \"look up\": \"name\" \"look up\" must be 1 to 64"},
      {R"({"tools": [{"url": "http://h/x"}]})", "tools[0]: \"name\" is missing"},
      {R"({"tools": [{"name": "a", "url": "ftp://h/x"}]})", "must be an http:// or https:// URL"},
      {R"({"tools": [{"name": "a", "url": "http://"}]})", "\"url\" has no host"},
      {R"({"tools": [{"name": "a", "url": "http:///x"}]})", "\"url\" has no host"},
      {R"({"tools": [{"name": "a", "url": "http://u:pw@h/x"}]})", "holds a user or password"},
      {R"({"tools": [{"name": "a", "url": "http://h:99999/x"}]})", "port must be from 1 to 65535"},
      {R"({"tools": [{"name": "a", "url": "http://h:/x"}]})", "an empty port"},
      {R"({"tools": [{"name": "a", "url": "http://[::1/x"}]})", "without its closing ]"},
      {R"({"tools": [{"name": "a", "url": "http://h/x#frag"}]})", "a fragment (#)"},
      {R"({"tools": [{"name": "a", "url": "http://h/a b"}]})", "holds spaces"},
      {R"({"tools": [{"name": "a"}]})", "tools[0] \"a\": \"url\" is missing"},
      {R"({"tools": [{"name": "a", "url": "http://h/x", "urll": 1}]})", "unknown field \"urll\""},
      {R"({"tools": [{"name": "a", "url": "http://h/x", "timeout_ms": 5}]})",
       "\"timeout_ms\" must be an integer from 100 to 600000"},
      {R"({"tools": [{"name": "a", "url": "http://h/x", "timeout_ms": "5000"}]})",
       "\"timeout_ms\" must be an integer"},
      {R"({"tools": [{"name": "a", "url": "http://h/x", "parameters": []}]})",
       "\"parameters\" must be a JSON Schema object"},
      {R"({"tools": [{"name": "a", "url": "http://h/x", "parameters": {"type": "string"}}]})",
       "must describe an object"},
      {R"({"tools": [{"name": "a", "url": "http://h/x", "headers": {"X": "a\r\nEvil: 1"}}]})",
       "the value of \"X\" holds control characters"},
      {R"({"tools": [{"name": "a", "url": "http://h/x", "headers": {"Bad Name": "v"}}]})",
       "\"Bad Name\" is not a valid name"},
      {R"({"tools": [{"name": "a", "url": "http://h/x", "headers": {"X:Y": "v"}}]})",
       "\"X:Y\" is not a valid name"},
      {R"({"tools": [{"name": "a", "url": "http://h/x", "headers": {"Content-Length": "9"}}]})",
       "is set by the worker itself"},
      {R"({"tools": [{"name": "a", "url": "http://h/x", "headers": {"A": "1", "a": "2"}}]})",
       "\"a\" is given twice"},
      {R"({"tools": [{"name": "a", "url": "http://h/x"}, {"name": "a", "url": "http://h/y"}]})",
       "tools[1] \"a\": the name \"a\" is used twice"},
      {R"({"tools": [{"name": "a", "url": "http://h/x", "timeout_ms": 99}]})",
       "from 100 to 600000"},
      {R"({"tools": [{"name": "a", "url": "http://h/x", "timeout_ms": 600001}]})",
       "from 100 to 600000"},
      {R"({"tools": [{"name": "a", "url": "http://h/x", "headers": {"X": 1}}]})",
       "\"X\" must be a string"},
      {R"({"tools": [{"name": "a", "url": "http://h/x"}], "mcp_servers": [{"name": "a", "url": "http://h/m"}]})",
       "mcp_servers[0] \"a\": the name \"a\" is used twice"},
      {R"({"mcp_servers": [{"name": "m", "url": "http://h/m", "command": ["x"]}]})",
       "either \"url\" (Streamable HTTP) or \"command\" (stdio)"},
      {R"({"mcp_servers": [{"name": "m"}]})", "either \"url\""},
      {R"({"mcp_servers": [{"name": "m", "command": []}]})", "non-empty array of strings"},
      {R"({"mcp_servers": [{"name": "m", "command": ["x", 2]}]})", "non-empty array of strings"},
      {R"({"mcp_servers": [{"name": "m", "command": [""]}]})", "\"command\"[0] is empty"},
      {R"({"mcp_servers": [{"name": "m", "command": ["x"], "env": {"A=B": "c"}}]})",
       "\"env\": \"A=B\" is not a valid name"},
      {R"({"mcp_servers": [{"name": "m", "command": ["x"], "env": {"A": "b\u0000c"}}]})",
       "the value of \"A\" holds control characters"},
      {R"({"mcp_servers": [{"name": "m", "command": ["x\u0000y"]}]})", "holds a NUL character"},
      {R"({"mcp_servers": [{"name": "m", "command": ["npx"], "args": ["-y"]}]})",
       "give the program and its arguments together as \"command\""},
      {R"({"mcp_servers": [{"name": "m", "command": ["x"], "headers": {"A": "b"}}]})",
       "unknown field \"headers\""},
      {R"({"mcp_servers": [{"name": "m", "url": "http://h/m", "env": {"A": "b"}}]})",
       "unknown field \"env\""},
  };
  const std::string deep =
      R"({"tools": [{"name": "a", "url": "http://h/x", "parameters": {"type": "object", "x": )" +
      std::string(100, '[') + std::string(100, ']') + "}}]}";
  EXPECT_NE(error_of(deep).find("nested deeper than 64 levels"), std::string::npos)
      << error_of(deep);
  for (const auto& c : cases) {
    const std::string error = error_of(c.text);
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.text << "\n  got: " << error;
    EXPECT_EQ(error.rfind("tools.json: ", 0), 0u) << error;
  }
}

TEST(ToolsFileTest, TheWireRuleForNames) {
  EXPECT_TRUE(valid_tool_name("get-sum_2"));
  EXPECT_TRUE(valid_tool_name("None"));
  // The words of `chat set --tools`, never names.
  EXPECT_FALSE(valid_tool_name("none"));
  EXPECT_FALSE(valid_tool_name("all"));
  // What is accepted at the edges: upper-case schemes, IPv6 hosts with ports, tabs in a header's
  // value, timeouts at their bounds, a schema without "type" written out.
  const ToolsFile f = parse_tools_file(
      R"({"tools": [{"name": "a", "url": "HTTPS://[::1]:8443/x?q=1", "headers": {"X": "a\tb"},
                     "timeout_ms": 100, "parameters": {"properties": {"n": {"type": "integer"}}}},
                    {"name": "b", "url": "http://h:1/", "timeout_ms": 600000}]})",
      "tools.json");
  EXPECT_EQ(f.tools[0].timeout, std::chrono::milliseconds(100));
  EXPECT_EQ(f.tools[0].parameters, R"({"properties":{"n":{"type":"integer"}},"type":"object"})");
  EXPECT_EQ(f.tools[1].timeout, std::chrono::milliseconds(600000));
  EXPECT_TRUE(valid_tool_name(std::string(64, 'a')));
  EXPECT_FALSE(valid_tool_name(std::string(65, 'a')));
  EXPECT_FALSE(valid_tool_name(""));
  EXPECT_FALSE(valid_tool_name("a.b"));
  EXPECT_FALSE(valid_tool_name("naïve"));
}

TEST(ToolsFileTest, LoadingSaysWhichFileCannotBeReadOrIsTooLarge) {
  testing::TempDir dir;
  const std::string missing = (dir.path() / "none.json").string();
  try {
    load_tools_file(missing);
    FAIL() << "a missing file loaded";
  } catch (const ToolsFileError& e) {
    EXPECT_EQ(std::string(e.what()), missing + ": cannot be read (No such file or directory)");
  }
  const std::string big = (dir.path() / "big.json").string();
  std::ofstream(big) << std::string(kMaxToolsFileBytes + 1, ' ');
  try {
    load_tools_file(big);
    FAIL() << "an oversized file loaded";
  } catch (const ToolsFileError& e) {
    EXPECT_NE(std::string(e.what()).find("larger than"), std::string::npos) << e.what();
  }
  try {
    load_tools_file(dir.path().string());
    FAIL() << "a directory loaded";
  } catch (const ToolsFileError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
  const std::string good = (dir.path() / "good.json").string();
  std::ofstream(good) << R"({"tools": [{"name": "ping", "url": "http://127.0.0.1:9/ping"}]})";
  EXPECT_EQ(load_tools_file(good).tools.at(0).name, "ping");
}

}  // namespace
}  // namespace autonous::tools
