// SHA-256 and HMAC-SHA256 against published vectors (FIPS 180-2, RFC 4231): the reply
// webhook's signature is what a receiver recomputes with its own library.
#include "internal/common/sha256.h"

#include <string>

#include <gtest/gtest.h>

namespace autonous::common {
namespace {

TEST(Sha256Test, MatchesTheStandardsVectors) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(HmacSha256Test, MatchesRfc4231) {
  // Test case 2: a short key.
  EXPECT_EQ(hmac_sha256_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Test case 6: a key longer than the block (hashed first).
  EXPECT_EQ(hmac_sha256_hex(std::string(131, '\xaa'),
                            "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(HmacSha256Test, TheKeyAndEveryByteOfTheBodyCount) {
  const std::string body = R"({"task_id":1,"reply":"hi"})";
  EXPECT_NE(hmac_sha256_hex("a", body), hmac_sha256_hex("b", body));
  EXPECT_NE(hmac_sha256_hex("a", body), hmac_sha256_hex("a", body + " "));
  EXPECT_EQ(hmac_sha256_hex("a", body).size(), 64u);
}

}  // namespace
}  // namespace autonous::common
