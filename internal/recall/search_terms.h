#pragma once
// Search terms: the words a text is indexed and searched by (recall's full-text search).
// ICU's word break iterator segments every script, Chinese and Japanese with its dictionary, so
// a two-character word is a term of its own; a CJK word longer than two characters also yields
// its overlapping two-character pieces, so a question's short word finds it inside a compound.
// Latin words are stemmed with Snowball's English stemmer and Cyrillic ones with its Russian one
// (inflected forms meet); everything is lower-cased; numbers stay as written. Index and query go
// through the same function, so they agree. Invalid UTF-8 is repaired first. Thread-safe.

#include <string>
#include <string_view>
#include <vector>

namespace autonous::recall {

// The terms of `text` in order (a term repeats as often as it occurs).
std::vector<std::string> search_terms(std::string_view text);

// The terms a question is searched by: search_terms() without the function words that carry
// no subject ("what", "is", "my", "как", "的", "は", …; English, Russian, German, French, Spanish,
// Chinese and Japanese lists), so a greeting or a question of common words searches nothing.
std::vector<std::string> search_query_terms(std::string_view text);

// The terms of `text` joined by single spaces: the form the full-text index stores (every term
// is one token under SQLite FTS5's unicode61 tokenizer).
std::string search_terms_text(std::string_view text);

}  // namespace autonous::recall
