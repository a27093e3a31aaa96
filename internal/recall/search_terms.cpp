#include "internal/recall/search_terms.h"

#include <algorithm>
#include <array>
#include <memory>
#include <unordered_set>

#include <libstemmer.h>
#include <unicode/brkiter.h>
#include <unicode/locid.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/uscript.h>

#include "internal/common/utf8.h"

namespace autonous::recall {
namespace {

// Longer "words" (a base64 blob, a URL without breaks) are not worth indexing.
constexpr int32_t kMaxTermChars = 40;

struct StemmerDeleter {
  void operator()(sb_stemmer* s) const noexcept { sb_stemmer_delete(s); }
};
using Stemmer = std::unique_ptr<sb_stemmer, StemmerDeleter>;

// One set per thread: a Snowball stemmer and an ICU break iterator are not thread-safe.
struct Analyzers {
  Stemmer english{sb_stemmer_new("english", "UTF_8")};
  Stemmer russian{sb_stemmer_new("russian", "UTF_8")};
  std::unique_ptr<icu::BreakIterator> words;
  Analyzers() {
    UErrorCode status = U_ZERO_ERROR;
    words.reset(icu::BreakIterator::createWordInstance(icu::Locale::getRoot(), status));
    if (U_FAILURE(status)) words.reset();
  }
};

Analyzers& analyzers() {
  thread_local Analyzers a;
  return a;
}

bool is_cjk(UScriptCode script) {
  return script == USCRIPT_HAN || script == USCRIPT_HIRAGANA || script == USCRIPT_KATAKANA ||
         script == USCRIPT_HANGUL;
}

std::string utf8(const icu::UnicodeString& s) {
  std::string out;
  s.toUTF8String(out);
  return out;
}

void add_stemmed(sb_stemmer* stemmer, const std::string& word, std::vector<std::string>& out) {
  if (stemmer == nullptr) {
    out.push_back(word);
    return;
  }
  const sb_symbol* stem = sb_stemmer_stem(stemmer, reinterpret_cast<const sb_symbol*>(word.data()),
                                          static_cast<int>(word.size()));
  if (stem == nullptr) {
    out.push_back(word);
    return;
  }
  out.emplace_back(reinterpret_cast<const char*>(stem),
                   static_cast<size_t>(sb_stemmer_length(stemmer)));
}

// A CJK word, and its two-character pieces when it is longer.
void add_cjk(const icu::UnicodeString& word, std::vector<std::string>& out) {
  out.push_back(utf8(word));
  const int32_t chars = word.countChar32();
  if (chars <= 2) return;
  int32_t at = 0;
  for (int32_t i = 0; i + 1 < chars; ++i) {
    const int32_t next = word.moveIndex32(at, 1);
    const int32_t end = word.moveIndex32(next, 1);
    out.push_back(utf8(word.tempSubStringBetween(at, end)));
    at = next;
  }
}

// Function words, lower-cased, as written (checked before stemming), by language. The lists of
// Latin-script languages share spellings with other languages' content words (German "die",
// French "son", Spanish "con" are English words), so a question drops the function words of
// its own Latin-script language only: the one whose list it hits most, at least twice (English
// otherwise, and on a tie).
using StopSet = std::unordered_set<std::string>;
enum StopList { kEnglish, kRussian, kGerman, kFrench, kSpanish, kChinese, kJapanese, kLists };

const std::array<StopSet, kLists>& stop_lists() {
  static const std::array<StopSet, kLists> kStop = [] {
    std::array<StopSet, kLists> out;
    const std::array<const char*, kLists> lists = {
        // English
        "a about above after again all also am an and any are as at be because been before "
        "being both but by can could did do does doing done down during each few for from "
        "get got had has have having he her here hers him his how i if in into is it its "
        "just know let like me more most my no nor not now of off on once only or other our "
        "out over own please remember said same say she should so some such tell than that "
        "the their them then there these they this those through to too under until up us "
        "very was we were what when where which while who whom why will with would you your "
        "yours hi hello hey thanks thank ok okay yes",
        // Russian
        "а без бы в вам вас во вот все всё вы где да для до его ее её если есть еще ещё же за "
        "и из или им их к как какая какой когда кто ли мне мной мой моя мы на не нет ни но "
        "ну о об он она они оно от по под привет при с со так там то тоже ты у уже что чтобы "
        "это я мою моё мои моего моей моим моими моих моему твой твоя твою твоё твои твоего "
        "твоей наш наша наше наши нашего ваш ваша ваше ваши его ей ему ней нему них ним себя "
        "себе сейчас теперь зовут какое какие каком скажи напомни",
        // German
        "aber als am an auch auf aus bei bin bis da das dass dein dem den der des die du ein "
        "eine einen einer es für hat hatte ich ihr im in ist ja kann mein meine mich mir mit "
        "nach nicht noch nun oder sein sich sie sind so um und uns von war was wer wie wir "
        "wo zu",
        // French
        "au aux avec ce ces dans de des du elle en est et eu il ils je la le les leur lui ma "
        "mais me mes moi mon ne nous on ou où par pas pour qu que quel quelle qui sa se ses "
        "son sur ta te tes toi ton tu un une vos votre vous",
        // Spanish
        "al como con cual cuál de del el ella en es esta está este fue ha la las le lo los mi "
        "mis me muy no nos o para pero por que qué se si sí su sus te tu tú un una y ya yo",
        // Chinese
        "的 了 是 我 你 他 她 它 们 我们 你们 吗 呢 吧 啊 在 有 和 就 都 也 不 这 那 什么 怎么 "
        "哪 哪里 谁 一个 请 吗 么 我的 你的 他的 她的 我们的 你们的 现在 告诉 多少 叫",
        // Japanese (particles and copulas ICU keeps apart)
        "は が を に の で と も へ や か ね よ な です ます でした ました だ の は 私 あなた "
        "何 なに どこ いつ だれ 誰 これ それ あれ この その あの"};
    for (size_t i = 0; i < lists.size(); ++i) {
      std::string word;
      for (const char* p = lists[i];; ++p) {
        if (*p == ' ' || *p == '\0') {
          if (!word.empty()) out[i].insert(word);
          word.clear();
          if (*p == '\0') break;
        } else {
          word += *p;
        }
      }
    }
    return out;
  }();
  return kStop;
}

// The Latin-script stop list for a question of these (lower-cased) words.
const StopSet& latin_stop_list(const std::vector<std::string>& words) {
  const auto& lists = stop_lists();
  auto hits = [&](StopList l) {
    size_t n = 0;
    for (const std::string& w : words) n += lists[l].count(w);
    return n;
  };
  // Another language needs two of its function words and more than English has ("war?" and
  // "Hat size?" stay English questions).
  StopList best = kEnglish;
  size_t best_hits = std::max<size_t>(hits(kEnglish), 1);
  for (const StopList l : {kGerman, kFrench, kSpanish}) {
    const size_t n = hits(l);
    if (n > best_hits) {
      best = l;
      best_hits = n;
    }
  }
  return lists[best];
}

// `latin_stop`: the question's Latin-script function words (nullptr: not a question).
void add_piece(const icu::UnicodeString& word, Analyzers& a, const StopSet* latin_stop,
               std::vector<std::string>& out) {
  const int32_t chars = word.countChar32();
  if (chars == 0 || chars > kMaxTermChars) return;
  UErrorCode status = U_ZERO_ERROR;
  const UScriptCode script = uscript_getScript(word.char32At(0), &status);
  if (latin_stop != nullptr) {
    const std::string w = utf8(word);
    const auto& lists = stop_lists();
    if (script == USCRIPT_LATIN
            ? latin_stop->count(w) != 0
            : lists[kRussian].count(w) + lists[kChinese].count(w) + lists[kJapanese].count(w) != 0)
      return;
  }
  if (is_cjk(script)) {
    add_cjk(word, out);
  } else if (script == USCRIPT_LATIN) {
    add_stemmed(a.english.get(), utf8(word), out);
  } else if (script == USCRIPT_CYRILLIC) {
    add_stemmed(a.russian.get(), utf8(word), out);
  } else {
    out.push_back(utf8(word));
  }
}

bool word_char(UChar32 c) {
  return (U_GET_GC_MASK(c) & (U_GC_L_MASK | U_GC_N_MASK | U_GC_M_MASK | U_GC_CO_MASK)) != 0;
}

// A word split at what is neither a letter, a number nor a mark ("don't", "3.14", "a_b"): every
// term is then one token of the index's tokenizer (unicode61, categories L* N* Co M*).
void split_word(const icu::UnicodeString& word, std::vector<icu::UnicodeString>& out) {
  int32_t start = -1;
  for (int32_t i = 0; i <= word.length();) {
    const bool end = i == word.length();
    const UChar32 c = end ? 0 : word.char32At(i);
    if (!end && word_char(c)) {
      if (start < 0) start = i;
    } else if (start >= 0) {
      out.push_back(word.tempSubStringBetween(start, i));
      start = -1;
    }
    i += end ? 1 : U16_LENGTH(c);
  }
}

std::vector<std::string> terms(std::string_view text, bool query) {
  std::vector<std::string> out;
  Analyzers& a = analyzers();
  if (!a.words || text.empty()) return out;
  const std::string clean = common::sanitize_utf8(text);
  icu::UnicodeString s = icu::UnicodeString::fromUTF8(clean);
  s.toLower(icu::Locale::getRoot());
  a.words->setText(s);
  std::vector<icu::UnicodeString> pieces;
  int32_t start = a.words->first();
  for (int32_t end = a.words->next(); end != icu::BreakIterator::DONE;
       start = end, end = a.words->next()) {
    // Words only: letters, numbers, kana, ideographs (not spaces or punctuation).
    if (a.words->getRuleStatus() < UBRK_WORD_NONE_LIMIT) continue;
    split_word(s.tempSubStringBetween(start, end), pieces);
  }
  const StopSet* latin_stop = nullptr;
  if (query) {
    std::vector<std::string> words;
    for (const auto& p : pieces) words.push_back(utf8(p));
    latin_stop = &latin_stop_list(words);
  }
  for (const auto& p : pieces) add_piece(p, a, latin_stop, out);
  return out;
}

}  // namespace

std::vector<std::string> search_terms(std::string_view text) { return terms(text, false); }

std::vector<std::string> search_query_terms(std::string_view text) { return terms(text, true); }

std::string search_terms_text(std::string_view text) {
  std::string out;
  for (const std::string& term : search_terms(text)) {
    if (!out.empty()) out += ' ';
    out += term;
  }
  return out;
}

}  // namespace autonous::recall
