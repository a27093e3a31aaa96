#include "internal/config/listen_address.h"

#include <gtest/gtest.h>

#include "internal/config/config.h"

namespace autonous::config {
namespace {

TEST(ListenAddressTest, APortAloneBindsLoopback) {
  const ListenAddress a = parse_listen_address("9464");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 9464);
  EXPECT_TRUE(a.loopback);
}

TEST(ListenAddressTest, HostsAndBracketedIpv6) {
  EXPECT_TRUE(parse_listen_address("127.0.0.2:80").loopback);
  EXPECT_TRUE(parse_listen_address("localhost:80").loopback);
  const ListenAddress v6 = parse_listen_address("[::1]:9464");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_TRUE(v6.loopback);
  EXPECT_EQ(v6.to_string(), "[::1]:9464");
  EXPECT_FALSE(parse_listen_address("0.0.0.0:9464").loopback);
  EXPECT_FALSE(parse_listen_address("[::]:9464").loopback);
  EXPECT_FALSE(parse_listen_address("10.0.0.5:1").loopback);
  EXPECT_FALSE(parse_listen_address("127.evil.example:1").loopback);  // a name, not 127/8
  EXPECT_FALSE(parse_listen_address("[::ffff:10.0.0.1]:1").loopback);
}

TEST(ListenAddressTest, BadAddressesSayWhy) {
  for (const char* bad : {"", "x", ":9464", "host:", "host:65536", "host:-1", "::1:9464",
                          "[::1]:abc", "a b:1", "h/st:1"})
    EXPECT_THROW(parse_listen_address(bad), std::invalid_argument) << bad;
}

TEST(ListenAddressTest, ANonLoopbackAddressNeedsAToken) {
  EXPECT_NO_THROW(check_listen_token(parse_listen_address("9464"), ""));
  EXPECT_NO_THROW(check_listen_token(parse_listen_address("0.0.0.0:1"), "tok"));
  try {
    check_listen_token(parse_listen_address("0.0.0.0:1"), "");
    FAIL() << "no token accepted off loopback";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.variable(), "HTTP_TOKEN");
  }
  EXPECT_THROW(check_listen_token(parse_listen_address("9464"), "a b"), ConfigError);
}

TEST(ListenAddressTest, LoadConfigReadsHttpListenAndRefusesNoToken) {
  auto env = [](std::map<std::string, std::string> vars) {
    return [vars](std::string_view name) -> std::optional<std::string> {
      const auto it = vars.find(std::string(name));
      return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
  };
  EXPECT_FALSE(load_config(env({})).http_listen);  // off by default
  EXPECT_EQ(load_config(env({{"HTTP_LISTEN", "127.0.0.1:9"}})).http_listen->port, 9);
  try {
    load_config(env({{"HTTP_LISTEN", "0.0.0.0:9"}}));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.variable(), "HTTP_TOKEN");
  }
  try {
    load_config(env({{"HTTP_LISTEN", "nope:x"}}));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.variable(), "HTTP_LISTEN");
  }
}

}  // namespace
}  // namespace autonous::config
