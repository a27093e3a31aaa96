#include "internal/recall/search_terms.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace autonous::recall {
namespace {

bool has(const std::vector<std::string>& terms, const std::string& term) {
  return std::find(terms.begin(), terms.end(), term) != terms.end();
}

// Every term of the question occurs among the text's terms.
bool finds(const std::string& text, const std::string& question_word) {
  const std::vector<std::string> t = search_terms(text);
  const std::vector<std::string> q = search_terms(question_word);
  if (q.empty()) return false;
  return std::all_of(q.begin(), q.end(), [&](const std::string& w) { return has(t, w); });
}

TEST(SearchTerms, EnglishIsLowerCasedStemmedAndSplitOnPunctuation) {
  const auto t = search_terms("My Cats were RUNNING, quickly!");
  EXPECT_TRUE(has(t, "cat"));
  EXPECT_TRUE(has(t, "run"));
  EXPECT_TRUE(has(t, "my"));
  EXPECT_FALSE(has(t, ","));
  EXPECT_FALSE(has(t, "Cats"));
  EXPECT_TRUE(finds("I adopted two kittens", "kitten"));
}

TEST(SearchTerms, RussianInflectionsMeet) {
  // "адрес" / "адреса" / "адресом": one stem.
  EXPECT_TRUE(finds("Мой новый адрес: улица Ленина", "адреса"));
  EXPECT_TRUE(finds("Я говорил тебе об адресом", "адрес"));
}

TEST(SearchTerms, ChineseTwoCharacterWordsAreTermsOfTheirOwn) {
  // FTS5's unicode61 keeps a run of ideographs as one token; trigrams need three characters.
  const auto t = search_terms("我的地址是北京市朝阳区");
  EXPECT_TRUE(has(t, "地址"));
  EXPECT_TRUE(finds("我的地址是北京市朝阳区", "地址"));
  EXPECT_TRUE(finds("我的地址是北京市朝阳区", "北京"));
  EXPECT_FALSE(finds("我喜欢吃苹果", "地址"));
}

TEST(SearchTerms, JapaneseWordsAreFound) {
  EXPECT_TRUE(finds("私の誕生日は三月です", "誕生"));
  EXPECT_TRUE(finds("東京に住んでいます", "東京"));
  EXPECT_FALSE(finds("猫が好きです", "東京"));
}

TEST(SearchTerms, NumbersStayAsWritten) {
  const auto t = search_terms("Order 48213 ships on 2026-03-04");
  EXPECT_TRUE(has(t, "48213"));
  EXPECT_TRUE(has(t, "2026"));
}

TEST(SearchTerms, BadInputNeverThrows) {
  EXPECT_TRUE(search_terms("").empty());
  EXPECT_TRUE(search_terms("  ,,, !!! ").empty());
  const std::string invalid = std::string("caf\xC3") + "\xFF\xFE" + " bar";
  EXPECT_NO_THROW(search_terms(invalid));
  EXPECT_TRUE(has(search_terms(invalid), "bar"));
  // A 10 000-character run is not a term.
  EXPECT_TRUE(search_terms(std::string(10000, 'a')).empty());
  EXPECT_EQ(search_terms_text("Hello, World"), "hello world");
}

}  // namespace
}  // namespace autonous::recall

namespace autonous::recall {
namespace {

TEST(SearchTerms, AQuestionDropsTheFunctionWordsOfItsOwnLatinLanguageOnly) {
  // German "die", "war", "hat"; French "son", "pas"; Spanish "con" are English content words.
  EXPECT_EQ(search_query_terms("Who is my son?"), std::vector<std::string>{"son"});
  EXPECT_TRUE(has(search_query_terms("What did I say about the war?"), "war"));
  EXPECT_TRUE(has(search_query_terms("Where is my red hat?"), "hat"));
  EXPECT_TRUE(has(search_query_terms("Did I mention the con artist?"), "con"));
  EXPECT_EQ(search_query_terms("war?"), std::vector<std::string>{"war"});
  EXPECT_TRUE(has(search_query_terms("Hat size?"), "hat"));
  // ... and each language's own function words still go.
  EXPECT_EQ(search_query_terms("Wo ist mein Sohn?"), std::vector<std::string>{"sohn"});
  EXPECT_EQ(search_query_terms("Quel est son âge ?"), std::vector<std::string>{"âge"});
  EXPECT_EQ(search_query_terms("¿Dónde está mi pasaporte?").size(), 2u);  // dónde, pasaport
  EXPECT_FALSE(has(search_query_terms("¿Dónde está mi pasaporte?"), "mi"));
  // Other scripts keep their lists whatever the Latin language.
  EXPECT_EQ(search_query_terms("Как зовут мою сестру?"), std::vector<std::string>{"сестр"});
}

TEST(SearchTerms, EveryTermIsOneTokenOfTheIndex) {
  // The index's unicode61 tokenizer splits at anything but letters, numbers and marks.
  for (const std::string& t : search_terms("don't 3.14 foo_bar U.S. e-mail café नमस्ते")) {
    EXPECT_EQ(t.find_first_of("'._- "), std::string::npos) << t;
  }
  EXPECT_TRUE(has(search_terms("नमस्ते दुनिया"), "नमस्ते"));
}

}  // namespace
}  // namespace autonous::recall
