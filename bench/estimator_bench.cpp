// The script-aware estimator: its accuracy against the exact counts, and its speed.
//   estimator_bench --dump FILE.csv   features and exact counts of corpus chunks, for
//                                     scripts/fit_estimator.py
//   estimator_bench --report          per corpus file: estimate / exact for both encodings,
//                                     whole file and worst chunk of ~300 bytes
//   estimator_bench [benchmark flags] throughput on the bench/tokens samples
// The corpus is tests/data/tokens/corpus; rank files as for the exact counter.

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <benchmark/benchmark.h>
#include <spdlog/spdlog.h>

#include "internal/common/utf8.h"
#include "internal/tokens/bpe_counter.h"
#include "internal/tokens/estimator.h"

namespace {

using namespace autonous;  // NOLINT(google-build-using-namespace): benchmark file

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe)
  return v != nullptr ? v : fallback;
}

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Message-sized samples, harder than whole files: cut at the first ASCII space or newline after
// `min_bytes` (so UTF-8 stays whole); a last piece shorter than a third of that is dropped.
std::vector<std::string> chunks(const std::string& text, size_t min_bytes) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (i - start >= min_bytes && (text[i] == ' ' || text[i] == '\n')) {
      out.push_back(text.substr(start, i + 1 - start));
      start = i + 1;
    }
  }
  if (text.size() - start >= min_bytes / 3) out.push_back(text.substr(start));
  return out;
}

struct Corpus {
  std::vector<std::pair<std::string, std::string>> files;  // name, sanitized text
};

Corpus load_corpus() {
  Corpus c;
  const std::filesystem::path dir = std::string(AUTONOUS_SOURCE_DIR) + "/tests/data/tokens/corpus";
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::string text = common::sanitize_utf8(read_bytes(e.path()));
    if (!text.empty()) c.files.emplace_back(e.path().filename().string(), std::move(text));
  }
  std::sort(c.files.begin(), c.files.end());
  return c;
}

int dump(const std::string& path) {
  const auto dir = env_or("TOKENIZER_DATA_DIR", tokens::kDefaultTokenizerDataDir);
  const auto cl = tokens::load_bpe_counter("cl100k_base", dir);
  const auto o2 = tokens::load_bpe_counter("o200k_base", dir);
  std::ofstream out(path);
  out << "file,sample";
  for (int k = 0; k < tokens::kFeatureCount; ++k) out << ",f" << k;
  out << ",cl100k,o200k\n";
  for (const auto& [name, text] : load_corpus().files) {
    std::vector<std::string> samples = chunks(text, 300);
    samples.push_back(text);
    for (size_t i = 0; i < samples.size(); ++i) {
      const auto f = tokens::estimator_features(samples[i]);
      out << name << "," << (i + 1 == samples.size() ? "file" : "chunk");
      for (const double x : f) out << "," << x;
      out << "," << cl->count_text(samples[i]) << "," << o2->count_text(samples[i]) << "\n";
    }
  }
  return 0;
}

int report() {
  const auto dir = env_or("TOKENIZER_DATA_DIR", tokens::kDefaultTokenizerDataDir);
  const auto cl = tokens::load_bpe_counter("cl100k_base", dir);
  const auto o2 = tokens::load_bpe_counter("o200k_base", dir);
  const tokens::EstimateCounter est;
  const tokens::CharsOver4Counter chars4;
  std::printf("%-30s %9s %9s %9s %9s %9s   (estimate / exact; chars4 / exact for comparison)\n",
              "file", "cl100k", "o200k", "worst cl", "worst o2", "chars4 o2");
  double worst_under = 10;
  double worst_over = 0;
  for (const auto& [name, text] : load_corpus().files) {
    auto ratio = [&](const tokens::TokenCounter& c, const std::string& t) {
      return static_cast<double>(est.count_text(t)) /
             static_cast<double>(std::max<int64_t>(1, c.count_text(t)));
    };
    double wc = 10;
    double wo = 10;
    for (const auto& chunk : chunks(text, 300)) {
      wc = std::min(wc, ratio(*cl, chunk));
      wo = std::min(wo, ratio(*o2, chunk));
    }
    const double rc = ratio(*cl, text);
    const double ro = ratio(*o2, text);
    worst_under = std::min({worst_under, rc, ro, wc, wo});
    worst_over = std::max({worst_over, rc, ro});
    std::printf(
        "%-30s %9.3f %9.3f %9.3f %9.3f %9.3f\n", name.c_str(), rc, ro, wc, wo,
        static_cast<double>(chars4.count_text(text)) / static_cast<double>(o2->count_text(text)));
  }
  std::printf("lowest estimate/exact (any file or chunk, either encoding): %.3f\n", worst_under);
  std::printf("highest estimate/exact (whole files, either encoding): %.3f\n", worst_over);
  return 0;
}

void BM_Estimate(benchmark::State& state, const std::string& file) {
  const std::string text = common::sanitize_utf8(
      read_bytes(env_or("AUTONOUS_TOKEN_SAMPLES", "build/bench-data") + "/" + file));
  if (text.empty()) {
    state.SkipWithError("sample missing: run bench/tokens");
    return;
  }
  const tokens::EstimateCounter est;
  for (auto _ : state) benchmark::DoNotOptimize(est.count_text(text));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  if (argc >= 3 && std::strcmp(argv[1], "--dump") == 0) return dump(argv[2]);
  if (argc >= 2 && std::strcmp(argv[1], "--report") == 0) return report();
  for (const char* file : {"english.txt", "chinese.txt", "code.txt", "json.txt"}) {
    benchmark::RegisterBenchmark((std::string("BM_Estimate/") + file).c_str(),
                                 [file](benchmark::State& s) { BM_Estimate(s, file); });
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
