#include "internal/tokens/pretokenizer.h"

#include <cstdint>
#include <vector>

#include "internal/common/utf8.h"
#include "internal/tokens/unicode_class.h"

namespace autonous::tokens {
namespace {

// The decoded text: code points, their byte offsets (plus one past the end) and classes.
struct Decoded {
  std::vector<uint32_t> cp;
  std::vector<uint32_t> offset;
  std::vector<uint8_t> cls;
  size_t n = 0;
};

void decode(std::string_view s, Decoded& d) {
  d.cp.clear();
  d.offset.clear();
  d.cls.clear();
  const auto* bytes = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0;
  while (i < s.size()) {
    uint32_t cp = bytes[i];
    const size_t len = cp < 0x80 ? 1 : common::decode_at(bytes + i, bytes + s.size(), &cp);
    d.cp.push_back(cp);
    d.offset.push_back(static_cast<uint32_t>(i));
    d.cls.push_back(unicode_class(cp));
    i += len;
  }
  d.offset.push_back(static_cast<uint32_t>(s.size()));
  d.n = d.cp.size();
}

class Scanner {
 public:
  explicit Scanner(const Decoded& d) : d_(d) {}

  // Llama 3 and Qwen 2 share cl100k's pattern but Qwen's \p{N} takes one digit, not three.
  size_t next_cl100k(size_t i, size_t max_digits = 3) const {
    if (size_t e = contraction(i); e != 0) return e;
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (letter(i)) return run(i, kClassLetter);
    if (other(i) && letter(i + 1)) return run(i + 1, kClassLetter);
    if (number(i)) return numbers(i, max_digits);
    if (size_t e = punctuation(i, /*slash=*/false); e != 0) return e;
    return whitespace(i);
  }

  size_t next_o200k(size_t i) const {
    // [^\r\n\p{L}\p{N}]?[U]*[L]+(?i:'s|…)?  then  [^\r\n\p{L}\p{N}]?[U]+[L]*(?i:'s|…)?
    if (other(i)) {
      if (size_t e = upper_then_lower(i + 1); e != 0) return with_contraction(e);
    }
    if (size_t e = upper_then_lower(i); e != 0) return with_contraction(e);
    if (other(i)) {
      if (size_t e = upper_run_then_lower(i + 1); e != 0) return with_contraction(e);
    }
    if (size_t e = upper_run_then_lower(i); e != 0) return with_contraction(e);
    if (number(i)) return numbers(i);
    if (size_t e = punctuation(i, /*slash=*/true); e != 0) return e;
    return whitespace(i);
  }

 private:
  bool has(size_t i, uint8_t bits) const { return i < d_.n && (d_.cls[i] & bits) != 0; }
  bool letter(size_t i) const { return has(i, kClassLetter); }
  bool number(size_t i) const { return has(i, kClassNumber); }
  bool space(size_t i) const { return has(i, kClassSpace); }
  // [^\r\n\p{L}\p{N}]
  bool other(size_t i) const {
    return i < d_.n && (d_.cls[i] & (kClassCrLf | kClassLetter | kClassNumber)) == 0;
  }
  // [^\s\p{L}\p{N}]
  bool punct(size_t i) const {
    return i < d_.n && (d_.cls[i] & (kClassSpace | kClassLetter | kClassNumber)) == 0;
  }
  uint32_t cp(size_t i) const { return i < d_.n ? d_.cp[i] : 0; }

  // End of the run of code points having any of `bits`, from i.
  size_t run(size_t i, uint8_t bits) const {
    while (has(i, bits)) ++i;
    return i;
  }

  // \p{N}{1,3} (Qwen: \p{N})
  size_t numbers(size_t i, size_t max_digits = 3) const {
    size_t e = i;
    while (e < i + max_digits && number(e)) ++e;
    return e;
  }

  // (?i:'s|'t|'re|'ve|'m|'ll|'d) at i: its end, or 0. Case folding as the regex's (?i):
  // 's' also matches U+017F LATIN SMALL LETTER LONG S.
  size_t contraction(size_t i) const {
    if (cp(i) != '\'') return 0;
    auto is = [&](size_t k, char lower) {
      const uint32_t c = cp(k);
      if (c == static_cast<uint32_t>(lower) || c == static_cast<uint32_t>(lower - 'a' + 'A'))
        return k < d_.n;
      return lower == 's' && c == 0x017F;
    };
    if (is(i + 1, 's') || is(i + 1, 't') || is(i + 1, 'm') || is(i + 1, 'd')) return i + 2;
    if ((is(i + 1, 'r') || is(i + 1, 'v')) && is(i + 2, 'e')) return i + 3;
    if (is(i + 1, 'l') && is(i + 2, 'l')) return i + 3;
    return 0;
  }

  size_t with_contraction(size_t e) const {
    const size_t c = contraction(e);
    return c != 0 ? c : e;
  }

  // [U]*[L]+ from s, as a backtracking regex resolves it: U* takes its longest run, then gives
  // back until L+ can match. 0 when it cannot.
  size_t upper_then_lower(size_t s) const {
    const size_t b = run(s, kClassUpperSet);
    if (has(b, kClassLowerSet)) return run(b, kClassLowerSet);
    for (size_t k = b; k > s; --k) {
      if (has(k - 1, kClassLowerSet)) return k;  // L+ is that one code point: b's is not L
    }
    return 0;
  }

  // [U]+[L]* from s. 0 when U+ cannot match.
  size_t upper_run_then_lower(size_t s) const {
    const size_t b = run(s, kClassUpperSet);
    if (b == s) return 0;
    return run(b, kClassLowerSet);
  }

  // " ?[^\s\p{L}\p{N}]+[\r\n]*" (o200k: "[\r\n/]*"). 0 when it cannot match.
  size_t punctuation(size_t i, bool slash) const {
    size_t j = i;
    if (cp(i) == ' ' && punct(i + 1)) {
      j = i + 1;
    } else if (!punct(i)) {
      return 0;
    }
    while (punct(j)) ++j;
    while (j < d_.n && (cp(j) == '\r' || cp(j) == '\n' || (slash && cp(j) == '/'))) ++j;
    return j;
  }

  // \s*[\r\n]+ | \s+(?!\S) | \s+
  size_t whitespace(size_t i) const {
    const size_t w = run(i, kClassSpace);
    if (w == i) return i + 1;  // unreachable: every code point matches some alternative
    for (size_t k = w; k > i; --k) {
      if (has(k - 1, kClassCrLf)) return k;  // through the last \r or \n of the run
    }
    if (w == d_.n) return w;
    if (w - i >= 2) return w - 1;  // leave one space to start the next piece
    return w;
  }

  const Decoded& d_;
};

// DeepSeek V3's pre-tokenizer, three Hugging Face `Split` steps with the Isolated behaviour
// (matches and the stretches between them are pieces), each over the pieces of the one before:
//   1. \p{N}{1,3}
//   2. [\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+
//   3. [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+ | [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ |
//      " ?[\p{P}\p{S}]+[\r\n]*" | \s*[\r\n]+ | \s+(?!\S) | \s+
// A step sees its piece as the whole input: a lookahead stops at the piece's end.
class DeepSeekSplitter {
 public:
  DeepSeekSplitter(const Decoded& d, std::string_view text,
                   const std::function<void(std::string_view)>& piece)
      : d_(d), text_(text), piece_(piece) {}

  void run() { numbers(0, d_.n); }

 private:
  bool has(size_t i, size_t end, uint8_t bits) const { return i < end && (d_.cls[i] & bits) != 0; }
  uint32_t cp(size_t i) const { return d_.cp[i]; }
  void emit(size_t b, size_t e) const {
    if (e > b) piece_(text_.substr(d_.offset[b], d_.offset[e] - d_.offset[b]));
  }
  static bool cjk(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FA5) || (c >= 0x3040 && c <= 0x309F) ||
           (c >= 0x30A0 && c <= 0x30FF);
  }
  static bool ascii_letter(uint32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
  static bool ascii_punct(uint32_t c) {
    return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
           (c >= '{' && c <= '~');
  }

  // Step 1 over [b, e).
  void numbers(size_t b, size_t e) const {
    size_t gap = b;
    size_t i = b;
    while (i < e) {
      if (!has(i, e, kClassNumber)) {
        ++i;
        continue;
      }
      cjk_runs(gap, i);
      size_t k = i;
      while (k < i + 3 && has(k, e, kClassNumber)) ++k;
      cjk_runs(i, k);
      i = gap = k;
    }
    cjk_runs(gap, e);
  }

  // Step 2 over [b, e).
  void cjk_runs(size_t b, size_t e) const {
    size_t gap = b;
    size_t i = b;
    while (i < e) {
      if (!cjk(cp(i))) {
        ++i;
        continue;
      }
      size_t k = i;
      while (k < e && cjk(cp(k))) ++k;
      words(gap, i);
      words(i, k);
      i = gap = k;
    }
    words(gap, e);
  }

  // Step 3 over [b, e): the end of its match at i, or 0.
  size_t match(size_t i, size_t e) const {
    constexpr uint8_t kLetterMark = kClassLetter | kClassMark;
    if (ascii_punct(cp(i)) && i + 1 < e && ascii_letter(cp(i + 1))) {
      size_t k = i + 1;
      while (k < e && ascii_letter(cp(k))) ++k;
      return k;
    }
    const bool prefix = (d_.cls[i] & (kClassCrLf | kClassLetter | kClassPunctSym)) == 0;
    if (prefix && has(i + 1, e, kLetterMark)) {
      size_t k = i + 1;
      while (has(k, e, kLetterMark)) ++k;
      return k;
    }
    if (has(i, e, kLetterMark)) {
      size_t k = i;
      while (has(k, e, kLetterMark)) ++k;
      return k;
    }
    size_t j = i;
    if (cp(i) == ' ' && has(i + 1, e, kClassPunctSym)) j = i + 1;
    if (has(j, e, kClassPunctSym)) {
      while (has(j, e, kClassPunctSym)) ++j;
      while (j < e && (cp(j) == '\r' || cp(j) == '\n')) ++j;
      return j;
    }
    size_t w = i;
    while (has(w, e, kClassSpace)) ++w;
    if (w == i) return 0;
    for (size_t k = w; k > i; --k)
      if (has(k - 1, e, kClassCrLf)) return k;  // \s*[\r\n]+ through the run's last \r or \n
    if (w == e || w - i < 2) return w;          // \s+(?!\S), or \s+ of one
    return w - 1;
  }

  void words(size_t b, size_t e) const {
    size_t gap = b;
    size_t i = b;
    while (i < e) {
      const size_t m = match(i, e);
      if (m == 0) {
        ++i;
        continue;
      }
      emit(gap, i);
      emit(i, m);
      i = gap = m;
    }
    emit(gap, e);
  }

  const Decoded& d_;
  std::string_view text_;
  const std::function<void(std::string_view)>& piece_;
};

}  // namespace

void pretokenize(std::string_view text, SplitPattern pattern,
                 const std::function<void(std::string_view)>& piece) {
  thread_local Decoded d;
  decode(text, d);
  if (pattern == SplitPattern::kDeepSeekV3) {
    DeepSeekSplitter(d, text, piece).run();
    return;
  }
  const Scanner scan(d);
  size_t i = 0;
  while (i < d.n) {
    const size_t e = pattern == SplitPattern::kCl100k  ? scan.next_cl100k(i)
                     : pattern == SplitPattern::kQwen2 ? scan.next_cl100k(i, 1)
                                                       : scan.next_o200k(i);
    piece(text.substr(d.offset[i], d.offset[e] - d.offset[i]));
    i = e;
  }
}

}  // namespace autonous::tokens
