// The main() of the Google Benchmark programs that need nothing else: silence the library's
// info logs (migrations) so the tables stay readable, then run what is registered.

#include <benchmark/benchmark.h>
#include <spdlog/spdlog.h>

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
