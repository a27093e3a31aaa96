#pragma once
// ToolsE2eTest: the real worker with TOOLS_FILE's HTTP tools, all served by the stub at
// /tool/... (tools_e2e_test.cpp, tools_chat_e2e_test.cpp).

#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/e2e/e2e_support.h"

namespace autonous::testing {

class ToolsE2eTest : public E2eTest {
 protected:
  // A tools file of the stub's endpoints (hang's timeout short), and the worker's environment.
  Env tools_env(const StubServer& stub, Env extra = {}) {
    const std::string base = "http://127.0.0.1:" + std::to_string(stub.port()) + "/tool/";
    const nlohmann::json file = {
        {"tools",
         {{{"name", "echo"},
           {"description", "Says back what it was asked"},
           {"parameters", {{"type", "object"}, {"properties", {{"q", {{"type", "string"}}}}}}},
           {"url", base + "echo"},
           {"headers", {{"Authorization", "Bearer tool-secret-123"}}}},
          {{"name", "fail"}, {"url", base + "fail"}},
          {{"name", "whoami"},
           {"url", base + "headers"},
           {"headers", {{"Authorization", "Bearer tool-secret-123"}, {"X-Api-Key", "key-456789"}}}},
          {{"name", "hang"}, {"url", base + "hang"}, {"timeout_ms", hang_ms_}},
          {{"name", "huge"}, {"url", base + "huge"}},
          {{"name", "badutf8"}, {"url", base + "badutf8"}},
          {{"name", "together"}, {"url", base + "together"}, {"timeout_ms", 5000}}}}};
    const std::string path = dir_.file("tools.json");
    std::ofstream(path) << file.dump();
    Env e = env(stub, std::move(extra));
    e["TOOLS_FILE"] = path;
    e["OPENAI_MODEL"] = "gpt-4o-mini";
    return e;
  }
  int hang_ms_ = 500;
};

}  // namespace autonous::testing
