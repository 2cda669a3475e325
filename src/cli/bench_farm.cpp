// daqflow bench farm: the filter farm.

#include <memory>
#include <string>

#include "cli/bench_support.hpp"

namespace daqflow::cli {

void add_bench_farm(CLI::App& bench_cmd) {
  struct Args {
    Common common;
    bench::FarmOptions options;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = bench_cmd.add_subcommand(
      "farm", "Filter farm: tokens and round_robin against a raw push, then one slow worker");
  // Twenty workers and their SFC share the machine's cores: agents that spin or yield while
  // idle take the CPU from those with work.
  add_common(cmd, a->common, "block");
  auto& s = a->options.shape;
  // Four tokens per worker: with two (the sfc's default) each worker's socket carries one or two
  // events per system call and the SFC's core, which pays for every loopback segment at both
  // ends, saturates first (docs/farm.md, "Benchmark and soak").
  s.window = 4;
  add_ranged(cmd, "--workers", s.workers, "workers", 1, 256);
  add_ranged(cmd, "--workers-per-process", s.workers_per_context, "workers sharing a process", 1,
             64);
  add_ranged(cmd, "--event-size", s.event_size, "bytes per event", 8, 16 << 20);
  add_ranged(cmd, "--window", s.window, "tokens per worker", 1, 64);
  add_ranged(cmd, "--accept-fraction", s.accept_fraction, "events accepted (with output)", 0.0,
             1.0);
  add_ranged(cmd, "--output-bytes", s.output_bytes, "output of an accepted event, bytes", 0,
             16 << 20);
  add_ranged(cmd, "--time-us", a->options.time_us,
             "second part: every worker's processing time, microseconds", 1.0, 1e6);
  add_ranged(cmd, "--slow-factor", a->options.slow_factor, "second part: the slow worker's factor",
             1.0, 1000.0);
  add_ranged(cmd, "--duration", a->options.duration_s, "seconds per run", 1.0, 3600.0);
  add_ranged(cmd, "--rounds", a->options.rounds, "rounds of all the runs, interleaved", 1, 20);
  cmd->callback([a] {
    auto& o = a->options;
    o.cluster = a->common.settings();
    print_rows(run_and_write(o, a->common.out, bench::run_farm));
  });
}

}  // namespace daqflow::cli
