#pragma once
// Where an installed binary finds its data. The Debian package (scripts/package) puts the
// binary in <prefix>/bin and the tokenizer files in <prefix>/share/autonous/tokenizer; a binary
// built in a checkout uses scripts/bootstrap's /usr/local/share/autonous/tokenizer.

#include <string>

namespace autonous::config {

// <this binary's folder>/../share/autonous/tokenizer when that folder exists, else `fallback`.
std::string tokenizer_dir_beside_binary(const std::string& fallback);

// TOKENIZER_CACHE_DIR from its `setting` and the environment's values ("" when unset): an
// absolute path; off: "" (no cache); unset or blank: the entry of systemd's CACHE_DIRECTORY
// named autonous (the unit's CacheDirectory=autonous; any other is another service's) +
// /tokenizer, else
// XDG_CACHE_HOME/autonous/tokenizer, else HOME/.cache/autonous/tokenizer (relative ones are
// ignored), else "". Throws ConfigError for a relative path.
std::string tokenizer_cache_dir(const std::string& setting, const std::string& cache_directory,
                                const std::string& xdg_cache_home, const std::string& home);

}  // namespace autonous::config
