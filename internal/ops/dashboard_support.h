#pragma once
// What the operator surface shares: percentiles, JSON field access that tolerates any payload,
// and a key/value table of one row.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "internal/ops/page_db.h"

namespace autonous::ops::detail {

// The q-quantile (0..1) of `values` by nearest rank; NaN when empty. Sorts `values`.
double percentile(std::vector<double>& values, double q);

// A number at `key` of an object, or `fallback`.
double num(const nlohmann::json& j, const char* key, double fallback = 0);
// A string at `key`, or the value's JSON text, or "".
std::string str(const nlohmann::json& j, const char* key);

// Every column of `rows`' first row as a two-column key/value table (escaped); columns named
// in `hidden` are left out.
std::string row_table(const std::string& id, const Rows& rows,
                      const std::vector<std::string>& hidden = {});

// Cut to `max_chars` code points with "…".
std::string snippet(const std::string& text, size_t max_chars);

}  // namespace autonous::ops::detail
