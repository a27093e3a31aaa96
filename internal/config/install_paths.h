#pragma once
// Where an installed binary finds its data. The Debian package (scripts/package) puts the
// binary in <prefix>/bin and the tokenizer files in <prefix>/share/autonous/tokenizer; a binary
// built in a checkout uses scripts/bootstrap's /usr/local/share/autonous/tokenizer.

#include <string>

namespace autonous::config {

// <this binary's folder>/../share/autonous/tokenizer when that folder exists, else `fallback`.
std::string tokenizer_dir_beside_binary(const std::string& fallback);

// TOKENIZER_CACHE_DIR's default, from the environment's values ("" when unset): systemd's
// CACHE_DIRECTORY (the unit's CacheDirectory=; the first of several) + /tokenizer, else
// XDG_CACHE_HOME/autonous/tokenizer, else HOME/.cache/autonous/tokenizer, else "" (no cache).
std::string default_tokenizer_cache_dir(const std::string& cache_directory,
                                        const std::string& xdg_cache_home, const std::string& home);

}  // namespace autonous::config
