#pragma once
// A lease token: 128 random bits as 32 hex characters, new for every claim.

#include <string>

namespace autonous::queue {

std::string new_lease_token();

}  // namespace autonous::queue
