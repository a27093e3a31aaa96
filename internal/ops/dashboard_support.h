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
// Whether an llm.response payload is a turn's chat call (no "call", or "chat"), not a summary's
// or an embeddings call's (#31).
bool chat_call(const nlohmann::json& payload);

// Every column of `rows`' first row as a two-column key/value table (escaped); columns named
// in `hidden` are left out.
std::string row_table(const std::string& id, const Rows& rows,
                      const std::vector<std::string>& hidden = {});

// Cut to `max_chars` code points with "…".
std::string snippet(const std::string& text, size_t max_chars);

// A page shows at most this many characters of one text (a message, a reply, an error, a
// summary, an event's payload), and says how long the whole is: a 50 MB message makes a page
// of kShownChars, not of 200 MB, and a client that never reads holds a thread for no longer
// than the write deadline of a page that fits the socket's buffer.
inline constexpr size_t kShownChars = 20000;
// `text` (any bytes) escaped in <pre id='id'> (no id when empty), at most `max_chars` of it,
// followed by "first N of M characters shown" when cut.
std::string bounded_pre(const std::string& id, const std::string& text,
                        size_t max_chars = kShownChars);

}  // namespace autonous::ops::detail
