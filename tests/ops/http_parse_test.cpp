#include <gtest/gtest.h>

#include "internal/ops/http_server.h"
#include "internal/ops/ops_server.h"

namespace autonous::ops {
namespace {

TEST(HttpParseTest, ARequestWithQueryAndHeaders) {
  HttpRequest r;
  ASSERT_TRUE(parse_request_head(
      "GET /chat?id=a%20b%26c&x=1+2 HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer t \r\n\r\n", r));
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.path, "/chat");
  EXPECT_EQ(r.query.at("id"), "a b&c");
  EXPECT_EQ(r.query.at("x"), "1 2");
  EXPECT_EQ(r.headers.at("authorization"), "Bearer t");
}

TEST(HttpParseTest, MalformedHeadsAreRefused) {
  HttpRequest r;
  for (const char* bad :
       {"\r\n\r\n", "GET\r\n\r\n", "GET / HTTP/2.0\r\n\r\n", "GET x HTTP/1.1\r\n\r\n",
        "get / HTTP/1.1\r\n\r\n", "GET /%zz HTTP/1.1\r\n\r\n", "GET /%4 HTTP/1.1\r\n\r\n",
        "GET /a%00b HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\nno colon\r\n\r\n",
        "GET / HTTP/1.1\r\n: empty name\r\n\r\n", "GET / HTTP/1.1\r\nbad name: v\r\n\r\n",
        // A second Host, Authorization or Content-Length (any case) is refused.
        "GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n",
        "GET / HTTP/1.1\r\nAuthorization: Bearer a\r\nAUTHORIZATION: Bearer b\r\n\r\n",
        "GET / HTTP/1.1\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\n"}) {
    HttpRequest fresh;
    EXPECT_FALSE(parse_request_head(bad, fresh)) << bad;
  }
  EXPECT_TRUE(parse_request_head("HEAD / HTTP/1.0\r\n\r\n", r));
  HttpRequest twice;  // other headers may repeat: the last one is kept
  EXPECT_TRUE(parse_request_head("GET / HTTP/1.1\r\nAccept: a\r\nAccept: b\r\n\r\n", twice));
  EXPECT_EQ(twice.headers.at("accept"), "b");
}

TEST(HttpParseTest, PercentDecoding) {
  std::string out;
  EXPECT_TRUE(percent_decode("%41%62c+d", out, true));
  EXPECT_EQ(out, "Abc d");
  EXPECT_TRUE(percent_decode("c+d", out, false));
  EXPECT_EQ(out, "c+d");
  EXPECT_FALSE(percent_decode("%", out, false));
  EXPECT_FALSE(percent_decode("a%4", out, false));
  EXPECT_FALSE(percent_decode("%g1", out, false));
}

TEST(HttpParseTest, Base64ForBasicAuthentication) {
  std::string out;
  EXPECT_TRUE(base64_decode("dXNlcjpzM2NyZXQ=", out));
  EXPECT_EQ(out, "user:s3cret");
  EXPECT_FALSE(base64_decode("dXN!cg==", out));
  EXPECT_FALSE(base64_decode("dX=Nl", out));
}

}  // namespace
}  // namespace autonous::ops
