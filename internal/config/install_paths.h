#pragma once
// Where an installed binary finds its data. The Debian package (scripts/package) puts the
// binary in <prefix>/bin and the tokenizer files in <prefix>/share/autonous/tokenizer; a binary
// built in a checkout uses scripts/bootstrap's /usr/local/share/autonous/tokenizer.

#include <string>

namespace autonous::config {

// <this binary's folder>/../share/autonous/tokenizer when that folder exists, else `fallback`.
std::string tokenizer_dir_beside_binary(const std::string& fallback);

}  // namespace autonous::config
