#include "internal/config/env_file.h"

#include <fstream>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace autonous::config {
namespace {

TEST(EnvFileTest, ParsesKeyValueLinesCommentsExportAndQuotes) {
  testing::TempDir dir;
  const std::string path = dir.file("a.env");
  std::ofstream(path) << "# comment\n\nDB_PATH=/var/lib/a.db\nexport OPENAI_MODEL = llama3 \n"
                         "SYSTEM_PROMPT=\"Be kind # not a comment\"\nEMPTY=\n";
  const auto vars = read_env_file(path);
  EXPECT_EQ(vars.at("DB_PATH"), "/var/lib/a.db");
  EXPECT_EQ(vars.at("OPENAI_MODEL"), "llama3");
  EXPECT_EQ(vars.at("SYSTEM_PROMPT"), "Be kind # not a comment");
  EXPECT_EQ(vars.at("EMPTY"), "");
  EXPECT_EQ(vars.size(), 4u);
}

TEST(EnvFileTest, RefusesALineThatIsNotKeyValueAndSaysWhere) {
  testing::TempDir dir;
  const std::string path = dir.file("bad.env");
  std::ofstream(path) << "A=1\nthis is not a setting\n";
  try {
    read_env_file(path);
    ADD_FAILURE() << "accepted a bad line";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.variable(), "--env-file");
    EXPECT_NE(std::string(e.what()).find(":2:"), std::string::npos) << e.what();
  }
}

TEST(EnvFileTest, AnInlineCommentAfterAnUnquotedValueIsNotPartOfIt) {
  testing::TempDir dir;
  const std::string path = dir.file("c.env");
  std::ofstream(path) << "WORKER_CONCURRENCY=8 # eight slots\nOPENAI_MODEL=gpt-4o\t# tab\n"
                         "OPENAI_API_KEY=sk-ab#cd\nSYSTEM_PROMPT='keep # this'\n";
  const auto vars = read_env_file(path);
  EXPECT_EQ(vars.at("WORKER_CONCURRENCY"), "8");  // was "8 # eight slots": exit 2 at start
  EXPECT_EQ(vars.at("OPENAI_MODEL"), "gpt-4o");
  EXPECT_EQ(vars.at("OPENAI_API_KEY"), "sk-ab#cd");  // a '#' inside a word stays
  EXPECT_EQ(vars.at("SYSTEM_PROMPT"), "keep # this");
}

TEST(EnvFileTest, AQuotedValueMayBeFollowedByACommentAndAnEmptyOneByAComment) {
  testing::TempDir dir;
  const std::string path = dir.file("d.env");
  std::ofstream(path) << "OPENAI_API_KEY=\"sk-x\" # the key\nEMPTY= # nothing\n";
  const auto vars = read_env_file(path);
  EXPECT_EQ(vars.at("OPENAI_API_KEY"), "sk-x");  // was "\"sk-x\"" with its quotes: every call 401
  EXPECT_EQ(vars.at("EMPTY"), "");
  std::ofstream(path) << "A=\"open\n";
  EXPECT_THROW(read_env_file(path), ConfigError);
  // As a shell reads them: a '#' that starts the value is the value; quotes inside quotes as
  // written before.
  std::ofstream(path) << "SYSTEM_PROMPT=#abc\nB=\"a \\\"b\\\" c\"\nC='it''s'\n";
  const auto more = read_env_file(path);
  EXPECT_EQ(more.at("SYSTEM_PROMPT"), "#abc");
  EXPECT_EQ(more.at("B"), "a \\\"b\\\" c");
  EXPECT_EQ(more.at("C"), "it''s");
  // A comment with quotes of its own is still a comment (was: "v' # note 'x").
  std::ofstream(path) << "A='v' # note 'x'\nB=\"w\" # \"y\"\nC='' # 'empty'\n";
  const auto commented = read_env_file(path);
  EXPECT_EQ(commented.at("A"), "v");
  EXPECT_EQ(commented.at("B"), "w");
  EXPECT_EQ(commented.at("C"), "");
  // A '#' right after an inner quote is text, not a comment.
  std::ofstream(path) << "SYSTEM_PROMPT=\"Use the heading \"# Summary\" at the top\"\n";
  EXPECT_EQ(read_env_file(path).at("SYSTEM_PROMPT"), "Use the heading \"# Summary\" at the top");
}

TEST(EnvFileTest, MissingFileIsAConfigError) {
  EXPECT_THROW(read_env_file("/nonexistent/autonous.env"), ConfigError);
}

TEST(EnvFileTest, RealEnvironmentWinsOverTheFile) {
  const EnvLookup primary = [](std::string_view name) -> std::optional<std::string> {
    if (name == "OPENAI_MODEL") return "from-env";
    return std::nullopt;
  };
  const EnvLookup env = layered_env(primary, {{"OPENAI_MODEL", "from-file"}, {"DB_PATH", "f.db"}});
  EXPECT_EQ(env("OPENAI_MODEL"), "from-env");
  EXPECT_EQ(env("DB_PATH"), "f.db");
  EXPECT_EQ(env("LOG_LEVEL"), std::nullopt);
  EXPECT_EQ(load_config(env).openai_model, "from-env");
}

}  // namespace
}  // namespace autonous::config
