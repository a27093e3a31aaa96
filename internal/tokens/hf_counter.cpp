#include "internal/tokens/hf_counter.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>

namespace autonous::tokens {
namespace {

// The pre-tokenizer patterns each family's tokenizer.json holds (its Split steps, in order).
const std::vector<std::string>& expected_splits(SplitPattern p) {
  static const std::vector<std::string> kLlama3 = {
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
  static const std::vector<std::string> kQwen2 = {
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
  static const std::vector<std::string> kDeepSeekV3 = {
      R"(\p{N}{1,3})", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
      "[!\"#$%&'()*+,\\-./"
      ":;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
      "?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"};
  switch (p) {
    case SplitPattern::kQwen2:
      return kQwen2;
    case SplitPattern::kDeepSeekV3:
      return kDeepSeekV3;
    default:
      return kLlama3;
  }
}

// GPT-2's byte-level alphabet: the code point each byte is written as in a vocabulary.
std::vector<int> unicode_to_byte() {
  std::vector<int> back(324, -1);
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    back[static_cast<size_t>(printable ? b : 256 + extra++)] = b;
  }
  return back;
}

// A vocabulary string in the byte-level alphabet → its bytes; false when a code point is not
// in the alphabet.
bool decode_byte_level(const std::string& s, const std::vector<int>& back, std::string& out) {
  out.clear();
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    uint32_t cp = p[i];
    size_t len = 1;
    if (cp >= 0xC0 && cp < 0xE0 && i + 1 < n) {
      cp = ((cp & 0x1F) << 6) | (p[i + 1] & 0x3F);
      len = 2;
    } else if (cp >= 0x80) {
      return false;  // the alphabet has nothing above U+0143
    }
    if (cp >= back.size() || back[cp] < 0) return false;
    out.push_back(static_cast<char>(back[cp]));
    i += len;
  }
  return true;
}

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

}  // namespace

const std::vector<HfFamily>& hf_families() {
  // Framing from each chat template (rendered with add_generation_prompt):
  //  llama3: <|start_header_id|>ROLE<|end_header_id|>\n\n … <|eot_id|> per message;
  //          <|begin_of_text|> and the assistant header per request, and the 20 tokens of the
  //          date lines Llama 3.1-3.3's template writes into the system message ("Cutting
  //          Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"): 25. Llama 3.0's
  //          template has none, so it is counted 20 high (the safe side).
  //  qwen3:  <|im_start|>ROLE\n … <|im_end|>\n per message; <|im_start|>assistant\n per request.
  //  deepseek_v3: <｜User｜>, or an assistant's <｜Assistant｜> … <｜end▁of▁sentence｜> (2, the
  //          most a message adds); <｜begin▁of▁sentence｜> and <｜Assistant｜> per request.
  static const std::vector<HfFamily> kFamilies = {
      {"llama3", "llama3.tokenizer.json", SplitPattern::kCl100k, false, 5, 25},
      {"qwen3", "qwen3.tokenizer.json", SplitPattern::kQwen2, true, 5, 3},
      {"deepseek_v3", "deepseek_v3.tokenizer.json", SplitPattern::kDeepSeekV3, false, 2, 2},
  };
  return kFamilies;
}

const HfFamily* hf_family(std::string_view name) {
  for (const HfFamily& f : hf_families())
    if (f.name == name) return &f;
  return nullptr;
}

// `m` holds `name` followed by something other than a digit (llama-3.1, not llama-30b).
bool names(std::string_view m, std::string_view name) {
  for (size_t at = m.find(name); at != std::string_view::npos; at = m.find(name, at + 1)) {
    const size_t end = at + name.size();
    if (end == m.size() || std::isdigit(static_cast<unsigned char>(m[end])) == 0) return true;
  }
  return false;
}

const HfFamily* hf_family_for_model(std::string_view model) {
  std::string m(model);
  std::transform(m.begin(), m.end(), m.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // Ollama's deepseek-r1 tags below 671b are R1's distills: 8b and 70b of Llama 3, the others of
  // Qwen 2.5; any "distill" names its base.
  if (contains(m, "deepseek-r1:") && !contains(m, "671b"))
    return hf_family(contains(m, ":8b") || contains(m, ":70b") ? "llama3" : "qwen3");
  if (contains(m, "deepseek") && !contains(m, "distill") && !contains(m, "v2") &&
      !contains(m, "coder") && !contains(m, "llm") &&
      (contains(m, "v3") || contains(m, "r1") || contains(m, "deepseek-chat") ||
       contains(m, "deepseek-reasoner")))
    return hf_family("deepseek_v3");
  for (const char* p : {"llama-3", "llama3", "llama_3", "llama-v3", "distill-llama"})
    if (names(m, p)) return hf_family("llama3");
  // Qwen 1 ("qwen-7b-chat", "qwen1.5") is left out: only Qwen 2 and later are checked here.
  const size_t dash = m.find("qwen-");
  const bool qwen1 = contains(m, "qwen1") ||
                     (!contains(m, "distill") && dash != std::string::npos && dash + 5 < m.size() &&
                      std::isdigit(static_cast<unsigned char>(m[dash + 5])));
  if ((contains(m, "qwen") || contains(m, "qwq")) && !qwen1) return hf_family("qwen3");
  return nullptr;
}

void HfCounter::index_added() {
  std::sort(added_.begin(), added_.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  added_.erase(std::remove(added_.begin(), added_.end(), std::string()), added_.end());
  by_first_.assign(256, {});
  for (size_t i = 0; i < added_.size(); ++i)
    by_first_[static_cast<unsigned char>(added_[i][0])].push_back(static_cast<uint32_t>(i));
}

size_t HfCounter::added_at(std::string_view text) const {
  for (const uint32_t i : by_first_[static_cast<unsigned char>(text[0])]) {
    const std::string& a = added_[i];
    if (text.size() >= a.size() && text.compare(0, a.size(), a) == 0) return a.size();
  }
  return 0;
}

int64_t HfCounter::count_plain(std::string_view text) const {
  int64_t total = 0;
  pretokenize(text, family_.pattern,
              [&](std::string_view piece) { total += ranks_.count_piece(piece); });
  return total;
}

int64_t HfCounter::count_text(std::string_view text) const {
  std::string normalized;
  if (family_.nfc) {
    UErrorCode err = U_ZERO_ERROR;
    const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(err);
    const icu::StringPiece sp(text.data(), static_cast<int32_t>(text.size()));
    if (U_SUCCESS(err) && !nfc->isNormalizedUTF8(sp, err) && U_SUCCESS(err)) {
      icu::StringByteSink<std::string> sink(&normalized, static_cast<int32_t>(text.size()));
      nfc->normalizeUTF8(0, sp, sink, nullptr, err);
      if (U_SUCCESS(err)) text = normalized;
    }
  }
  // Added tokens first, leftmost-longest, as the tokenizer splits them out.
  int64_t total = 0;
  size_t plain = 0;
  size_t i = 0;
  while (i < text.size()) {
    const size_t a =
        by_first_[static_cast<unsigned char>(text[i])].empty() ? 0 : added_at(text.substr(i));
    if (a == 0) {
      ++i;
      continue;
    }
    if (i > plain) total += count_plain(text.substr(plain, i - plain));
    ++total;
    i += a;
    plain = i;
  }
  if (text.size() > plain) total += count_plain(text.substr(plain));
  return total;
}

namespace {

// The model, pre-tokenizer and normaliser must be `f`'s. Throws std::runtime_error saying what
// differs.
void check_shape(const nlohmann::json& j, const HfFamily& f) {
  const std::string name(f.name);
  if (j.at("model").value("type", "") != "BPE") throw std::runtime_error("not a BPE model");
  // The split patterns, then a byte-level step.
  std::vector<std::string> splits;
  bool byte_level = false;
  for (const auto& step : j.at("pre_tokenizer").value("pretokenizers", nlohmann::json::array())) {
    const std::string type = step.value("type", "");
    if (type == "Split" && step.value("behavior", "") == "Isolated" && !step.value("invert", false))
      splits.push_back(step.at("pattern").at("Regex").get<std::string>());
    else if (type == "ByteLevel" && !step.value("add_prefix_space", false) &&
             !step.value("use_regex", true))
      byte_level = true;
    else
      throw std::runtime_error("pre-tokenizer step '" + type + "' is not the " + name + " one");
  }
  if (!byte_level || splits != expected_splits(f.pattern))
    throw std::runtime_error("its pre-tokenizer is not the " + name + " one");
  const auto& norm = j.at("normalizer");
  const bool nfc = !norm.is_null() && norm.value("type", "") == "NFC";
  const bool none = norm.is_null() || (norm.value("type", "") == "Sequence" &&
                                       norm.value("normalizers", nlohmann::json::array()).empty());
  if (nfc != f.nfc || (!nfc && !none))
    throw std::runtime_error("its normalizer is not the " + name + " one");
}

// The vocabulary's byte-level entries as (bytes, id); other entries (special tokens, never
// merged) are skipped, but may be at most 1 %.
std::vector<std::pair<std::string, uint32_t>> read_vocabulary(const nlohmann::json& vocab) {
  const std::vector<int> back = unicode_to_byte();
  std::vector<std::pair<std::string, uint32_t>> tokens;
  tokens.reserve(vocab.size());
  std::string bytes;
  size_t other = 0;
  for (const auto& [text, id] : vocab.items()) {
    if (!id.is_number_unsigned() || id.get<uint64_t>() >= (uint64_t{1} << 24))
      throw std::runtime_error("a vocabulary id is not a number under 2^24");
    if (decode_byte_level(text, back, bytes))
      tokens.emplace_back(bytes, id.get<uint32_t>());
    else
      ++other;
  }
  if (other * 100 > tokens.size()) throw std::runtime_error("its vocabulary is not byte-level");
  return tokens;
}

// The merges list ("LEFT RIGHT" strings or [LEFT, RIGHT] pairs) as vocabulary ids, in order.
std::vector<BpeRanks::Merge> read_merges(const nlohmann::json& model) {
  const auto& vocab = model.at("vocab");
  auto id_of = [&](const std::string& s) {
    const auto it = vocab.find(s);
    if (it == vocab.end())
      throw std::runtime_error("a merge names '" + s + "', which is not in the vocabulary");
    return it->get<uint32_t>();
  };
  std::vector<BpeRanks::Merge> merges;
  merges.reserve(model.at("merges").size());
  for (const auto& m : model.at("merges")) {
    if (m.is_array() && m.size() == 2) {
      merges.push_back({id_of(m[0].get<std::string>()), id_of(m[1].get<std::string>())});
      continue;
    }
    const std::string s = m.get<std::string>();
    const auto space = s.find(' ');
    if (space == std::string::npos) throw std::runtime_error("a merge is not 'LEFT RIGHT'");
    merges.push_back({id_of(s.substr(0, space)), id_of(s.substr(space + 1))});
  }
  return merges;
}

}  // namespace

std::unique_ptr<HfCounter> load_hf_counter(std::string_view family, const std::string& data_dir) {
  const HfFamily* f = hf_family(family);
  if (f == nullptr)
    throw std::invalid_argument("unknown tokenizer family '" + std::string(family) + "'");
  const std::string path = (std::filesystem::path(data_dir) / std::string(f->file)).string();
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("tokenizer file " + path +
                             " is missing (scripts/bootstrap fetches it; TOKENIZER_DATA_DIR "
                             "points elsewhere)");
  auto bad = [&](const std::string& what) {
    return std::runtime_error("tokenizer file " + path + ": " + what);
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("not JSON: ") + e.what());
  }
  try {
    check_shape(j, *f);
    const auto& model = j.at("model");
    const auto tokens = read_vocabulary(model.at("vocab"));
    const auto merges = read_merges(model);
    std::vector<std::string> added;
    for (const auto& a : j.value("added_tokens", nlohmann::json::array()))
      added.push_back(a.at("content").get<std::string>());
    BpeRanks ranks = BpeRanks::from_merges(tokens, merges, model.value("ignore_merges", false));
    return std::make_unique<HfCounter>(*f, std::move(ranks), std::move(added));
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("unexpected shape: ") + e.what());
  } catch (const std::runtime_error& e) {
    throw bad(e.what());
  }
}

}  // namespace autonous::tokens
