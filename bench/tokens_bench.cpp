// Exact counter throughput on the sample files bench/tokens prepares (AUTONOUS_TOKEN_SAMPLES
// names their folder), and the pathological case: 1 MiB of one letter, a single pre-token piece.
// Reports bytes/s and tokens; bench/tokens compares them with the reference implementations on
// the same files (the tiktoken npm package; @lenml/tokenizers for the open families) and the
// estimate's count with each exact one.

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include <benchmark/benchmark.h>
#include <spdlog/spdlog.h>

#include "internal/common/utf8.h"
#include "internal/tokens/bpe_counter.h"
#include "internal/tokens/estimator.h"
#include "internal/tokens/hf_counter.h"

namespace {

using namespace autonous;  // NOLINT(google-build-using-namespace): benchmark file

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe)
  return v != nullptr ? v : fallback;
}

const tokens::TokenCounter& counter(const std::string& encoding) {
  static std::map<std::string, std::unique_ptr<tokens::TokenCounter>> loaded;
  auto& c = loaded[encoding];
  if (!c) {
    const std::string dir = env_or("TOKENIZER_DATA_DIR", tokens::kDefaultTokenizerDataDir);
    if (encoding == "estimate")
      c = std::make_unique<tokens::EstimateCounter>();
    else if (tokens::hf_family(encoding) != nullptr)
      c = tokens::load_hf_counter(encoding, dir);
    else
      c = tokens::load_bpe_counter(encoding, dir);
  }
  return *c;
}

std::string sample(const std::string& name) {
  std::ifstream in(env_or("AUTONOUS_TOKEN_SAMPLES", "build/bench-data") + "/" + name,
                   std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return common::sanitize_utf8(ss.str());
}

void count_file(benchmark::State& state, const std::string& encoding, const std::string& file) {
  const std::string text = sample(file);
  if (text.empty()) {
    state.SkipWithError("sample missing: run bench/tokens");
    return;
  }
  const auto& c = counter(encoding);
  int64_t tokens = 0;
  for (auto _ : state) benchmark::DoNotOptimize(tokens = c.count_text(text));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
  state.counters["tokens"] = static_cast<double>(tokens);
}

void BM_OneMebibyteRun(benchmark::State& state, const std::string& encoding) {
  const std::string run(1 << 20, 'a');
  const auto& c = counter(encoding);
  for (auto _ : state) benchmark::DoNotOptimize(c.count_text(run));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(run.size()));
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  for (const char* encoding :
       {"cl100k_base", "o200k_base", "llama3", "qwen3", "deepseek_v3", "estimate"}) {
    for (const char* file : {"english.txt", "chat.txt", "chinese.txt", "code.txt", "json.txt"}) {
      benchmark::RegisterBenchmark(
          (std::string("BM_Count/") + encoding + "/" + file).c_str(),
          [encoding, file](benchmark::State& s) { count_file(s, encoding, file); })
          ->Unit(benchmark::kMillisecond);
    }
    benchmark::RegisterBenchmark(
        (std::string("BM_OneMebibyteRun/") + encoding).c_str(),
        [encoding](benchmark::State& s) { BM_OneMebibyteRun(s, encoding); })
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
