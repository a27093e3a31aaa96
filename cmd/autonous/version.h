#pragma once
// The binary's version: the CMake project's, with git's description of the commit when built
// from a checkout (cmake/version.cmake writes it at build time). `autonous --version` prints
// it; so do the first log line of `worker` and `dashboard` and the autonous_build_info metric.

#include <string_view>

namespace autonous::cmd {

std::string_view version();

}  // namespace autonous::cmd
