#pragma once
// The client's tests' shared setup (client_test.cpp, providers_test.cpp): a Client over a
// scripted transport, a plain 2xx answer, and the error a call must throw.

#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "internal/openai/client.h"
#include "tests/support/scripted_transport.h"

namespace autonous::openai::testing_support {

inline const std::string kOk = R"({"id":"x","model":"gpt-4o-mini-2024","system_fingerprint":"fp",
  "choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],
  "usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,
           "prompt_tokens_details":{"cached_tokens":8}}})";

class ClientFixture : public ::testing::Test {
 protected:
  Client client() {
    return Client(transport_,
                  {"http://127.0.0.1:1/v1", "sk-secret", "m1", std::chrono::seconds(5)});
  }
  const std::vector<common::Message> messages_ = {{common::Role::kSystem, "sys", 0},
                                                  {common::Role::kUser, "hi", 0}};
  testing::ScriptedTransport transport_;
};

// Runs one chat against a scripted response and returns the error of type E it must throw.
template <typename E>
E expect_throw(Client c, const std::vector<common::Message>& m) {
  try {
    c.chat(m);
  } catch (const E& e) {
    return e;
  }
  ADD_FAILURE() << "no exception of the expected type";
  throw std::logic_error("unreachable");
}

}  // namespace autonous::openai::testing_support
