// daqflow bench roundtrip|stream|evb|farm|timeslice|compare|memcpy|sim: benchmark figures against
// their references, written as JSON, CSV and SVG into an output folder (docs/benchmarks.md;
// runners in src/bench/, one file per subcommand here: bench_*.cpp).

#include "cli/bench_support.hpp"

namespace daqflow::cli {

void add_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "bench", "Benchmarks against their reference tools: JSON, CSV and SVG per figure set");
  cmd->require_subcommand(1);
  add_bench_roundtrip(*cmd);
  add_bench_stream(*cmd);
  add_bench_evb(*cmd);
  add_bench_farm(*cmd);
  add_bench_timeslice(*cmd);
  add_bench_compare(*cmd);
  add_bench_memcpy(*cmd);
  add_bench_sim(*cmd);
}

}  // namespace daqflow::cli
