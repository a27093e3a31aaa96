#include "internal/openai/curl_transport.h"

#include <thread>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include "internal/openai/client.h"
#include "internal/openai/errors.h"
#include "tests/support/stub_server.h"
#include "tests/support/temp_dir.h"

namespace autonous::openai {
namespace {

// A loopback listener that accepts connections and never answers: a server that hangs.
class SilentListener {
 public:
  SilentListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd_, 8);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~SilentListener() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_;
  int port_;
};

class CurlTransportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { curl_ = new CurlGlobal(); }
  static void TearDownTestSuite() { delete curl_; }
  static CurlGlobal* curl_;

  ChatResult chat(const std::string& text,
                  std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    Client c(transport_, {stub_.base_url(), "sk-curl", "m", timeout});
    return c.chat({{common::Role::kUser, text, 0}});
  }

  testing::TempDir dir_;
  testing::StubServer stub_{dir_.path().string()};
  CurlTransport transport_;
};
CurlGlobal* CurlTransportTest::curl_ = nullptr;

TEST_F(CurlTransportTest, PostsToTheStubAndParsesTheReply) {
  const ChatResult r = chat("hello");
  EXPECT_EQ(r.http_status, 200);
  EXPECT_EQ(r.content, "reply to: hello (saw 1 messages)");
  const auto log = stub_.log_lines();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(log[0])["authorization"], "Bearer sk-curl");
}

TEST_F(CurlTransportTest, ReusesOneHandleAcrossManyRequests) {
  for (int i = 0; i < 20; ++i) EXPECT_EQ(chat("n" + std::to_string(i)).http_status, 200);
}

TEST_F(CurlTransportTest, ReadsChunkedBodies) {
  EXPECT_EQ(chat("c [[stub:chunked]]").content, "reply to: c [[stub:chunked]] (saw 1 messages)");
}

TEST_F(CurlTransportTest, HttpErrorsComeBackAsResponsesWithHeaders) {
  try {
    chat("x [[stub:429:3]]");
    FAIL() << "no error";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 429);
    EXPECT_EQ(e.retry_after(), std::chrono::milliseconds(3000));
  }
}

TEST_F(CurlTransportTest, TruncatedBodyAndDroppedConnectionAreTransportErrors) {
  EXPECT_THROW(chat("x [[stub:truncated]]"), TransportError);
  EXPECT_THROW(chat("x [[stub:drop]]"), TransportError);
  // The handle still works afterwards.
  EXPECT_EQ(chat("after").http_status, 200);
}

TEST_F(CurlTransportTest, ServerThatNeverAnswersTimesOut) {
  SilentListener silent;
  Client c(transport_, {"http://127.0.0.1:" + std::to_string(silent.port()) + "/v1", "", "m",
                        std::chrono::milliseconds(500)});
  const auto started = std::chrono::steady_clock::now();
  try {
    c.chat({{common::Role::kUser, "hi", 0}});
    FAIL() << "no timeout";
  } catch (const TransportError& e) {
    EXPECT_TRUE(e.timed_out());
    EXPECT_TRUE(e.retryable());
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

TEST_F(CurlTransportTest, KeepGoingFalseAbortsAHangingCall) {
  Client c(transport_, {stub_.base_url(), "", "m", std::chrono::seconds(30)});
  const auto started = std::chrono::steady_clock::now();
  try {
    c.chat({{common::Role::kUser, "x [[stub:hang]]", 0}}, [&] {
      return std::chrono::steady_clock::now() - started < std::chrono::milliseconds(300);
    });
    FAIL() << "not aborted";
  } catch (const TransportError& e) {
    EXPECT_TRUE(e.aborted());
    EXPECT_FALSE(e.retryable());
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

TEST_F(CurlTransportTest, ConnectionRefusedIsANetworkError) {
  int port = 0;
  {
    const SilentListener taken;  // a free port, closed again when this block ends
    port = taken.port();
  }
  Client c(transport_,
           {"http://127.0.0.1:" + std::to_string(port) + "/v1", "", "m", std::chrono::seconds(2)});
  try {
    c.chat({{common::Role::kUser, "hi", 0}});
    FAIL() << "connected to a closed port";
  } catch (const TransportError& e) {
    EXPECT_EQ(e.reason(), "network");
  }
}

}  // namespace
}  // namespace autonous::openai
